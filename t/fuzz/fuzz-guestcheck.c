/*
 * fuzz-guestcheck.c - the host's end of a guest check (guestcheck_*):
 * the hybrid-vsock handshake and the reply line, read from a peer that
 * may be a hostile guest or VMM. Real sockets: the target connects to a
 * Unix listener of its own; the peer's bytes are the input.
 *
 * Input: byte 0 bit 0 selects hvsock:PATH:PORT (the peer first answers
 * CONNECT) or unix:PATH; bit 1 closes the peer's side after its bytes
 * (else it stays silent, like a guest that never finishes). Properties,
 * against a plain reading of the bytes:
 * - the peer receives "CONNECT PORT\n" (hvsock) and then exactly the
 *   request, and the request only after a valid OK line;
 * - a reply is the first line after the OK line, without its newline, or
 *   at end of input the unterminated rest; a reply never holds '\n' and
 *   never exceeds GUESTCHECK_REPLY_MAX;
 * - a bad OK line, a silent end and an over-long reply fail, never reply.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fuzz.h"
#include "sentinel-poll/guestcheck.h"
#include "sentinel-poll/hvsock.h"

#define T "guestcheck"
#define REQUEST "{\"method\":\"GetGPUInitStatus\"}\n"
#define PORT 2222

static char path[108];
static int lfd = -1;

static void
cleanup(void)
{
	unlink(path);
	*strrchr(path, '/') = '\0';
	rmdir(path);
}

static void
listener(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/fuzz-gc.XXXXXX";

	if (lfd >= 0)
		return;
	if (mkdtemp(dir) == NULL)
		abort();
	snprintf(path, sizeof(path), "%s/s", dir);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(lfd, 8) < 0)
		abort();
	atexit(cleanup);
}

/* The outcome a plain reading of the peer's bytes gives; *unsure when it
 * depends on how the bytes are split (an OK line over HVSOCK_LINE_MAX). */
static enum guestcheck_status
expect(const char *d, size_t n, bool hv, bool closed, size_t *off,
    size_t *rlen, bool *unsure)
{
	unsigned long port;
	const char *nl;

	*off = 0;
	*unsure = false;
	if (hv) {
		if ((nl = memchr(d, '\n', n)) == NULL)
			return closed || n > HVSOCK_LINE_MAX ? GC_FAILED : GC_BUSY;
		*unsure = (size_t)(nl - d) > HVSOCK_LINE_MAX;
		if (hvsock_parse_ok(d, (size_t)(nl - d), &port) == -1)
			return GC_FAILED;
		*off = (size_t)(nl - d) + 1;
	}
	d += *off;
	n -= *off;
	if ((nl = memchr(d, '\n', n)) != NULL) {
		*rlen = (size_t)(nl - d);
		return *rlen <= GUESTCHECK_REPLY_MAX ? GC_REPLY : GC_FAILED;
	}
	if (n > GUESTCHECK_REPLY_MAX)
		return GC_FAILED;
	if (!closed)
		return GC_BUSY;
	*rlen = n;
	return n > 0 ? GC_REPLY : GC_FAILED;
}

/* Drives the check until it is over or nothing moves for 20 ms. */
static enum guestcheck_status
drive(struct guestcheck *c)
{
	enum guestcheck_status st = GC_BUSY;
	struct pollfd p;

	while (st == GC_BUSY) {
		p.fd = c->fd;
		p.events = guestcheck_poll_events(c);
		p.revents = 0;
		if (poll(&p, 1, 20) <= 0)
			break;
		st = guestcheck_advance(c);
	}
	return st;
}

/* What the check sent to the peer: CONNECT (hvsock), then the request
 * exactly when the OK line was good (or there was none to wait for). */
static void
check_sent(int sfd, bool hv, bool ok_line)
{
	char got[256], want[128];
	ssize_t n;

	n = recv(sfd, got, sizeof(got) - 1, MSG_DONTWAIT);
	got[n > 0 ? n : 0] = '\0';
	snprintf(want, sizeof(want), "%s%s", hv ? "CONNECT 2222\n" : "",
	    ok_line ? REQUEST : "");
	fuzz_require(strcmp(got, want) == 0, T,
	    "the peer received the wrong bytes");
}

static size_t
peer_write(int sfd, const char *d, size_t n, bool closed)
{
	ssize_t w;

	fcntl(sfd, F_SETFL, O_NONBLOCK);
	w = n > 0 ? send(sfd, d, n, MSG_NOSIGNAL) : 0;
	if (closed)
		shutdown(sfd, SHUT_WR);
	return w > 0 ? (size_t)w : 0;
}

static void
run_check(const char *d, size_t n, bool hv, bool closed)
{
	struct guestcheck c = { .fd = -1 };
	struct endpoint ep = { .kind = hv ? EP_HVSOCK : EP_UNIX, .port = PORT };
	enum guestcheck_status st, want;
	size_t off, rlen = 0;
	bool unsure;
	int sfd;

	memcpy(ep.path, path, strlen(path) + 1);
	fuzz_require(guestcheck_start(&c, &ep, REQUEST) == 0, T, "connect");
	if ((sfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0)
		abort();
	n = peer_write(sfd, d, n, closed);
	st = drive(&c);
	want = expect(d, n, hv, closed, &off, &rlen, &unsure);
	if (!unsure) {
		fuzz_require(st == want, T, "outcome differs from the bytes");
		if (st != GC_BUSY)
			check_sent(sfd, hv, !hv || off > 0);
	}
	if (st == GC_REPLY) {
		fuzz_require(c.reply_len <= GUESTCHECK_REPLY_MAX &&
		    memchr(c.buf, '\n', c.reply_len) == NULL, T,
		    "reply holds a newline or is too long");
		fuzz_require(unsure || (c.reply_len == rlen &&
		    memcmp(c.buf, d + off, rlen) == 0), T,
		    "reply is not the line after the OK line");
	}
	guestcheck_release(&c);
	close(sfd);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *d;
	size_t n;

	if (size < 1)
		return 0;
	listener();
	d = fuzz_expand(data + 1, size - 1, &n);
	run_check(d, n, data[0] & 1, data[0] & 2);
	free(d);
	return 0;
}
