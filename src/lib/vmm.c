/*
 * vmm.c - VMM liveness from its control socket (SPEC.md 4.4).
 *
 * The kernel lists every bound Unix socket in /proc/net/unix, one line
 * each (net/unix/af_unix.c, unix_seq_show):
 *
 *	Num       RefCount Protocol Flags    Type St Inode Path
 *	0000000000000000: 00000002 00000000 00010000 0001 01  9983 /run/q.sock
 *
 * Flags 00010000 (__SO_ACCEPTCON) marks a listener; the inode is padded
 * with spaces to five columns; the path is everything after the single
 * space that follows the inode, as bound (it may hold spaces; abstract
 * names start with '@'; an unbound socket has none). The line is there
 * while the listener lives and goes with it, while a VMM killed with
 * SIGKILL leaves its socket file behind. The table shows the reader's
 * network namespace only, so a path it does not list is decided by one
 * connect, which costs a dead socket nothing.
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

#include "io.h"
#include "vmm.h"

const char vmm_why_refused[] = "connect refused";

#define UNIX_ACCEPTCON 0x00010000UL	/* __SO_ACCEPTCON */

void
vmm_listeners_release(struct vmm_listeners *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->paths[i]);
	free(l->paths);
	memset(l, 0, sizeof(*l));
}

/* Skips one blank-separated field and the blanks before it. */
static const char *
skip_field(const char *s)
{
	while (*s == ' ')
		s++;
	while (*s != ' ' && *s != '\0')
		s++;
	return s;
}

/*
 * The path of a listener's line (borrowed from line, its newline cut),
 * or NULL for the header, another socket, an abstract or unbound one.
 */
static const char *
listener_path(char *line)
{
	unsigned long flags;
	const char *s = line;
	char *end;
	int i;

	for (i = 0; i < 3; i++)
		s = skip_field(s);
	flags = strtoul(s, &end, 16);
	if (end == s || *end != ' ' || !(flags & UNIX_ACCEPTCON))
		return NULL;
	s = end;
	for (i = 0; i < 3; i++)
		s = skip_field(s);
	if (s[0] != ' ' || s[1] != '/')
		return NULL;
	line[strcspn(line, "\n")] = '\0';
	return s + 1;
}

static int
listeners_add(struct vmm_listeners *l, const char *path)
{
	char **v;
	size_t cap;

	if (l->n == l->cap) {
		cap = l->cap ? l->cap * 2 : 16;
		if ((v = reallocarray(l->paths, cap, sizeof(*v))) == NULL)
			return -1;
		l->paths = v;
		l->cap = cap;
	}
	if ((l->paths[l->n] = strdup(path)) == NULL)
		return -1;
	l->n++;
	return 0;
}

static int
cmp_path(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads the table from f into l. 0, or -1 with errno. */
static int
listeners_read(struct vmm_listeners *l, FILE *f)
{
	char *line = NULL;
	const char *path;
	size_t size = 0;
	int rc = 0;

	errno = 0;
	while (rc == 0 && getline(&line, &size, f) != -1)
		if ((path = listener_path(line)) != NULL)
			rc = listeners_add(l, path);
	if (rc == 0 && ferror(f)) {
		rc = -1;
		if (errno == 0)
			errno = EIO;
	}
	free(line);
	return rc;
}

int
vmm_listeners_load(struct vmm_listeners *l, const char *proc_root)
{
	char path[PATH_MAX];
	FILE *f;
	int rc, err;

	memset(l, 0, sizeof(*l));
	if (io_pathf(path, sizeof(path), "%s/proc/net/unix", proc_root) < 0)
		return -1;
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	rc = listeners_read(l, f);
	err = errno;
	fclose(f);
	if (rc == -1) {
		vmm_listeners_release(l);
		errno = err;
		return -1;
	}
	if (l->n > 0)
		qsort(l->paths, l->n, sizeof(*l->paths), cmp_path);
	l->loaded = true;
	return 0;
}

bool
vmm_listener_listed(const struct vmm_listeners *l, const char *path)
{
	if (l == NULL || l->n == 0)
		return false;
	return bsearch(&path, l->paths, l->n, sizeof(*l->paths),
	    cmp_path) != NULL;
}

/*
 * Listed under its own spelling, or under the one with symbolic links
 * resolved (a VMM given /run/vm/x for a claim's /var/run/vm/x).
 */
static bool
listed(const struct vmm_listeners *l, const char *path)
{
	char real[PATH_MAX];

	if (vmm_listener_listed(l, path))
		return true;
	return realpath(path, real) != NULL && strcmp(real, path) != 0 &&
	    vmm_listener_listed(l, real);
}

/* One non-blocking connect, closed at once with nothing sent. */
static enum vmm_state
connect_once(const char *path, const char **why)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, rc, err;

	*why = "connect failed";
	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return VMM_UNCERTAIN;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return VMM_UNCERTAIN;
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	err = errno;
	close(fd);
	errno = 0;
	if (rc == 0) {
		*why = "connect accepted";
		return VMM_ALIVE;
	}
	if (err == ECONNREFUSED) {
		*why = vmm_why_refused;
		return VMM_GONE;
	}
	errno = err;
	return VMM_UNCERTAIN;
}

/* The verdict on a socket file whose status is st; dial is the name to
 * connect to when no listener is bound to path. */
static enum vmm_state
judge(const struct vmm_listeners *l, const char *path, const struct stat *st,
    const char *dial, const char **why)
{
	errno = 0;
	if (!S_ISSOCK(st->st_mode)) {
		*why = "not a socket";
		return VMM_UNCERTAIN;
	}
	if (listed(l, path)) {
		errno = 0;
		*why = "listening";
		return VMM_ALIVE;
	}
	return connect_once(dial, why);
}

enum vmm_state
vmm_liveness(const struct vmm_listeners *l, const char *path,
    const char **why)
{
	struct stat st;

	/*
	 * stat(2), not lstat(2): launchers link the VMM's socket into a
	 * place of their own, and a link whose socket was removed (a VMM
	 * that quit cleanly) fails with ENOENT like the socket itself.
	 */
	if (stat(path, &st) == -1) {
		if (errno == ENOENT) {
			errno = 0;
			*why = "no such file";
			return VMM_GONE;
		}
		*why = "stat failed";
		return VMM_UNCERTAIN;
	}
	return judge(l, path, &st, path, why);
}

enum vmm_state
vmm_liveness_fd(const struct vmm_listeners *l, const char *path, int pathfd,
    const char **why)
{
	char proc[64];
	struct stat st;

	if (fstat(pathfd, &st) == -1) {
		*why = "stat failed";
		return VMM_UNCERTAIN;
	}
	/* The descriptor's own file, whatever its name's directories let
	 * this process search. */
	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pathfd);
	return judge(l, path, &st, proc, why);
}

const char *
vmm_state_name(enum vmm_state st)
{
	switch (st) {
	case VMM_ALIVE:
		return "alive";
	case VMM_GONE:
		return "gone";
	case VMM_UNCERTAIN:
		break;
	}
	return "uncertain";
}
