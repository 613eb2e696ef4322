/*
 * targets.c - the guests sentinel-poll checks: copied from the claims
 * ledger or parsed from --targets lines.
 */
#include <stdlib.h>
#include <string.h>

#include "jsonl.h"
#include "store.h"
#include "targets.h"

static void
target_free(struct target *t)
{
	free(t->vf);
	free(t->instance_id);
	free(t->claimed_at);
	free(t->vsock);
	free(t->control_socket);
	free(t->app_log);
}

void
targets_free(struct targets *ts)
{
	size_t i;

	for (i = 0; i < ts->n; i++)
		target_free(&ts->v[i]);
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

int
targets_add(struct targets *ts, const struct target *src)
{
	struct target *t, *v;

	if (ts->n == ts->cap) {
		v = reallocarray(ts->v, ts->cap ? ts->cap * 2 : 16,
		    sizeof(*v));
		if (v == NULL)
			return -1;
		ts->v = v;
		ts->cap = ts->cap ? ts->cap * 2 : 16;
	}
	t = &ts->v[ts->n];
	memset(t, 0, sizeof(*t));
	if (dup_opt(&t->vf, src->vf) || dup_opt(&t->instance_id,
	    src->instance_id) || dup_opt(&t->claimed_at, src->claimed_at) ||
	    dup_opt(&t->vsock, src->vsock) || dup_opt(&t->control_socket,
	    src->control_socket) || dup_opt(&t->app_log, src->app_log)) {
		target_free(t);
		return -1;
	}
	ts->n++;
	return 0;
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

int
targets_parse_line(struct targets *ts, const char *line, size_t len,
    const char **why)
{
	struct target t = { 0 };
	json_t *o;
	int rc = 1;

	if ((o = jsonl_parse(line, len, why)) == NULL)
		return 0;
	t.vf = (char *)jsonl_str(o, "vf_address");
	t.instance_id = (char *)jsonl_str(o, "instance_id");
	t.claimed_at = (char *)jsonl_str(o, "claimed_at");
	t.vsock = (char *)jsonl_str(o, "vsock");
	t.control_socket = (char *)jsonl_str(o, "control_socket");
	t.app_log = (char *)jsonl_str(o, "app_log");
	if (t.claimed_at == NULL)
		t.claimed_at = "";
	if (t.vf == NULL || !vf_addr_valid(t.vf) || t.instance_id == NULL ||
	    t.instance_id[0] == '\0') {
		*why = "needs a valid vf_address and an instance_id";
		rc = 0;
	} else if (targets_add(ts, &t) == -1) {
		rc = -1;
	}
	json_decref(o);
	return rc;
}
