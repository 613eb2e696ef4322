/*
 * fuzz-guest-reply.c - the reply parser of sentinel-poll
 * (guestproto_reply_parse): bytes from a guest, which may run a root workload
 * that replaced vsock-answer. Properties: the result is always a
 * NUL-terminated message inside the struct; a STATE reply formatted back
 * with guestproto_reply_format() parses to the same state and message; a
 * reply over GUEST_REPLY_MAX never parses; only FAILED carries a message.
 */
#include "fuzz.h"
#include "guestproto.h"

#define T "guest-reply"

static char line[GUEST_REPLY_MAX + 2];
static struct guest_reply r1, r2;

static void
check_roundtrip(const struct guest_reply *r)
{
	int n;

	n = guestproto_reply_format(r->state, r->message, line, sizeof(line));
	fuzz_require(n > 0 && line[n - 1] == '\n', T,
	    "cannot format a reply that parsed");
	fuzz_require(guestproto_reply_parse(line, (size_t)n, &r2) == 0 &&
	    r2.kind == GUEST_REPLY_STATE && r2.state == r->state &&
	    strcmp(r2.message, r->message) == 0, T,
	    "formatted reply parses differently");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t len = size;
	int rc;

	while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r'))
		len--;
	memset(&r1, 0x5a, sizeof(r1));
	rc = guestproto_reply_parse((const char *)data, size, &r1);
	fuzz_require(memchr(r1.message, '\0', sizeof(r1.message)) != NULL, T,
	    "message not terminated");
	fuzz_require((rc == 0) == (r1.kind != GUEST_REPLY_ERROR), T,
	    "return code and kind disagree");
	if (len > GUEST_REPLY_MAX)
		fuzz_require(rc == -1, T, "an over-long reply parsed");
	if (r1.kind != GUEST_REPLY_STATE)
		return 0;
	if (r1.state != GUEST_FAILED)
		fuzz_require(r1.message[0] == '\0', T,
		    "a message without FAILED");
	check_roundtrip(&r1);
	return 0;
}
