/*
 * vfpick - choose, and optionally claim and configure, a healthy vGPU VF
 * for a profile (SPEC.md 4.3).
 *
 * Input: the VF inventory under SYSFS_ROOT, the health store and the
 * claims ledger in DATA_DIR/gpu, read under the store lock (shared for a
 * dry run, exclusive with --claim, held until the claim is persisted and
 * the VF configured). Output: one line
 *	{"vf_address":...,"card":...,"profile":...,"type_id":...}
 * plus "instance_id" and "claimed_at" with --claim.
 *
 * Exit codes: 0 chosen; 1 no eligible VF (upstream messages), or the VF
 * to configure turned out quarantined; 64 usage; 65 the instance holds a
 * claim of another profile, or one that cannot be configured; 69 health
 * store or ledger unavailable (no claim persisted); 74 I/O error
 * (inventory, persisting the claim, writing current_vgpu_type, stdout);
 * 75 lock timeout; 78 configuration.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <jansson.h>

#include "claims.h"
#include "cli.h"
#include "endpoint.h"
#include "healthfile.h"
#include "io.h"
#include "jsonl.h"
#include "log.h"
#include "placement.h"
#include "sig.h"
#include "store.h"
#include "sysfs.h"
#include "timefmt.h"
#include "vfaddr.h"
#include "vfpick/vfpick.h"

#define PROG "vfpick"

static const char usage[] =
    "usage: vfpick [-c FILE] [--data-dir DIR] [--sysfs-root DIR]\n"
    "              [--lock-timeout S] [--log-level LEVEL] --profile NAME\n"
    "              [--vf VF [--include-quarantined] [--include-suspect]]\n"
    "              [--claim ID [--vsock EP] [--control-socket PATH]\n"
    "              [--configure | --adopt [--proc-root DIR]]\n"
    "              [--format json|libvirt]] [--seed N]\n"
    "\n"
    "Chooses a healthy vGPU VF for a profile at random and, with --claim,\n"
    "claims (and configures) it; prints it as JSON.\n"
    "\n"
    "Options:\n"
    "  --profile NAME        the vGPU profile, exactly as in\n"
    "                        creatable_vgpu_types\n"
    "  --vf VF               pin the choice to VF (a verification boot): it\n"
    "                        must offer the profile and be unused\n"
    "  --include-quarantined\n"
    "                        with --vf: accept a quarantined VF\n"
    "  --include-suspect     with --vf: accept a suspect VF under\n"
    "                        suspect.placement exclude (a verification)\n"
    "  --claim ID            claim the chosen VF for instance ID before\n"
    "                        anything touches it\n"
    "  --vsock EP            the guest endpoint kept in the claim for\n"
    "                        sentinel-poll: vsock:CID:PORT, hvsock:PATH:PORT\n"
    "                        or unix:PATH\n"
    "  --control-socket PATH\n"
    "                        the VMM's control socket kept in the claim; the\n"
    "                        guest is polled only while a listener holds it\n"
    "  --configure           after claiming, write the profile's type id to\n"
    "                        nvidia/current_vgpu_type and read it back\n"
    "  --adopt               with --vf and --claim: record the claim of a VF\n"
    "                        already configured with the profile (a running\n"
    "                        VM), without writing its type\n"
    "  --proc-root DIR       with --adopt: prefix for /proc, for the VFIO\n"
    "                        holder scan (default /)\n"
    "  --format FORMAT       json (default) or, with --claim, libvirt: the\n"
    "                        VF's <hostdev> element for a domain XML\n"
    "  --seed N              draw with a repeatable generator seeded with N\n"
    CLI_HELP_HOST_OPTIONS
    "  -h, --help            print this help and exit\n"
    "  --version             print the version and exit\n";

enum {
	OPT_PROFILE = CLI_OPT_FIRST_FREE,
	OPT_CLAIM,
	OPT_VSOCK,
	OPT_CONTROL_SOCKET,
	OPT_CONFIGURE,
	OPT_SEED,
	OPT_VF,
	OPT_INCLUDE_QUARANTINED,
	OPT_INCLUDE_SUSPECT,
	OPT_ADOPT,
	OPT_PROC_ROOT,
	OPT_FORMAT
};

static void
check_args(struct run *r)
{
	struct endpoint ep;

	if (r->profile == NULL || r->profile[0] == '\0')
		cli_usage_error(&r->cli, "--profile is required");
	cli_require_text("--profile", r->profile);
	cli_require_text("--claim", r->instance);
	cli_require_text("--vsock", r->vsock);
	cli_require_text("--control-socket", r->control_socket);
	if (r->instance == NULL && (r->vsock || r->control_socket ||
	    r->configure))
		cli_usage_error(&r->cli, "--vsock, --control-socket and "
		    "--configure need --claim");
	if (r->instance != NULL && (r->instance[0] == '\0' ||
	    strlen(r->instance) > STORE_STRING_MAX))
		cli_usage_error(&r->cli, "--claim: instance id must be 1-256 "
		    "bytes");
	if (r->vsock != NULL && endpoint_parse(r->vsock, &ep) == -1)
		cli_usage_error(&r->cli, "--vsock: invalid endpoint");
	if (r->control_socket != NULL && r->control_socket[0] == '\0')
		cli_usage_error(&r->cli, "--control-socket: empty path");
	if (r->include_quarantined && r->pin[0] == '\0')
		cli_usage_error(&r->cli, "--include-quarantined needs --vf");
	if (r->include_suspect && r->pin[0] == '\0')
		cli_usage_error(&r->cli, "--include-suspect needs --vf");
	if (r->adopt && (r->pin[0] == '\0' || r->instance == NULL))
		cli_usage_error(&r->cli, "--adopt needs --vf and --claim");
	if (r->adopt && (r->configure || r->include_quarantined))
		cli_usage_error(&r->cli, "--adopt writes nothing to the VF: "
		    "no --configure, no --include-quarantined");
	if (r->libvirt_format && r->instance == NULL)
		cli_usage_error(&r->cli, "--format libvirt needs --claim");
}

/* --format: json or libvirt. */
static void
parse_format(struct run *r, const char *arg)
{
	if (strcmp(arg, "libvirt") == 0)
		r->libvirt_format = true;
	else if (strcmp(arg, "json") != 0)
		cli_usage_error(&r->cli, "--format: json or libvirt");
}

/* --vf: the canonical form of what lspci prints (SPEC.md 2.3), or 65. */
static void
parse_vf(struct run *r, const char *arg)
{
	char why[512];

	if (vfaddr_parse_arg(arg, r->pin) == 0)
		return;
	vfaddr_why("VF", arg, why, sizeof(why));
	die(EX_DATAERR, why, NULL);
}

static const struct option opts[] = {
	CLI_COMMON_OPTIONS,
	{ "profile", required_argument, NULL, OPT_PROFILE },
	{ "claim", required_argument, NULL, OPT_CLAIM },
	{ "vsock", required_argument, NULL, OPT_VSOCK },
	{ "control-socket", required_argument, NULL, OPT_CONTROL_SOCKET },
	{ "configure", no_argument, NULL, OPT_CONFIGURE },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "vf", required_argument, NULL, OPT_VF },
	{ "include-quarantined", no_argument, NULL, OPT_INCLUDE_QUARANTINED },
	{ "include-suspect", no_argument, NULL, OPT_INCLUDE_SUSPECT },
	{ "adopt", no_argument, NULL, OPT_ADOPT },
	{ "proc-root", required_argument, NULL, OPT_PROC_ROOT },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ 0 }
};

static void
parse_args(int argc, char **argv, struct run *r)
{
	int c;

	cli_init(&r->cli, usage);
	r->proc_root = "/";
	while ((c = cli_next(&r->cli, argc, argv, CLI_SHORTOPTS, opts)) != -1) {
		switch (c) {
		case OPT_PROFILE:
			r->profile = optarg;
			break;
		case OPT_CLAIM:
			r->instance = optarg;
			break;
		case OPT_VSOCK:
			r->vsock = optarg;
			break;
		case OPT_CONTROL_SOCKET:
			r->control_socket = optarg;
			break;
		case OPT_CONFIGURE:
			r->configure = true;
			break;
		case OPT_SEED:
			r->seed = cli_uint(&r->cli, "--seed", optarg, 0,
			    UINT_MAX);
			r->seeded = true;
			break;
		case OPT_VF:
			parse_vf(r, optarg);
			break;
		case OPT_INCLUDE_QUARANTINED:
			r->include_quarantined = true;
			break;
		case OPT_INCLUDE_SUSPECT:
			r->include_suspect = true;
			break;
		case OPT_ADOPT:
			r->adopt = true;
			break;
		case OPT_PROC_ROOT:
			r->proc_root = optarg;
			break;
		case OPT_FORMAT:
			parse_format(r, optarg);
			break;
		default:
			cli_bad_option(&r->cli, argv);
		}
	}
	cli_no_operands(&r->cli, argc, argv);
	check_args(r);
}

static int
fail_unavailable(const char *why)
{
	return log_fail(EX_UNAVAILABLE, "VF health state unavailable",
	    "{s:s}", "error", why);
}

static int
fail_nomem(void)
{
	return log_fail(EX_OSERR, "out of memory", NULL);
}

/* Takes the store lock: shared for a dry run, exclusive to claim. */
static int
open_store(struct run *r)
{
	bool excl = r->instance != NULL;

	if (store_init(&r->view.store, r->conf.data_dir) == -1)
		return log_fail(EX_USAGE, "data dir path too long", "{s:s}",
		    "path", r->conf.data_dir);
	if (store_lock(&r->view.store, excl, r->cli.lock_timeout) == 0)
		return 0;
	if (r->view.store.unavailable)
		return fail_unavailable(r->view.store.why);
	if (errno == EWOULDBLOCK)
		return log_fail(EX_TEMPFAIL, "timed out waiting for the store "
		    "lock", "{s:s, s:i}", "path", r->view.store.lock_path,
		    "timeout_s", (int)r->cli.lock_timeout);
	return log_fail(errno == EACCES || errno == EPERM ? EX_NOPERM :
	    excl ? EX_IOERR : EX_UNAVAILABLE, "cannot lock the store",
	    "{s:s, s:s}", "path", r->view.store.lock_path, "error",
	    strerror(errno));
}

/* A failed store load: out of memory (71) or unavailable (69). */
static int
fail_load(const struct store *s)
{
	if (s->nomem)
		return log_fail(EX_OSERR, "out of memory", "{s:s}", "error",
		    s->why);
	return fail_unavailable(s->why);
}

/* Loads the stores (fail closed), the VF inventory and the placement. */
static int
load_state(struct run *r)
{
	r->view.suspect_exclude = conf_suspect_exclude(&r->conf);
	if (hostview_load(&r->view, r->conf.sysfs_root,
	    r->conf.threshold) == 0) {
		if (r->view.skipped > 0)
			log_msg(LVL_WARN, "skipping unreadable VFs", "{s:i}",
			    "count", (int)r->view.skipped);
		return 0;
	}
	if (r->view.failed == HOSTVIEW_STORES)
		return fail_load(&r->view.store);
	if (r->view.failed == HOSTVIEW_INVENTORY)
		return log_fail(EX_IOERR, "cannot list VFs", "{s:s, s:s}",
		    "sysfs_root", r->conf.sysfs_root, "error",
		    strerror(errno));
	return fail_nomem();
}

/* The names of the profiles some VF offers, each once (a log field). */
static json_t *
offered_names(const struct placement *pl)
{
	json_t *a = json_array();
	size_t i, j;

	for (i = 0; a != NULL && i < pl->noffered; i++) {
		for (j = 0; j < i; j++)
			if (strcmp(pl->offered[j].name,
			    pl->offered[i].name) == 0)
				break;
		if (j == i && json_array_append_new(a,
		    json_string(pl->offered[i].name)) < 0) {
			json_decref(a);
			a = NULL;
		}
	}
	return a;
}

/* Fails with the upstream message when no VF offers the profile, and
 * lists the profiles that some VF does offer. */
static int
check_profile_known(const struct run *r)
{
	char msg[512];

	if (placement_profile_known(&r->view.pl, r->profile))
		return 0;
	if (r->view.pl.noffered == 0 && r->view.inv.n > 0)
		(void)snprintf(msg, sizeof(msg), "no creatable vGPU profiles "
		    "on any VF (GPUs at capacity or dirty VFs consuming "
		    "framebuffer): profile \"%.256s\"", r->profile);
	else
		(void)snprintf(msg, sizeof(msg), "profile \"%.256s\" is not "
		    "creatable on any VF (unknown profile or insufficient "
		    "capacity)", r->profile);
	return log_fail(EXIT_NO, msg, "{s:o?}", "offered",
	    offered_names(&r->view.pl));
}

/* Uniform index below n: --seed makes it repeatable, else getrandom(2). */
static size_t
random_below(const struct run *r, size_t n)
{
	unsigned long long x;

	if (r->seeded)
		x = r->seed;
	else if (getrandom(&x, sizeof(x), 0) != (ssize_t)sizeof(x))
		x = (unsigned long long)io_now_ms() ^ (unsigned)getpid();
	/* splitmix64 finaliser: spreads small seeds over all bits. */
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return (size_t)(x % n);
}

/*
 * SPEC.md 4.3 step 4: on the first card, a random one of its clean
 * candidates, or of its dirty ones when it has no clean one. Never
 * lowest address first: one wedged VF would absorb every placement.
 */
static int
select_vf(struct run *r, const struct vf_info **out)
{
	const struct placement_card *cs;
	char msg[512];

	placement_candidates(&r->view.pl, r->profile);
	if ((cs = placement_best_card(&r->view.pl)) == NULL) {
		(void)snprintf(msg, sizeof(msg), "no available VF for profile "
		    "\"%.256s\"", r->profile);
		return log_fail(EXIT_NO, msg, NULL);
	}
	*out = placement_choice(&r->view.pl, cs, random_below(r,
	    placement_card_choices(cs)));
	if (*out == NULL)
		return log_fail(EX_SOFTWARE, "selection lost its candidate",
		    NULL);
	return 0;
}

/* Why the pinned VF v cannot take the profile, or NULL if it can. */
static const char *
pin_refusal(const struct run *r, const struct placement_vf *v, char *msg,
    size_t len)
{
	switch (placement_pin(&r->view.pl, v, r->profile,
	    r->include_quarantined)) {
	case PLACEMENT_PIN_CLAIMED:
		(void)snprintf(msg, len, "VF %s is in use (claimed by %.256s)",
		    r->pin, v->claim->instance_id);
		break;
	case PLACEMENT_PIN_DIRTY:
		(void)snprintf(msg, len, "VF %s is in use (allocated in sysfs "
		    "without a claim: vfstore deconfigure --vf %s frees it)",
		    r->pin, r->pin);
		break;
	case PLACEMENT_PIN_NOT_OFFERED:
		(void)snprintf(msg, len, "VF %s does not offer profile "
		    "\"%.256s\"", r->pin, r->profile);
		break;
	case PLACEMENT_PIN_QUARANTINED:
		(void)snprintf(msg, len, "VF %s is quarantined (a verification "
		    "boot passes --include-quarantined)", r->pin);
		break;
	case PLACEMENT_PIN_DRAINED:
		(void)snprintf(msg, len, "VF %s is drained (a verification "
		    "boot passes --include-quarantined)", r->pin);
		break;
	case PLACEMENT_PIN_HEALTH_UNKNOWN:
		(void)snprintf(msg, len, "VF health state unknown");
		break;
	default:
		if (!v->suspect || !r->view.pl.suspect_exclude ||
		    r->include_suspect)
			return NULL;
		(void)snprintf(msg, len, "VF %s is suspect and awaits its "
		    "verification (vfrecover --verify-suspects; a "
		    "verification passes --include-suspect)", r->pin);
	}
	return msg;
}

#define SUSPECT_WARNING "placing on a suspect VF: its last assignment " \
	"ended before its guest said OK"

/* --vf: the pinned VF, if it can take the profile (SPEC.md 4.3). */
static int
select_pinned(struct run *r, const struct vf_info **out)
{
	const struct placement_vf *v = placement_find(&r->view.pl, r->pin);
	char msg[512];

	if (v == NULL) {
		(void)snprintf(msg, sizeof(msg), "no vGPU VF %s on this host",
		    r->pin);
		return log_fail(EXIT_NO, msg, NULL);
	}
	if (pin_refusal(r, v, msg, sizeof(msg)) != NULL)
		return log_fail(EXIT_NO, msg, "{s:s, s:s}", "vf", r->pin,
		    "profile", r->profile);
	*out = v->vi;
	if (v->quarantined)
		log_msg(LVL_WARN, "placing on a quarantined VF "
		    "(--include-quarantined)", "{s:s}", "vf", r->pin);
	else if (v->suspect && r->instance != NULL)
		claim_warn(r, SUSPECT_WARNING, r->pin);
	else if (v->suspect)
		log_msg(LVL_WARN, SUSPECT_WARNING, "{s:s}", "vf", r->pin);
	return 0;
}

static const struct vf_info *
inventory_find(const struct vf_inventory *inv, const char *vf)
{
	size_t i;

	for (i = 0; i < inv->n; i++)
		if (strcmp(inv->v[i].addr, vf) == 0)
			return &inv->v[i];
	return NULL;
}

/* Writes the result line; a failed write is 74. */
static int
emit(const char *vf, const char *card, const char *profile,
    const char *type_id, const struct claim *cl, const char *warning)
{
	json_t *o;
	int rc;

	o = json_pack("{s:s, s:s, s:s, s:s}", "vf_address", vf, "card", card,
	    "profile", profile, "type_id", type_id);
	if (o != NULL && cl != NULL && (json_object_set_new(o, "instance_id",
	    json_string(cl->instance_id)) < 0 || json_object_set_new(o,
	    "claimed_at", json_string(cl->claimed_at)) < 0 || (warning[0] &&
	    json_object_set_new(o, "warning", json_string(warning)) < 0))) {
		json_decref(o);
		o = NULL;
	}
	if (o == NULL)
		return fail_nomem();
	rc = jsonl_write(stdout, o);
	json_decref(o);
	if (rc == -1)
		return log_fail(EX_IOERR, "write stdout failed", "{s:s}",
		    "error", strerror(errno));
	return 0;
}

static int
emit_claim(const struct run *r, const struct claim *cl)
{
	const struct vf_info *vi = inventory_find(&r->view.inv, cl->vf);

	if (r->libvirt_format)
		return output_hostdev(cl->vf);
	return emit(cl->vf, vi ? vi->card : "", cl->profile ? cl->profile :
	    r->profile, cl->type_id ? cl->type_id : "", cl, r->warning);
}

/* The VF for a new placement: the pinned one, or a random choice. */
static int
choose(struct run *r, const struct vf_info **vi)
{
	int code;

	if (r->pin[0] != '\0')
		return select_pinned(r, vi);
	if ((code = check_profile_known(r)) != 0)
		return code;
	return select_vf(r, vi);
}

/* Reports the failures claim.c leaves to this file; else returns code. */
static int
claim_code(struct run *r, int code)
{
	if (code == CLAIM_NOMEM)
		return fail_nomem();
	if (code == CLAIM_LOAD)
		return fail_load(&r->view.store);
	return code;
}

/* --adopt: the pinned VF's claim, if it can be adopted. */
static int
adopt(struct run *r)
{
	const struct placement_vf *v = placement_find(&r->view.pl, r->pin);
	char msg[128];

	if (v != NULL)
		return claim_code(r, claim_adopt(r, v));
	(void)snprintf(msg, sizeof(msg), "no vGPU VF %s on this host", r->pin);
	return log_fail(EXIT_NO, msg, NULL);
}

/* --claim: the instance's existing claim, or a new one. */
static int
claim_flow(struct run *r)
{
	struct claim *held = claims_find_instance(&r->view.claims, r->instance);
	const struct vf_info *vi;
	int code;

	if (held != NULL)
		code = claim_code(r, claim_existing(r, held));
	else if (r->adopt)
		code = adopt(r);
	else if ((code = choose(r, &vi)) == 0)
		code = claim_code(r, claim_persist(r, vi));
	if (code != 0)
		return code;
	held = claims_find_instance(&r->view.claims, r->instance);
	if (r->configure && (code = claim_configure(r, held)) != 0)
		return claim_code(r, code);
	/* SPEC 6.4; a libvirt domain's claim is completed by its hook. */
	if (!r->libvirt_format && held->vsock == NULL &&
	    held->control_socket == NULL)
		claim_warn(r, "claim made with no --vsock and no "
		    "--control-socket: the sentinel cannot poll it and "
		    "reconcile cannot release it", held->vf);
	return emit_claim(r, held);
}

static int
dry_run(struct run *r)
{
	const struct vf_info *vi;
	char type_id[16];
	int code;

	if ((code = choose(r, &vi)) != 0)
		return code;
	(void)snprintf(type_id, sizeof(type_id), "%u",
	    placement_type_id(vi, r->profile));
	return emit(vi->addr, vi->card, r->profile, type_id, NULL, "");
}

int
main(int argc, char **argv)
{
	struct run r = { 0 };
	int code;

	cli_start(PROG);
	parse_args(argc, argv, &r);
	cli_finish(&r.cli, &r.conf);
	/* A claim, once started, is finished: a signal only sets a flag. */
	cli_stop_signals(true);
	if ((code = open_store(&r)) == 0 && (code = load_state(&r)) == 0)
		code = r.instance != NULL ? claim_flow(&r) : dry_run(&r);
	hostview_release(&r.view);
	if (code != 0)
		return code;
	if (sig_stop)
		log_msg(LVL_INFO, "finished the pick before stopping", NULL);
	cli_close_stdout();
	return 0;
}
