/*
 * healthcache.c - the seal of vf-health.json and a report's one-record
 * view of a sealed file (healthcache.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "healthcache.h"
#include "io.h"
#include "obuf.h"

/* Fixed width, so that the next save can overwrite it in place. */
#define SEAL_FORMAT "vfsentinel health seal 1 %020zu %016" PRIx64 " %020zu\n"
#define SEAL_MAX 128

/* In health_dump()'s layout a record starts "\n    {" and is the only
 * thing at that indent; no string holds a raw newline. */
static const char rec_start[] = "\n    {\n      \"vf_address\": \"";
static const char rec_end[] = "\n    }";
static const char doc_end[] = "\n  ]\n}";
static const char doc_empty[] = "[]\n}";

#define LIT(s) (sizeof(s) - 1)

/* --- the seal ---------------------------------------------------------- */

/* A 64-bit hash of the bytes, eight at a time: it tells a file that is
 * still what a save wrote from one changed since (an editor, damage). */
static uint64_t
seal_hash(const char *p, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n, w;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, p + i, n - i);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 29);
}

static size_t
open_failures(const struct vf_record *r)
{
	return r == NULL || r->quarantined ? 0 : r->nfailures;
}

void
healthseal_of(struct healthseal *seal, const char *text, size_t len,
    const struct health *h)
{
	size_t i, n;

	seal->size = len;
	seal->hash = seal_hash(text, len);
	seal->open_max = 0;
	for (i = 0; h != NULL && i < h->n; i++)
		if ((n = open_failures(&h->recs[i])) > seal->open_max)
			seal->open_max = n;
}

static int
seal_path(char *buf, size_t len, const char *dir, const char *suffix)
{
	return io_pathf(buf, len, "%s/%s%s", dir, HEALTHSEAL_FILE, suffix);
}

/* Overwrites an existing seal of n bytes: no new inode, no rename, so
 * no wait for the journal after the save's fsyncs. A reader that sees a
 * torn seal sees one that matches nothing. */
static int
overwrite(const char *path, const char *line, size_t n)
{
	struct stat st;
	ssize_t w;
	int fd, saved;

	/* Never blocks: a FIFO without a reader made here would hold the
	 * store lock for ever (SPEC 6.3); create() then replaces it. */
	fd = io_open_regular(path, O_WRONLY | O_NOFOLLOW, 0);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size != n) {
		(void)close(fd);
		errno = EEXIST;
		return -1;
	}
	w = pwrite(fd, line, n, 0);
	saved = errno;
	if (close(fd) < 0 || w != (ssize_t)n) {
		errno = w < 0 ? saved : EIO;
		return -1;
	}
	return 0;
}

/* A first seal (or one of another size): written aside and renamed. */
static int
create(const char *dir, const char *path, const char *line, size_t n)
{
	char tmp[PATH_MAX];
	int fd, rc;

	if (seal_path(tmp, sizeof(tmp), dir, ".tmp") < 0)
		return -1;
	if (unlink(tmp) < 0 && errno != ENOENT)
		return -1;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0644);
	if (fd < 0)
		return -1;
	rc = io_write_all(fd, line, n);
	if (close(fd) < 0 || rc < 0 || rename(tmp, path) < 0) {
		(void)unlink(tmp);
		return -1;
	}
	return 0;
}

int
healthseal_write(const char *dir, const struct healthseal *seal)
{
	char path[PATH_MAX], line[SEAL_MAX];
	int n;

	if (seal_path(path, sizeof(path), dir, "") < 0)
		return -1;
	n = snprintf(line, sizeof(line), SEAL_FORMAT, seal->size, seal->hash,
	    seal->open_max);
	if (n < 0 || (size_t)n >= sizeof(line)) {
		errno = EOVERFLOW;
		return -1;
	}
	if (overwrite(path, line, (size_t)n) == 0)
		return 0;
	return create(dir, path, line, (size_t)n);
}

bool
healthseal_matches(const char *dir, const char *text, size_t len,
    struct healthseal *seal)
{
	char path[PATH_MAX], again[SEAL_MAX], *line;
	size_t n;
	bool ok;

	if (seal_path(path, sizeof(path), dir, "") < 0 ||
	    (line = io_slurp(path, SEAL_MAX, &n)) == NULL)
		return false;
	ok = sscanf(line, "vfsentinel health seal 1 %zu %" SCNx64 " %zu",
	    &seal->size, &seal->hash, &seal->open_max) == 3 &&
	    snprintf(again, sizeof(again), SEAL_FORMAT, seal->size,
	    seal->hash, seal->open_max) == (int)n &&
	    memcmp(again, line, n) == 0;
	free(line);
	return ok && seal->size == len && seal->hash == seal_hash(text, len);
}

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
healthseal_splice(const char *text, size_t len, const char *vf,
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
health_load_vf(struct store *s, struct health *h, unsigned threshold,
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
	    healthseal_matches(s->dir, v->text, v->len, &v->seal) &&
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
health_view_full(struct store *s, struct health_view *v, struct health *h)
{
	unsigned threshold = h->threshold;

	if (!v->partial)
		return 0;
	health_release(h);
	v->partial = false;
	return parse_full(s, v, h, threshold);
}

int
health_view_save(struct store *s, const struct health_view *v,
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
	text = healthseal_splice(v->text, v->len, v->vf, r, &len);
	if (text != NULL) {
		seal.size = len;
		seal.hash = seal_hash(text, len);
		if (open_failures(r) > seal.open_max)
			seal.open_max = open_failures(r);
	}
	if (store_save_text(s, s->health_path, text, len, HEALTH_NOUN,
	    res) < 0)
		return -1;
	(void)healthseal_write(s->dir, &seal);
	return 0;
}

void
health_view_release(struct health_view *v)
{
	free(v->text);
	v->text = NULL;
	v->len = 0;
}
