/*
 * vfaddr.c - unit tests (TAP) for command-line PCI addresses: the short
 * lspci form and upper-case hex become the canonical form; anything else
 * is refused, with an error that shows the expected form.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "vfaddr.h"

static const char *
canon(const char *arg)
{
	static char out[VF_ADDR_LEN + 1];

	return vfaddr_parse_arg(arg, out) == 0 ? out : NULL;
}

static void
test_accepted(void)
{
	is_str(canon("0000:e3:00.4"), "0000:e3:00.4", "the canonical form");
	is_str(canon("e3:00.4"), "0000:e3:00.4", "the short form (domain 0)");
	is_str(canon("0000:E3:00.4"), "0000:e3:00.4", "upper-case hex");
	is_str(canon("AB:CD.7"), "0000:ab:cd.7", "short and upper case");
	is_str(canon("Abcd:eF:0a.0"), "abcd:ef:0a.0", "mixed case, a domain");
}

static void
test_refused(void)
{
	static const char *const bad[] = {
		"", "xyz", "e3:00", "e3:00.8", "0000:e3:00.8", "0000:g3:00.4",
		"0000:e3:00.4 ", " e3:00.4", "0000:e3:00.4\n", "0000-e3:00.4",
		"000:e3:00.4", "00000:e3:00.4", "e3.00.4", "e3:00:4",
		"0000:e3:00.4x", "1:e3:00.4", "+e3:00.4", "e3:0.04",
	};
	char out[VF_ADDR_LEN + 1];
	size_t i;
	int rc;

	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		errno = 0;
		rc = vfaddr_parse_arg(bad[i], out);
		ok(rc == -1 && errno == EINVAL && out[0] == '\0',
		    "refused: \"%s\"", bad[i]);
	}
	ok(vfaddr_parse_arg(NULL, out) == -1, "refused: NULL");
}

static void
test_why(void)
{
	char why[512], big[200];

	vfaddr_why("VF", "xyz", why, sizeof(why));
	is_str(why, "invalid VF address \"xyz\" (expected DDDD:BB:DD.F or "
	    "BB:DD.F, hex)", "the error shows the expected form");
	vfaddr_why("card", "a\"\\\xff\n", why, sizeof(why));
	is_str(why, "invalid card address \"a\\x22\\x5c\\xff\\x0a\" (expected "
	    "DDDD:BB:DD.F or BB:DD.F, hex)",
	    "quotes, backslashes and bytes outside ASCII as \\xNN");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	vfaddr_why("VF", big, why, sizeof(why));
	ok(strlen(why) < 160 && strstr(why, "...\" (expected") == NULL &&
	    strstr(why, "\"... (expected") != NULL,
	    "a long argument is cut at 64 bytes");
	vfaddr_why("VF", "xyz", why, 10);
	is_str(why, "invalid V", "a short buffer is filled, terminated");
}

int
main(void)
{
	test_accepted();
	test_refused();
	test_why();
	return done_testing();
}
