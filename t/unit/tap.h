/*
 * tap.h - the smallest TAP producer for the C unit tests.
 *
 *	ok(cond, "name %d", i);   is_str(got, want, "name");   done_testing();
 *	tap_tmpdir(dir, sizeof(dir), "name");   ...   tap_rmtree(dir);
 *	tap_sh(dir, "mkdir -p %s", rel);
 */
#ifndef VFS_TAP_H
#define VFS_TAP_H

#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_failed;

static inline int
tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!cond)
		tap_failed++;
	return cond;
}

#define ok(...) tap_ok(__VA_ARGS__)

static inline int
is_str(const char *got, const char *want, const char *name)
{
	int same = got != NULL && want != NULL && strcmp(got, want) == 0;

	if (!tap_ok(same, "%s", name))
		printf("#   got:  \"%s\"\n#   want: \"%s\"\n",
		    got ? got : "(null)", want ? want : "(null)");
	return same;
}

/* The first 8 KiB of a file (a small test output), in a static buffer,
 * or NULL when it cannot be opened. */
static inline char *
tap_slurp(const char *path)
{
	static char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n;

	if (f == NULL)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* tap_tmpdir(buf, size, name): a new directory for the test's files,
 * $TMPDIR/vfs-unit-NAME-XXXXXX (/tmp where TMPDIR is unset or empty), its
 * path in buf. Without it there is nothing to test: bails out, exit 1. */
static inline char *
tap_tmpdir(char *buf, size_t size, const char *name)
{
	const char *tmp = getenv("TMPDIR");
	int n;

	n = snprintf(buf, size, "%s/vfs-unit-%s-XXXXXX",
	    tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp", name);
	if (n < 0 || (size_t)n >= size || mkdtemp(buf) == NULL) {
		printf("Bail out! no temp dir for %s\n", name);
		exit(1);
	}
	return buf;
}

/* tap_sh(dir, fmt, ...): runs the shell command fmt in dir (a fake
 * sysfs or /proc, a store); without it there is nothing to test: bails
 * out, exit 1. */
static inline void __attribute__((format(printf, 2, 3)))
tap_sh(const char *dir, const char *fmt, ...)
{
	char cmd[16384], body[12288];
	va_list ap;
	int n, m;

	va_start(ap, fmt);
	n = vsnprintf(body, sizeof(body), fmt, ap);
	va_end(ap);
	m = snprintf(cmd, sizeof(cmd), "cd '%s' && %s", dir, body);
	if (n < 0 || (size_t)n >= sizeof(body) || m < 0 ||
	    (size_t)m >= sizeof(cmd) || system(cmd) != 0) {
		printf("Bail out! %s\n", cmd);
		exit(1);
	}
}

static inline int
tap_rm_one(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* tap_rmtree(dir): removes dir and all under it, links not followed
 * (the end of a tap_tmpdir). A failure is a failed test, since it
 * leaves files behind. */
static inline void
tap_rmtree(const char *dir)
{
	if (nftw(dir, tap_rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
		ok(0, "remove %s", dir);
}

static inline int
done_testing(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed != 0;
}

#endif
