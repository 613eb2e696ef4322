/*
 * resources-report - vGPU capacity of this host (SPEC.md 4.5): the
 * /resources-style JSON object, or Prometheus gauges for node_exporter's
 * textfile collector.
 *
 * Input: the VF inventory under SYSFS_ROOT, the health store and the
 * claims ledger, read under a shared store lock. Output: one JSON line
 *	{"gpu":{"mode":"vgpu","total_slots":...,"cards":[...]}}
 * ({} on a host without VFs), or the Prometheus text; on stdout, or with
 * --output written atomically with prom_write_textfile() (a temporary
 * file of its own, fsync, rename; mode 0644), so concurrent reports and
 * an unlocked reader such as node_exporter only ever see whole files.
 * An unavailable store is reported in the output (fail closed:
 * nothing allocatable, "placement_disabled_reason"), not by the status.
 *
 * Exit codes: 0 reported (also while the store is unavailable); 64 usage;
 * 74 I/O error (VF inventory, output); 75 lock timeout; 78 configuration.
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
#include "sysfs.h"

#define PROG "resources-report"
#define CARD_NAME_MAX 256

static const char usage[] =
    "usage: resources-report [-c FILE] [--data-dir DIR] [--sysfs-root DIR]\n"
    "                        [--lock-timeout S] [--log-level LEVEL]\n"
    "                        [--format json|prometheus] [--output FILE]\n"
    "\n"
    "Reports the host's vGPU capacity (slots, per profile, placement\n"
    "disabled) as JSON or Prometheus gauges.\n"
    "\n"
    "Options:\n"
    CLI_HELP_HOST_OPTIONS
    "  --format json|prometheus\n"
    "                        the output format (default json); prometheus is\n"
    "                        for node_exporter's textfile collector\n"
    "  --output FILE         write FILE atomically (mode 0644) instead of\n"
    "                        standard output\n"
    "  -h, --help            print this help and exit\n"
    "  --version             print the version and exit\n";

enum {
	OPT_FORMAT = CLI_OPT_FIRST_FREE,
	OPT_OUTPUT
};

struct profile_stat {
	const char *name;		/* borrowed from the inventory */
	unsigned framebuffer_mb;
	unsigned available;
};

struct name_cache {
	char key[40];			/* "0x10de:0x26b9" */
	char name[CARD_NAME_MAX];
	bool ok;			/* libpci named it */
};

struct run {
	struct cli cli;
	struct conf conf;
	bool prometheus;
	const char *output;
	struct store store;
	struct health health;
	struct claims claims;
	bool available;			/* both files loaded */
	char reason[1200];		/* placement_disabled_reason */
	struct vf_inventory inv;
	struct placement pl;
	struct profile_stat *profiles;
	size_t nprofiles;
	struct name_cache *names;	/* one per card at most */
	size_t nnames;
};

/* Static so that die() leaves every allocation reachable for LSan. */
static struct run run;
static void
parse_args(int argc, char **argv, struct run *r)
{
	static const struct option opts[] = {
		CLI_COMMON_OPTIONS,
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "output", required_argument, NULL, OPT_OUTPUT },
		{ 0 }
	};
	int c;

	cli_init(&r->cli, usage);
	while ((c = cli_next(&r->cli, argc, argv, "+c:h", opts)) != -1) {
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
				cli_usage_error(&r->cli, "--output: empty path");
			r->output = optarg;
			break;
		default:
			cli_bad_option(&r->cli, argv);
		}
	}
	if (optind < argc)
		cli_usage_error(&r->cli, "unexpected argument");
}

static void
unavailable(struct run *r, const char *why)
{
	cli_die_nomem(&r->store);
	r->available = false;
	snprintf(r->reason, sizeof(r->reason),
	    "VF health state unavailable: %s", why);
	log_msg(LVL_WARN, "VF health state unavailable; placement disabled",
	    "{s:s}", "error", why);
}

/* Loads both files and the inventory under a shared lock. */
static void
load_state(struct run *r)
{
	char why[PATH_MAX + 128];
	size_t skipped = 0;

	if (store_init(&r->store, r->conf.data_dir) == -1)
		die(EX_USAGE, "data dir path too long", NULL);
	r->available = true;
	if (store_lock(&r->store, false, r->cli.lock_timeout) == -1) {
		if (errno == EWOULDBLOCK)
			die(EX_TEMPFAIL, "timed out waiting for the store lock",
			    "{s:s}", "path", r->store.lock_path);
		if (r->store.unavailable)
			snprintf(why, sizeof(why), "%s", r->store.why);
		else
			snprintf(why, sizeof(why), "lock %s: %s",
			    r->store.lock_path, strerror(errno));
		unavailable(r, why);
	} else if (health_load(&r->store, &r->health,
	    r->conf.threshold) == -1) {
		unavailable(r, r->store.why);
	}
	if (claims_load(&r->store, &r->claims) == -1 && r->available)
		unavailable(r, r->store.why);
	if (sysfs_inventory(r->conf.sysfs_root, &r->inv, &skipped) == -1)
		die(EX_IOERR, "cannot list VFs", "{s:s, s:s}", "sysfs_root",
		    r->conf.sysfs_root, "error", strerror(errno));
	store_unlock(&r->store);
	if (skipped > 0)
		log_msg(LVL_WARN, "skipping unreadable VFs", "{s:i}", "count",
		    (int)skipped);
}

static struct profile_stat *
profile_of(struct run *r, const struct vgpu_type *t)
{
	size_t i;

	for (i = 0; i < r->nprofiles; i++)
		if (strcmp(r->profiles[i].name, t->name) == 0)
			return &r->profiles[i];
	r->profiles[r->nprofiles].name = t->name;
	r->profiles[r->nprofiles].framebuffer_mb = t->framebuffer_mb;
	return &r->profiles[r->nprofiles++];
}

static size_t
count_types(const struct vf_inventory *inv)
{
	size_t i, n = 0;

	for (i = 0; i < inv->n; i++)
		n += inv->v[i].ntypes;
	return n;
}

static int
profile_cmp(const void *pa, const void *pb)
{
	const struct profile_stat *a = pa, *b = pb;

	if (a->framebuffer_mb != b->framebuffer_mb)
		return a->framebuffer_mb < b->framebuffer_mb ? -1 : 1;
	return strcmp(a->name, b->name);
}

static void
tally(struct run *r)
{
	const struct placement_vf *v;
	size_t i, j;

	r->names = calloc(r->inv.n ? r->inv.n : 1, sizeof(*r->names));
	r->profiles = calloc(count_types(&r->inv) + 1, sizeof(*r->profiles));
	if (r->names == NULL || r->profiles == NULL ||
	    placement_build(&r->pl, &r->inv, r->available ? &r->health : NULL,
	    &r->claims) == -1)
		die(EX_OSERR, "out of memory", NULL);
	for (i = 0; i < r->inv.n; i++) {
		v = &r->pl.vf[i];
		for (j = 0; j < v->vi->ntypes; j++)
			profile_of(r, &v->vi->types[j])->available +=
			    v->allocatable;
	}
	qsort(r->profiles, r->nprofiles, sizeof(*r->profiles), profile_cmp);
}

static json_t *
profiles_json(const struct run *r)
{
	const struct profile_stat *ps;
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
	int n;

	if (sysfs_vf_path(r->conf.sysfs_root, addr, "vendor", path,
	    sizeof(path)) == -1 || io_read_attr(path, vendor,
	    sizeof(vendor)) == -1 || sysfs_vf_path(r->conf.sysfs_root, addr,
	    "device", path, sizeof(path)) == -1 || io_read_attr(path, device,
	    sizeof(device)) == -1)
		return -1;
	n = snprintf(key, len, "%s:%s", vendor, device);
	return n < 0 || (size_t)n >= len ? -1 : 0;
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
	return o;
}

static json_t *
report_json(struct run *r)
{
	json_t *gpu, *cards;
	size_t i;

	if (r->inv.n == 0)
		return json_object();
	gpu = json_pack("{s:s, s:I, s:I, s:I, s:I}", "mode", "vgpu",
	    "total_slots", (json_int_t)r->inv.n, "used_slots",
	    (json_int_t)r->pl.used, "allocatable_slots",
	    (json_int_t)r->pl.allocatable, "quarantined_slots",
	    (json_int_t)r->pl.quarantined);
	if (gpu == NULL)
		return NULL;
	if (r->available)
		json_object_set_new(gpu, "profiles", profiles_json(r));
	cards = json_array();
	for (i = 0; cards != NULL && i < r->pl.ncards; i++)
		json_array_append_new(cards, card_json(r, &r->pl.cards[i]));
	json_object_set_new(gpu, "cards", cards);
	if (!r->available)
		json_object_set_new(gpu, "placement_disabled_reason",
		    json_string(r->reason));
	return json_pack("{s:o}", "gpu", gpu);
}

static void
prom_gauge(struct prom *p, const char *name, const char *help,
    double value)
{
	prom_family(p, name, "gauge", help);
	prom_sample(p, name, NULL, value);
}

/* The gauges of SPEC.md 4.5; zeros on a host without VFs. */
static void
report_prom(const struct run *r, struct prom *p)
{
	static const char slots[] = "hypeman_resources_gpu_slots";
	static const char prof[] = "hypeman_resources_gpu_profile_slots";
	size_t i;

	prom_family(p, slots, "gauge", "vGPU VF slots by kind: total, used "
	    "(claimed or allocated), allocatable (neither used nor "
	    "quarantined), quarantined (may overlap used).");
	prom_sample(p, slots, (const char *[]){ "kind", "total", NULL },
	    (double)r->inv.n);
	prom_sample(p, slots, (const char *[]){ "kind", "used", NULL },
	    r->pl.used);
	prom_sample(p, slots, (const char *[]){ "kind", "allocatable",
	    NULL }, r->pl.allocatable);
	prom_sample(p, slots, (const char *[]){ "kind", "quarantined",
	    NULL }, r->pl.quarantined);
	prom_gauge(p, "hypeman_resources_gpu_placement_disabled", "1 while "
	    "the VF health state is unavailable and placement fails closed.",
	    !r->available);
	if (r->available && r->nprofiles > 0)
		prom_family(p, prof, "gauge", "Allocatable VFs advertising "
		    "each vGPU profile.");
	for (i = 0; r->available && i < r->nprofiles; i++)
		prom_sample(p, prof, (const char *[]){ "profile",
		    r->profiles[i].name, "kind", "available", NULL },
		    r->profiles[i].available);
	prom_gauge(p, "hypeman_instances_vgpu_quarantined_vfs", "Quarantined "
	    "VFs on this host (0 while the health state is unavailable).",
	    r->pl.quarantined);
	prom_gauge(p, "hypeman_instances_vgpu_vf_health_store_unavailable",
	    "1 while the VF health store or claims ledger cannot be loaded.",
	    !r->available);
}

/* Writes text to stdout, or atomically to --output (mode 0644, so the
 * node_exporter user can read it). */
static void
write_out(const struct run *r, const char *text, size_t len)
{
	if (r->output == NULL) {
		if (fwrite(text, 1, len, stdout) != len ||
		    fflush(stdout) == EOF)
			die(EX_IOERR, "write stdout failed", "{s:s}", "error",
			    strerror(errno));
		return;
	}
	if (prom_write_textfile(r->output, text, len) == -1)
		die(EX_IOERR, "cannot write the report", "{s:s, s:s}",
		    "path", r->output, "error", strerror(errno));
}

static void
emit_json(struct run *r)
{
	json_t *o = report_json(r);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	size_t len = text ? strlen(text) : 0;
	char *line = text ? realloc(text, len + 2) : NULL;

	json_decref(o);
	if (line == NULL) {
		free(text);
		die(EX_OSERR, "out of memory", NULL);
	}
	line[len++] = '\n';
	line[len] = '\0';
	write_out(r, line, len);
	free(line);
}

static void
emit_prom(const struct run *r)
{
	struct prom p;
	const char *text;
	size_t len;

	prom_init(&p);
	report_prom(r, &p);
	if ((text = prom_finish(&p, &len)) == NULL) {
		prom_release(&p);
		die(EX_OSERR, "out of memory", NULL);
	}
	write_out(r, text, len);
	prom_release(&p);
}

static void
release(struct run *r)
{
	health_release(&r->health);
	claims_release(&r->claims);
	sysfs_inventory_release(&r->inv);
	placement_release(&r->pl);
	free(r->profiles);
	free(r->names);
}

int
main(int argc, char **argv)
{
	struct run *r = &run;

	cli_start(PROG);
	parse_args(argc, argv, r);
	cli_finish(&r->cli, &r->conf);
	/* A report, once started, is finished: SIGTERM/SIGINT only set a
	 * flag (runit's TERM never leaves a half-written textfile behind). */
	cli_stop_signals(true);
	load_state(r);
	tally(r);
	if (r->prometheus)
		emit_prom(r);
	else
		emit_json(r);
	release(r);
	if (sig_stop)
		log_msg(LVL_INFO, "finished the report before stopping", NULL);
	cli_close_stdout();
	return 0;
}
