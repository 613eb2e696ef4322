/*
 * claim.c - the hook's edits of the claims ledger, each under the
 * store's exclusive lock phases.c holds: a new claim at prepare (with
 * the profile's type written, as vfpick --vf VF --claim UUID --configure
 * does), its completion from the live XML at started and reconnect, the
 * adoption of a running domain's VF at reconnect (adopt.h's rules, as
 * vfpick --adopt), and the release at release end, each step
 * claimlife.h's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "adopt.h"
#include "claimlife.h"
#include "endpoint.h"
#include "io.h"
#include "log.h"
#include "safeopen.h"
#include "timefmt.h"
#include "libvirt-hook.h"
#include "claims.h"

int
claim_save(struct hook *h, const char *what)
{
	struct atomic_result res = { 0 };

	if (claims_save(&h->view.store, &h->view.claims, &res) == 0)
		return 0;
	log_msg(LVL_ERROR, what, "{s:s, s:s, s:s}", "path",
	    h->view.store.claims_path, "step", res.step ? res.step : "",
	    "error", h->view.store.why);
	return -1;
}

/* Writes the claim's type to the VF unless it holds it already. On a
 * failure the claim is removed again and the start refused. */
static int
configure(struct hook *h, const char *vf, unsigned id)
{
	char msg[512];
	bool already;

	if (claimlife_configure(h->conf.sysfs_root, vf, id, &already) == 0) {
		if (!already)
			log_msg(LVL_INFO, "configured VF", "{s:s, s:s, s:i}",
			    "vf", vf, "instance_id", h->dom.uuid, "type_id",
			    (int)id);
		return 0;
	}
	(void)snprintf(msg, sizeof(msg), "cannot write vGPU type %u to VF "
	    "%s: %s", id, vf, strerror(errno));
	claims_remove_instance(&h->view.claims, h->dom.uuid);
	(void)claim_save(h, "cannot remove the claim after a failed "
	    "configure");
	return refuse_start(msg);
}

/*
 * The console log's size and inode now (SPEC.md 8.2): what this
 * assignment's guest writes follows them, so an append='on' log keeps no
 * older OK that counts. Only looked at (O_PATH, no link followed, never
 * opened); left out when there is no regular file yet. Only for
 * append='on': otherwise libvirt (virtlogd, or QEMU for a file
 * chardev) truncates the file in place when the domain starts, after
 * this call, and the new boot's first bytes would sit below an offset
 * that described the old one.
 */
static void
console_start(const struct hook *h, struct claim *cl, char *offset,
    char *inode, size_t len)
{
	struct stat st;
	int fd;

	if (h->dom.app_log[0] == '\0' || !h->dom.app_log_append ||
	    (fd = safeopen_path(AT_FDCWD, h->dom.app_log,
	    SAFEOPEN_NO_LINKS)) == -1)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		(void)snprintf(offset, len, "%llu",
		    (unsigned long long)st.st_size);
		(void)snprintf(inode, len, "%llu",
		    (unsigned long long)st.st_ino);
		cl->console_offset = offset;
		cl->console_inode = inode;
	}
	close(fd);
}

int
claim_new(struct hook *h, const struct placement_vf *v)
{
	char now[TIMEFMT_MAX], type_id[16], offset[24], inode[24];
	struct claim cl = { 0 };
	unsigned id = 0;

	if (h->dom.profile[0] != '\0') {
		id = placement_type_id(v->vi, h->dom.profile);
		(void)snprintf(type_id, sizeof(type_id), "%u", id);
		cl.profile = h->dom.profile;
		cl.type_id = type_id;
	}
	memcpy(cl.vf, v->vi->addr, sizeof(cl.vf));
	cl.instance_id = h->dom.uuid;
	console_start(h, &cl, offset, inode, sizeof(offset));
	if (claimlife_new(&h->view.claims, &cl, now, sizeof(now)) == -1)
		return refuse_start(errno == ENOMEM ? "out of memory" :
		    "cannot format the claim time");
	if (claim_save(h, "cannot persist the claim") == -1)
		return refuse_start("cannot persist the claim; see libvirt's "
		    "log of this domain");
	log_msg(LVL_INFO, "claimed VF for the domain", "{s:s, s:s, s:s, "
	    "s:s?}", "vf", cl.vf, "instance_id", h->dom.uuid, "domain",
	    h->dom.name, "profile", cl.profile);
	if (id == 0) {
		log_msg(LVL_WARN, "the domain names no vGPU profile: the VF's "
		    "type is left as it is", "{s:s}", "vf", cl.vf);
		return 0;
	}
	return configure(h, cl.vf, id);
}

/*
 * QEMU_STATE_DIR/domain-ID-NAME/monitor.sock, libvirt's QMP monitor of
 * the running domain ID. libvirt shortens NAME (20 characters) in that
 * directory's name; the id alone is unique among running domains, so
 * the directory is found by its "domain-ID-" prefix. 0 or -1.
 */
static int
monitor_socket(const struct hook *h, char *buf, size_t len)
{
	char prefix[32];
	struct dirent *de;
	struct stat st;
	DIR *d;
	int rc = -1;

	if (h->dom.id < 0 || (d = opendir(h->conf.qemu_state_dir)) == NULL)
		return -1;
	(void)snprintf(prefix, sizeof(prefix), "domain-%ld-", h->dom.id);
	while (rc == -1 && (de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		if (snprintf(buf, len, "%s/%s/monitor.sock",
		    h->conf.qemu_state_dir, de->d_name) < (int)len &&
		    stat(buf, &st) == 0 && S_ISSOCK(st.st_mode))
			rc = 0;
	}
	closedir(d);
	return rc;
}

/* The guest endpoint: vsock:CID:PORT, or virtio-serial:PATH. 0 or -1. */
static int
guest_endpoint(const struct hook *h, char *buf, size_t len)
{
	struct endpoint ep;
	int n;

	if (h->dom.has_cid)
		n = snprintf(buf, len, "vsock:%lu:%u", h->dom.cid,
		    h->conf.vsock_port);
	else if (h->dom.channel[0] != '\0')
		n = snprintf(buf, len, "virtio-serial:%s", h->dom.channel);
	else
		return -1;
	if (n < 0 || (size_t)n >= len || endpoint_parse(buf, &ep) == -1) {
		log_msg(LVL_WARN, "the domain's guest endpoint is not usable",
		    "{s:s}", "endpoint", buf);
		return -1;
	}
	return 0;
}

/*
 * SPEC 7.1: a claim with neither a guest endpoint nor a console log is
 * never checked (virt-install's default <serial type='pty'> keeps no log
 * on the host). Said at warn, with the XML that fixes it.
 */
static void
warn_uncheckable(const struct hook *h, const struct claim *cl)
{
	char fix[DOMAIN_NAME_MAX + 512];

	(void)snprintf(fix, sizeof(fix), "add a console log to the domain's "
	    "<serial>: <log file='/var/log/libvirt/qemu/%s-console.log' "
	    "append='off'/>, or the guest agent's channel: <channel "
	    "type='unix'><target type='virtio' name='" HOOK_PORT_NAME "'/>"
	    "</channel> (or a <vsock> device)", h->dom.name);
	log_msg(LVL_WARN, "the domain gives the sentinel nothing to check",
	    "{s:s, s:s, s:s, s:s}", "vf", cl->vf, "instance_id",
	    cl->instance_id, "domain", h->dom.name, "fix", fix);
}

int
claim_complete(struct hook *h, struct claim *cl)
{
	char ctl[PATH_MAX], ep[PATH_MAX + 32];
	bool has_ctl, has_ep;
	int changed;

	has_ctl = monitor_socket(h, ctl, sizeof(ctl)) == 0;
	if (!has_ctl && cl->control_socket == NULL)
		log_msg(LVL_WARN, "found no QMP monitor socket of the domain",
		    "{s:s, s:i}", "qemu_state_dir", h->conf.qemu_state_dir,
		    "id", (int)h->dom.id);
	has_ep = guest_endpoint(h, ep, sizeof(ep)) == 0;
	changed = claimlife_complete(cl, has_ctl ? ctl : NULL, has_ep ? ep :
	    NULL, h->dom.app_log[0] != '\0' ? h->dom.app_log : NULL);
	if (changed < 0)
		return log_fail(0, "out of memory", NULL);
	if (changed > 0 && claim_save(h, "cannot persist the completed "
	    "claim") == -1)
		return 0;
	if (cl->vsock == NULL && cl->app_log == NULL)
		warn_uncheckable(h, cl);
	log_msg(LVL_INFO, changed ? "completed the claim" : "the claim is "
	    "complete", "{s:s, s:s, s:s, s:s?, s:s?, s:s?}", "vf", cl->vf,
	    "instance_id", cl->instance_id, "domain", h->dom.name,
	    "control_socket", cl->control_socket, "vsock", cl->vsock,
	    "app_log", cl->app_log);
	return 0;
}

/* Records the claim of the running domain's VF under adopt.h's rules:
 * its type left as it is, its profile the domain's or the type's name. */
int
claim_adopt(struct hook *h, const char *vf)
{
	const struct placement_vf *v = placement_find(&h->view.pl, vf);
	char now[TIMEFMT_MAX], msg[512];
	struct claim cl = { 0 };
	const char *warning;
	long pid;

	if (v == NULL)
		return log_fail(EXIT_NO, "cannot adopt: VF not in sysfs",
		    "{s:s}", "vf", vf);
	if (adopt_check(v, h->dom.profile, msg, sizeof(msg)) != ADOPT_OK)
		return log_fail(EXIT_NO, "cannot adopt the running domain's "
		    "VF", "{s:s, s:s, s:s}", "vf", vf, "instance_id",
		    h->dom.uuid, "reason", msg);
	cl.instance_id = h->dom.uuid;
	cl.profile = h->dom.profile;
	if (claimlife_adopt(&h->view.claims, v, &cl, now, sizeof(now)) == -1)
		return errno == ENOMEM ? log_fail(EX_OSERR, "out of memory",
		    NULL) : log_fail(EX_SOFTWARE, "cannot format the time",
		    NULL);
	if (claim_save(h, "cannot persist the adopted claim") == -1)
		return EX_IOERR;
	warning = adopt_holder(h->conf.sysfs_root, h->proc_root, vf, &pid);
	log_msg(warning ? LVL_WARN : LVL_INFO, "adopted the running domain's "
	    "VF", "{s:s, s:s, s:s, s:s, s:s?}", "vf", vf, "instance_id",
	    h->dom.uuid, "domain", h->dom.name, "type_id", cl.type_id,
	    "warning", warning);
	return 0;
}

/* Writes 0 to vf's current_vgpu_type unless a process holds its VFIO
 * device (or /proc cannot be scanned): claimlife's rule. 0 done, -1
 * logged. */
static int
deconfigure(struct hook *h, const char *vf)
{
	bool wrote;
	long pid;

	if (claimlife_deconfigure_scan(h->conf.sysfs_root, h->proc_root, vf,
	    &pid, &wrote) == 0)
		return 0;
	if (pid != 0)
		log_msg(LVL_ERROR, "kept the claim: cannot deconfigure the VF",
		    "{s:s, s:I, s:s}", "vf", vf, "holder_pid",
		    (json_int_t)pid, "error", pid < 0 ? strerror(errno) :
		    "a process holds its VFIO device");
	else
		log_msg(LVL_ERROR, "kept the claim: cannot deconfigure the VF",
		    "{s:s, s:s}", "vf", vf, "error", strerror(errno));
	return -1;
}

struct claim *
claim_verification(const struct hook *h, const char *vf)
{
	struct claim *cl = claims_find_vf(&h->view.claims, vf);

	return cl != NULL && cl->verify_token != NULL ? cl : NULL;
}

struct claim *
claim_verifying(const struct hook *h)
{
	size_t i;

	for (i = 0; h->dom.uuid[0] != '\0' && i < h->view.claims.n; i++)
		if (h->view.claims.v[i].verify_token != NULL &&
		    h->view.claims.v[i].domain_uuid != NULL &&
		    strcmp(h->view.claims.v[i].domain_uuid, h->dom.uuid) == 0)
			return &h->view.claims.v[i];
	return NULL;
}

/* The profile's type written to the verified VF, the claim saved with
 * it and the domain's UUID. 0, or a refusal. */
static int
verify_configure(struct hook *h, struct claim *cl,
    const struct placement_vf *v)
{
	const char *profile = h->dom.profile[0] != '\0' ? h->dom.profile :
	    cl->profile;
	char type_id[16], msg[512];
	unsigned id = profile != NULL ? placement_type_id(v->vi, profile) : 0;
	bool already;

	if (profile != NULL && id == 0) {
		(void)snprintf(msg, sizeof(msg), "VF %s does not offer profile "
		    "'%s'", cl->vf, profile);
		return refuse_start(msg);
	}
	(void)snprintf(type_id, sizeof(type_id), "%u", id);
	free(cl->domain_uuid);
	cl->domain_uuid = strdup(h->dom.uuid);
	if (id != 0 && cl->type_id == NULL)
		cl->type_id = strdup(type_id);
	if (cl->domain_uuid == NULL || (id != 0 && cl->type_id == NULL))
		return refuse_start("out of memory");
	if (claim_save(h, "cannot persist the verification's claim") == -1)
		return refuse_start("cannot persist the claim; see libvirt's "
		    "log of this domain");
	if (id == 0 || claimlife_configure(h->conf.sysfs_root, cl->vf, id,
	    &already) == 0)
		return 0;
	(void)snprintf(msg, sizeof(msg), "cannot write vGPU type %u to VF "
	    "%s: %s", id, cl->vf, strerror(errno));
	return refuse_start(msg);
}

int
claim_verify(struct hook *h, struct claim *cl, const struct placement_vf *v)
{
	char msg[512];

	if (h->dom.verify_token[0] == '\0' ||
	    strcmp(h->dom.verify_token, cl->verify_token) != 0 ||
	    (cl->domain_uuid != NULL &&
	    strcmp(cl->domain_uuid, h->dom.uuid) != 0)) {
		(void)snprintf(msg, sizeof(msg), "VF %s is being verified "
		    "(instance %.200s); it cannot be placed until the "
		    "verification ends", cl->vf, cl->instance_id);
		return refuse_start(msg);
	}
	if (verify_configure(h, cl, v) != 0)
		return EXIT_NO;
	log_msg(LVL_INFO, "the verification domain took over the claim",
	    "{s:s, s:s, s:s, s:s, s:s?}", "vf", cl->vf, "instance_id",
	    cl->instance_id, "domain", h->dom.name, "domain_uuid",
	    h->dom.uuid, "profile", cl->profile);
	return 0;
}

bool
claim_is_domains(const struct hook *h, const struct claim *cl)
{
	size_t i;

	for (i = 0; i < h->vfs.n; i++)
		if (strcmp(h->vfs.v[i], cl->vf) == 0)
			return true;
	return false;
}

/* What the suspicion rule decided of the ended assignment. */
static void
log_verdict(const struct hook *h, const char *vf,
    const struct suspicion_how *how, const struct suspicion_verdict *v)
{
	if (v->console_err != 0)
		log_msg(LVL_WARN, "console log refused: not read at release",
		    "{s:s, s:s, s:s, s:s}", "vf", vf, "domain", h->dom.name,
		    "path", v->console_path, "error",
		    io_strerror(v->console_err));
	if (v->err != 0)
		log_msg(LVL_ERROR, "cannot decide whether the VF is suspect",
		    "{s:s, s:s}", "vf", vf, "error", v->why != NULL &&
		    v->why[0] != '\0' ? v->why : strerror(v->err));
	else if (v->suspect)
		log_msg(LVL_WARN, v->quarantined ? "a second suspicion "
		    "quarantined the VF" : "the VF is suspect: its domain "
		    "ended before the guest said OK", "{s:s, s:s, s:s, s:s}",
		    "vf", vf, "domain", h->dom.name, "ended", how->ended,
		    "source", how->source);
}

/* libvirt's log of the domain is a link or not a regular file: not
 * read (SPEC.md 8.3). */
static void
log_refused(const struct hook *h, int err)
{
	char path[PATH_MAX];

	if (io_pathf(path, sizeof(path), "%s/%s.log",
	    h->conf.libvirt_log_dir, h->dom.name) < 0)
		path[0] = '\0';
	log_msg(LVL_WARN, "domain log refused: not read at release",
	    "{s:s, s:s, s:s}", "domain", h->dom.name, "path", path, "error",
	    io_strerror(err));
}

/* Ends the claim: removed, saved, audited (claimlife_release()), and
 * how it ended decides a suspicion. */
static void
end_claim(struct hook *h, const char *vf, bool deconf)
{
	char word[40], source[64];
	struct suspicion_verdict v = { 0 };
	struct suspicion_how how = { .source = source,
	    .window = h->conf.suspect_window,
	    .on_unknown = h->conf.suspect_on_unknown,
	    .threshold = h->conf.threshold,
	    .read_max = h->conf.console_read_max };
	struct claimlife_end end = { .command = "release", .vf = vf,
	    .instance_id = h->dom.uuid, .domain = h->dom.name,
	    .deconfigured = deconf, .how = &how, .verdict = &v };
	struct atomic_result res = { 0 };
	int audit_err;

	how.ignore_ok = !h->conf.suspect_trust_ok;	/* SPEC 8.2 */
	/* How the domain ended: libvirt's log says it (SPEC.md 7.3). */
	if (endlog_reason(h->conf.libvirt_log_dir, h->dom.name,
	    h->conf.console_read_max, word, sizeof(word)) == 0) {
		how.ended = endlog_ended(word);
		snprintf(source, sizeof(source), "libvirt-hook: reason=%s",
		    word);
	} else {
		if (errno == IO_ENOTREG || errno == ELOOP)
			log_refused(h, errno);
		how.ended = "unknown";
		snprintf(source, sizeof(source), "libvirt-hook: no shutdown "
		    "line");
	}

	if (claimlife_release(&h->view.store, &h->view.claims, &end, &res,
	    &audit_err) == -1) {
		log_msg(LVL_ERROR, "cannot persist the release", "{s:s, s:s, "
		    "s:s}", "path", h->view.store.claims_path, "step",
		    res.step ? res.step : "", "error", h->view.store.why);
		return;
	}
	log_msg(LVL_INFO, "released the domain's claim", "{s:s, s:s, s:s, "
	    "s:b}", "vf", vf, "instance_id", h->dom.uuid, "domain",
	    h->dom.name, "deconfigured", deconf);
	if (audit_err != 0)
		log_msg(LVL_ERROR, "cannot append the audit line", "{s:s, s:s}",
		    "vf", vf, "error", strerror(audit_err));
	log_verdict(h, vf, &how, &v);
}

int
claim_end(struct hook *h)
{
	struct claim *cl = claims_find_instance(&h->view.claims, h->dom.uuid);
	bool deconf = h->conf.libvirt_deconfigure;
	char vf[VF_ADDR_LEN + 1];

	if (cl == NULL) {
		log_msg(LVL_INFO, "the domain holds no claim", "{s:s, s:s}",
		    "instance_id", h->dom.uuid, "domain", h->dom.name);
		return 0;
	}
	/* SPEC 7.2: a UUID is the domain author's to choose; only a claim
	 * of one of the domain's own VFs is the domain's to release. */
	if (!claim_is_domains(h, cl)) {
		log_msg(LVL_WARN, "kept the claim: its VF is not one of the "
		    "domain's", "{s:s, s:s, s:s, s:s}", "claimed_vf", cl->vf,
		    "vf", h->vfs.v[0], "instance_id", h->dom.uuid, "domain",
		    h->dom.name);
		return 0;
	}
	memcpy(vf, cl->vf, sizeof(vf));
	if (deconf && deconfigure(h, vf) == -1)
		return 0;
	end_claim(h, vf, deconf);
	return 0;
}
