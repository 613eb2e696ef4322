/*
 * textfile-race - test aid: writers and a reader racing on one metrics
 * textfile, the way node_exporter's collector reads it (no lock).
 *
 * usage: textfile-race write PATH FILE SECONDS
 *	rewrites PATH with FILE's bytes through prom_write_textfile() as
 *	fast as it can for SECONDS (at least once); prints "writes N failed M"; exits 1 if
 *	a write failed.
 * usage: textfile-race read PATH DIR STOPFILE
 *	reads PATH whole, again and again, until STOPFILE exists, and
 *	keeps one copy of every distinct content it saw as DIR/v-HASH;
 *	prints "reads N missing M gone G distinct K" (missing: PATH did
 *	not exist yet; gone: it did not exist after a read had found it).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io.h"
#include "prom.h"

#define DISTINCT_MAX 4096

static int
do_write(const char *path, const char *file, const char *secs)
{
	long long end = io_now_ms() + atoll(secs) * 1000;
	unsigned long n = 0, failed = 0;
	size_t len;
	char *text;

	if ((text = io_slurp(file, 1 << 20, &len)) == NULL) {
		perror(file);
		return 71;
	}
	do {
		if (prom_write_textfile(path, text, len) < 0) {
			if (failed == 0)
				perror("prom_write_textfile");
			failed++;
		}
		n++;
	} while (io_now_ms() < end);
	free(text);
	printf("writes %lu failed %lu\n", n, failed);
	return failed == 0 ? 0 : 1;
}

/* The whole file in buf (grown as needed); -1 when it cannot be opened. */
static ssize_t
read_whole(const char *path, char **buf, size_t *cap)
{
	size_t n = 0;
	ssize_t r;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	for (;;) {
		if (n == *cap) {
			*cap = *cap ? *cap * 2 : 4096;
			if ((*buf = realloc(*buf, *cap)) == NULL)
				abort();
		}
		if ((r = io_read(fd, *buf + n, *cap - n)) <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	return (ssize_t)n;
}

static uint64_t
fnv1a(const char *p, size_t n)
{
	uint64_t h = 14695981039346656037ull;

	while (n-- > 0)
		h = (h ^ (unsigned char)*p++) * 1099511628211ull;
	return h;
}

static void
keep(const char *dir, uint64_t h, const char *buf, size_t n)
{
	char name[4096];
	FILE *f;

	snprintf(name, sizeof(name), "%s/v-%016llx", dir,
	    (unsigned long long)h);
	if ((f = fopen(name, "w")) == NULL || fwrite(buf, 1, n, f) != n ||
	    fclose(f) != 0) {
		perror(name);
		exit(71);
	}
}

static int
do_read(const char *path, const char *dir, const char *stop)
{
	static uint64_t seen[DISTINCT_MAX];
	unsigned long reads = 0, missing = 0, gone = 0;
	size_t nseen = 0, cap = 0, i;
	char *buf = NULL;
	ssize_t n;
	uint64_t h;

	while (access(stop, F_OK) != 0) {
		if ((n = read_whole(path, &buf, &cap)) < 0) {
			if (reads > 0)
				gone++;
			else
				missing++;
			continue;
		}
		reads++;
		h = fnv1a(buf, (size_t)n);
		for (i = 0; i < nseen && seen[i] != h; i++)
			;
		if (i == nseen && nseen < DISTINCT_MAX) {
			seen[nseen++] = h;
			keep(dir, h, buf, (size_t)n);
		}
	}
	free(buf);
	printf("reads %lu missing %lu gone %lu distinct %zu\n", reads,
	    missing, gone, nseen);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "write") == 0)
		return do_write(argv[2], argv[3], argv[4]);
	if (argc == 5 && strcmp(argv[1], "read") == 0)
		return do_read(argv[2], argv[3], argv[4]);
	fputs("usage: textfile-race write PATH FILE SECONDS\n"
	    "       textfile-race read PATH DIR STOPFILE\n", stderr);
	return 64;
}
