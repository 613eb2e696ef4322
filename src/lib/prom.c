/*
 * prom.c - Prometheus text exposition for node_exporter's textfile
 * collector, which rejects a whole file for one bad line: so no
 * timestamps, HELP/TYPE once per family, escaped label values and HELP
 * text, and a final newline.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic.h"
#include "io.h"
#include "obuf.h"
#include "prom.h"

/* Temporary files are BASE.tmp.XXXXXX: never *.prom, which the textfile
 * collector would read. */
#define TEMP_TAG ".tmp"

void
prom_init(struct prom *p)
{
	memset(p, 0, sizeof(*p));
}

void
prom_release(struct prom *p)
{
	obuf_release(&p->out);
}

static void
append(struct prom *p, const char *s, size_t n)
{
	obuf_put(&p->out, s, n);
}

static void
puts_p(struct prom *p, const char *s)
{
	obuf_str(&p->out, s);
}

/* Appends s with \\, \n and (in label values) \" escaped. */
static void
escaped(struct prom *p, const char *s, int quote)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			puts_p(p, "\\\\");
		else if (*s == '\n')
			puts_p(p, "\\n");
		else if (*s == '"' && quote)
			puts_p(p, "\\\"");
		else
			append(p, s, 1);
	}
}

void
prom_family(struct prom *p, const char *name, const char *type,
    const char *help)
{
	puts_p(p, "# HELP ");
	puts_p(p, name);
	puts_p(p, " ");
	escaped(p, help, 0);
	puts_p(p, "\n# TYPE ");
	puts_p(p, name);
	puts_p(p, " ");
	puts_p(p, type);
	puts_p(p, "\n");
}

void
prom_sample(struct prom *p, const char *name, const char **labels,
    double value)
{
	char num[64];
	size_t i;

	puts_p(p, name);
	for (i = 0; labels != NULL && labels[i] != NULL; i += 2) {
		puts_p(p, i == 0 ? "{" : ",");
		puts_p(p, labels[i]);
		puts_p(p, "=\"");
		escaped(p, labels[i + 1], 1);
		puts_p(p, "\"");
	}
	if (labels != NULL && labels[0] != NULL)
		puts_p(p, "}");
	(void)snprintf(num, sizeof(num), " %.17g\n", value);
	puts_p(p, num);
}

const char *
prom_finish(struct prom *p, size_t *len)
{
	if (p->out.p == NULL)
		puts_p(p, "");
	if (p->out.failed) {
		errno = ENOMEM;
		return NULL;
	}
	*len = p->out.len;
	return p->out.p;
}

/* Splits path into its directory and its last component. */
static int
split_path(const char *path, char *dir, size_t len, const char **base)
{
	const char *slash = strrchr(path, '/');
	size_t n;

	*base = slash != NULL ? slash + 1 : path;
	n = slash == NULL ? 0 : slash == path ? 1 : (size_t)(slash - path);
	if (n >= len || **base == '\0') {
		errno = n >= len ? ENAMETOOLONG : EISDIR;
		return -1;
	}
	if (n == 0)
		(void)snprintf(dir, len, ".");
	else
		(void)snprintf(dir, len, "%.*s", (int)n, path);
	return 0;
}

/* True for BASE.tmp (what older versions wrote) and BASE.tmp.XXXXXX. */
static bool
is_temp_of(const char *name, const char *base)
{
	size_t n = strlen(base), t = sizeof(TEMP_TAG) - 1;

	if (strncmp(name, base, n) != 0 || strncmp(name + n, TEMP_TAG, t) != 0)
		return false;
	return name[n + t] == '\0' || name[n + t] == '.';
}

/*
 * Removes the temporary file name of dfd if no writer holds it: a live
 * writer keeps an exclusive flock(2) on its temporary file from before
 * anyone can take it for stale until after its rename, and the kernel
 * drops that lock when the writer dies, however it dies.
 */
static void
remove_if_stale(int dfd, const char *name)
{
	struct stat a, b;
	int fd;

	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
	if (fd < 0)
		return;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &a) == 0 &&
	    S_ISREG(a.st_mode) &&
	    fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		(void)unlinkat(dfd, name, 0);
	close(fd);
}

/* Best effort: what a killed writer of base left in dir goes. */
static void
remove_stale_temps(const char *dir, const char *base)
{
	struct dirent *e;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL)
		if (is_temp_of(e->d_name, base))
			remove_if_stale(dirfd(d), e->d_name);
	closedir(d);
}

/*
 * A new temporary file path.tmp.XXXXXX, locked. A cleaner may have taken
 * it for a dead writer's in the instant between mkostemp and flock: it
 * unlinks only while holding the lock, so once we hold it the name is
 * still ours or gone, and gone means start again.
 */
static int
temp_create(const char *path, char *tmp, size_t len)
{
	struct stat a, b;
	int fd, i, saved;

	for (i = 0; i < 8; i++) {
		if (io_pathf(tmp, len, "%s" TEMP_TAG ".XXXXXX", path) < 0)
			return -1;
		if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0)
			return -1;
		if (flock(fd, LOCK_EX) < 0 || fstat(fd, &a) < 0) {
			saved = errno;
			unlink(tmp);
			close(fd);
			errno = saved;
			return -1;
		}
		if (lstat(tmp, &b) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino)
			return fd;
		close(fd);
	}
	errno = EAGAIN;
	return -1;
}

int
prom_write_textfile(const char *path, const char *text, size_t len)
{
	char dir[PATH_MAX], tmp[PATH_MAX];
	const char *base;
	int fd, saved;

	if (split_path(path, dir, sizeof(dir), &base) < 0 ||
	    io_mkdir_p(dir) < 0)
		return -1;
	remove_stale_temps(dir, base);
	if ((fd = temp_create(path, tmp, sizeof(tmp))) < 0)
		return -1;
	if (fchmod(fd, 0644) < 0 || io_write_all(fd, text, len) < 0 ||
	    fsync(fd) < 0 || rename(tmp, path) < 0) {
		saved = errno;
		unlink(tmp);
		close(fd);
		errno = saved;
		return -1;
	}
	/* Closed (unlocked) only now, after the rename. */
	if (close(fd) < 0)
		return -1;
	return atomic_sync_dir(dir);
}
