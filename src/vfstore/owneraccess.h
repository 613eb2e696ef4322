/*
 * owneraccess.h - can the store's owner use the store (SPEC.md 8.5)?
 * For root's `vfstore check` (check.c); the library part of nothing else.
 */
#ifndef VFS_OWNERACCESS_H
#define VFS_OWNERACCESS_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#define OWNERACCESS_WHAT_MAX (PATH_MAX + 32)

struct owneraccess {
	uid_t uid;			/* the owner of DATA_DIR/gpu */
	char owner[64];			/* its name, or its number */
	bool tested;			/* a child tried as the owner (the
					 * caller is root, the owner not) */
	bool ok;			/* it could use every file */
	int err;			/* its first failure's errno */
	char what[OWNERACCESS_WHAT_MAX];	/* and the path */
};

/*
 * As root with a store owned by another user: a child with the owner's
 * uid and groups opens each regular file of dir read-write and creates
 * and removes a file there; r says what it met. Otherwise nothing is
 * tried (r->tested false). 0, or -1 with errno (dir cannot be stat'ed,
 * no pipe or child).
 */
int owneraccess_check(const char *dir, struct owneraccess *r);

#endif
