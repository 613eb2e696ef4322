/*
 * fuzz-marker.c - the console-marker matcher guestproto_marker_match() and
 * the marker writer guestproto_marker_format(). A console log is written by
 * the whole guest, so any process in it can print lines that look like
 * markers; only the exact shapes of SPEC.md 3.3 may count.
 *
 * Input: one console line, and the same bytes used as a failure message
 * for guestproto_marker_format(). Properties:
 * - the verdict and the nvrm text equal those of an independent
 *   reference: the upstream regular expression run by glibc regexec()
 *   (REG_STARTEND, so NUL bytes in the line are seen too);
 * - a formatted OK marker always matches; a formatted FAILED marker
 *   matches exactly when the escaped message starts "NVRM: ", holds the
 *   needle and no quote, and then nvrm is the escaped message.
 */
#include <regex.h>

#include "fuzz.h"
#include "guestproto.h"

#define T "marker"
#define NEEDLE "RmInitAdapter failed!"
#define PREFIX "^[0-9]{4}/[0-9]{2}/[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} " \
	"\\[guest-agent\\] HYPEMAN-GPU-INIT-"
#define NONSPACE "[^ \t\n\f\r]+"
#define TAIL "\r?\n?$"

static char out[GUEST_MARKER_MAX + 1];
static regex_t re_failed, re_ok;
static bool compiled;

static void
compile(void)
{
	if (compiled)
		return;
	if (regcomp(&re_failed, PREFIX "FAILED ts=" NONSPACE
	    " nvrm=\"(NVRM: [^\"\r\n]*RmInitAdapter failed![^\"\r\n]*)\""
	    TAIL, REG_EXTENDED) != 0 ||
	    regcomp(&re_ok, PREFIX "OK ts=" NONSPACE TAIL, REG_EXTENDED) != 0)
		abort();
	compiled = true;
}

/* On a NUL-terminated copy: the sanitizers' regexec() wrapper reads
 * the subject up to a NUL whatever REG_STARTEND says. */
static bool
reference(const regex_t *re, const char *line, size_t len, regmatch_t *m)
{
	char *copy = fuzz_strndup((const uint8_t *)line, len);
	bool hit;

	m[0].rm_so = 0;
	m[0].rm_eo = (regoff_t)len;
	hit = regexec(re, copy, 2, m, REG_STARTEND) == 0;
	free(copy);
	return hit;
}

static void
check_match(const char *line, size_t len)
{
	const char *a = NULL;
	size_t alen = 0;
	enum guest_marker g;
	regmatch_t m[2];
	bool failed, ok;

	compile();
	g = guestproto_marker_match(line, len, &a, &alen);
	ok = reference(&re_ok, line, len, m);
	failed = reference(&re_failed, line, len, m);
	fuzz_require((g == GUEST_MARKER_FAILED) == failed &&
	    (g == GUEST_MARKER_OK) == ok, T,
	    "verdict differs from the reference expression");
	if (!failed)
		return;
	fuzz_require(a == line + m[1].rm_so &&
	    alen == (size_t)(m[1].rm_eo - m[1].rm_so), T,
	    "nvrm text differs from the reference expression");
}

/* The escaped message, as guestproto_marker_format writes it. */
static bool
should_match(const char *msg, const char *line, int n, const char **esc,
    size_t *esclen)
{
	const char *open = strstr(line, " nvrm=\"");

	if (open == NULL)
		return false;
	*esc = open + 7;
	*esclen = (size_t)(line + n - 2 - *esc);	/* before "\"\n" */
	return strncmp(*esc, "NVRM: ", 6) == 0 && strchr(msg, '"') == NULL &&
	    memmem(*esc, *esclen, NEEDLE, strlen(NEEDLE)) != NULL;
}

static void
check_format(const char *msg, const struct timespec *now)
{
	const char *nvrm = NULL, *esc = NULL;
	size_t nlen = 0, esclen = 0;
	enum guest_marker m;
	int n;

	n = guestproto_marker_format(false, now, NULL, out, sizeof(out));
	fuzz_require(n > 0 && guestproto_marker_match(out, (size_t)n, NULL,
	    NULL) == GUEST_MARKER_OK, T, "OK marker does not match");
	n = guestproto_marker_format(true, now, msg, out, sizeof(out));
	if (n < 0)
		return;		/* longer than a marker may be */
	fuzz_require(memchr(out, '\n', (size_t)n - 1) == NULL, T,
	    "a marker spans lines");
	m = guestproto_marker_match(out, (size_t)n, &nvrm, &nlen);
	if (should_match(msg, out, n, &esc, &esclen)) {
		fuzz_require(m == GUEST_MARKER_FAILED && nvrm == esc &&
		    nlen == esclen, T, "FAILED marker does not match");
	} else {
		fuzz_require(m == GUEST_MARKER_NONE, T,
		    "a marker matched that should not");
	}
	check_match(out, (size_t)n);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct timespec now = { 1787238000 + (time_t)(size * 7919), 500 };
	char *msg;

	check_match((const char *)data, size);
	msg = fuzz_strndup(data, size);
	check_format(msg, &now);
	free(msg);
	return 0;
}
