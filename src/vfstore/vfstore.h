/*
 * vfstore.h - what the parts of vfstore (the files of src/vfstore/)
 * share with its command dispatch (src/vfstore.c): the parsed arguments,
 * the context a command runs in, the output and store-access helpers,
 * each returning an exit code (SPEC.md 2.2), and the commands. Private
 * to the program: nothing in src/lib includes it.
 *
 * A command gets the context with the configuration loaded and the store
 * initialised (not locked); it returns its exit code, and a failed audit
 * write it noted with ctx_audited() makes a 0 into 74. A command lives in
 * the file named after it (cmd_drain in drain.c); what two commands share
 * is the global of one of their files, named after it (drain_run).
 */
#ifndef VFSTORE_H
#define VFSTORE_H

#include <stdbool.h>

#include <jansson.h>

#include "claims.h"
#include "cli.h"
#include "conf.h"
#include "healthfile.h"
#include "healthrules.h"
#include "healthview.h"
#include "log.h"
#include "store.h"
#include "sysfs.h"

struct args {
	const char *vf;
	const char *card;
	const char *instance;
	const char *assigned_at;
	const char *reason;
	const char *metrics;
	const char *proc_root;
	const char *owner;
	const char *interval;		/* reconcile --interval, unparsed */
	const char *grace;
	const char *limit;		/* history --limit, unparsed */
	const char *ended;		/* release --ended, unchecked */
	bool deconfigure;
	bool force;			/* quarantine a VF sysfs lacks */
	bool once;
	bool dry_run;
	const char *operand;		/* edit's FILE */
	char vf_buf[VF_ADDR_LEN + 1];	/* --vf, canonical */
	char card_buf[VF_ADDR_LEN + 1];
	unsigned seen;			/* ARG_ bits given (vfstore.c) */
};

struct ctx {
	struct cli cli;
	struct conf conf;
	struct store s;
	struct args a;
	bool audit_failed;		/* a one-shot command then exits 74 */
};

/* emit.c: the output. emit_line() writes obj as one line, flushed
 * unless buffered (emit_flush() then follows), and drops the reference;
 * each returns 0 or the logged exit code. */
int emit(json_t *obj);
int emit_line(json_t *obj, bool buffered);
int emit_flush(void);

/* ctx.c: store access, each returning 0 or the logged exit code.
 * ctx_lock() takes the store's lock (ctx_lock_failed(): what a failed
 * store_lock() logs and exits with); ctx_load_health() loads the health
 * store, or through v (not NULL) what a report on --vf needs
 * (healthcache.h); ctx_open_health() and ctx_open_claims() lock, then
 * load (the lock stays held on success); ctx_save_health() saves h,
 * loaded through v or NULL; ctx_unavailable() ends a load that failed
 * (msg logged with the reason; 69). ctx_audited() notes a failed audit
 * write (err, its errno; 0 when written): logged, and a one-shot command
 * exits 74 (SPEC.md 4.1). */
int ctx_lock(struct ctx *c, bool exclusive);
int ctx_lock_failed(struct ctx *c, int err);
int ctx_load_health(struct ctx *c, struct health *h, struct health_view *v);
int ctx_open_health(struct ctx *c, bool exclusive, struct health *h,
    struct health_view *v);
int ctx_open_claims(struct ctx *c, bool exclusive, struct claims *cl);
int ctx_unavailable(struct ctx *c, const char *msg);
int ctx_save_health(struct ctx *c, const struct health *h,
    const struct health_view *v);
void ctx_audited(struct ctx *c, int err, const char *key, const char *val);

/* target.c: target_vfs(), the VFs of --vf or --card (exactly one), or
 * the exit code; target_check_present(), 0, or EX_DATAERR (logged, with
 * hint after the address) when --vf names a VF sysfs does not show and
 * --force was not given. */
int target_vfs(struct ctx *c, struct vf_list *l);
int target_check_present(struct ctx *c, const char *hint);

/* report.c: the reports; a report's log line (apply too). */
void report_log(const struct health_report *rep, bool failure,
    unsigned threshold, const char *nvrm);
int cmd_report_failure(struct ctx *c);
int cmd_report_success(struct ctx *c);

/* check.c */
int cmd_check(struct ctx *c);

/* init.c */
int cmd_init(struct ctx *c);

/* config.c */
int cmd_config(struct ctx *c);

/* claims.c */
int cmd_claims(struct ctx *c);

/* release.c, deconfigure.c (what they share: claimop.h) */
int cmd_release(struct ctx *c);
int cmd_deconfigure(struct ctx *c);

/* quarantine.c, clear.c (the engine: quarantine.h). quarantine_vfs()
 * quarantines (quarantine true) or clears the VFs of --vf or --card
 * under the exclusive lock (a clear ends their suspicions too) and
 * prints a line a VF: the exit code, *any when a VF changed.
 * quarantine_log() logs msg at level with the VF or card and the
 * reason. */
int cmd_quarantine(struct ctx *c);
int cmd_clear(struct ctx *c);
int quarantine_vfs(struct ctx *c, bool quarantine, bool *any);
void quarantine_log(const struct ctx *c, enum log_level level,
    const char *msg);

/* edit.c */
int cmd_edit(struct ctx *c);

/* drain.c, undrain.c: drain_load() with the lock held (69 when the file
 * does not load); drain_run() drains (drain true) or undrains the VFs
 * of --vf or --card: the exit code. */
struct drains;
int drain_load(struct ctx *c, struct drains *d);
int drain_run(struct ctx *c, bool drain);
int cmd_drain(struct ctx *c);
int cmd_undrain(struct ctx *c);

/* suspectcmd.c: suspectcmd_load() with the lock held (69 when the file
 * does not load); suspectcmd_clear() ends the suspicions of the VFs of l
 * (changed[i] set for each), saves and audits them: an exit code. */
struct suspects;
int suspectcmd_load(struct ctx *c, struct suspects *d);
int suspectcmd_clear(struct ctx *c, struct suspects *d,
    const struct vf_list *l, bool *changed);

/* show.c */
int cmd_show(struct ctx *c);

/* apply.c, reconcile.c, history.c */
int cmd_apply(struct ctx *c);
int cmd_reconcile(struct ctx *c);
int cmd_history(struct ctx *c);

#endif
