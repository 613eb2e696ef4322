/*
 * healthcache.c - the seal of vf-health.json (healthcache.h); the
 * one-record view it allows is src/vfstore/healthview.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "healthcache.h"
#include "healthfile.h"
#include "io.h"

/* Fixed width, so that the next save can overwrite it in place. */
#define SEAL_FORMAT "vfsentinel health seal 1 %020zu %016" PRIx64 " %020zu\n"
#define SEAL_MAX 128

/* --- the seal ---------------------------------------------------------- */

/* A 64-bit hash of the bytes, eight at a time: it tells a file that is
 * still what a save wrote from one changed since (an editor, damage). */
static uint64_t
seal_hash(const char *p, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n, w;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, p + i, n - i);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 29);
}

static size_t
open_failures(const struct vf_record *r)
{
	return r == NULL || r->quarantined ? 0 : r->nfailures;
}

void
healthcache_of(struct healthseal *seal, const char *text, size_t len,
    const struct health *h)
{
	size_t i, n;

	seal->size = len;
	seal->hash = seal_hash(text, len);
	seal->open_max = 0;
	for (i = 0; h != NULL && i < h->n; i++)
		if ((n = open_failures(&h->recs[i])) > seal->open_max)
			seal->open_max = n;
}

void
healthcache_update(struct healthseal *seal, const char *text, size_t len,
    const struct vf_record *r)
{
	seal->size = len;
	seal->hash = seal_hash(text, len);
	if (open_failures(r) > seal->open_max)
		seal->open_max = open_failures(r);
}

static int
seal_path(char *buf, size_t len, const char *dir, const char *suffix)
{
	return io_pathf(buf, len, "%s/%s%s", dir, HEALTHSEAL_FILE, suffix);
}

/* Overwrites an existing seal of n bytes: no new inode, no rename, so
 * no wait for the journal after the save's fsyncs. A reader that sees a
 * torn seal sees one that matches nothing. */
static int
overwrite(const char *path, const char *line, size_t n)
{
	struct stat st;
	ssize_t w;
	int fd, saved;

	/* Never blocks: a FIFO without a reader made here would hold the
	 * store lock for ever (SPEC 6.3); create() then replaces it. */
	fd = io_open_regular(path, O_WRONLY | O_NOFOLLOW, 0);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size != n) {
		(void)close(fd);
		errno = EEXIST;
		return -1;
	}
	w = pwrite(fd, line, n, 0);
	saved = errno;
	if (close(fd) < 0 || w != (ssize_t)n) {
		errno = w < 0 ? saved : EIO;
		return -1;
	}
	return 0;
}

/* A first seal (or one of another size): written aside and renamed. */
static int
create(const char *dir, const char *path, const char *line, size_t n)
{
	char tmp[PATH_MAX];
	int fd, rc;

	if (seal_path(tmp, sizeof(tmp), dir, ".tmp") < 0)
		return -1;
	if (unlink(tmp) < 0 && errno != ENOENT)
		return -1;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0644);
	if (fd < 0)
		return -1;
	rc = io_write_all(fd, line, n);
	if (close(fd) < 0 || rc < 0 || rename(tmp, path) < 0) {
		(void)unlink(tmp);
		return -1;
	}
	return 0;
}

int
healthcache_write(const char *dir, const struct healthseal *seal)
{
	char path[PATH_MAX], line[SEAL_MAX];
	int n;

	if (seal_path(path, sizeof(path), dir, "") < 0)
		return -1;
	n = snprintf(line, sizeof(line), SEAL_FORMAT, seal->size, seal->hash,
	    seal->open_max);
	if (n < 0 || (size_t)n >= sizeof(line)) {
		errno = EOVERFLOW;
		return -1;
	}
	if (overwrite(path, line, (size_t)n) == 0)
		return 0;
	return create(dir, path, line, (size_t)n);
}

bool
healthcache_matches(const char *dir, const char *text, size_t len,
    struct healthseal *seal)
{
	char path[PATH_MAX], again[SEAL_MAX], *line;
	size_t n;
	bool ok;

	if (seal_path(path, sizeof(path), dir, "") < 0 ||
	    (line = io_slurp(path, SEAL_MAX, &n)) == NULL)
		return false;
	ok = sscanf(line, "vfsentinel health seal 1 %zu %" SCNx64 " %zu",
	    &seal->size, &seal->hash, &seal->open_max) == 3 &&
	    snprintf(again, sizeof(again), SEAL_FORMAT, seal->size,
	    seal->hash, seal->open_max) == (int)n &&
	    memcmp(again, line, n) == 0;
	free(line);
	return ok && seal->size == len && seal->hash == seal_hash(text, len);
}
