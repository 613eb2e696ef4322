/*
 * refuse.c - how libvirt-hook refuses a domain's start (SPEC.md 6.6,
 * 8.1): the JSON log line, then, last on stderr, one plain sentence
 * "vfsentinel: ...", which virsh shows; the same sentence to syslog,
 * where `journalctl -t libvirt-hook` finds it.
 */
#include <stdio.h>
#include <unistd.h>

#include "log.h"
#include "libvirt-hook.h"

int
refuse_start(const char *msg)
{
	char line[2048];

	log_msg(LVL_ERROR, "refused the domain's start", "{s:s}", "reason",
	    msg);
	/* virsh shows the hook's stderr: one plain sentence, last; the
	 * journal gets it too. */
	(void)snprintf(line, sizeof(line), "vfsentinel: %s", msg);
	(void)dprintf(STDERR_FILENO, "%s\n", line);
	log_syslog_line(LVL_ERROR, line);
	return EXIT_NO;
}
