/*
 * openreq.c - the parser's side of the opener (opener.h): starting it,
 * dropping this process's capabilities, asking for a descriptor.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "opener.h"

#define ASK_TIMEOUT_MS 5000	/* the opener makes a few system calls */

/* Reads this process's capability sets; 0 or -1/errno. */
static int
caps_get(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3 };

	return (int)syscall(SYS_capget, &h, d);
}

/*
 * Keeps only the capabilities of keep (0: none) in the effective and
 * permitted sets, none inheritable and none ambient, so that nothing
 * this process runs gets one back; then no_new_privs, so that no
 * set-user-ID program does either. 0 or -1/errno.
 */
static int
caps_keep(uint32_t keep)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { { 0 } };

	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == -1 &&
	    errno != EINVAL)
		return -1;
	d[0].permitted = d[0].effective = keep;
	if (syscall(SYS_capset, &h, d) == -1)
		return -1;
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

/* The opener's side of the fork: never returns. */
static void
child(int sock, pid_t parent, const char *data_dir,
    const struct opener_dirs *dirs, bool cap)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t none;
	int null;

	/* The kernel ends the opener with the parser (prctl(2)); a parser
	 * already gone before the call leaves nothing to serve. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1 ||
	    getppid() != parent)
		_exit(0);
	(void)prctl(PR_SET_NAME, "sentinel-opener", 0, 0, 0);
	(void)sigaction(SIGTERM, &dfl, NULL);
	(void)sigaction(SIGINT, &dfl, NULL);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	/* Not the pipeline's stdin or stdout: vfstore apply must see its
	 * input end when the parser's ends. stderr stays the log. */
	if ((null = open("/dev/null", O_RDWR | O_CLOEXEC)) == -1 ||
	    dup2(null, 0) == -1 || dup2(null, 1) == -1)
		_exit(71);
	close(null);
	if (caps_keep(cap ? 1u << CAP_DAC_READ_SEARCH : 0) == -1)
		_exit(71);
	opener_serve(sock, data_dir, dirs, cap);
	_exit(0);
}

int
openreq_start(struct openreq *r, const char *data_dir,
    const struct opener_dirs *dirs)
{
	struct __user_cap_data_struct d[2];
	pid_t parent = getpid();
	int sv[2];
	bool cap;

	r->sock = -1;
	r->pid = -1;
	if (caps_get(d) == -1)
		return -1;
	cap = (d[0].permitted & 1u << CAP_DAC_READ_SEARCH) != 0;
	if (data_dir != NULL &&
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0) {
		r->pid = fork();
		if (r->pid == 0) {
			close(sv[0]);
			child(sv[1], parent, data_dir, dirs, cap);
		}
		close(sv[1]);
		if (r->pid == -1)
			close(sv[0]);
		else
			r->sock = sv[0];
	}
	return caps_keep(0);
}

/* Takes the reply: the descriptor, or -1/errno. */
static int
take_reply(int sock)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	int32_t err = 0;
	struct iovec iov = { .iov_base = &err, .iov_len = sizeof(err) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	ssize_t n;
	int fd = -1;

	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n == -1 && errno == EINTR);
	if (n != (ssize_t)sizeof(err)) {
		errno = ECONNRESET;
		return -1;
	}
	for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET &&
		    cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	if (err == 0 && fd != -1)
		return fd;
	if (fd != -1)
		close(fd);
	errno = err != 0 ? err : EPROTO;
	return -1;
}

/* The opener is gone or stuck: no more requests (every later one is
 * ECONNRESET). */
static int
broken(struct openreq *r)
{
	openreq_stop(r);
	errno = ECONNRESET;
	return -1;
}

int
openreq_ask(struct openreq *r, enum opener_op op, const char *path)
{
	struct opener_request rq = { .op = op };
	char msg[OPENER_MSG_MAX];
	struct pollfd pfd;
	ssize_t n;
	int rc, fd;

	if (r->sock == -1) {
		errno = ECONNRESET;
		return -1;
	}
	if (strlen(path) >= sizeof(rq.path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(rq.path, path);
	if ((n = opener_request_format(&rq, msg)) == -1)
		return -1;
	if (send(r->sock, msg, (size_t)n, MSG_NOSIGNAL) != n)
		return broken(r);
	pfd = (struct pollfd){ .fd = r->sock, .events = POLLIN };
	do
		rc = poll(&pfd, 1, ASK_TIMEOUT_MS);
	while (rc == -1 && errno == EINTR);
	if (rc != 1)
		return broken(r);
	if ((fd = take_reply(r->sock)) == -1 && errno == ECONNRESET)
		return broken(r);
	return fd;
}

bool
openreq_broken(const struct openreq *r)
{
	return r->pid > 0 && r->sock == -1;
}

void
openreq_stop(struct openreq *r)
{
	if (r->sock != -1)
		close(r->sock);
	r->sock = -1;
}
