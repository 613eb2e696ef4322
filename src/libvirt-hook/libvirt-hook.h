/*
 * libvirt-hook.h - what the parts of libvirt-hook share (SPEC.md 6.6):
 * src/libvirt-hook.c (the command line), domain.c (the domain XML, read
 * with libxml2 into struct domain), phases.c (prepare, started, release,
 * reconnect over the stores) and claim.c (the claim edits under the
 * store's exclusive lock). Program-side: these log, and return exit
 * codes.
 */
#ifndef LIBVIRT_HOOK_H
#define LIBVIRT_HOOK_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "cli.h"
#include "hostview.h"

/* vfsentinel's metadata namespace, its element, and the virtio-serial
 * port name a guest's vsock-answer serves on (SPEC.md 6.1). */
#define HOOK_XMLNS "https://vfsentinel.dev/xmlns/libvirt/1"
#define HOOK_XML_ELEMENT "vgpu"
#define HOOK_PORT_NAME "org.vfsentinel.0"

#define UUID_LEN 36			/* 8-4-4-4-12 hex digits */
#define DOMAIN_NAME_MAX 256		/* for logs */

/* What the hook takes from the domain XML; every string validated. */
struct domain {
	char uuid[UUID_LEN + 1];	/* lower case; "" when absent */
	char name[DOMAIN_NAME_MAX];	/* UTF-8, no control characters */
	long id;			/* <domain id='N'>; -1 when absent */
	struct vf_list hostdevs;	/* every PCI <hostdev> source */
	char meta_vf[VF_ADDR_LEN + 1];	/* the metadata's vf=; "" if none */
	char profile[VGPU_NAME_MAX];	/* the metadata's profile=; "" */
	char verify_token[64];		/* the metadata's verify-token=
					   (SPEC 8.2); "" */
	bool has_cid;
	unsigned long cid;		/* <vsock><cid address='N'/> */
	char channel[PATH_MAX];		/* org.vfsentinel.0 socket; "" */
	char app_log[PATH_MAX];		/* console file; "" */
	bool app_log_append;		/* append='on': the file keeps the
					 * earlier boots (else libvirt
					 * truncates it at start) */
	bool has_meta;			/* vfsentinel's metadata element */
	bool has_pci;			/* a <hostdev type='pci'> */
};

/* One run of the hook. */
struct hook {
	struct cli cli;
	struct conf conf;
	const char *domain_arg;		/* argv: DOMAIN OPERATION SUB EXTRA */
	const char *op;
	const char *sub;
	const char *proc_root;		/* --proc-root, default "/" */
	struct domain dom;
	struct vf_list vfs;		/* the domain's NVIDIA VFs here */
	struct hostview view;		/* stores, inventory, placement */
};

/* domain.c: reads fd to its end into a new NUL-terminated buffer (the
 * caller frees it), whatever its size. NULL with errno. */
char *domain_read(int fd, size_t *len);

/* domain_parse()'s failures. */
enum {
	DOMAIN_NOT_XML = -1,		/* not well-formed, a DOCTYPE, not a
					 * <domain>: libvirt never sends it */
	DOMAIN_BAD_VALUE = -2		/* a value is invalid; every other
					 * one is read (has_meta, has_pci,
					 * hostdevs, meta_vf) */
};

/* domain.c: parses the XML text into d. 0, or DOMAIN_NOT_XML or
 * DOMAIN_BAD_VALUE with the (first) reason in why (no DTD, no entity,
 * no network access ever). */
int domain_parse(const char *text, size_t len, struct domain *d,
    char *why, size_t whylen);

void domain_release(struct domain *d);

/* endlog.c: the WORD of the last whole line "YYYY-MM-DD HH:MM:SS.mmm+0000:
 * shutting down, reason=WORD" among the last max bytes of
 * LOG_DIR/NAME.log into word (0), or -1 with errno: ENODATA when there is
 * none, IO_ENOTREG or ELOOP when the log is not a regular file or a
 * link (refused: the caller warns), else the open's or read's.
 * endlog_ended(): clean for shutdown, saved, migrated; unclean for
 * destroyed, crashed, failed, daemon; else unknown (static). */
int endlog_reason(const char *log_dir, const char *name, size_t max,
    char *word, size_t len);
const char *endlog_ended(const char *word);

/* libvirt's calls the hook acts on (SPEC 8.1); any other is 0. */
enum phase {
	PHASE_OTHER,
	PHASE_PREPARE,
	PHASE_STARTED,
	PHASE_RELEASE,
	PHASE_RECONNECT
};

/* phases.c: the phase of OPERATION SUB-OPERATION. */
enum phase phases_of(const char *op, const char *sub);

/* phases.c: the domain's NVIDIA VFs of this host (SYSFS_ROOT of h->conf)
 * into h->vfs; a metadata VF that is not one is refused at prepare. 0,
 * or an exit code. */
int phases_find_vfs(struct hook *h, enum phase ph);

/* phases.c: the phase's work for a domain with VFs (stores, lock,
 * claims); the exit code. guard.c runs it in a child. */
int phases_work(struct hook *h, enum phase ph);

/* guard.c: SPEC 8.1's rule around the work: whose domain, the
 * configuration, the work in a child; the hook's exit code. */
int guard_run(struct hook *h, bool lock_given);

/* refuse.c: refuses a prepare: the JSON log, then the last stderr line,
 * "vfsentinel: " and msg, plain, for virsh to show (and syslog).
 * Returns 1. */
int refuse_start(const char *msg);

/* claim.c: a new claim of vf for the domain (prepare), with --configure
 * when the domain names a profile. 0, or a refusal's code. */
int claim_new(struct hook *h, const struct placement_vf *v);

/* claim.c: fills in the claim's control socket, guest endpoint and
 * console from the live XML; saves it when that changed it. 0, or 74. */
int claim_complete(struct hook *h, struct claim *cl);

/* claim.c: records a claim for a VF already configured and held
 * (reconnect, like vfpick --adopt). 0, or 1 with the reason logged. */
int claim_adopt(struct hook *h, const char *vf);

/* claim.c: the domain's claim ended: removed from the ledger (and its
 * VF deconfigured when libvirt.deconfigure), audited; nothing to release
 * is 0. 0, or 1 logged. */
int claim_end(struct hook *h);

/* claim.c: true when the claim's VF is one of the domain's VFs (SPEC
 * 7.2: a UUID is the domain author's to choose, so it alone never makes
 * another launcher's claim the domain's to complete or release). */
bool claim_is_domains(const struct hook *h, const struct claim *cl);

/* claim.c: the ledger saved; 0, or -1 with the reason logged. */
int claim_save(struct hook *h, const char *what);

/* claim.c, SPEC 8.2: the verification claim (one with a verify_token)
 * of vf, or NULL; claim_verifying(): the one the domain took over (its
 * domain_uuid the domain's UUID), or NULL. */
struct claim *claim_verification(const struct hook *h, const char *vf);
struct claim *claim_verifying(const struct hook *h);

/* claim.c: prepare of a domain on a VF held by the verification claim
 * cl: taken over (domain_uuid, the profile's type written) when the
 * domain's verify-token is the claim's, else refused. 0, or 1. */
int claim_verify(struct hook *h, struct claim *cl,
    const struct placement_vf *v);

#endif
