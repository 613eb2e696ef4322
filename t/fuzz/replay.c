/*
 * replay.c - the main() of a fuzz target outside libFuzzer: runs
 * LLVMFuzzerTestOneInput once per file named on the command line, and
 * once per regular file inside a directory named there (in name order,
 * dot files skipped). Prints "replayed N inputs" on stdout and exits 0;
 * a target whose property fails aborts, which is the test failure.
 *
 * Exit codes: 0 all replayed, 66 an argument could not be read, 64 usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

#define REPLAY_MAX (16 * 1024 * 1024)	/* longest input replayed */

/* Reads path whole into a new buffer; -1 on error. */
static int
slurp(const char *path, uint8_t **data, size_t *size)
{
	struct stat st;
	uint8_t *buf = NULL;
	ssize_t n;
	size_t len = 0;
	int fd, rc = -1;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || st.st_size > REPLAY_MAX)
		goto out;
	buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL)
		goto out;
	while ((n = read(fd, buf + len, (size_t)st.st_size - len)) > 0)
		len += (size_t)n;
	if (n < 0)
		goto out;
	*data = buf;
	*size = len;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	close(fd);
	return rc;
}

static int
replay_file(const char *path, unsigned long *count)
{
	uint8_t *data;
	size_t size;

	if (slurp(path, &data, &size) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	LLVMFuzzerTestOneInput(data, size);
	free(data);
	(*count)++;
	return 0;
}

static int
by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int
replay_dir(const char *dir, unsigned long *count)
{
	struct dirent **names;
	char path[4096];
	int i, n, rc = 0;

	n = scandir(dir, &names, NULL, by_name);
	if (n < 0) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.' && rc == 0 &&
		    snprintf(path, sizeof(path), "%s/%s", dir,
		    names[i]->d_name) < (int)sizeof(path))
			rc = replay_file(path, count);
		free(names[i]);
	}
	free(names);
	return rc;
}

int
main(int argc, char **argv)
{
	struct stat st;
	unsigned long count = 0;
	int i, rc;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 64;
	}
	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i],
			    strerror(errno));
			return 66;
		}
		rc = S_ISDIR(st.st_mode) ? replay_dir(argv[i], &count) :
		    replay_file(argv[i], &count);
		if (rc < 0)
			return 66;
	}
	printf("replayed %lu inputs\n", count);
	return 0;
}
