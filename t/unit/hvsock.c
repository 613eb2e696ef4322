/*
 * hvsock.c - unit tests (TAP) for the hybrid-vsock handshake lines.
 */
#include <string.h>

#include "sentinel-poll/hvsock.h"
#include "tap.h"

static int
parse(const char *s, unsigned long *port)
{
	return hvsock_parse_ok(s, strlen(s), port);
}

static void
test_ok_lines(void)
{
	unsigned long port = 0;

	ok(parse("OK 1073741824", &port) == 0 && port == 1073741824UL,
	    "OK with the host port parses");
	ok(parse("OK 1024\r", &port) == 0 && port == 1024,
	    "a trailing carriage return is allowed");
	ok(parse("OK 7 ", &port) == 0 && port == 7, "trailing blanks allowed");
	ok(parse("OK 4294967295", &port) == 0 && port == 4294967295UL,
	    "the largest 32-bit port parses");
}

static void
test_bad_lines(void)
{
	static const char *const bad[] = {
		"", "OK", "OK ", "OK x", "ok 1024", "OK  1024", "OK1024",
		"OK 4294967296", "OK 99999999999", "OK 12a", "NO 1024",
		"FAILURE", "OK -1", "OK +5", " OK 5", "OK 5 6"
	};
	unsigned long port = 99;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(parse(bad[i], &port) == -1 && port == 99,
		    "rejects \"%s\"", bad[i]);
	ok(hvsock_parse_ok("OK 5\n", 5, &port) == -1,
	    "an embedded newline is not a blank");
	ok(hvsock_parse_ok("OK 5\0" "0", 6, &port) == -1,
	    "an embedded NUL is rejected");
}

static void
test_format(void)
{
	char buf[32], tiny[8];

	ok(hvsock_format_connect(2222, buf, sizeof(buf)) == 13 &&
	    strcmp(buf, "CONNECT 2222\n") == 0, "formats CONNECT PORT");
	ok(hvsock_format_connect(2222, tiny, sizeof(tiny)) == -1,
	    "a small buffer is ENOSPC");
}

int
main(void)
{
	test_ok_lines();
	test_bad_lines();
	test_format();
	return done_testing();
}
