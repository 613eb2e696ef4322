/*
 * guestproto.c - unit tests (TAP) for the guest status protocol and the
 * console marker formatter/matcher.
 */
#include <stdio.h>
#include <string.h>

#include "guestproto.h"
#include "tap.h"

static int
request(const char *line, enum guest_method *m)
{
	return guestproto_request_parse(line, strlen(line), m);
}

static void
test_requests(void)
{
	enum guest_method m = GUEST_METHOD_UNSUPPORTED;
	char big[GUEST_REQUEST_MAX + 64];

	ok(request("{\"method\":\"GetGPUInitStatus\"}", &m) == 0 &&
	    m == GUEST_METHOD_STATUS, "status request parses");
	ok(request(" { \"method\" : \"Other\" } ", &m) == 0 &&
	    m == GUEST_METHOD_UNSUPPORTED, "other method is unsupported");
	ok(request("[1]", &m) == -1, "array is a bad request");
	ok(request("garbage", &m) == -1, "garbage is a bad request");
	ok(request("", &m) == -1, "empty line is a bad request");
	ok(request("{}", &m) == -1, "object without method is bad");
	ok(request("{\"method\":7}", &m) == -1, "non-string method is bad");
	ok(request("{\"method\":\"a\",\"method\":\"b\"}", &m) == -1,
	    "duplicate keys are bad");
	memset(big, ' ', sizeof(big));
	memcpy(big, "{\"method\":\"GetGPUInitStatus\"}", 29);
	ok(guestproto_request_parse(big, GUEST_REQUEST_MAX, &m) == 0,
	    "request of exactly 4 KiB parses");
	ok(guestproto_request_parse(big, GUEST_REQUEST_MAX + 1, &m) == -1,
	    "request over 4 KiB is bad");
}

static void
test_reply_format(void)
{
	char buf[GUEST_REPLY_MAX];
	int n;

	n = guestproto_reply_format(GUEST_UNKNOWN, NULL, buf, sizeof(buf));
	ok(n > 0 && strcmp(buf, "{\"state\":\"UNKNOWN\"}\n") == 0,
	    "UNKNOWN reply");
	guestproto_reply_format(GUEST_OK, "ignored", buf, sizeof(buf));
	ok(strcmp(buf, "{\"state\":\"OK\"}\n") == 0, "OK reply has no message");
	n = guestproto_reply_format(GUEST_FAILED, "NVRM: a \"q\"", buf, sizeof(buf));
	ok(strcmp(buf, "{\"state\":\"FAILED\",\"failure_message\":"
	    "\"NVRM: a \\\"q\\\"\"}\n") == 0 && n == (int)strlen(buf),
	    "FAILED reply escapes the message");
	ok(guestproto_reply_format(GUEST_FAILED, "x", buf, 10) == -1,
	    "small buffer is ENOSPC");
	ok(guestproto_reply_format(GUEST_FAILED, "\xff", buf, sizeof(buf)) == -1,
	    "invalid UTF-8 message is refused");
	guestproto_error_format(GUEST_ERR_BAD_REQUEST, buf, sizeof(buf));
	ok(strcmp(buf, "{\"error\":\"bad request\"}\n") == 0, "error reply");
}

static int
reply(const char *line, struct guest_reply *r)
{
	return guestproto_reply_parse(line, strlen(line), r);
}

static void
test_reply_parse(void)
{
	static struct guest_reply r;
	char buf[GUEST_REPLY_MAX];

	ok(reply("{\"state\":\"UNKNOWN\"}\r\n", &r) == 0 &&
	    r.kind == GUEST_REPLY_STATE && r.state == GUEST_UNKNOWN,
	    "UNKNOWN parses");
	ok(reply("{\"state\":\"FAILED\",\"failure_message\":\"NVRM: x\"}", &r)
	    == 0 && r.state == GUEST_FAILED &&
	    strcmp(r.message, "NVRM: x") == 0,
	    "FAILED parses with message");
	ok(reply("{\"state\":\"FAILED\"}", &r) == 0 && r.message[0] == '\0',
	    "FAILED without message has empty message");
	ok(reply("{\"state\":\"OK\",\"failure_message\":\"old\"}", &r) == 0 &&
	    r.state == GUEST_OK && r.message[0] == '\0',
	    "OK ignores a message");
	ok(reply("{\"error\":\"unsupported method\"}", &r) == 0 &&
	    r.kind == GUEST_REPLY_UNSUPPORTED, "unsupported method");
	ok(reply("{\"error\":\"bad request\"}", &r) == -1 &&
	    strcmp(r.message, "guest error: bad request") == 0,
	    "other guest error");
	ok(reply("{\"state\":\"MAYBE\"}", &r) == -1 &&
	    r.kind == GUEST_REPLY_ERROR && strstr(r.message, "MAYBE") != NULL,
	    "unknown state is an error");
	ok(reply("{\"state\":\"FAILED\",\"failure_message\":3}", &r) == -1,
	    "non-string message is an error");
	ok(reply("{\"x\":1}", &r) == -1, "no state is an error");
	ok(reply("nope", &r) == -1 && strncmp(r.message, "bad reply: ", 11)
	    == 0, "garbage is an error");
	ok(reply("", &r) == -1, "empty reply is an error");
	memset(buf, 'a', sizeof(buf));
	memcpy(buf, "NVRM: ", 6);
	buf[GUEST_MESSAGE_MAX + 1] = '\0';
	{
		static char line[GUEST_REPLY_MAX + 64];

		guestproto_reply_format(GUEST_FAILED, buf, line, sizeof(line));
		ok(reply(line, &r) == -1, "message over the limit is an error");
		buf[GUEST_MESSAGE_MAX] = '\0';
		guestproto_reply_format(GUEST_FAILED, buf, line, sizeof(line));
		ok(reply(line, &r) == 0 && strlen(r.message) ==
		    GUEST_MESSAGE_MAX, "message at the limit round-trips");
	}
}

static enum guest_marker
match(const char *line, const char **t, size_t *n)
{
	return guestproto_marker_match(line, strlen(line), t, n);
}

#define PFX "2026/08/20 15:00:00 [guest-agent] HYPEMAN-GPU-INIT-"
#define MSG "NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)"

static void
test_marker_match(void)
{
	const char *t;
	size_t n;

	ok(match(PFX "FAILED ts=2026-08-20T15:00:00.5Z nvrm=\"" MSG "\"\n",
	    &t, &n) == GUEST_MARKER_FAILED && n == strlen(MSG) &&
	    memcmp(t, MSG, n) == 0, "FAILED marker matches with its message");
	ok(match(PFX "FAILED ts=x nvrm=\"" MSG "\"\r\n", &t, &n) ==
	    GUEST_MARKER_FAILED, "CRLF line matches");
	ok(match(PFX "FAILED ts=x nvrm=\"" MSG "\"", &t, &n) ==
	    GUEST_MARKER_FAILED, "line without newline matches");
	ok(match(PFX "OK ts=2026-08-20T15:00:00Z\n", &t, &n) == GUEST_MARKER_OK
	    && t == NULL && n == 0, "OK marker matches");
	ok(match("$ echo " PFX "OK ts=x\n", &t, &n) == GUEST_MARKER_NONE,
	    "echoed command line does not match");
	ok(match(PFX "FAILED ts=x nvrm=\"" MSG "\"junk\n", &t, &n) ==
	    GUEST_MARKER_NONE, "trailing text does not match");
	ok(match(PFX "FAILED ts=x nvrm=\"" MSG "\"\n\n", &t, &n) ==
	    GUEST_MARKER_NONE, "two newlines do not match");
	ok(match(PFX "FAILED ts=x nvrm=\"NVRM: GPU 0: loading\"\n", &t, &n) ==
	    GUEST_MARKER_NONE, "message without RmInitAdapter does not match");
	ok(match(PFX "FAILED ts=x nvrm=\"GPU RmInitAdapter failed!\"\n",
	    &t, &n) == GUEST_MARKER_NONE, "message without NVRM: prefix");
	ok(match(PFX "FAILED ts=x nvrm=\"NVRM: RmInitAdapter failed! \\\" \"\n",
	    &t, &n) == GUEST_MARKER_NONE,
	    "quote inside message does not match");
	ok(match(PFX "FAILED ts= nvrm=\"" MSG "\"\n", &t, &n) ==
	    GUEST_MARKER_NONE, "empty ts does not match");
	ok(match(PFX "FAILED ts=a\tb nvrm=\"" MSG "\"\n", &t, &n) ==
	    GUEST_MARKER_NONE, "ts with a tab does not match");
	ok(match("2026/8/20 15:00:00 [guest-agent] HYPEMAN-GPU-INIT-OK ts=x",
	    &t, &n) == GUEST_MARKER_NONE, "one-digit month does not match");
	ok(match(PFX "OK ts=x \n", &t, &n) == GUEST_MARKER_NONE,
	    "OK with trailing space does not match");
	ok(match(PFX "OK ts=x\r\r\n", &t, &n) == GUEST_MARKER_NONE,
	    "two CRs do not match");
	ok(guestproto_marker_match(PFX "OK ts=x", 10, &t, &n) == GUEST_MARKER_NONE,
	    "truncated line does not match");
}

/* The guest kernel's own console line (SPEC 6.2). */
static bool
kline(const char *line, const char **t, size_t *n)
{
	return guestproto_kernel_line_match(line, strlen(line), t, n);
}

static void
test_kernel_line(void)
{
	const char *t;
	size_t n;

	ok(kline("[    8.462102] " MSG "\r\n", &t, &n) && n == strlen(MSG) &&
	    memcmp(t, MSG, n) == 0, "kernel line: the text after the prefix");
	ok(kline(MSG, &t, &n) && t != NULL, "kernel line: without a prefix");
	ok(kline("[12345.678901] " MSG "\n", &t, &n), "kernel line: no spaces");
	ok(!kline("+ echo '" MSG "'", &t, &n), "kernel line: echoed command");
	ok(!kline(" " MSG, &t, &n), "kernel line: a leading space");
	ok(!kline("[    8.462102]" MSG, &t, &n), "kernel line: no space after ]");
	ok(!kline("[    8.462102] " MSG " x", &t, &n),
	    "kernel line: trailing text");
	ok(!kline("NVRM: RmInitAdapter failed!", &t, &n),
	    "kernel line: short form without a code");
	ok(!kline("NVRM:  RmInitAdapter failed! (0x25:0x65:1234)", &t, &n),
	    "kernel line: short form with two spaces");
	ok(!kline("NVRM: GPU RmInitAdapter failed! (0x25:0x65:1234)", &t, &n),
	    "kernel line: GPU without an address");
	ok(!kline("NVRM: GPU 0000:00:03.0: RmInitAdapter failed!", &t, &n),
	    "kernel line: no code");
	ok(!kline("NVRM: GPU 0000:00:03.8: RmInitAdapter failed! (1)", &t, &n),
	    "kernel line: function 8");
	ok(!kline("NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (1)\n\n",
	    &t, &n), "kernel line: two newlines");
	ok(!guestproto_kernel_line_match(MSG, 20, &t, &n),
	    "kernel line: truncated");
}

#define SHORT "NVRM: RmInitAdapter failed! (0x25:0x65:1234)"

/* kline() that also wants text to be exactly want. */
static bool
kline_is(const char *line, const char *want)
{
	const char *t;
	size_t n;

	return kline(line, &t, &n) && n == strlen(want) &&
	    memcmp(t, want, n) == 0;
}

/* SPEC 7.2: the short form, and the caller id of CONFIG_PRINTK_CALLER. */
static void
test_kernel_line_forms(void)
{
	const char *t;
	size_t n;

	ok(kline_is(SHORT, SHORT), "kernel line: short form");
	ok(kline_is("[   12.345678] " SHORT "\r\n", SHORT),
	    "kernel line: short form after a time prefix");
	ok(kline_is("[   12.345678][  T123] " MSG "\n", MSG),
	    "kernel line: caller id T after the time prefix");
	ok(kline_is("[   12.345678][  T123] " SHORT, SHORT),
	    "kernel line: caller id, short form");
	ok(kline_is("[    0.000000][    C1] " MSG, MSG),
	    "kernel line: caller id C");
	ok(kline_is("[12.3][T1] " SHORT, SHORT),
	    "kernel line: caller id without spaces");
	ok(!kline("[   12.345678] [  T123] " MSG, &t, &n),
	    "kernel line: a space before the caller id");
	ok(!kline("[   12.345678][  T123]" MSG, &t, &n),
	    "kernel line: no space after the caller id");
	ok(!kline("[   12.345678][  T123]  " MSG, &t, &n),
	    "kernel line: two spaces after the caller id");
	ok(!kline("[   12.345678][  P123] " MSG, &t, &n),
	    "kernel line: caller id of another letter");
	ok(!kline("[   12.345678][  t123] " MSG, &t, &n),
	    "kernel line: caller id in lower case");
	ok(!kline("[   12.345678][  T] " MSG, &t, &n),
	    "kernel line: caller id without digits");
	ok(!kline("[   12.345678][  T12a] " MSG, &t, &n),
	    "kernel line: caller id with a letter in its digits");
	ok(!kline("[   12.345678][  T123][  T123] " MSG, &t, &n),
	    "kernel line: two caller ids");
	ok(kline_is("[  T123] " MSG, MSG),
	    "kernel line: a caller id without a time prefix (printk.time=0)");
	ok(!kline("[  T123][   12.345678] " MSG, &t, &n),
	    "kernel line: the caller id before the time prefix");
	ok(!kline("[   12.345678][  T123 " MSG, &t, &n),
	    "kernel line: an unclosed caller id");
	ok(!kline("[   12.345678] " SHORT " x", &t, &n),
	    "kernel line: short form with trailing text");
	ok(!kline("myapp: " SHORT, &t, &n),
	    "kernel line: short form after other text");
}

static void
test_marker_format(void)
{
	struct timespec ts = { 1787238000, 500000000 };	/* 2026-08-20 */
	char buf[GUEST_MARKER_MAX];
	const char *t;
	size_t n;
	int len;

	len = guestproto_marker_format(true, &ts, MSG, buf, sizeof(buf));
	ok(len > 0 && strcmp(buf, "2026/08/20 15:00:00 [guest-agent] "
	    "HYPEMAN-GPU-INIT-FAILED ts=2026-08-20T15:00:00.5Z nvrm=\""
	    MSG "\"\n") == 0, "FAILED marker format");
	ok(guestproto_marker_match(buf, (size_t)len, &t, &n) == GUEST_MARKER_FAILED,
	    "formatted FAILED marker matches");
	len = guestproto_marker_format(false, &ts, NULL, buf, sizeof(buf));
	ok(strcmp(buf, "2026/08/20 15:00:00 [guest-agent] HYPEMAN-GPU-INIT-OK "
	    "ts=2026-08-20T15:00:00.5Z\n") == 0, "OK marker format");
	ok(guestproto_marker_match(buf, (size_t)len, &t, &n) == GUEST_MARKER_OK,
	    "formatted OK marker matches");
	guestproto_marker_format(true, &ts, "NVRM: a\"b\\c\rd\ne", buf, sizeof(buf));
	ok(strstr(buf, "nvrm=\"NVRM: a\\\"b\\\\c\\x0dd\\x0ae\"\n") != NULL &&
	    strchr(buf, '\n') == buf + strlen(buf) - 1,
	    "quotes, backslashes and control bytes are escaped");
	ok(guestproto_marker_format(true, &ts, MSG, buf, 60) == -1,
	    "small buffer is ENOSPC");
}

int
main(void)
{
	test_requests();
	test_reply_format();
	test_reply_parse();
	test_marker_match();
	test_kernel_line();
	test_kernel_line_forms();
	test_marker_format();
	return done_testing();
}
