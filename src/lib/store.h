/*
 * store.h - the health store (vf-health.json) and the claims ledger
 * (vf-claims.json) under DATA_DIR/gpu, with their lock (SPEC.md 4.1).
 *
 * Loading is all-or-nothing and strict: any problem makes the store
 * "unavailable" and the caller must fail closed without writing. Saving
 * uses atomic_write(). Neither function prints; reasons go to s->why.
 * Ownership: structures returned by the loaders own every string in them;
 * free them with health_release()/claims_release().
 *
 * One header for the callers, four modules behind it: store.c (paths,
 * directory check, init, lock, reading and saving), healthfile.c (the
 * health file), claims.c (the ledger), with jsondoc.c (Go-compatible
 * decoding) and obuf.c (the writer) under both.
 */
#ifndef VFS_STORE_H
#define VFS_STORE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include <sys/types.h>
#include <jansson.h>

#include "atomic.h"
#include "vfaddr.h"

#define STORE_STRING_MAX 256		/* instance_id, assigned_at */

struct vf_failure {
	char *instance_id;		/* owned, "" when absent */
	char *assigned_at;		/* owned, "" when absent; opaque */
	struct timespec reported_at;
};

struct vf_record {
	char vf[VF_ADDR_LEN + 1];
	struct vf_failure *failures;	/* owned, oldest first */
	size_t nfailures;
	bool quarantined;		/* quarantined_at is set */
	struct timespec quarantined_at;
};

struct health {
	struct vf_record *recs;		/* owned, sorted by vf */
	size_t n;
	size_t cap;
	unsigned threshold;
	bool requarantined;		/* the threshold applied: persist */
};

struct claim {
	char vf[VF_ADDR_LEN + 1];
	char *instance_id;		/* owned; required */
	char *claimed_at;		/* owned; required */
	char *profile;			/* owned; NULL when absent */
	char *type_id;			/* owned; NULL when absent */
	char *vsock;			/* owned; NULL when absent */
	char *control_socket;		/* owned; NULL when absent */
	char *app_log;			/* owned; NULL when absent */
};

struct claims {
	struct claim *v;		/* owned */
	size_t n;
	size_t cap;
};

struct store {
	char dir[PATH_MAX];		/* DATA_DIR/gpu */
	char health_path[PATH_MAX];
	char claims_path[PATH_MAX];
	char lock_path[PATH_MAX];
	int lock_fd;			/* -1 when not held */
	bool unavailable;		/* the last -1: DATA_DIR/gpu missing */
	bool nomem;			/* the last load's -1: out of memory,
					   an OS error (71), not unavailable */
	char why[1024];			/* reason for the last -1 */
	const char *reading;		/* the file store_read() last read:
					   a load's reason starts with it */
};

/* Fills in the paths. -1/ENAMETOOLONG. */
int store_init(struct store *s, const char *data_dir);

/*
 * Takes the lock. First of all DATA_DIR/gpu must exist: if it is missing
 * (or not a directory) the store is unavailable: -1, s->unavailable set and
 * s->why naming `vfstore init` (caller exits 69); nothing is created. A
 * shared lock on a directory without a lock file holds nothing (nothing to
 * read). Timeout: -1 with errno EWOULDBLOCK (caller exits 75); another
 * failure (creating the lock file) -1 with errno (caller exits 74).
 */
int store_lock(struct store *s, bool exclusive, unsigned timeout_s);
void store_unlock(struct store *s);

/*
 * `vfstore init`: creates DATA_DIR/gpu (mode 0755, its parent fsynced) and
 * the lock file; *created tells whether the directory was new. With uid
 * other than (uid_t)-1 both are given to uid:gid. An existing directory is
 * left as it is (but for the owner). -1 with errno and s->why.
 */
int store_create(struct store *s, uid_t uid, gid_t gid, bool *created);

/*
 * For healthfile.c and claims.c. store_read() resets s->why and s->nomem,
 * checks DATA_DIR/gpu, and reads path into *text (the caller frees it):
 * 1 read, 0 missing (an empty store), -1 with s->why (s->nomem for
 * ENOMEM); a FIFO, directory or other non-regular file is refused
 * without blocking ("read NOUN: not a regular file"). store_load_failed()
 * is the -1 of a load whose parse failed: it sets s->nomem when errno is
 * ENOMEM, and starts s->why with the file's path (SPEC 6.3: every
 * fail-closed reason names the file). store_save_text() writes and frees
 * text (NULL: the dump failed, errno set) atomically: -1 with errno,
 * s->why in upstream's words ("sync VF health state parent dir: ...").
 */
int store_read(struct store *s, const char *path, const char *noun,
    char **text, size_t *len);
int store_load_failed(struct store *s);
int store_save_text(struct store *s, const char *path, char *text,
    size_t len, const char *noun, struct atomic_result *res);

/* --- healthfile.c ----------------------------------------------------- */

#define HEALTH_NOUN "VF health state"

/*
 * Loads vf-health.json and applies the threshold: a record with at least
 * threshold failures and no quarantined_at gets quarantined_at = now and
 * h->requarantined is set (the next save persists it). A missing file is
 * an empty store. -1 with s->why (upstream wording, e.g. "validate VF
 * health state record 0: invalid VF address \"x\"") when unavailable
 * (a missing DATA_DIR/gpu too, with s->unavailable set).
 */
int health_load(struct store *s, struct health *h, unsigned threshold);

/* Parses health JSON text (for the loader and fuzzing). Same rules. */
int health_parse(const char *text, size_t len, struct health *h,
    char *why, size_t whylen);

/* Serialises in the upstream layout (2-space indent, no final newline).
 * New buffer the caller frees; NULL/ENOMEM, or NULL/EILSEQ when a string
 * is not valid UTF-8 (the loader would refuse the file: never written). */
char *health_dump(const struct health *h, size_t *len);

/* Appends r in that layout, its "{" at depth (for healthcache.c). */
struct obuf;
void health_dump_record(struct obuf *b, const struct vf_record *r, int depth);

/* The threshold part of health_load(): sets h->threshold, quarantines
 * (now) what reached it, and sets h->requarantined then. */
void health_apply_threshold(struct health *h, unsigned threshold);

/* Persists h atomically, and seals it (healthcache.h). -1 with errno,
 * s->why and res filled. */
int health_save(struct store *s, const struct health *h,
    struct atomic_result *res);

/* Borrowed pointer into h, or NULL. */
struct vf_record *health_find(const struct health *h, const char *vf);

/*
 * True when r is quarantined: quarantined_at is set, or threshold (>= 1;
 * 0 means none) failures are tallied.
 */
bool vf_record_quarantined(const struct vf_record *r, unsigned threshold);

/* True when h holds a quarantined record for vf (under h->threshold). */
bool health_vf_quarantined(const struct health *h, const char *vf);

/* The number of quarantined records in h (under h->threshold). */
size_t health_count_quarantined(const struct health *h);

/* The record as JSON (upstream field order), plus "quarantined". New ref. */
json_t *health_record_json(const struct vf_record *r);

void health_release(struct health *h);

/* --- claims.c --------------------------------------------------------- */

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

/*
 * Opens a slot at index at of the array v (n elements of size sz, room
 * for *cap; doubled from first when full) by moving the later elements
 * up. Returns the array, perhaps moved (the caller stores it), or
 * NULL/ENOMEM with v unchanged. The sorted inserts of the health records
 * and the claims.
 */
void *store_array_gap(void *v, size_t n, size_t *cap, size_t first,
    size_t sz, size_t at);

/* Removes the claim of instance id; 1 if removed, 0 if none. */
int claims_remove_instance(struct claims *c, const char *id);

/* The claim as a JSON object (ledger field order). New ref. */
json_t *claim_json(const struct claim *cl);

void claims_release(struct claims *c);

#endif
