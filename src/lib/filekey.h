/*
 * filekey.h - is this file still the one a cached load came from.
 *
 * A program that keeps what it loaded from a file (vfstore apply's three
 * stores, sentinel-poll's ledger in the opener) loads it again only when
 * the file changed. The store's files are only ever replaced by rename,
 * so a new version is a new inode or new times; the key is what stat(2)
 * says of the path: device, inode, size, mtime and ctime, or "missing"
 * (ENOENT), which is a key too.
 *
 * Inode numbers are reused and timestamps are coarse (one kernel tick),
 * so an equal key only proves the content unchanged once the file is
 * older than FILEKEY_YOUNG_MS (its ctime against the realtime clock, in
 * either direction, so that a clock step is no reason to trust): a
 * younger one is simply loaded again.
 *
 *	if (filekey_unchanged(&c, path))
 *		return;			(the load still holds)
 *	... drop the old load, load again (success or not) ...
 *	filekey_loaded(&c, path);	(only where the new load is kept)
 *
 * Nothing here prints or exits; nothing is allocated.
 */
#ifndef VFS_FILEKEY_H
#define VFS_FILEKEY_H

#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#define FILEKEY_YOUNG_MS 100	/* a file changed this recently is re-read */

/* The identity of a file as stat(2) saw it. */
struct filekey {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	struct timespec ctime;
	bool missing;			/* ENOENT; the rest is 0 */
};

/* What a cached load knows of its file; all 0 is "nothing loaded". */
struct filekey_cache {
	struct filekey key;		/* the file the load came from */
	struct filekey before;		/* read before the load under way */
	bool valid;			/* the load may be kept */
};

/* The key of path now. 0 (a missing file too), or -1 with errno and k
 * all 0. */
int filekey_read(const char *path, struct filekey *k);

/* True when a and b are the same version of a file (or both missing). */
bool filekey_same(const struct filekey *a, const struct filekey *b);

/* True when k is old enough to prove the content unchanged (a missing
 * file always is). */
bool filekey_trusted(const struct filekey *k);

/*
 * True when c holds a load of path that still holds: valid, path's key
 * the same and trusted. Otherwise false, c no longer valid, and the key
 * read now kept for filekey_loaded().
 */
bool filekey_unchanged(struct filekey_cache *c, const char *path);

/* After a load begun when filekey_unchanged() said false: the load is
 * valid when path did not change while it was read. */
void filekey_loaded(struct filekey_cache *c, const char *path);

/* What the caller just wrote to path (under its lock) is the load: valid
 * when path's key could be read; trust is asked at the next
 * filekey_unchanged(). */
void filekey_written(struct filekey_cache *c, const char *path);

#endif
