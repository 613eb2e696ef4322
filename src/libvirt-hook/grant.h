/*
 * grant.h - the sentinel's access to one domain's agent channel socket
 * (grant.c; SPEC.md 7.1, security.md). Program-side, but silent: the
 * caller logs.
 */
#ifndef GRANT_H
#define GRANT_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * Adds (grant) or removes the POSIX ACL entry user:uid:rw- of the channel
 * socket at path, which must be libvirt's channel socket of running
 * domain id below state_dir (STATE_DIR/channel/target/domain-ID-.../NAME),
 * reached without following a link. 0, or -1 with errno and *why (a
 * static string) saying which step failed.
 */
int grant_channel(const char *state_dir, long id, const char *path,
    uid_t uid, bool grant, const char **why);

#endif
