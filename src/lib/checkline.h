/*
 * checkline.h - the check line: what sentinel-poll writes, one JSON
 * object a line, for each guest check, and vfstore apply reads
 * (SPEC.md 4.4). The verdicts and the field names are defined here once;
 * a new verdict is one line in enum checkline_verdict and one name in
 * checkline.c.
 *
 *   {"check":"failed","vf_address":...,"instance_id":...,
 *    "assigned_at":...,"nvrm":...}
 *   {"check":"rpc_error",...,"error":...}
 *   {"check":"list_error","error":...}
 *
 * ok and failed lines are reports: they carry the VF, the instance and
 * the claim time the verdict was made under.
 */
#ifndef VFS_CHECKLINE_H
#define VFS_CHECKLINE_H

#include <stddef.h>

#include <jansson.h>

enum checkline_verdict {
	CHECKLINE_OK,
	CHECKLINE_FAILED,		/* nvrm: the failure message */
	CHECKLINE_UNKNOWN,
	CHECKLINE_RPC_ERROR,		/* error: what failed */
	CHECKLINE_UNSUPPORTED,		/* an agent without the method */
	CHECKLINE_LIST_ERROR,		/* error: why the list failed */
	CHECKLINE_VERDICT_N
};

#define CHECKLINE_CHECK		"check"
#define CHECKLINE_VF		"vf_address"
#define CHECKLINE_INSTANCE	"instance_id"
#define CHECKLINE_ASSIGNED	"assigned_at"
#define CHECKLINE_NVRM		"nvrm"
#define CHECKLINE_ERROR		"error"

#define CHECKLINE_NAME_MAX	64	/* "check" and "vf_address" */

/* "ok", "failed", "unknown", "rpc_error", "unsupported_agent",
 * "list_error" (static); "" for a value out of range. */
const char *checkline_verdict_name(enum checkline_verdict v);

/* The verdict named name; -1/EINVAL for a name not in the list. */
int checkline_verdict_parse(const char *name);

/*
 * A check line of verdict v for a target (vf, instance_id, assigned_at;
 * copied). detail, if not NULL, is the "nvrm" of a failed verdict and
 * the "error" of the others, made valid UTF-8. New reference, or NULL
 * (ENOMEM).
 */
json_t *checkline_new(enum checkline_verdict v, const char *vf,
    const char *instance_id, const char *assigned_at, const char *detail);

/* The line {"check":"list_error","error":why}. New reference or NULL. */
json_t *checkline_list_error(const char *why);

/* A check line read: the strings are borrowed from the object read. */
struct checkline {
	enum checkline_verdict verdict;
	const char *vf, *instance_id, *assigned_at;	/* ok and failed */
};

/*
 * Reads the check line in into cl: the verdict and, for ok and failed,
 * the target, whose instance_id and assigned_at are at most str_max
 * bytes. 0, or -1 with the reason in why (why_len bytes, truncated):
 * a missing or too long field, an unknown verdict, an invalid VF
 * address.
 */
int checkline_read(json_t *in, size_t str_max, struct checkline *cl,
    char *why, size_t why_len);

#endif
