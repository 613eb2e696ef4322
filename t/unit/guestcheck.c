/*
 * guestcheck.c - unit tests (TAP) for the connection of one guest check
 * against a Unix socket peer in this process: a plain request and reply,
 * the hybrid vsock handshake, a peer that closes early, a bad handshake
 * answer, a refused connection and the timeout texts.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "endpoint.h"
#include "sentinel-poll/guestcheck.h"
#include "tap.h"

#define REQ "{\"method\":\"GetGPUInitStatus\"}\n"

static char sock_path[108];

/* Advances c until it is over or 50 rounds pass; the final status. */
static enum guestcheck_status
run(struct guestcheck *c)
{
	struct pollfd p;
	enum guestcheck_status st = GC_BUSY;
	int i;

	for (i = 0; i < 50 && st == GC_BUSY; i++) {
		p.fd = c->fd;
		p.events = guestcheck_poll_events(c);
		if (poll(&p, 1, 100) > 0)
			st = guestcheck_advance(c);
	}
	return st;
}

/* Advances c until it waits for the reply, or is over. */
static enum guestcheck_status
run_until_read(struct guestcheck *c)
{
	struct pollfd p;
	enum guestcheck_status st = GC_BUSY;
	int i;

	for (i = 0; i < 50 && st == GC_BUSY && c->phase != GC_READ; i++) {
		p.fd = c->fd;
		p.events = guestcheck_poll_events(c);
		if (poll(&p, 1, 100) > 0)
			st = guestcheck_advance(c);
	}
	return st;
}

/* Starts a check of ep against listener lfd; the accepted peer. */
static int
start(struct guestcheck *c, const char *ep_text, int lfd)
{
	struct endpoint ep;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	if (endpoint_parse(ep_text, &ep) != 0 ||
	    guestcheck_start(c, &ep, REQ) != 0)
		return -1;
	return accept(lfd, NULL, NULL);
}

/* Reads what the check sent up to a newline into buf. */
static void
peer_read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len && read(fd, buf + n, 1) == 1 && buf[n++] != '\n')
		;
	buf[n] = '\0';
}

static void
test_plain(int lfd, const char *ep)
{
	struct guestcheck c;
	char line[128];
	int peer = start(&c, ep, lfd);

	ok(peer >= 0, "a unix: check connects");
	if (write(peer, "{\"state\":\"ok\"}\n", 15) != 15)
		abort();
	ok(run(&c) == GC_REPLY && c.reply_len == 14 &&
	    memcmp(c.buf, "{\"state\":\"ok\"}", 14) == 0,
	    "the reply line comes back without its newline");
	peer_read_line(peer, line, sizeof(line));
	is_str(line, REQ, "the request was sent");
	guestcheck_end(&c);
	ok(c.fd == -1, "guestcheck_end closes the connection");
	guestcheck_release(&c);
	close(peer);
	peer = start(&c, ep, lfd);
	ok(run_until_read(&c) == GC_BUSY, "the request is sent");
	peer_read_line(peer, line, sizeof(line));
	close(peer);
	ok(run(&c) == GC_FAILED, "a peer that closes unanswered fails");
	is_str(c.why, "connection closed without a reply", "with the reason");
	guestcheck_release(&c);
}

static void
test_hybrid(int lfd, const char *ep)
{
	struct guestcheck c;
	char line[128];
	int peer = start(&c, ep, lfd);

	ok(peer >= 0 && run(&c) == GC_BUSY && c.phase == GC_HV_READ,
	    "hvsock: the check waits for the OK after CONNECT");
	peer_read_line(peer, line, sizeof(line));
	is_str(line, "CONNECT 9999\n", "CONNECT names the guest port");
	is_str(guestcheck_timeout_why(&c),
	    "timed out waiting for the hybrid vsock OK", "its timeout text");
	if (write(peer, "OK 1073741824\n", 14) != 14)
		abort();
	ok(run_until_read(&c) == GC_BUSY, "after OK the request is sent");
	peer_read_line(peer, line, sizeof(line));
	is_str(line, REQ, "the request follows the handshake");
	if (write(peer, "{\"state\":\"unknown\"}\n", 20) != 20)
		abort();
	ok(run(&c) == GC_REPLY && c.reply_len == 19,
	    "and the guest's reply comes back");
	guestcheck_release(&c);
	close(peer);
	peer = start(&c, ep, lfd);
	if (write(peer, "NO\n", 3) != 3)
		abort();
	ok(run(&c) == GC_FAILED, "a bad CONNECT answer fails the check");
	is_str(c.why, "hybrid vsock: unexpected answer to CONNECT",
	    "with the reason");
	guestcheck_release(&c);
	close(peer);
}

static void
test_refused(void)
{
	struct guestcheck c;
	struct endpoint ep;

	memset(&c, 0, sizeof(c));
	c.fd = -1;
	ok(endpoint_parse("unix:/nonexistent/guest.sock", &ep) == 0 &&
	    guestcheck_start(&c, &ep, REQ) == -1 && c.fd == -1 &&
	    strncmp(c.why, "connect: ", 9) == 0,
	    "a refused connect fails at the start with the reason");
	is_str(guestcheck_timeout_why(&c), "timed out connecting",
	    "the timeout text of a connect");
}

int
main(void)
{
	struct endpoint ep;
	char text[160];
	int lfd;

	/* /tmp, not TMPDIR: sun_path is 108 bytes, a long TMPDIR won't fit. */
	snprintf(sock_path, sizeof(sock_path), "/tmp/vfs-gc-%ld.sock",
	    (long)getpid());
	snprintf(text, sizeof(text), "unix:%s", sock_path);
	if (endpoint_parse_listen(text, &ep) != 0 ||
	    (lfd = endpoint_listen(&ep)) < 0)
		abort();
	test_plain(lfd, text);
	/* virtio-serial: dials the VMM's chardev socket as unix: does. */
	snprintf(text, sizeof(text), "virtio-serial:%s", sock_path);
	test_plain(lfd, text);
	ok(endpoint_parse_listen("virtio-serial:org.vfsentinel.0", &ep) == 0 &&
	    ep.kind == EP_VSERIAL && strcmp(ep.path, "org.vfsentinel.0") == 0,
	    "virtio-serial:NAME listens on a port by name");
	ok(endpoint_listen(&ep) == -1 && errno == EINVAL,
	    "a port is not a socket to listen on");
	ok(endpoint_parse("virtio-serial:", &ep) == -1 && errno == EINVAL,
	    "virtio-serial: needs a path");
	snprintf(text, sizeof(text), "hvsock:%s:9999", sock_path);
	test_hybrid(lfd, text);
	test_refused();
	close(lfd);
	unlink(sock_path);
	return done_testing();
}
