/*
 * vmm.c - unit tests (TAP) for VMM liveness (vmm_listeners_load,
 * vmm_liveness) over a fake PROC/net/unix in a temporary directory and
 * real Unix sockets of this process: listeners, stale socket files (bound,
 * then closed, as a VMM killed with SIGKILL leaves them), a full accept
 * queue, regular files, symbolic links.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "tap.h"
#include "vmm.h"

#define HEADER "Num       RefCount Protocol Flags    Type St Inode Path\n"
#define LISTEN_FMT "0000000000000000: 00000002 00000000 00010000 0001 01 %5d %s\n"

static char root[64];

/* root/rel, in a static buffer (one at a time). */
static const char *
at(const char *rel)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return path;
}

/* A socket bound to path; listening with backlog, or closed when < 0. */
static int
bound(const char *path, int backlog)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
		abort();
	if (backlog < 0) {
		close(fd);
		return -1;
	}
	if (listen(fd, backlog) == -1)
		abort();
	return fd;
}

/* Writes root/proc/net/unix: the header, then text. */
static void
table(const char *text)
{
	FILE *f;

	if ((f = fopen(at("proc/net/unix"), "w")) == NULL)
		abort();
	fputs(HEADER, f);
	fputs(text, f);
	fclose(f);
}

/* Writes a table that lists path as a listener. */
static void
table_listing(const char *path)
{
	char line[PATH_MAX + 128];

	snprintf(line, sizeof(line), LISTEN_FMT, 9983, path);
	table(line);
}

/* The number of connections waiting on listener fd (accepted, closed). */
static int
queued(int fd)
{
	int n = 0, c;

	while ((c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >=
	    0) {
		close(c);
		n++;
	}
	return n;
}

static void
test_parse(void)
{
	struct vmm_listeners l;
	char text[4096];

	snprintf(text, sizeof(text),
	    "0000000000000000: 00000002 00000000 00010000 0001 01  9983 %s\n"
	    "0000000000000001: 00000003 00000000 00000000 0001 03 123456 %s\n"
	    "0000000000000002: 00000002 00000000 00010000 0001 01 77 @%s\n"
	    "0000000000000003: 00000002 00000000 00010000 0005 01 78\n"
	    "0000000000000004: 00000002 00000000 00010000 0001 01 99999999 %s\n"
	    "garbage\n"
	    "0000000000000005: 00000002 00000000 zz 0001 01 79 /x\n"
	    "0000000000000006: 00000002 00000000 00010000 0001 01 80 relative\n",
	    "/run/a.sock", "/run/b.sock", "/run/abstract", "/run/with space");
	table(text);
	ok(vmm_listeners_load(&l, root) == 0 && l.loaded,
	    "a table is loaded");
	ok(l.n == 2, "only listeners bound to absolute paths are kept (%zu)",
	    l.n);
	ok(vmm_listener_listed(&l, "/run/a.sock"),
	    "a listener with a padded inode is listed");
	ok(vmm_listener_listed(&l, "/run/with space"),
	    "a path with a space is listed whole");
	ok(!vmm_listener_listed(&l, "/run/b.sock"),
	    "a connected socket (no 00010000 flag) is no listener");
	ok(!vmm_listener_listed(&l, "/run/abstract") &&
	    !vmm_listener_listed(&l, "@/run/abstract"),
	    "an abstract name is no path");
	ok(!vmm_listener_listed(&l, "/x") && !vmm_listener_listed(&l,
	    "relative"), "bad flags and relative paths are left out");
	vmm_listeners_release(&l);
	ok(l.n == 0 && l.paths == NULL && !l.loaded, "free empties the table");
}

static void
test_load_errors(void)
{
	struct vmm_listeners l;
	char longroot[PATH_MAX + 8];

	errno = 0;
	ok(vmm_listeners_load(&l, "/nonexistent-proc") == -1 &&
	    errno == ENOENT && !l.loaded && l.n == 0,
	    "a missing table is ENOENT and not loaded");
	memset(longroot, 'x', sizeof(longroot) - 1);
	longroot[sizeof(longroot) - 1] = '\0';
	ok(vmm_listeners_load(&l, longroot) == -1 && errno == ENAMETOOLONG,
	    "an over-long proc root is ENAMETOOLONG");
	vmm_listeners_release(&l);
}

/* A table far larger than any fixed buffer: 20,000 listeners. */
static void
test_large(void)
{
	struct vmm_listeners l;
	FILE *f;
	int i;

	if ((f = fopen(at("proc/net/unix"), "w")) == NULL)
		abort();
	fputs(HEADER, f);
	for (i = 0; i < 20000; i++)
		fprintf(f, LISTEN_FMT, i, i == 12345 ? "/run/vm/x.qmp" :
		    "/run/other/some-long-socket-name.sock");
	fclose(f);
	i = vmm_listeners_load(&l, root);
	ok(i == 0 && l.n == 20000, "20,000 listeners are loaded (%zu)", l.n);
	ok(vmm_listener_listed(&l, "/run/vm/x.qmp"),
	    "the one in the middle is found");
	vmm_listeners_release(&l);
}

static void
test_not_sockets(void)
{
	const char *why = NULL;
	FILE *f;

	errno = EINVAL;
	ok(vmm_liveness(NULL, at("missing.sock"), &why) == VMM_GONE &&
	    errno == 0, "a missing path is gone");
	is_str(why, "no such file", "  reason");
	ok(vmm_liveness(NULL, "", &why) == VMM_GONE, "an empty path is gone");
	if ((f = fopen(at("file.sock"), "w")) == NULL)
		abort();
	fclose(f);
	ok(vmm_liveness(NULL, at("file.sock"), &why) == VMM_UNCERTAIN,
	    "a regular file is uncertain");
	is_str(why, "not a socket", "  reason");
	ok(vmm_liveness(NULL, at("proc"), &why) == VMM_UNCERTAIN,
	    "a directory is uncertain");
	ok(vmm_liveness(NULL, at("file.sock/x"), &why) == VMM_UNCERTAIN &&
	    errno == ENOTDIR, "a stat error other than ENOENT is uncertain");
	is_str(why, "stat failed", "  reason");
}

static void
test_listed(void)
{
	struct vmm_listeners l;
	const char *why = NULL;
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s", at("live.sock"));
	fd = bound(path, 1);
	table_listing(path);
	vmm_listeners_load(&l, root);
	ok(vmm_liveness(&l, path, &why) == VMM_ALIVE && errno == 0,
	    "a listed listener is alive");
	is_str(why, "listening", "  reason");
	ok(queued(fd) == 0, "  and was not connected to");
	close(fd);
	vmm_listeners_release(&l);

	/* Listed but dead: the table is trusted, no connect is made. */
	snprintf(path, sizeof(path), "%s", at("listed-stale.sock"));
	bound(path, -1);
	table_listing(path);
	vmm_listeners_load(&l, root);
	ok(vmm_liveness(&l, path, &why) == VMM_ALIVE,
	    "a listed path is alive without a connect (it would be refused)");
	vmm_listeners_release(&l);
}

static void
test_connect(void)
{
	struct vmm_listeners l;
	const char *why = NULL;
	char live[PATH_MAX], stale[PATH_MAX], buf[8];
	int fd, c;

	snprintf(live, sizeof(live), "%s", at("unlisted.sock"));
	snprintf(stale, sizeof(stale), "%s", at("stale.sock"));
	fd = bound(live, 4);
	bound(stale, -1);
	table("");
	vmm_listeners_load(&l, root);
	ok(vmm_liveness(&l, live, &why) == VMM_ALIVE && errno == 0,
	    "an unlisted listener is alive by one connect");
	is_str(why, "connect accepted", "  reason");
	c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	ok(c >= 0 && recv(c, buf, sizeof(buf), 0) == 0,
	    "  one connection, closed with nothing sent");
	if (c >= 0)
		close(c);
	ok(queued(fd) == 0, "  and only one");
	ok(vmm_liveness(&l, stale, &why) == VMM_GONE && errno == 0,
	    "a stale socket file (connect refused) is gone");
	is_str(why, "connect refused", "  reason");
	vmm_listeners_release(&l);
	ok(vmm_liveness(NULL, live, &why) == VMM_ALIVE && queued(fd) == 1,
	    "without a table, a connect decides");
	vmm_listeners_load(&l, "/nonexistent-proc");
	ok(vmm_liveness(&l, stale, &why) == VMM_GONE,
	    "an unreadable table connects too");
	close(fd);
}

/* A listener whose accept queue is full (nobody accepts). */
static void
test_full_queue(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *why = NULL;
	int fd, c, n;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", at("full.sock"));
	fd = bound(sa.sun_path, 0);
	for (n = 0; n < 16; n++) {
		c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
		if (connect(c, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
			close(c);
			break;
		}
	}
	ok(n < 16, "the queue filled after %d connects", n);
	ok(vmm_liveness(NULL, sa.sun_path, &why) == VMM_UNCERTAIN &&
	    errno == EAGAIN, "a full accept queue (EAGAIN) is uncertain");
	is_str(why, "connect failed", "  reason");
	close(fd);
}

static void
test_links(void)
{
	struct vmm_listeners l;
	const char *why = NULL;
	char real[PATH_MAX], via[PATH_MAX];
	int fd;

	if (mkdir(at("real"), 0755) == -1 || symlink("real", at("via")) == -1)
		abort();
	snprintf(real, sizeof(real), "%s", at("real/q.sock"));
	snprintf(via, sizeof(via), "%s", at("via/q.sock"));
	fd = bound(real, 1);
	table_listing(real);
	vmm_listeners_load(&l, root);
	ok(vmm_liveness(&l, via, &why) == VMM_ALIVE && queued(fd) == 0,
	    "a path through a linked directory matches the listener's");
	if (symlink(real, at("link.sock")) == -1)
		abort();
	ok(vmm_liveness(&l, at("link.sock"), &why) == VMM_ALIVE &&
	    queued(fd) == 0,
	    "a symbolic link as the socket itself is followed (SPEC 6.2)");
	if (symlink(at("gone.sock"), at("dangling.sock")) == -1)
		abort();
	ok(vmm_liveness(&l, at("dangling.sock"), &why) == VMM_GONE,
	    "a symbolic link to a removed socket is gone");
	vmm_listeners_release(&l);
	close(fd);
}

int
main(void)
{
	alarm(30);		/* a blocking bug must not hang the suite */
	/* /tmp, not TMPDIR: sun_path is 108 bytes, a long TMPDIR won't fit. */
	snprintf(root, sizeof(root), "/tmp/vmm-unit.XXXXXX");
	if (mkdtemp(root) == NULL || mkdir(at("proc"), 0755) == -1 ||
	    mkdir(at("proc/net"), 0755) == -1)
		abort();
	test_parse();
	test_load_errors();
	test_large();
	test_not_sockets();
	test_listed();
	test_connect();
	test_full_queue();
	test_links();
	is_str(vmm_state_name(VMM_ALIVE), "alive", "state names");
	is_str(vmm_state_name(VMM_UNCERTAIN), "uncertain", "state names");
	tap_rmtree(root);
	return done_testing();
}
