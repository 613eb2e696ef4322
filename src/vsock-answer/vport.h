/*
 * vport.h - vsock-answer on a virtio-serial port (SPEC.md 6.1): one
 * stream to one host, one request line and its reply line at a time.
 *
 * The port is DEV/virtio-ports/NAME where udev made it, else the
 * DEV/vportNpM whose SYSFS/sys/class/virtio-ports/vportNpM/name is NAME,
 * or a device path given directly. It is opened non-blocking. While no
 * host is connected the kernel's read returns end-of-file at once, its
 * poll reports POLLIN|POLLHUP without end, and a write would wait: the
 * port is then left out of the poll set and read again every
 * VPORT_RECHECK_MS (never a spin), a partial request and an unsent reply
 * are dropped, and a host that comes back is served again. A port that
 * does not exist (yet) or cannot be opened is looked for every
 * VPORT_RETRY_MS. A partial request older than VPORT_PARTIAL_MS is
 * dropped; a line over request_max bytes gets the reply to its first
 * bytes (a bad request) and the rest of it is skipped.
 *
 * Program-side: it logs (log.h) what the host and the port do.
 *
 *	vport_init(&v, spec, sysfs_root, dev_dir, request_max, fn, ctx);
 *	loop: vport_poll_fill(&v, &pfd, &until); ppoll(...);
 *	      vport_service(&v, pfd.revents);
 *	vport_release(&v);
 */
#ifndef VSOCK_ANSWER_VPORT_H
#define VSOCK_ANSWER_VPORT_H

#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

#include "lineserv.h"

#define VPORT_RECHECK_MS 200		/* no host: read again so often */
#define VPORT_RETRY_MS 1000		/* no port: look again so often */
#define VPORT_PARTIAL_MS 5000		/* a partial request lives so long */

struct vport {
	const char *spec;		/* borrowed: NAME or /PATH */
	const char *sysfs_root, *dev_dir;	/* borrowed */
	char path[PATH_MAX];		/* the device, once found */
	int fd;				/* -1 while not open */
	bool host;			/* a host was there at the last read */
	bool missing_told;		/* "port not found" logged */
	bool skipping;			/* inside an over-long request */
	char *buf;			/* owned, request_max + 1 */
	size_t len, request_max;
	long long partial_at;		/* when buf's first byte came */
	struct lineserv_reply *out;	/* a reference while replying */
	size_t off;
	long long retry_at;		/* io_now_ms() of the next look */
	lineserv_answer_fn *respond;
	void *ctx;
	unsigned long served;		/* requests answered */
};

/* 0, or -1/ENOMEM. The port is looked for at the first service. */
int vport_init(struct vport *v, const char *spec, const char *sysfs_root,
    const char *dev_dir, size_t request_max, lineserv_answer_fn *fn,
    void *ctx);

/* The port's poll entry (fd -1 when it is not to be polled); lowers
 * *until to the port's next timer. */
void vport_poll_fill(const struct vport *v, struct pollfd *pfd,
    long long *until);

/* Handles the port's poll result and timers. */
void vport_service(struct vport *v, short revents);

void vport_release(struct vport *v);

#endif
