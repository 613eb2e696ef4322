/*
 * grant.c - the sentinel's access to one domain's agent channel (SPEC.md
 * 7.1). On a stock Debian libvirt host QEMU runs as libvirt-qemu and
 * binds the domain's virtio-serial channel socket
 * QEMU_STATE_DIR/channel/target/domain-ID-NAME/org.vfsentinel.0 with mode
 * 0775: connect(2) needs write permission on a socket's inode, so the
 * sentinel's user may not connect. At started begin the hook (root) adds
 * one POSIX ACL entry, user:STORE-OWNER:rw-, to that one socket; release
 * end takes it back where the socket is still there. Nothing else of the
 * domain is opened up: the monitor socket and the console log are reached
 * through the sentinel's CAP_DAC_READ_SEARCH (security.md).
 *
 * A domain's author chooses the channel's path, so the hook grants only a
 * socket at libvirt's own place for this domain's id, reached with
 * O_NOFOLLOW one directory at a time from the state directory: a path
 * elsewhere (another service's socket) or through a link is refused.
 * The ACL is read and written through /proc/self/fd of an O_PATH
 * descriptor, so the checked inode is the one changed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "grant.h"

/* linux/posix_acl_xattr.h: a version-2 header, then entries of a 16-bit
 * tag, 16-bit permissions and a 32-bit id, all little-endian, sorted by
 * tag and then id; MASK is required once a named entry exists. */
#define ACL_XATTR "system.posix_acl_access"
#define ACL_VERSION 2
#define TAG_USER_OBJ 0x01
#define TAG_USER 0x02
#define TAG_GROUP_OBJ 0x04
#define TAG_GROUP 0x08
#define TAG_MASK 0x10
#define TAG_OTHER 0x20
#define ENTRY_LEN 8
#define NO_ID 0xffffffffu

struct acl_entry {
	unsigned tag;
	unsigned perm;
	uint32_t id;
};

static uint32_t
le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static void
put_le(unsigned char *p, uint32_t v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* The socket's ACL entries into a new array (the caller frees it): the
 * stored ACL, or the mode's three classes where none is stored. */
static struct acl_entry *
acl_read(const char *proc, mode_t mode, size_t *n)
{
	struct acl_entry *e;
	unsigned char *buf = NULL;
	ssize_t len = getxattr(proc, ACL_XATTR, NULL, 0);
	size_t i;

	if (len < 0 && errno != ENODATA && errno != ENOTSUP)
		return NULL;
	if (len >= 4 + ENTRY_LEN) {
		if ((buf = malloc((size_t)len)) == NULL)
			return NULL;
		len = getxattr(proc, ACL_XATTR, buf, (size_t)len);
		if (len < 4 || le32(buf) != ACL_VERSION ||
		    (len - 4) % ENTRY_LEN != 0) {
			free(buf);
			errno = EINVAL;
			return NULL;
		}
		*n = (size_t)(len - 4) / ENTRY_LEN;
	} else
		*n = 3;
	/* One more slot for an entry added. */
	if ((e = calloc(*n + 2, sizeof(*e))) == NULL) {
		free(buf);
		return NULL;
	}
	if (buf == NULL) {
		e[0] = (struct acl_entry){ TAG_USER_OBJ, (mode >> 6) & 7,
		    NO_ID };
		e[1] = (struct acl_entry){ TAG_GROUP_OBJ, (mode >> 3) & 7,
		    NO_ID };
		e[2] = (struct acl_entry){ TAG_OTHER, mode & 7, NO_ID };
		return e;
	}
	for (i = 0; i < *n; i++) {
		const unsigned char *p = buf + 4 + i * ENTRY_LEN;

		e[i].tag = p[0] | (unsigned)p[1] << 8;
		e[i].perm = p[2] | (unsigned)p[3] << 8;
		e[i].id = le32(p + 4);
	}
	free(buf);
	return e;
}

static int
entry_cmp(const void *a, const void *b)
{
	const struct acl_entry *x = a, *y = b;

	if (x->tag != y->tag)
		return x->tag < y->tag ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Sets (perm != 0) or removes (perm == 0) user uid's entry, recomputes
 * the mask over the group class and writes the ACL back. 0 or -1. */
static int
acl_set_user(const char *proc, mode_t mode, uid_t uid, unsigned perm)
{
	struct acl_entry *e;
	unsigned char *buf = NULL;
	unsigned mask = 0;
	size_t n, i, j, named = 0;
	int rc = -1;

	if ((e = acl_read(proc, mode, &n)) == NULL)
		return -1;
	for (i = j = 0; i < n; i++)	/* drop uid's entry and the mask */
		if (e[i].tag != TAG_MASK && !(e[i].tag == TAG_USER &&
		    e[i].id == (uint32_t)uid))
			e[j++] = e[i];
	n = j;
	if (perm != 0)
		e[n++] = (struct acl_entry){ TAG_USER, perm, (uint32_t)uid };
	for (i = 0; i < n; i++) {
		if (e[i].tag == TAG_USER || e[i].tag == TAG_GROUP)
			named++;
		if (e[i].tag & (TAG_USER | TAG_GROUP_OBJ | TAG_GROUP))
			mask |= e[i].perm;
	}
	if (named > 0)
		e[n++] = (struct acl_entry){ TAG_MASK, mask, NO_ID };
	qsort(e, n, sizeof(*e), entry_cmp);
	if ((buf = malloc(4 + n * ENTRY_LEN)) == NULL)
		goto out;
	put_le(buf, ACL_VERSION, 4);
	for (i = 0; i < n; i++) {
		unsigned char *p = buf + 4 + i * ENTRY_LEN;

		put_le(p, e[i].tag, 2);
		put_le(p + 2, e[i].perm, 2);
		put_le(p + 4, e[i].id, 4);
	}
	rc = setxattr(proc, ACL_XATTR, buf, 4 + n * ENTRY_LEN, 0);
out:
	free(buf);
	free(e);
	return rc;
}

/* Opens one component below dirfd: a directory, or (last) the socket;
 * never through a link. The fd, or -1. */
static int
open_step(int dirfd, const char *name, bool last)
{
	int flags = O_NOFOLLOW | O_CLOEXEC | (last ? O_PATH : O_PATH |
	    O_DIRECTORY);

	if (name[0] == '\0' || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0) {
		errno = EINVAL;
		return -1;
	}
	return openat(dirfd, name, flags);
}

/* The channel socket of domain id at libvirt's own place below
 * state_dir, as an O_PATH fd (its stat in st); -1 with errno and why. */
static int
channel_open(const char *state_dir, long id, const char *path,
    struct stat *st, const char **why)
{
	char prefix[32], *rest, *slash;
	size_t sl = strlen(state_dir);
	int fd, next, i;
	const char *steps[2] = { "channel", "target" };

	*why = "not libvirt's channel path of this domain";
	(void)snprintf(prefix, sizeof(prefix), "domain-%ld-", id);
	if (id < 0 || strncmp(path, state_dir, sl) != 0 ||
	    strncmp(path + sl, "/channel/target/", 16) != 0) {
		errno = EPERM;
		return -1;
	}
	if ((rest = strdup(path + sl + 16)) == NULL)
		return -1;
	slash = strchr(rest, '/');
	if (slash == NULL || strchr(slash + 1, '/') != NULL ||
	    strncmp(rest, prefix, strlen(prefix)) != 0) {
		free(rest);
		errno = EPERM;
		return -1;
	}
	*slash = '\0';
	*why = "cannot open the channel's directories";
	fd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (i = 0; fd != -1 && i < 3; i++) {
		next = open_step(fd, i < 2 ? steps[i] : rest, false);
		(void)close(fd);
		fd = next;
	}
	if (fd != -1) {
		next = open_step(fd, slash + 1, true);
		(void)close(fd);
		fd = next;
	}
	free(rest);
	if (fd == -1)
		return -1;
	*why = "not a socket";
	if (fstat(fd, st) == -1) {
		(void)close(fd);
		return -1;
	}
	if (!S_ISSOCK(st->st_mode)) {
		(void)close(fd);
		errno = ENOTSOCK;
		return -1;
	}
	return fd;
}

int
grant_channel(const char *state_dir, long id, const char *path, uid_t uid,
    bool grant, const char **why)
{
	char proc[64];
	struct stat st;
	int fd, rc;

	*why = NULL;
	errno = 0;
	if ((fd = channel_open(state_dir, id, path, &st, why)) == -1)
		return -1;
	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	*why = "cannot change the socket's ACL";
	rc = acl_set_user(proc, st.st_mode, uid, grant ? 6 : 0);
	(void)close(fd);
	if (rc == 0)
		*why = NULL;
	return rc;
}
