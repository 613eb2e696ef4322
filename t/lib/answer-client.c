/*
 * answer-client - hostile and benchmark clients for vsock-answer tests.
 *
 *	answer-client hold PATH N SECS	open N silent connections; after SECS
 *					print {"opened":N,"closed":K,
 *					"first_close_ms":..,"last_close_ms":..}
 *	answer-client drip PATH MS	send the status request one byte every
 *					MS ms, print the reply
 *	answer-client flood PATH BYTES	send BYTES bytes without a newline as
 *					fast as the server takes them, print
 *					the reply (if any)
 *	answer-client abort PATH N	N connections that close at once and N
 *					that send half a request, then close
 *	answer-client bench PATH SECS K [PREFIX]
 *					K connections in flight, each one
 *					connect, request, reply line, close;
 *					replies must start with PREFIX
 *					(default {"state":); print
 *					{"queries":N,"rate":R,"bad":B}
 *
 * Exit 0 on success, 1 when the server misbehaved (bad reply in bench),
 * 2 on usage or setup errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "io.h"

#define REQUEST "{\"method\":\"GetGPUInitStatus\"}\n"

static const char *want = "{\"state\":";

static const char *sock_path;

static int
dial(int nonblock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC |
	    (nonblock ? SOCK_NONBLOCK : 0), 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
	    errno != EINPROGRESS && errno != EAGAIN) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Reads until EOF (at most len - 1 bytes kept) and prints it. */
static void
print_reply(int fd)
{
	char buf[4096];
	size_t n = 0;
	ssize_t r;

	while (n < sizeof(buf) - 1 &&
	    (r = io_read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)r;
	fwrite(buf, 1, n, stdout);
}

static int
cmd_hold(int n, int secs)
{
	struct pollfd *p = calloc((size_t)n, sizeof(*p));
	long long start = io_now_ms(), first = -1, last = -1;
	int i, opened = 0, closed = 0;
	char c;

	for (i = 0; i < n; i++) {
		p[i].fd = dial(0);
		p[i].events = POLLIN;
		opened += p[i].fd >= 0;
	}
	while (closed < opened && io_now_ms() < start + secs * 1000LL) {
		if (poll(p, (nfds_t)n, 100) <= 0)
			continue;
		for (i = 0; i < n; i++) {
			if (p[i].fd < 0 || p[i].revents == 0 ||
			    read(p[i].fd, &c, 1) > 0)
				continue;
			close(p[i].fd);
			p[i].fd = -1;
			closed++;
			last = io_now_ms() - start;
			first = first < 0 ? last : first;
		}
	}
	printf("{\"opened\":%d,\"closed\":%d,\"first_close_ms\":%lld,"
	    "\"last_close_ms\":%lld}\n", opened, closed, first, last);
	for (i = 0; i < n; i++)
		if (p[i].fd >= 0)
			close(p[i].fd);
	free(p);
	return 0;
}

static int
cmd_drip(int ms)
{
	struct timespec d = { ms / 1000, (ms % 1000) * 1000000L };
	const char *q = REQUEST;
	int fd = dial(0);

	if (fd < 0)
		return 2;
	for (; *q != '\0'; q++) {
		if (write(fd, q, 1) != 1)
			break;
		nanosleep(&d, NULL);
	}
	print_reply(fd);
	close(fd);
	return 0;
}

static int
cmd_flood(long long bytes)
{
	static char junk[65536];
	struct pollfd p;
	long long sent = 0;
	ssize_t n;

	memset(junk, 'x', sizeof(junk));
	p.fd = dial(1);
	p.events = POLLOUT | POLLIN;
	if (p.fd < 0)
		return 2;
	while (sent < bytes && poll(&p, 1, 10000) > 0 &&
	    !(p.revents & (POLLIN | POLLHUP | POLLERR))) {
		n = send(p.fd, junk, (size_t)(bytes - sent) < sizeof(junk) ?
		    (size_t)(bytes - sent) : sizeof(junk), MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN)
			break;
		sent += n > 0 ? n : 0;
	}
	fprintf(stderr, "sent %lld\n", sent);
	io_set_nonblock(p.fd, 0);
	print_reply(p.fd);
	close(p.fd);
	return 0;
}

static int
cmd_abort(int n)
{
	int i, fd;

	for (i = 0; i < n; i++) {
		fd = dial(0);
		if (fd >= 0)
			close(fd);
		fd = dial(0);
		if (fd >= 0 && write(fd, REQUEST, 10) != 10)
			fprintf(stderr, "short write\n");
		if (fd >= 0)
			close(fd);
	}
	return 0;
}

struct slot {
	int fd;
	size_t sent, got;
	char buf[256];
};

/* Starts a new query in slot s. */
static void
slot_start(struct slot *s, struct pollfd *p)
{
	s->fd = dial(1);
	s->sent = s->got = 0;
	p->fd = s->fd;
	p->events = POLLOUT;
}

/* Advances slot s; returns 1 when a query finished, -1 on a bad reply. */
static int
slot_step(struct slot *s, struct pollfd *p)
{
	ssize_t n;

	if (s->fd < 0)
		return -1;
	if (s->sent < sizeof(REQUEST) - 1) {
		n = send(s->fd, REQUEST + s->sent,
		    sizeof(REQUEST) - 1 - s->sent, MSG_NOSIGNAL);
		s->sent += n > 0 ? (size_t)n : 0;
		if (n < 0 && errno != EAGAIN)
			return -1;
		p->events = s->sent < sizeof(REQUEST) - 1 ? POLLOUT : POLLIN;
		return 0;
	}
	n = read(s->fd, s->buf + s->got, sizeof(s->buf) - 1 - s->got);
	if (n < 0 && errno == EAGAIN)
		return 0;
	if (n <= 0)
		return -1;
	s->got += (size_t)n;
	if (memchr(s->buf, '\n', s->got) == NULL)
		return s->got < sizeof(s->buf) - 1 ? 0 : -1;
	return strncmp(s->buf, want, strlen(want)) == 0 ? 1 : -1;
}

static int
cmd_bench(int secs, int k)
{
	struct slot *s = calloc((size_t)k, sizeof(*s));
	struct pollfd *p = calloc((size_t)k, sizeof(*p));
	long long start = io_now_ms(), end = start + secs * 1000LL, done = 0,
	    bad = 0;
	int i, r;

	for (i = 0; i < k; i++)
		slot_start(&s[i], &p[i]);
	while (io_now_ms() < end) {
		if (poll(p, (nfds_t)k, 100) <= 0)
			continue;
		for (i = 0; i < k; i++) {
			if (p[i].revents == 0 && s[i].fd >= 0)
				continue;
			r = slot_step(&s[i], &p[i]);
			if (r == 0)
				continue;
			done += r > 0;
			bad += r < 0;
			if (s[i].fd >= 0)
				close(s[i].fd);
			slot_start(&s[i], &p[i]);
		}
	}
	printf("{\"queries\":%lld,\"rate\":%.0f,\"bad\":%lld}\n", done,
	    done * 1000.0 / (double)(io_now_ms() - start), bad);
	for (i = 0; i < k; i++)
		if (s[i].fd >= 0)
			close(s[i].fd);
	free(s);
	free(p);
	return bad > done / 100 ? 1 : 0;
}

int
main(int argc, char **argv)
{
	struct rlimit rl = { 4096, 4096 };

	signal(SIGPIPE, SIG_IGN);
	(void)setrlimit(RLIMIT_NOFILE, &rl);
	if (argc < 4) {
		fprintf(stderr, "usage: answer-client hold|drip|flood|abort|"
		    "bench PATH ARG [ARG]\n");
		return 2;
	}
	sock_path = argv[2];
	if (strcmp(argv[1], "hold") == 0 && argc == 5)
		return cmd_hold(atoi(argv[3]), atoi(argv[4]));
	if (strcmp(argv[1], "drip") == 0)
		return cmd_drip(atoi(argv[3]));
	if (strcmp(argv[1], "flood") == 0)
		return cmd_flood(atoll(argv[3]));
	if (strcmp(argv[1], "abort") == 0)
		return cmd_abort(atoi(argv[3]));
	if (strcmp(argv[1], "bench") == 0 && argc == 6)
		want = argv[5];
	if (strcmp(argv[1], "bench") == 0 && argc >= 5)
		return cmd_bench(atoi(argv[3]), atoi(argv[4]));
	fprintf(stderr, "answer-client: bad arguments\n");
	return 2;
}
