/*
 * storeread.c - the shared lock a stop can interrupt, and the health
 * store as sentinel-poll reads it (storeread.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "healthrules.h"
#include "io.h"
#include "storeread.h"

#define NAP_FIRST_MS 1
#define NAP_MAX_MS 32

static int
nap(storeread_wait_fn *wait, void *arg, long long ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	if (wait != NULL)
		return wait(arg, ms);
	nanosleep(&ts, NULL);
	return 0;
}

int
storeread_lock(struct store *s, long long ms, storeread_wait_fn *wait,
    void *arg)
{
	long long deadline = io_now_ms() + ms, step = NAP_FIRST_MS;

	for (;;) {
		/* One try: lock_acquire() with no time to wait. */
		if (store_lock(s, false, 0) == 0)
			return 0;
		if (errno != EWOULDBLOCK)
			return -1;
		if (io_now_ms() >= deadline)
			break;
		if (nap(wait, arg, step) == -1) {
			(void)snprintf(s->why, sizeof(s->why), "lock %.900s: "
			    "stopped", s->lock_path);
			errno = EINTR;
			return -1;
		}
		if (step < NAP_MAX_MS)
			step *= 2;
	}
	(void)snprintf(s->why, sizeof(s->why), "lock %.900s: timed out after "
	    "%llds", s->lock_path, ms / 1000);
	errno = EWOULDBLOCK;
	return -1;
}

int
storeread_health(struct storeread_health *r, const char *data_dir,
    unsigned threshold, long long ms, storeread_wait_fn *wait, void *arg)
{
	struct store s;
	int rc, err;

	memset(r, 0, sizeof(*r));
	if (store_init(&s, data_dir) == -1 ||
	    storeread_lock(&s, ms, wait, arg) == -1)
		return -1;
	rc = health_load(&s, &r->h, threshold);
	err = errno;
	store_unlock(&s);
	r->loaded = rc == 0;
	errno = err;
	return rc == 0 ? 0 : -1;
}

bool
storeread_holds(const struct storeread_health *r, const char *vf,
    const char *instance_id, const char *assigned_at)
{
	struct health_report rep = { .vf = vf, .instance = instance_id,
	    .assigned_at = assigned_at };

	return r->loaded && healthrules_failure_noop(&r->h, &rep);
}

void
storeread_release(struct storeread_health *r)
{
	if (r->loaded)
		health_release(&r->h);
	memset(r, 0, sizeof(*r));
}
