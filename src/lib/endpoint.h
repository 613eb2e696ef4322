/*
 * endpoint.h - the endpoint strings of SPEC.md 3.3 and 4.4.
 *
 * Dial forms:   vsock:CID:PORT    AF_VSOCK
 *               hvsock:PATH:PORT  hybrid vsock: Unix socket PATH, then the
 *                                 caller sends "CONNECT PORT\n" and expects
 *                                 a line starting "OK " (PORT is after the
 *                                 last colon)
 *               unix:PATH         AF_UNIX stream socket
 *               virtio-serial:PATH  the host side of a virtio-serial
 *                                 port: the VMM's chardev Unix socket
 *                                 (SPEC 6.1), dialled as unix:
 * Listen forms: vsock:PORT, unix:PATH, virtio-serial:NAME (a port
 *               name) or virtio-serial:/PATH (the port's device); the
 *               caller opens a port itself (endpoint_listen refuses it)
 */
#ifndef VFS_ENDPOINT_H
#define VFS_ENDPOINT_H

#include <sys/un.h>

enum endpoint_kind {
	EP_VSOCK,
	EP_HVSOCK,
	EP_UNIX,
	EP_VSERIAL
};

struct endpoint {
	enum endpoint_kind kind;
	unsigned cid;				/* EP_VSOCK dial */
	unsigned port;				/* EP_VSOCK, EP_HVSOCK */
	/* unix:, hvsock:, virtio-serial: (a port name or device when
	 * listening) */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

/* Parses a dial endpoint. 0, or -1 with errno EINVAL/ENAMETOOLONG. */
int endpoint_parse(const char *s, struct endpoint *ep);

/* Parses a listen endpoint. 0, or -1 with errno EINVAL/ENAMETOOLONG. */
int endpoint_parse_listen(const char *s, struct endpoint *ep);

/*
 * Starts a non-blocking connect (O_CLOEXEC). Returns the descriptor; the
 * connection may still be in progress (poll for POLLOUT, then read
 * SO_ERROR). -1/errno on immediate failure. For EP_HVSOCK this connects to
 * the Unix socket only.
 */
int endpoint_connect(const struct endpoint *ep);

/*
 * Creates a non-blocking, close-on-exec listening socket. A stale socket
 * file at a unix: path is replaced (only if it is a socket). -1/errno.
 */
int endpoint_listen(const struct endpoint *ep);

#endif
