/*
 * metrics.c - vfrecover's textfile from its journals
 * (metrics.h).
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "io.h"
#include "jsonl.h"
#include "lock.h"
#include "prom.h"
#include "recovery.h"
#include "metrics.h"
#include "timefmt.h"
#include "vfaddr.h"

#define LAST_SUCCESS "vfsentinel_recovery_last_success_timestamp_seconds"
#define UNFINISHED "vfsentinel_recovery_unfinished"
#define LOCK_WAIT_S 10

/* The samples found, by family, until the text is made. */
struct found {
	json_t *last;		/* [[card, seconds], ...] */
	json_t *unfinished;	/* [[card, step], ...] */
	bool nomem;
};

/* The time of journal j's clear step: 0, or -1 if it has none. */
static int
clear_time(const json_t *j, json_int_t *secs)
{
	struct timespec ts;
	const json_t *st;
	size_t i;

	json_array_foreach(json_object_get(j, "steps"), i, st) {
		const char *at = jsonl_str(st, "at");

		if (jsonl_str(st, "step") != NULL &&
		    strcmp(jsonl_str(st, "step"), "clear") == 0 &&
		    at != NULL && timefmt_parse(at, &ts) == 0) {
			*secs = (json_int_t)ts.tv_sec;
			return 0;
		}
	}
	return -1;
}

/*
 * Where an unfinished journal stopped: its failed step (restore runs
 * after a failed quiesce, disable or enable: the failed one is the
 * news), else its last entry (started: killed in it, or running it).
 */
static const char *
stop_step(const json_t *steps)
{
	const json_t *st;
	const char *status;
	size_t i;

	json_array_foreach(steps, i, st)
		if ((status = jsonl_str(st, "status")) != NULL &&
		    strcmp(status, "failed") == 0 && jsonl_str(st, "step"))
			return jsonl_str(st, "step");
	st = json_array_get(steps, json_array_size(steps) - 1);
	return jsonl_str(st, "step") ? jsonl_str(st, "step") : "preflight";
}

/* One journal of recovery_journals(); an unreadable one has no card. */
static void
add_journal(json_t *j, void *arg)
{
	struct found *f = arg;
	const char *card = jsonl_str(j, "card"), *state = jsonl_str(j, "state");
	json_int_t secs;
	int rc = 0;

	if (card == NULL || !vfaddr_valid(card) || state == NULL)
		return;
	if (strcmp(state, "last") == 0 && clear_time(j, &secs) == 0)
		rc = json_array_append_new(f->last, json_pack("[s, I]", card,
		    secs));
	else if (strcmp(state, "in_progress") == 0)
		rc = json_array_append_new(f->unfinished, json_pack("[s, s]",
		    card, stop_step(json_object_get(j, "steps"))));
	if (rc < 0)
		f->nomem = true;
}

/* The text of both families; the caller releases p. */
static void
make_text(struct prom *p, const struct found *f)
{
	const json_t *s;
	size_t i;

	prom_init(p);
	prom_family(p, LAST_SUCCESS, "gauge", "Unix time the card's last "
	    "recovery ended (its clear step).");
	json_array_foreach(f->last, i, s)
		prom_sample(p, LAST_SUCCESS, (const char *[]){ "card",
		    json_string_value(json_array_get(s, 0)), NULL },
		    (double)json_integer_value(json_array_get(s, 1)));
	prom_family(p, UNFINISHED, "gauge", "1: the card's recovery has not "
	    "finished (running, failed, busy or stopped at step); it stays "
	    "drained.");
	json_array_foreach(f->unfinished, i, s)
		prom_sample(p, UNFINISHED, (const char *[]){ "card",
		    json_string_value(json_array_get(s, 0)), "step",
		    json_string_value(json_array_get(s, 1)), NULL }, 1);
}

/* Reads the journals and writes path; the caller holds the lock. */
static int
write_locked(const char *gpu_dir, const char *path)
{
	struct found f = { .last = json_array(), .unfinished = json_array() };
	char why[PATH_MAX + 256];
	struct prom p;
	const char *text;
	size_t len;
	int rc = -1;

	if (f.last == NULL || f.unfinished == NULL) {
		errno = ENOMEM;
		goto out;
	}
	if (recovery_journals(gpu_dir, NULL, add_journal, &f, why,
	    sizeof(why)) < 0)
		goto out;
	make_text(&p, &f);
	if (f.nomem || (text = prom_finish(&p, &len)) == NULL)
		errno = ENOMEM;
	else
		rc = prom_write_textfile(path, text, len);
	prom_release(&p);
out:
	json_decref(f.last);
	json_decref(f.unfinished);
	return rc;
}

int
metrics_write(const char *gpu_dir, const char *path)
{
	char why[PATH_MAX + 256];
	int dirfd, fd, rc, e;

	if ((dirfd = recovery_dir_open(gpu_dir, true, why, sizeof(why))) < 0)
		return -1;
	fd = lock_acquire_at(dirfd, "metrics.lock", true, LOCK_WAIT_S);
	e = errno;
	close(dirfd);
	if (fd < 0) {
		errno = e;
		return -1;
	}
	rc = write_locked(gpu_dir, path);
	e = errno;
	lock_release(fd);
	errno = e;
	return rc;
}
