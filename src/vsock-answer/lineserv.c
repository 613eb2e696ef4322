/*
 * lineserv.c - a bounded one-line request/reply server.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "io.h"
#include "lineserv.h"

#define REQUEST_BUF0 128		/* first request buffer size */
#define ACCEPT_BATCH 64			/* connections accepted per call */

struct lineserv_client {
	int fd;
	long long deadline;		/* io_now_ms() when it is dropped */
	char *buf;			/* owned: the request so far */
	size_t len, cap;
	struct lineserv_reply *out;	/* a reference, once replying */
	size_t off;			/* out->line[off, len) is to send */
	bool replying;
};

struct lineserv_reply *
lineserv_reply_new(size_t cap)
{
	struct lineserv_reply *r = malloc(sizeof(*r) + cap);

	if (r == NULL)
		return NULL;
	r->refs = 1;
	r->len = 0;
	return r;
}

void
lineserv_reply_put(struct lineserv_reply *r)
{
	if (r != NULL && --r->refs == 0)
		free(r);
}

int
lineserv_init(struct lineserv *s, int listen_fd, size_t max,
    size_t request_max, long long lifetime_ms, lineserv_answer_fn *fn,
    void *ctx)
{
	memset(s, 0, sizeof(*s));
	s->clients = calloc(max, sizeof(*s->clients));
	if (s->clients == NULL)
		return -1;
	s->listen_fd = listen_fd;
	s->max = max;
	s->request_max = request_max;
	s->lifetime_ms = lifetime_ms;
	s->respond = fn;
	s->ctx = ctx;
	return 0;
}

static void
client_close(struct lineserv *s, size_t i)
{
	close(s->clients[i].fd);
	free(s->clients[i].buf);
	lineserv_reply_put(s->clients[i].out);
	s->clients[i] = s->clients[--s->n];
}

/* Sends what is left of the reply; closes the client once it is all sent. */
static void
client_send(struct lineserv *s, size_t i)
{
	struct lineserv_client *c = &s->clients[i];
	ssize_t n;

	n = send(c->fd, c->out->line + c->off, c->out->len - c->off,
	    MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n > 0)
		c->off += (size_t)n;
	if (c->off == c->out->len ||
	    (n < 0 && errno != EAGAIN && errno != EINTR))
		client_close(s, i);
}

/* Answers the request line held in buf[0, len) (newline excluded). */
static void
client_answer(struct lineserv *s, size_t i, size_t len)
{
	struct lineserv_client *c = &s->clients[i];
	struct lineserv_reply *r;

	if (len > 0 && c->buf[len - 1] == '\r')
		len--;
	r = s->respond(s->ctx, c->buf, len);
	free(c->buf);
	c->buf = NULL;
	r->refs++;
	c->out = r;
	c->off = 0;
	c->replying = true;
	client_send(s, i);
}

/* Makes room for more request bytes, up to request_max + 1. */
static int
client_grow(const struct lineserv *s, struct lineserv_client *c)
{
	size_t cap = c->cap > 0 ? c->cap * 4 : REQUEST_BUF0;
	char *p;

	if (cap > s->request_max + 1)
		cap = s->request_max + 1;
	p = realloc(c->buf, cap);
	if (p == NULL)
		return -1;
	c->buf = p;
	c->cap = cap;
	return 0;
}

/* Reads request bytes; answers on a newline, on EOF or when too long. */
static void
client_read(struct lineserv *s, size_t i)
{
	struct lineserv_client *c = &s->clients[i];
	char *nl;
	ssize_t n;

	if (c->len == c->cap && client_grow(s, c) < 0) {
		client_close(s, i);
		return;
	}
	n = read(c->fd, c->buf + c->len, c->cap - c->len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0 || (n == 0 && c->len == 0)) {
		client_close(s, i);
		return;
	}
	nl = memchr(c->buf + c->len, '\n', (size_t)n);
	c->len += (size_t)n;
	if (nl != NULL)
		client_answer(s, i, (size_t)(nl - c->buf));
	else if (n == 0 || c->len > s->request_max)
		client_answer(s, i, c->len);
}

size_t
lineserv_poll_fill(const struct lineserv *s, struct pollfd *pfds,
    long long *until)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		pfds[i] = (struct pollfd){ .fd = s->clients[i].fd,
		    .events = s->clients[i].replying ? POLLOUT : POLLIN };
		if (s->clients[i].deadline < *until)
			*until = s->clients[i].deadline;
	}
	return s->n;
}

/* Walks backwards: closing moves the last client into the closed slot. */
void
lineserv_service(struct lineserv *s, const struct pollfd *pfds, size_t n)
{
	long long now = io_now_ms();
	size_t i = n;
	short ev;

	while (i-- > 0) {
		ev = pfds[i].revents;
		if (ev != 0 && s->clients[i].replying)
			client_send(s, i);
		else if (ev != 0)
			client_read(s, i);
		else if (now >= s->clients[i].deadline)
			client_close(s, i);
	}
}

/* Drops the connection that has lived longest, to admit a new one. */
static void
client_evict(struct lineserv *s)
{
	size_t i, oldest = 0;

	for (i = 1; i < s->n; i++)
		if (s->clients[i].deadline < s->clients[oldest].deadline)
			oldest = i;
	client_close(s, oldest);
	s->evicted++;
}

long
lineserv_accept(struct lineserv *s)
{
	struct lineserv_client *c;
	long dropped = 0;
	int fd, k;

	for (k = 0; k < ACCEPT_BATCH; k++) {
		fd = accept4(s->listen_fd, NULL, NULL,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return errno == EAGAIN || errno == EINTR ||
			    errno == ECONNABORTED ? dropped : -1;
		if (s->n == s->max) {
			client_evict(s);
			dropped++;
		}
		c = &s->clients[s->n++];
		memset(c, 0, sizeof(*c));
		c->fd = fd;
		c->deadline = io_now_ms() + s->lifetime_ms;
	}
	return dropped;
}

void
lineserv_release(struct lineserv *s)
{
	while (s->n > 0)
		client_close(s, s->n - 1);
	free(s->clients);
	s->clients = NULL;
	s->max = 0;
}
