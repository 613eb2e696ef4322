/*
 * fuzz-logtail.c - the console-log tail state machine (logtail_feed) of
 * sentinel-poll --source log, fed the way the program feeds it: from a
 * buffer of LOGTAIL_LINE_MAX + 1 bytes that starts at t->offset, while
 * the log grows by a chunk at a time.
 *
 * Input: byte 0 picks the chunk size; in the rest every byte 0x01 stands
 * for 16384 bytes of "a" (four make a line of exactly LOGTAIL_LINE_MAX).
 * Properties, against a plain split of the whole log at '\n':
 * - the tail always makes progress and consumes exactly the bytes up to
 *   the last newline (an unterminated last line waits), unless that line
 *   is already over-long;
 * - the last marker of the pass is the one of the last whole line of at
 *   most LOGTAIL_LINE_MAX bytes that guestproto_marker_match() accepts, and
 *   for FAILED the kept message is that line's text unescaped;
 * - a message formatted by guestproto_marker_format() comes back unescaped
 *   byte for byte.
 */
#include "fuzz.h"
#include "guestproto.h"
#include "sentinel-poll/logtail.h"

#define T "logtail"

static char window[LOGTAIL_LINE_MAX + 1];
static char marker[GUEST_MARKER_MAX + 1];

/* The last kernel line (SPEC 6.2) of the log, for the reference. */
static const char *kern;
static size_t kern_len;

/* The reference: the last marker line of the log (and kern). */
static enum guest_marker
last_marker(const char *p, size_t len, const char **nvrm, size_t *nlen,
    size_t *whole)
{
	const char *s = p, *end = p + len, *nl, *t;
	enum guest_marker last = GUEST_MARKER_NONE, m;
	size_t tl;

	*whole = 0;
	kern = NULL;
	while (s < end && (nl = memchr(s, '\n', (size_t)(end - s))) != NULL) {
		if ((size_t)(nl - s) <= LOGTAIL_LINE_MAX &&
		    guestproto_kernel_line_match(s, (size_t)(nl - s), &t, &tl)) {
			kern = t;
			kern_len = tl;
		} else if ((size_t)(nl - s) <= LOGTAIL_LINE_MAX) {
			m = guestproto_marker_match(s, (size_t)(nl - s), &t, &tl);
			if (m != GUEST_MARKER_NONE) {
				last = m;
				*nvrm = t;
				*nlen = tl;
			}
		}
		s = nl + 1;
		*whole = (size_t)(s - p);
	}
	return last;
}

static void
run_tail(const char *p, size_t len, size_t chunk)
{
	struct logtail t;
	const char *nvrm = NULL;
	size_t nlen = 0, whole, avail = 0, n;
	enum guest_marker want;
	ssize_t r;

	want = last_marker(p, len, &nvrm, &nlen, &whole);
	logtail_init(&t);
	logtail_pass_begin(&t);
	for (;;) {
		avail = avail + chunk < len ? avail + chunk : len;
		n = avail - (size_t)t.offset;
		if (n > sizeof(window))
			n = sizeof(window);
		memcpy(window, p + t.offset, n);
		r = logtail_feed(&t, window, n);
		fuzz_require(r >= 0 && (size_t)r <= n, T, "feed failed");
		fuzz_require(r > 0 || n < sizeof(window), T,
		    "no progress with a full buffer");
		if (r == 0 && avail == len)
			break;
	}
	fuzz_require(t.offset == (len - whole > LOGTAIL_LINE_MAX ? len :
	    whole), T, "consumed the wrong number of bytes");
	fuzz_require(t.last == want, T, "last marker differs");
	fuzz_require((t.last == GUEST_MARKER_FAILED) == (t.nvrm != NULL), T,
	    "message kept without a FAILED marker");
	fuzz_require((t.kernel != NULL) == (kern != NULL) && (kern == NULL ||
	    (strlen(t.kernel) == kern_len &&
	    memcmp(t.kernel, kern, kern_len) == 0)), T,
	    "last kernel line differs");
	logtail_release(&t);
}

/* A formatted marker comes back with the message unescaped. */
static void
run_roundtrip(const char *msg)
{
	struct timespec now = { 1787238000, 123456789 };
	struct logtail t;
	int n;

	n = guestproto_marker_format(true, &now, msg, marker, sizeof(marker));
	if (n < 0 || guestproto_marker_match(marker, (size_t)n, NULL, NULL) !=
	    GUEST_MARKER_FAILED)
		return;
	logtail_init(&t);
	fuzz_require(logtail_feed(&t, marker, (size_t)n) == n, T,
	    "a marker line was not consumed");
	fuzz_require(t.last == GUEST_MARKER_FAILED && t.nvrm != NULL &&
	    strcmp(t.nvrm, msg) == 0, T, "message does not round-trip");
	logtail_release(&t);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *p, *msg;
	size_t len;

	if (size < 1)
		return 0;
	p = fuzz_expand(data + 1, size - 1, &len);
	run_tail(p, len, data[0] < 16 ? (size_t)data[0] + 1 :
	    (size_t)(data[0] - 15) * 1031);
	free(p);
	msg = fuzz_strndup(data + 1, size - 1);
	run_roundtrip(msg);
	free(msg);
	return 0;
}
