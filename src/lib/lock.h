/*
 * lock.h - flock(2) with a timeout, on lock files only their owners (and
 * the vfsentinel group) can open.
 *
 * flock(2) needs no write access, so anyone who can open a lock file can
 * hold it: a lock readable by every local user lets any of them stop the
 * store (SPEC.md 7.2). A lock file is therefore 0640 with group
 * LOCK_GROUP where that group exists, else 0600; created by root it is
 * given to the owner of its directory (the store's owner), so root's
 * commands never lock the service user out.
 */
#ifndef VFS_LOCK_H
#define VFS_LOCK_H

#include <stdbool.h>
#include <sys/types.h>

#define LOCK_GROUP "vfsentinel"

/*
 * Opens path (creating it with O_EXCL, as above; never following a link
 * and never blocking on a FIFO) and takes an exclusive or shared flock,
 * waiting at most timeout_s seconds. Returns the descriptor, or -1:
 * errno EWOULDBLOCK means the lock stayed busy ("temporary failure",
 * exit 75); EACCES or EPERM that the caller may not open it (exit 77);
 * any other errno is an error opening the file (EINVAL: not a regular
 * file).
 */
int lock_acquire(const char *path, bool exclusive, unsigned timeout_s);

/* lock_acquire() of name in the directory dirfd, which the caller has
 * opened and checked (recovery/). */
int lock_acquire_at(int dirfd, const char *name, bool exclusive,
    unsigned timeout_s);

/*
 * Gives the open lock file fd to uid (unless (uid_t)-1) and sets its
 * group and mode by the rule above (gid when LOCK_GROUP does not exist;
 * (gid_t)-1 keeps it): what `vfstore init` does to an existing lock, a
 * wider one included. 0, or -1 with errno.
 */
int lock_secure(int fd, uid_t uid, gid_t gid);

/* Closes the descriptor, which releases the lock. -1 is ignored. */
void lock_release(int fd);

#endif
