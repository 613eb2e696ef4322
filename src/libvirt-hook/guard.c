/*
 * guard.c - libvirt-hook's first rule (SPEC.md 8.1): vfsentinel's own
 * trouble may refuse the start of a domain that holds one of its VFs,
 * and nothing else. libvirt kills a running domain whose hook fails at
 * reconnect, and a failed release cannot be undone, so:
 *
 *	any call but prepare, started, release, reconnect	0, stdin unread
 *	XML that is not libvirt's (not well-formed)		0, an error line
 *	no vfsentinel metadata, no <hostdev type='pci'>		0, nothing else
 *								read
 *	the configuration, as the hook reads it			an error in a
 *		key it does not read is a warn line; any other refuses
 *		prepare of a domain with one of its VFs (under SYSFS_ROOT
 *		/ then), and is an error line in every other phase
 *	the domain's VFs (sysfs)				none: 0
 *	the phase's work (stores, lock, claims)			in a child:
 *		its death, or an exit but its phase's own, is an error
 *		line, and at prepare the refusal of an internal error
 *
 * Every other phase than prepare thus exits 0 whatever happens, and
 * leaves the rest to vfstore reconcile.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "log.h"
#include "libvirt-hook.h"

static const char internal_error[] = "internal error in libvirt-hook; "
    "see journalctl -t libvirt-hook";

static const char *const phase_names[] = {
	[PHASE_OTHER] = "other",
	[PHASE_PREPARE] = "prepare begin",
	[PHASE_STARTED] = "started begin",
	[PHASE_RELEASE] = "release end",
	[PHASE_RECONNECT] = "reconnect begin",
};

static void
conf_warn(const char *msg, void *arg)
{
	(void)arg;
	log_msg(LVL_WARN, "configuration: ignored an error in a key "
	    "libvirt-hook does not read (the programs that read it refuse "
	    "it; see vfstore config)", "{s:s}", "error", msg);
}

/* The domain XML from stdin into h->dom: domain_parse()'s returns. */
static int
read_domain(struct hook *h, char *why, size_t len)
{
	size_t n = 0;
	char *text = domain_read(STDIN_FILENO, &n);
	int rc;

	if (text == NULL) {
		(void)snprintf(why, len, "cannot read the domain XML: %s",
		    strerror(errno));
		return DOMAIN_NOT_XML;
	}
	rc = domain_parse(text, n, &h->dom, why, len);
	free(text);
	return rc;
}

/*
 * The configuration as the hook reads it, then the command line's
 * overrides. 0, or -1 with the loader's words in h->cli.err and
 * h->conf at the defaults (SYSFS_ROOT / or --sysfs-root).
 */
static int
load_conf(struct hook *h, bool lock_given)
{
	int code;

	h->cli.load.reader = CONF_READER_HOOK;
	h->cli.load.warn = conf_warn;
	code = cliparse_conf(&h->cli, &h->conf);
	if (code == EX_USAGE)		/* an option's path: not libvirt's */
		cli_usage_error(&h->cli, h->cli.err);
	if (code == 0) {
		if (lock_given)
			h->conf.libvirt_lock_timeout = h->cli.lock_timeout;
		return 0;
	}
	conf_defaults(&h->conf);
	if (h->cli.sysfs_root != NULL)
		(void)snprintf(h->conf.sysfs_root, sizeof(h->conf.sysfs_root),
		    "%s", h->cli.sysfs_root);
	return -1;
}

/* The configuration cannot be loaded: prepare of one of its domains is
 * refused; anything else is 0. */
static int
conf_failed(struct hook *h, enum phase ph)
{
	char msg[sizeof(h->cli.err) + 160];

	if (phases_find_vfs(h, PHASE_OTHER) != 0 ||
	    (h->vfs.n == 0 && !h->dom.has_meta)) {
		log_msg(LVL_WARN, "cannot load the configuration; the domain "
		    "has no vGPU VF of this host", "{s:s, s:s}", "error",
		    h->cli.err, "domain", h->domain_arg);
		return 0;
	}
	if (ph == PHASE_PREPARE) {
		(void)snprintf(msg, sizeof(msg), "cannot load %s; starts of "
		    "domains with vGPU VFs are refused until it is fixed "
		    "(check it with vfstore config)", h->cli.err);
		return refuse_start(msg);
	}
	return log_fail(0, "cannot load the configuration; left to vfstore "
	    "reconcile", "{s:s, s:s, s:s}", "error", h->cli.err, "phase",
	    phase_names[ph], "domain", h->domain_arg);
}

/* A value of the XML is invalid: refused at prepare when the domain is
 * vfsentinel's (metadata, or one of its VFs); else 0. */
static int
bad_value(const struct hook *h, enum phase ph, const char *why)
{
	char msg[640];

	if (!h->dom.has_meta && h->vfs.n == 0)
		return 0;
	(void)snprintf(msg, sizeof(msg), "bad domain XML: %s", why);
	if (ph == PHASE_PREPARE)
		return refuse_start(msg);
	return log_fail(0, msg, "{s:s}", "phase", phase_names[ph]);
}

/* The child's end st: the phase's own exit, or an internal error. */
static int
judge(enum phase ph, int st)
{
	if (WIFEXITED(st) && (WEXITSTATUS(st) == 0 ||
	    (ph == PHASE_PREPARE && WEXITSTATUS(st) == EXIT_NO)))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		log_msg(LVL_ERROR, "the phase's work died; left to vfstore "
		    "reconcile", "{s:s, s:i}", "phase", phase_names[ph],
		    "signal", WTERMSIG(st));
	else
		log_msg(LVL_ERROR, "the phase's work failed; left to vfstore "
		    "reconcile", "{s:s, s:i}", "phase", phase_names[ph],
		    "status", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return ph == PHASE_PREPARE ? refuse_start(internal_error) : 0;
}

/* The phase's work in a child, so that its death cannot change the
 * hook's exit. */
static int
work_in_child(struct hook *h, enum phase ph)
{
	pid_t pid;
	int st;

	if ((pid = fork()) == -1) {
		log_msg(LVL_ERROR, "cannot fork", "{s:s}", "error",
		    strerror(errno));
		return ph == PHASE_PREPARE ? refuse_start(internal_error) : 0;
	}
	if (pid == 0)
		_exit(phases_work(h, ph) & 0xff);
	while (waitpid(pid, &st, 0) == -1)
		if (errno != EINTR) {
			log_msg(LVL_ERROR, "cannot wait for the phase's work",
			    "{s:s}", "error", strerror(errno));
			st = 0xff << 8;		/* as an exit 255 */
			break;
		}
	return judge(ph, st);
}

int
guard_run(struct hook *h, bool lock_given)
{
	enum phase ph = phases_of(h->op, h->sub);
	char why[512];
	int rc, code;

	if (ph == PHASE_OTHER)
		return 0;
	rc = read_domain(h, why, sizeof(why));
	if (rc == DOMAIN_NOT_XML)
		return log_fail(0, "not a libvirt domain XML; nothing done",
		    "{s:s, s:s, s:s}", "error", why, "phase", phase_names[ph],
		    "domain", h->domain_arg);
	if (!h->dom.has_meta && !h->dom.has_pci)
		return 0;
	if (load_conf(h, lock_given) == -1)
		return conf_failed(h, ph);
	code = phases_find_vfs(h, rc == 0 ? ph : PHASE_OTHER);
	if (code != 0)
		return ph == PHASE_PREPARE ? code : 0;
	if (rc == DOMAIN_BAD_VALUE)
		return bad_value(h, ph, why);
	if (h->vfs.n == 0)
		return 0;
	return work_in_child(h, ph);
}
