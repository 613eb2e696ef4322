/*
 * checkline.c - the check line's verdicts and fields, its writer and its
 * reader (checkline.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "checkline.h"
#include "jsonl.h"
#include "vfaddr.h"

static const char *const verdict_names[CHECKLINE_VERDICT_N] = {
	"ok", "failed", "unknown", "rpc_error", "unsupported_agent",
	"list_error"
};

const char *
checkline_verdict_name(enum checkline_verdict v)
{
	return (unsigned)v < CHECKLINE_VERDICT_N ? verdict_names[v] : "";
}

int
checkline_verdict_parse(const char *name)
{
	int k;

	for (k = 0; name != NULL && k < CHECKLINE_VERDICT_N; k++)
		if (strcmp(name, verdict_names[k]) == 0)
			return k;
	errno = EINVAL;
	return -1;
}

json_t *
checkline_new(enum checkline_verdict v, const char *vf,
    const char *instance_id, const char *assigned_at, const char *detail)
{
	json_t *o;

	o = json_pack("{s:s, s:s, s:s, s:s}", CHECKLINE_CHECK,
	    checkline_verdict_name(v), CHECKLINE_VF, vf, CHECKLINE_INSTANCE,
	    instance_id, CHECKLINE_ASSIGNED, assigned_at);
	if (o != NULL && detail != NULL && json_object_set_new(o,
	    v == CHECKLINE_FAILED ? CHECKLINE_NVRM : CHECKLINE_ERROR,
	    jsonl_string_lossy(detail, strlen(detail))) == -1) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

json_t *
checkline_list_error(const char *why)
{
	return json_pack("{s:s, s:o}", CHECKLINE_CHECK,
	    checkline_verdict_name(CHECKLINE_LIST_ERROR), CHECKLINE_ERROR,
	    jsonl_string_lossy(why, strlen(why)));
}

static void __attribute__((format(printf, 3, 4)))
why_set(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);	/* a reason may be cut */
	va_end(ap);
}

/* The string field key of in, NULL (and the reason in why, if why is
 * still empty) if it is missing, not a string, or longer than max. */
static const char *
field(json_t *in, const char *key, size_t max, char *why, size_t why_len)
{
	const char *v = jsonl_str(in, key);

	if (why[0] != '\0')
		return NULL;
	if (v == NULL)
		why_set(why, why_len, "missing string field \"%s\"", key);
	else if (strlen(v) > max)
		why_set(why, why_len, "field \"%s\" is too long", key);
	return why[0] == '\0' ? v : NULL;
}

int
checkline_read(json_t *in, size_t str_max, struct checkline *cl,
    char *why, size_t why_len)
{
	const char *check;
	int k;

	memset(cl, 0, sizeof(*cl));
	why[0] = '\0';
	check = field(in, CHECKLINE_CHECK, CHECKLINE_NAME_MAX, why, why_len);
	if (check == NULL)
		return -1;
	if ((k = checkline_verdict_parse(check)) == -1) {
		why_set(why, why_len, "unknown check \"%.64s\"", check);
		return -1;
	}
	cl->verdict = (enum checkline_verdict)k;
	if (k != CHECKLINE_OK && k != CHECKLINE_FAILED)
		return 0;
	cl->vf = field(in, CHECKLINE_VF, CHECKLINE_NAME_MAX, why, why_len);
	cl->instance_id = field(in, CHECKLINE_INSTANCE, str_max, why, why_len);
	cl->assigned_at = field(in, CHECKLINE_ASSIGNED, str_max, why, why_len);
	if (why[0] == '\0' && !vfaddr_valid(cl->vf))
		why_set(why, why_len, "invalid VF address \"%s\"", cl->vf);
	return why[0] == '\0' ? 0 : -1;
}
