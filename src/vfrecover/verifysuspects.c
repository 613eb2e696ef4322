/*
 * verifysuspects.c - vfrecover --verify-suspects (verifysuspects.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include "auditlog.h"
#include "claimlife.h"
#include "claims.h"
#include "healthfile.h"
#include "healthrules.h"
#include "io.h"
#include "log.h"
#include "runcmd.h"
#include "sig.h"
#include "store.h"
#include "suspect.h"
#include "timefmt.h"
#include "verifysuspects.h"

#define VERIFY_PREFIX "verify-"
#define TOKEN_BYTES 16			/* 32 hex characters */
#define TOKEN_LEN (2 * TOKEN_BYTES)

/* One verification: its VF, instance, token and profile. */
struct verification {
	const char *vf;
	const char *profile;		/* the suspicion's; NULL */
	char id[sizeof(VERIFY_PREFIX) + VF_ADDR_LEN];
	char token[TOKEN_LEN + 1];
};

/* A fresh token from getrandom(2), lower-case hex. 0 or -1/errno. */
static int
new_token(char *out)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[TOKEN_BYTES];
	size_t got = 0, i;
	ssize_t n;

	while (got < sizeof(b)) {
		n = getrandom(b + got, sizeof(b) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		got += (size_t)n;
	}
	for (i = 0; i < sizeof(b); i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[TOKEN_LEN] = '\0';
	return 0;
}

/* The suspect VFs' addresses, under the shared lock: 0, 69 or 75. */
static int
suspect_list(struct store *s, unsigned timeout, struct suspects *d)
{
	if (store_lock(s, false, timeout) < 0) {
		log_msg(LVL_ERROR, "cannot lock the store", "{s:s}", "error",
		    s->why);
		return s->unavailable ? EX_UNAVAILABLE : EX_TEMPFAIL;
	}
	if (suspects_load(s, d) < 0) {
		store_unlock(s);
		log_msg(LVL_ERROR, "VF suspects unavailable", "{s:s}",
		    "error", s->why);
		return EX_UNAVAILABLE;
	}
	store_unlock(s);
	return 0;
}

/* Claims the VF as v->id for the run, with its token and profile; -1
 * when it cannot be. */
static int
claim_for_run(struct store *s, unsigned timeout, struct verification *v)
{
	struct claim cl = { 0 };
	struct atomic_result res;
	struct claims c;
	char now[TIMEFMT_MAX];
	int rc = -1;

	if (new_token(v->token) < 0) {
		log_msg(LVL_ERROR, "cannot draw a verification token", "{s:s}",
		    "error", strerror(errno));
		return -1;
	}
	if (store_lock(s, true, timeout) < 0)
		return -1;
	if (claims_load(s, &c) == 0 && claims_find_vf(&c, v->vf) == NULL &&
	    claims_find_instance(&c, v->id) == NULL) {
		memcpy(cl.vf, v->vf, sizeof(cl.vf));
		cl.instance_id = v->id;
		cl.verify_token = v->token;
		cl.profile = (char *)v->profile;
		if (claimlife_new(&c, &cl, now, sizeof(now)) == 0 &&
		    claims_save(s, &c, &res) == 0)
			rc = 0;
	}
	claims_release(&c);
	store_unlock(s);
	return rc;
}

/*
 * Ends the verification claim of id: the VF's type written back to 0
 * when the verification domain configured it (libvirt.deconfigure),
 * then the claim released and audited.
 */
static void
end_claim(struct store *s, const struct verifysuspects_conf *vc,
    const char *vf, const char *id, const char *result)
{
	struct claimlife_end end = { .command = "release", .vf = vf,
	    .instance_id = id, .reason = strcmp(result, "interrupted") == 0 ?
	    "verification interrupted" : "verification done" };
	const struct claim *cl;
	struct atomic_result res;
	struct claims c;
	bool wrote = false;
	long pid = 0;
	int audit_err;

	if (claims_load(s, &c) < 0)
		return;
	cl = claims_find_instance(&c, id);
	if (cl != NULL && cl->type_id != NULL &&
	    vc->conf->libvirt_deconfigure) {
		if (claimlife_deconfigure_scan(vc->conf->sysfs_root,
		    vc->proc_root, vf, &pid, &wrote) < 0)
			log_msg(LVL_WARN, "cannot deconfigure the verified VF",
			    "{s:s, s:I, s:s}", "vf", vf, "holder_pid",
			    (json_int_t)pid, "error", strerror(errno));
		end.deconfigured = wrote;
	}
	if (cl != NULL)
		(void)claimlife_release(s, &c, &end, &res, &audit_err);
	claims_release(&c);
}

/* The verify line's audit and, for a verdict, the store's change. */
static int
settle(struct store *s, const struct verifysuspects_conf *vc,
    const char *vf, const char *id, const char *result)
{
	const struct conf *conf = vc->conf;
	struct audit_event ev = { .command = "verify", .vf = vf };
	const struct suspect *sp;
	struct atomic_result res;
	struct suspects d;
	struct health h;
	bool changed = false;
	bool verdict = strcmp(result, "pass") == 0 ||
	    strcmp(result, "fail") == 0;
	int rc = -1;
	json_t *extra = json_pack("{s:s}", "result", result);

	if (store_lock(s, true, vc->lock_timeout) < 0)
		goto out;
	end_claim(s, vc, vf, id, result);
	if (suspects_load(s, &d) < 0 ||
	    health_load(s, &h, conf->threshold) < 0)
		goto unlock;
	sp = suspects_find(&d, vf);
	if (strcmp(result, "fail") == 0 && healthrules_quarantine(&h, vf,
	    &changed) == 0 && changed && health_save(s, &h, &res) < 0)
		goto release;
	if (verdict && sp != NULL) {
		(void)suspect_audit_end(s->dir, sp, "verify");
		suspects_remove(&d, vf, &changed);
		if (suspects_save(s, &d, &res) < 0)
			goto release;
	}
	ev.extra = extra;
	rc = extra != NULL ? auditlog_append(s->dir, &ev) : -1;
release:
	health_release(&h);
	suspects_release(&d);
unlock:
	store_unlock(s);
out:
	json_decref(extra);
	return rc;
}

/* The card of vf: the basename of its physfn link ("" if none). */
static void
vf_card(const char *sysfs_root, const char *vf, char *card, size_t len)
{
	char path[PATH_MAX], target[PATH_MAX];
	const char *base;
	ssize_t n;

	card[0] = '\0';
	if (io_pathf(path, sizeof(path), "%s/sys/bus/pci/devices/%s/physfn",
	    sysfs_root, vf) < 0 ||
	    (n = readlink(path, target, sizeof(target) - 1)) < 0)
		return;
	target[n] = '\0';
	base = strrchr(target, '/');
	base = base != NULL ? base + 1 : target;
	if (strlen(base) < len)
		memcpy(card, base, strlen(base) + 1);
}

/*
 * The verdict of the command's end (SPEC 8.2): exit 0 pass; 69 error
 * (it could not run: the VF stays suspect); a stop interrupted; any
 * other exit, a death by signal and the timeout fail.
 */
static const char *
verdict_of(const struct runcmd_result *res)
{
	if (res->interrupted)
		return "interrupted";
	if (runcmd_ok(res))
		return "pass";
	if (!res->timed_out && WIFEXITED(res->status) &&
	    WEXITSTATUS(res->status) == EX_UNAVAILABLE)
		return "error";
	return "fail";
}

/* Runs the command for v: "pass", "fail", "error" or "interrupted". */
static const char *
run_one(const struct verifysuspects_conf *vc, const struct verification *v,
    int *status)
{
	const struct conf *conf = vc->conf;
	char env_vf[VF_ADDR_LEN + 32], env_card[VF_ADDR_LEN + 32];
	char env_id[sizeof(v->id) + 32], env_token[TOKEN_LEN + 32];
	char env_conf[PATH_MAX + 32];
	char card[VF_ADDR_LEN + 1] = "";
	char *env[] = { env_vf, env_card, env_id, env_token, env_conf, NULL };
	const struct runcmd_opts opts = { .grace_s = VERIFY_GRACE_S,
	    .stop = true, .leftovers = true };
	struct runcmd_result res;
	const char *result;
	char buf[32];

	vf_card(conf->sysfs_root, v->vf, card, sizeof(card));
	(void)snprintf(env_vf, sizeof(env_vf), "VFSENTINEL_VF=%s", v->vf);
	(void)snprintf(env_card, sizeof(env_card), "VFSENTINEL_CARD=%s",
	    card);
	(void)snprintf(env_id, sizeof(env_id), "VFSENTINEL_INSTANCE=%s",
	    v->id);
	(void)snprintf(env_token, sizeof(env_token),
	    "VFSENTINEL_VERIFY_TOKEN=%s", v->token);
	(void)snprintf(env_conf, sizeof(env_conf), "VFSENTINEL_CONF=%s",
	    vc->conf_path);
	if (runcmd_run_opts(conf->verify_command, NULL, env,
	    conf->step_timeout, &opts, &res) < 0)
		return "error";
	result = verdict_of(&res);
	*status = res.timed_out || res.interrupted ? -1 :
	    WIFEXITED(res.status) ? WEXITSTATUS(res.status) : -1;
	log_msg(strcmp(result, "pass") == 0 ? LVL_INFO : LVL_WARN,
	    "the verify command ended", "{s:s, s:s, s:s, s:s%}", "vf", v->vf,
	    "result", result, "status", runcmd_describe(&res, buf,
	    sizeof(buf)), "output", res.output, res.len);
	runcmd_release(&res);
	return result;
}

static json_t *
line_of(const char *vf, const char *result, int status)
{
	return json_pack("{s:s, s:s, s:i}", "vf_address", vf, "result",
	    result, "exit", status);
}

/* --dry-run: the line of the verification it would run. */
static json_t *
would_line(const struct verifysuspects_conf *vc, const struct suspect *sp)
{
	char id[sizeof(VERIFY_PREFIX) + VF_ADDR_LEN];

	(void)snprintf(id, sizeof(id), VERIFY_PREFIX "%s", sp->vf);
	return json_pack("{s:s, s:s, s:s, s:s, s:s?}", "vf_address", sp->vf,
	    "action", "would_verify", "instance_id", id, "command",
	    vc->conf->verify_command, "profile", sp->profile);
}

int
verifysuspects_run(const struct verifysuspects_conf *vc)
{
	struct verification v;
	struct suspects d = { 0 };
	const char *result;
	struct store s;
	size_t i;
	int rc, status;

	if (vc->conf->verify_command[0] == '\0') {
		log_msg(LVL_ERROR, "no recovery.verify_command to verify "
		    "suspect VFs with", NULL);
		return EX_CONFIG;
	}
	if (store_init(&s, vc->conf->data_dir) < 0)
		return EX_USAGE;
	if ((rc = suspect_list(&s, vc->lock_timeout, &d)) != 0)
		return rc;
	/* A command's orphans come back here to be reaped, so that its
	 * group is seen gone when it is (runcmd_run_opts()). */
	if (!vc->dry_run)
		(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	for (i = 0; i < d.n && sig_stop == 0; i++) {
		if (vc->dry_run) {
			vc->emit(vc->arg, would_line(vc, &d.v[i]));
			continue;
		}
		memset(&v, 0, sizeof(v));
		v.vf = d.v[i].vf;
		v.profile = d.v[i].profile;
		status = -1;
		(void)snprintf(v.id, sizeof(v.id), VERIFY_PREFIX "%s", v.vf);
		result = claim_for_run(&s, vc->lock_timeout, &v) < 0 ?
		    "error" : run_one(vc, &v, &status);
		if (settle(&s, vc, v.vf, v.id, result) < 0)
			result = "error";
		if (strcmp(result, "interrupted") == 0)
			rc = EX_TEMPFAIL;
		else if (rc == 0)
			rc = strcmp(result, "error") == 0;
		vc->emit(vc->arg, line_of(v.vf, result, status));
	}
	if (sig_stop != 0)
		rc = EX_TEMPFAIL;
	suspects_release(&d);
	return rc;
}
