/*
 * reconcile.c - test aid of t/bench/reconcile.sh.
 *
 *	reconcile hold N READY     open N descriptors on /dev/null, create
 *	                           READY, then wait until killed
 *	reconcile listen DIR L D READY
 *	                           bind L listening Unix sockets DIR/lN (live
 *	                           VMMs) and D sockets DIR/dN that are closed
 *	                           at once, leaving their files (VMMs killed
 *	                           with SIGKILL), create READY, wait
 *	reconcile scan             the reference: one plain scan of every
 *	                           /proc/PID/fd link (opendir, readlink), and
 *	                           print the number of links read
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void
ready(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || close(fd) < 0) {
		perror(path);
		exit(1);
	}
	for (;;)
		pause();
}

static int
hold(long n, const char *path)
{
	long i;

	for (i = 0; i < n; i++)
		if (open("/dev/null", O_RDONLY) < 0) {
			perror("open /dev/null");
			return 1;
		}
	ready(path);
	return 0;
}

static int
bind_one(const char *dir, char kind, long i)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	if (fd < 0 || (size_t)snprintf(sa.sun_path, sizeof(sa.sun_path),
	    "%s/%c%ld", dir, kind, i) >= sizeof(sa.sun_path) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (kind == 'l' && listen(fd, 1) < 0)) {
		perror("socket");
		return -1;
	}
	if (kind == 'd')
		close(fd);
	return 0;
}

static int
listen_all(const char *dir, long live, long dead, const char *path)
{
	long i;

	for (i = 0; i < live; i++)
		if (bind_one(dir, 'l', i) < 0)
			return 1;
	for (i = 0; i < dead; i++)
		if (bind_one(dir, 'd', i) < 0)
			return 1;
	ready(path);
	return 0;
}

static int
scan(void)
{
	char dir[PATH_MAX], path[PATH_MAX * 2], link[PATH_MAX];
	struct dirent *p, *f;
	DIR *pd, *fd;
	long links = 0;

	if ((pd = opendir("/proc")) == NULL)
		return 1;
	while ((p = readdir(pd)) != NULL) {
		if (p->d_name[0] < '1' || p->d_name[0] > '9')
			continue;
		snprintf(dir, sizeof(dir), "/proc/%s/fd", p->d_name);
		if ((fd = opendir(dir)) == NULL)
			continue;
		while ((f = readdir(fd)) != NULL) {
			if (f->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, f->d_name);
			if (readlink(path, link, sizeof(link)) > 0)
				links++;
		}
		closedir(fd);
	}
	closedir(pd);
	printf("%ld\n", links);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "hold") == 0)
		return hold(atol(argv[2]), argv[3]);
	if (argc == 6 && strcmp(argv[1], "listen") == 0)
		return listen_all(argv[2], atol(argv[3]), atol(argv[4]),
		    argv[5]);
	if (argc == 2 && strcmp(argv[1], "scan") == 0)
		return scan();
	fprintf(stderr, "usage: reconcile hold N READY | listen DIR L D "
	    "READY | scan\n");
	return 64;
}
