/*
 * kmsg.c - kernel log record matching and reading (see kmsg.h).
 *
 * The matcher is the upstream rule: only kernel-facility records count,
 * because the kernel stores a userspace write to /dev/kmsg with facility
 * LOG_USER (priority 12), and coerces a forged "<0>" or "<1>" prefix to 8
 * or 9, so no process in the guest can fake a driver failure.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kmsg.h"

#define NEEDLE_LEN (sizeof(KMSG_NEEDLE) - 1)
#define PREFIX_LEN (sizeof(KMSG_PREFIX) - 1)
#define PRIO_MAX_DIGITS 10
#define U64_MAX_DIGITS 19

static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
	    c == '\v' || c == '\f';
}

/* Parses a non-empty run of decimal digits of at most maxdigits into a
 * value that fits a signed 64-bit JSON integer. */
static int
parse_digits(const char *s, size_t n, size_t maxdigits, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0 || n > maxdigits)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > (uint64_t)INT64_MAX)
		return -1;
	*out = v;
	return 0;
}

/* Splits "PRIO,SEQ,TS_USEC[,FLAGS...]" (the part before ';'). */
static int
parse_prefix(const char *p, size_t n, struct kmsg_record *rec)
{
	const char *end = p + n, *c1, *c2, *c3;
	uint64_t prio;

	c1 = memchr(p, ',', n);
	if (c1 == NULL)
		return -1;
	c2 = memchr(c1 + 1, ',', (size_t)(end - c1 - 1));
	if (c2 == NULL)
		return -1;
	c3 = memchr(c2 + 1, ',', (size_t)(end - c2 - 1));
	if (c3 == NULL)
		c3 = end;
	if (parse_digits(p, (size_t)(c1 - p), PRIO_MAX_DIGITS, &prio) < 0 ||
	    prio > UINT32_MAX)
		return -1;
	if (parse_digits(c1 + 1, (size_t)(c2 - c1 - 1), U64_MAX_DIGITS,
	    &rec->seq) < 0)
		return -1;
	if (parse_digits(c2 + 1, (size_t)(c3 - c2 - 1), U64_MAX_DIGITS,
	    &rec->ts_usec) < 0)
		return -1;
	rec->prio = (unsigned)prio;
	return 0;
}

int
kmsg_parse(const char *buf, size_t len, struct kmsg_record *rec)
{
	const char *nl, *semi, *msg, *end;

	nl = memchr(buf, '\n', len);
	end = nl != NULL ? nl : buf + len;
	semi = memchr(buf, ';', (size_t)(end - buf));
	if (semi == NULL)
		return -1;
	if (parse_prefix(buf, (size_t)(semi - buf), rec) < 0)
		return -1;
	msg = semi + 1;
	while (msg < end && is_space(*msg))
		msg++;
	while (end > msg && is_space(end[-1]))
		end--;
	rec->msg = msg;
	rec->msglen = (size_t)(end - msg);
	return 0;
}

bool
kmsg_match(const char *buf, size_t len, struct kmsg_record *rec)
{
	if (kmsg_parse(buf, len, rec) < 0)
		return false;
	if (rec->prio >> 3 != 0)
		return false;
	if (rec->msglen < PREFIX_LEN ||
	    memcmp(rec->msg, KMSG_PREFIX, PREFIX_LEN) != 0)
		return false;
	return memmem(rec->msg, rec->msglen, KMSG_NEEDLE, NEEDLE_LEN) != NULL;
}

int
kmsg_reader_init(struct kmsg_reader *r, bool lines)
{
	r->lines = lines;
	r->cap = lines ? KMSG_STREAM_BUF : KMSG_RECORD_MAX;
	r->buf = malloc(r->cap);
	if (r->buf == NULL)
		return -1;
	memset(&r->stats, 0, sizeof(r->stats));
	kmsg_reader_reset(r);
	return 0;
}

void
kmsg_reader_release(struct kmsg_reader *r)
{
	free(r->buf);
	r->buf = NULL;
}

void
kmsg_reader_reset(struct kmsg_reader *r)
{
	r->len = 0;
	r->skipping = false;
	r->overrun = false;
	r->seq_known = false;
	r->next_seq = 0;
}

static void
note(struct kmsg_reader *r, enum kmsg_note what, unsigned long long n)
{
	if (r->note != NULL)
		r->note(r->ctx, what, n);
}

static int
emit_if_match(struct kmsg_reader *r, const char *p, size_t n)
{
	struct kmsg_record rec;

	if (!kmsg_match(p, n, &rec))
		return 0;
	r->stats.matched++;
	return r->emit(r->ctx, &rec);
}

/* Counts the records lost in the sequence gap after an EPIPE. */
static void
track_seq(struct kmsg_reader *r, uint64_t seq)
{
	unsigned long long lost = 0;

	if (r->overrun) {
		if (r->seq_known && seq > r->next_seq)
			lost = seq - r->next_seq;
		r->stats.lost += lost;
		r->overrun = false;
		note(r, KMSG_NOTE_OVERRUN, lost);
	}
	r->seq_known = true;
	r->next_seq = seq + 1;
}

static int
record_step(struct kmsg_reader *r)
{
	struct kmsg_record rec;
	ssize_t n;

	n = r->read(r->ctx, r->buf, r->cap);
	if (n < 0 && errno == EPIPE) {
		r->overrun = true;
		r->stats.overruns++;
		return 1;
	}
	if (n <= 0)
		return (int)n;
	if (kmsg_parse(r->buf, (size_t)n, &rec) == 0)
		track_seq(r, rec.seq);
	if (emit_if_match(r, r->buf, (size_t)n) < 0)
		return -1;
	return 1;
}

/* One whole line (without its newline) that holds the needle. */
static int
stream_line(struct kmsg_reader *r, const char *p, size_t n)
{
	if (n + 1 > KMSG_RECORD_MAX) {
		r->stats.overlong++;
		note(r, KMSG_NOTE_OVERLONG, n);
		return 0;
	}
	return emit_if_match(r, p, n);
}

/*
 * Finds the needle by its last byte, '!', which is rare in kernel logs:
 * memchr runs at memory speed, where memmem or splitting every line is
 * several times slower than grep. Text full of '!' only costs a memcmp
 * per '!'.
 */
static const char *
find_needle(const char *p, const char *end)
{
	const char *bang = p + NEEDLE_LEN - 1;

	while (bang < end && (bang = memchr(bang, '!',
	    (size_t)(end - bang))) != NULL) {
		if (memcmp(bang - (NEEDLE_LEN - 1), KMSG_NEEDLE,
		    NEEDLE_LEN - 1) == 0)
			return bang - (NEEDLE_LEN - 1);
		bang++;
	}
	return NULL;
}

/*
 * Scans a block of whole lines. Only a line that contains the needle can
 * match, so the block is searched for the needle rather than split into
 * lines: this keeps a 1,000,000-line file near grep's speed.
 */
static int
stream_block(struct kmsg_reader *r, const char *p, size_t n)
{
	const char *end = p + n, *hit, *ls, *le;

	while ((hit = find_needle(p, end)) != NULL) {
		ls = memrchr(p, '\n', (size_t)(hit - p));
		ls = ls != NULL ? ls + 1 : p;
		le = memchr(hit, '\n', (size_t)(end - hit));
		if (le == NULL)
			le = end;
		if (stream_line(r, ls, (size_t)(le - ls)) < 0)
			return -1;
		p = le < end ? le + 1 : end;
	}
	return 0;
}

/* Drops the rest of an over-long line; returns where the next one starts. */
static size_t
stream_skip(struct kmsg_reader *r)
{
	const char *nl;

	if (!r->skipping)
		return 0;
	nl = memchr(r->buf, '\n', r->len);
	if (nl == NULL)
		return r->len;
	r->skipping = false;
	return (size_t)(nl - r->buf) + 1;
}

static int
stream_consume(struct kmsg_reader *r)
{
	size_t start, rest;
	const char *nl;

	start = stream_skip(r);
	nl = memrchr(r->buf + start, '\n', r->len - start);
	rest = nl != NULL ? (size_t)(nl - r->buf) + 1 : start;
	if (rest > start && stream_block(r, r->buf + start, rest - start) < 0)
		return -1;
	memmove(r->buf, r->buf + rest, r->len - rest);
	r->len -= rest;
	if (r->len >= KMSG_RECORD_MAX) {
		r->stats.overlong++;
		note(r, KMSG_NOTE_OVERLONG, r->len);
		r->skipping = true;
		r->len = 0;
	}
	return 1;
}

static int
stream_step(struct kmsg_reader *r)
{
	ssize_t n;

	n = r->read(r->ctx, r->buf + r->len, r->cap - r->len);
	if (n < 0)
		return -1;
	if (n == 0) {
		/* A last line without a newline still counts. */
		if (!r->skipping && r->len > 0 &&
		    stream_block(r, r->buf, r->len) < 0)
			return -1;
		r->len = 0;
		return 0;
	}
	r->len += (size_t)n;
	return stream_consume(r);
}

int
kmsg_step(struct kmsg_reader *r)
{
	return r->lines ? stream_step(r) : record_step(r);
}
