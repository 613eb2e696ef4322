/*
 * guestcheck.h - the connection of one guest check, driven by poll(2):
 * a non-blocking connect, for a hybrid vsock endpoint (a VMM's Unix
 * socket) the "CONNECT PORT" / "OK HOSTPORT" handshake, the request line,
 * then one reply line. The caller polls the descriptor, keeps the
 * deadline and judges the reply; nothing here prints.
 */
#ifndef VFS_GUESTCHECK_H
#define VFS_GUESTCHECK_H

#include <stddef.h>

#include "endpoint.h"
#include "jsonl.h"

#define GUESTCHECK_REPLY_MAX JSONL_MAX	/* longest reply line */

enum guestcheck_phase {
	GC_CONNECT,
	GC_HV_SEND,
	GC_HV_READ,
	GC_SEND,
	GC_READ
};

enum guestcheck_status {
	GC_BUSY,		/* still in flight */
	GC_REPLY,		/* the reply is buf[0..reply_len) */
	GC_FAILED		/* over; why says what failed */
};

/*
 * Dials ep as endpoint_connect() does: the descriptor (its connect may
 * be in progress), or -1/errno. sentinel-poll's asks its opener for a
 * channel it may not reach itself (opener.h).
 */
typedef int guestcheck_dial_fn(void *arg, const struct endpoint *ep);

/* Zeroed, then fd set to -1, before the first use. */
struct guestcheck {
	guestcheck_dial_fn *dial;	/* NULL: endpoint_connect() */
	void *dial_arg;
	int fd;				/* -1 when idle */
	enum guestcheck_phase phase;
	struct endpoint ep;
	const char *request;		/* borrowed: the line, with '\n' */
	char out[64];			/* CONNECT line or request */
	size_t outlen;
	size_t sent;
	char *buf;			/* owned reply buffer */
	size_t len;
	size_t cap;
	size_t reply_len;		/* GC_REPLY: the line, without '\n' */
	char why[256];			/* GC_FAILED: what failed */
	int err;			/* GC_FAILED: its errno, 0 for none
					 * (a bad reply, a timeout) */
};

/*
 * Starts connecting to ep (copied) to send request (borrowed, shorter
 * than 64 bytes). 0 in flight, or -1 with why set ("connect: ...") and
 * fd -1.
 */
int guestcheck_start(struct guestcheck *c, const struct endpoint *ep,
    const char *request);

/* The poll(2) events the check waits for: POLLIN or POLLOUT. */
short guestcheck_poll_events(const struct guestcheck *c);

/* Advances the check after poll(2) reported its descriptor. */
enum guestcheck_status guestcheck_advance(struct guestcheck *c);

/* What a check still in flight at its deadline was waiting for. */
const char *guestcheck_timeout_why(const struct guestcheck *c);

/* Closes the connection (fd -1); a large reply buffer is freed. */
void guestcheck_end(struct guestcheck *c);

/* Closes the connection and frees the reply buffer. */
void guestcheck_release(struct guestcheck *c);

#endif
