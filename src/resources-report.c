/*
 * resources-report - vGPU capacity of this host (SPEC.md 4.5): the
 * /resources-style JSON object, or Prometheus gauges for node_exporter's
 * textfile collector.
 *
 * Input: the VF inventory under SYSFS_ROOT, the health store and the
 * claims ledger, read under a shared store lock, and the audit log (the
 * cards' recoveries, for the systemic rule; appended to, never
 * rewritten, so read without the lock). Output: one JSON line
 *	{"gpu":{"mode":"vgpu","total_slots":...,"cards":[...],
 *	"systemic_failure_suspected":false}}
 * (counts 0 and lists empty on a host without VFs), with --vfs one
 * line per VF
 *	{"vf_address":...,"card":...,
 *	 "state":"free|claimed|dirty|quarantined",...}
 * or the Prometheus text; on stdout, or with --output written atomically
 * with prom_write_textfile() (a temporary file of its own, fsync, rename;
 * mode 0644), so concurrent reports and an unlocked reader such as
 * node_exporter only ever see whole files. Every count and every VF's
 * state come from one struct placement (placement.h), so they agree.
 * An unavailable store is reported in the output (fail closed:
 * nothing allocatable, "placement_disabled_reason"; with --vfs
 * "store_unavailable" on each line), not by the status.
 *
 * Exit codes: 0 reported (also while the store is unavailable); 64 usage;
 * 71 out of memory; 74 I/O error (VF inventory, output); 75 lock timeout;
 * 78 configuration.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "cli.h"
#include "io.h"
#include "jsonl.h"
#include "log.h"
#include "pci.h"
#include "placement.h"
#include "prom.h"
#include "sig.h"
#include "store.h"
#include "systemic.h"
#include "sysfs.h"
#include "timefmt.h"
#include "resources-report/resources-report.h"
#include "healthfile.h"
#include "claims.h"

#define PROG "resources-report"

static const char usage[] =
    "usage: resources-report [-c FILE] [--data-dir DIR] [--sysfs-root DIR]\n"
    "                        [--lock-timeout S] [--log-level LEVEL]\n"
    "                        [--format json|prometheus] [--vfs]\n"
    "                        [--output FILE]\n"
    "\n"
    "Reports the host's vGPU capacity (slots, per profile, placement\n"
    "disabled, systemic failure) as JSON or Prometheus gauges, or the\n"
    "state of each VF.\n"
    "\n"
    "Options:\n"
    CLI_HELP_HOST_OPTIONS
    "  --format json|prometheus\n"
    "                        the output format (default json); prometheus is\n"
    "                        for node_exporter's textfile collector\n"
    "  --vfs                 one JSON line per VF (free, claimed, dirty or\n"
    "                        quarantined) instead of the capacity object\n"
    "  --output FILE         write FILE atomically (mode 0644) instead of\n"
    "                        standard output\n"
    "  -h, --help            print this help and exit\n"
    "  --version             print the version and exit\n";

enum {
	OPT_FORMAT = CLI_OPT_FIRST_FREE,
	OPT_OUTPUT,
	OPT_VFS
};

static void
parse_args(int argc, char **argv, struct run *r)
{
	static const struct option opts[] = {
		CLI_COMMON_OPTIONS,
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "output", required_argument, NULL, OPT_OUTPUT },
		{ "vfs", no_argument, NULL, OPT_VFS },
		{ 0 }
	};
	int c;

	cli_init(&r->cli, usage);
	while ((c = cli_next(&r->cli, argc, argv, CLI_SHORTOPTS, opts)) != -1) {
		switch (c) {
		case OPT_FORMAT:
			if (strcmp(optarg, "prometheus") != 0 &&
			    strcmp(optarg, "json") != 0)
				cli_usage_error(&r->cli, "--format: expected "
				    "json or prometheus");
			r->prometheus = strcmp(optarg, "prometheus") == 0;
			break;
		case OPT_OUTPUT:
			if (optarg[0] == '\0')
				cli_usage_error(&r->cli,
				    "--output: empty path");
			r->output = optarg;
			break;
		case OPT_VFS:
			r->vfs = true;
			break;
		default:
			cli_bad_option(&r->cli, argv);
		}
	}
	cli_no_operands(&r->cli, argc, argv);
	if (r->vfs && r->prometheus)
		cli_usage_error(&r->cli, "--vfs: JSON lines only (--format "
		    "prometheus has the per-VF gauges)");
}

/*
 * Marks the store unavailable and keeps why (cut to fit: both reasons,
 * the store's and a lock's, are shorter); 0, or 71 when the load ran out
 * of memory: an OS error, never "unavailable" (SPEC 2.2).
 */
static int
unavailable(struct run *r, const char *why)
{
	size_t n = strnlen(why, sizeof(r->why) - 1);

	if (r->view.store.nomem)
		return log_fail(EX_OSERR, "out of memory", "{s:s}", "error",
		    r->view.store.why);
	r->available = false;
	memcpy(r->why, why, n);
	r->why[n] = '\0';
	log_msg(LVL_WARN, "VF health state unavailable; placement disabled",
	    "{s:s}", "error", why);
	return 0;
}

/* The shared lock: 0 with *held, or the store unavailable (0, !*held),
 * or an exit code (75 timeout). */
static int
lock_shared(struct run *r, bool *held)
{
	char why[PATH_MAX + 128];
	enum store_lock_failure failure;

	*held = store_lock(&r->view.store, false, r->cli.lock_timeout) == 0;
	if (*held)
		return 0;
	failure = store_lock_failure(&r->view.store, errno);
	if (failure == STORE_LOCK_TIMEOUT)
		return log_fail(EX_TEMPFAIL, "timed out waiting for the store "
		    "lock", "{s:s}", "path", r->view.store.lock_path);
	if (failure == STORE_LOCK_UNAVAILABLE)
		return unavailable(r, r->view.store.why);
	if (io_pathf(why, sizeof(why), "lock %s: %s", r->view.store.lock_path,
	    strerror(errno)) == -1)
		log_msg(LVL_DEBUG, "lock failure reason cut", NULL);
	return unavailable(r, why);
}

/* The two files, under the lock; a file that does not load makes the
 * store unavailable (0), running out of memory is 71. */
static int
load_files(struct run *r)
{
	struct store *s = &r->view.store;
	bool held;
	int code;

	r->available = true;
	if ((code = lock_shared(r, &held)) != 0)
		return code;
	if (held && health_load(s, &r->view.health, r->conf.threshold) == -1 &&
	    unavailable(r, s->why) != 0)
		return EX_OSERR;
	if (claims_load(s, &r->view.claims) == -1 && r->available &&
	    unavailable(r, s->why) != 0)
		return EX_OSERR;
	if (r->available && drains_load(s, &r->view.drains) == -1 &&
	    unavailable(r, s->why) != 0)
		return EX_OSERR;
	if (r->available && suspects_load(s, &r->view.suspects) == -1 &&
	    unavailable(r, s->why) != 0)
		return EX_OSERR;
	return 0;
}

/* Loads both files and the inventory under a shared lock. */
static int
load_state(struct run *r)
{
	int code;

	if (store_init(&r->view.store, r->conf.data_dir) == -1)
		return log_fail(EX_USAGE, "data dir path too long", NULL);
	code = load_files(r);
	if (code == 0 && hostview_load_inventory(&r->view,
	    r->conf.sysfs_root) == -1)
		code = log_fail(EX_IOERR, "cannot list VFs", "{s:s, s:s}",
		    "sysfs_root", r->conf.sysfs_root, "error", strerror(errno));
	store_unlock(&r->view.store);
	if (r->view.skipped > 0)
		log_msg(LVL_WARN, "skipping unreadable VFs", "{s:i}", "count",
		    (int)r->view.skipped);
	return code;
}

/*
 * The systemic-failure rule, with the recoveries of the audit log. A log
 * that cannot be read costs the recovery part of the rule, not the
 * report: said at warn. 0, 71 or 70.
 */
static int
systemic(struct run *r)
{
	const struct systemic_rule rule = systemic_rule_of(&r->conf);
	struct systemic_recoveries rec;
	struct timespec now;
	int rc;

	if (!r->available || r->view.inv.n == 0)
		return 0;
	if (systemic_recoveries_load(r->view.store.dir, &rec) == -1) {
		if (errno == ENOMEM)
			return log_fail(EX_OSERR, "out of memory", NULL);
		log_msg(LVL_WARN, "cannot read the audit log; the systemic "
		    "rule ignores recoveries", "{s:s, s:s}", "dir",
		    r->view.store.dir, "error", io_strerror(errno));
	}
	if (suspect_audit_counts(r->view.store.dir, &r->counts) == -1 &&
	    errno == ENOMEM)
		return log_fail(EX_OSERR, "out of memory", NULL);
	timefmt_now(&now);
	rc = systemic_check(&r->view.pl, &rec, &rule, &now, &r->sys);
	systemic_recoveries_release(&rec);
	if (rc == -1)
		return log_fail(EX_SOFTWARE, "systemic check without the "
		    "health state", NULL);
	return 0;
}

/* Classifies every VF (the placement rule), sums up the profiles and
 * applies the systemic-failure rule. 0, 71 or 70. */
static int
tally(struct run *r)
{
	size_t n = r->view.inv.n;

	r->names = calloc(n ? n : 1, sizeof(*r->names));
	r->view.suspect_exclude = conf_suspect_exclude(&r->conf);
	if (r->names == NULL || hostview_place(&r->view, r->available,
	    true) == -1 ||
	    (r->profiles = placement_profiles(&r->view.pl,
	    &r->nprofiles)) == NULL)
		return log_fail(EX_OSERR, "out of memory", NULL);
	return systemic(r);
}

static json_t *
profiles_json(const struct run *r)
{
	const struct placement_profile *ps;
	json_t *a = json_array();
	size_t i;

	for (i = 0; a != NULL && i < r->nprofiles; i++) {
		ps = &r->profiles[i];
		json_array_append_new(a, json_pack("{s:s, s:I, s:I}", "name",
		    ps->name, "framebuffer_mb", (json_int_t)ps->framebuffer_mb,
		    "available", (json_int_t)ps->available));
	}
	return a;
}

/* The PCI identity "VENDOR:DEVICE" of a card, from its sysfs files. */
static int
card_ident(const struct run *r, const char *addr, char *key, size_t len)
{
	char path[PATH_MAX], vendor[16], device[16];

	if (sysfs_vf_path(r->conf.sysfs_root, addr, "vendor", path,
	    sizeof(path)) == -1 || io_read_attr(path, vendor,
	    sizeof(vendor)) == -1 || sysfs_vf_path(r->conf.sysfs_root, addr,
	    "device", path, sizeof(path)) == -1 || io_read_attr(path, device,
	    sizeof(device)) == -1)
		return -1;
	return io_pathf(key, len, "%s:%s", vendor, device);
}

/*
 * The card's name from libpci, or NULL. libpci parses all of pci.ids for
 * every lookup (milliseconds each), and a host's cards are mostly one
 * model, so names are looked up once per vendor:device pair.
 */
static const char *
card_name(struct run *r, const char *addr)
{
	struct name_cache *nc;
	char key[sizeof(nc->key)];
	size_t i;

	if (addr[0] == '\0' || card_ident(r, addr, key, sizeof(key)) == -1)
		return NULL;
	for (i = 0; i < r->nnames; i++)
		if (strcmp(r->names[i].key, key) == 0)
			return r->names[i].ok ? r->names[i].name : NULL;
	nc = &r->names[r->nnames++];
	strcpy(nc->key, key);
	nc->ok = pci_device_name(r->conf.sysfs_root, addr, nc->name,
	    sizeof(nc->name)) == 0;
	return nc->ok ? nc->name : NULL;
}

static json_t *
card_json(struct run *r, const struct placement_card *cs)
{
	const char *name = card_name(r, cs->addr);
	json_t *o;

	o = json_pack("{s:s}", "address", cs->addr);
	if (o == NULL)
		return NULL;
	if (name != NULL)
		json_object_set_new(o, "name", json_string(name));
	json_object_set_new(o, "vfs", json_integer(cs->vfs));
	json_object_set_new(o, "used", json_integer(cs->used));
	json_object_set_new(o, "quarantined", json_integer(cs->quarantined));
	json_object_set_new(o, "drained", json_integer(cs->drained));
	return o;
}

/* SPEC 4.5's systemic flag, known only while the store is available. */
static void
systemic_json(const struct run *r, json_t *gpu)
{
	if (!r->available)
		return;
	json_object_set_new(gpu, "systemic_failure_suspected",
	    json_boolean(r->sys.suspected));
	if (r->sys.suspected)
		json_object_set_new(gpu, "systemic_reason",
		    json_string(r->sys.reason));
}

static json_t *
report_json(struct run *r)
{
	json_t *gpu, *cards;
	size_t i;

	/* A host without VFs has the keys of one with VFs, counts 0 and
	 * lists empty (SPEC 8.5): a consumer never meets a bare {}. */
	gpu = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I}", "mode", "vgpu",
	    "total_slots", (json_int_t)r->view.inv.n, "used_slots",
	    (json_int_t)r->view.pl.used, "allocatable_slots",
	    (json_int_t)r->view.pl.allocatable, "quarantined_slots",
	    (json_int_t)r->view.pl.quarantined, "drained_slots",
	    (json_int_t)r->view.pl.drained);
	if (gpu != NULL && json_object_set_new(gpu, "suspect_slots",
	    json_integer((json_int_t)r->view.pl.suspect)) < 0)
		gpu = (json_decref(gpu), NULL);
	if (gpu == NULL)
		return NULL;
	if (r->available)
		json_object_set_new(gpu, "profiles", profiles_json(r));
	cards = json_array();
	for (i = 0; cards != NULL && i < r->view.pl.ncards; i++)
		json_array_append_new(cards, card_json(r,
		    &r->view.pl.cards[i]));
	json_object_set_new(gpu, "cards", cards);
	systemic_json(r, gpu);
	if (!r->available)
		json_object_set_new(gpu, "placement_disabled_reason",
		    json_sprintf("VF health state unavailable: %s", r->why));
	return json_pack("{s:o}", "gpu", gpu);
}

/* Sets key to the timestamp ts (a stored one: always formattable). */
static void
set_time(json_t *o, const char *key, const struct timespec *ts)
{
	char buf[TIMEFMT_MAX];

	if (timefmt_format(ts, buf, sizeof(buf)) == 0)
		json_object_set_new(o, key, json_string(buf));
}

/* One --vfs line: what placement decided about v; absent fields left
 * out. New reference, or NULL. */
static json_t *
vf_json(const struct run *r, const struct placement_vf *v)
{
	const struct vf_record *rec = v->rec;
	json_t *o = json_pack("{s:s}", "vf_address", v->vi->addr);

	if (o == NULL)
		return NULL;
	if (v->vi->card[0] != '\0')
		json_object_set_new(o, "card", json_string(v->vi->card));
	json_object_set_new(o, "state", json_string(placement_state_name(v)));
	if (v->claim != NULL)
		json_object_set_new(o, "instance_id",
		    json_string(v->claim->instance_id));
	if (v->vi->current_type != 0)
		json_object_set_new(o, "current_type",
		    json_sprintf("%u", v->vi->current_type));
	if (rec != NULL && rec->nfailures > 0)
		json_object_set_new(o, "failures",
		    json_integer((json_int_t)rec->nfailures));
	if (v->quarantined && rec->quarantined)
		set_time(o, "quarantined_at", &rec->quarantined_at);
	if (!r->available)
		json_object_set_new(o, "store_unavailable", json_true());
	return o;
}

/* Appends o as one compact line to b and drops o. */
static void
put_line(struct obuf *b, json_t *o)
{
	char *text = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	if (text == NULL) {
		b->failed = true;
		return;
	}
	obuf_str(b, text);
	obuf_put(b, "\n", 1);
	free(text);
}

/* Writes text to stdout, or atomically to --output (mode 0644, so the
 * node_exporter user can read it). 0 or 74. */
static int
write_out(const struct run *r, const char *text, size_t len)
{
	if (r->output == NULL) {
		if (fwrite(text, 1, len, stdout) != len ||
		    fflush(stdout) == EOF)
			return log_fail(EX_IOERR, "write stdout failed",
			    "{s:s}", "error", strerror(errno));
		return 0;
	}
	if (prom_write_textfile(r->output, text, len) == -1)
		return log_fail(EX_IOERR, "cannot write the report",
		    "{s:s, s:s}", "path", r->output, "error", strerror(errno));
	return 0;
}

/* The report in its format into b. */
static void
render(struct run *r, struct obuf *b)
{
	struct prom p;
	size_t i;

	if (r->prometheus) {
		prom_init(&p);
		gauges_prom(r, &p);
		*b = p.out;		/* the text moves to b */
	} else if (r->vfs) {
		for (i = 0; i < r->view.inv.n; i++)
			put_line(b, vf_json(r, &r->view.pl.vf[i]));
	} else
		put_line(b, report_json(r));
}

static int
emit(struct run *r)
{
	struct obuf b = { 0 };
	char *text;
	size_t len;
	int code;

	render(r, &b);
	if ((text = obuf_finish(&b, &len)) == NULL)
		return log_fail(EX_OSERR, "out of memory", NULL);
	code = write_out(r, text, len);
	free(text);
	return code;
}

static void
release(struct run *r)
{
	hostview_release(&r->view);
	free(r->profiles);
	free(r->names);
}

int
main(int argc, char **argv)
{
	struct run r = { 0 };
	int code;

	cli_start(PROG);
	parse_args(argc, argv, &r);
	cli_finish(&r.cli, &r.conf);
	/* A report, once started, is finished: SIGTERM/SIGINT only set a
	 * flag (runit's TERM never leaves a half-written textfile behind). */
	cli_stop_signals(true);
	if ((code = load_state(&r)) == 0 && (code = tally(&r)) == 0)
		code = emit(&r);
	release(&r);
	if (code != 0)
		return code;
	if (sig_stop)
		log_msg(LVL_INFO, "finished the report before stopping", NULL);
	cli_close_stdout();
	return 0;
}
