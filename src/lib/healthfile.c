/*
 * healthfile.c - the health file, vf-health.json (SPEC.md 4.1): decoding
 * and upstream's validation (via jsondoc), the writer in upstream's
 * layout (via obuf), the threshold applied at load, and the queries. The
 * report rules that change a loaded file are in healthrules.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "healthcache.h"
#include "healthfile.h"
#include "jsondoc.h"
#include "jsongo.h"
#include "obuf.h"
#include "store.h"
#include "timefmt.h"

/* --- decoding --------------------------------------------------------- */

static int
failure_decode(const json_t *f, struct vf_failure *out, char *why,
    size_t whylen)
{
	const char *id = NULL, *at = NULL;
	bool set = false;

	if (f != NULL && !json_is_object(f) && !json_is_null(f))
		return jsondoc_why(why, whylen, "unmarshal " HEALTH_NOUN
		    ": json: cannot unmarshal %s into a failure object",
		    jsondoc_type(f));
	if (json_is_object(f) &&
	    (jsondoc_str(f, "instance_id", &id, HEALTH_NOUN, why, whylen) < 0 ||
	    jsondoc_str(f, "assigned_at", &at, HEALTH_NOUN, why, whylen) < 0 ||
	    jsondoc_time(f, "reported_at", &out->reported_at, &set,
	    HEALTH_NOUN, why, whylen) < 0))
		return -1;
	if (!json_is_object(f) || !set)		/* Go's zero time */
		timefmt_parse("0001-01-01T00:00:00Z", &out->reported_at);
	out->instance_id = jsondoc_strdup(id);
	out->assigned_at = jsondoc_strdup(at);
	if (out->instance_id == NULL || out->assigned_at == NULL)
		return -1;
	return 0;
}

static void
record_release(struct vf_record *r)
{
	size_t j;

	for (j = 0; j < r->nfailures; j++) {
		free(r->failures[j].instance_id);
		free(r->failures[j].assigned_at);
	}
	free(r->failures);
	r->failures = NULL;
	r->nfailures = 0;
}

static int
failures_decode(const json_t *arr, struct vf_record *r, char *why,
    size_t whylen)
{
	size_t j, n = json_array_size(arr);

	if (n == 0)
		return 0;
	r->failures = calloc(n, sizeof(*r->failures));
	if (r->failures == NULL)
		return -1;
	for (j = 0; j < n; j++) {
		r->nfailures = j + 1;
		if (failure_decode(json_array_get(arr, j), &r->failures[j],
		    why, whylen) < 0)
			return -1;
	}
	return 0;
}

/* Decodes record i; its address is checked later (it may be invalid). */
static int
record_decode(const json_t *rec, struct vf_record *r, const char **addr,
    char *why, size_t whylen)
{
	const json_t *fails = NULL;

	*addr = "";
	if (json_is_null(rec))
		return 0;
	if (!json_is_object(rec))
		return jsondoc_why(why, whylen, "unmarshal " HEALTH_NOUN
		    ": json: cannot unmarshal %s into a record object",
		    jsondoc_type(rec));
	if (jsondoc_str(rec, "vf_address", addr, HEALTH_NOUN, why,
	    whylen) < 0 ||
	    jsondoc_member(rec, "failures", JSON_ARRAY, "array", &fails,
	    HEALTH_NOUN, why, whylen) < 0 ||
	    jsondoc_time(rec, "quarantined_at", &r->quarantined_at,
	    &r->quarantined, HEALTH_NOUN, why, whylen) < 0)
		return -1;
	if (*addr == NULL)
		*addr = "";
	return failures_decode(fails, r, why, whylen);
}

/* --- validation ------------------------------------------------------- */

static int
failures_validate(const struct vf_record *r, size_t i, char *why,
    size_t whylen)
{
	struct jsondoc_dup *keys = NULL;
	bool *dup = NULL;
	size_t j;
	int rc = 0;

	/* One failure (the usual case) cannot repeat: nothing to allocate. */
	if (r->nfailures > 1) {
		keys = calloc(r->nfailures, sizeof(*keys));
		dup = calloc(r->nfailures, sizeof(*dup));
		if (keys == NULL || dup == NULL) {
			rc = -1;
			goto out;
		}
		for (j = 0; j < r->nfailures; j++)
			keys[j] = (struct jsondoc_dup){
			    .a = r->failures[j].instance_id,
			    .b = r->failures[j].assigned_at, .idx = j };
		jsondoc_mark_dups(keys, r->nfailures, dup);
	}
	for (j = 0; j < r->nfailures && rc == 0; j++) {
		const struct vf_failure *f = &r->failures[j];

		if (timefmt_is_zero(&f->reported_at))
			rc = jsondoc_why(why, whylen, "validate " HEALTH_NOUN
			    " record %zu failure %zu: missing report timestamp",
			    i, j);
		else if (dup != NULL && dup[j])
			rc = jsondoc_why(why, whylen, "validate " HEALTH_NOUN
			    " record %zu: duplicate failure for instance \"%s\""
			    " assigned at \"%s\"", i, f->instance_id,
			    f->assigned_at);
	}
out:
	free(keys);
	free(dup);
	return rc;
}

static int
record_validate(const struct vf_record *r, const char *addr, bool dup,
    size_t i, char *why, size_t whylen)
{
	if (!vfaddr_valid(addr))
		return jsondoc_why(why, whylen, "validate " HEALTH_NOUN
		    " record %zu: invalid VF address \"%s\"", i, addr);
	if (r->quarantined && timefmt_is_zero(&r->quarantined_at))
		return jsondoc_why(why, whylen, "validate " HEALTH_NOUN
		    " record %zu: missing quarantine timestamp", i);
	if (!r->quarantined && r->nfailures == 0)
		return jsondoc_why(why, whylen, "validate " HEALTH_NOUN
		    " record %zu: neither quarantined nor any recorded "
		    "failures", i);
	if (failures_validate(r, i, why, whylen) < 0)
		return -1;
	if (dup)
		return jsondoc_why(why, whylen, "validate " HEALTH_NOUN
		    " record %zu: duplicate VF address \"%s\"", i, addr);
	return 0;
}

static int
rec_cmp(const void *x, const void *y)
{
	const struct vf_record *a = x, *b = y;

	return strcmp(a->vf, b->vf);
}

/* Decodes every record; type errors come first, as in Go, so the
 * addresses (possibly invalid) are kept aside for validation. */
static int
records_decode(const json_t *arr, void *dst, const char **addrs, char *why,
    size_t whylen)
{
	struct health *h = dst;
	size_t i, n = json_array_size(arr);

	h->recs = calloc(n + 1, sizeof(*h->recs));
	if (h->recs == NULL)
		return -1;
	h->cap = n + 1;
	for (i = 0; i < n; i++) {
		h->n = i + 1;
		if (record_decode(json_array_get(arr, i), &h->recs[i],
		    &addrs[i], why, whylen) < 0)
			return -1;
	}
	return 0;
}

/* Validates the records in file order, then sorts them by address. */
static int
records_validate(void *dst, const char **addrs, char *why, size_t whylen)
{
	struct health *h = dst;
	struct jsondoc_dup *keys;
	bool *dup;
	size_t i;
	int rc = -1;

	keys = calloc(h->n + 1, sizeof(*keys));
	dup = calloc(h->n + 1, sizeof(*dup));
	if (keys == NULL || dup == NULL)
		goto out;
	for (i = 0; i < h->n; i++)
		keys[i] = (struct jsondoc_dup){ .a = addrs[i],
		    .idx = i };
	jsondoc_mark_dups(keys, h->n, dup);
	for (i = 0; i < h->n; i++) {
		if (record_validate(&h->recs[i], addrs[i], dup[i], i, why,
		    whylen) < 0)
			goto out;
		memcpy(h->recs[i].vf, addrs[i], VF_ADDR_LEN + 1);
	}
	for (i = 1; i < h->n && rec_cmp(&h->recs[i - 1], &h->recs[i]) < 0; i++)
		;
	if (i < h->n)		/* not yet in address order */
		qsort(h->recs, h->n, sizeof(*h->recs), rec_cmp);
	rc = 0;
out:
	free(keys);
	free(dup);
	return rc;
}

/* The fields upstream's Go types have (t/fixtures/go/gen.go), for the
 * checks the tree cannot make (jsongo.h). */
static const struct jsongo_field failure_fields[] = {
	{ "instance_id", JSONGO_STRING, NULL },
	{ "assigned_at", JSONGO_STRING, NULL },
	{ "reported_at", JSONGO_TIME, NULL },
};
static const struct jsongo_obj failure_obj = { "failure", failure_fields,
	sizeof(failure_fields) / sizeof(failure_fields[0]) };
static const struct jsongo_field record_fields[] = {
	{ "vf_address", JSONGO_STRING, NULL },
	{ "failures", JSONGO_ARRAY, &failure_obj },
	{ "quarantined_at", JSONGO_TIME_PTR, NULL },
};
static const struct jsongo_obj record_obj = { "record", record_fields,
	sizeof(record_fields) / sizeof(record_fields[0]) };
static const struct jsongo_field doc_fields[] = {
	{ "version", JSONGO_INT, NULL },
	{ "records", JSONGO_ARRAY, &record_obj },
};
static const struct jsongo_obj doc_obj = { "document", doc_fields,
	sizeof(doc_fields) / sizeof(doc_fields[0]) };

int
health_parse(const char *text, size_t len, struct health *h, char *why,
    size_t whylen)
{
	static const struct jsondoc_kind kind = {
		HEALTH_NOUN, "records", records_decode, records_validate,
		&doc_obj
	};

	memset(h, 0, sizeof(*h));
	if (jsondoc_parse(text, len, &kind, h, why, whylen) == 0)
		return 0;
	health_release(h);
	return -1;
}

/* --- writing ---------------------------------------------------------- */

static void
dump_time(struct obuf *b, const struct timespec *ts)
{
	char t[TIMEFMT_MAX];

	if (timefmt_format(ts, t, sizeof(t)) < 0) {
		b->failed = true;
		return;
	}
	obuf_quote(b, t);
}

static void
dump_failure(struct obuf *b, const struct vf_failure *f, int depth)
{
	bool first = true;

	obuf_put(b, "{", 1);
	if (f->instance_id[0] != '\0') {
		obuf_key(b, depth + 1, "instance_id", &first);
		obuf_quote(b, f->instance_id);
	}
	if (f->assigned_at[0] != '\0') {
		obuf_key(b, depth + 1, "assigned_at", &first);
		obuf_quote(b, f->assigned_at);
	}
	obuf_key(b, depth + 1, "reported_at", &first);
	dump_time(b, &f->reported_at);
	obuf_indent(b, depth);
	obuf_put(b, "}", 1);
}

void
health_dump_record(struct obuf *b, const struct vf_record *r, int depth)
{
	bool first = true;
	size_t j;

	obuf_put(b, "{", 1);
	obuf_key(b, depth + 1, "vf_address", &first);
	obuf_quote(b, r->vf);
	if (r->nfailures > 0) {
		obuf_key(b, depth + 1, "failures", &first);
		obuf_put(b, "[", 1);
		for (j = 0; j < r->nfailures; j++) {
			obuf_item(b, j, depth + 2);
			dump_failure(b, &r->failures[j], depth + 2);
		}
		obuf_array_end(b, r->nfailures, depth + 1);
	}
	if (r->quarantined) {
		obuf_key(b, depth + 1, "quarantined_at", &first);
		dump_time(b, &r->quarantined_at);
	}
	obuf_indent(b, depth);
	obuf_put(b, "}", 1);
}


char *
health_dump(const struct health *h, size_t *len)
{
	struct obuf b = { 0 };
	size_t i;

	obuf_doc_begin(&b, "records");
	for (i = 0; i < h->n; i++) {
		obuf_item(&b, i, 2);
		health_dump_record(&b, &h->recs[i], 2);
	}
	return obuf_doc_end(&b, h->n, len);
}

/* --- loading, saving, queries ----------------------------------------- */

void
health_apply_threshold(struct health *h, unsigned threshold)
{
	struct timespec now;
	size_t i;

	timefmt_now(&now);
	h->threshold = threshold;
	for (i = 0; i < h->n; i++) {
		struct vf_record *r = &h->recs[i];

		if (r->quarantined || r->nfailures < threshold)
			continue;
		r->quarantined = true;
		r->quarantined_at = now;
		h->requarantined = true;
	}
}

int
health_load(struct store *s, struct health *h, unsigned threshold)
{
	char *text;
	size_t len;
	int rc;

	memset(h, 0, sizeof(*h));
	rc = store_read(s, s->health_path, HEALTH_NOUN, &text, &len);
	if (rc < 0)
		return -1;
	if (rc > 0) {
		rc = health_parse(text, len, h, s->why, sizeof(s->why));
		free(text);
		if (rc < 0)
			return store_load_failed(s);
	}
	health_apply_threshold(h, threshold < 1 ? 1 : threshold);
	return 0;
}

struct vf_record *
health_find(const struct health *h, const char *vf)
{
	struct vf_record key;

	if (h->n == 0 || vf == NULL || strlen(vf) > VF_ADDR_LEN)
		return NULL;
	memset(&key, 0, sizeof(key));
	memcpy(key.vf, vf, strlen(vf) + 1);
	return bsearch(&key, h->recs, h->n, sizeof(*h->recs), rec_cmp);
}

bool
health_record_quarantined(const struct vf_record *r, unsigned threshold)
{
	return r->quarantined || (threshold > 0 && r->nfailures >= threshold);
}

bool
health_vf_quarantined(const struct health *h, const char *vf)
{
	const struct vf_record *r = health_find(h, vf);

	return r != NULL && health_record_quarantined(r, h->threshold);
}

size_t
health_count_quarantined(const struct health *h)
{
	size_t i, n = 0;

	for (i = 0; i < h->n; i++)
		n += health_record_quarantined(&h->recs[i], h->threshold);
	return n;
}

static json_t *
time_json(const struct timespec *ts)
{
	char t[TIMEFMT_MAX];

	if (timefmt_format(ts, t, sizeof(t)) < 0)
		return NULL;
	return json_string(t);
}

static json_t *
failure_json(const struct vf_failure *f)
{
	json_t *o = json_object();

	if (o == NULL)
		return NULL;
	if (f->instance_id[0] != '\0')
		json_object_set_new(o, "instance_id",
		    json_string(f->instance_id));
	if (f->assigned_at[0] != '\0')
		json_object_set_new(o, "assigned_at",
		    json_string(f->assigned_at));
	json_object_set_new(o, "reported_at", time_json(&f->reported_at));
	return o;
}

json_t *
health_record_json(const struct vf_record *r)
{
	json_t *o, *arr;
	size_t j;

	o = json_object();
	if (o == NULL)
		return NULL;
	json_object_set_new(o, "vf_address", json_string(r->vf));
	if (r->nfailures > 0) {
		arr = json_array();
		for (j = 0; j < r->nfailures; j++)
			json_array_append_new(arr,
			    failure_json(&r->failures[j]));
		json_object_set_new(o, "failures", arr);
	}
	if (r->quarantined)
		json_object_set_new(o, "quarantined_at",
		    time_json(&r->quarantined_at));
	json_object_set_new(o, "quarantined", json_boolean(r->quarantined));
	return o;
}

void
health_release(struct health *h)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		record_release(&h->recs[i]);
	free(h->recs);
	h->recs = NULL;
	h->n = h->cap = 0;
}

int
health_save(struct store *s, const struct health *h,
    struct atomic_result *res)
{
	struct healthseal seal;
	size_t len = 0;
	char *text;

	if ((text = health_dump(h, &len)) != NULL)
		healthcache_of(&seal, text, len, h);
	if (store_save_text(s, s->health_path, text, len, HEALTH_NOUN,
	    res) < 0)
		return -1;
	(void)healthcache_write(s->dir, &seal);
	return 0;
}
