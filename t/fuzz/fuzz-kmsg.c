/*
 * fuzz-kmsg.c - the /dev/kmsg record parser, the failure matcher and the
 * reader in both of its modes.
 *
 * Input: byte 0 picks the chunk size of the stream-mode reads, the rest is
 * the log. Properties:
 * - kmsg_match() on the whole input agrees with kmsg_parse() and the rule
 *   of SPEC.md 3.1 (kernel facility, "NVRM:" first, needle inside).
 * - Stream mode (a file of lines, read in chunks) emits exactly the lines,
 *   in order, that kmsg_match() accepts on their own and that fit a
 *   kernel record; over-long lines are counted, never matched.
 * - Record mode (one record per read; a NUL byte separates records, a
 *   record "\x01" stands for an EPIPE overrun) emits exactly the matching
 *   records that fit the buffer and counts lost records from the gap.
 */
#include <errno.h>

#include "fuzz.h"
#include "kmsg-watch/kmsg.h"

#define T "kmsg"

struct feed {
	const char *p;
	size_t len;
	size_t pos;
	size_t chunk;
	/* expected matches, checked in order by emit */
	char *want[64];
	size_t wantlen[64];
	size_t nwant;
	size_t got;
	bool overflow;		/* more matches than want[] holds */
};

static void
check_rule(const char *buf, size_t len)
{
	struct kmsg_record rec;
	bool m, want = false;

	m = kmsg_match(buf, len, &rec);
	if (kmsg_parse(buf, len, &rec) == 0)
		want = rec.prio >> 3 == 0 && rec.msglen >= 5 &&
		    memcmp(rec.msg, "NVRM:", 5) == 0 &&
		    memmem(rec.msg, rec.msglen, KMSG_NEEDLE,
		    strlen(KMSG_NEEDLE)) != NULL;
	fuzz_require(m == want, T, "kmsg_match disagrees with the rule");
	if (m)
		fuzz_require(rec.msg >= buf && rec.msg + rec.msglen <=
		    buf + len, T, "message outside the record");
}

static ssize_t
stream_read(void *ctx, void *buf, size_t len)
{
	struct feed *f = ctx;
	size_t n = f->len - f->pos;

	if (n > f->chunk)
		n = f->chunk;
	if (n > len)
		n = len;
	memcpy(buf, f->p + f->pos, n);
	f->pos += n;
	return (ssize_t)n;
}

static int
emit(void *ctx, const struct kmsg_record *rec)
{
	struct feed *f = ctx;

	if (f->overflow)
		return 0;
	fuzz_require(f->got < f->nwant, T, "reader emitted an extra match");
	fuzz_require(f->wantlen[f->got] == rec->msglen &&
	    memcmp(f->want[f->got], rec->msg, rec->msglen) == 0, T,
	    "reader emitted a different message");
	free(f->want[f->got]);
	f->want[f->got++] = NULL;
	return 0;
}

/* Appends a copy of rec's message (which may hold NUL bytes). */
static void
want_add(struct feed *f, const struct kmsg_record *rec)
{
	char *m;

	if (f->nwant == 64) {
		f->overflow = true;
		return;
	}
	m = malloc(rec->msglen + 1);
	if (m == NULL)
		abort();
	memcpy(m, rec->msg, rec->msglen);
	f->wantlen[f->nwant] = rec->msglen;
	f->want[f->nwant++] = m;
}

/* The expected stream-mode matches: whole lines, split at '\n'. */
static void
expect_lines(struct feed *f)
{
	struct kmsg_record rec;
	const char *s = f->p, *end = f->p + f->len, *nl;

	while (s < end) {
		nl = memchr(s, '\n', (size_t)(end - s));
		if (nl == NULL)
			nl = end;
		if ((size_t)(nl - s) + 1 <= KMSG_RECORD_MAX &&
		    kmsg_match(s, (size_t)(nl - s), &rec))
			want_add(f, &rec);
		s = nl + 1;
	}
}

static void
feed_free(struct feed *f)
{
	size_t i;

	for (i = 0; i < f->nwant; i++)
		free(f->want[i]);
}

static void
run_stream(const char *p, size_t len, size_t chunk)
{
	struct kmsg_reader r;
	struct feed f;
	int rc;

	memset(&f, 0, sizeof(f));
	f.p = p;
	f.len = len;
	f.chunk = chunk;
	expect_lines(&f);
	memset(&r, 0, sizeof(r));
	r.read = stream_read;
	r.emit = emit;
	r.ctx = &f;
	if (kmsg_reader_init(&r, true) < 0)
		abort();
	while ((rc = kmsg_step(&r)) > 0)
		;
	fuzz_require(rc == 0, T, "stream reader failed");
	fuzz_require(f.overflow || f.got == f.nwant, T,
	    "stream reader missed a match");
	kmsg_reader_release(&r);
	feed_free(&f);
}

/* Record mode: each read returns the next NUL-separated record. */
static ssize_t
record_read(void *ctx, void *buf, size_t len)
{
	struct feed *f = ctx;
	const char *s = f->p + f->pos, *end = f->p + f->len, *z;
	size_t n;

	/* The device never returns an empty record: skip those. */
	while (f->pos < f->len && *s == '\0') {
		f->pos++;
		s++;
	}
	if (f->pos >= f->len)
		return 0;
	z = memchr(s, '\0', (size_t)(end - s));
	n = (size_t)((z != NULL ? z : end) - s);
	if (n > len) {
		errno = EINVAL;
		return -1;
	}
	f->pos += n + 1;
	if (n == 1 && s[0] == '\x01') {
		errno = EPIPE;
		return -1;
	}
	memcpy(buf, s, n);
	return (ssize_t)n;
}

/* The expected record-mode matches and lost count, up to the first
 * record the buffer cannot hold (where the reader stops with EINVAL). */
static unsigned long long
expect_records(struct feed *f, bool *einval)
{
	struct kmsg_record rec;
	const char *s = f->p, *end = f->p + f->len, *z;
	unsigned long long lost = 0;
	uint64_t next = 0;
	bool known = false, overrun = false;
	size_t n;

	*einval = false;
	for (; s < end; s = z + 1) {
		z = memchr(s, '\0', (size_t)(end - s));
		if (z == NULL)
			z = end;
		n = (size_t)(z - s);
		if (n == 0)
			continue;
		if (n > KMSG_RECORD_MAX) {
			*einval = true;
			break;
		}
		if (n == 1 && s[0] == '\x01') {
			overrun = true;
			continue;
		}
		if (kmsg_parse(s, n, &rec) == 0) {
			if (overrun && known && rec.seq > next)
				lost += rec.seq - next;
			overrun = false;
			known = true;
			next = rec.seq + 1;
		}
		if (kmsg_match(s, n, &rec))
			want_add(f, &rec);
	}
	return lost;
}

static void
run_records(const char *p, size_t len)
{
	struct kmsg_reader r;
	struct feed f;
	unsigned long long lost;
	bool einval;
	int rc;

	memset(&f, 0, sizeof(f));
	f.p = p;
	f.len = len;
	lost = expect_records(&f, &einval);
	memset(&r, 0, sizeof(r));
	r.read = record_read;
	r.emit = emit;
	r.ctx = &f;
	if (kmsg_reader_init(&r, false) < 0)
		abort();
	while ((rc = kmsg_step(&r)) > 0)
		;
	fuzz_require(einval ? rc == -1 && errno == EINVAL : rc == 0, T,
	    "record reader ended wrongly");
	fuzz_require(f.overflow || f.got == f.nwant, T,
	    "record reader missed a match");
	fuzz_require(r.stats.lost == lost, T, "record reader lost count");
	kmsg_reader_release(&r);
	feed_free(&f);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data + 1;
	size_t len;

	if (size < 1)
		return 0;
	len = size - 1;
	check_rule(p, len);
	run_stream(p, len, 1 + (size_t)data[0] * 67);
	run_records(p, len);
	return 0;
}
