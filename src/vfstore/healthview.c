/*
 * healthview.c - a report's one-record view of a sealed vf-health.json
 * (healthview.h): a record found, decoded and replaced in the dump's
 * layout.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "healthfile.h"
#include "healthview.h"
#include "obuf.h"

/* In health_dump()'s layout a record starts "\n    {" and is the only
 * thing at that indent; no string holds a raw newline. */
static const char rec_start[] = "\n    {\n      \"vf_address\": \"";
static const char rec_end[] = "\n    }";
static const char doc_end[] = "\n  ]\n}";
static const char doc_empty[] = "[]\n}";

#define LIT(s) (sizeof(s) - 1)

/* --- one record in the dump's layout ----------------------------------- */

/* The span [*start, *end) of vf's record, from its "\n    {" to after
 * its "}". False when vf has no record. */
static bool
record_span(const char *text, size_t len, const char *vf, size_t *start,
    size_t *end)
{
	char needle[LIT(rec_start) + VF_ADDR_LEN + 2];
	const char *p, *e;

	snprintf(needle, sizeof(needle), "%s%s\"", rec_start, vf);
	if ((p = memmem(text, len, needle, strlen(needle))) == NULL)
		return false;
	e = memmem(p, len - (size_t)(p - text), rec_end, LIT(rec_end));
	if (e == NULL)
		return false;
	*start = (size_t)(p - text);
	*end = (size_t)(e - text) + LIT(rec_end);
	return true;
}

/* Where a record for vf (absent) goes: the start of the first record
 * that sorts after it (*found), or before the doc_end after the last. */
static size_t
insert_before(const char *text, size_t len, const char *vf, bool *found)
{
	const char *p = text, *end = text + len;

	*found = false;
	while ((p = memmem(p, (size_t)(end - p), rec_start,
	    LIT(rec_start))) != NULL) {
		if ((size_t)(end - p) < LIT(rec_start) + VF_ADDR_LEN)
			break;
		if (memcmp(p + LIT(rec_start), vf, VF_ADDR_LEN) > 0) {
			*found = true;
			return (size_t)(p - text);
		}
		p += LIT(rec_start);
	}
	return len >= LIT(doc_end) ? len - LIT(doc_end) : len;
}

static void
put_record(struct obuf *b, const struct vf_record *r)
{
	obuf_indent(b, 2);
	health_dump_record(b, r, 2);
}

static void
splice_insert(struct obuf *b, const char *text, size_t len, const char *vf,
    const struct vf_record *r)
{
	bool before;
	size_t at;

	if (len >= LIT(doc_empty) &&
	    memcmp(text + len - LIT(doc_empty), doc_empty,
	    LIT(doc_empty)) == 0) {
		obuf_put(b, text, len - LIT(doc_empty) + 1);
		put_record(b, r);
		obuf_put(b, doc_end, LIT(doc_end));
		return;
	}
	at = insert_before(text, len, vf, &before);
	obuf_put(b, text, at);
	if (!before)
		obuf_put(b, ",", 1);
	put_record(b, r);
	if (before)
		obuf_put(b, ",", 1);
	obuf_put(b, text + at, len - at);
}

/* Drops the record at [start, end) with the comma that joins it. */
static void
splice_remove(struct obuf *b, const char *text, size_t len, size_t start,
    size_t end)
{
	if (end < len && text[end] == ',') {
		obuf_put(b, text, start);
		obuf_put(b, text + end + 1, len - end - 1);
	} else if (start > 0 && text[start - 1] == ',') {
		obuf_put(b, text, start - 1);
		obuf_put(b, text + end, len - end);
	} else {
		obuf_put(b, text, start);
		obuf_put(b, doc_empty + 1, LIT(doc_empty) - 1);
	}
}

char *
healthview_splice(const char *text, size_t len, const char *vf,
    const struct vf_record *r, size_t *outlen)
{
	struct obuf b = { 0 };
	size_t start, end;

	if (record_span(text, len, vf, &start, &end)) {
		if (r == NULL) {
			splice_remove(&b, text, len, start, end);
		} else {
			obuf_put(&b, text, start);
			put_record(&b, r);
			obuf_put(&b, text + end, len - end);
		}
	} else if (r != NULL) {
		splice_insert(&b, text, len, vf, r);
	} else {
		obuf_put(&b, text, len);
	}
	return obuf_finish(&b, outlen);
}

/* --- the view ---------------------------------------------------------- */

/* h = vf's record alone, decoded from {"version":1,"records":[REC]}. */
static int
parse_one(struct health_view *v, struct health *h, char *why, size_t whylen)
{
	static const char head[] = "{\"version\":1,\"records\":[";
	size_t start = 0, end = 0, n;
	struct obuf b = { 0 };
	char *doc;
	int rc;

	obuf_put(&b, head, LIT(head));
	if (record_span(v->text, v->len, v->vf, &start, &end))
		obuf_put(&b, v->text + start + LIT("\n    "),
		    end - start - LIT("\n    "));
	obuf_put(&b, "]}", 2);
	if ((doc = obuf_finish(&b, &n)) == NULL)
		return -1;
	rc = health_parse(doc, n, h, why, whylen);
	free(doc);
	return rc;
}

static int
parse_full(struct store *s, struct health_view *v, struct health *h,
    unsigned threshold)
{
	if (health_parse(v->text, v->len, h, s->why, sizeof(s->why)) < 0)
		return store_load_failed(s);
	health_apply_threshold(h, threshold);
	return 0;
}

int
healthview_load_vf(struct store *s, struct health *h, unsigned threshold,
    const char *vf, struct health_view *v)
{
	int rc;

	memset(v, 0, sizeof(*v));
	memset(h, 0, sizeof(*h));
	threshold = threshold < 1 ? 1 : threshold;
	rc = store_read(s, s->health_path, HEALTH_NOUN, &v->text, &v->len);
	if (rc <= 0) {
		if (rc == 0)
			health_apply_threshold(h, threshold);
		return rc;
	}
	if (strlen(vf) == VF_ADDR_LEN &&
	    healthcache_matches(s->dir, v->text, v->len, &v->seal) &&
	    threshold > v->seal.open_max) {
		memcpy(v->vf, vf, VF_ADDR_LEN + 1);
		if (parse_one(v, h, s->why, sizeof(s->why)) == 0) {
			v->partial = true;
			health_apply_threshold(h, threshold);
			return 0;
		}
	}
	return parse_full(s, v, h, threshold);
}

int
healthview_full(struct store *s, struct health_view *v, struct health *h)
{
	unsigned threshold = h->threshold;

	if (!v->partial)
		return 0;
	health_release(h);
	v->partial = false;
	return parse_full(s, v, h, threshold);
}

int
healthview_save(struct store *s, const struct health_view *v,
    const struct health *h, struct atomic_result *res)
{
	const struct vf_record *r = health_find(h, v->vf);
	struct healthseal seal = v->seal;
	size_t len = 0;
	char *text;

	if (!v->partial)
		return health_save(s, h, res);
	if (h->n > (r != NULL ? 1u : 0u)) {
		memset(res, 0, sizeof(*res));
		errno = EINVAL;
		return -1;
	}
	text = healthview_splice(v->text, v->len, v->vf, r, &len);
	if (text != NULL)
		healthcache_update(&seal, text, len, r);
	if (store_save_text(s, s->health_path, text, len, HEALTH_NOUN,
	    res) < 0)
		return -1;
	(void)healthcache_write(s->dir, &seal);
	return 0;
}

void
healthview_release(struct health_view *v)
{
	free(v->text);
	v->text = NULL;
	v->len = 0;
}
