/*
 * opener.c - the privileged half of sentinel-poll (opener.h): the
 * request protocol, what may be served, and the opener process.
 *
 * The process holds CAP_DAC_READ_SEARCH in its permitted set and, at
 * rest, in its effective set (what `grep CapEff /proc/PID/status` shows);
 * it lowers the effective set around every open outside the privileged
 * directories, so that there it is the plain service user. It reads one
 * file of its own, the claims ledger (written by the service user, never
 * by a tenant), and no byte of any file it opens for the parser.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "claims.h"
#include "endpoint.h"
#include "filekey.h"
#include "io.h"
#include "safeopen.h"

#include "opener.h"

#define LEDGER_MAX (64u * 1024 * 1024)	/* as the store's own bound */

/* --- the protocol --------------------------------------------------------- */

int
opener_request_parse(const void *msg, size_t len, struct opener_request *rq)
{
	const char *m = msg;

	if (len < 2 || len > OPENER_MSG_MAX - 1 ||
	    (m[0] != OPENER_FILE && m[0] != OPENER_CONNECT &&
	    m[0] != OPENER_PATH) || m[1] != '/' ||
	    memchr(m + 1, '\0', len - 1) != NULL) {
		errno = EINVAL;
		return -1;
	}
	rq->op = (enum opener_op)m[0];
	memcpy(rq->path, m + 1, len - 1);
	rq->path[len - 1] = '\0';
	return 0;
}

ssize_t
opener_request_format(const struct opener_request *rq, char *msg)
{
	size_t n = strnlen(rq->path, OPENER_PATH_MAX);
	struct opener_request check;

	if (n >= OPENER_PATH_MAX) {
		errno = EINVAL;
		return -1;
	}
	msg[0] = (char)rq->op;
	memcpy(msg + 1, rq->path, n);
	if (opener_request_parse(msg, n + 1, &check) == -1)
		return -1;
	return (ssize_t)(n + 1);
}

/* --- the privileged directories ------------------------------------------ */

void
opener_dirs_release(struct opener_dirs *d)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		free(d->v[i]);
	free(d->v);
	d->v = NULL;
	d->n = 0;
}

/* Appends the item s[0..n), trimmed; 0 or -1/errno. */
static int
dirs_add(struct opener_dirs *d, const char *s, size_t n)
{
	char **v, *p;

	while (n > 0 && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	while (n > 1 && s[n - 1] == '/')
		n--;
	if (n == 0)
		return 0;
	if (s[0] != '/') {
		errno = EINVAL;
		return -1;
	}
	if ((v = reallocarray(d->v, d->n + 1, sizeof(*v))) == NULL)
		return -1;
	d->v = v;
	if ((p = strndup(s, n)) == NULL)
		return -1;
	d->v[d->n++] = p;
	return 0;
}

int
opener_dirs_parse(const char *list, struct opener_dirs *d)
{
	const char *p = list, *comma;

	d->v = NULL;
	d->n = 0;
	for (;;) {
		comma = strchr(p, ',');
		if (dirs_add(d, p, comma != NULL ? (size_t)(comma - p) :
		    strlen(p)) == -1) {
			opener_dirs_release(d);
			return -1;
		}
		if (comma == NULL)
			return 0;
		p = comma + 1;
	}
}

const char *
opener_dirs_match(const struct opener_dirs *d, const char *path,
    const char **rel)
{
	size_t i, n;

	for (i = 0; i < d->n; i++) {
		n = strlen(d->v[i]);
		if (n == 1)		/* "/": everything is below it */
			n = 0;
		if (strncmp(path, d->v[i], n) == 0 && path[n] == '/' &&
		    path[n + 1] != '\0') {
			*rel = path + n + 1;
			return d->v[i];
		}
	}
	return NULL;
}

/* --- what is served ------------------------------------------------------- */

/* path is log, log.0 or log.1. */
static bool
is_log(const char *log, const char *path)
{
	size_t n;

	if (log == NULL || log[0] != '/')
		return false;
	n = strlen(log);
	if (strncmp(path, log, n) != 0)
		return false;
	return path[n] == '\0' || strcmp(path + n, ".0") == 0 ||
	    strcmp(path + n, ".1") == 0;
}

/* path is the Unix socket of the claim's agent endpoint. */
static bool
is_channel(const char *vsock, const char *path)
{
	struct endpoint ep;

	return vsock != NULL && endpoint_parse(vsock, &ep) == 0 &&
	    ep.kind != EP_VSOCK && strcmp(ep.path, path) == 0;
}

static bool
claim_allows(const struct claim *cl, const struct opener_request *rq)
{
	switch (rq->op) {
	case OPENER_FILE:
		return is_log(cl->app_log, rq->path);
	case OPENER_CONNECT:
		return is_channel(cl->vsock, rq->path);
	case OPENER_PATH:
		return cl->control_socket != NULL &&
		    strcmp(cl->control_socket, rq->path) == 0;
	}
	return false;
}

static bool
claims_allow(const struct claims *c, const struct opener_request *rq)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (claim_allows(&c->v[i], rq))
			return true;
	return false;
}

bool
opener_allowed(const char *ledger, size_t len,
    const struct opener_request *rq)
{
	struct claims c = { 0 };
	char why[256];
	bool ok;

	if (claims_parse(ledger, len, &c, why, sizeof(why)) == -1)
		return false;
	ok = claims_allow(&c, rq);
	claims_release(&c);
	return ok;
}

/* --- the process ---------------------------------------------------------- */

/* The claims of the ledger as last read, and the file they came from. */
struct ledger {
	char path[OPENER_PATH_MAX];
	struct claims claims;
	struct filekey_cache key;	/* all 0: not read */
};

/* Reads the ledger again when the file changed (filekey.h). A missing
 * or bad one holds no claim until it changes. */
static void
ledger_refresh(struct ledger *l)
{
	char why[256], *text;
	size_t len;

	if (filekey_unchanged(&l->key, l->path))
		return;
	claims_release(&l->claims);
	if ((text = io_slurp(l->path, LEDGER_MAX, &len)) != NULL &&
	    claims_parse(text, len, &l->claims, why, sizeof(why)) == -1)
		claims_release(&l->claims);
	free(text);
	filekey_loaded(&l->key, l->path);
}

/* Sets the effective set to CAP_DAC_READ_SEARCH (on) or nothing, the
 * permitted set kept. glibc has no capset(2) wrapper. */
static int
cap_effective(bool on)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { { 0 } };

	d[0].permitted = 1u << CAP_DAC_READ_SEARCH;
	d[0].effective = on ? d[0].permitted : 0;
	return (int)syscall(SYS_capset, &h, d);
}

/* The O_PATH descriptor of rq's path: below a privileged directory with
 * the capability, anywhere else as the plain user. -1/errno. */
static int
resolve(const struct opener_request *rq, const struct opener_dirs *dirs,
    bool cap, bool *raised)
{
	const char *dir, *rel;
	int dfd, fd;

	dir = opener_dirs_match(dirs, rq->path, &rel);
	*raised = cap && dir != NULL;
	if (cap && !*raised && cap_effective(false) == -1)
		return -1;
	if (!*raised)
		return safeopen_path(AT_FDCWD, rq->path, SAFEOPEN_FOLLOW);
	/* The directory is opened for each request: libvirt makes
	 * /run/libvirt/qemu anew when it starts. Only its own name is
	 * taken as configured; nothing below it is a link. */
	if ((dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	fd = safeopen_path(dfd, rel, SAFEOPEN_NO_LINKS);
	io_close_keep_errno(dfd);
	return fd;
}

/* Opens or connects what rq asks for: the descriptor, or -1/errno. */
static int
serve_one(const struct opener_request *rq, const struct opener_dirs *dirs,
    bool cap)
{
	struct stat st;
	bool raised = false;
	int pathfd, fd = -1, saved;

	if ((pathfd = resolve(rq, dirs, cap, &raised)) == -1)
		goto out;
	switch (rq->op) {
	case OPENER_FILE:
		fd = safeopen_reopen(pathfd, &st);
		break;
	case OPENER_CONNECT:
		fd = safeopen_connect(pathfd);
		break;
	case OPENER_PATH:
		if (fstat(pathfd, &st) == -1)
			break;
		if (!S_ISSOCK(st.st_mode)) {
			errno = IO_ENOTREG;
			break;
		}
		fd = pathfd;
		pathfd = -1;
		break;
	}
out:
	saved = errno;
	if (pathfd != -1)
		close(pathfd);
	if (cap && !raised)
		(void)cap_effective(true);
	errno = saved;
	return fd;
}

/* Sends err, with fd attached when it is not -1. */
static void
reply(int sock, int err, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	int32_t e = err;
	struct iovec iov = { .iov_base = &e, .iov_len = sizeof(e) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	if (fd != -1) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	while (sendmsg(sock, &mh, MSG_NOSIGNAL) == -1 && errno == EINTR)
		;
}

void
opener_serve(int sock, const char *data_dir, const struct opener_dirs *dirs,
    bool cap)
{
	static struct ledger l;
	char msg[OPENER_MSG_MAX];
	struct opener_request rq;
	ssize_t n;
	int fd;

	if (io_pathf(l.path, sizeof(l.path), "%s/gpu/vf-claims.json",
	    data_dir) < 0)
		return;
	for (;;) {
		n = recv(sock, msg, sizeof(msg), 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		fd = -1;
		if (opener_request_parse(msg, (size_t)n, &rq) == -1) {
			reply(sock, EINVAL, -1);
			continue;
		}
		ledger_refresh(&l);
		if (!claims_allow(&l.claims, &rq))
			errno = EPERM;
		else
			fd = serve_one(&rq, dirs, cap);
		reply(sock, fd == -1 ? errno : 0, fd);
		if (fd != -1)
			close(fd);
	}
	claims_release(&l.claims);
}
