/*
 * claims.h - the claims ledger, vf-claims.json under DATA_DIR/gpu
 * (SPEC.md 4.1): which instance holds which VF. Loaded strictly through
 * store.h, saved atomically. Ownership: a struct claims owns every string
 * in it; free it with claims_release(). Nothing here prints.
 */
#ifndef VFS_CLAIMS_H
#define VFS_CLAIMS_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "atomic.h"
#include "store.h"
#include "vfaddr.h"

struct claim {
	char vf[VF_ADDR_LEN + 1];
	char *instance_id;		/* owned; required */
	char *claimed_at;		/* owned; required */
	char *profile;			/* owned; NULL when absent */
	char *type_id;			/* owned; NULL when absent */
	char *vsock;			/* owned; NULL when absent */
	char *control_socket;		/* owned; NULL when absent */
	char *app_log;			/* owned; NULL when absent */
	char *ok_at;			/* owned; the first OK of this
					   assignment (SPEC.md 7.3), NULL
					   until then */
	char *verify_token;		/* owned; a verification claim's
					   token (SPEC.md 8.2), NULL when
					   absent */
	char *domain_uuid;		/* owned; the verification domain
					   that took the claim over, NULL
					   until then */
	char *console_offset;		/* owned; the console log's size in
					   bytes when the claim was made, in
					   decimal (SPEC.md 8.2): what the
					   assignment wrote follows it; NULL
					   when the log did not exist */
	char *console_inode;		/* owned; that log's inode then, in
					   decimal; NULL with the offset */
};

/*
 * The console offset of cl as numbers: true when both fields are
 * decimal numbers, *offset and *inode set; false (both 0) otherwise.
 */
bool claims_console_start(const struct claim *cl,
    unsigned long long *offset, unsigned long long *inode);

struct claims {
	struct claim *v;		/* owned */
	size_t n;
	size_t cap;
};

/* Loads vf-claims.json; missing = empty. -1 with s->why when unavailable
 * (bad JSON, version, invalid VF, duplicate VF or instance, ...). */
int claims_load(struct store *s, struct claims *c);
int claims_parse(const char *text, size_t len, struct claims *c,
    char *why, size_t whylen);
int claims_save(struct store *s, const struct claims *c,
    struct atomic_result *res);
char *claims_dump(const struct claims *c, size_t *len);

/* Borrowed pointers into c, or NULL. */
struct claim *claims_find_vf(const struct claims *c, const char *vf);
struct claim *claims_find_instance(const struct claims *c, const char *id);

/* Inserts a deep copy of cl in VF order. 0 or -1/ENOMEM. */
int claims_add(struct claims *c, const struct claim *cl);

/* Removes the claim of instance id; 1 if removed, 0 if none. */
int claims_remove_instance(struct claims *c, const char *id);

/* The claim as a JSON object (ledger field order). New ref. */
json_t *claim_json(const struct claim *cl);

void claims_release(struct claims *c);

#endif
