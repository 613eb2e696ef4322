/*
 * checkpool.h - up to n guest checks (guestcheck.h) in flight at once in
 * one poll(2) loop: sentinel-poll's --concurrency. Each check has a
 * deadline (its whole --timeout) and a tag (the caller's target); its
 * reply is judged (guestproto_reply_parse) into a verdict. The caller does the
 * waiting: checkpool_prepare() fills the pollfd array and says how long
 * to wait, the caller ppoll(2)s the n descriptors (plus its own in
 * pfds[n]), and checkpool_advance() moves every check on and ends those
 * that replied, failed or reached their deadline.
 *
 * Ownership: the pool owns its slots, the pollfd array (n + 1) and each
 * check's connection and reply buffer. Tags and the request are borrowed
 * and must outlive the checks. A verdict's detail is borrowed for the
 * call of the done function only. Nothing here prints or exits.
 */
#ifndef VFS_CHECKPOOL_H
#define VFS_CHECKPOOL_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

#include "checkline.h"
#include "guestcheck.h"

/* A guest check's verdicts: those of the check line (checkline.h). */
enum checkpool_verdict {
	CP_OK = CHECKLINE_OK,
	CP_FAILED = CHECKLINE_FAILED,		/* detail: the nvrm message */
	CP_UNKNOWN = CHECKLINE_UNKNOWN,
	CP_RPC_ERROR = CHECKLINE_RPC_ERROR,	/* detail: what failed */
	CP_UNSUPPORTED = CHECKLINE_UNSUPPORTED	/* no such method */
};

/* "ok", "failed", "unknown", "rpc_error", "unsupported_agent" (static). */
const char *checkpool_verdict_name(enum checkpool_verdict v);

/* A check ended; detail is NULL for ok, unknown and unsupported; err is
 * the errno of a failed connect, send or read (EACCES: the endpoint's
 * socket may not be used), else 0. */
typedef void checkpool_done_fn(void *arg, const void *tag,
    enum checkpool_verdict v, const char *detail, int err);

struct checkpool_slot {
	struct guestcheck gc;		/* gc.fd -1: a free slot */
	const void *tag;		/* borrowed */
	long long deadline;		/* io_now_ms() */
};

struct checkpool {
	struct checkpool_slot *slots;	/* owned, n of them */
	struct pollfd *pfds;		/* owned, n + 1 */
	size_t n;
	size_t busy;			/* checks in flight */
	const char *request;		/* borrowed: the line, with '\n' */
	guestcheck_dial_fn *dial;	/* each check's (guestcheck.h);
					 * NULL after init */
	void *dial_arg;
};

/* n free slots sending request. 0 or -1/ENOMEM. */
int checkpool_init(struct checkpool *cp, size_t n, const char *request);

/* Closes every connection and frees the pool; cp is empty. */
void checkpool_release(struct checkpool *cp);

/*
 * Starts a check of endpoint (endpoint.h; "vsock:CID" without a port
 * dials default_port) in the free slot i, to end at deadline. True if it
 * is in flight; false if it ended at once, passed to done as rpc_error
 * ("invalid endpoint", or the connect error).
 */
bool checkpool_start(struct checkpool *cp, size_t i, const char *endpoint,
    unsigned default_port, long long deadline, const void *tag,
    checkpool_done_fn *done, void *arg);

/*
 * Fills pfds[0..n) for the checks in flight and returns the milliseconds
 * until the nearest deadline, at most 1000, at least 0.
 */
long long checkpool_prepare(struct checkpool *cp);

/*
 * After the caller's poll(2) of pfds: advances each check that has an
 * event, ends those done or past their deadline, and tells done.
 */
void checkpool_advance(struct checkpool *cp, checkpool_done_fn *done,
    void *arg);

/* Closes the checks in flight without a verdict (a stop). */
void checkpool_abandon(struct checkpool *cp);

#endif
