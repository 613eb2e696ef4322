/*
 * auditlog.c - the audit log of SPEC.md 4.1 (see auditlog.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "atomic.h"
#include "auditlog.h"
#include "io.h"
#include "jsonl.h"
#include "log.h"
#include "timefmt.h"
#include "utf8.h"

/* $SUDO_USER (who ran sudo), else the real uid's name, else its number. */
static json_t *
user_json(uid_t uid)
{
	const char *sudo = getenv("SUDO_USER");
	struct passwd *pw;
	char num[24];

	if (sudo != NULL && *sudo != '\0' && utf8_valid_str(sudo))
		return json_string(sudo);
	pw = getpwuid(uid);
	if (pw != NULL && utf8_valid_str(pw->pw_name))
		return json_string(pw->pw_name);
	(void)snprintf(num, sizeof(num), "%lu", (unsigned long)uid);
	return json_string(num);
}

/* Sets key to the string s unless s is NULL; -1/EILSEQ or ENOMEM. */
static int
set_str(json_t *obj, const char *key, const char *s)
{
	if (s == NULL)
		return 0;
	if (!utf8_valid_str(s)) {
		errno = EILSEQ;
		return -1;
	}
	if (json_object_set_new(obj, key, json_string(s)) < 0) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

static int
set_vfs(json_t *obj, const struct audit_event *ev)
{
	json_t *arr;
	size_t i;

	if (ev->vfs == NULL)
		return 0;
	if ((arr = json_array()) == NULL ||
	    json_object_set_new(obj, "vfs", arr) < 0) {
		errno = ENOMEM;
		return -1;
	}
	for (i = 0; i < ev->nvfs; i++)
		if (json_array_append_new(arr, json_string(ev->vfs[i])) < 0) {
			errno = ENOMEM;
			return -1;
		}
	return 0;
}

/* The caller's extra members, after the fixed ones (never over them). */
static int
set_extra(json_t *obj, const json_t *extra)
{
	const char *key;
	json_t *v;

	if (extra == NULL)
		return 0;
	if (!json_is_object(extra)) {
		errno = EINVAL;
		return -1;
	}
	json_object_foreach((json_t *)extra, key, v)
		if (json_object_get(obj, key) == NULL &&
		    json_object_set(obj, key, v) < 0) {
			errno = ENOMEM;
			return -1;
		}
	return 0;
}

json_t *
auditlog_line(const struct audit_event *ev)
{
	char ts[TIMEFMT_MAX];
	struct timespec now;
	json_t *obj;
	uid_t uid = getuid();

	if (ev->command == NULL) {
		errno = EINVAL;
		return NULL;
	}
	timefmt_now(&now);
	if ((obj = json_object()) == NULL ||
	    timefmt_format(&now, ts, sizeof(ts)) < 0 ||
	    set_str(obj, "ts", ts) < 0 ||
	    set_str(obj, "prog", ev->prog ? ev->prog : log_prog()) < 0 ||
	    set_str(obj, "command", ev->command) < 0 ||
	    set_str(obj, "card", ev->card) < 0 ||
	    set_str(obj, "vf", ev->vf) < 0 || set_vfs(obj, ev) < 0 ||
	    set_str(obj, "reason", ev->reason) < 0 ||
	    json_object_set_new(obj, "uid", json_integer(uid)) < 0 ||
	    json_object_set_new(obj, "user", user_json(uid)) < 0 ||
	    set_str(obj, "outcome", ev->outcome ? ev->outcome : "ok") < 0 ||
	    set_extra(obj, ev->extra) < 0) {
		if (errno != EILSEQ && errno != EINVAL)
			errno = ENOMEM;
		json_decref(obj);
		return NULL;
	}
	return obj;
}

/* Root creating the file gives it to GPU_DIR's owner (SPEC.md 4.1). */
static int
give_to_dir_owner(int fd, const char *gpu_dir)
{
	struct stat st;

	if (geteuid() != 0)
		return 0;
	if (stat(gpu_dir, &st) < 0)
		return -1;
	return fchown(fd, st.st_uid, st.st_gid);
}

/*
 * Opens GPU_DIR/audit.jsonl for appending; renames it to audit.jsonl.1
 * first when it has reached the rotation size. *created tells whether
 * the file (and so a directory entry) is new.
 */
static int
open_log(const char *gpu_dir, bool *created)
{
	char path[PATH_MAX], old[PATH_MAX];
	struct stat st;
	int fd, flags = O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW;

	if (io_pathf(path, sizeof(path), "%s/%s", gpu_dir, AUDIT_FILE) < 0 ||
	    io_pathf(old, sizeof(old), "%s/%s", gpu_dir, AUDIT_OLD_FILE) < 0)
		return -1;
	*created = false;
	if (lstat(path, &st) == 0 && st.st_size >= AUDIT_ROTATE_BYTES &&
	    rename(path, old) < 0)
		return -1;
	/* Never blocks (a FIFO here would hold the store lock for ever):
	 * anything but a regular file is IO_ENOTREG (SPEC 6.3). */
	if ((fd = io_open_regular(path, flags, 0)) >= 0 || errno != ENOENT)
		return fd;
	if ((fd = io_open_regular(path, flags | O_CREAT | O_EXCL, 0644)) < 0)
		return -1;
	*created = true;
	if (fchmod(fd, 0644) < 0 || give_to_dir_owner(fd, gpu_dir) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int
auditlog_append(const char *gpu_dir, const struct audit_event *ev)
{
	json_t *obj = auditlog_line(ev);
	char *text = NULL;
	size_t len;
	bool created;
	int fd = -1, rc = -1, saved;

	if (obj == NULL)
		return -1;
	if ((text = json_dumps(obj, JSON_COMPACT)) == NULL) {
		errno = ENOMEM;
		goto out;
	}
	len = strlen(text);
	text[len] = '\n';	/* json_dumps's NUL: the line needs no NUL */
	if ((fd = open_log(gpu_dir, &created)) < 0)
		goto out;
	if (io_write_all(fd, text, len + 1) < 0 || fsync(fd) < 0)
		goto out;
	if (created && atomic_sync_dir(gpu_dir) < 0)
		goto out;
	rc = 0;
out:
	saved = errno;
	if (fd >= 0 && close(fd) < 0 && rc == 0) {
		saved = errno;
		rc = -1;
	}
	free(text);
	json_decref(obj);
	errno = saved;
	return rc;
}

/* True if line is about vf and card (a NULL filter matches anything). */
static bool
audit_matches(const json_t *line, const char *vf, const char *card)
{
	const json_t *vfs = json_object_get(line, "vfs");
	const char *s;
	size_t i;
	bool found;

	if (card != NULL && ((s = jsonl_str(line, "card")) == NULL ||
	    strcmp(s, card) != 0))
		return false;
	if (vf == NULL)
		return true;
	if ((s = jsonl_str(line, "vf")) != NULL && strcmp(s, vf) == 0)
		return true;
	found = false;
	for (i = 0; i < json_array_size(vfs) && !found; i++)
		found = (s = json_string_value(json_array_get(vfs, i))) !=
		    NULL && strcmp(s, vf) == 0;
	return found;
}

struct audit_walk {
	const char *vf;
	const char *card;
	const char *text;		/* NULL, or what a line must hold */
	int (*fn)(const json_t *, void *);
	void *arg;
	size_t skipped;
};

/* One line of the walk: fn's return, or 0. */
static int
walk_line(struct audit_walk *w, const char *text, size_t len)
{
	const char *why;
	json_t *obj;
	int rc = 0;

	if (w->text != NULL && memmem(text, len, w->text,
	    strlen(w->text)) == NULL)
		return 0;
	obj = jsonl_parse(text, len, &why);
	if (obj == NULL)
		w->skipped++;
	else if (audit_matches(obj, w->vf, w->card))
		rc = w->fn(obj, w->arg);
	json_decref(obj);
	return rc;
}

/* Walks one file; a missing one is empty. */
static int
walk_file(struct audit_walk *w, const char *path)
{
	struct jsonl_reader r;
	enum jsonl_status st;
	char *line;
	size_t len;
	int fd, rc = 0;

	if ((fd = io_open_regular(path, O_RDONLY | O_NOFOLLOW, 0)) < 0)
		return errno == ENOENT ? 0 : -1;
	if (jsonl_reader_init(&r, fd) < 0) {
		close(fd);
		return -1;
	}
	while (rc == 0 && (st = jsonl_next(&r, &line, &len)) != JSONL_END) {
		if (st == JSONL_LINE)
			rc = walk_line(w, line, len);
		else if (st == JSONL_TOO_LONG)
			w->skipped++;
		else if (jsonl_fill(&r) < 0)
			rc = -1;
	}
	jsonl_reader_release(&r);
	close(fd);
	return rc;
}

/* Both files, oldest first. */
static int
walk(struct audit_walk *w, const char *gpu_dir, size_t *skipped)
{
	char path[PATH_MAX];
	int rc;

	if (io_pathf(path, sizeof(path), "%s/%s", gpu_dir, AUDIT_OLD_FILE) < 0)
		return -1;
	if ((rc = walk_file(w, path)) == 0) {
		if (io_pathf(path, sizeof(path), "%s/%s", gpu_dir,
		    AUDIT_FILE) < 0)
			return -1;
		rc = walk_file(w, path);
	}
	if (skipped != NULL)
		*skipped = w->skipped;
	return rc;
}

int
auditlog_read(const char *gpu_dir, const char *vf, const char *card,
    int (*fn)(const json_t *line, void *arg), void *arg, size_t *skipped)
{
	struct audit_walk w = { .vf = vf, .card = card, .fn = fn, .arg = arg };

	return walk(&w, gpu_dir, skipped);
}

int
auditlog_read_text(const char *gpu_dir, const char *text,
    int (*fn)(const json_t *line, void *arg), void *arg, size_t *skipped)
{
	struct audit_walk w = { .text = text, .fn = fn, .arg = arg };

	return walk(&w, gpu_dir, skipped);
}

struct audit_last {
	unsigned long long n;		/* matches seen in this walk */
	unsigned long long skip;	/* the first skip are not passed on */
	int (*fn)(const json_t *, void *);
	void *arg;
};

static int
count_line(const json_t *line, void *arg)
{
	(void)line;
	((struct audit_last *)arg)->n++;
	return 0;
}

static int
last_line(const json_t *line, void *arg)
{
	struct audit_last *l = arg;

	return l->n++ < l->skip ? 0 : l->fn(line, l->arg);
}

int
auditlog_read_last(const char *gpu_dir, const char *vf, const char *card,
    unsigned long long limit, int (*fn)(const json_t *line, void *arg),
    void *arg, size_t *skipped)
{
	struct audit_last l = { 0, 0, fn, arg };

	if (auditlog_read(gpu_dir, vf, card, count_line, &l, NULL) < 0)
		return -1;
	l.skip = l.n > limit ? l.n - limit : 0;
	l.n = 0;
	return auditlog_read(gpu_dir, vf, card, last_line, &l, skipped);
}

int
auditlog_append_extra(const char *gpu_dir, struct audit_event *ev,
    json_t *extra)
{
	int rc, saved;

	if (extra == NULL) {
		errno = ENOMEM;
		return -1;
	}
	ev->extra = extra;
	rc = auditlog_append(gpu_dir, ev);
	saved = errno;
	ev->extra = NULL;
	json_decref(extra);
	errno = saved;
	return rc;
}
