/*
 * io.h - EINTR-safe read/write loops and descriptor helpers.
 */
#ifndef VFS_IO_H
#define VFS_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* read(2) retried on EINTR. */
ssize_t io_read(int fd, void *buf, size_t len);

/* Writes all of buf, retrying on EINTR and short writes. 0 or -1/errno. */
int io_write_all(int fd, const void *buf, size_t len);

/* Sets or clears O_NONBLOCK. 0 or -1/errno. */
int io_set_nonblock(int fd, bool on);

/*
 * Closes fd with errno left as it was (close(2) may change it): for a
 * path that returns the error of an earlier call.
 */
void io_close_keep_errno(int fd);

/*
 * True when the reader of the pipe or socket fd has gone away (poll
 * reports POLLERR or POLLHUP on the write side). Lets an idle program
 * notice that its stdout consumer died without writing to it.
 */
bool io_peer_gone(int fd);

/*
 * The errno of a file that is there but is not a regular file (a FIFO, a
 * directory, a socket, a device). Linux has no EFTYPE; ENOSTR (STREAMS,
 * which no open(2) of a file returns on Linux) stands for it, and
 * io_strerror() names it.
 */
#define IO_ENOTREG ENOSTR

/* strerror(err), but "not a regular file" for IO_ENOTREG. */
const char *io_strerror(int err);

/*
 * Opens path (flags: O_RDONLY, or O_WRONLY with O_APPEND and the like,
 * O_NOFOLLOW where a link must not be followed, O_CREAT with mode;
 * O_CLOEXEC and O_NONBLOCK are added) without ever blocking: a FIFO
 * without a writer would hold an open(2) for ever, a FIFO with one would
 * hand over whatever its writer sends. Refused unless fstat says a
 * regular file: -1 with IO_ENOTREG (also for a FIFO opened for writing
 * without a reader). The descriptor is returned blocking again.
 */
int io_open_regular(const char *path, int flags, mode_t mode);

/* io_open_regular() of path relative to the directory dirfd (openat). */
int io_open_regular_at(int dirfd, const char *path, int flags, mode_t mode);

/*
 * Reads a whole file (at most max bytes) into a new NUL-terminated buffer
 * the caller owns (free()). The buffer is sized by what is read (the
 * size fstat reports, grown by doubling for files that do not know
 * theirs), never by max, so a program runs under a memory cap
 * (chpst -m). NULL/errno on error: EFBIG when larger than max, ENOMEM
 * when the buffer cannot be had, ELOOP when path is a symbolic link
 * (state files are never followed), IO_ENOTREG when path is not a
 * regular file (opened without blocking: io_open_regular()).
 */
char *io_slurp(const char *path, size_t max, size_t *len);

/* io_slurp() of path relative to the directory dirfd (openat). */
char *io_slurp_at(int dirfd, const char *path, size_t max, size_t *len);

/*
 * Reads the first line of a small attribute file (sysfs, /proc) into buf,
 * trailing whitespace trimmed. 0 or -1/errno (ENAMETOOLONG if it did not
 * fit).
 */
int io_read_attr(const char *path, char *buf, size_t len);

/*
 * mkdir -p: creates dir and any missing ancestors, mode 0755 whatever the
 * umask (a umask of 077 from chpst or an operator's shell would lock out
 * readers running as another user); existing directories are left as
 * they are. 0 (also when dir exists) or -1/errno.
 */
int io_mkdir_p(const char *dir);

/*
 * Fits want descriptors plus spare ones (stdio, logs, listeners) under
 * the soft limit of open files, raising it toward the hard limit when
 * needed. Returns want when they fit (or the limit cannot be read),
 * else how many fit beside the spare ones: 0 when not even those do.
 */
size_t io_fd_limit_fit(size_t want, size_t spare);

/*
 * snprintf(3) into buf for a path: 0, or -1 with errno ENAMETOOLONG when
 * it did not fit (buf then holds a cut string).
 */
int io_pathf(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Monotonic clock in milliseconds. */
long long io_now_ms(void);

#endif
