/*
 * store.h - the store under DATA_DIR/gpu (SPEC.md 4.1): its paths, the
 * directory check, `vfstore init`, the lock, and the reading and atomic
 * saving of its files. The documents are modules of their own on top of
 * it: healthfile.h (vf-health.json), claims.h (vf-claims.json), drain.h.
 *
 * Loading is all-or-nothing and strict: any problem makes the store
 * "unavailable" and the caller must fail closed without writing. Saving
 * uses atomic_write(). Nothing here prints; reasons go to s->why.
 */
#ifndef VFS_STORE_H
#define VFS_STORE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include <sys/types.h>
#include <jansson.h>

#include "atomic.h"
#include "vfaddr.h"

#define STORE_STRING_MAX 256		/* instance_id, assigned_at */

struct store {
	char dir[PATH_MAX];		/* DATA_DIR/gpu */
	char health_path[PATH_MAX];
	char claims_path[PATH_MAX];
	char lock_path[PATH_MAX];
	int lock_fd;			/* -1 when not held */
	bool unavailable;		/* the last -1: DATA_DIR/gpu missing */
	bool nomem;			/* the last load's -1: out of memory,
					   an OS error (71), not unavailable */
	char why[1024];			/* reason for the last -1 */
	const char *reading;		/* the file store_read() last read:
					   a load's reason starts with it */
};

/* Fills in the paths. -1/ENAMETOOLONG. */
int store_init(struct store *s, const char *data_dir);

/*
 * Takes the lock. First of all DATA_DIR/gpu must exist: if it is missing
 * (or not a directory) the store is unavailable: -1, s->unavailable set and
 * s->why naming `vfstore init` (caller exits 69); nothing is created. A
 * shared lock on a directory without a lock file holds nothing (nothing to
 * read). Timeout: -1 with errno EWOULDBLOCK (caller exits 75); another
 * failure (creating the lock file) -1 with errno (caller exits 74).
 */
int store_lock(struct store *s, bool exclusive, unsigned timeout_s);
void store_unlock(struct store *s);

/*
 * `vfstore init`: creates DATA_DIR/gpu (mode 0755, its parent fsynced) and
 * the lock file; *created tells whether the directory was new. With uid
 * other than (uid_t)-1 both are given to uid:gid. An existing directory is
 * left as it is (but for the owner). -1 with errno and s->why.
 */
int store_create(struct store *s, uid_t uid, gid_t gid, bool *created);

/*
 * For healthfile.c and claims.c. store_read() resets s->why and s->nomem,
 * checks DATA_DIR/gpu, and reads path into *text (the caller frees it):
 * 1 read, 0 missing (an empty store), -1 with s->why (s->nomem for
 * ENOMEM); a FIFO, directory or other non-regular file is refused
 * without blocking ("read NOUN: not a regular file"). store_load_failed()
 * is the -1 of a load whose parse failed: it sets s->nomem when errno is
 * ENOMEM, and starts s->why with the file's path (SPEC 6.3: every
 * fail-closed reason names the file). store_save_text() writes and frees
 * text (NULL: the dump failed, errno set) atomically: -1 with errno,
 * s->why in upstream's words ("sync VF health state parent dir: ...").
 */
int store_read(struct store *s, const char *path, const char *noun,
    char **text, size_t *len);
int store_load_failed(struct store *s);
int store_save_text(struct store *s, const char *path, char *text,
    size_t len, const char *noun, struct atomic_result *res);

/*
 * Opens a slot at index at of the array v (n elements of size sz, room
 * for *cap; doubled from first when full) by moving the later elements
 * up. Returns the array, perhaps moved (the caller stores it), or
 * NULL/ENOMEM with v unchanged. The sorted inserts of the health records
 * and the claims.
 */
void *store_array_gap(void *v, size_t n, size_t *cap, size_t first,
    size_t sz, size_t at);

#endif
