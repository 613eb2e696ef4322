/*
 * guestcheck.c - the connection of one guest check: connect, the hybrid
 * vsock handshake, the request, one reply line.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "guestcheck.h"
#include "hvsock.h"

/* Records what failed; GC_FAILED. */
static enum guestcheck_status
fail(struct guestcheck *c, const char *why)
{
	(void)snprintf(c->why, sizeof(c->why), "%s", why);
	c->err = 0;
	return GC_FAILED;
}

static enum guestcheck_status
fail_errno(struct guestcheck *c, const char *what, int err)
{
	(void)snprintf(c->why, sizeof(c->why), "%s: %s", what, strerror(err));
	c->err = err;
	return GC_FAILED;
}

int
guestcheck_start(struct guestcheck *c, const struct endpoint *ep,
    const char *request)
{
	c->len = 0;
	c->sent = 0;
	c->why[0] = '\0';
	c->err = 0;
	c->ep = *ep;
	c->request = request;
	c->fd = c->dial != NULL ? c->dial(c->dial_arg, &c->ep) :
	    endpoint_connect(&c->ep);
	if (c->fd == -1) {
		fail_errno(c, "connect", errno);
		return -1;
	}
	c->phase = GC_CONNECT;
	return 0;
}

short
guestcheck_poll_events(const struct guestcheck *c)
{
	return c->phase == GC_HV_READ || c->phase == GC_READ ? POLLIN :
	    POLLOUT;
}

static void
set_out(struct guestcheck *c, enum guestcheck_phase ph)
{
	int n;

	c->phase = ph;
	c->sent = 0;
	if (ph == GC_HV_SEND)
		n = hvsock_format_connect(c->ep.port, c->out, sizeof(c->out));
	else
		n = snprintf(c->out, sizeof(c->out), "%s", c->request);
	c->outlen = n > 0 ? (size_t)n : 0;
}

/*
 * A peer may send its reply line in the same segment as the VMM's OK line
 * (a guest that speaks first): once the request is out, a line already
 * buffered is the reply. poll(2) would not report it, and waiting for
 * more bytes or the end of the stream would only time out.
 */
static enum guestcheck_status
buffered_reply(struct guestcheck *c)
{
	const char *nl;

	if (c->len == 0 || (nl = memchr(c->buf, '\n', c->len)) == NULL)
		return GC_BUSY;
	c->reply_len = (size_t)(nl - c->buf);
	return GC_REPLY;
}

static enum guestcheck_status
do_send(struct guestcheck *c)
{
	ssize_t n;

	n = send(c->fd, c->out + c->sent, c->outlen - c->sent,
	    MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n == -1) {
		if (errno != EAGAIN && errno != EINTR)
			return fail_errno(c, "send", errno);
		return GC_BUSY;
	}
	c->sent += (size_t)n;
	if (c->sent < c->outlen)
		return GC_BUSY;
	c->phase = c->phase == GC_HV_SEND ? GC_HV_READ : GC_READ;
	return c->phase == GC_READ ? buffered_reply(c) : GC_BUSY;
}

static enum guestcheck_status
connected(struct guestcheck *c)
{
	socklen_t sl = sizeof(int);
	int err = 0;

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &sl) == -1)
		err = errno;
	if (err != 0)
		return fail_errno(c, "connect", err);
	set_out(c, c->ep.kind == EP_HVSOCK ? GC_HV_SEND : GC_SEND);
	return do_send(c);
}

/* The VMM's answer to CONNECT: "OK HOSTPORT", then the guest stream. */
static enum guestcheck_status
handshake(struct guestcheck *c, const char *nl)
{
	unsigned long host_port;
	size_t n = (size_t)(nl - c->buf);

	if (hvsock_parse_ok(c->buf, n, &host_port) == -1)
		return fail(c, "hybrid vsock: unexpected answer to CONNECT");
	memmove(c->buf, nl + 1, c->len - n - 1);
	c->len -= n + 1;
	set_out(c, GC_SEND);
	return do_send(c);
}

/* Grows the reply buffer up to GUESTCHECK_REPLY_MAX + 1 bytes. 0 or -1. */
static int
grow(struct guestcheck *c)
{
	size_t cap = c->cap ? c->cap * 2 : 512;
	char *b;

	if (cap > GUESTCHECK_REPLY_MAX + 1)
		cap = GUESTCHECK_REPLY_MAX + 1;
	if ((b = realloc(c->buf, cap)) == NULL)
		return -1;
	c->buf = b;
	c->cap = cap;
	return 0;
}

static enum guestcheck_status
reply(struct guestcheck *c, size_t len)
{
	c->reply_len = len;
	return GC_REPLY;
}

static enum guestcheck_status
at_eof(struct guestcheck *c)
{
	if (c->phase == GC_HV_READ)
		return fail(c, "hybrid vsock: connection closed before OK");
	if (c->len == 0)
		return fail(c, "connection closed without a reply");
	return reply(c, c->len);
}

static enum guestcheck_status
do_read(struct guestcheck *c)
{
	const char *nl;
	ssize_t n;

	if (c->len == c->cap && grow(c) == -1)
		return fail_errno(c, "read", ENOMEM);
	n = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
	if (n == -1)
		return errno != EAGAIN && errno != EINTR ?
		    fail_errno(c, "read", errno) : GC_BUSY;
	if (n == 0)
		return at_eof(c);
	c->len += (size_t)n;
	nl = memchr(c->buf, '\n', c->len);
	if (nl != NULL && c->phase == GC_HV_READ)
		return handshake(c, nl);
	if (nl != NULL)
		return reply(c, (size_t)(nl - c->buf));
	if (c->phase == GC_HV_READ && c->len > HVSOCK_LINE_MAX)
		return fail(c, "hybrid vsock: answer too long");
	if (c->len > GUESTCHECK_REPLY_MAX)
		return fail(c, "reply over 64 KiB");
	return GC_BUSY;
}

enum guestcheck_status
guestcheck_advance(struct guestcheck *c)
{
	switch (c->phase) {
	case GC_CONNECT:
		return connected(c);
	case GC_HV_SEND:
	case GC_SEND:
		return do_send(c);
	case GC_HV_READ:
	case GC_READ:
		return do_read(c);
	}
	return GC_BUSY;
}

const char *
guestcheck_timeout_why(const struct guestcheck *c)
{
	switch (c->phase) {
	case GC_CONNECT:
		return "timed out connecting";
	case GC_HV_SEND:
	case GC_HV_READ:
		return "timed out waiting for the hybrid vsock OK";
	case GC_SEND:
		return "timed out sending the request";
	default:
		return "timed out waiting for the reply";
	}
}

void
guestcheck_end(struct guestcheck *c)
{
	if (c->fd != -1)
		close(c->fd);
	c->fd = -1;
	if (c->cap > 4096) {
		free(c->buf);
		c->buf = NULL;
		c->cap = 0;
	}
}

void
guestcheck_release(struct guestcheck *c)
{
	if (c->fd != -1)
		close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
	c->cap = 0;
}
