/*
 * verifysuspects.h - `vfrecover --verify-suspects` (SPEC.md 7.3, 8.2):
 * runs recovery.verify_command once per suspect VF, the VF claimed for
 * the run (instance verify-VF, with a fresh verify_token and the
 * suspicion's profile; released after), with VFSENTINEL_VF,
 * VFSENTINEL_CARD, VFSENTINEL_INSTANCE, VFSENTINEL_VERIFY_TOKEN and
 * VFSENTINEL_CONF set, bounded by recovery.step_timeout (SIGTERM to the
 * command's process group, SIGKILL 10 s later). Exit 0 clears the
 * suspicion (audited unsuspect, cause verify); 1, 75, any other status
 * and a timeout quarantine the VF; 69 leaves it suspect (result error).
 * A stop signal ends the running command the same way, releases its
 * claim, leaves the VF suspect (result interrupted) and ends the run
 * with 75. Whatever the command left running is killed with its group
 * before the claim is released. Each verification appends an audit
 * line "verify" with its result and prints one line
 * {"vf_address","result","exit"}; --dry-run prints
 * {"vf_address","action":"would_verify",...} and changes nothing.
 */
#ifndef VFRECOVER_VERIFYSUSPECTS_H
#define VFRECOVER_VERIFYSUSPECTS_H

#include <stdbool.h>

#include <jansson.h>

#include "conf.h"

/* SIGKILL this long after SIGTERM to a verify command's group. */
#define VERIFY_GRACE_S 10

struct verifysuspects_conf {
	const struct conf *conf;
	const char *conf_path;		/* VFSENTINEL_CONF for the command */
	const char *proc_root;		/* for the VF's deconfigure */
	unsigned lock_timeout;
	bool dry_run;
	void (*emit)(void *arg, json_t *line);	/* takes the reference */
	void *arg;
};

/*
 * 0 when every suspect VF was verified (passed or failed), 78 without a
 * verify command, 69 when the store is unavailable, 1 when a
 * verification could not be run, 75 when a stop signal ended the run.
 */
int verifysuspects_run(const struct verifysuspects_conf *vc);

#endif
