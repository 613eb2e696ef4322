/*
 * reply.c - the lines vsock-answer replies with (SPEC.md 3.3): the one
 * for the current state, rebuilt when the state changes, and the two
 * error lines, each made once and shared by every client sending it
 * (lineserv.h); and the reply to one request line, which the connection
 * servers (lineserv.c, vport.c) ask for.
 */
#include <errno.h>
#include <string.h>

#include "guestproto.h"
#include "log.h"
#include "vsock-answer.h"

/*
 * A new reply (one reference): the error line for err if not NULL, else
 * the line for state st with message msg. NULL, with a->fatal set, when
 * out of memory.
 */
static struct lineserv_reply *
reply_new(struct answer *a, enum guest_state st, const char *msg,
    const char *err)
{
	size_t cap = 64 + (msg != NULL ? 6 * strlen(msg) : 0);
	struct lineserv_reply *r = lineserv_reply_new(cap);
	int n;

	if (r == NULL) {
		a->fatal = log_fail(EX_OSERR, "out of memory", NULL);
		return NULL;
	}
	if (err != NULL)
		n = guestproto_error_format(err, r->line, cap);
	else
		n = guestproto_reply_format(st, msg, r->line, cap);
	if (n < 0) {
		a->fatal = log_fail(EX_SOFTWARE, "cannot format reply",
		    "{s:s}", "error", strerror(errno));
		lineserv_reply_put(r);
		return NULL;
	}
	r->len = (size_t)n;
	return r;
}

void
reply_update(struct answer *a)
{
	struct lineserv_reply *r = reply_new(a, a->state, a->message, NULL);

	if (r == NULL)
		return;
	lineserv_reply_put(a->reply);
	a->reply = r;
}

void
reply_init(struct answer *a)
{
	reply_update(a);
	if (a->fatal == 0)
		a->bad = reply_new(a, GUEST_UNKNOWN, NULL,
		    GUEST_ERR_BAD_REQUEST);
	if (a->fatal == 0)
		a->unsupported = reply_new(a, GUEST_UNKNOWN, NULL,
		    GUEST_ERR_UNSUPPORTED);
}

struct lineserv_reply *
reply_request(void *ctx, const char *line, size_t len)
{
	struct answer *a = ctx;
	enum guest_method m = GUEST_METHOD_UNSUPPORTED;

	if (guestproto_request_parse(line, len, &m) < 0)
		return a->bad;
	if (m == GUEST_METHOD_UNSUPPORTED)
		return a->unsupported;
	return a->reply;
}

void
reply_release(struct answer *a)
{
	lineserv_reply_put(a->reply);
	lineserv_reply_put(a->bad);
	lineserv_reply_put(a->unsupported);
	a->reply = a->bad = a->unsupported = NULL;
}
