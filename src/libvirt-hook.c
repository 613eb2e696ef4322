/*
 * libvirt-hook - libvirt's qemu hook for vfsentinel (SPEC.md 6.6): every
 * domain libvirt starts with an NVIDIA vGPU VF of this host is claimed,
 * watched and released, with no change to the launcher.
 *
 * libvirtd (>= 6.5) runs every executable in /etc/libvirt/hooks/qemu.d/
 * as `HOOK DOMAIN OPERATION SUB-OPERATION EXTRA` with the full domain
 * XML on stdin, and waits for it: the hook never calls back into
 * libvirt. Input: that XML (domain.c), the VF inventory under
 * SYSFS_ROOT, and the stores in DATA_DIR/gpu under their exclusive lock,
 * waited for at most libvirt.lock_timeout seconds. Output: nothing on
 * stdout; JSON log lines on stderr (libvirt keeps them in its log), and
 * at a refused prepare one last plain sentence, which virsh shows.
 *
 *	prepare begin	refuse a quarantined, claimed or dirty VF, or an
 *			unavailable store; else claim the VF for the
 *			domain's UUID (and write the metadata's profile)
 *	started begin	complete the claim: QMP monitor socket, guest
 *			endpoint, console log
 *	release end	release the claim (deconfigure: libvirt.deconfigure)
 *	reconnect begin	the claim exists (adopted if not) and is complete
 *
 * libvirt passes the domain's name as it is, and a name may look like an
 * option (--help, -h, --version): a call with exactly four arguments is
 * libvirt's, and all four are operands. Options come only before "--"
 * (libvirt-hook [OPTIONS] -- DOMAIN OPERATION SUB-OPERATION EXTRA); any
 * other call is SPEC 2.1's (--help alone prints the help). Nothing is
 * ever written to stdout while operands are taken: libvirt reads a
 * hook's stdout as the new domain XML at migrate and restore.
 *
 * What is whose, and what may fail (SPEC.md 8.1, guard.c): a domain
 * with neither vfsentinel metadata nor a <hostdev type='pci'> costs one
 * parse, and nothing else is read (no configuration, store, lock or
 * sysfs). Only prepare begin of a domain with one of vfsentinel's VFs
 * ever fails; every other phase exits 0 whatever happens (a
 * configuration it cannot load, an unavailable store, a lock it cannot
 * take, a crash of the phase's work, which runs in a child), logs it
 * at error and leaves the rest to vfstore reconcile. Lines at warn and
 * above also go to syslog (journalctl -t libvirt-hook): libvirt shows a
 * hook's stderr only when it fails. Exit codes: 0 done; 1 prepare
 * refused; 64 usage (a call that is not libvirt's).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>

#include "cli.h"
#include "log.h"
#include "libvirt-hook/libvirt-hook.h"
#include "healthfile.h"
#include "claims.h"

#define PROG "libvirt-hook"

static const char usage[] =
    "usage: libvirt-hook DOMAIN OPERATION SUB-OPERATION EXTRA\n"
    "       libvirt-hook [-c FILE] [--data-dir DIR] [--sysfs-root DIR]\n"
    "                    [--lock-timeout S] [--log-level LEVEL]\n"
    "                    [--proc-root DIR]\n"
    "                    -- DOMAIN OPERATION SUB-OPERATION EXTRA\n"
    "\n"
    "libvirt's qemu hook: claims, completes and releases the vGPU VF of a\n"
    "libvirt domain; the domain XML comes on stdin. Four arguments are\n"
    "always libvirt's, whatever they look like; options go before --.\n"
    "\n"
    "Options:\n"
    CLI_HELP_HOST_OPTIONS
    "                        (the hook waits libvirt.lock_timeout unless\n"
    "                        --lock-timeout is given)\n"
    "  --proc-root DIR       prefix for /proc, for the VFIO holder scan\n"
    "                        (default /)\n"
    "  -h, --help            print this help and exit\n"
    "  --version             print the version and exit\n";

enum {
	OPT_PROC_ROOT = CLI_OPT_FIRST_FREE
};

static const struct option opts[] = {
	CLI_COMMON_OPTIONS,
	{ "proc-root", required_argument, NULL, OPT_PROC_ROOT },
	{ 0 }
};

/*
 * libvirt's call, exactly four arguments, is all operands. Otherwise the
 * options are the arguments before a "--" that is fifth from the end,
 * and getopt_long() must take every one of them, that "--" included.
 */
static void
parse_args(int argc, char **argv, struct hook *h, bool *lock_given)
{
	int c, n = argc;

	cli_init(&h->cli, usage);
	h->proc_root = "/";
	if (argc >= 6 && strcmp(argv[argc - 5], "--") == 0)
		n = argc - 4;
	while (argc != 5 && (c = cli_next(&h->cli, n, argv, CLI_SHORTOPTS,
	    opts)) != -1) {
		switch (c) {
		case OPT_PROC_ROOT:
			h->proc_root = optarg;
			break;
		default:
			cli_bad_option(&h->cli, argv);
		}
	}
	if (argc == 5)
		optind = 1;
	else if (n == argc || optind != n)
		cli_usage_error(&h->cli, "expected DOMAIN OPERATION "
		    "SUB-OPERATION EXTRA, or [OPTIONS] -- DOMAIN OPERATION "
		    "SUB-OPERATION EXTRA");
	h->domain_arg = argv[optind];
	h->op = argv[optind + 1];
	h->sub = argv[optind + 2];
	/* cliparse keeps no mark of --lock-timeout; its default is 10. */
	for (c = 1; c < optind; c++)
		if (strncmp(argv[c], "--lock-timeout", 14) == 0)
			*lock_given = true;
}

static void
release(struct hook *h)
{
	hostview_release(&h->view);
	domain_release(&h->dom);
	free(h->vfs.v);
}

int
main(int argc, char **argv)
{
	struct hook h = { 0 };
	bool lock_given = false;
	int code;

	cli_start(PROG);
	parse_args(argc, argv, &h, &lock_given);
	/* libvirt shows a hook's stderr only when it fails (SPEC 8.1). */
	log_syslog();
	/* A claim, once started, is finished: a signal only sets a flag. */
	cli_stop_signals(true);
	LIBXML_TEST_VERSION
	code = guard_run(&h, lock_given);
	release(&h);
	xmlCleanupParser();
	return code;
}
