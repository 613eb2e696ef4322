/*
 * store.c - the health store (vf-health.json) and the claims ledger
 * (vf-claims.json): strict all-or-nothing loading with the upstream error
 * texts, the upstream writer layout, and the lock (SPEC.md 4.1).
 *
 * Loading mirrors Go's encoding/json followed by upstream's validation: a
 * type mismatch anywhere is an "unmarshal" error and wins over every
 * validation error; validation then walks the records in file order and
 * reports the first problem. JSON null reads as the zero value, unknown
 * keys are ignored.
 *
 * The writer reproduces `jq --indent 2` (which is also Go's MarshalIndent
 * layout for these documents, HTML escaping aside): two-space indent,
 * "key": value, empty arrays as [], no final newline.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "lock.h"
#include "store.h"
#include "timefmt.h"
#include "utf8.h"

#define STORE_FILE_MAX (64u << 20)	/* larger files are "unavailable" */
#define HEALTH_NOUN "VF health state"
#define CLAIMS_NOUN "VF claims"

static int dir_check(struct store *s);

/* A growing output buffer; "failed" latches an allocation failure. */
struct obuf {
	char *p;
	size_t len;
	size_t cap;
	bool failed;			/* out of memory */
	bool bad_text;			/* a string the loader would refuse */
};

/* An entry for duplicate detection: (a, b) in file position idx. */
struct dupkey {
	const char *a;
	const char *b;
	size_t idx;
};

static int
fmt_why(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (why != NULL && whylen > 0) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	errno = EINVAL;
	return -1;
}

static bool
hexdigits(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

bool
vf_addr_valid(const char *s)
{
	if (s == NULL || strlen(s) != VF_ADDR_LEN)
		return false;
	return hexdigits(s, 4) && s[4] == ':' && hexdigits(s + 5, 2) &&
	    s[7] == ':' && hexdigits(s + 8, 2) && s[10] == '.' &&
	    s[11] >= '0' && s[11] <= '7';
}

/* --- duplicate detection ------------------------------------------- */

static int
dupkey_cmp(const void *x, const void *y)
{
	const struct dupkey *a = x, *b = y;
	int c;

	c = strcmp(a->a, b->a);
	if (c == 0 && a->b != NULL)
		c = strcmp(a->b, b->b);
	if (c == 0)
		c = (a->idx > b->idx) - (a->idx < b->idx);
	return c;
}

/*
 * Sorts keys and sets dup[idx] for every key equal to one at an earlier
 * position, so a walk in file order can report the first repeat where
 * upstream's map-based check would.
 */
static void
mark_dups(struct dupkey *keys, size_t n, bool *dup)
{
	size_t i;

	qsort(keys, n, sizeof(*keys), dupkey_cmp);
	for (i = 1; i < n; i++) {
		if (strcmp(keys[i].a, keys[i - 1].a) != 0)
			continue;
		if (keys[i].b != NULL && strcmp(keys[i].b, keys[i - 1].b) != 0)
			continue;
		dup[keys[i].idx] = true;
	}
}

/* --- Go-like typed access ------------------------------------------ */

static const char *
jtype(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "object";
	case JSON_ARRAY:
		return "array";
	case JSON_STRING:
		return "string";
	case JSON_TRUE:
	case JSON_FALSE:
		return "bool";
	default:
		return "number";
	}
}

/* Absent or null -> NULL. A value of another JSON type than want is an
 * unmarshal error, as in Go. */
static int
member(const json_t *obj, const char *key, json_type want, const char *gotype,
    const json_t **out, const char *noun, char *why, size_t whylen)
{
	const json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (json_typeof(v) != want &&
	    !(want == JSON_TRUE && json_is_boolean(v)))
		return fmt_why(why, whylen, "unmarshal %s: json: cannot "
		    "unmarshal %s into field \"%s\" of type %s", noun,
		    jtype(v), key, gotype);
	*out = v;
	return 0;
}

static int
member_str(const json_t *obj, const char *key, const char **out,
    const char *noun, char *why, size_t whylen)
{
	const json_t *v;

	if (member(obj, key, JSON_STRING, "string", &v, noun, why, whylen) < 0)
		return -1;
	*out = v != NULL ? json_string_value(v) : NULL;
	return 0;
}

/* A timestamp member: absent/null -> *set false; a bad string is an
 * unmarshal error, as Go's time.Time.UnmarshalJSON makes it. */
static int
member_time(const json_t *obj, const char *key, struct timespec *ts,
    bool *set, const char *noun, char *why, size_t whylen)
{
	const char *s;

	*set = false;
	memset(ts, 0, sizeof(*ts));
	if (member_str(obj, key, &s, noun, why, whylen) < 0)
		return -1;
	if (s == NULL)
		return 0;
	if (timefmt_parse(s, ts) < 0)
		return fmt_why(why, whylen, "unmarshal %s: parsing time "
		    "\"%s\": not an RFC 3339 timestamp", noun, s);
	*set = true;
	return 0;
}

/* Version (Go int; missing or null reads as 0) and the named array. */
static int
doc_header(const json_t *root, const char *arrkey, long long *version,
    const json_t **arr, const char *noun, char *why, size_t whylen)
{
	const json_t *v;

	if (!json_is_object(root))
		return fmt_why(why, whylen, "unmarshal %s: json: cannot "
		    "unmarshal %s into a document object", noun, jtype(root));
	if (member(root, "version", JSON_INTEGER, "int", &v, noun, why,
	    whylen) < 0)
		return -1;
	*version = v != NULL ? json_integer_value(v) : 0;
	return member(root, arrkey, JSON_ARRAY, "array", arr, noun, why,
	    whylen);
}

static json_t *
parse_text(const char *text, size_t len, const char *noun, char *why,
    size_t whylen)
{
	json_error_t err;
	json_t *root;

	root = json_loadb(text, len, 0, &err);
	if (root == NULL) {
		fmt_why(why, whylen, "unmarshal %s: %s", noun, err.text);
		if (json_error_code(&err) == json_error_out_of_memory)
			errno = ENOMEM;
	}
	return root;
}

/* --- health: decoding ------------------------------------------------ */

static char *
xstrdup(const char *s)
{
	return strdup(s != NULL ? s : "");
}

static int
failure_decode(const json_t *f, struct vf_failure *out, char *why,
    size_t whylen)
{
	const char *id = NULL, *at = NULL;
	bool set = false;

	if (f != NULL && !json_is_object(f) && !json_is_null(f))
		return fmt_why(why, whylen, "unmarshal " HEALTH_NOUN ": json: "
		    "cannot unmarshal %s into a failure object", jtype(f));
	if (json_is_object(f) &&
	    (member_str(f, "instance_id", &id, HEALTH_NOUN, why, whylen) < 0 ||
	    member_str(f, "assigned_at", &at, HEALTH_NOUN, why, whylen) < 0 ||
	    member_time(f, "reported_at", &out->reported_at, &set,
	    HEALTH_NOUN, why, whylen) < 0))
		return -1;
	if (!json_is_object(f) || !set)		/* Go's zero time */
		timefmt_parse("0001-01-01T00:00:00Z", &out->reported_at);
	out->instance_id = xstrdup(id);
	out->assigned_at = xstrdup(at);
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
		return fmt_why(why, whylen, "unmarshal " HEALTH_NOUN ": json: "
		    "cannot unmarshal %s into a record object", jtype(rec));
	if (member_str(rec, "vf_address", addr, HEALTH_NOUN, why, whylen) < 0 ||
	    member(rec, "failures", JSON_ARRAY, "array", &fails, HEALTH_NOUN,
	    why, whylen) < 0 ||
	    member_time(rec, "quarantined_at", &r->quarantined_at,
	    &r->quarantined, HEALTH_NOUN, why, whylen) < 0)
		return -1;
	if (*addr == NULL)
		*addr = "";
	return failures_decode(fails, r, why, whylen);
}

/* --- health: validation ---------------------------------------------- */

static int
failures_validate(const struct vf_record *r, size_t i, char *why,
    size_t whylen)
{
	struct dupkey *keys;
	bool *dup;
	size_t j;
	int rc = 0;

	keys = calloc(r->nfailures + 1, sizeof(*keys));
	dup = calloc(r->nfailures + 1, sizeof(*dup));
	if (keys == NULL || dup == NULL) {
		rc = -1;
		goto out;
	}
	for (j = 0; j < r->nfailures; j++)
		keys[j] = (struct dupkey){ r->failures[j].instance_id,
		    r->failures[j].assigned_at, j };
	mark_dups(keys, r->nfailures, dup);
	for (j = 0; j < r->nfailures && rc == 0; j++) {
		const struct vf_failure *f = &r->failures[j];

		if (timefmt_is_zero(&f->reported_at))
			rc = fmt_why(why, whylen, "validate " HEALTH_NOUN
			    " record %zu failure %zu: missing report timestamp",
			    i, j);
		else if (dup[j])
			rc = fmt_why(why, whylen, "validate " HEALTH_NOUN
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
	if (!vf_addr_valid(addr))
		return fmt_why(why, whylen, "validate " HEALTH_NOUN
		    " record %zu: invalid VF address \"%s\"", i, addr);
	if (r->quarantined && timefmt_is_zero(&r->quarantined_at))
		return fmt_why(why, whylen, "validate " HEALTH_NOUN
		    " record %zu: missing quarantine timestamp", i);
	if (!r->quarantined && r->nfailures == 0)
		return fmt_why(why, whylen, "validate " HEALTH_NOUN
		    " record %zu: neither quarantined nor any recorded "
		    "failures", i);
	if (failures_validate(r, i, why, whylen) < 0)
		return -1;
	if (dup)
		return fmt_why(why, whylen, "validate " HEALTH_NOUN
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
	struct dupkey *keys;
	bool *dup;
	size_t i;
	int rc = -1;

	keys = calloc(h->n + 1, sizeof(*keys));
	dup = calloc(h->n + 1, sizeof(*dup));
	if (keys == NULL || dup == NULL)
		goto out;
	for (i = 0; i < h->n; i++)
		keys[i] = (struct dupkey){ addrs[i], NULL, i };
	mark_dups(keys, h->n, dup);
	for (i = 0; i < h->n; i++) {
		if (record_validate(&h->recs[i], addrs[i], dup[i], i, why,
		    whylen) < 0)
			goto out;
		memcpy(h->recs[i].vf, addrs[i], VF_ADDR_LEN + 1);
	}
	qsort(h->recs, h->n, sizeof(*h->recs), rec_cmp);
	rc = 0;
out:
	free(keys);
	free(dup);
	return rc;
}

static int
version_check(long long version, const json_t *arr, const char *noun,
    const char *arrname, char *why, size_t whylen)
{
	if (version != 1)
		return fmt_why(why, whylen, "validate %s: unsupported version "
		    "%lld", noun, version);
	if (arr == NULL)
		return fmt_why(why, whylen, "validate %s: expected a %s array",
		    noun, arrname);
	return 0;
}

/*
 * One document kind: its noun for messages, the name of its array, and
 * how to decode the array into dst and then validate it.
 */
struct doc_kind {
	const char *noun;
	const char *arrkey;
	int (*decode)(const json_t *arr, void *dst, const char **addrs,
	    char *why, size_t whylen);
	int (*validate)(void *dst, const char **addrs, char *why,
	    size_t whylen);
};

/*
 * Parses a versioned document into dst: JSON, the header, every element
 * decoded (type errors first, as in Go), the version, then validation.
 * 0 or -1 with why; dst may be partly filled on failure.
 */
static int
doc_parse(const char *text, size_t len, const struct doc_kind *k,
    void *dst, char *why, size_t whylen)
{
	const json_t *arr;
	const char **addrs = NULL;
	json_t *root;
	long long version = 0;
	int rc = -1;

	root = parse_text(text, len, k->noun, why, whylen);
	if (root == NULL)
		return -1;
	if (doc_header(root, k->arrkey, &version, &arr, k->noun, why,
	    whylen) < 0)
		goto out;
	addrs = calloc(json_array_size(arr) + 1, sizeof(*addrs));
	if (addrs == NULL ||
	    k->decode(arr, dst, addrs, why, whylen) < 0 ||
	    version_check(version, arr, k->noun, k->arrkey, why,
	    whylen) < 0 ||
	    k->validate(dst, addrs, why, whylen) < 0)
		goto out;
	rc = 0;
out:
	free(addrs);
	json_decref(root);
	return rc;
}

int
health_parse(const char *text, size_t len, struct health *h, char *why,
    size_t whylen)
{
	static const struct doc_kind kind = {
		HEALTH_NOUN, "records", records_decode, records_validate
	};

	memset(h, 0, sizeof(*h));
	if (doc_parse(text, len, &kind, h, why, whylen) == 0)
		return 0;
	health_free(h);
	return -1;
}

/* --- health: writing --------------------------------------------------- */

static void
ob_put(struct obuf *b, const char *s, size_t n)
{
	size_t cap;
	char *p;

	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (p == NULL) {
			b->failed = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void
ob_str(struct obuf *b, const char *s)
{
	ob_put(b, s, strlen(s));
}

static void
ob_indent(struct obuf *b, int depth)
{
	static const char spaces[] = "                                ";

	ob_put(b, "\n", 1);
	ob_put(b, spaces, (size_t)depth * 2);
}

/* The escape jq writes for byte c (a control character, DEL, quote or
 * backslash). */
static void
escape_byte(unsigned char c, char *esc, size_t len)
{
	/* Pairs of (byte, letter of its short escape). */
	static const char short_esc[] = "\bb\tt\nn\ff\rr\"\"\\\\";
	const char *p = memchr(short_esc, c, sizeof(short_esc) - 1);

	if (p != NULL && (p - short_esc) % 2 == 0)
		snprintf(esc, len, "\\%c", p[1]);
	else
		snprintf(esc, len, "\\u%04x", c);
}

/* A JSON string the way jq prints it: control characters and DEL as
 * \b \t \n \f \r or \u00XX, quote and backslash escaped, UTF-8 raw. */
static void
ob_quote(struct obuf *b, const char *s)
{
	char esc[8];
	const char *run = s;

	if (!utf8_valid_str(s))
		b->bad_text = true;
	ob_put(b, "\"", 1);
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c != 0x7f && c != '"' && c != '\\')
			continue;
		ob_put(b, run, (size_t)(s - run));
		run = s + 1;
		escape_byte(c, esc, sizeof(esc));
		ob_str(b, esc);
	}
	ob_put(b, run, (size_t)(s - run));
	ob_put(b, "\"", 1);
}

/* ,\n + indent + "key": (first member: no comma) */
static void
ob_key(struct obuf *b, int depth, const char *key, bool *first)
{
	if (!*first)
		ob_put(b, ",", 1);
	*first = false;
	ob_indent(b, depth);
	ob_quote(b, key);
	ob_put(b, ": ", 2);
}

static void
ob_time(struct obuf *b, const struct timespec *ts)
{
	char t[TIMEFMT_MAX];

	if (timefmt_format(ts, t, sizeof(t)) < 0) {
		b->failed = true;
		return;
	}
	ob_quote(b, t);
}

static void
dump_failure(struct obuf *b, const struct vf_failure *f, int depth)
{
	bool first = true;

	ob_put(b, "{", 1);
	if (f->instance_id[0] != '\0') {
		ob_key(b, depth + 1, "instance_id", &first);
		ob_quote(b, f->instance_id);
	}
	if (f->assigned_at[0] != '\0') {
		ob_key(b, depth + 1, "assigned_at", &first);
		ob_quote(b, f->assigned_at);
	}
	ob_key(b, depth + 1, "reported_at", &first);
	ob_time(b, &f->reported_at);
	ob_indent(b, depth);
	ob_put(b, "}", 1);
}

static void
dump_record(struct obuf *b, const struct vf_record *r, int depth)
{
	bool first = true;
	size_t j;

	ob_put(b, "{", 1);
	ob_key(b, depth + 1, "vf_address", &first);
	ob_quote(b, r->vf);
	if (r->nfailures > 0) {
		ob_key(b, depth + 1, "failures", &first);
		ob_put(b, "[", 1);
		for (j = 0; j < r->nfailures; j++) {
			if (j > 0)
				ob_put(b, ",", 1);
			ob_indent(b, depth + 2);
			dump_failure(b, &r->failures[j], depth + 2);
		}
		ob_indent(b, depth + 1);
		ob_put(b, "]", 1);
	}
	if (r->quarantined) {
		ob_key(b, depth + 1, "quarantined_at", &first);
		ob_time(b, &r->quarantined_at);
	}
	ob_indent(b, depth);
	ob_put(b, "}", 1);
}

static char *
ob_finish(struct obuf *b, size_t *len)
{
	if (b->failed || b->bad_text) {
		free(b->p);
		errno = b->failed ? ENOMEM : EILSEQ;
		return NULL;
	}
	*len = b->len;
	return b->p;
}

char *
health_dump(const struct health *h, size_t *len)
{
	struct obuf b = { 0 };
	size_t i;

	ob_str(&b, "{\n  \"version\": 1,\n  \"records\": [");
	for (i = 0; i < h->n; i++) {
		if (i > 0)
			ob_put(&b, ",", 1);
		ob_indent(&b, 2);
		dump_record(&b, &h->recs[i], 2);
	}
	if (h->n > 0)
		ob_indent(&b, 1);
	ob_str(&b, "]\n}");
	return ob_finish(&b, len);
}

/* --- health: the store ----------------------------------------------- */

static void
apply_threshold(struct health *h, unsigned threshold)
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
	fmt_why(why, whylen, "read %s: %s", noun, strerror(saved));
	errno = saved == ENOMEM ? ENOMEM : EIO;
	return -1;
}

/*
 * The -1 of a load. An allocation that failed (errno ENOMEM: reading,
 * parsing or decoding) sets s->nomem, so the caller exits 71 instead of
 * reporting the store unavailable: the file may be fine.
 */
static int
load_failed(struct store *s)
{
	if (errno != ENOMEM)
		return -1;
	s->nomem = true;
	if (s->why[0] == '\0')
		snprintf(s->why, sizeof(s->why), "out of memory");
	errno = ENOMEM;
	return -1;
}

int
health_load(struct store *s, struct health *h, unsigned threshold)
{
	char *text;
	size_t len;
	int rc;

	memset(h, 0, sizeof(*h));
	s->why[0] = '\0';
	s->nomem = false;
	if (dir_check(s) < 0)
		return -1;
	rc = slurp(s->health_path, &text, &len, HEALTH_NOUN, s->why,
	    sizeof(s->why));
	if (rc < 0)
		return load_failed(s);
	if (rc > 0) {
		rc = health_parse(text, len, h, s->why, sizeof(s->why));
		free(text);
		if (rc < 0)
			return load_failed(s);
	}
	apply_threshold(h, threshold < 1 ? 1 : threshold);
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
vf_record_quarantined(const struct vf_record *r, unsigned threshold)
{
	return r->quarantined || (threshold > 0 && r->nfailures >= threshold);
}

bool
health_vf_quarantined(const struct health *h, const char *vf)
{
	const struct vf_record *r = health_find(h, vf);

	return r != NULL && vf_record_quarantined(r, h->threshold);
}

size_t
health_count_quarantined(const struct health *h)
{
	size_t i, n = 0;

	for (i = 0; i < h->n; i++)
		n += vf_record_quarantined(&h->recs[i], h->threshold);
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
health_free(struct health *h)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		record_release(&h->recs[i]);
	free(h->recs);
	h->recs = NULL;
	h->n = h->cap = 0;
}

/* --- saving and locking ---------------------------------------------- */

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

static int
save_text(struct store *s, const char *path, char *text, size_t len,
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

int
health_save(struct store *s, const struct health *h,
    struct atomic_result *res)
{
	char *text;
	size_t len = 0;

	text = health_dump(h, &len);
	return save_text(s, s->health_path, text, len, HEALTH_NOUN, res);
}

static int
join(char *buf, size_t len, const char *a, const char *b)
{
	int n = snprintf(buf, len, "%s/%s", a, b);

	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
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
	if (uid != (uid_t)-1 && (chown(s->dir, uid, gid) < 0 ||
	    lchown(s->lock_path, uid, gid) < 0)) {
		saved = errno;
		snprintf(s->why, sizeof(s->why), "chown %.900s: %s", s->dir,
		    strerror(saved));
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

/* --- claims ------------------------------------------------------------ */

static const char *const claim_opt_keys[] = {
	"profile", "type_id", "vsock", "control_socket"
};

static char **
claim_opt(struct claim *cl, size_t k)
{
	char **f[] = { &cl->profile, &cl->type_id, &cl->vsock,
	    &cl->control_socket };

	return f[k];
}

static void
claim_release(struct claim *cl)
{
	size_t k;

	free(cl->instance_id);
	free(cl->claimed_at);
	for (k = 0; k < 4; k++)
		free(*claim_opt(cl, k));
	memset(cl, 0, sizeof(*cl));
}

static int
claim_decode(const json_t *o, struct claim *cl, const char **addr,
    char *why, size_t whylen)
{
	const char *id = NULL, *at = NULL, *v;
	size_t k;

	*addr = "";
	if (json_is_null(o))
		o = NULL;
	else if (!json_is_object(o))
		return fmt_why(why, whylen, "unmarshal " CLAIMS_NOUN ": json: "
		    "cannot unmarshal %s into a claim object", jtype(o));
	if (o != NULL && (member_str(o, "vf_address", addr, CLAIMS_NOUN, why,
	    whylen) < 0 ||
	    member_str(o, "instance_id", &id, CLAIMS_NOUN, why, whylen) < 0 ||
	    member_str(o, "claimed_at", &at, CLAIMS_NOUN, why, whylen) < 0))
		return -1;
	if (*addr == NULL)
		*addr = "";
	cl->instance_id = xstrdup(id);
	cl->claimed_at = xstrdup(at);
	for (k = 0; o != NULL && k < 4; k++) {
		if (member_str(o, claim_opt_keys[k], &v, CLAIMS_NOUN, why,
		    whylen) < 0)
			return -1;
		if (v != NULL && (*claim_opt(cl, k) = strdup(v)) == NULL)
			return -1;
	}
	return cl->instance_id && cl->claimed_at ? 0 : -1;
}

static int
claim_validate(const struct claim *cl, const char *addr, bool dupvf,
    bool dupid, size_t i, char *why, size_t whylen)
{
	if (!vf_addr_valid(addr))
		return fmt_why(why, whylen, "validate " CLAIMS_NOUN
		    " claim %zu: invalid VF address \"%s\"", i, addr);
	if (cl->instance_id[0] == '\0')
		return fmt_why(why, whylen, "validate " CLAIMS_NOUN
		    " claim %zu: missing instance_id", i);
	if (cl->claimed_at[0] == '\0')
		return fmt_why(why, whylen, "validate " CLAIMS_NOUN
		    " claim %zu: missing claimed_at", i);
	if (dupvf)
		return fmt_why(why, whylen, "validate " CLAIMS_NOUN
		    " claim %zu: duplicate VF address \"%s\"", i, addr);
	if (dupid)
		return fmt_why(why, whylen, "validate " CLAIMS_NOUN
		    " claim %zu: duplicate instance \"%s\"", i,
		    cl->instance_id);
	return 0;
}

static int
claim_cmp(const void *x, const void *y)
{
	const struct claim *a = x, *b = y;

	return strcmp(a->vf, b->vf);
}

static int
claims_validate(void *dst, const char **addrs, char *why, size_t whylen)
{
	struct claims *c = dst;
	struct dupkey *kv, *ki;
	bool *dv, *di;
	size_t i, n = c->n;
	int rc = -1;

	kv = calloc(n + 1, sizeof(*kv));
	ki = calloc(n + 1, sizeof(*ki));
	dv = calloc(n + 1, sizeof(*dv));
	di = calloc(n + 1, sizeof(*di));
	if (kv == NULL || ki == NULL || dv == NULL || di == NULL)
		goto out;
	for (i = 0; i < n; i++) {
		kv[i] = (struct dupkey){ addrs[i], NULL, i };
		ki[i] = (struct dupkey){ c->v[i].instance_id, NULL, i };
	}
	mark_dups(kv, n, dv);
	mark_dups(ki, n, di);
	for (i = 0; i < n; i++) {
		if (claim_validate(&c->v[i], addrs[i], dv[i], di[i], i, why,
		    whylen) < 0)
			goto out;
		memcpy(c->v[i].vf, addrs[i], VF_ADDR_LEN + 1);
	}
	qsort(c->v, n, sizeof(*c->v), claim_cmp);
	rc = 0;
out:
	free(kv);
	free(ki);
	free(dv);
	free(di);
	return rc;
}

static int
claims_decode(const json_t *arr, void *dst, const char **addrs, char *why,
    size_t whylen)
{
	struct claims *c = dst;
	size_t i, n = json_array_size(arr);

	c->v = calloc(n + 1, sizeof(*c->v));
	if (c->v == NULL)
		return -1;
	c->cap = n + 1;
	for (i = 0; i < n; i++) {
		c->n = i + 1;
		if (claim_decode(json_array_get(arr, i), &c->v[i], &addrs[i],
		    why, whylen) < 0)
			return -1;
	}
	return 0;
}

int
claims_parse(const char *text, size_t len, struct claims *c, char *why,
    size_t whylen)
{
	static const struct doc_kind kind = {
		CLAIMS_NOUN, "claims", claims_decode, claims_validate
	};

	memset(c, 0, sizeof(*c));
	if (doc_parse(text, len, &kind, c, why, whylen) == 0)
		return 0;
	claims_free(c);
	return -1;
}

int
claims_load(struct store *s, struct claims *c)
{
	char *text;
	size_t len;
	int rc;

	memset(c, 0, sizeof(*c));
	s->why[0] = '\0';
	s->nomem = false;
	if (dir_check(s) < 0)
		return -1;
	rc = slurp(s->claims_path, &text, &len, CLAIMS_NOUN, s->why,
	    sizeof(s->why));
	if (rc <= 0)
		return rc < 0 ? load_failed(s) : 0;
	rc = claims_parse(text, len, c, s->why, sizeof(s->why));
	free(text);
	return rc < 0 ? load_failed(s) : 0;
}

static void
dump_claim(struct obuf *b, const struct claim *cl)
{
	bool first = true;
	size_t k;

	ob_put(b, "{", 1);
	ob_key(b, 3, "vf_address", &first);
	ob_quote(b, cl->vf);
	ob_key(b, 3, "instance_id", &first);
	ob_quote(b, cl->instance_id);
	ob_key(b, 3, "claimed_at", &first);
	ob_quote(b, cl->claimed_at);
	for (k = 0; k < 4; k++) {
		const char *v = *claim_opt((struct claim *)cl, k);

		if (v == NULL)
			continue;
		ob_key(b, 3, claim_opt_keys[k], &first);
		ob_quote(b, v);
	}
	ob_indent(b, 2);
	ob_put(b, "}", 1);
}

char *
claims_dump(const struct claims *c, size_t *len)
{
	struct obuf b = { 0 };
	size_t i;

	ob_str(&b, "{\n  \"version\": 1,\n  \"claims\": [");
	for (i = 0; i < c->n; i++) {
		if (i > 0)
			ob_put(&b, ",", 1);
		ob_indent(&b, 2);
		dump_claim(&b, &c->v[i]);
	}
	if (c->n > 0)
		ob_indent(&b, 1);
	ob_str(&b, "]\n}");
	return ob_finish(&b, len);
}

int
claims_save(struct store *s, const struct claims *c,
    struct atomic_result *res)
{
	char *text;
	size_t len = 0;

	text = claims_dump(c, &len);
	return save_text(s, s->claims_path, text, len, CLAIMS_NOUN, res);
}

struct claim *
claims_find_vf(const struct claims *c, const char *vf)
{
	size_t i;

	for (i = 0; vf != NULL && i < c->n; i++)
		if (strcmp(c->v[i].vf, vf) == 0)
			return &c->v[i];
	return NULL;
}

struct claim *
claims_find_instance(const struct claims *c, const char *id)
{
	size_t i;

	for (i = 0; id != NULL && i < c->n; i++)
		if (strcmp(c->v[i].instance_id, id) == 0)
			return &c->v[i];
	return NULL;
}

static int
claim_copy(struct claim *dst, const struct claim *src)
{
	size_t k;

	memset(dst, 0, sizeof(*dst));
	memcpy(dst->vf, src->vf, sizeof(dst->vf));
	dst->instance_id = xstrdup(src->instance_id);
	dst->claimed_at = xstrdup(src->claimed_at);
	for (k = 0; k < 4; k++) {
		const char *v = *claim_opt((struct claim *)src, k);

		if (v != NULL)
			*claim_opt(dst, k) = strdup(v);
		if (v != NULL && *claim_opt(dst, k) == NULL)
			goto fail;
	}
	if (dst->instance_id != NULL && dst->claimed_at != NULL)
		return 0;
fail:
	claim_release(dst);
	errno = ENOMEM;
	return -1;
}

/* Keeps c->v sorted by VF address, as the writer wants it. */
int
claims_add(struct claims *c, const struct claim *cl)
{
	struct claim *v;
	size_t cap, at;

	if (c->n + 1 > c->cap) {
		cap = c->cap ? c->cap * 2 : 8;
		v = realloc(c->v, cap * sizeof(*v));
		if (v == NULL)
			return -1;
		c->v = v;
		c->cap = cap;
	}
	for (at = 0; at < c->n && strcmp(c->v[at].vf, cl->vf) < 0; at++)
		;
	memmove(&c->v[at + 1], &c->v[at], (c->n - at) * sizeof(*c->v));
	if (claim_copy(&c->v[at], cl) < 0) {
		memmove(&c->v[at], &c->v[at + 1],
		    (c->n - at) * sizeof(*c->v));
		return -1;
	}
	c->n++;
	return 0;
}

int
claims_remove_instance(struct claims *c, const char *id)
{
	struct claim *cl = claims_find_instance(c, id);
	size_t at;

	if (cl == NULL)
		return 0;
	at = (size_t)(cl - c->v);
	claim_release(cl);
	memmove(&c->v[at], &c->v[at + 1], (c->n - at - 1) * sizeof(*c->v));
	c->n--;
	return 1;
}

json_t *
claim_json(const struct claim *cl)
{
	json_t *o = json_object();
	size_t k;

	if (o == NULL)
		return NULL;
	json_object_set_new(o, "vf_address", json_string(cl->vf));
	json_object_set_new(o, "instance_id", json_string(cl->instance_id));
	json_object_set_new(o, "claimed_at", json_string(cl->claimed_at));
	for (k = 0; k < 4; k++) {
		const char *v = *claim_opt((struct claim *)cl, k);

		if (v != NULL)
			json_object_set_new(o, claim_opt_keys[k],
			    json_string(v));
	}
	return o;
}

void
claims_free(struct claims *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		claim_release(&c->v[i]);
	free(c->v);
	c->v = NULL;
	c->n = c->cap = 0;
}
