/*
 * lineserv.h - a bounded one-line request/reply server on a listening
 * socket, served from the caller's poll loop (vsock-answer, SPEC.md 3.3).
 *
 * Each connection sends one request line and gets one reply line, then
 * is closed. A connection lives at most lifetime_ms, at most max are
 * open (the oldest is dropped for a new one), a request is read up to
 * request_max bytes, and every socket is non-blocking, so no client can
 * stall another or the caller's other inputs. Replies are shared,
 * reference-counted lines: changing the reply never waits for slow
 * readers of the old one.
 *
 *	lineserv_init(&s, listen_fd, max, request_max, lifetime_ms, fn, ctx);
 *	loop: n = lineserv_poll_fill(&s, pfds, &until);
 *	      poll(pfds, n, ...);
 *	      lineserv_service(&s, pfds, n);	(then accept on listen POLLIN)
 *	lineserv_release(&s);
 */
#ifndef VFS_LINESERV_H
#define VFS_LINESERV_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

/* A reply line, shared by every client sending it. */
struct lineserv_reply {
	unsigned refs;
	size_t len;
	char line[];
};

/* A new reply with room for cap bytes of line, one reference; NULL/ENOMEM. */
struct lineserv_reply *lineserv_reply_new(size_t cap);

/* Drops a reference; frees with the last. NULL is ignored. */
void lineserv_reply_put(struct lineserv_reply *r);

/*
 * The reply to the request line[0, len) (newline and a trailing CR
 * removed). Borrowed: the server takes its own reference.
 */
typedef struct lineserv_reply *lineserv_answer_fn(void *ctx,
    const char *line, size_t len);

struct lineserv_client;

struct lineserv {
	int listen_fd;			/* borrowed */
	struct lineserv_client *clients;	/* owned array of n */
	size_t n, max;
	size_t request_max;
	long long lifetime_ms;
	lineserv_answer_fn *respond;
	void *ctx;
	unsigned long evicted;		/* connections dropped for the cap */
};

/* 0, or -1/ENOMEM. max >= 1. */
int lineserv_init(struct lineserv *s, int listen_fd, size_t max,
    size_t request_max, long long lifetime_ms, lineserv_answer_fn *fn,
    void *ctx);

/*
 * Writes the clients' poll entries to pfds (room for s->max) and lowers
 * *until (io_now_ms() time) to the earliest connection deadline. Returns
 * the number written; pfds[i] is client i.
 */
size_t lineserv_poll_fill(const struct lineserv *s, struct pollfd *pfds,
    long long *until);

/* Serves the clients polled in pfds[0, n) (from lineserv_poll_fill) and
 * drops expired ones. */
void lineserv_service(struct lineserv *s, const struct pollfd *pfds,
    size_t n);

/*
 * Accepts a batch of waiting connections, dropping the oldest one for
 * each that finds the server full. Returns the number dropped, or -1
 * with errno when accept(2) failed for a reason other than "none
 * waiting" (the caller logs it; the server goes on).
 */
long lineserv_accept(struct lineserv *s);

/* Closes every connection and frees the clients (not the listen fd). */
void lineserv_release(struct lineserv *s);

#endif
