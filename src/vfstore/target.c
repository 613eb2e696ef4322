/*
 * target.c - the VFs a command acts on: those of --vf or of --card
 * (exactly one of them), and the check that --vf names a VF this host
 * has. quarantine, clear, drain and undrain take them so.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "log.h"
#include "sysfs.h"

#include "vfstore.h"

/* The VFs named by --vf or --card; exit code on failure. */
int
target_vfs(struct ctx *c, struct vf_list *l)
{
	memset(l, 0, sizeof(*l));
	if ((c->a.vf == NULL) == (c->a.card == NULL))
		cli_usage_error(&c->cli, "give exactly one of --vf or --card");
	if (c->a.vf != NULL)
		return sysfs_vf_list_add(l, c->a.vf) == 0 ? 0 : EX_OSERR;
	if (sysfs_card_vfs(c->conf.sysfs_root, c->a.card, l) < 0) {
		log_msg(LVL_ERROR, "cannot list the card's VFs", "{s:s, s:s}",
		    "card", c->a.card, "error", strerror(errno));
		return EX_IOERR;
	}
	if (l->n == 0)
		log_msg(LVL_ERROR, "no VFs found for card", "{s:s}", "card",
		    c->a.card);
	return l->n == 0 ? EXIT_NO : 0;
}

/*
 * quarantine or drain --vf of a VF this host's sysfs does not have is
 * refused (quarantine unless --force, SPEC.md 4.2): a typo would record
 * it for nothing and leave the real VF in rotation. clear and undrain
 * need no such check: a record of a VF that sysfs no longer has must
 * still be removable.
 */
int
target_check_present(struct ctx *c, const char *hint)
{
	char msg[192];

	if (c->a.vf == NULL || c->a.force ||
	    sysfs_vf_present(c->conf.sysfs_root, c->a.vf))
		return 0;
	snprintf(msg, sizeof(msg), "no VF %s on this host; check the address%s",
	    c->a.vf, hint);
	log_msg(LVL_ERROR, msg, "{s:s, s:s}", "vf", c->a.vf, "sysfs_root",
	    c->conf.sysfs_root);
	return EX_DATAERR;
}
