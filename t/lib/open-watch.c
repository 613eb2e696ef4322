/*
 * open-watch - tells whether anyone opened a file (SPEC.md 8.3 tests):
 *
 *	open-watch OUT PATH...
 *
 * Watches each PATH (a link is not followed: the link itself) with
 * inotify IN_OPEN and appends "open PATH" to OUT for each open(2) of it,
 * until SIGTERM. When the watches are in place it creates OUT.ready. An
 * O_PATH descriptor reads nothing and calls no driver: the kernel
 * reports no IN_OPEN for it, so what OUT lists is a real open (of a
 * FIFO, a device node, a regular file).
 *
 * Exit 0 on SIGTERM, 2 on usage or setup errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void
on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int
main(int argc, char **argv)
{
	char buf[4096] __attribute__((aligned(8))), ready[4096];
	const struct inotify_event *ev;
	struct sigaction sa = { .sa_handler = on_term };
	int fd, i, wd[64];
	ssize_t n;
	FILE *out;

	if (argc < 3 || argc > 66) {
		fprintf(stderr, "usage: open-watch OUT PATH...\n");
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	if ((fd = inotify_init1(IN_CLOEXEC)) == -1 ||
	    (out = fopen(argv[1], "a")) == NULL)
		return 2;
	for (i = 2; i < argc; i++)
		if ((wd[i - 2] = inotify_add_watch(fd, argv[i],
		    IN_OPEN | IN_DONT_FOLLOW)) == -1) {
			fprintf(stderr, "open-watch: %s: %s\n", argv[i],
			    strerror(errno));
			return 2;
		}
	snprintf(ready, sizeof(ready), "%s.ready", argv[1]);
	fclose(fopen(ready, "w"));
	while (!stop) {
		n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			continue;
		for (ev = (const void *)buf; (const char *)ev < buf + n;
		    ev = (const void *)((const char *)ev + sizeof(*ev) +
		    ev->len))
			for (i = 2; i < argc; i++)
				if (wd[i - 2] == ev->wd)
					fprintf(out, "open %s\n", argv[i]);
		fflush(out);
	}
	fclose(out);
	return 0;
}
