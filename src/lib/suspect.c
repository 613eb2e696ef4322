/*
 * suspect.c - the suspect file, vf-suspect.json (suspect.h): decoding and
 * validation through jsondoc (the rules of the other files), the writer
 * through obuf, and the edits a suspicion and its end make.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auditlog.h"
#include "io.h"
#include "jsondoc.h"
#include "obuf.h"
#include "suspect.h"

/* The string members after vf_address, in the writer's order. */
static const char *const suspect_keys[] = {
	"instance_id", "assigned_at", "ended_at", "ended", "source"
};

#define SUSPECT_NKEYS (sizeof(suspect_keys) / sizeof(suspect_keys[0]))

static char **
suspect_field(struct suspect *sp, size_t k)
{
	char **f[] = { &sp->instance_id, &sp->assigned_at, &sp->ended_at,
	    &sp->ended, &sp->source };

	return f[k];
}

static const char *
suspect_value(const struct suspect *sp, size_t k)
{
	const char *const f[] = { sp->instance_id, sp->assigned_at,
	    sp->ended_at, sp->ended, sp->source };

	return f[k];
}

static void
suspect_free(struct suspect *sp)
{
	size_t k;

	for (k = 0; k < SUSPECT_NKEYS; k++)
		free(*suspect_field(sp, k));
	free(sp->profile);
	memset(sp, 0, sizeof(*sp));
}

void
suspects_release(struct suspects *d)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		suspect_free(&d->v[i]);
	free(d->v);
	memset(d, 0, sizeof(*d));
}

bool
suspect_ended_valid(const char *ended)
{
	return ended != NULL && (strcmp(ended, "clean") == 0 ||
	    strcmp(ended, "unclean") == 0 || strcmp(ended, "unknown") == 0);
}

/* One element: its strings copied, ended_at checked as Go reads it. */
static int
suspect_decode(const json_t *o, struct suspect *sp, const char **addr,
    char *why, size_t whylen)
{
	struct timespec ts;
	const char *v;
	bool set = false;
	size_t k;

	*addr = "";
	if (!json_is_object(o))
		return jsondoc_why(why, whylen, "unmarshal " SUSPECT_NOUN
		    ": json: cannot unmarshal %s into a suspect object",
		    jsondoc_type(o));
	if (jsondoc_str(o, "vf_address", addr, SUSPECT_NOUN, why,
	    whylen) < 0 || jsondoc_time(o, "ended_at", &ts, &set,
	    SUSPECT_NOUN, why, whylen) < 0)
		return -1;
	if (*addr == NULL)
		*addr = "";
	for (k = 0; k < SUSPECT_NKEYS; k++) {
		if (jsondoc_str(o, suspect_keys[k], &v, SUSPECT_NOUN, why,
		    whylen) < 0)
			return -1;
		if (strcmp(suspect_keys[k], "ended_at") == 0 && !set)
			v = NULL;
		if ((*suspect_field(sp, k) = jsondoc_strdup(v)) == NULL)
			return -1;
	}
	if (jsondoc_str(o, "profile", &v, SUSPECT_NOUN, why, whylen) < 0)
		return -1;
	if (v != NULL && (sp->profile = strdup(v)) == NULL)
		return -1;
	return 0;
}

static int
suspects_decode(const json_t *arr, void *dst, const char **addrs,
    char *why, size_t whylen)
{
	struct suspects *d = dst;
	size_t i, n = json_array_size(arr);

	if ((d->v = calloc(n + 1, sizeof(*d->v))) == NULL)
		return -1;
	d->cap = n + 1;
	for (i = 0; i < n; i++) {
		d->n = i + 1;
		if (suspect_decode(json_array_get(arr, i), &d->v[i],
		    &addrs[i], why, whylen) < 0)
			return -1;
	}
	return 0;
}

static int
suspect_validate(const void *el, const char *addr, bool dup, size_t i,
    char *why, size_t whylen)
{
	const struct suspect *sp = el;
	const char *what = NULL;

	if (!vfaddr_valid(addr))
		return jsondoc_why(why, whylen, "validate " SUSPECT_NOUN
		    " suspect %zu: invalid VF address \"%s\"", i, addr);
	if (sp->instance_id[0] == '\0')
		what = "missing instance_id";
	else if (sp->ended_at[0] == '\0')
		what = "missing ended_at";
	else if (!suspect_ended_valid(sp->ended))
		what = "ended is not clean, unclean or unknown";
	else if (dup)
		return jsondoc_why(why, whylen, "validate " SUSPECT_NOUN
		    " suspect %zu: duplicate VF address \"%s\"", i, addr);
	if (what != NULL)
		return jsondoc_why(why, whylen, "validate " SUSPECT_NOUN
		    " suspect %zu: %s", i, what);
	return 0;
}

static int
suspects_validate(void *dst, const char **addrs, char *why, size_t whylen)
{
	struct suspects *d = dst;

	return store_validate_vfs(d->v, d->n, sizeof(*d->v), addrs,
	    suspect_validate, why, whylen);
}

int
suspects_parse(const char *text, size_t len, struct suspects *d, char *why,
    size_t whylen)
{
	static const struct jsondoc_kind kind = {
		.noun = SUSPECT_NOUN, .arrkey = "suspects",
		.decode = suspects_decode, .validate = suspects_validate
	};

	memset(d, 0, sizeof(*d));
	if (jsondoc_parse(text, len, &kind, d, why, whylen) == 0)
		return 0;
	suspects_release(d);
	return -1;
}

int
suspects_path(const struct store *s, char *buf, size_t len)
{
	return io_pathf(buf, len, "%s/%s", s->dir, SUSPECT_FILE);
}

static int
path_failed(struct store *s)
{
	snprintf(s->why, sizeof(s->why), "%s path: %s", SUSPECT_NOUN,
	    strerror(ENAMETOOLONG));
	errno = ENAMETOOLONG;
	return -1;
}

/* suspects_parse() for store_load_doc(). */
static int
parse_doc(const char *text, size_t len, void *dst, char *why, size_t whylen)
{
	return suspects_parse(text, len, dst, why, whylen);
}

int
suspects_load(struct store *s, struct suspects *d)
{
	char path[PATH_MAX];

	memset(d, 0, sizeof(*d));
	if (suspects_path(s, path, sizeof(path)) < 0)
		return path_failed(s);
	return store_load_doc(s, path, SUSPECT_NOUN, parse_doc, d) < 0 ?
	    -1 : 0;
}

static void
dump_suspect(struct obuf *b, const struct suspect *sp)
{
	bool first = true;
	size_t k;

	obuf_put(b, "{", 1);
	obuf_key(b, 3, "vf_address", &first);
	obuf_quote(b, sp->vf);
	for (k = 0; k < SUSPECT_NKEYS; k++) {
		obuf_key(b, 3, suspect_keys[k], &first);
		obuf_quote(b, suspect_value(sp, k));
	}
	if (sp->profile != NULL) {
		obuf_key(b, 3, "profile", &first);
		obuf_quote(b, sp->profile);
	}
	obuf_indent(b, 2);
	obuf_put(b, "}", 1);
}

char *
suspects_dump(const struct suspects *d, size_t *len)
{
	struct obuf b = { 0 };
	size_t i;

	obuf_doc_begin(&b, "suspects");
	for (i = 0; i < d->n; i++) {
		obuf_item(&b, i, 2);
		dump_suspect(&b, &d->v[i]);
	}
	return obuf_doc_end(&b, d->n, len);
}

int
suspects_save(struct store *s, const struct suspects *d,
    struct atomic_result *res)
{
	char path[PATH_MAX], *text;
	size_t len = 0;

	if (suspects_path(s, path, sizeof(path)) < 0) {
		memset(res, 0, sizeof(*res));
		return path_failed(s);
	}
	text = suspects_dump(d, &len);
	if (store_save_text(s, path, text, len, SUSPECT_NOUN, res) == 0)
		return 0;
	store_name_file(s, path);
	return -1;
}

/* The index of vf in d, or of where it would go (*found false). */
static size_t
suspects_index(const struct suspects *d, const char *vf, bool *found)
{
	return store_vf_index(d->v, d->n, sizeof(*d->v), vf, found);
}

const struct suspect *
suspects_find(const struct suspects *d, const char *vf)
{
	bool found;
	size_t i;

	if (d == NULL || vf == NULL)
		return NULL;
	i = suspects_index(d, vf, &found);
	return found ? &d->v[i] : NULL;
}

int
suspects_add(struct suspects *d, const struct suspect *sp, bool *changed)
{
	struct suspect cp = { 0 };
	struct suspect *v = NULL;
	bool found, ok = true;
	size_t at, k;

	if (!vfaddr_valid(sp->vf) || !suspect_ended_valid(sp->ended)) {
		errno = EINVAL;
		return -1;
	}
	at = suspects_index(d, sp->vf, &found);
	if (found)
		return 0;
	memcpy(cp.vf, sp->vf, VF_ADDR_LEN + 1);
	for (k = 0; k < SUSPECT_NKEYS; k++)
		ok &= (*suspect_field(&cp, k) =
		    jsondoc_strdup(suspect_value(sp, k))) != NULL;
	if (sp->profile != NULL)
		ok &= (cp.profile = strdup(sp->profile)) != NULL;
	if (ok)
		v = store_array_gap(d->v, d->n, &d->cap, 4, sizeof(*d->v), at);
	if (v == NULL) {
		suspect_free(&cp);
		errno = ENOMEM;
		return -1;
	}
	d->v = v;
	d->v[at] = cp;
	d->n++;
	*changed = true;
	return 0;
}

void
suspects_remove(struct suspects *d, const char *vf, bool *changed)
{
	bool found;
	size_t at = suspects_index(d, vf, &found);

	if (!found)
		return;
	suspect_free(&d->v[at]);
	memmove(&d->v[at], &d->v[at + 1], (d->n - at - 1) * sizeof(*d->v));
	d->n--;
	*changed = true;
}

/* One audit line of sp: command, its fields, and cause when not NULL. */
static int
audit_one(const char *gpu_dir, const char *command, const struct suspect *sp,
    const char *cause)
{
	struct audit_event ev = { .command = command, .vf = sp->vf };
	json_t *extra;

	extra = json_pack("{s:s, s:s, s:s, s:s}", "instance_id",
	    sp->instance_id, "assigned_at", sp->assigned_at, "ended",
	    sp->ended, "source", sp->source);
	if (extra != NULL && cause != NULL && json_object_set_new(extra,
	    "cause", json_string(cause)) < 0) {
		json_decref(extra);
		extra = NULL;
	}
	return auditlog_append_extra(gpu_dir, &ev, extra);
}

int
suspect_audit(const char *gpu_dir, const struct suspect *sp)
{
	return audit_one(gpu_dir, "suspect", sp, NULL);
}

int
suspect_audit_end(const char *gpu_dir, const struct suspect *sp,
    const char *cause)
{
	return audit_one(gpu_dir, "unsuspect", sp, cause);
}

/* auditlog_read()'s callback: one line's part of the counts. */
static int
count_line(const json_t *line, void *arg)
{
	const char *cmd = json_string_value(json_object_get(line, "command"));
	const char *res = json_string_value(json_object_get(line, "result"));
	struct suspect_counts *n = arg;

	if (cmd == NULL)
		return 0;
	if (strcmp(cmd, "suspect") == 0)
		n->suspects++;
	else if (strcmp(cmd, "verify") == 0 && res != NULL) {
		n->pass += strcmp(res, "pass") == 0;
		n->fail += strcmp(res, "fail") == 0;
		n->error += strcmp(res, "error") == 0;
		n->interrupted += strcmp(res, "interrupted") == 0;
	}
	return 0;
}

int
suspect_audit_counts(const char *gpu_dir, struct suspect_counts *n)
{
	size_t skipped = 0;

	memset(n, 0, sizeof(*n));
	return auditlog_read(gpu_dir, NULL, NULL, count_line, n,
	    &skipped) < 0 ? -1 : 0;
}
