/*
 * fuzz-opener.c - sentinel-poll's opener request protocol (opener.h), the
 * only bytes the privileged process takes from the parser. The input is
 * a request message, then optionally a 0xff byte and a claims ledger.
 * Properties: a message parses exactly when a reference written here
 * says so (op F, C or P, an absolute path, no NUL, within the bound),
 * and formats back to itself; the serve loop answers it EINVAL when it
 * does not parse and EPERM when no claim names it, with no descriptor
 * either way; a path is allowed only when the ledger's claim names it
 * for that op (checked against the ledger decoded here); a privileged
 * directory's match is the path's own prefix and rest.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "claims.h"
#include "endpoint.h"
#include "sentinel-poll/opener.h"

#define T "opener"

static bool
reference(const uint8_t *m, size_t len)
{
	return len >= 2 && len <= OPENER_MSG_MAX - 1 &&
	    (m[0] == 'F' || m[0] == 'C' || m[0] == 'P') && m[1] == '/' &&
	    memchr(m + 1, '\0', len - 1) == NULL;
}

/* What the serve loop answers msg, with no ledger to allow it. */
static int
served(const uint8_t *msg, size_t len)
{
	static const struct opener_dirs none;
	struct msghdr mh = { 0 };
	struct iovec iov;
	int32_t err = -1;
	int sv[2];

	if (len == 0)
		return EINVAL;
	fuzz_require(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0, T,
	    "socketpair");
	fuzz_require(send(sv[0], msg, len, 0) == (ssize_t)len &&
	    shutdown(sv[0], SHUT_WR) == 0, T, "send");
	opener_serve(sv[1], "/nonexistent/fuzz-opener", &none, false);
	iov = (struct iovec){ .iov_base = &err, .iov_len = sizeof(err) };
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	fuzz_require(recvmsg(sv[0], &mh, 0) == sizeof(err) &&
	    mh.msg_controllen == 0, T, "one reply, no descriptor");
	close(sv[0]);
	close(sv[1]);
	return err;
}

/* The claim names path for op, decided here. */
static bool
names(const struct claim *cl, const struct opener_request *rq)
{
	struct endpoint ep;
	size_t n;

	switch (rq->op) {
	case OPENER_FILE:
		if (cl->app_log == NULL || cl->app_log[0] != '/')
			return false;
		n = strlen(cl->app_log);
		return strncmp(rq->path, cl->app_log, n) == 0 &&
		    (rq->path[n] == '\0' || !strcmp(rq->path + n, ".0") ||
		    !strcmp(rq->path + n, ".1"));
	case OPENER_CONNECT:
		return cl->vsock != NULL && endpoint_parse(cl->vsock, &ep) == 0 &&
		    ep.kind != EP_VSOCK && strcmp(ep.path, rq->path) == 0;
	case OPENER_PATH:
		return cl->control_socket != NULL &&
		    strcmp(cl->control_socket, rq->path) == 0;
	}
	return false;
}

static void
check_allowed(const struct opener_request *rq, const char *ledger,
    size_t len)
{
	struct claims c = { 0 };
	char why[256];
	bool want = false;
	size_t i;

	if (claims_parse(ledger, len, &c, why, sizeof(why)) == 0)
		for (i = 0; i < c.n && !want; i++)
			want = names(&c.v[i], rq);
	claims_release(&c);
	fuzz_require(opener_allowed(ledger, len, rq) == want, T,
	    "allowed differs from the ledger's claims");
}

static void
check_dirs(const struct opener_request *rq)
{
	struct opener_dirs d;
	const char *dir, *rel = NULL;
	size_t n;

	if (opener_dirs_parse(rq->path, &d) == -1)
		return;
	dir = opener_dirs_match(&d, rq->path, &rel);
	if (dir != NULL) {
		n = strcmp(dir, "/") == 0 ? 0 : strlen(dir);
		fuzz_require(strncmp(rq->path, dir, n) == 0 &&
		    rq->path[n] == '/' && rel == rq->path + n + 1 &&
		    rel[0] != '\0', T, "a match is not the path's prefix");
	}
	opener_dirs_release(&d);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *sep = memchr(data, 0xff, size);
	size_t mlen = sep != NULL ? (size_t)(sep - data) : size;
	struct opener_request rq;
	char msg[OPENER_MSG_MAX];
	bool ok;
	int err;

	ok = opener_request_parse(data, mlen, &rq) == 0;
	fuzz_require(ok == reference(data, mlen), T,
	    "verdict differs from reference");
	err = served(data, mlen);
	fuzz_require(err == (ok ? EPERM : EINVAL), T,
	    "serve answered neither EPERM nor EINVAL");
	if (!ok)
		return 0;
	fuzz_require(opener_request_format(&rq, msg) == (ssize_t)mlen &&
	    memcmp(msg, data, mlen) == 0, T, "request does not round-trip");
	check_dirs(&rq);
	if (sep != NULL)
		check_allowed(&rq, (const char *)sep + 1,
		    size - mlen - 1);
	return 0;
}
