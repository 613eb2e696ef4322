/*
 * targets.h - the guests sentinel-poll checks: copied from the claims
 * ledger (store.h) or parsed from --targets lines, one JSON object each:
 * {"vf_address", "instance_id", "claimed_at", "vsock", "control_socket",
 * "app_log"}.
 */
#ifndef VFS_TARGETS_H
#define VFS_TARGETS_H

#include <stddef.h>

#include "store.h"

struct target {
	char *vf;			/* all owned */
	char *instance_id;
	char *claimed_at;
	char *vsock;			/* NULL when absent */
	char *control_socket;
	char *app_log;
};

struct targets {
	struct target *v;		/* owned */
	size_t n;
	size_t cap;
};

/* Frees every target and empties ts. */
void targets_free(struct targets *ts);

/* Appends a deep copy of src's fields. 0 or -1/ENOMEM. */
int targets_add(struct targets *ts, const struct target *src);

/* Appends a deep copy of every target of src. 0 or -1/ENOMEM. */
int targets_append_all(struct targets *ts, const struct targets *src);

/* Borrowed pointer into ts (until ts changes), or NULL. */
const struct target *targets_find(const struct targets *ts,
    const char *instance_id);

/* Appends the ledger's claims (no app_log). 0 or -1/ENOMEM. */
int targets_from_claims(const struct claims *c, struct targets *ts);

/*
 * Parses one --targets line and appends its target: claimed_at defaults
 * to "", a valid vf_address and a non-empty instance_id are required.
 * 1 appended; 0 a bad line, *why saying why (static, or borrowed until
 * the next jsonl_parse()); -1/ENOMEM.
 */
int targets_parse_line(struct targets *ts, const char *line, size_t len,
    const char **why);

#endif
