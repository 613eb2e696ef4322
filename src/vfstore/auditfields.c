/*
 * auditfields.c - the fields of vfstore's audit lines (auditfields.h).
 */
#include <errno.h>
#include <string.h>

#include "auditlog.h"
#include "auditfields.h"
#include "utf8.h"
#include "healthfile.h"

/* Appends the failures of vf's record (if any) to arr; 0 or -1. */
static int
add_failures(json_t *arr, const struct health *h, const char *vf)
{
	const struct vf_record *r = health_find(h, vf);
	json_t *rec, *fails, *f;
	size_t i;
	int rc = 0;

	if (r == NULL || r->nfailures == 0)
		return 0;
	if ((rec = health_record_json(r)) == NULL)
		return -1;
	fails = json_object_get(rec, "failures");
	json_array_foreach(fails, i, f)
		if (json_object_set_new(f, "vf_address", json_string(vf)) < 0 ||
		    json_array_append(arr, f) < 0)
			rc = -1;
	json_decref(rec);
	return rc;
}

json_t *
auditfields_failures(const struct health *h, const struct vf_list *l)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; arr != NULL && i < l->n; i++)
		if (add_failures(arr, h, l->v[i]) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	if (arr == NULL)
		errno = ENOMEM;
	return arr;
}

int
auditfields_vfs(const char *gpu_dir, const char *command,
    const char *card, const struct vf_list *l, const char *reason,
    const json_t *failures, const char *outcome)
{
	struct audit_event ev = { .command = command, .card = card,
	    .vf = card == NULL && l->n == 1 ? l->v[0] : NULL,
	    .vfs = (const char (*)[VF_ADDR_LEN + 1])l->v, .nvfs = l->n,
	    .reason = reason, .outcome = outcome };
	json_t *extra = json_object();

	if (extra != NULL && failures != NULL && json_object_set(extra,
	    "failures", (json_t *)failures) < 0) {
		json_decref(extra);
		extra = NULL;
	}
	return auditlog_append_extra(gpu_dir, &ev, extra);
}

int
auditfields_quarantined(const char *gpu_dir, const char *command,
    const struct health *h, const struct health_report *rep,
    unsigned threshold, const char *nvrm)
{
	struct audit_event ev = { .command = command, .vf = rep->vf };
	char vf[1][VF_ADDR_LEN + 1];
	struct vf_list l = { .v = vf, .n = 1 };
	json_t *extra, *fails;

	if (!utf8_valid_str(rep->instance) ||
	    !utf8_valid_str(rep->assigned_at) ||
	    (nvrm != NULL && !utf8_valid_str(nvrm))) {
		errno = EILSEQ;
		return -1;
	}
	if (strlen(rep->vf) > VF_ADDR_LEN) {
		errno = EINVAL;
		return -1;
	}
	memcpy(vf[0], rep->vf, strlen(rep->vf) + 1);
	if ((fails = auditfields_failures(h, &l)) == NULL)
		return -1;
	extra = json_pack("{s:s, s:s, s:I, s:o}", "instance_id",
	    rep->instance, "assigned_at", rep->assigned_at, "threshold",
	    (json_int_t)threshold, "failures", fails);
	if (extra != NULL && nvrm != NULL && *nvrm != '\0' &&
	    json_object_set_new(extra, "nvrm", json_string(nvrm)) < 0) {
		json_decref(extra);
		extra = NULL;
	}
	return auditlog_append_extra(gpu_dir, &ev, extra);
}

int
auditfields_deconfigure(const char *gpu_dir, const char *vf,
    const char *reason)
{
	struct audit_event ev = { .command = "deconfigure", .vf = vf,
	    .reason = reason };

	return auditlog_append(gpu_dir, &ev);
}

int
auditfields_edit(const char *gpu_dir, const char *file, const char *reason)
{
	struct audit_event ev = { .command = "edit", .reason = reason };

	return auditlog_append_extra(gpu_dir, &ev, json_pack("{s:s}", "file",
	    file));
}
