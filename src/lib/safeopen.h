/*
 * safeopen.h - opening a path that someone else chose (SPEC.md 8.3): a
 * claim's console log or channel socket, written into vf-claims.json by
 * the service user or into a domain's XML by its author.
 *
 * Merely opening some files acts: a watchdog device arms (and resets the
 * host when nobody feeds it), a tape rewinds, a FIFO blocks or hands over
 * what its writer sends. So nothing here open(2)s a name for reading:
 * the name is resolved to an O_PATH descriptor, which calls no driver and
 * reads nothing, its type is checked with fstat(2), and only a regular
 * file is opened, through /proc/self/fd/N of that very descriptor, so a
 * name swapped between the check and the open changes nothing. A socket
 * is connected the same way. With openat2(2), no link is followed in any
 * component (RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS), and below a
 * directory descriptor nothing escapes it (RESOLVE_BENEATH).
 *
 * Nothing here prints. Errors are -1 with errno: IO_ENOTREG (io.h) for a
 * file of another kind, ELOOP for a link on the way, EXDEV for a path
 * that leaves the directory.
 */
#ifndef VFS_SAFEOPEN_H
#define VFS_SAFEOPEN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* How safeopen_path() resolves. */
enum safeopen_links {
	SAFEOPEN_FOLLOW,	/* links followed, as the caller's own open
				 * would (a plain user's: it could anyway) */
	SAFEOPEN_NO_LINKS	/* no link in any component: ELOOP */
};

/*
 * An O_PATH descriptor (O_CLOEXEC) of path, relative to dirfd (AT_FDCWD
 * or a directory). A dirfd other than AT_FDCWD keeps the resolution
 * beneath it (path relative, no "..", no absolute link: EXDEV). The
 * caller owns the descriptor; -1/errno.
 */
int safeopen_path(int dirfd, const char *path, enum safeopen_links links);

/*
 * Opens the file that pathfd (O_PATH) names for reading, O_RDONLY |
 * O_NONBLOCK | O_NOCTTY | O_CLOEXEC, when fstat says a regular file,
 * and checks again that what was opened is that file. st gets its
 * status. The caller owns the descriptor; -1/errno (IO_ENOTREG).
 */
int safeopen_reopen(int pathfd, struct stat *st);

/*
 * safeopen_path() then safeopen_reopen(): the regular file at path, or
 * -1/errno (IO_ENOTREG for a FIFO, device, socket or directory, ELOOP
 * for a link with SAFEOPEN_NO_LINKS).
 */
int safeopen_file(int dirfd, const char *path, enum safeopen_links links,
    struct stat *st);

/* As safeopen_file(AT_FDCWD, path, SAFEOPEN_NO_LINKS, st): how a root
 * process opens a claim's path. */
int safeopen_regular(const char *path, struct stat *st);

/*
 * Starts a non-blocking connect (SOCK_STREAM, O_CLOEXEC) to the Unix
 * socket that pathfd (O_PATH) names, checked with fstat to be a socket,
 * through /proc/self/fd/N. The descriptor (the connection may be in
 * progress), or -1/errno (IO_ENOTREG: not a socket).
 */
int safeopen_connect(int pathfd);

/*
 * Reads the end of the regular file fd (status st): the bytes from
 * offset to its end, but at most the last max of them, into a new
 * NUL-terminated buffer the caller frees; *from gets the offset of its
 * first byte. An offset past the end reads nothing. The buffer is sized
 * by what is there, never more than max + 1 bytes. NULL/errno.
 */
char *safeopen_read_tail(int fd, const struct stat *st,
    unsigned long long offset, size_t max, size_t *len,
    unsigned long long *from);

#endif
