/*
 * targets.c - the guests sentinel-poll checks: copied from the claims
 * ledger or parsed from --targets lines; the marks kept between scans.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "claims.h"
#include "jsonl.h"
#include "store.h"
#include "targets.h"

static void
target_release(struct target *t)
{
	free(t->vf);
	free(t->instance_id);
	free(t->claimed_at);
	free(t->vsock);
	free(t->control_socket);
	free(t->app_log);
}

void
targets_release(struct targets *ts)
{
	size_t i;

	for (i = 0; i < ts->n; i++)
		target_release(&ts->v[i]);
	free(ts->v);
	memset(ts, 0, sizeof(*ts));
}

/* strdup of an optional string: NULL stays NULL. 0 or -1/ENOMEM. */
static int
dup_opt(char **dst, const char *src)
{
	*dst = NULL;
	if (src == NULL)
		return 0;
	*dst = strdup(src);
	return *dst == NULL ? -1 : 0;
}

/* A target's fields, borrowed (targets_add copies them). */
struct target_view {
	const char *vf, *instance_id, *claimed_at, *vsock, *control_socket,
	    *app_log;
	unsigned long long console_offset, console_inode;
};

static int
add_view(struct targets *ts, const struct target_view *src)
{
	struct target *t, *v;

	v = store_array_gap(ts->v, ts->n, &ts->cap, 16, sizeof(*v), ts->n);
	if (v == NULL)
		return -1;
	ts->v = v;
	t = &ts->v[ts->n];
	memset(t, 0, sizeof(*t));
	if (dup_opt(&t->vf, src->vf) || dup_opt(&t->instance_id,
	    src->instance_id) || dup_opt(&t->claimed_at, src->claimed_at) ||
	    dup_opt(&t->vsock, src->vsock) || dup_opt(&t->control_socket,
	    src->control_socket) || dup_opt(&t->app_log, src->app_log)) {
		target_release(t);
		return -1;
	}
	t->console_offset = src->console_offset;
	t->console_inode = src->console_inode;
	ts->n++;
	return 0;
}

int
targets_add(struct targets *ts, const struct target *src)
{
	struct target_view v = { .vf = src->vf,
	    .instance_id = src->instance_id, .claimed_at = src->claimed_at,
	    .vsock = src->vsock, .control_socket = src->control_socket,
	    .app_log = src->app_log, .console_offset = src->console_offset,
	    .console_inode = src->console_inode };

	return add_view(ts, &v);
}

const struct target *
targets_find(const struct targets *ts, const char *instance_id)
{
	size_t i;

	for (i = 0; i < ts->n; i++)
		if (strcmp(ts->v[i].instance_id, instance_id) == 0)
			return &ts->v[i];
	return NULL;
}

int
targets_from_claims(const struct claims *c, struct targets *ts)
{
	struct target t = { 0 };
	size_t i;

	for (i = 0; i < c->n; i++) {
		t.vf = c->v[i].vf;
		t.instance_id = c->v[i].instance_id;
		t.claimed_at = c->v[i].claimed_at;
		t.vsock = c->v[i].vsock;
		t.control_socket = c->v[i].control_socket;
		t.app_log = c->v[i].app_log;
		(void)claims_console_start(&c->v[i], &t.console_offset,
		    &t.console_inode);
		if (targets_add(ts, &t) == -1)
			return -1;
	}
	return 0;
}

int
targets_append_all(struct targets *ts, const struct targets *src)
{
	size_t i;

	for (i = 0; i < src->n; i++)
		if (targets_add(ts, &src->v[i]) == -1)
			return -1;
	return 0;
}

/* A --targets line's console_offset and console_inode, decimal strings
 * as the ledger holds them (claims.h); both or none. */
static void
console_start(const json_t *o, struct target_view *t)
{
	struct claim cl = { .console_offset = (char *)jsonl_str(o,
	    "console_offset"), .console_inode = (char *)jsonl_str(o,
	    "console_inode") };

	(void)claims_console_start(&cl, &t->console_offset,
	    &t->console_inode);
}

int
targets_parse_line(struct targets *ts, const char *line, size_t len,
    const char **why)
{
	struct target_view t = { 0 };
	json_t *o;
	int rc = 1;

	if ((o = jsonl_parse(line, len, why)) == NULL)
		return 0;
	t.vf = jsonl_str(o, "vf_address");
	t.instance_id = jsonl_str(o, "instance_id");
	t.claimed_at = jsonl_str(o, "claimed_at");
	t.vsock = jsonl_str(o, "vsock");
	t.control_socket = jsonl_str(o, "control_socket");
	t.app_log = jsonl_str(o, "app_log");
	console_start(o, &t);
	if (t.claimed_at == NULL)
		t.claimed_at = "";
	if (t.vf == NULL || !vfaddr_valid(t.vf) || t.instance_id == NULL ||
	    t.instance_id[0] == '\0') {
		*why = "needs a valid vf_address and an instance_id";
		rc = 0;
	} else if (add_view(ts, &t) == -1) {
		rc = -1;
	}
	json_decref(o);
	return rc;
}

/* --- listing ------------------------------------------------------------ */

/* Sets why's text; a reason longer than the buffer is cut, on purpose. */
static void __attribute__((format(printf, 2, 3)))
why_set(struct targets_why *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(why->text, sizeof(why->text), fmt, ap);
	va_end(ap);
}

/* why's text is errno's message, with prefix; keeps errno. */
static int
why_errno(struct targets_why *why, const char *prefix)
{
	int err = errno;

	why_set(why, "%s%s", prefix, strerror(err));
	errno = err;
	return -1;
}

/* The ledger's claims, then released; s is locked. 0 or -1, why set. */
static int
ledger_claims(struct store *s, struct targets *ts, struct targets_why *why)
{
	struct claims c = { 0 };
	int rc = 0, err;

	if (claims_load(s, &c) == -1) {
		err = errno;
		why->nomem = s->nomem;
		why_set(why, "%s", s->why);
		errno = err;
		rc = -1;
	} else if (targets_from_claims(&c, ts) == -1) {
		rc = why_errno(why, "");
	}
	err = errno;
	claims_release(&c);
	errno = err;
	return rc;
}

int
targets_from_ledger(const struct targets_source *src, struct targets *ts,
    struct targets_why *why)
{
	struct store s;
	int rc, err;

	why->nomem = false;
	if (store_init(&s, src->data_dir) == -1)
		return why_errno(why, "data dir: ");
	if (storeread_lock(&s, src->lock_timeout * 1000LL, src->wait,
	    src->wait_arg) == -1) {
		err = errno;
		why_set(why, "%s", s.why);
		errno = err;
		return -1;
	}
	rc = ledger_claims(&s, ts, why);
	err = errno;
	store_unlock(&s);
	errno = err;
	return rc;
}

/* One line of r: appended, skipped and passed to bad, or -1/ENOMEM. */
static int
read_line(struct targets *ts, const char *line, size_t len,
    unsigned long lineno, targets_bad_fn *bad, void *arg)
{
	const char *why;
	int rc;

	if ((rc = targets_parse_line(ts, line, len, &why)) == 0 &&
	    bad != NULL)
		bad(arg, lineno, why);
	return rc < 0 ? -1 : 0;
}

int
targets_read_fd(int fd, struct targets *ts, targets_bad_fn *bad,
    void *arg, targets_ready_fn *ready, struct targets_why *why)
{
	struct jsonl_reader r;
	enum jsonl_status st;
	char *line;
	size_t len;
	int rc = 0;

	why->nomem = false;
	if (jsonl_reader_init(&r, fd) == -1)
		return why_errno(why, "");
	while (rc == 0 && (st = jsonl_next(&r, &line, &len)) != JSONL_END) {
		if (st == JSONL_TOO_LONG && bad != NULL)
			bad(arg, r.lineno, NULL);
		if (st == JSONL_NEED && ready != NULL && ready(arg, fd) == -1) {
			errno = EINTR;
			rc = why_errno(why, "read targets: ");
		} else if ((st == JSONL_LINE && read_line(ts, line, len,
		    r.lineno, bad, arg) == -1) || (st == JSONL_NEED &&
		    jsonl_fill(&r) == -1)) {
			rc = why_errno(why, "read targets: ");
		}
	}
	jsonl_reader_release(&r);
	return rc;
}

int
targets_from_file(const char *path, struct targets *ts,
    targets_bad_fn *bad, void *arg, struct targets_why *why)
{
	struct stat st;
	int fd, rc, err;

	why->nomem = false;
	/* Without blocking: a FIFO without a writer would hold the scan (and
	 * a stop signal) for good. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1) {
		err = errno;
		why_set(why, "open %s: %s", path, strerror(err));
		errno = err;
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		close(fd);
		why_set(why, "open %s: not a regular file", path);
		errno = EINVAL;
		return -1;
	}
	rc = targets_read_fd(fd, ts, bad, arg, NULL, why);
	err = errno;
	close(fd);
	errno = err;
	return rc;
}

int
targets_list(const struct targets_source *src, struct targets *ts,
    targets_bad_fn *bad, void *arg, struct targets_why *why)
{
	why->nomem = false;
	if (src->path == NULL)
		return targets_from_ledger(src, ts, why);
	if (strcmp(src->path, "-") != 0)
		return targets_from_file(src->path, ts, bad, arg, why);
	if (src->stdin_list != NULL &&
	    targets_append_all(ts, src->stdin_list) == -1)
		return why_errno(why, "");
	return 0;
}

/* --- marks -------------------------------------------------------------- */

char *
targets_key(const struct target *t)
{
	char *key;

	if (asprintf(&key, "%s\n%s\n%s", t->instance_id, t->vf,
	    t->claimed_at) == -1)
		return NULL;
	return key;
}

/* The index of key in m, or m->n. */
static size_t
mark_find(const struct target_marks *m, const char *key)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (strcmp(m->v[i].key, key) == 0)
			break;
	return i;
}

struct target_mark *
targets_marks_get(struct target_marks *m, const struct target *t)
{
	struct target_mark *v;
	char *key;
	size_t i;

	if ((key = targets_key(t)) == NULL)
		return NULL;
	if ((i = mark_find(m, key)) < m->n) {
		free(key);
		m->v[i].seen = true;
		return &m->v[i];
	}
	if ((v = reallocarray(m->v, m->n + 1, sizeof(*v))) == NULL) {
		free(key);
		return NULL;
	}
	m->v = v;
	m->v[m->n] = (struct target_mark){ .key = key, .seen = true };
	return &m->v[m->n++];
}

int
targets_marks_set(struct target_marks *m, const struct target *t)
{
	size_t n = m->n;

	if (targets_marks_get(m, t) == NULL)
		return -1;
	return m->n > n ? 1 : 0;
}

bool
targets_marks_has(const struct target_marks *m, const struct target *t)
{
	char *key;
	bool has;

	if ((key = targets_key(t)) == NULL)
		return false;
	has = mark_find(m, key) < m->n;
	free(key);
	return has;
}

int
targets_mark_repeat(struct target_mark *m, const char *why, long long now,
    long long every)
{
	if (m->why != NULL && strcmp(m->why, why) == 0 && now - m->at < every)
		return 1;
	free(m->why);
	m->at = now;
	return (m->why = strdup(why)) == NULL ? -1 : 0;
}

void
targets_marks_sweep(struct target_marks *m)
{
	size_t i = 0;

	while (i < m->n) {
		if (m->v[i].seen) {
			m->v[i++].seen = false;
			continue;
		}
		free(m->v[i].key);
		free(m->v[i].why);
		m->v[i] = m->v[--m->n];
	}
}

void
targets_marks_release(struct target_marks *m)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		free(m->v[i].key);
		free(m->v[i].why);
	}
	free(m->v);
	m->v = NULL;
	m->n = 0;
}
