/*
 * claims.c - the claims ledger, vf-claims.json (SPEC.md 4.1): decoding
 * and validation (via jsondoc), the writer (via obuf), and the in-memory
 * edits vfpick and vfstore make before a save.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claims.h"
#include "jsondoc.h"
#include "obuf.h"
#include "store.h"

#define CLAIMS_NOUN "VF claims"

static const char *const claim_opt_keys[] = {
	"profile", "type_id", "vsock", "control_socket", "app_log", "ok_at",
	"verify_token", "domain_uuid", "console_offset", "console_inode"
};

#define CLAIM_NOPT (sizeof(claim_opt_keys) / sizeof(claim_opt_keys[0]))

static char **
claim_opt(struct claim *cl, size_t k)
{
	char **f[] = { &cl->profile, &cl->type_id, &cl->vsock,
	    &cl->control_socket, &cl->app_log, &cl->ok_at,
	    &cl->verify_token, &cl->domain_uuid, &cl->console_offset,
	    &cl->console_inode };

	return f[k];
}

/* The value of claim_opt_keys[k] in cl (NULL when absent). */
static const char *
claim_opt_value(const struct claim *cl, size_t k)
{
	const char *const f[] = { cl->profile, cl->type_id, cl->vsock,
	    cl->control_socket, cl->app_log, cl->ok_at, cl->verify_token,
	    cl->domain_uuid, cl->console_offset, cl->console_inode };

	return f[k];
}

static void
claim_release(struct claim *cl)
{
	size_t k;

	free(cl->instance_id);
	free(cl->claimed_at);
	for (k = 0; k < CLAIM_NOPT; k++)
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
		return jsondoc_why(why, whylen, "unmarshal " CLAIMS_NOUN
		    ": json: cannot unmarshal %s into a claim object",
		    jsondoc_type(o));
	if (o != NULL && (jsondoc_str(o, "vf_address", addr, CLAIMS_NOUN, why,
	    whylen) < 0 ||
	    jsondoc_str(o, "instance_id", &id, CLAIMS_NOUN, why, whylen) < 0 ||
	    jsondoc_str(o, "claimed_at", &at, CLAIMS_NOUN, why, whylen) < 0))
		return -1;
	if (*addr == NULL)
		*addr = "";
	cl->instance_id = jsondoc_strdup(id);
	cl->claimed_at = jsondoc_strdup(at);
	for (k = 0; o != NULL && k < CLAIM_NOPT; k++) {
		if (jsondoc_str(o, claim_opt_keys[k], &v, CLAIMS_NOUN, why,
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
	if (!vfaddr_valid(addr))
		return jsondoc_why(why, whylen, "validate " CLAIMS_NOUN
		    " claim %zu: invalid VF address \"%s\"", i, addr);
	if (cl->instance_id[0] == '\0')
		return jsondoc_why(why, whylen, "validate " CLAIMS_NOUN
		    " claim %zu: missing instance_id", i);
	if (cl->claimed_at[0] == '\0')
		return jsondoc_why(why, whylen, "validate " CLAIMS_NOUN
		    " claim %zu: missing claimed_at", i);
	if (dupvf)
		return jsondoc_why(why, whylen, "validate " CLAIMS_NOUN
		    " claim %zu: duplicate VF address \"%s\"", i, addr);
	if (dupid)
		return jsondoc_why(why, whylen, "validate " CLAIMS_NOUN
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
	struct jsondoc_dup *kv, *ki;
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
		kv[i] = (struct jsondoc_dup){ .a = addrs[i],
		    .idx = i };
		ki[i] = (struct jsondoc_dup){
		    .a = c->v[i].instance_id, .idx = i };
	}
	jsondoc_mark_dups(kv, n, dv);
	jsondoc_mark_dups(ki, n, di);
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
	static const struct jsondoc_kind kind = {
		CLAIMS_NOUN, "claims", claims_decode, claims_validate, NULL
	};

	memset(c, 0, sizeof(*c));
	if (jsondoc_parse(text, len, &kind, c, why, whylen) == 0)
		return 0;
	claims_release(c);
	return -1;
}

int
claims_load(struct store *s, struct claims *c)
{
	char *text;
	size_t len;
	int rc;

	memset(c, 0, sizeof(*c));
	rc = store_read(s, s->claims_path, CLAIMS_NOUN, &text, &len);
	if (rc <= 0)
		return rc;
	rc = claims_parse(text, len, c, s->why, sizeof(s->why));
	free(text);
	return rc < 0 ? store_load_failed(s) : 0;
}

static void
dump_claim(struct obuf *b, const struct claim *cl)
{
	bool first = true;
	size_t k;

	obuf_put(b, "{", 1);
	obuf_key(b, 3, "vf_address", &first);
	obuf_quote(b, cl->vf);
	obuf_key(b, 3, "instance_id", &first);
	obuf_quote(b, cl->instance_id);
	obuf_key(b, 3, "claimed_at", &first);
	obuf_quote(b, cl->claimed_at);
	for (k = 0; k < CLAIM_NOPT; k++) {
		const char *v = claim_opt_value(cl, k);

		if (v == NULL)
			continue;
		obuf_key(b, 3, claim_opt_keys[k], &first);
		obuf_quote(b, v);
	}
	obuf_indent(b, 2);
	obuf_put(b, "}", 1);
}

char *
claims_dump(const struct claims *c, size_t *len)
{
	struct obuf b = { 0 };
	size_t i;

	obuf_doc_begin(&b, "claims");
	for (i = 0; i < c->n; i++) {
		obuf_item(&b, i, 2);
		dump_claim(&b, &c->v[i]);
	}
	return obuf_doc_end(&b, c->n, len);
}

int
claims_save(struct store *s, const struct claims *c,
    struct atomic_result *res)
{
	char *text;
	size_t len = 0;

	text = claims_dump(c, &len);
	return store_save_text(s, s->claims_path, text, len, CLAIMS_NOUN, res);
}

struct claim *
claims_find_vf(const struct claims *c, const char *vf)
{
	size_t lo = 0, hi = c->n, mid;
	int cmp;

	/* c->v is sorted by VF (claims_validate, claims_add) and holds
	 * each VF once: a placement asks for every VF of the host. */
	while (vf != NULL && lo < hi) {
		mid = lo + (hi - lo) / 2;
		cmp = strcmp(vf, c->v[mid].vf);
		if (cmp == 0)
			return &c->v[mid];
		if (cmp < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
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
	dst->instance_id = jsondoc_strdup(src->instance_id);
	dst->claimed_at = jsondoc_strdup(src->claimed_at);
	for (k = 0; k < CLAIM_NOPT; k++) {
		const char *v = claim_opt_value(src, k);

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
	size_t at;

	for (at = 0; at < c->n && strcmp(c->v[at].vf, cl->vf) < 0; at++)
		;
	v = store_array_gap(c->v, c->n, &c->cap, 8, sizeof(*v), at);
	if (v == NULL)
		return -1;
	c->v = v;
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
	for (k = 0; k < CLAIM_NOPT; k++) {
		const char *v = claim_opt_value(cl, k);

		if (v != NULL)
			json_object_set_new(o, claim_opt_keys[k],
			    json_string(v));
	}
	return o;
}

void
claims_release(struct claims *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		claim_release(&c->v[i]);
	free(c->v);
	c->v = NULL;
	c->n = c->cap = 0;
}

/* A decimal number of up to 20 digits. */
static bool
decimal(const char *s, unsigned long long *v)
{
	char *end;

	if (s == NULL || s[0] < '0' || s[0] > '9' || strlen(s) > 20)
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno == 0 && *end == '\0';
}

bool
claims_console_start(const struct claim *cl, unsigned long long *offset,
    unsigned long long *inode)
{
	if (decimal(cl->console_offset, offset) &&
	    decimal(cl->console_inode, inode) && *inode != 0)
		return true;
	*offset = *inode = 0;
	return false;
}
