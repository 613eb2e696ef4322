/*
 * filekey.c - is this file still the one a cached load came from
 * (filekey.h).
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "filekey.h"
#include "timefmt.h"

int
filekey_read(const char *path, struct filekey *k)
{
	struct stat st;

	memset(k, 0, sizeof(*k));
	if (stat(path, &st) < 0) {
		k->missing = errno == ENOENT;
		return k->missing ? 0 : -1;
	}
	k->dev = st.st_dev;
	k->ino = st.st_ino;
	k->size = st.st_size;
	k->mtime = st.st_mtim;
	k->ctime = st.st_ctim;
	return 0;
}

bool
filekey_same(const struct filekey *a, const struct filekey *b)
{
	if (a->missing || b->missing)
		return a->missing == b->missing;
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	    a->mtime.tv_sec == b->mtime.tv_sec &&
	    a->mtime.tv_nsec == b->mtime.tv_nsec &&
	    a->ctime.tv_sec == b->ctime.tv_sec &&
	    a->ctime.tv_nsec == b->ctime.tv_nsec;
}

bool
filekey_trusted(const struct filekey *k)
{
	struct timespec now;
	long long age_ms;

	if (k->missing)
		return true;
	timefmt_now(&now);
	age_ms = (long long)(now.tv_sec - k->ctime.tv_sec) * 1000 +
	    (now.tv_nsec - k->ctime.tv_nsec) / 1000000;
	return age_ms > FILEKEY_YOUNG_MS || age_ms < -FILEKEY_YOUNG_MS;
}

bool
filekey_unchanged(struct filekey_cache *c, const char *path)
{
	if (filekey_read(path, &c->before) == 0 && c->valid &&
	    filekey_same(&c->before, &c->key) && filekey_trusted(&c->before))
		return true;
	c->valid = false;
	return false;
}

void
filekey_loaded(struct filekey_cache *c, const char *path)
{
	/* A version replaced while it was read shows as a key change. */
	c->valid = filekey_read(path, &c->key) == 0 &&
	    filekey_same(&c->before, &c->key);
}

void
filekey_written(struct filekey_cache *c, const char *path)
{
	c->valid = filekey_read(path, &c->key) == 0;
}
