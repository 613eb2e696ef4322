/*
 * checkpool.c - unit tests (TAP) for the guest checks in flight: start
 * failures, a reply judged into a verdict, a deadline, abandon.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sentinel-poll/checkpool.h"
#include "endpoint.h"
#include "io.h"
#include "tap.h"

#define REQ "{\"method\":\"GetGPUInitStatus\"}\n"

static int ndone;
static enum checkpool_verdict last_v;
static char last_detail[256];
static const void *last_tag;
static int last_err;

static void
done(void *arg, const void *tag, enum checkpool_verdict v,
    const char *detail, int err)
{
	(void)arg;
	ndone++;
	last_err = err;
	last_v = v;
	last_tag = tag;
	snprintf(last_detail, sizeof(last_detail), "%s",
	    detail ? detail : "(null)");
}

/* Rounds of prepare, poll(2), advance until a check ends (or 50). */
static void
run_rounds(struct checkpool *cp, int lfd, const char *reply)
{
	char buf[256];
	int i, c = -1;

	for (i = 0; i < 100 && ndone == 0; i++) {
		if (lfd != -1 && c == -1)
			c = accept(lfd, NULL, NULL);
		/* The guest answers once the request is in. */
		if (c != -1 && recv(c, buf, sizeof(buf), MSG_DONTWAIT) > 0) {
			if (write(c, reply, strlen(reply)) < 0)
				break;
			close(c);
			c = lfd = -1;
		}
		(void)poll(cp->pfds, cp->n, (int)checkpool_prepare(cp));
		checkpool_advance(cp, done, NULL);
		usleep(1000);
	}
	if (c != -1)
		close(c);
}

static void
test_start_failures(void)
{
	struct checkpool cp;
	int tag;

	ok(checkpool_init(&cp, 2, REQ) == 0 && cp.n == 2 && cp.busy == 0 &&
	    cp.slots[0].gc.fd == -1 && cp.slots[1].gc.fd == -1,
	    "checkpool_init: n free slots");
	ok(!checkpool_start(&cp, 0, "bogus:1", 2222, io_now_ms() + 1000,
	    &tag, done, NULL) && ndone == 1 && last_v == CP_RPC_ERROR &&
	    last_tag == &tag && cp.busy == 0, "a bad endpoint ends at once");
	is_str(last_detail, "invalid endpoint", "as an invalid endpoint");
	ok(last_err == 0, "an invalid endpoint has no errno");
	ndone = 0;
	ok(!checkpool_start(&cp, 0, "unix:/nonexistent/unit-checkpool",
	    2222, io_now_ms() + 1000, &tag, done, NULL) && ndone == 1 &&
	    last_v == CP_RPC_ERROR && strncmp(last_detail, "connect", 7) == 0,
	    "a refused connect ends at once with the error");
	ok(last_err == ENOENT, "and with its errno");
	is_str(checkpool_verdict_name(CP_UNSUPPORTED), "unsupported_agent",
	    "verdict names");
	checkpool_release(&cp);
	ok(cp.slots == NULL && cp.n == 0, "checkpool_release empties it");
}

static void
test_reply(const char *dir, const char *reply, enum checkpool_verdict want,
    const char *detail, const char *name)
{
	struct checkpool cp;
	struct endpoint ep;
	char spec[128];
	int lfd, tag;

	snprintf(spec, sizeof(spec), "unix:%s/s", dir);
	if (endpoint_parse(spec, &ep) == -1 || (lfd = endpoint_listen(&ep)) ==
	    -1 || checkpool_init(&cp, 1, REQ) == -1) {
		ok(0, "%s: set up", name);
		return;
	}
	ndone = 0;
	ok(checkpool_start(&cp, 0, spec, 2222, io_now_ms() + 5000, &tag,
	    done, NULL) && cp.busy == 1, "%s: in flight", name);
	run_rounds(&cp, lfd, reply);
	ok(ndone == 1 && last_v == want && last_tag == &tag && cp.busy == 0 &&
	    cp.slots[0].gc.fd == -1, "%s: the verdict", name);
	ok(strncmp(last_detail, detail, strlen(detail)) == 0,
	    "%s: detail \"%s\"", name, last_detail);
	checkpool_release(&cp);
	close(lfd);
}

static void
test_deadline_abandon(const char *dir)
{
	struct checkpool cp;
	struct endpoint ep;
	char spec[128];
	int lfd, tag;

	snprintf(spec, sizeof(spec), "unix:%s/s", dir);
	if (endpoint_parse(spec, &ep) == -1 || (lfd = endpoint_listen(&ep)) ==
	    -1 || checkpool_init(&cp, 2, REQ) == -1) {
		ok(0, "deadline: set up");
		return;
	}
	ndone = 0;
	ok(checkpool_start(&cp, 1, spec, 2222, io_now_ms() + 30, &tag, done,
	    NULL) && checkpool_prepare(&cp) <= 30, "prepare waits until the "
	    "nearest deadline");
	run_rounds(&cp, -1, NULL);
	ok(ndone == 1 && last_v == CP_RPC_ERROR && cp.busy == 0,
	    "a silent guest ends at its deadline as rpc_error (%s)",
	    last_detail);
	ok(checkpool_start(&cp, 0, spec, 2222, io_now_ms() + 5000, &tag,
	    done, NULL) && cp.busy == 1, "another check");
	ndone = 0;
	checkpool_abandon(&cp);
	ok(cp.busy == 0 && cp.slots[0].gc.fd == -1 && ndone == 0,
	    "abandon closes it without a verdict");
	checkpool_release(&cp);
	close(lfd);
}

int
main(void)
{
	/* /tmp, not TMPDIR: sun_path is 108 bytes, a long TMPDIR won't fit. */
	char dir[] = "/tmp/unit-checkpool-XXXXXX", path[64];

	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(path, sizeof(path), "%s/s", dir);
	test_start_failures();
	test_reply(dir, "{\"state\":\"FAILED\",\"failure_message\":"
	    "\"NVRM: x\"}\n", CP_FAILED, "NVRM: x", "a FAILED reply");
	test_reply(dir, "{\"state\":\"OK\"}\n", CP_OK, "(null)", "an OK reply");
	test_reply(dir, "{\"error\":\"unsupported method\"}\n", CP_UNSUPPORTED,
	    "(null)", "an old agent");
	test_reply(dir, "garbage\n", CP_RPC_ERROR, "bad reply",
	    "a bad reply");
	test_deadline_abandon(dir);
	unlink(path);
	rmdir(dir);
	return done_testing();
}
