/*
 * store.c - the store under DATA_DIR/gpu (SPEC.md 4.1): its paths, the
 * directory check that makes a missing DATA_DIR/gpu unavailable, `vfstore
 * init`, the lock, and the reading and atomic saving of its files in
 * upstream's words. The documents themselves are healthfile.c and
 * claims.c (decoding in jsondoc.c, writing in obuf.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "jsondoc.h"
#include "lock.h"
#include "store.h"

#define STORE_FILE_MAX (64u << 20)	/* larger files are "unavailable" */

static int
join(char *buf, size_t len, const char *a, const char *b)
{
	return io_pathf(buf, len, "%s/%s", a, b);
}

void *
store_array_gap(void *v, size_t n, size_t *cap, size_t first, size_t sz,
    size_t at)
{
	size_t want = *cap ? *cap * 2 : first;
	char *p = v;

	if (n + 1 > *cap) {
		if ((p = reallocarray(v, want, sz)) == NULL)
			return NULL;
		*cap = want;
	}
	memmove(p + (at + 1) * sz, p + at * sz, (n - at) * sz);
	return p;
}

int
store_init(struct store *s, const char *data_dir)
{
	memset(s, 0, sizeof(*s));
	s->lock_fd = -1;
	if (join(s->dir, sizeof(s->dir), data_dir, "gpu") < 0 ||
	    join(s->health_path, sizeof(s->health_path), s->dir,
	    "vf-health.json") < 0 ||
	    join(s->claims_path, sizeof(s->claims_path), s->dir,
	    "vf-claims.json") < 0 ||
	    join(s->lock_path, sizeof(s->lock_path), s->dir, "lock") < 0) {
		snprintf(s->why, sizeof(s->why), "data dir path too long");
		return -1;
	}
	return 0;
}

/*
 * SPEC 4.1: a missing DATA_DIR/gpu is no empty store but an unmounted
 * volume, a wiped directory or a mistyped data_dir, so it (and anything
 * there that is not a directory) makes the store unavailable. Checked
 * before anything else, by every lock and load.
 */
static int
dir_check(struct store *s)
{
	struct stat st;
	int err = 0;

	if (stat(s->dir, &st) < 0)
		err = errno;
	else if (S_ISDIR(st.st_mode))
		return 0;
	if (err == ENOENT)
		snprintf(s->why, sizeof(s->why), "VF health state directory "
		    "%.900s is missing; create it with vfstore init", s->dir);
	else if (err == 0 || err == ENOTDIR)
		snprintf(s->why, sizeof(s->why), "VF health state directory "
		    "%.900s is not a directory", s->dir);
	else
		snprintf(s->why, sizeof(s->why), "VF health state directory "
		    "%.900s: %s", s->dir, strerror(err));
	s->unavailable = true;
	errno = err != 0 ? err : ENOTDIR;
	return -1;
}

/*
 * A reader takes no lock when the lock file is missing: every file is
 * replaced by rename, so an unlocked read still sees one complete version.
 */
int
store_lock(struct store *s, bool exclusive, unsigned timeout_s)
{
	int saved;

	s->unavailable = false;
	if (dir_check(s) < 0)
		return -1;
	if (s->lock_fd >= 0)
		return 0;
	if (!exclusive && access(s->lock_path, F_OK) < 0 && errno == ENOENT)
		return 0;
	s->lock_fd = lock_acquire(s->lock_path, exclusive, timeout_s);
	if (s->lock_fd >= 0)
		return 0;
	saved = errno;
	if (saved == EWOULDBLOCK)
		snprintf(s->why, sizeof(s->why), "lock %.900s: timed out after "
		    "%us", s->lock_path, timeout_s);
	else
		snprintf(s->why, sizeof(s->why), "lock %.900s: %s",
		    s->lock_path, strerror(saved));
	errno = saved;
	return -1;
}

enum store_lock_failure
store_lock_failure(const struct store *s, int err)
{
	if (s->unavailable)
		return STORE_LOCK_UNAVAILABLE;
	if (err == EWOULDBLOCK)
		return STORE_LOCK_TIMEOUT;
	if (err == EACCES || err == EPERM)
		return STORE_LOCK_DENIED;
	return STORE_LOCK_ERROR;
}

/* Makes DATA_DIR/gpu durable: mkdir -p, then fsync of its parent. */
static int
dir_create(struct store *s, bool *created)
{
	char parent[PATH_MAX], *slash;

	*created = false;
	if (mkdir(s->dir, 0755) == 0)
		*created = true;
	else if (errno == ENOENT && io_mkdir_p(s->dir) == 0)
		*created = true;
	else if (errno != EEXIST)
		return -1;
	if (dir_check(s) < 0) {
		errno = ENOTDIR;
		return -1;
	}
	if (!*created)
		return 0;
	if (chmod(s->dir, 0755) < 0)
		return -1;
	snprintf(parent, sizeof(parent), "%s", s->dir);
	slash = strrchr(parent, '/');
	if (slash != NULL && slash != parent)
		*slash = '\0';
	return atomic_sync_dir(slash != NULL ? parent : ".");
}

/*
 * SPEC 7.2: the lock is the store owner's (uid, else the directory's
 * when root runs this), 0640 group vfsentinel or 0600, whatever an
 * earlier version or a hand left there: a wider lock is tightened.
 */
static int
lock_tighten(struct store *s, uid_t uid, gid_t gid)
{
	struct stat st;
	int fd, rc, saved;

	fd = open(s->lock_path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0)
		rc = -1;
	else if (!S_ISREG(st.st_mode)) {
		rc = -1;
		errno = EINVAL;
	} else if (geteuid() != 0 && st.st_uid != geteuid())
		rc = 0;			/* another's lock: not ours to change */
	else if (uid == (uid_t)-1 && geteuid() == 0 &&
	    stat(s->dir, &st) == 0)
		rc = lock_secure(fd, st.st_uid, st.st_gid);
	else
		rc = lock_secure(fd, uid, gid);
	saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

int
store_create(struct store *s, uid_t uid, gid_t gid, bool *created)
{
	int fd, saved;

	s->unavailable = false;
	if (dir_create(s, created) < 0) {
		saved = errno;
		if (s->why[0] == '\0' || !s->unavailable)
			snprintf(s->why, sizeof(s->why), "create %.900s: %s",
			    s->dir, strerror(saved));
		errno = saved;
		return -1;
	}
	fd = lock_acquire(s->lock_path, false, 0);
	if (fd < 0 && errno != EWOULDBLOCK) {
		saved = errno;
		snprintf(s->why, sizeof(s->why), "create %.900s: %s",
		    s->lock_path, strerror(saved));
		errno = saved;
		return -1;
	}
	lock_release(fd);
	if (uid != (uid_t)-1 && chown(s->dir, uid, gid) < 0) {
		saved = errno;
		snprintf(s->why, sizeof(s->why), "chown %.900s: %s", s->dir,
		    strerror(saved));
		errno = saved;
		return -1;
	}
	if (lock_tighten(s, uid, gid) < 0) {
		saved = errno;
		snprintf(s->why, sizeof(s->why), "secure %.900s: %s",
		    s->lock_path, strerror(saved));
		errno = saved;
		return -1;
	}
	return 0;
}

void
store_unlock(struct store *s)
{
	lock_release(s->lock_fd);
	s->lock_fd = -1;
}

/* Reads path into a new buffer: 1 read, 0 missing, -1 with why. */
static int
slurp(const char *path, char **text, size_t *len, const char *noun,
    char *why, size_t whylen)
{
	int saved;

	*text = io_slurp(path, STORE_FILE_MAX, len);
	if (*text != NULL)
		return 1;
	if ((saved = errno) == ENOENT)
		return 0;
	jsondoc_why(why, whylen, "read %s: %s", noun, io_strerror(saved));
	errno = saved == ENOMEM ? ENOMEM : EIO;
	return -1;
}

/* "PATH: " before s->why, cutting its end if it must. */
static void
why_name_file(struct store *s)
{
	size_t n, len = strlen(s->why);

	if (s->reading == NULL)
		return;
	n = strlen(s->reading) + 2;
	if (n >= sizeof(s->why))
		return;
	if (len > sizeof(s->why) - 1 - n)
		len = sizeof(s->why) - 1 - n;
	memmove(s->why + n, s->why, len);
	s->why[n + len] = '\0';
	memcpy(s->why, s->reading, n - 2);
	memcpy(s->why + n - 2, ": ", 2);
	s->reading = NULL;		/* named once */
}

int
store_load_failed(struct store *s)
{
	int saved = errno;

	if (saved != ENOMEM) {
		why_name_file(s);
		errno = saved;
		return -1;
	}
	s->nomem = true;
	if (s->why[0] == '\0')
		snprintf(s->why, sizeof(s->why), "out of memory");
	errno = ENOMEM;
	return -1;
}

int
store_read(struct store *s, const char *path, const char *noun, char **text,
    size_t *len)
{
	int rc;

	s->why[0] = '\0';
	s->nomem = false;
	s->reading = NULL;
	if (dir_check(s) < 0)
		return -1;
	s->reading = path;
	rc = slurp(path, text, len, noun, s->why, sizeof(s->why));
	return rc < 0 ? store_load_failed(s) : rc;
}

/* Upstream's wording of a failed atomic_write() step: prefix, noun,
 * suffix ("sync " "VF health state" " parent dir"). */
static void
step_why(char *why, size_t whylen, const char *step, const char *noun,
    int err)
{
	static const struct {
		const char *step;
		const char *pre;
		const char *post;
	} map[] = {
		{ "marshal", "marshal ", "" },
		{ "create dir", "create ", " dir" },
		{ "sync parent dir", "sync ", " parent dir" },
		{ "remove stale temp", "remove stale ", " temp" },
		{ "create temp", "create ", "" },
		{ "write", "write ", "" },
		{ "sync", "sync ", "" },
		{ "close", "close ", "" },
		{ "rename", "rename ", "" },
		{ "sync dir", "sync ", " dir" },
	};
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (step != NULL && strcmp(map[i].step, step) == 0)
			break;
	if (i == sizeof(map) / sizeof(map[0]))
		snprintf(why, whylen, "persist %s: %s", noun, strerror(err));
	else
		snprintf(why, whylen, "%s%s%s: %s", map[i].pre, noun,
		    map[i].post, strerror(err));
}

int
store_save_text(struct store *s, const char *path, char *text, size_t len,
    const char *noun, struct atomic_result *res)
{
	int rc, saved;

	memset(res, 0, sizeof(*res));
	if (text == NULL) {
		res->step = "marshal";
		rc = -1;
	} else {
		rc = atomic_write(path, text, len, 0644, res);
	}
	saved = errno;
	free(text);
	if (rc < 0) {
		step_why(s->why, sizeof(s->why), res->step, noun, saved);
		errno = saved;
		return -1;
	}
	s->why[0] = '\0';
	return 0;
}

void
store_name_file(struct store *s, const char *path)
{
	char why[sizeof(s->why)];
	int n;

	if (strstr(s->why, path) != NULL)
		return;
	n = snprintf(why, sizeof(why), "%.900s: %s", path, s->why);
	if (n < 0)
		return;
	memcpy(s->why, why, sizeof(why));
}

/* qsort's order of elements that begin with their VF address. */
static int
vf_first_cmp(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

int
store_validate_vfs(void *v, size_t n, size_t sz, const char **addrs,
    int (*check)(const void *, const char *, bool, size_t, char *, size_t),
    char *why, size_t whylen)
{
	struct jsondoc_dup *keys;
	char *el;
	bool *dup;
	size_t i;
	int rc = -1;

	keys = calloc(n + 1, sizeof(*keys));
	dup = calloc(n + 1, sizeof(*dup));
	if (keys == NULL || dup == NULL)
		goto out;
	for (i = 0; i < n; i++)
		keys[i] = (struct jsondoc_dup){ .a = addrs[i], .idx = i };
	jsondoc_mark_dups(keys, n, dup);
	for (i = 0; i < n; i++) {
		el = (char *)v + i * sz;
		if (check(el, addrs[i], dup[i], i, why, whylen) < 0)
			goto out;
		memcpy(el, addrs[i], VF_ADDR_LEN + 1);
	}
	if (n > 0)
		qsort(v, n, sz, vf_first_cmp);
	rc = 0;
out:
	free(keys);
	free(dup);
	return rc;
}

int
store_load_doc(struct store *s, const char *path, const char *noun,
    int (*parse)(const char *, size_t, void *, char *, size_t), void *dst)
{
	char *text;
	size_t len;
	int rc, saved;

	if ((rc = store_read(s, path, noun, &text, &len)) <= 0) {
		if (rc < 0 && !s->unavailable)
			store_name_file(s, path);
		return rc;
	}
	rc = parse(text, len, dst, s->why, sizeof(s->why));
	saved = errno;
	free(text);
	if (rc == 0)
		return 1;
	store_name_file(s, path);
	errno = saved;
	return store_load_failed(s);
}

size_t
store_vf_index(const void *v, size_t n, size_t sz, const char *vf,
    bool *found)
{
	size_t lo = 0, hi = n, mid;
	int c;

	*found = false;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if ((c = strcmp((const char *)v + mid * sz, vf)) == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
