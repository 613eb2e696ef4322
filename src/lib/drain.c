/*
 * drain.c - the drain file, vf-drain.json (drain.h): decoding and
 * validation through jsondoc (the rules of the other two files), the
 * writer through obuf, and the edits drain and undrain make.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "jsondoc.h"
#include "obuf.h"
#include "drain.h"

static void
drain_free(struct drain *dr)
{
	free(dr->drained_at);
	free(dr->reason);
	memset(dr, 0, sizeof(*dr));
}

void
drains_release(struct drains *d)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		drain_free(&d->v[i]);
	free(d->v);
	memset(d, 0, sizeof(*d));
}

/* One element: its strings copied, its time checked as Go reads it. */
static int
drain_decode(const json_t *o, struct drain *dr, const char **addr,
    char *why, size_t whylen)
{
	const char *at = NULL, *reason = NULL;
	struct timespec ts;
	bool set = false;

	*addr = "";
	if (!json_is_object(o))
		return jsondoc_why(why, whylen, "unmarshal " DRAIN_NOUN
		    ": json: cannot unmarshal %s into a drain object",
		    jsondoc_type(o));
	if (jsondoc_str(o, "vf_address", addr, DRAIN_NOUN, why, whylen) < 0 ||
	    jsondoc_time(o, "drained_at", &ts, &set, DRAIN_NOUN, why,
	    whylen) < 0 ||
	    jsondoc_str(o, "drained_at", &at, DRAIN_NOUN, why, whylen) < 0 ||
	    jsondoc_str(o, "reason", &reason, DRAIN_NOUN, why, whylen) < 0)
		return -1;
	if (*addr == NULL)
		*addr = "";
	dr->drained_at = jsondoc_strdup(set ? at : NULL);
	dr->reason = jsondoc_strdup(reason);
	return dr->drained_at != NULL && dr->reason != NULL ? 0 : -1;
}

static int
drains_decode(const json_t *arr, void *dst, const char **addrs, char *why,
    size_t whylen)
{
	struct drains *d = dst;
	size_t i, n = json_array_size(arr);

	if ((d->v = calloc(n + 1, sizeof(*d->v))) == NULL)
		return -1;
	d->cap = n + 1;
	for (i = 0; i < n; i++) {
		d->n = i + 1;
		if (drain_decode(json_array_get(arr, i), &d->v[i], &addrs[i],
		    why, whylen) < 0)
			return -1;
	}
	return 0;
}

static int
drain_validate(const void *el, const char *addr, bool dup, size_t i,
    char *why, size_t whylen)
{
	const struct drain *dr = el;

	if (!vfaddr_valid(addr))
		return jsondoc_why(why, whylen, "validate " DRAIN_NOUN
		    " drain %zu: invalid VF address \"%s\"", i, addr);
	if (dr->drained_at[0] == '\0')
		return jsondoc_why(why, whylen, "validate " DRAIN_NOUN
		    " drain %zu: missing drained_at", i);
	if (dup)
		return jsondoc_why(why, whylen, "validate " DRAIN_NOUN
		    " drain %zu: duplicate VF address \"%s\"", i, addr);
	return 0;
}

static int
drains_validate(void *dst, const char **addrs, char *why, size_t whylen)
{
	struct drains *d = dst;

	return store_validate_vfs(d->v, d->n, sizeof(*d->v), addrs,
	    drain_validate, why, whylen);
}

int
drains_parse(const char *text, size_t len, struct drains *d, char *why,
    size_t whylen)
{
	static const struct jsondoc_kind kind = {
		.noun = DRAIN_NOUN, .arrkey = "drains",
		.decode = drains_decode, .validate = drains_validate
	};

	memset(d, 0, sizeof(*d));
	if (jsondoc_parse(text, len, &kind, d, why, whylen) == 0)
		return 0;
	drains_release(d);
	return -1;
}

int
drains_path(const struct store *s, char *buf, size_t len)
{
	return io_pathf(buf, len, "%s/%s", s->dir, DRAIN_FILE);
}

/* drains_parse() for store_load_doc(). */
static int
parse_doc(const char *text, size_t len, void *dst, char *why, size_t whylen)
{
	return drains_parse(text, len, dst, why, whylen);
}

int
drains_load(struct store *s, struct drains *d)
{
	char path[PATH_MAX];

	memset(d, 0, sizeof(*d));
	if (drains_path(s, path, sizeof(path)) < 0) {
		snprintf(s->why, sizeof(s->why), "%s path: %s", DRAIN_NOUN,
		    strerror(ENAMETOOLONG));
		return -1;
	}
	return store_load_doc(s, path, DRAIN_NOUN, parse_doc, d) < 0 ? -1 : 0;
}

static void
dump_drain(struct obuf *b, const struct drain *dr)
{
	bool first = true;

	obuf_put(b, "{", 1);
	obuf_key(b, 3, "vf_address", &first);
	obuf_quote(b, dr->vf);
	obuf_key(b, 3, "drained_at", &first);
	obuf_quote(b, dr->drained_at);
	obuf_key(b, 3, "reason", &first);
	obuf_quote(b, dr->reason);
	obuf_indent(b, 2);
	obuf_put(b, "}", 1);
}

char *
drains_dump(const struct drains *d, size_t *len)
{
	struct obuf b = { 0 };
	size_t i;

	obuf_doc_begin(&b, "drains");
	for (i = 0; i < d->n; i++) {
		obuf_item(&b, i, 2);
		dump_drain(&b, &d->v[i]);
	}
	return obuf_doc_end(&b, d->n, len);
}

int
drains_save(struct store *s, const struct drains *d,
    struct atomic_result *res)
{
	char path[PATH_MAX], *text;
	size_t len = 0;

	if (drains_path(s, path, sizeof(path)) < 0) {
		memset(res, 0, sizeof(*res));
		snprintf(s->why, sizeof(s->why), "%s path: %s", DRAIN_NOUN,
		    strerror(ENAMETOOLONG));
		errno = ENAMETOOLONG;
		return -1;
	}
	text = drains_dump(d, &len);
	if (store_save_text(s, path, text, len, DRAIN_NOUN, res) == 0)
		return 0;
	store_name_file(s, path);
	return -1;
}

/* The index of vf in d, or of where it would go (*found false). */
static size_t
drains_index(const struct drains *d, const char *vf, bool *found)
{
	return store_vf_index(d->v, d->n, sizeof(*d->v), vf, found);
}

const struct drain *
drains_find(const struct drains *d, const char *vf)
{
	bool found;
	size_t i;

	if (d == NULL || vf == NULL)
		return NULL;
	i = drains_index(d, vf, &found);
	return found ? &d->v[i] : NULL;
}

bool
drains_vf_drained(const struct drains *d, const char *vf)
{
	return drains_find(d, vf) != NULL;
}

int
drains_add(struct drains *d, const char *vf, const char *drained_at,
    const char *reason, bool *changed)
{
	struct drain dr = { 0 };
	struct drain *v;
	bool found;
	size_t at;

	if (!vfaddr_valid(vf)) {
		errno = EINVAL;
		return -1;
	}
	at = drains_index(d, vf, &found);
	if (found)
		return 0;
	memcpy(dr.vf, vf, VF_ADDR_LEN + 1);
	dr.drained_at = strdup(drained_at);
	dr.reason = strdup(reason != NULL ? reason : "");
	v = dr.drained_at != NULL && dr.reason != NULL ? store_array_gap(d->v,
	    d->n, &d->cap, 4, sizeof(*d->v), at) : NULL;
	if (v == NULL) {
		drain_free(&dr);
		errno = ENOMEM;
		return -1;
	}
	d->v = v;
	d->v[at] = dr;
	d->n++;
	*changed = true;
	return 0;
}

void
drains_remove(struct drains *d, const char *vf, bool *changed)
{
	bool found;
	size_t at = drains_index(d, vf, &found);

	if (!found)
		return;
	drain_free(&d->v[at]);
	memmove(&d->v[at], &d->v[at + 1], (d->n - at - 1) * sizeof(*d->v));
	d->n--;
	*changed = true;
}
