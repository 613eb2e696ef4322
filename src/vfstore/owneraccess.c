/*
 * owneraccess.c - what the store's owner would meet (SPEC.md 8.5): root
 * reads every file, so root's `vfstore check` said "ok" where the
 * sentinel (the owner of DATA_DIR/gpu) could record nothing. A child
 * with the owner's uid and groups opens each regular file of the store
 * read-write and creates and removes a file in DATA_DIR/gpu; its first
 * failure comes back over a pipe.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "owneraccess.h"

/* The owner's uid, primary group and supplementary groups. 0, or -1. */
static int
become(uid_t uid, gid_t dir_gid)
{
	struct passwd *pw = getpwuid(uid);
	gid_t gid = pw != NULL ? pw->pw_gid : dir_gid;

	if (pw != NULL ? initgroups(pw->pw_name, gid) < 0 :
	    setgroups(0, NULL) < 0)
		return -1;
	return setgid(gid) < 0 || setuid(uid) < 0 ? -1 : 0;
}

/* Opens dir/name read-write (a regular file); 0, or -1 with errno. */
static int
open_rw(int dfd, const char *name)
{
	struct stat st;
	int fd;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	if (!S_ISREG(st.st_mode))
		return 0;		/* not a store file */
	fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
	    O_CLOEXEC);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* The child's test, as the owner: the failing name into *what. */
static int
try_all(const char *dir, const char **what, char *name, size_t len)
{
	struct dirent *e;
	DIR *d;
	int dfd, fd;

	*what = dir;
	if ((d = opendir(dir)) == NULL)
		return -1;
	dfd = dirfd(d);
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || open_rw(dfd, e->d_name) == 0)
			continue;
		(void)snprintf(name, len, "%s/%s", dir, e->d_name);
		*what = name;
		closedir(d);
		return -1;
	}
	(void)snprintf(name, len, ".owner-check.%ld", (long)getpid());
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || close(fd) < 0 || unlinkat(dfd, name, 0) < 0) {
		(void)snprintf(name, len, "%s (creating a file)", dir);
		*what = name;
		closedir(d);
		return -1;
	}
	closedir(d);
	return 0;
}

/* The child: the failure as "ERRNO PATH" on fd w; exit 0 or 1. */
static void
child(const char *dir, uid_t uid, gid_t gid, int w)
{
	char name[OWNERACCESS_WHAT_MAX], line[OWNERACCESS_WHAT_MAX + 32];
	const char *what = "setuid";
	int n;

	if (become(uid, gid) == 0 && try_all(dir, &what, name,
	    sizeof(name)) == 0)
		_exit(0);
	n = snprintf(line, sizeof(line), "%d %s", errno, what);
	if (n > 0 && write(w, line, (size_t)n < sizeof(line) ? (size_t)n :
	    sizeof(line) - 1) < 0)
		_exit(2);
	_exit(1);
}

/* Reads the child's "ERRNO PATH" from r into r->what and r->err. */
static void
read_failure(int fd, struct owneraccess *r)
{
	char line[OWNERACCESS_WHAT_MAX + 32], *sp;
	ssize_t n = read(fd, line, sizeof(line) - 1);

	line[n > 0 ? n : 0] = '\0';
	r->err = (int)strtol(line, &sp, 10);
	(void)snprintf(r->what, sizeof(r->what), "%s", *sp == ' ' ? sp + 1 :
	    "?");
}

int
owneraccess_check(const char *dir, struct owneraccess *r)
{
	struct stat st;
	struct passwd *pw;
	int p[2], status;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	if (stat(dir, &st) < 0)
		return -1;
	r->uid = st.st_uid;
	if ((pw = getpwuid(st.st_uid)) != NULL)
		(void)snprintf(r->owner, sizeof(r->owner), "%s", pw->pw_name);
	else
		(void)snprintf(r->owner, sizeof(r->owner), "%u",
		    (unsigned)st.st_uid);
	if (geteuid() != 0 || st.st_uid == 0)
		return 0;		/* the owner is the caller, or root */
	r->tested = true;
	if (pipe2(p, O_CLOEXEC) < 0 || (pid = fork()) < 0)
		return -1;
	if (pid == 0) {
		close(p[0]);
		child(dir, st.st_uid, st.st_gid, p[1]);
	}
	close(p[1]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			close(p[0]);
			return -1;
		}
	r->ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if (!r->ok)
		read_failure(p[0], r);
	close(p[0]);
	return 0;
}
