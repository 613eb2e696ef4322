/*
 * init.c - the store's setup: vfstore init creates DATA_DIR/gpu and its
 * lock file (SPEC.md 4.1).
 */
#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/types.h>

#include "conf.h"
#include "log.h"
#include "store.h"

#include "vfstore.h"

/* --owner USER (a name or a number): its uid and primary group. */
static int
owner_ids(const char *owner, uid_t *uid, gid_t *gid)
{
	struct passwd *pw;
	char *end;
	unsigned long n;

	*uid = (uid_t)-1;
	*gid = (gid_t)-1;
	if (owner == NULL)
		return 0;
	if ((pw = getpwnam(owner)) == NULL) {
		errno = 0;
		n = strtoul(owner, &end, 10);
		if (*owner == '\0' || *end != '\0' || errno != 0 ||
		    (pw = getpwuid((uid_t)n)) == NULL) {
			log_msg(LVL_ERROR, "no such user", "{s:s}", "owner",
			    owner);
			return EX_DATAERR;
		}
	}
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}

/* The only command that creates DATA_DIR/gpu (SPEC 4.1, 4.2). */
int
cmd_init(struct ctx *c)
{
	uid_t uid;
	gid_t gid;
	bool created;
	int rc;

	if ((rc = owner_ids(c->a.owner, &uid, &gid)) != 0)
		return rc;
	if (store_create(&c->s, uid, gid, &created) < 0) {
		log_msg(LVL_ERROR,
		    "cannot create the VF health state directory",
		    "{s:s}", "error", c->s.why);
		return EX_IOERR;
	}
	if (created)
		log_msg(LVL_INFO, "created the VF health state directory",
		    "{s:s}", "dir", c->s.dir);
	return emit(json_pack("{s:s, s:b}", "data_dir", c->conf.data_dir,
	    "created", created));
}
