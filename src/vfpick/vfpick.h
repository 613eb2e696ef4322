/*
 * vfpick.h - what the parts of vfpick share (src/vfpick.c, the options,
 * the choice and the result; src/vfpick/claim.c, --claim's ledger and
 * --configure). Program-side: these log, and return exit codes.
 */
#ifndef VFPICK_H
#define VFPICK_H

#include <stdbool.h>

#include "claims.h"
#include "cli.h"
#include "hostview.h"
#include "vfaddr.h"

struct run {
	struct cli cli;
	struct conf conf;
	char *profile;			/* argv strings: the claim points */
	char *instance;			/* at them (--claim) */
	char *vsock;
	char *control_socket;
	char pin[VF_ADDR_LEN + 1];	/* --vf, canonical; "" when not given */
	bool include_quarantined;
	bool include_suspect;		/* --include-suspect (SPEC.md 7.3) */
	bool configure;
	bool adopt;			/* --adopt */
	bool libvirt_format;		/* --format libvirt */
	const char *proc_root;		/* --proc-root, default "/" */
	char warning[256];		/* the output line's "warning"; "" */
	bool seeded;
	unsigned seed;
	struct hostview view;		/* stores, inventory, placement */
};

/*
 * The claim.c functions return 0, an exit code they have logged, or one
 * of these failures, which vfpick.c reports (out of memory: 71; a failed
 * reload of the health store: 71 out of memory, else 69).
 */
#define CLAIM_NOMEM	(-1)
#define CLAIM_LOAD	(-2)		/* why: in r->view.store */

/* claim.c: a new claim of vi for r->instance, persisted; 0 or a code. */
int claim_persist(struct run *r, const struct vf_info *vi);

/* claim.c: a second --claim of an instance that holds cl; 0 or a code. */
int claim_existing(struct run *r, struct claim *cl);

/* claim.c: --configure of the claim cl (removed again on failure). */
int claim_configure(struct run *r, const struct claim *cl);

/* claim.c: --adopt: a claim of the pinned, configured VF for
 * r->instance, its type left as it is; 0 or a code. */
int claim_adopt(struct run *r, const struct placement_vf *v);

/* claim.c: adds a sentence to r->warning and logs it at warn. */
void claim_warn(struct run *r, const char *msg, const char *vf);

/* output.c: --format libvirt: the VF's <hostdev> element; 0 or 74. */
int output_hostdev(const char *vf);

#endif
