/*
 * storeread.h - what sentinel-poll reads of the store (SPEC 7.2): the
 * shared lock, waited for in short naps that a stop signal can end (the
 * library's lock_acquire() sleeps with the signals blocked), and whether
 * vf-health.json holds an assignment's failure, so that a failure the
 * sentinel saw is reported again until the store holds it.
 *
 * Ownership: a struct storeread_health owns the health it loaded;
 * storeread_release() frees it. Nothing here prints or exits.
 */
#ifndef VFS_STOREREAD_H
#define VFS_STOREREAD_H

#include <stdbool.h>

#include "healthfile.h"
#include "store.h"

/* Naps ms milliseconds, or less; -1 when the caller must stop. */
typedef int storeread_wait_fn(void *arg, long long ms);

/*
 * store_lock(s, false, ...) tried again after naps of 1 ms doubling to
 * 32 ms, for at most ms milliseconds; wait (NULL: nanosleep) naps. 0 (the
 * lock is held, or there is no lock file: nothing to read), or -1 with
 * errno and s->why: EWOULDBLOCK "lock PATH: timed out after Ns" (N
 * whole seconds of ms), EINTR when wait said stop, or store_lock()'s.
 */
int storeread_lock(struct store *s, long long ms, storeread_wait_fn *wait,
    void *arg);

/* The health store as read for one scan. */
struct storeread_health {
	struct health h;		/* owned */
	bool loaded;
};

/*
 * Loads DATA_DIR/gpu/vf-health.json under the shared lock (waited for at
 * most ms, as storeread_lock()) with the quarantine threshold. 0, or -1
 * (errno; r is empty and not loaded: nothing is known).
 */
int storeread_health(struct storeread_health *r, const char *data_dir,
    unsigned threshold, long long ms, storeread_wait_fn *wait, void *arg);

/*
 * true when a loaded r makes a failure report of the assignment (vf,
 * instance_id, assigned_at) change nothing: the store holds its failure,
 * or the VF is quarantined (vfstore apply answers it "unchanged" from its
 * cache, healthrules.h healthrules_failure_noop()).
 */
bool storeread_holds(const struct storeread_health *r, const char *vf,
    const char *instance_id, const char *assigned_at);

void storeread_release(struct storeread_health *r);

#endif
