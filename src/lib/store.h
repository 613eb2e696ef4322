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
 * Why store_lock() failed, from s and the errno it left (err): the one
 * reading of a failed lock, which vfstore, the libvirt hook and
 * resources-report each turn into their own message and exit code (in
 * brackets, vfstore's). s->unavailable comes first: its errno is
 * stat()'s, never EWOULDBLOCK.
 */
enum store_lock_failure {
	STORE_LOCK_UNAVAILABLE,		/* DATA_DIR/gpu missing (69) */
	STORE_LOCK_TIMEOUT,		/* EWOULDBLOCK: the wait ran out (75) */
	STORE_LOCK_DENIED,		/* EACCES, EPERM: not the store's
					   owner, SPEC 7.2 (77) */
	STORE_LOCK_ERROR		/* another errno (74) */
};
enum store_lock_failure store_lock_failure(const struct store *s, int err);

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
 * Loads the document at path (noun for the messages) with
 * parse(text, len, dst, why, whylen): 1 when loaded, 0 when the file
 * does not exist (dst as parse leaves it untouched: the caller zeroed
 * it), -1 with s->why naming the file (store_read's and
 * store_load_failed's rules). The drains' and the suspects' loader.
 */
int store_load_doc(struct store *s, const char *path, const char *noun,
    int (*parse)(const char *, size_t, void *, char *, size_t), void *dst);

/* The index of vf among the n elements of size sz at v, sorted by the
 * VF address each begins with, or of where it would go (*found false). */
size_t store_vf_index(const void *v, size_t n, size_t sz, const char *vf,
    bool *found);

/* s->why as "PATH: why", unless it names path already: the drains' and
 * the suspects' loaders and savers name their file (SPEC 6.3). */
void store_name_file(struct store *s, const char *path);

/*
 * The validation of a VF-keyed list just decoded (vf-drain.json,
 * vf-suspect.json): n elements of size sz at v, each beginning with its
 * char vf[VF_ADDR_LEN + 1]; addrs[i] the address read for element i.
 * check(element, addr, dup, i, why, whylen) judges one (dup: another
 * element has the same address) and returns 0 or -1 with why set; then
 * the address is copied into the element, and v is sorted by it. 0, or
 * -1 (why set, or ENOMEM).
 */
int store_validate_vfs(void *v, size_t n, size_t sz, const char **addrs,
    int (*check)(const void *, const char *, bool, size_t, char *, size_t),
    char *why, size_t whylen);

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
