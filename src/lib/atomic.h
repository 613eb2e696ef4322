/*
 * atomic.h - atomic, durable replacement of a file.
 *
 * Sequence: mkdir the file's directory if needed, fsync that directory's
 * parent (on the file's first write only), unlink a stale PATH.tmp,
 * create PATH.tmp with O_EXCL|O_NOFOLLOW, write, fsync, close, rename
 * over PATH, fsync the directory. A failure before the rename leaves the
 * previous PATH untouched (and removes the temporary file); a failure of
 * the final directory fsync leaves the complete new PATH in place.
 */
#ifndef VFS_ATOMIC_H
#define VFS_ATOMIC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct atomic_result {
	const char *step;	/* static name of the failed step, or NULL */
	bool renamed;		/* the new contents are at PATH */
};

/*
 * Replaces path with len bytes of buf, mode (after fchmod, so the umask
 * does not apply). 0, or -1 with errno and res->step set to one of
 * "create dir", "sync parent dir", "remove stale temp", "create temp",
 * "write", "sync", "close", "rename", "sync dir".
 */
int atomic_write(const char *path, const void *buf, size_t len, mode_t mode,
    struct atomic_result *res);

/*
 * atomic_write() of name (no '/') in the directory dirfd, which the
 * caller has opened and checked: nothing is looked up by path, so a
 * directory swapped for a link meanwhile cannot redirect the write. No
 * directory is created and no parent synced; the steps as above from
 * "remove stale temp".
 */
int atomic_write_at(int dirfd, const char *name, const void *buf, size_t len,
    mode_t mode, struct atomic_result *res);

/* fsync(2) of a directory (a rename or creation in it is durable).
 * 0 or -1/errno. */
int atomic_sync_dir(const char *dir);

#endif
