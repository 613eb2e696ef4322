/*
 * applyengine.c - unit tests (TAP) for the streaming apply engine: check lines
 * from a pipe, answers and events through the callbacks, the health file
 * and the metrics textfile in a temporary data dir, fail-closed without
 * DATA_DIR/gpu, and an emit failure that stops the stream.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vfstore/applyengine.h"
#include "tap.h"

#define VF "0000:41:00.4"
#define LINE(check, at) "{\"check\":\"" check "\",\"vf_address\":\"" \
	VF "\",\"instance_id\":\"i-1\",\"assigned_at\":\"2026-01-02T03:04:0" \
	at "Z\",\"nvrm\":\"Xid 119\"}\n"

struct seen {
	json_t *answers;		/* every emitted line */
	int events[APPLY_EV_READ + 1];
	int repeats;			/* UNAVAILABLE with repeat set */
	unsigned long bad_lineno;
	char nvrm[64];
	int stop_after;			/* emit fails after this many; 0 never */
	int flushes;			/* flush calls */
	size_t flushed_at;		/* answers emitted at the last flush */
	int flush_rc;			/* what flush returns */
};

static int
emit(void *arg, json_t *line)
{
	struct seen *sn = arg;

	json_array_append_new(sn->answers, line);
	if (sn->stop_after > 0 &&
	    json_array_size(sn->answers) >= (size_t)sn->stop_after)
		return 74;
	return 0;
}

static int
flush(void *arg)
{
	struct seen *sn = arg;

	sn->flushes++;
	sn->flushed_at = json_array_size(sn->answers);
	return sn->flush_rc;
}

static void
event(void *arg, const struct apply_event *ev)
{
	struct seen *sn = arg;

	sn->events[ev->kind]++;
	sn->repeats += ev->kind == APPLY_EV_UNAVAILABLE && ev->repeat;
	if (ev->kind == APPLY_EV_BAD_LINE)
		sn->bad_lineno = ev->lineno;
	if (ev->kind == APPLY_EV_REPORT && ev->error == NULL)
		snprintf(sn->nvrm, sizeof(sn->nvrm), "%s", ev->nvrm);
}

/* Runs the engine over input (then end of input); returns applyengine_run's. */
static int
run_engine(const char *data, const char *input, const char *metrics,
    struct seen *sn)
{
	struct apply_conf conf = { .threshold = 2, .lock_timeout = 1,
	    .metrics = metrics, .in_fd = -1, .out_fd = -1, .emit = emit,
	    .event = event, .flush = flush, .arg = sn };
	struct store s;
	struct apply *ap;
	int in[2], out[2], rc;

	if (store_init(&s, data) < 0 || pipe(in) < 0 || pipe(out) < 0)
		return -100;
	if (write(in[1], input, strlen(input)) != (ssize_t)strlen(input))
		return -101;
	close(in[1]);
	conf.s = &s;
	conf.in_fd = in[0];
	conf.out_fd = out[1];
	if ((ap = applyengine_new(&conf)) == NULL)
		return -102;
	rc = applyengine_run(ap);
	applyengine_free(ap);
	close(in[0]);
	close(out[0]);
	close(out[1]);
	return rc;
}

static const char *
answer_str(const struct seen *sn, size_t i, const char *key)
{
	const char *v = json_string_value(json_object_get(
	    json_array_get(sn->answers, i), key));

	return v != NULL ? v : "(none)";
}

static long long
answer_int(const struct seen *sn, size_t i, const char *key)
{
	return json_integer_value(json_object_get(json_array_get(sn->answers,
	    i), key));
}

static void
test_stream(const char *tmp)
{
	struct seen sn = { .answers = json_array() };
	char data[PATH_MAX * 2], gpu[PATH_MAX * 2], metrics[PATH_MAX * 2];
	char health[PATH_MAX * 2];
	const char *m;

	snprintf(data, sizeof(data), "%s/ok", tmp);
	snprintf(gpu, sizeof(gpu), "%s/ok/gpu", tmp);
	snprintf(metrics, sizeof(metrics), "%s/m.prom", tmp);
	snprintf(health, sizeof(health), "%s/ok/gpu/vf-health.json", tmp);
	ok(mkdir(data, 0755) == 0 && mkdir(gpu, 0755) == 0, "data dir");
	ok(run_engine(data, LINE("failed", "5") "\n"
	    "{\"check\":\"unknown\"}\n" "not json\n"
	    "{\"check\":\"nonsense\"}\n" LINE("failed", "6") LINE("ok", "6"),
	    metrics, &sn) == 0, "end of input: 0");
	ok(json_array_size(sn.answers) == 6, "one answer a line (blank "
	    "skipped): %zu", json_array_size(sn.answers));
	is_str(answer_str(&sn, 0, "outcome"), "recorded", "first failure");
	ok(answer_int(&sn, 0, "threshold") == 2, "threshold given");
	is_str(answer_str(&sn, 1, "outcome"), "counted", "unknown counted");
	ok(strcmp(answer_str(&sn, 2, "error"), "(none)") != 0, "bad JSON");
	ok(strstr(answer_str(&sn, 3, "error"), "unknown check") != NULL,
	    "unknown check: %s", answer_str(&sn, 3, "error"));
	is_str(answer_str(&sn, 3, "check"), "nonsense", "input kept");
	is_str(answer_str(&sn, 4, "outcome"), "quarantined", "threshold met");
	ok(answer_int(&sn, 5, "cleared") == 2, "success clears both");
	ok(json_is_true(json_object_get(json_array_get(sn.answers, 5),
	    "rescinded")), "and rescinds the quarantine");
	ok(sn.events[APPLY_EV_BAD_LINE] == 2 && sn.bad_lineno == 5,
	    "bad lines reported, line %lu", sn.bad_lineno);
	ok(sn.events[APPLY_EV_REPORT] == 3, "an event for each report");
	is_str(sn.nvrm, "Xid 119", "nvrm passed on");
	ok(sn.events[APPLY_EV_UNAVAILABLE] == 0, "available");
	ok(access(health, F_OK) == 0, "health file saved");
	m = tap_slurp(metrics);
	ok(m != NULL && strstr(m, "sentinel_checks_total{result=\"failed\"} "
	    "2\n") != NULL, "metrics: failed checks");
	ok(m != NULL && strstr(m, "sentinel_quarantines_total 1\n") != NULL,
	    "metrics: one quarantine");
	json_decref(sn.answers);
}

static void
test_unavailable(const char *tmp)
{
	struct seen sn = { .answers = json_array() };
	char data[PATH_MAX * 2];

	snprintf(data, sizeof(data), "%s/nogpu", tmp);
	ok(mkdir(data, 0755) == 0, "data dir without gpu/");
	ok(run_engine(data, LINE("failed", "5") LINE("ok", "5"), NULL, &sn) == 0,
	    "unavailable: still 0");
	ok(strncmp(answer_str(&sn, 0, "error"), "VF health state "
	    "unavailable: ", 29) == 0, "fails closed: %s",
	    answer_str(&sn, 0, "error"));
	is_str(answer_str(&sn, 1, "vf_address"), VF, "input kept");
	ok(sn.events[APPLY_EV_UNAVAILABLE] >= 1 && sn.repeats ==
	    sn.events[APPLY_EV_UNAVAILABLE] - 1, "unavailable reported "
	    "once as new (%d, %d repeats)",
	    sn.events[APPLY_EV_UNAVAILABLE], sn.repeats);
	ok(sn.events[APPLY_EV_REPORT] == 2,
	    "an event for each report, with its error");
	json_decref(sn.answers);
}

/* The answer is the input line with the outcome's members set: one the
 * line already has keeps its place, a new one comes after the input's. */
static void
test_answer_text(const char *tmp)
{
	static const char *const want[] = {
		"{\"outcome\":\"counted\",\"check\":\"unknown\","
		    "\"n\":1}",
		"{\"threshold\":2,\"check\":\"failed\",\"vf_address\":\"" VF
		    "\",\"instance_id\":\"i-9\",\"assigned_at\":\"t\","
		    "\"outcome\":\"recorded\",\"failures\":1}",
		"{\"check\":\"failed\",\"vf_address\":\"" VF "\","
		    "\"instance_id\":\"i-9\",\"assigned_at\":\"t\","
		    "\"failures\":1,"
		    "\"outcome\":\"unchanged\",\"threshold\":2}",
	};
	struct seen sn = { .answers = json_array() };
	char data[PATH_MAX * 2], gpu[PATH_MAX * 2];
	char *text;
	size_t i;

	snprintf(data, sizeof(data), "%s/answer", tmp);
	snprintf(gpu, sizeof(gpu), "%s/answer/gpu", tmp);
	ok(mkdir(data, 0755) == 0 && mkdir(gpu, 0755) == 0, "data dir");
	ok(run_engine(data, "{\"outcome\":\"x\",\"check\":\"unknown\","
	    "\"n\":1}\n"
	    "{\"threshold\":\"t\",\"check\":\"failed\",\"vf_address\":\"" VF
	    "\",\"instance_id\":\"i-9\",\"assigned_at\":\"t\"}\n"
	    "{\"check\":\"failed\",\"vf_address\":\"" VF "\",\"instance_id\":"
	    "\"i-9\",\"assigned_at\":\"t\",\"failures\":\"x\"}\n", NULL,
	    &sn) == 0, "answers: end of input");
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		text = json_dumps(json_array_get(sn.answers, i), JSON_COMPACT);
		is_str(text, want[i], "answer text");
		free(text);
	}
	json_decref(sn.answers);
}

static void
test_emit_stops(const char *tmp)
{
	struct seen sn = { .answers = json_array(), .stop_after = 1 };
	char data[PATH_MAX * 2];

	snprintf(data, sizeof(data), "%s/ok", tmp);
	ok(run_engine(data, "{\"check\":\"unknown\"}\n{\"check\":\"ok\"}\n",
	    NULL, &sn) == 74, "emit's failure returned");
	json_decref(sn.answers);
}

/* A batch's answers are flushed once, after the last; a failed flush
 * stops the engine with its code. */
static void
test_flush(const char *tmp)
{
	struct seen sn = { .answers = json_array() };
	char data[PATH_MAX * 2];
	int rc;

	snprintf(data, sizeof(data), "%s/ok", tmp);
	rc = run_engine(data, "{\"check\":\"unknown\"}\n{\"check\":\"ok\"}\n"
	    "{\"check\":\"unknown\"}\n", NULL, &sn);
	ok(rc == 0 && json_array_size(sn.answers) == 3 && sn.flushes == 1 &&
	    sn.flushed_at == 3, "one flush after the batch's 3 answers "
	    "(%d flushes, the last after %zu)", sn.flushes, sn.flushed_at);
	json_decref(sn.answers);
	sn = (struct seen){ .answers = json_array(), .flush_rc = 74 };
	ok(run_engine(data, "{\"check\":\"unknown\"}\n", NULL, &sn) == 74,
	    "a failed flush stops the engine with its code");
	json_decref(sn.answers);
}

int
main(void)
{
	char tmp[PATH_MAX];

	tap_tmpdir(tmp, sizeof(tmp), "applyengine");
	test_stream(tmp);
	test_unavailable(tmp);
	test_answer_text(tmp);
	test_emit_stops(tmp);
	test_flush(tmp);
	tap_rmtree(tmp);
	return done_testing();
}
