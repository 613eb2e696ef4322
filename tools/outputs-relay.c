/*
 * outputs-relay.c - tools/outputs-compare.sh's tee: copies standard
 * input to standard output and to FILE, and exits as soon as the reader
 * of its standard output goes away or a write to it fails, so that the
 * recorded program sees what it would have seen without the relay (a
 * poll of its standard output reports the error, its next write fails).
 * Usage: outputs-relay FILE
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

static int
put(int fd, const char *p, ssize_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, (size_t)n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= w;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct pollfd p[2] = {{0, POLLIN, 0}, {1, 0, 0}};
	char buf[65536];
	int rec;

	if (argc != 2)
		return 64;
	signal(SIGPIPE, SIG_IGN);
	rec = open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
	for (;;) {
		ssize_t n;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (p[1].revents & (POLLERR | POLLHUP | POLLNVAL))
			return 1;
		if (!(p[0].revents & (POLLIN | POLLHUP)))
			continue;
		n = read(0, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		if (rec >= 0)
			(void)put(rec, buf, n);
		if (put(1, buf, n) < 0)
			return 1;
	}
}
