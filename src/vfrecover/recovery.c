/*
 * recovery.c - vfrecover's journal, the card's SR-IOV state and the idle
 * rule (see recovery.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "atomic.h"
#include "healthrules.h"
#include "io.h"
#include "jsonl.h"
#include "placement.h"
#include "recovery.h"
#include "timefmt.h"
#include "vfio.h"

#define JOURNAL_MAX (1024 * 1024)

static const char *const step_names[RECOVERY_NSTEPS] = {
	"preflight", "drain", "idle", "quiesce", "disable", "enable",
	"restore", "verify", "clear"
};

const char *
recovery_step_name(enum recovery_step step)
{
	return step < RECOVERY_NSTEPS ? step_names[step] : "?";
}

json_t *
recovery_list_json(const struct vf_list *l)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; arr != NULL && i < l->n; i++)
		if (json_array_append_new(arr, json_string(l->v[i])) < 0) {
			json_decref(arr);
			return NULL;
		}
	return arr;
}

static int
now_string(char *buf, size_t len)
{
	struct timespec now;

	timefmt_now(&now);
	return timefmt_format(&now, buf, len);
}

json_t *
recovery_journal_new(const char *card, const struct vf_list *vfs,
    const struct vf_list *wedged)
{
	char at[TIMEFMT_MAX];
	json_t *j;

	if (now_string(at, sizeof(at)) < 0)
		return NULL;
	j = json_pack("{s:i, s:s, s:s, s:o?, s:o?, s:[]}", "version", 1,
	    "card", card, "started_at", at, "vfs", recovery_list_json(vfs),
	    "wedged", recovery_list_json(wedged), "steps");
	if (j == NULL || json_object_get(j, "vfs") == NULL ||
	    json_object_get(j, "wedged") == NULL) {
		json_decref(j);
		errno = ENOMEM;
		return NULL;
	}
	return j;
}

/* True when v is an array of VF addresses. */
static bool
addr_array(const json_t *v)
{
	const char *s;
	size_t i;

	if (!json_is_array(v))
		return false;
	for (i = 0; i < json_array_size(v); i++)
		if ((s = json_string_value(json_array_get(v, i))) == NULL ||
		    !vfaddr_valid(s))
			return false;
	return true;
}

static int
step_index(const char *name)
{
	int i;

	for (i = 0; name != NULL && i < RECOVERY_NSTEPS; i++)
		if (strcmp(name, step_names[i]) == 0)
			return i;
	return -1;
}

/* The reason j is not a journal of card, or NULL. */
static const char *
journal_invalid(const json_t *j, const char *card)
{
	const json_t *steps = json_object_get(j, "steps"), *st;
	const char *s = jsonl_str(j, "card");
	size_t i;

	if (json_integer_value(json_object_get(j, "version")) != 1)
		return "version is not 1";
	if (s == NULL || strcmp(s, card) != 0)
		return "card does not match";
	if (!addr_array(json_object_get(j, "vfs")) ||
	    !addr_array(json_object_get(j, "wedged")))
		return "vfs or wedged is not a list of VF addresses";
	if (!json_is_array(steps))
		return "steps is not an array";
	json_array_foreach(steps, i, st)
		if (step_index(jsonl_str(st, "step")) < 0 ||
		    jsonl_str(st, "status") == NULL)
			return "a step without a known name or a status";
	return NULL;
}

/*
 * SPEC 7.2: DATA_DIR/gpu is the service user's, so it can swap
 * recovery/ for a link or a directory of its own between two root runs.
 * The directory is opened once without following a link and checked:
 * a directory, owned by root or by DATA_DIR/gpu's owner (root gives it
 * to that owner, as every file there), writable by its owner alone.
 * Every name in it is then reached through the descriptor.
 */
static int
dir_check(int fd, const struct stat *gpu, const char *path, char *why,
    size_t whylen)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		(void)snprintf(why, whylen, "%s is not a real directory", path);
		errno = ENOTDIR;
		return -1;
	}
	if ((st.st_uid != gpu->st_uid && st.st_uid != 0) ||
	    (st.st_mode & 022) != 0) {
		(void)snprintf(why, whylen, "%s is owned by uid %lu, mode "
		    "%03o: expected the owner of its parent (uid %lu) or root, "
		    "writable by its owner alone", path,
		    (unsigned long)st.st_uid, (unsigned)(st.st_mode & 0777),
		    (unsigned long)gpu->st_uid);
		errno = EPERM;
		return -1;
	}
	if (geteuid() == 0 && st.st_uid != gpu->st_uid &&
	    fchown(fd, gpu->st_uid, gpu->st_gid) < 0)
		return -1;
	return 0;
}

int
recovery_dir_open(const char *gpu_dir, bool create, char *why,
    size_t whylen)
{
	char path[PATH_MAX];
	struct stat gpu;
	int fd;

	why[0] = '\0';
	if (io_pathf(path, sizeof(path), "%s/recovery", gpu_dir) < 0 ||
	    stat(gpu_dir, &gpu) < 0)
		return -1;
	if (create && mkdir(path, 0755) < 0 && errno != EEXIST)
		return -1;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC |
	    O_NONBLOCK);
	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR)) {
		(void)snprintf(why, whylen, "%s is not a real directory (a "
		    "link or a file): refused", path);
		errno = ENOTDIR;
	}
	if (fd < 0)
		return -1;
	if (dir_check(fd, &gpu, path, why, whylen) < 0) {
		io_close_keep_errno(fd);
		return -1;
	}
	return fd;
}

int
recovery_journal_load(int dirfd, const char *name, const char *card,
    json_t **out, char *why, size_t whylen)
{
	const char *bad;
	json_error_t err;
	json_t *j;
	char *text;
	size_t len;

	*out = NULL;
	if ((text = io_slurp_at(dirfd, name, JOURNAL_MAX, &len)) == NULL) {
		if (errno == ENOENT)
			return 0;
		(void)snprintf(why, whylen, "recovery/%s: %s", name,
		    io_strerror(errno));
		return -1;
	}
	j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
	free(text);
	bad = j == NULL ? err.text : journal_invalid(j, card);
	if (bad != NULL) {
		(void)snprintf(why, whylen, "recovery/%s: %s", name, bad);
		json_decref(j);
		errno = EINVAL;
		return -1;
	}
	*out = j;
	return 1;
}

int
recovery_journal_save(int dirfd, const char *name, const json_t *j)
{
	struct atomic_result res;
	char *text = json_dumps(j, JSON_COMPACT);
	struct stat st;
	int rc;

	if (text == NULL) {
		errno = ENOMEM;
		return -1;
	}
	rc = atomic_write_at(dirfd, name, text, strlen(text), 0644, &res);
	free(text);
	if (rc < 0 || geteuid() != 0)
		return rc;
	/* Root's file is the directory owner's (SPEC.md 4.1); a link put
	 * there meanwhile is changed, not followed. */
	if (fstat(dirfd, &st) < 0 || fchownat(dirfd, name, st.st_uid,
	    st.st_gid, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	return 0;
}

/* The steps array's entry for step, or NULL. */
static json_t *
step_entry(const json_t *j, enum recovery_step step)
{
	json_t *steps = json_object_get(j, "steps"), *st;
	size_t i;

	json_array_foreach(steps, i, st)
		if (step_index(jsonl_str(st, "step")) == (int)step)
			return st;
	return NULL;
}

int
recovery_journal_set(json_t *j, enum recovery_step step, const char *status)
{
	char at[TIMEFMT_MAX];
	json_t *st = step_entry(j, step);

	if (now_string(at, sizeof(at)) < 0)
		return -1;
	if (st == NULL) {
		st = json_pack("{s:s, s:s, s:s}", "step", step_names[step],
		    "status", status, "at", at);
		if (json_array_append_new(json_object_get(j, "steps"), st) < 0)
			goto nomem;
		return 0;
	}
	if (json_object_set_new(st, "status", json_string(status)) < 0 ||
	    json_object_set_new(st, "at", json_string(at)) < 0)
		goto nomem;
	return 0;
nomem:
	errno = ENOMEM;
	return -1;
}

const char *
recovery_journal_status(const json_t *j, enum recovery_step step)
{
	return jsonl_str(step_entry(j, step), "status");
}

void
recovery_journal_drop_from(json_t *j, enum recovery_step from)
{
	json_t *steps = json_object_get(j, "steps");
	size_t i = json_array_size(steps);

	while (i-- > 0)
		if (step_index(jsonl_str(json_array_get(steps, i), "step")) >=
		    (int)from)
			json_array_remove(steps, i);
}

int
recovery_journal_list(const json_t *j, const char *key, struct vf_list *l)
{
	const json_t *arr = json_object_get(j, key), *v;
	size_t i;

	json_array_foreach(arr, i, v)
		if (sysfs_vf_list_add(l, json_string_value(v)) < 0)
			return -1;
	return 0;
}

bool
recovery_needs_restore(const json_t *j)
{
	const char *q = recovery_journal_status(j, STEP_QUIESCE);
	const char *r = recovery_journal_status(j, STEP_RESTORE);

	return q != NULL && (r == NULL || strcmp(r, "done") != 0);
}

enum recovery_step
recovery_resume_point(json_t *j)
{
	enum recovery_step s;
	const char *st;

	for (s = STEP_DRAIN; s < STEP_CLEAR; s++) {
		st = recovery_journal_status(j, s);
		if (st == NULL || (strcmp(st, "done") != 0 &&
		    strcmp(st, "skipped") != 0))
			break;
	}
	if (s >= STEP_QUIESCE && s <= STEP_ENABLE) {
		recovery_journal_drop_from(j, STEP_QUIESCE);
		s = STEP_QUIESCE;
	}
	return s;
}

/* The journal name in dirfd (PATH for messages); one that cannot be
 * read (a FIFO, a link, EACCES) as {"file":PATH,"error":"PATH: why"}
 * and *bad. NULL when there is none to show. */
static json_t *
journal_read(int dirfd, const char *name, const char *path, bool *bad)
{
	char why[PATH_MAX + 64];
	size_t n;
	char *text;
	json_t *j;

	/* Never blocks: a FIFO would hang --status (SPEC 6.3). */
	if ((text = io_slurp_at(dirfd, name, JOURNAL_MAX, &n)) == NULL) {
		if (errno == ENOENT)
			return NULL;
		(void)snprintf(why, sizeof(why), "%s: %s", path,
		    io_strerror(errno));
		*bad = true;
		return json_pack("{s:s, s:s}", "file", path, "error", why);
	}
	j = json_loadb(text, n, JSON_REJECT_DUPLICATES, NULL);
	free(text);
	return j;
}

/* Loads one journal file of the directory and hands it to fn. */
static void
journal_file(int dirfd, const char *dir, const char *name,
    void (*fn)(json_t *, void *), void *arg)
{
	size_t len = strlen(name);
	char path[PATH_MAX];
	bool last, bad = false;
	json_t *j;

	if (len <= 5 || strcmp(name + len - 5, ".json") != 0 ||
	    io_pathf(path, sizeof(path), "%s/%s", dir, name) < 0 ||
	    (j = journal_read(dirfd, name, path, &bad)) == NULL)
		return;
	last = len > 10 && strcmp(name + len - 10, ".last.json") == 0;
	if (json_object_set_new(j, "state", json_string(bad ? "unreadable" :
	    last ? "last" : "in_progress")) == 0)
		fn(j, arg);
	json_decref(j);
}

/* true if NAME is CARD's journal, PF.json or PF.last.json (any: NULL). */
static bool
journal_of(const char *name, const char *card)
{
	size_t len;

	if (card == NULL)
		return true;
	len = strlen(card);
	return strncmp(name, card, len) == 0 &&
	    (strcmp(name + len, ".json") == 0 ||
	    strcmp(name + len, ".last.json") == 0);
}

int
recovery_journals(const char *gpu_dir, const char *card,
    void (*fn)(json_t *, void *), void *arg, char *why, size_t whylen)
{
	struct dirent **names = NULL;
	char dir[PATH_MAX];
	int i, n, fd;

	if (io_pathf(dir, sizeof(dir), "%s/recovery", gpu_dir) < 0)
		return -1;
	if ((fd = recovery_dir_open(gpu_dir, false, why, whylen)) < 0)
		return errno == ENOENT ? 0 : -1;
	if ((n = scandirat(fd, ".", &names, NULL, alphasort)) < 0) {
		i = errno;
		close(fd);
		errno = i;
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (journal_of(names[i]->d_name, card))
			journal_file(fd, dir, names[i]->d_name, fn, arg);
		free(names[i]);
	}
	free(names);
	close(fd);
	return 0;
}

/* "SRIOV_MANAGE -d PF", as the dry run shows it. */
static json_t *
sriov_command(const struct conf *c, const char *opt, const char *card)
{
	char cmd[PATH_MAX + 32];

	if (io_pathf(cmd, sizeof(cmd), "%s %s %s", c->sriov_manage, opt,
	    card) < 0)
		return NULL;
	return json_pack("{s:s}", "command", cmd);
}

json_t *
recovery_plan_fields(enum recovery_step step, const struct conf *c,
    const char *card, const struct vf_list *vfs,
    const struct vf_list *wedged, json_t *busy)
{
	switch (step) {
	case STEP_DRAIN:
	case STEP_CLEAR:
		return json_pack("{s:o}", "vfs", recovery_list_json(vfs));
	case STEP_IDLE:
		return json_pack("{s:O}", "busy", busy ? busy : json_null());
	case STEP_QUIESCE:
		return json_pack("{s:s}", "command", c->quiesce_command);
	case STEP_DISABLE:
		return sriov_command(c, "-d", card);
	case STEP_ENABLE:
		return sriov_command(c, "-e", card);
	case STEP_RESTORE:
		return json_pack("{s:s}", "command", c->restore_command);
	case STEP_VERIFY:
		return json_pack("{s:s, s:o}", "command", c->verify_command,
		    "vfs", recovery_list_json(wedged));
	default:
		return json_object();
	}
}
