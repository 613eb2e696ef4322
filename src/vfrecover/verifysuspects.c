/*
 * verifysuspects.c - vfrecover --verify-suspects (verifysuspects.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#include "store.h"
#include "suspect.h"
#include "timefmt.h"
#include "verifysuspects.h"

#define VERIFY_PREFIX "verify-"

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

/* Claims vf as instance id for the run; -1 when it cannot be. */
static int
claim_for_run(struct store *s, unsigned timeout, const char *vf,
    char *id)
{
	struct claim cl = { 0 };
	struct atomic_result res;
	struct claims c;
	char now[TIMEFMT_MAX];
	int rc = -1;

	if (store_lock(s, true, timeout) < 0)
		return -1;
	if (claims_load(s, &c) == 0 && claims_find_vf(&c, vf) == NULL &&
	    claims_find_instance(&c, id) == NULL) {
		memcpy(cl.vf, vf, sizeof(cl.vf));
		cl.instance_id = id;
		if (claimlife_new(&c, &cl, now, sizeof(now)) == 0 &&
		    claims_save(s, &c, &res) == 0)
			rc = 0;
	}
	claims_release(&c);
	store_unlock(s);
	return rc;
}

/* The verify line's audit and, for a verdict, the store's change. */
static int
settle(struct store *s, const struct conf *conf, unsigned timeout,
    const char *vf, const char *id, const char *result)
{
	struct audit_event ev = { .command = "verify", .vf = vf };
	const struct suspect *sp;
	struct atomic_result res;
	struct suspects d;
	struct health h;
	struct claims c;
	struct claimlife_end end = { .command = "release", .vf = vf,
	    .instance_id = id, .reason = "verification done" };
	bool changed = false;
	int audit_err, rc = -1;
	json_t *extra = json_pack("{s:s}", "result", result);

	if (store_lock(s, true, timeout) < 0)
		goto out;
	if (claims_load(s, &c) == 0) {
		(void)claimlife_release(s, &c, &end, &res, &audit_err);
		claims_release(&c);
	}
	if (suspects_load(s, &d) < 0 ||
	    health_load(s, &h, conf->threshold) < 0)
		goto unlock;
	sp = suspects_find(&d, vf);
	if (strcmp(result, "fail") == 0 && healthrules_quarantine(&h, vf,
	    &changed) == 0 && changed && health_save(s, &h, &res) < 0)
		goto release;
	if (strcmp(result, "error") != 0 && sp != NULL) {
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

/* Runs the command for vf: "pass", "fail" or "error". */
static const char *
run_one(const struct conf *conf, const char *vf, int *status)
{
	char env_vf[VF_ADDR_LEN + 32], env_card[VF_ADDR_LEN + 32];
	char card[VF_ADDR_LEN + 1] = "";
	char *env[3] = { env_vf, env_card, NULL };
	struct runcmd_result res;
	const char *result;

	vf_card(conf->sysfs_root, vf, card, sizeof(card));
	(void)snprintf(env_vf, sizeof(env_vf), "VFSENTINEL_VF=%s", vf);
	(void)snprintf(env_card, sizeof(env_card), "VFSENTINEL_CARD=%s",
	    card);
	if (runcmd_run(conf->verify_command, NULL, env, conf->step_timeout,
	    &res) < 0)
		return "error";
	result = runcmd_ok(&res) ? "pass" : "fail";
	*status = res.timed_out ? -1 : WIFEXITED(res.status) ?
	    WEXITSTATUS(res.status) : -1;
	runcmd_release(&res);
	return result;
}

static json_t *
line_of(const char *vf, const char *result, int status)
{
	return json_pack("{s:s, s:s, s:i}", "vf_address", vf, "result",
	    result, "exit", status);
}

int
verifysuspects_run(const struct conf *conf, unsigned lock_timeout,
    void (*emit)(void *arg, json_t *line), void *arg)
{
	char id[sizeof(VERIFY_PREFIX) + VF_ADDR_LEN];
	struct suspects d = { 0 };
	const char *result;
	struct store s;
	size_t i;
	int rc, status;

	if (conf->verify_command[0] == '\0') {
		log_msg(LVL_ERROR, "no recovery.verify_command to verify "
		    "suspect VFs with", NULL);
		return EX_CONFIG;
	}
	if (store_init(&s, conf->data_dir) < 0)
		return EX_USAGE;
	if ((rc = suspect_list(&s, lock_timeout, &d)) != 0)
		return rc;
	for (i = 0; i < d.n; i++) {
		status = -1;
		(void)snprintf(id, sizeof(id), VERIFY_PREFIX "%s", d.v[i].vf);
		result = claim_for_run(&s, lock_timeout, d.v[i].vf, id) < 0 ?
		    "error" : run_one(conf, d.v[i].vf, &status);
		if (settle(&s, conf, lock_timeout, d.v[i].vf, id, result) < 0)
			result = "error";
		rc |= strcmp(result, "error") == 0;
		emit(arg, line_of(d.v[i].vf, result, status));
	}
	suspects_release(&d);
	return rc;
}
