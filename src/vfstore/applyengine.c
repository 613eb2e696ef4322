/*
 * applyengine.c - the streaming engine of vfstore apply (applyengine.h):
 * the input lines and their batches, the answers, the counters and their
 * textfile. The health state a batch is answered from is in applybatch.c.
 */

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "applyengine.h"
#include "applybatch.h"
#include "checkline.h"
#include "healthrules.h"
#include "io.h"
#include "jsonl.h"
#include "prom.h"
#include "sig.h"
#include "store.h"
#include "vfaddr.h"
#include "wait.h"
#include "healthfile.h"

#define METRICS_EVERY_MS 1000	/* textfile writes while lines stream */

const char *
applyengine_check_name(enum apply_check k)
{
	return checkline_verdict_name((enum checkline_verdict)k);
}

static void __attribute__((format(printf, 2, 3)))
item_error(struct item *it, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(it->errbuf, sizeof(it->errbuf), fmt, ap);
	va_end(ap);
	it->error = it->errbuf;
}

/* Reads the check line; an ok or failed line is a report. */
static void
item_classify(struct item *it)
{
	struct checkline cl;

	if (checkline_read(it->in, STORE_STRING_MAX, &cl, it->errbuf,
	    sizeof(it->errbuf)) == -1)
		it->error = it->errbuf;
	it->check = (enum apply_check)cl.verdict;
	it->rep.vf = cl.vf;
	it->rep.instance = cl.instance_id;
	it->rep.assigned_at = cl.assigned_at;
	it->report = it->error == NULL &&
	    (cl.verdict == CHECKLINE_OK || cl.verdict == CHECKLINE_FAILED);
}

/* Turns one reader result into a batch item. */
static void
item_init(struct apply *ap, struct item *it, enum jsonl_status st,
    const char *line, size_t len)
{
	const char *why = NULL;

	memset(it, 0, sizeof(*it));
	if (st == JSONL_TOO_LONG)
		it->error = "line longer than 64 KiB";
	else if ((it->in = jsonl_parse(line, len, &why)) == NULL)
		item_error(it, "%s", why);
	else
		item_classify(it);
	if (it->error != NULL)
		applybatch_tell(ap, &(struct apply_event){
		    .kind = APPLY_EV_BAD_LINE, .lineno = ap->r.lineno,
		    .error = it->error });
}

/* Counts a report's effect and tells it (the upstream controller logs it). */
static void
item_account(struct apply *ap, struct item *it)
{
	const char *nvrm = jsonl_str(it->in, "nvrm");
	struct apply_event ev = { .kind = APPLY_EV_REPORT, .rep = &it->rep,
	    .failure = it->check == APPLY_FAILED, .error = it->error,
	    .nvrm = nvrm != NULL ? nvrm : "" };

	if (it->error == NULL && ev.failure &&
	    it->rep.outcome != HEALTH_UNCHANGED) {
		ap->init_failures++;
		ap->quarantines += it->rep.outcome == HEALTH_QUARANTINED;
		ap->metrics_dirty = true;
	}
	applybatch_tell(ap, &ev);
}

/*
 * json_object_update(obj, add), except that a member already equal is
 * left alone: the answer is the input line itself (no copy of it), and
 * the report's strings (it->rep.vf) point into that line.
 */
static int
answer_merge(json_t *obj, json_t *add)
{
	const char *key;
	size_t len;
	json_t *v;

	json_object_keylen_foreach(add, key, len, v) {
		if (json_equal(json_object_getn(obj, key, len), v))
			continue;
		if (json_object_setn_nocheck(obj, key, len, v) < 0)
			return -1;
	}
	return 0;
}

/* {"outcome":"counted"}, built without json_pack()'s format parsing
 * (a third of the lines of a stream are answered so). */
static json_t *
counted_json(void)
{
	json_t *o = json_object();

	if (o != NULL && json_object_set_new_nocheck(o, "outcome",
	    json_string_nocheck("counted")) < 0) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

/* The answer line: the input plus the outcome, or an error first. */
static json_t *
item_answer(struct apply *ap, struct item *it)
{
	json_t *out, *add;

	if (it->error != NULL) {
		out = json_pack("{s:s}", "error", it->error);
		if (out != NULL && it->in != NULL)
			json_object_update_missing(out, it->in);
		return out;
	}
	if (it->check == APPLY_FAILED)
		add = healthrules_failure_json(&it->rep, ap->conf->threshold);
	else if (it->check == APPLY_OK)
		add = healthrules_success_json(&it->rep);
	else
		add = counted_json();
	out = json_incref(it->in);
	if (add != NULL && it->audit_error != NULL && json_object_set_new(add,
	    "error", json_string(it->audit_error)) < 0) {
		json_decref(add);
		add = NULL;
	}
	if (out == NULL || add == NULL || answer_merge(out, add) < 0) {
		json_decref(out);
		out = NULL;
	}
	json_decref(add);
	return out;
}

/* --- apply: metrics ------------------------------------------------------ */

static void
metrics_text(const struct apply *ap, struct prom *p)
{
	static const char *const ns = "hypeman_instances_vgpu_";
	char name[128];
	int k;

	prom_family(p, "hypeman_instances_vgpu_sentinel_init_failures_total",
	    "counter", "Guest-reported vGPU init failures newly recorded.");
	prom_sample(p, "hypeman_instances_vgpu_sentinel_init_failures_total",
	    NULL, (double)ap->init_failures);
	prom_family(p, "hypeman_instances_vgpu_sentinel_quarantines_total",
	    "counter", "VFs quarantined by the sentinel.");
	prom_sample(p, "hypeman_instances_vgpu_sentinel_quarantines_total",
	    NULL, (double)ap->quarantines);
	snprintf(name, sizeof(name), "%ssentinel_checks_total", ns);
	prom_family(p, name, "counter", "Guest GPU init checks by result.");
	for (k = 0; k < APPLY_CHECK_N; k++)
		prom_sample(p, name, (const char *[]){ "result",
		    checkline_verdict_name((enum checkline_verdict)k), NULL },
		    (double)ap->checks[k]);
}

static void
metrics_flush(struct apply *ap)
{
	struct prom p;
	const char *text;
	size_t len;

	if (ap->conf->metrics == NULL || !ap->metrics_dirty)
		return;
	ap->metrics_at = io_now_ms();
	prom_init(&p);
	metrics_text(ap, &p);
	text = prom_finish(&p, &len);
	if (text == NULL || prom_write_textfile(ap->conf->metrics, text,
	    len) < 0) {
		if (!ap->metrics_warned)
			applybatch_tell(ap, &(struct apply_event){ .kind =
			    APPLY_EV_METRICS, .path = ap->conf->metrics,
			    .error = strerror(errno) });
		ap->metrics_warned = true;
	} else {
		ap->metrics_dirty = ap->metrics_warned = false;
	}
	prom_release(&p);
}

/* --- apply: the stream --------------------------------------------------- */

/* Takes up to APPLY_BATCH_MAX lines already buffered; true at end of input. */
static bool
batch_collect(struct apply *ap)
{
	struct jsonl_reader *r = &ap->r;
	enum jsonl_status st;
	char *line;
	size_t len;

	ap->n = 0;
	while (ap->n < APPLY_BATCH_MAX) {
		st = jsonl_next(r, &line, &len);
		if (st == JSONL_NEED || st == JSONL_END)
			return st == JSONL_END;
		if (st == JSONL_LINE && len == 0)
			continue;
		item_init(ap, &ap->items[ap->n], st, line, len);
		if (ap->items[ap->n].error == NULL) {
			ap->checks[ap->items[ap->n].check]++;
			ap->metrics_dirty = true;
		}
		ap->n++;
	}
	return false;
}

/* Answers the collected batch; 0 or what emit said (nonzero: stop). */
static int
batch_run(struct apply *ap)
{
	size_t i;
	int rc = 0;

	if (ap->n == 0)
		return 0;
	applybatch_refresh(ap);
	if (ap->unavailable)
		applybatch_fail_pending(ap, "VF health state unavailable: ",
		    ap->reason);
	else if (applybatch_from_cache(ap))
		applybatch_locked(ap);
	for (i = 0; i < ap->n; i++) {
		struct item *it = &ap->items[i];

		if (it->report)
			item_account(ap, it);
		if (rc == 0)
			rc = ap->conf->emit(ap->conf->arg,
			    item_answer(ap, it));
		json_decref(it->in);
	}
	if (rc == 0 && ap->conf->flush != NULL)
		rc = ap->conf->flush(ap->conf->arg);
	/* The textfile is written with two fsyncs: while lines stream in,
	 * at most once a METRICS_EVERY_MS, and always before a wait for
	 * input and at the end (applyengine_run), so a reader of an idle engine
	 * sees every line counted. */
	if (io_now_ms() - ap->metrics_at >= METRICS_EVERY_MS)
		metrics_flush(ap);
	return rc;
}

/*
 * SIGTERM and SIGINT stay blocked except inside ppoll(), so a signal can
 * only end the wait for input, never a batch half-way. The same ppoll()
 * watches the reader of the answers, so one that went away while no
 * input comes is noticed at once.
 */
static int
wait_input(struct apply *ap, const sigset_t *waitmask)
{
	struct pollfd p[2] = { { .fd = ap->conf->in_fd, .events = POLLIN } };
	bool gone = false;

	for (;;) {
		if (sig_stop)
			return 1;
		if (wait_fds(p, 1, ap->conf->out_fd, 1000, waitmask,
		    &gone) > 0 && p[0].revents != 0)
			return 0;
		if (gone) {
			applybatch_tell(ap, &(struct apply_event){ .kind =
			    APPLY_EV_PEER_GONE });
			return -1;
		}
	}
}

/* True when more input is readable now, so no wait comes and the
 * textfile (two fsyncs) can wait too: otherwise input from a file or a
 * fast writer cost one textfile a reader's buffer (about 1,100 lines). */
static bool
input_ready(const struct apply *ap)
{
	struct pollfd p = { .fd = ap->conf->in_fd, .events = POLLIN };

	return poll(&p, 1, 0) > 0;
}

/* The stops blocked from here on, and the mask ppoll() lets them in
 * with; -1/errno when the kernel refused. */
static int
signals_block(sigset_t *waitmask)
{
	if (sig_stop_block(waitmask) < 0)
		return -1;
	sig_stop_unblocked(waitmask);
	return 0;
}

static int
signals_failed(struct apply *ap)
{
	applybatch_tell(ap, &(struct apply_event){ .kind = APPLY_EV_READ,
	    .error = strerror(errno) });
	return -1;
}

int
applyengine_run(struct apply *ap)
{
	sigset_t waitmask;
	bool end = false;
	int rc = 0, w;

	/* The handler first: a SIGTERM sent once the textfile is there (its
	 * reader's sign of life) must find it, not the default. The stops
	 * stay deliverable through the first load and textfile, and are
	 * blocked only once batches start (a stop then ends the wait). */
	if (sig_stop_install(false) < 0)
		return signals_failed(ap);
	applybatch_refresh(ap);
	metrics_flush(ap);
	if (signals_block(&waitmask) < 0)
		return signals_failed(ap);
	while (rc == 0 && !end) {
		end = batch_collect(ap);
		rc = batch_run(ap);
		if (rc != 0 || end || ap->n == APPLY_BATCH_MAX)
			continue;
		if (!input_ready(ap))
			metrics_flush(ap);
		if ((w = wait_input(ap, &waitmask)) != 0) {
			rc = w > 0 ? 0 : -1;
			break;
		}
		if (jsonl_fill(&ap->r) < 0) {
			applybatch_tell(ap, &(struct apply_event){
			    .kind = APPLY_EV_READ, .error = strerror(errno) });
			rc = -1;
		}
	}
	metrics_flush(ap);
	return rc;
}

struct apply *
applyengine_new(const struct apply_conf *conf)
{
	struct apply *ap = calloc(1, sizeof(*ap));

	if (ap == NULL)
		return NULL;
	if (jsonl_reader_init(&ap->r, conf->in_fd) < 0) {
		free(ap);
		errno = ENOMEM;
		return NULL;
	}
	ap->conf = conf;
	ap->metrics_dirty = true;
	return ap;
}

void
applyengine_free(struct apply *ap)
{
	if (ap == NULL)
		return;
	health_release(&ap->cache);
	claims_release(&ap->ccache);
	suspects_release(&ap->scache);
	jsonl_reader_release(&ap->r);
	free(ap);
}
