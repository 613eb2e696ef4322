/*
 * clear.c - `vfstore clear --vf|--card`: the VFs' health records removed
 * and their suspicions ended (SPEC.md 4.2, 7.3), by the half of
 * quarantine.c that both commands share.
 */
#include "log.h"

#include "vfstore.h"

int
cmd_clear(struct ctx *c)
{
	bool any = false;
	int rc = quarantine_vfs(c, false, &any);

	if (rc == 0)
		quarantine_log(c, LVL_INFO, any ? "cleared VF health records" :
		    "clear changed nothing: no record");
	return rc;
}
