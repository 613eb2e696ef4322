/*
 * lock.h - flock(2) with a timeout.
 */
#ifndef VFS_LOCK_H
#define VFS_LOCK_H

#include <stdbool.h>

/*
 * Opens (creating, mode 0644, O_NOFOLLOW) path and takes an exclusive or
 * shared flock, waiting at most timeout_s seconds. Returns the descriptor,
 * or -1: errno EWOULDBLOCK means the lock stayed busy ("temporary
 * failure", exit 75); any other errno is an error opening the file.
 */
int lock_acquire(const char *path, bool exclusive, unsigned timeout_s);

/* Closes the descriptor, which releases the lock. -1 is ignored. */
void lock_release(int fd);

#endif
