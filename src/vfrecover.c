/*
 * vfrecover - the recovery runbook of one card as a resumable program
 * (SPEC.md 4.6): preflight, drain, idle, quiesce, disable (sriov-manage
 * -d), enable (-e), restore, verify, clear.
 *
 * Input: the card's sysfs, the health store and the claims ledger, the
 * journal DATA_DIR/gpu/recovery/PF.json of a run that did not finish.
 * Output: one line per step {"card":PF,"step":...,"status":"done|skipped|
 * failed",...}, then {"card":PF,"result":"recovered|failed|busy",...}.
 * --dry-run prints the plan (status "planned") and changes nothing;
 * --status prints every journal as one line.
 *
 * Exit codes: 0 recovered (or a dry run that would proceed); 1 a step
 * failed or the card is busy (the card stays drained); 64 usage; 65 the
 * journal is not one; 69 store unavailable; 71 OS error; 74 I/O error
 * (journal, audit, store, stdout); 75 another run holds the card's lock,
 * or a stop signal (restore has run, the journal says where to resume);
 * 78 configuration.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>

#include "audit.h"
#include "cli.h"
#include "health.h"
#include "io.h"
#include "jsonl.h"
#include "lock.h"
#include "log.h"
#include "placement.h"
#include "recovery.h"
#include "runcmd.h"
#include "sig.h"
#include "store.h"
#include "sysfs.h"
#include "vfaddr.h"

#define PROG "vfrecover"
#define STEP_FAILED 1	/* a step's "no": the run ends with exit 1 */

static const char usage[] =
    "usage: vfrecover [-c FILE] [--data-dir DIR] [--sysfs-root DIR]\n"
    "                 [--proc-root DIR] [--lock-timeout S]\n"
    "                 [--log-level LEVEL]\n"
    "                 --card PF [--dry-run] [--wait S] [--force]\n"
    "       vfrecover [OPTIONS] --status\n"
    "\n"
    "Cycles SR-IOV on one card to recover wedged VFs: drains it, waits until\n"
    "no VF is in use, stops what holds the GPU, runs sriov-manage -d and -e,\n"
    "restores, verifies and clears the quarantine; resumable after a crash.\n"
    "\n"
    "Options:\n"
    "  --card PF             the card (physical function) to cycle\n"
    "  --dry-run             print the plan and what is busy; change nothing\n"
    "  --wait S              wait up to S seconds for the VFs to go idle\n"
    "                        (default 0: check once)\n"
    "  --force               cycle even when a systemic failure is suspected\n"
    "  --status              print the journal of every card, one per line\n"
    "  --proc-root DIR       where /proc is, for the holder checks\n"
    "                        (default /)\n"
    CLI_HELP_HOST_OPTIONS
    "  -h, --help            print this help and exit\n"
    "  --version             print the version and exit\n";

enum {
	OPT_CARD = CLI_OPT_FIRST_FREE,
	OPT_DRY_RUN,
	OPT_WAIT,
	OPT_FORCE,
	OPT_STATUS,
	OPT_PROC_ROOT
};

static const struct option opts[] = {
	CLI_COMMON_OPTIONS,
	{ "card", required_argument, NULL, OPT_CARD },
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
	{ "wait", required_argument, NULL, OPT_WAIT },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "status", no_argument, NULL, OPT_STATUS },
	{ "proc-root", required_argument, NULL, OPT_PROC_ROOT },
	{ 0 }
};

struct run {
	struct cli cli;
	struct conf conf;
	char card[VF_ADDR_LEN + 1];
	bool dry_run, force, status, resumed, out_failed;
	unsigned wait;
	const char *proc_root;
	struct store s;
	char rdir[PATH_MAX], jpath[PATH_MAX], lastpath[PATH_MAX];
	char lockpath[PATH_MAX];
	int lock_fd;
	json_t *j;			/* the journal */
	struct vf_list vfs, wedged;
	const char *status_word;	/* the running step's status */
	json_t *fields;			/* the running step's fields */
	char env_card[VF_ADDR_LEN + 32];
};

/* --- arguments ----------------------------------------------------------- */

static void
parse_args(int argc, char **argv, struct run *r)
{
	int c;

	cli_init(&r->cli, usage);
	while ((c = cli_next(&r->cli, argc, argv, "+c:h", opts)) != -1) {
		switch (c) {
		case OPT_CARD:
			if (vfaddr_parse_arg(optarg, r->card) < 0) {
				char why[512];

				vfaddr_why("card", optarg, why, sizeof(why));
				die(EX_DATAERR, why, NULL);
			}
			break;
		case OPT_DRY_RUN: r->dry_run = true; break;
		case OPT_WAIT:
			r->wait = cli_uint(&r->cli, "--wait", optarg, 0, 86400);
			break;
		case OPT_FORCE: r->force = true; break;
		case OPT_STATUS: r->status = true; break;
		case OPT_PROC_ROOT: r->proc_root = optarg; break;
		default:
			cli_bad_option(&r->cli, argv);
		}
	}
	if (optind < argc)
		cli_usage_error(&r->cli, "unexpected argument");
	if (r->status == (r->card[0] != '\0'))
		cli_usage_error(&r->cli,
		    "give exactly one of --card or --status");
	if (r->proc_root == NULL)
		r->proc_root = "/";
}

static int
paths(struct run *r)
{
	if (store_init(&r->s, r->conf.data_dir) < 0 ||
	    io_pathf(r->rdir, sizeof(r->rdir), "%s/recovery", r->s.dir) < 0 ||
	    io_pathf(r->jpath, sizeof(r->jpath), "%s/%s.json", r->rdir,
	    r->card) < 0 ||
	    io_pathf(r->lastpath, sizeof(r->lastpath), "%s/%s.last.json",
	    r->rdir, r->card) < 0 ||
	    io_pathf(r->lockpath, sizeof(r->lockpath), "%s/%s.lock", r->rdir,
	    r->card) < 0 ||
	    io_pathf(r->env_card, sizeof(r->env_card), "VFSENTINEL_CARD=%s",
	    r->card) < 0)
		return log_fail(EX_USAGE, "a path is too long", "{s:s}",
		    "data_dir", r->conf.data_dir);
	return 0;
}

/* --- output, journal, audit ---------------------------------------------- */

static void
emit(struct run *r, json_t *obj)
{
	if (obj == NULL || jsonl_write(stdout, obj) < 0)
		r->out_failed = true;
	json_decref(obj);
}

/* Appends the step's audit line under the store's exclusive lock. */
static int
audit_step(struct run *r, enum recovery_step step, const json_t *fields,
    bool locked)
{
	struct audit_event ev = { .command = recovery_step_name(step),
	    .card = r->card, .nvfs = r->vfs.n,
	    .outcome = r->status_word, .extra = fields };
	int rc;

	ev.vfs = (const char (*)[VF_ADDR_LEN + 1])r->vfs.v;
	if (step == STEP_DRAIN)
		ev.reason = RECOVERY_DRAIN_REASON;
	if (!locked && store_lock(&r->s, true, r->cli.lock_timeout) < 0)
		return log_fail(errno == EWOULDBLOCK ? EX_TEMPFAIL : EX_IOERR,
		    "cannot lock the store for the audit line", "{s:s}",
		    "error", r->s.why[0] ? r->s.why : strerror(errno));
	rc = audit_append(r->s.dir, &ev);
	if (!locked)
		store_unlock(&r->s);
	if (rc < 0)
		return log_fail(EX_IOERR, "cannot write the audit line",
		    "{s:s, s:s}", "step", ev.command, "error", strerror(errno));
	return 0;
}

/* Prints the step's line, records it in the journal, audits it. */
static int
finish_step(struct run *r, enum recovery_step step, bool audited)
{
	json_t *line = json_pack("{s:s, s:s, s:s}", "card", r->card, "step",
	    recovery_step_name(step), "status", r->status_word);
	int rc = 0;

	if (line != NULL && r->fields != NULL)
		json_object_update(line, r->fields);
	emit(r, line);
	if (!r->dry_run && r->j != NULL && (recovery_journal_set(r->j, step,
	    r->status_word) < 0 || recovery_journal_save(r->s.dir, r->jpath,
	    r->j) < 0))
		rc = log_fail(EX_IOERR, "cannot write the journal",
		    "{s:s, s:s}", "path", r->jpath, "error", strerror(errno));
	if (rc == 0 && !r->dry_run && !audited)
		rc = audit_step(r, step, r->fields, false);
	json_decref(r->fields);
	r->fields = NULL;
	return rc != 0 ? rc : strcmp(r->status_word, "failed") == 0 ?
	    STEP_FAILED : 0;
}

/* Marks step started in the journal before its command runs. */
static int
start_step(struct run *r, enum recovery_step step)
{
	if (recovery_journal_set(r->j, step, "started") < 0 ||
	    recovery_journal_save(r->s.dir, r->jpath, r->j) < 0)
		return log_fail(EX_IOERR, "cannot write the journal",
		    "{s:s, s:s}", "path", r->jpath, "error", strerror(errno));
	return 0;
}

static void
set_status(struct run *r, const char *word, json_t *fields)
{
	r->status_word = word;
	json_decref(r->fields);
	r->fields = fields != NULL ? fields : json_object();
}

/* --- commands ------------------------------------------------------------ */

/*
 * Runs a configured command for step; true when it exited 0. The output
 * goes to the log, the result into the step's fields.
 */
static bool
run_command(struct run *r, const char *step, const char *script,
    char *const args[], const char *vf)
{
	char env_vf[VF_ADDR_LEN + 32], buf[32];
	char *env[3] = { r->env_card, NULL, NULL };
	struct runcmd_result res;
	const char *what;
	bool ok;

	if (vf != NULL) {
		(void)snprintf(env_vf, sizeof(env_vf), "VFSENTINEL_VF=%s", vf);
		env[1] = env_vf;
	}
	if (runcmd_run(script, args, env, r->conf.step_timeout, &res) < 0) {
		json_object_set_new(r->fields, "error",
		    json_string(strerror(errno)));
		return false;
	}
	ok = runcmd_ok(&res);
	what = runcmd_describe(&res, buf, sizeof(buf));
	log_msg(ok ? LVL_INFO : LVL_ERROR, ok ? "command done" :
	    "command failed", "{s:s, s:s, s:s, s:s, s:o?}", "step", step,
	    "card", r->card, "command", args ? args[0] : script, "result",
	    what, "output", jsonl_string_lossy(res.output, res.len));
	if (!ok)
		json_object_set_new(r->fields, "error", json_string(what));
	runcmd_release(&res);
	return ok;
}

/* sriov-manage OPT PF, without a shell's word splitting of the path. */
static bool
run_sriov(struct run *r, const char *step, const char *opt)
{
	char *args[] = { r->conf.sriov_manage, (char *)opt, r->card, NULL };

	return run_command(r, step, "exec \"$0\" \"$@\"", args, NULL);
}

/* --- the store ----------------------------------------------------------- */

/* Locks the store and loads the health store (and the ledger, with c). */
static int
load_store(struct run *r, bool exclusive, struct health *h,
    struct claims *c)
{
	memset(h, 0, sizeof(*h));
	if (store_lock(&r->s, exclusive, r->cli.lock_timeout) < 0) {
		if (r->s.unavailable)
			return log_fail(EX_UNAVAILABLE, "VF health state "
			    "unavailable", "{s:s}", "error", r->s.why);
		return log_fail(errno == EWOULDBLOCK ? EX_TEMPFAIL : EX_IOERR,
		    "cannot lock the store", "{s:s}", "error",
		    strerror(errno));
	}
	if (health_load(&r->s, h, r->conf.threshold) == 0) {
		if (c == NULL || claims_load(&r->s, c) == 0)
			return 0;
		health_release(h);
	}
	store_unlock(&r->s);
	return log_fail(r->s.nomem ? EX_OSERR : EX_UNAVAILABLE,
	    r->s.nomem ? "out of memory" : "VF health state unavailable",
	    "{s:s}", "error", r->s.why);
}

/* --- the steps ----------------------------------------------------------- */

/* The card and its VFs; the wedged ones; the systemic guard. */
static int
preflight_checks(struct run *r, struct systemic *sy)
{
	struct health h;
	struct claims c;
	size_t i;
	int rc;

	if (!recovery_card_present(r->conf.sysfs_root, r->card))
		return set_status(r, "failed", json_pack("{s:s}", "error",
		    "no such PCI device")), STEP_FAILED;
	if (!r->resumed && (recovery_card_virtfns(r->conf.sysfs_root, r->card,
	    &r->vfs) < 0 || r->vfs.n == 0 || !recovery_card_enabled(
	    r->conf.sysfs_root, r->card, 1, &i)))
		return set_status(r, "failed", json_pack("{s:s}", "error",
		    "no VF in the vendor-VFIO framework")), STEP_FAILED;
	if ((rc = load_store(r, false, &h, &c)) != 0)
		return rc;
	store_unlock(&r->s);
	for (i = 0; !r->resumed && i < r->vfs.n; i++)
		if (health_vf_quarantined(&h, r->vfs.v[i]) &&
		    vf_list_add(&r->wedged, r->vfs.v[i]) < 0)
			rc = log_fail(EX_OSERR, "out of memory", NULL);
	if (rc == 0 && recovery_systemic(&r->conf, &h, &c, sy) < 0)
		rc = log_fail(EX_OSERR, "cannot apply the systemic-failure "
		    "rule", "{s:s}", "error", strerror(errno));
	health_release(&h);
	claims_release(&c);
	return rc;
}

static int
step_preflight(struct run *r)
{
	struct systemic sy = { 0 };
	json_t *f;
	int rc;

	if ((rc = preflight_checks(r, &sy)) != 0)
		return rc == STEP_FAILED ? finish_step(r, STEP_PREFLIGHT,
		    true) : rc;
	f = json_pack("{s:o, s:o}", "vfs", recovery_list_json(&r->vfs),
	    "wedged", recovery_list_json(&r->wedged));
	if (r->resumed)
		json_object_set_new(f, "resumed", json_true());
	if (sy.suspected && !r->resumed) {
		json_object_set_new(f, "systemic_reason",
		    json_string(sy.reason));
		if (!r->force) {
			json_object_set_new(f, "error", json_string(
			    "systemic failure suspected; --force to cycle"));
			set_status(r, "failed", f);
			return finish_step(r, STEP_PREFLIGHT, true);
		}
		json_object_set_new(f, "forced", json_true());
	}
	set_status(r, "done", f);
	if (!r->dry_run && !r->resumed && (r->j = recovery_journal_new(r->card,
	    &r->vfs, &r->wedged)) == NULL)
		return log_fail(EX_OSERR, "out of memory", NULL);
	return finish_step(r, STEP_PREFLIGHT, false);
}

/* drain and clear: edit the store under its exclusive lock, audited. */
static int
step_edit(struct run *r, enum recovery_step step)
{
	struct atomic_result res;
	struct health h;
	json_t *dropped = NULL, *extra;
	bool changed = false;
	int rc;

	if ((rc = load_store(r, true, &h, NULL)) != 0)
		return rc;
	if ((step == STEP_DRAIN ? recovery_drain(&h, &r->vfs, &changed,
	    &dropped) : recovery_clear(&h, &r->vfs, &changed, &dropped)) < 0)
		rc = log_fail(EX_OSERR, "out of memory", NULL);
	else if ((changed || h.requarantined) &&
	    health_save(&r->s, &h, &res) < 0)
		rc = log_fail(EX_IOERR, "cannot save the health store",
		    "{s:s}", "error", r->s.why);
	if (rc == 0) {
		set_status(r, "done", json_pack("{s:o}", "vfs",
		    recovery_list_json(&r->vfs)));
		extra = json_pack("{s:O}", "dropped", dropped);
		rc = audit_step(r, step, extra, true);
		json_decref(extra);
	}
	store_unlock(&r->s);
	health_release(&h);
	json_decref(dropped);
	return rc != 0 ? rc : finish_step(r, step, true);
}

/* The busy VFs of the card now (a new array), or NULL: not provable. */
static int
busy_now(struct run *r, json_t **busy)
{
	struct health h;
	struct claims c;
	int rc;

	*busy = NULL;
	if ((rc = load_store(r, false, &h, &c)) != 0)
		return rc;
	store_unlock(&r->s);
	if (recovery_busy(r->conf.sysfs_root, r->proc_root, &h, &c, &r->vfs,
	    busy) < 0)
		log_msg(LVL_ERROR, "cannot tell whether the VFs are idle",
		    "{s:s, s:s}", "proc_root", r->proc_root, "error",
		    strerror(errno));
	health_release(&h);
	claims_release(&c);
	return 0;
}

static int
step_idle(struct run *r)
{
	long long end = io_now_ms() + (long long)r->wait * 1000;
	json_t *busy;
	int rc;

	for (;;) {
		if ((rc = busy_now(r, &busy)) != 0)
			return rc;
		if (busy == NULL) {
			set_status(r, "failed", json_pack("{s:s}", "error",
			    "cannot scan for VFIO holders"));
			break;
		}
		if (json_array_size(busy) == 0) {
			json_decref(busy);
			set_status(r, "done", NULL);
			break;
		}
		if (sig_stop || io_now_ms() >= end) {
			set_status(r, "failed", json_pack("{s:o}", "busy",
			    busy));
			break;
		}
		json_decref(busy);
		(void)poll(NULL, 0, 1000);
	}
	return finish_step(r, STEP_IDLE, false);
}

static int
step_quiesce(struct run *r)
{
	json_t *held;
	int rc;

	if ((rc = start_step(r, STEP_QUIESCE)) != 0)
		return rc;
	set_status(r, "done", NULL);
	if (r->conf.quiesce_command[0] != '\0' && !run_command(r, "quiesce",
	    r->conf.quiesce_command, NULL, NULL))
		r->status_word = "failed";
	else if ((rc = recovery_wait_unheld(r->proc_root,
	    r->conf.settle_timeout, &held)) != 0) {
		r->status_word = "failed";
		json_object_set_new(r->fields, rc > 0 ? "holders" : "error",
		    rc > 0 ? held : json_string("cannot scan for /dev/nvidia "
		    "holders"));
	}
	return finish_step(r, STEP_QUIESCE, false);
}

/* disable and enable: sriov-manage, then sysfs must agree. */
static int
step_sriov(struct run *r, enum recovery_step step)
{
	bool dis = step == STEP_DISABLE;
	const char *name = recovery_step_name(step);
	size_t have = 0;
	int rc;

	if ((rc = start_step(r, step)) != 0)
		return rc;
	set_status(r, "done", NULL);
	if (!run_sriov(r, name, dis ? "-d" : "-e"))
		r->status_word = "failed";
	else if (dis ? !recovery_wait_disabled(r->conf.sysfs_root, r->card,
	    r->conf.settle_timeout) : !recovery_wait_enabled(r->conf.sysfs_root,
	    r->card, r->vfs.n, r->conf.settle_timeout, &have)) {
		r->status_word = "failed";
		json_object_set_new(r->fields, "error", json_string(dis ?
		    "VFs still present after sriov-manage -d" :
		    "VFs missing after sriov-manage -e"));
		if (!dis)
			json_object_set_new(r->fields, "ready",
			    json_integer((json_int_t)have));
	}
	if (!dis)
		json_object_set_new(r->fields, "expected",
		    json_integer((json_int_t)r->vfs.n));
	return finish_step(r, step, false);
}

static int
step_restore(struct run *r)
{
	set_status(r, "done", NULL);
	if (r->conf.restore_command[0] == '\0')
		r->status_word = "skipped";
	else if (!run_command(r, "restore", r->conf.restore_command, NULL,
	    NULL))
		r->status_word = "failed";
	return finish_step(r, STEP_RESTORE, false);
}

static int
step_verify(struct run *r)
{
	size_t i;

	set_status(r, "done", json_pack("{s:o}", "vfs",
	    recovery_list_json(&r->wedged)));
	if (r->conf.verify_command[0] == '\0' || r->wedged.n == 0) {
		r->status_word = "skipped";
		log_msg(LVL_WARN, "no verification boot: the next placement "
		    "on the card is the verification", "{s:s}", "card",
		    r->card);
	}
	for (i = 0; strcmp(r->status_word, "done") == 0 && i < r->wedged.n;
	    i++)
		if (!run_command(r, "verify", r->conf.verify_command, NULL,
		    r->wedged.v[i])) {
			r->status_word = "failed";
			json_object_set_new(r->fields, "vf",
			    json_string(r->wedged.v[i]));
		}
	return finish_step(r, STEP_VERIFY, false);
}

static int
run_step(struct run *r, enum recovery_step step)
{
	switch (step) {
	case STEP_PREFLIGHT: return step_preflight(r);
	case STEP_DRAIN: return step_edit(r, STEP_DRAIN);
	case STEP_IDLE: return step_idle(r);
	case STEP_QUIESCE: return step_quiesce(r);
	case STEP_DISABLE: return step_sriov(r, STEP_DISABLE);
	case STEP_ENABLE: return step_sriov(r, STEP_ENABLE);
	case STEP_RESTORE: return step_restore(r);
	case STEP_VERIFY: return step_verify(r);
	case STEP_CLEAR: return step_edit(r, STEP_CLEAR);
	default: return EX_SOFTWARE;
	}
}

/* --- the run ------------------------------------------------------------- */

/* The final line and the exit code of a run that got this far. */
static int
conclude(struct run *r, int rc, enum recovery_step last)
{
	if (rc == 0 && !sig_stop) {
		if (rename(r->jpath, r->lastpath) < 0 ||
		    atomic_sync_dir(r->rdir) < 0)
			return log_fail(EX_IOERR, "cannot move the journal",
			    "{s:s, s:s}", "path", r->jpath, "error",
			    strerror(errno));
		emit(r, json_pack("{s:s, s:s}", "card", r->card, "result",
		    "recovered"));
		return 0;
	}
	if (sig_stop && (rc == 0 || rc == STEP_FAILED)) {
		log_msg(LVL_WARN, "stopped; a later run resumes", "{s:s, s:s}",
		    "card", r->card, "step", recovery_step_name(last));
		return EX_TEMPFAIL;
	}
	if (rc == STEP_FAILED)
		emit(r, last == STEP_IDLE ? json_pack("{s:s, s:s}", "card",
		    r->card, "result", "busy") : json_pack("{s:s, s:s, s:s}",
		    "card", r->card, "result", "failed", "step",
		    recovery_step_name(last)));
	return rc;
}

/* The steps after preflight; restore whenever quiesce was started. */
static int
cycle(struct run *r)
{
	enum recovery_step s, start = STEP_DRAIN, last = STEP_PREFLIGHT;
	bool restored = false;
	int rc = 0, rc2;

	if (r->resumed && recovery_needs_restore(r->j)) {
		last = STEP_RESTORE;
		if ((rc = step_restore(r)) != 0)
			return conclude(r, rc, last);
	}
	if (r->resumed)
		start = recovery_resume_point(r->j);
	for (s = STEP_DRAIN; s <= STEP_CLEAR && rc == 0 && !sig_stop; s++) {
		if (s >= STEP_QUIESCE && s < start)
			continue;
		last = s;
		restored = restored || s == STEP_RESTORE;
		rc = run_step(r, s);
	}
	if (!restored && recovery_needs_restore(r->j)) {
		rc2 = step_restore(r);
		if (rc == 0 || (rc == STEP_FAILED && rc2 > STEP_FAILED))
			rc = rc2;
	}
	return conclude(r, rc, last);
}

/* Takes the card's lock, loads a journal, runs. */
static int
recover(struct run *r)
{
	char why[PATH_MAX + 128];
	int rc;

	if (access(r->s.dir, F_OK) < 0)
		return log_fail(EX_UNAVAILABLE, "VF health state unavailable",
		    "{s:s}", "error", "the state directory is missing; "
		    "create it with vfstore init");
	if (io_mkdir_p(r->rdir) < 0 || recovery_own(r->s.dir, r->rdir) < 0)
		return log_fail(EX_IOERR, "cannot create the journal directory",
		    "{s:s, s:s}", "path", r->rdir, "error", strerror(errno));
	if ((r->lock_fd = lock_acquire(r->lockpath, true, 0)) < 0)
		return log_fail(errno == EWOULDBLOCK ? EX_TEMPFAIL : EX_IOERR,
		    errno == EWOULDBLOCK ? "another vfrecover runs on the card"
		    : "cannot lock the card", "{s:s, s:s}", "card", r->card,
		    "error", strerror(errno));
	(void)recovery_own(r->s.dir, r->lockpath);
	rc = recovery_journal_load(r->jpath, r->card, &r->j, why, sizeof(why));
	if (rc < 0)
		return log_fail(errno == EINVAL ? EX_DATAERR : EX_IOERR,
		    "cannot load the journal", "{s:s}", "error", errno ==
		    EINVAL ? why : strerror(errno));
	if (rc == 1 && (r->resumed = true) &&
	    (recovery_journal_list(r->j, "vfs", &r->vfs) < 0 ||
	    recovery_journal_list(r->j, "wedged", &r->wedged) < 0))
		return log_fail(EX_OSERR, "out of memory", NULL);
	if ((rc = step_preflight(r)) != 0)
		return conclude(r, rc, STEP_PREFLIGHT);
	return cycle(r);
}

/* --dry-run: the plan, what is busy now; nothing changes. */
static int
dry_run(struct run *r)
{
	enum recovery_step step;
	json_t *busy = NULL;
	int rc;

	if ((rc = step_preflight(r)) != 0)
		return conclude(r, rc, STEP_PREFLIGHT);
	if ((rc = busy_now(r, &busy)) != 0)
		return rc;
	for (step = STEP_DRAIN; step <= STEP_CLEAR; step++) {
		set_status(r, "planned", recovery_plan_fields(step, &r->conf,
		    r->card, &r->vfs, &r->wedged, busy));
		(void)finish_step(r, step, true);
	}
	rc = busy == NULL || json_array_size(busy) > 0 ? STEP_FAILED : 0;
	emit(r, json_pack("{s:s, s:s}", "card", r->card, "result",
	    rc == 0 ? "dry_run" : "busy"));
	json_decref(busy);
	return rc;
}

static void
status_line(json_t *journal, void *arg)
{
	emit(arg, json_incref(journal));
}

/* --status: every journal, in progress or last, one line each. */
static int
show_status(struct run *r)
{
	if (store_init(&r->s, r->conf.data_dir) < 0)
		return log_fail(EX_USAGE, "a path is too long", NULL);
	if (recovery_journals(r->s.dir, status_line, r) < 0)
		return log_fail(EX_IOERR, "cannot list the journals", "{s:s}",
		    "error", strerror(errno));
	return 0;
}

static void
release(struct run *r)
{
	json_decref(r->j);
	json_decref(r->fields);
	free(r->vfs.v);
	free(r->wedged.v);
	lock_release(r->lock_fd);
}

int
main(int argc, char **argv)
{
	struct run r = { .lock_fd = -1 };
	int code;

	cli_start(PROG);
	parse_args(argc, argv, &r);
	cli_finish(&r.cli, &r.conf);
	/* A stop finishes the step and restores (SPEC.md 4.6). */
	cli_stop_signals(true);
	if (r.status)
		code = show_status(&r);
	else if ((code = paths(&r)) == 0)
		code = r.dry_run ? dry_run(&r) : recover(&r);
	release(&r);
	if (r.out_failed && (code == 0 || code == STEP_FAILED))
		code = log_fail(EX_IOERR, "cannot write stdout", NULL);
	if (code == 0 || code == STEP_FAILED)
		cli_close_stdout();
	return code;
}
