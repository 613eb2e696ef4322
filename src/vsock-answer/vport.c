/*
 * vport.c - vsock-answer on a virtio-serial port (vport.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
#include "log.h"
#include "vport.h"

int
vport_init(struct vport *v, const char *spec, const char *sysfs_root,
    const char *dev_dir, size_t request_max, lineserv_answer_fn *fn,
    void *ctx)
{
	memset(v, 0, sizeof(*v));
	v->fd = -1;
	v->spec = spec;
	v->sysfs_root = sysfs_root;
	v->dev_dir = dev_dir;
	v->request_max = request_max;
	v->respond = fn;
	v->ctx = ctx;
	v->buf = malloc(request_max + 1);
	return v->buf == NULL ? -1 : 0;
}

/* Whether SYSFS/sys/class/virtio-ports/entry/name holds the port name. */
static bool
name_is(const struct vport *v, const char *entry)
{
	char path[PATH_MAX], name[256];
	FILE *f;
	bool same = false;

	if (snprintf(path, sizeof(path), "%s/sys/class/virtio-ports/%s/name",
	    v->sysfs_root, entry) >= (int)sizeof(path) ||
	    (f = fopen(path, "re")) == NULL)
		return false;
	if (fgets(name, sizeof(name), f) != NULL) {
		name[strcspn(name, "\n")] = '\0';
		same = strcmp(name, v->spec) == 0;
	}
	fclose(f);
	return same;
}

/* The device of port NAME into v->path: udev's link, else by sysfs. */
static bool
find_port(struct vport *v)
{
	char dir[PATH_MAX];
	struct dirent *e;
	DIR *d;
	bool found = false;

	if (snprintf(v->path, sizeof(v->path), "%s/virtio-ports/%s",
	    v->dev_dir, v->spec) < (int)sizeof(v->path) &&
	    access(v->path, F_OK) == 0)
		return true;
	(void)snprintf(dir, sizeof(dir), "%s/sys/class/virtio-ports",
	    v->sysfs_root);
	if ((d = opendir(dir)) == NULL)
		return false;
	while (!found && (e = readdir(d)) != NULL)
		found = e->d_name[0] != '.' && name_is(v, e->d_name) &&
		    snprintf(v->path, sizeof(v->path), "%s/%s", v->dev_dir,
		    e->d_name) < (int)sizeof(v->path);
	closedir(d);
	return found;
}

/* Finds and opens the port; if it cannot, looks again later. */
static void
port_open(struct vport *v)
{
	const char *why = "not found";

	if (v->spec[0] == '/')
		(void)snprintf(v->path, sizeof(v->path), "%s", v->spec);
	if ((v->spec[0] == '/' || find_port(v)) && (v->fd = open(v->path,
	    O_RDWR | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) < 0)
		why = strerror(errno);
	if (v->fd >= 0) {
		log_msg(LVL_INFO, "virtio-serial port open", "{s:s, s:s}",
		    "port", v->spec, "device", v->path);
		v->missing_told = false;
		v->host = false;
		v->retry_at = io_now_ms();
		return;
	}
	if (!v->missing_told)
		log_msg(LVL_WARN, "virtio-serial port not available; waiting",
		    "{s:s, s:s}", "port", v->spec, "error", why);
	v->missing_told = true;
	v->retry_at = io_now_ms() + VPORT_RETRY_MS;
}

/* Forgets the request so far and the reply not yet sent. */
static void
drop_exchange(struct vport *v)
{
	v->len = 0;
	v->skipping = false;
	lineserv_reply_put(v->out);
	v->out = NULL;
}

/* No host now (end of file or hang-up): wait for one, without polling. */
static void
host_gone(struct vport *v)
{
	if (v->host)
		log_msg(LVL_DEBUG, "virtio-serial host gone", "{s:s}", "port",
		    v->spec);
	v->host = false;
	drop_exchange(v);
	v->retry_at = io_now_ms() + VPORT_RECHECK_MS;
}

static void
host_here(struct vport *v)
{
	if (!v->host)
		log_msg(LVL_DEBUG, "virtio-serial host connected", "{s:s}",
		    "port", v->spec);
	v->host = true;
}

/* A read or write error other than "no host": close, open again later. */
static void
port_error(struct vport *v, const char *op)
{
	log_msg(LVL_WARN, "virtio-serial port failed; reopening", "{s:s, s:s, "
	    "s:s}", "port", v->spec, "op", op, "error", strerror(errno));
	close(v->fd);
	v->fd = -1;
	v->host = false;
	drop_exchange(v);
	v->retry_at = io_now_ms() + VPORT_RETRY_MS;
}

/* Sends what is left of the reply; the next request once it is sent. */
static void
send_reply(struct vport *v)
{
	ssize_t n;

	n = write(v->fd, v->out->line + v->off, v->out->len - v->off);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		port_error(v, "write");
		return;
	}
	v->off += (size_t)n;
	if (v->off < v->out->len)
		return;
	lineserv_reply_put(v->out);
	v->out = NULL;
	v->served++;
	log_msg(LVL_DEBUG, "request answered", "{s:s, s:I}", "port", v->spec,
	    "served", (long long)v->served);
}

/* Answers line[0, n) (a trailing CR removed). */
static void
reply_to(struct vport *v, const char *line, size_t n)
{
	if (n > 0 && line[n - 1] == '\r')
		n--;
	v->out = v->respond(v->ctx, line, n);
	v->out->refs++;
	v->off = 0;
}

/* Takes the first whole request of buf (or an over-long one), if any. */
static bool
take_request(struct vport *v)
{
	char *nl = memchr(v->buf, '\n', v->len);
	size_t n;

	if (nl == NULL && v->len <= v->request_max)
		return false;		/* wait for the rest */
	if (nl == NULL) {
		if (!v->skipping)
			reply_to(v, v->buf, v->len);
		v->skipping = true;
		v->len = 0;
		return true;
	}
	n = (size_t)(nl - v->buf);
	if (v->skipping)
		v->skipping = false;
	else
		reply_to(v, v->buf, n);
	v->len -= n + 1;
	memmove(v->buf, nl + 1, v->len);
	v->partial_at = io_now_ms();
	return true;
}

/* Sends the reply under way, then answers the buffered requests, one
 * reply at a time, until a write waits or no whole request is left. */
static void
process(struct vport *v)
{
	for (;;) {
		if (v->out != NULL)
			send_reply(v);
		if (v->out != NULL || v->fd < 0 || v->len == 0 ||
		    !take_request(v))
			return;
	}
}

/* Reads what the host sent; end of file means no host. */
static void
do_read(struct vport *v)
{
	ssize_t n;

	if (v->len > v->request_max)
		return;			/* full while replying: wait */
	n = read(v->fd, v->buf + v->len, v->request_max + 1 - v->len);
	if (n < 0 && errno == EINTR)
		return;
	if (n < 0 && errno == EAGAIN) {
		host_here(v);
		return;
	}
	if (n < 0) {
		port_error(v, "read");
		return;
	}
	if (n == 0) {
		host_gone(v);
		return;
	}
	host_here(v);
	if (v->len == 0)
		v->partial_at = io_now_ms();
	v->len += (size_t)n;
	process(v);
}

void
vport_poll_fill(const struct vport *v, struct pollfd *pfd, long long *until)
{
	*pfd = (struct pollfd){ .fd = -1 };
	if (v->fd < 0 || !v->host) {
		if (v->retry_at < *until)
			*until = v->retry_at;
		return;
	}
	pfd->fd = v->fd;
	pfd->events = v->out != NULL ? POLLOUT : POLLIN;
	if (v->len > 0 && v->partial_at + VPORT_PARTIAL_MS < *until)
		*until = v->partial_at + VPORT_PARTIAL_MS;
}

void
vport_service(struct vport *v, short revents)
{
	long long now = io_now_ms();

	if (v->fd < 0 && now >= v->retry_at)
		port_open(v);
	if (v->fd < 0)
		return;
	if (!v->host && now >= v->retry_at)
		do_read(v);
	else if (v->host && (revents & (POLLHUP | POLLERR)) != 0)
		host_gone(v);
	else if (v->host && v->out != NULL && (revents & POLLOUT) != 0)
		process(v);
	else if (v->host && (revents & POLLIN) != 0)
		do_read(v);
	if (v->len > 0 && v->out == NULL && now - v->partial_at >=
	    VPORT_PARTIAL_MS) {
		log_msg(LVL_DEBUG, "partial request dropped", "{s:s}", "port",
		    v->spec);
		v->len = 0;
	}
}

void
vport_release(struct vport *v)
{
	if (v->fd >= 0)
		close(v->fd);
	v->fd = -1;
	drop_exchange(v);
	free(v->buf);
	v->buf = NULL;
}
