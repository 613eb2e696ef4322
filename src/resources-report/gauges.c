/*
 * gauges.c - resources-report --format prometheus: the capacity gauges
 * of SPEC.md 4.5 and vfsentinel's own per-VF and per-card series, all
 * read from the run's one struct placement, so they agree with the JSON
 * report and with vfpick.
 */
#include <stdbool.h>
#include <stddef.h>

#include "log.h"
#include "resources-report.h"

static void
prom_gauge(struct prom *p, const char *name, const char *help,
    double value)
{
	prom_family(p, name, "gauge", help);
	prom_sample(p, name, NULL, value);
}

/* The slots by kind (SPEC.md 4.5); zeros on a host without VFs. */
static void
slots_prom(const struct run *r, struct prom *p)
{
	static const char slots[] = "hypeman_resources_gpu_slots";

	prom_family(p, slots, "gauge", "vGPU VF slots by kind: total, used "
	    "(claimed or allocated), allocatable (neither used, quarantined "
	    "nor drained), quarantined (may overlap used), drained (not "
	    "quarantined; may overlap used).");
	prom_sample(p, slots, (const char *[]){ "kind", "total", NULL },
	    (double)r->view.inv.n);
	prom_sample(p, slots, (const char *[]){ "kind", "used", NULL },
	    r->view.pl.used);
	prom_sample(p, slots, (const char *[]){ "kind", "allocatable",
	    NULL }, r->view.pl.allocatable);
	prom_sample(p, slots, (const char *[]){ "kind", "quarantined",
	    NULL }, r->view.pl.quarantined);
	prom_sample(p, slots, (const char *[]){ "kind", "drained", NULL },
	    r->view.pl.drained);
}

/* The allocatable VFs per profile, known only while available. */
static void
profiles_prom(const struct run *r, struct prom *p)
{
	static const char prof[] = "hypeman_resources_gpu_profile_slots";
	size_t i;

	if (r->available && r->nprofiles > 0)
		prom_family(p, prof, "gauge", "Allocatable VFs advertising "
		    "each vGPU profile.");
	for (i = 0; r->available && i < r->nprofiles; i++)
		prom_sample(p, prof, (const char *[]){ "profile",
		    r->profiles[i].name, "kind", "available", NULL },
		    r->profiles[i].available);
}

/* The capacity gauges of SPEC.md 4.5; zeros on a host without VFs. */
static void
capacity_prom(const struct run *r, struct prom *p)
{
	slots_prom(r, p);
	prom_gauge(p, "hypeman_resources_gpu_placement_disabled", "1 while "
	    "the VF health state is unavailable to this process (the store's "
	    "owner under the package): it offers no slot. Root's vfstore "
	    "check says whether the hook and vfpick still place "
	    "(owner_access: detection is lost, not placement).",
	    !r->available);
	profiles_prom(r, p);
	prom_gauge(p, "hypeman_instances_vgpu_quarantined_vfs", "Quarantined "
	    "VFs on this host (0 while the health state is unavailable).",
	    r->view.pl.quarantined);
	prom_gauge(p, "vfsentinel_suspect_vfs", "Suspect VFs on this host "
	    "(SPEC.md 7.3: an assignment ended abruptly before its guest "
	    "said OK), not quarantined.", r->view.pl.suspect);
	prom_gauge(p, "hypeman_instances_vgpu_vf_health_store_unavailable",
	    "1 while the VF health store or claims ledger cannot be loaded "
	    "by this process (the store's owner, the sentinel's user, under "
	    "the package): detection is lost; placement too unless root's "
	    "vfstore check says owner_access.", !r->available);
}

/* A VF worth a series of its own: quarantined, dirty or failed. */
static bool
vf_notable(const struct placement_vf *v)
{
	return v->quarantined || v->state == PLACEMENT_DIRTY ||
	    (v->rec != NULL && v->rec->nfailures > 0);
}

/* One family of per-VF series, present only when it has a sample. */
static void
vf_family(const struct run *r, struct prom *p, const char *name,
    const char *help, bool failures)
{
	const struct placement_vf *v;
	bool any = false;
	size_t i;

	for (i = 0; i < r->view.inv.n; i++) {
		v = &r->view.pl.vf[i];
		if (!vf_notable(v))
			continue;
		if (!any)
			prom_family(p, name, "gauge", help);
		any = true;
		prom_sample(p, name, (const char *[]){ "vf", v->vi->addr,
		    "card", v->vi->card, NULL }, failures ? (v->rec != NULL ?
		    (double)v->rec->nfailures : 0) : v->quarantined);
	}
}

/* Each card's VFs by state (the --vfs states; they sum to its VFs). */
static void
cards_prom(const struct run *r, struct prom *p)
{
	static const char cv[] = "vfsentinel_card_vfs";
	const struct placement_card *cs;
	size_t i, k;

	if (r->view.pl.ncards > 0)
		prom_family(p, cv, "gauge", "VFs of each card by state "
		    "(resources-report --vfs); the states sum to its VFs.");
	for (i = 0; i < r->view.pl.ncards; i++) {
		cs = &r->view.pl.cards[i];
		for (k = 0; k < PLACEMENT_NVIEWS; k++)
			prom_sample(p, cv, (const char *[]){ "card", cs->addr,
			    "state", placement_view_name(k), NULL },
			    cs->views[k]);
	}
}

/* The per-VF and per-card gauges, build_info and the systemic flag. */
static void
vfs_prom(const struct run *r, struct prom *p)
{
	vf_family(r, p, "vfsentinel_vf_quarantined", "1 if the VF is "
	    "quarantined; for VFs that are quarantined, dirty or have "
	    "failures.", false);
	vf_family(r, p, "vfsentinel_vf_failures", "Failed assignments "
	    "recorded for the VF (0 while the health state is unavailable).",
	    true);
	cards_prom(r, p);
	prom_family(p, "vfsentinel_build_info", "gauge", "Always 1; the "
	    "version of vfsentinel that wrote this file.");
	prom_sample(p, "vfsentinel_build_info", (const char *[]){ "version",
	    VFS_VERSION, NULL }, 1);
	prom_gauge(p, "vfsentinel_systemic_failure_suspected", "1 while "
	    "failures look systemic: recovery.systemic_fraction of the VFs "
	    "assigned within recovery.systemic_window failed, or a card "
	    "failed again after its recovery (0 while unknown).",
	    r->sys.suspected);
}

/* The suspicions and verifications of the audit log (SPEC.md 7.3). */
static void
suspects_prom(const struct run *r, struct prom *p)
{
	static const char v[] = "vfsentinel_verifications_total";
	const struct suspect_counts *n = &r->counts;

	prom_family(p, "vfsentinel_suspects_total", "counter", "VFs made "
	    "suspect: an assignment ended abruptly before its guest said OK "
	    "(the audit log's suspect lines).");
	prom_sample(p, "vfsentinel_suspects_total", NULL,
	    (double)n->suspects);
	prom_family(p, v, "counter", "Verifications of suspect VFs by "
	    "result: pass (cleared), fail (quarantined), error (not run), "
	    "interrupted (stopped; the VF stays suspect).");
	prom_sample(p, v, (const char *[]){ "result", "pass", NULL },
	    (double)n->pass);
	prom_sample(p, v, (const char *[]){ "result", "fail", NULL },
	    (double)n->fail);
	prom_sample(p, v, (const char *[]){ "result", "error", NULL },
	    (double)n->error);
	prom_sample(p, v, (const char *[]){ "result", "interrupted", NULL },
	    (double)n->interrupted);
}

void
gauges_prom(const struct run *r, struct prom *p)
{
	capacity_prom(r, p);
	vfs_prom(r, p);
	suspects_prom(r, p);
}
