/*
 * checkpool.c - guest checks in flight at once, each bounded by its
 * deadline, judged into verdicts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkline.h"
#include "checkpool.h"
#include "endpoint.h"
#include "guestproto.h"
#include "io.h"

const char *
checkpool_verdict_name(enum checkpool_verdict v)
{
	return checkline_verdict_name((enum checkline_verdict)v);
}

int
checkpool_init(struct checkpool *cp, size_t n, const char *request)
{
	size_t i;

	memset(cp, 0, sizeof(*cp));
	cp->slots = calloc(n, sizeof(*cp->slots));
	cp->pfds = calloc(n + 1, sizeof(*cp->pfds));
	if (cp->slots == NULL || cp->pfds == NULL) {
		checkpool_release(cp);
		errno = ENOMEM;
		return -1;
	}
	for (i = 0; i < n; i++)
		cp->slots[i].gc.fd = -1;
	cp->n = n;
	cp->request = request;
	return 0;
}

void
checkpool_release(struct checkpool *cp)
{
	size_t i;

	for (i = 0; cp->slots != NULL && i < cp->n; i++)
		guestcheck_release(&cp->slots[i].gc);
	free(cp->slots);
	free(cp->pfds);
	memset(cp, 0, sizeof(*cp));
}

/* Ends the check of s (in flight or not) with a verdict. */
static void
slot_end(struct checkpool *cp, struct checkpool_slot *s,
    enum checkpool_verdict v, const char *detail, checkpool_done_fn *done,
    void *arg)
{
	int err = v == CP_RPC_ERROR && detail == s->gc.why ? s->gc.err : 0;

	if (s->gc.fd != -1)
		cp->busy--;
	guestcheck_end(&s->gc);
	done(arg, s->tag, v, detail, err);
}

/*
 * Judges one reply line; *detail is borrowed from r: the nvrm of failed,
 * the error of rpc_error, else NULL.
 */
static enum checkpool_verdict
classify(const char *line, size_t len, struct guest_reply *r,
    const char **detail)
{
	*detail = NULL;
	if (guestproto_reply_parse(line, len, r) == -1) {
		*detail = r->message;
		return CP_RPC_ERROR;
	}
	if (r->kind == GUEST_REPLY_UNSUPPORTED)
		return CP_UNSUPPORTED;
	if (r->state == GUEST_OK)
		return CP_OK;
	if (r->state == GUEST_UNKNOWN)
		return CP_UNKNOWN;
	*detail = r->message;
	return CP_FAILED;
}

/* The reply of s is in; the reply buffer lives until slot_end(). */
static void
slot_reply(struct checkpool *cp, struct checkpool_slot *s,
    checkpool_done_fn *done, void *arg)
{
	struct guest_reply *r;
	const char *detail;
	char why[64];
	enum checkpool_verdict v;

	/* The reply holds an 8 KiB message: keep it off the stack. */
	if ((r = malloc(sizeof(*r))) == NULL) {
		(void)snprintf(why, sizeof(why), "read: %s", strerror(ENOMEM));
		slot_end(cp, s, CP_RPC_ERROR, why, done, arg);
		return;
	}
	v = classify(s->gc.buf, s->gc.reply_len, r, &detail);
	slot_end(cp, s, v, detail, done, arg);
	free(r);
}

/* endpoint, with default_port for a "vsock:CID". 0 or -1. */
static int
parse_endpoint(const char *s, unsigned default_port, struct endpoint *ep)
{
	char buf[64];
	int n;

	if (endpoint_parse(s, ep) == 0)
		return 0;
	if (strncmp(s, "vsock:", 6) != 0 || strchr(s + 6, ':') != NULL)
		return -1;
	n = snprintf(buf, sizeof(buf), "%s:%u", s, default_port);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -1;
	return endpoint_parse(buf, ep);
}

bool
checkpool_start(struct checkpool *cp, size_t i, const char *endpoint,
    unsigned default_port, long long deadline, const void *tag,
    checkpool_done_fn *done, void *arg)
{
	struct checkpool_slot *s = &cp->slots[i];
	struct endpoint ep;

	s->tag = tag;
	s->gc.fd = -1;
	s->deadline = deadline;
	s->gc.dial = cp->dial;
	s->gc.dial_arg = cp->dial_arg;
	if (parse_endpoint(endpoint, default_port, &ep) == -1) {
		slot_end(cp, s, CP_RPC_ERROR, "invalid endpoint", done, arg);
		return false;
	}
	if (guestcheck_start(&s->gc, &ep, cp->request) == -1) {
		slot_end(cp, s, CP_RPC_ERROR, s->gc.why, done, arg);
		return false;
	}
	cp->busy++;
	return true;
}

long long
checkpool_prepare(struct checkpool *cp)
{
	long long now = io_now_ms(), first = now + 1000;
	struct checkpool_slot *s;
	size_t i;

	for (i = 0; i < cp->n; i++) {
		s = &cp->slots[i];
		cp->pfds[i].fd = s->gc.fd;
		cp->pfds[i].events = guestcheck_poll_events(&s->gc);
		cp->pfds[i].revents = 0;
		if (s->gc.fd != -1 && s->deadline < first)
			first = s->deadline;
	}
	return first > now ? first - now : 0;
}

void
checkpool_advance(struct checkpool *cp, checkpool_done_fn *done, void *arg)
{
	struct checkpool_slot *s;
	long long now = io_now_ms();
	size_t i;

	for (i = 0; i < cp->n; i++) {
		s = &cp->slots[i];
		if (s->gc.fd != -1 && cp->pfds[i].revents != 0) {
			switch (guestcheck_advance(&s->gc)) {
			case GC_BUSY:
				break;
			case GC_REPLY:
				slot_reply(cp, s, done, arg);
				break;
			case GC_FAILED:
				slot_end(cp, s, CP_RPC_ERROR, s->gc.why, done,
				    arg);
				break;
			}
		}
		if (s->gc.fd != -1 && now >= s->deadline)
			slot_end(cp, s, CP_RPC_ERROR,
			    guestcheck_timeout_why(&s->gc), done, arg);
	}
}

void
checkpool_abandon(struct checkpool *cp)
{
	size_t i;

	for (i = 0; i < cp->n; i++) {
		if (cp->slots[i].gc.fd != -1)
			close(cp->slots[i].gc.fd);
		cp->slots[i].gc.fd = -1;
	}
	cp->busy = 0;
}
