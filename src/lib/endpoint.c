/*
 * endpoint.c - parse, dial and listen on vsock:, hvsock:, unix: and
 * virtio-serial: endpoints.
 *
 * AF_VSOCK exists only where the kernel has a vsock transport; on a host
 * without one socket() fails with EAFNOSUPPORT, which callers report like
 * any other dial error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/vm_sockets.h>

#include "conf.h"
#include "endpoint.h"
#include "io.h"

static int
einval(void)
{
	errno = EINVAL;
	return -1;
}

static int
set_path(struct endpoint *ep, const char *path, size_t len)
{
	if (len == 0)
		return einval();
	if (len >= sizeof(ep->path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(ep->path, path, len);
	ep->path[len] = '\0';
	return 0;
}

static int
parse_port(const char *s, unsigned *port)
{
	/* VMADDR_PORT_ANY (-1U) is not a port one can dial or bind. */
	return conf_parse_uint(s, 0, 4294967294U, port) < 0 ? einval() : 0;
}

static int
parse_vsock(const char *s, struct endpoint *ep)
{
	char cid[16];
	const char *colon = strchr(s, ':');

	if (colon == NULL || (size_t)(colon - s) >= sizeof(cid))
		return einval();
	memcpy(cid, s, (size_t)(colon - s));
	cid[colon - s] = '\0';
	if (conf_parse_uint(cid, 0, 4294967294U, &ep->cid) < 0)
		return einval();
	return parse_port(colon + 1, &ep->port);
}

static int
parse_hvsock(const char *s, struct endpoint *ep)
{
	const char *colon = strrchr(s, ':');

	if (colon == NULL)
		return einval();
	if (parse_port(colon + 1, &ep->port) < 0)
		return -1;
	return set_path(ep, s, (size_t)(colon - s));
}

int
endpoint_parse(const char *s, struct endpoint *ep)
{
	memset(ep, 0, sizeof(*ep));
	if (strncmp(s, "vsock:", 6) == 0) {
		ep->kind = EP_VSOCK;
		return parse_vsock(s + 6, ep);
	}
	if (strncmp(s, "hvsock:", 7) == 0) {
		ep->kind = EP_HVSOCK;
		return parse_hvsock(s + 7, ep);
	}
	if (strncmp(s, "unix:", 5) == 0) {
		ep->kind = EP_UNIX;
		return set_path(ep, s + 5, strlen(s + 5));
	}
	if (strncmp(s, "virtio-serial:", 14) == 0) {
		ep->kind = EP_VSERIAL;
		return set_path(ep, s + 14, strlen(s + 14));
	}
	return einval();
}

int
endpoint_parse_listen(const char *s, struct endpoint *ep)
{
	memset(ep, 0, sizeof(*ep));
	if (strncmp(s, "vsock:", 6) == 0) {
		ep->kind = EP_VSOCK;
		ep->cid = VMADDR_CID_ANY;
		return parse_port(s + 6, &ep->port);
	}
	if (strncmp(s, "unix:", 5) == 0) {
		ep->kind = EP_UNIX;
		return set_path(ep, s + 5, strlen(s + 5));
	}
	if (strncmp(s, "virtio-serial:", 14) == 0) {
		ep->kind = EP_VSERIAL;
		return set_path(ep, s + 14, strlen(s + 14));
	}
	return einval();
}

/* Fills the socket address for ep; returns its length. */
static socklen_t
make_addr(const struct endpoint *ep, struct sockaddr_storage *ss)
{
	struct sockaddr_vm *vm = (struct sockaddr_vm *)ss;
	struct sockaddr_un *un = (struct sockaddr_un *)ss;

	memset(ss, 0, sizeof(*ss));
	if (ep->kind == EP_VSOCK) {
		vm->svm_family = AF_VSOCK;
		vm->svm_cid = ep->cid;
		vm->svm_port = ep->port;
		return sizeof(*vm);
	}
	un->sun_family = AF_UNIX;
	memcpy(un->sun_path, ep->path, strlen(ep->path) + 1);
	return sizeof(*un);
}

static int
new_socket(const struct endpoint *ep)
{
	int family = ep->kind == EP_VSOCK ? AF_VSOCK : AF_UNIX;

	return socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

int
endpoint_connect(const struct endpoint *ep)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(ep, &ss);
	int fd;

	fd = new_socket(ep);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&ss, len) < 0 &&
	    errno != EINPROGRESS) {
		io_close_keep_errno(fd);
		return -1;
	}
	return fd;
}

/* Removes a stale socket file, but never a file of another kind. */
static int
remove_stale(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISSOCK(st.st_mode)) {
		errno = EEXIST;
		return -1;
	}
	return unlink(path);
}

int
endpoint_listen(const struct endpoint *ep)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(ep, &ss);
	int fd;

	if (ep->kind == EP_HVSOCK || ep->kind == EP_VSERIAL) {
		errno = EINVAL;
		return -1;
	}
	if (ep->kind == EP_UNIX && remove_stale(ep->path) < 0)
		return -1;
	fd = new_socket(ep);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 ||
	    listen(fd, SOMAXCONN) < 0) {
		io_close_keep_errno(fd);
		return -1;
	}
	return fd;
}
