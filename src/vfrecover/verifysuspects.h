/*
 * verifysuspects.h - `vfrecover --verify-suspects` (SPEC.md 7.3): runs
 * recovery.verify_command once per suspect VF, the VF claimed for the run
 * (instance verify-VF, released after), with VFSENTINEL_VF and
 * VFSENTINEL_CARD set and bounded by recovery.step_timeout. Exit 0 clears
 * the suspicion (audited unsuspect, cause verify); anything else, a
 * timeout too, quarantines the VF. Each verification appends an audit
 * line "verify" with its result (pass, fail, error) and prints one line
 * {"vf_address","result","exit"}.
 */
#ifndef VFRECOVER_VERIFYSUSPECTS_H
#define VFRECOVER_VERIFYSUSPECTS_H

#include <jansson.h>

#include "conf.h"

/*
 * 0 when every suspect VF was verified (passed or failed), 78 without a
 * verify command, 69 when the store is unavailable, 1 when a
 * verification could not be run. emit takes each line (the reference).
 */
int verifysuspects_run(const struct conf *conf, unsigned lock_timeout,
    void (*emit)(void *arg, json_t *line), void *arg);

#endif
