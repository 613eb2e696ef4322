/*
 * claimlife.c - unit tests (TAP) for the life of one claim
 * (src/lib/claimlife.c): new, configure, complete, adopt, the one VFIO
 * holder rule of deconfigure, the release's audit line, and the release
 * itself (removed, saved, then audited; a failed save or audit line),
 * over a fake sysfs tree, a fake /proc and a store in a temporary
 * directory.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "claimlife.h"
#include "tap.h"
#include "timefmt.h"

#define CARD "0000:e3:00.0"
#define VF4 "0000:e3:00.4"
#define VF5 "0000:e3:00.5"
#define P12 "NVIDIA L40S-12Q"
#define P24 "NVIDIA L40S-24Q"

static char root[PATH_MAX];

#define DEV "sys/bus/pci/devices/"

/* A VF of CARD holding type 0, in IOMMU group grp. */
static void
make_vf(const char *vf, const char *grp)
{
	tap_sh(root, "mkdir -p " DEV "%s/nvidia sys/kernel/iommu_groups/%s",
	    vf, grp);
	tap_sh(root, "echo 0 >" DEV "%s/nvidia/current_vgpu_type", vf);
	tap_sh(root, "printf 'ID : vGPU Name\\n1160 : " P12 "\\n1161 : " P24
	    "\\n' >" DEV "%s/nvidia/creatable_vgpu_types", vf);
	tap_sh(root, "ln -s ../" CARD " " DEV "%s/physfn", vf);
	tap_sh(root, "ln -s ../../../../kernel/iommu_groups/%s "
	    DEV "%s/iommu_group", grp, vf);
}

/* Writes type to the VF's current_vgpu_type. */
static void
set_type(const char *vf, unsigned type)
{
	tap_sh(root, "echo %u >" DEV "%s/nvidia/current_vgpu_type", type, vf);
}

/* The VF's current_vgpu_type as written. */
static char *
vgpu_type(const char *vf)
{
	char path[PATH_MAX * 2];
	char *t;

	(void)snprintf(path, sizeof(path), "%s/" DEV "%s/nvidia/"
	    "current_vgpu_type", root, vf);
	t = tap_slurp(path);
	if (t != NULL)
		t[strcspn(t, "\n")] = '\0';
	return t;
}

static void
test_new(void)
{
	struct claims c = { 0 };
	struct claim cl = { .vf = VF4, .instance_id = "i-1",
	    .profile = P12 };
	const struct claim *got;
	char now[TIMEFMT_MAX], tiny[4];
	struct timespec ts;

	ok(claimlife_new(&c, &cl, now, sizeof(now)) == 0 && c.n == 1,
	    "new: the claim is in the ledger");
	got = claims_find_instance(&c, "i-1");
	ok(got != NULL && strcmp(got->vf, VF4) == 0 &&
	    strcmp(got->profile, P12) == 0, "  under its instance and VF");
	ok(got != NULL && got->claimed_at != now &&
	    strcmp(got->claimed_at, now) == 0 && cl.claimed_at == now,
	    "  claimed_at is now, the ledger's own copy of the caller's");
	ok(timefmt_parse(now, &ts) == 0, "  now is a time the store reads");
	cl.instance_id = "i-2";
	strcpy(cl.vf, VF5);
	errno = 0;
	ok(claimlife_new(&c, &cl, tiny, sizeof(tiny)) == -1 &&
	    errno == EOVERFLOW && c.n == 1,
	    "a buffer too short for the time: EOVERFLOW, nothing added");
	claims_release(&c);
}

static void
test_configure(void)
{
	bool already = true;

	ok(claimlife_configure(root, VF4, 1160, &already) == 0 && !already,
	    "configure: a free VF takes the type");
	is_str(vgpu_type(VF4), "1160", "  written to current_vgpu_type");
	ok(claimlife_configure(root, VF4, 1160, &already) == 0 && already,
	    "the same type again: already, nothing written");
	errno = 0;
	ok(claimlife_configure(root, "0000:e3:01.7", 1160, &already) == -1 &&
	    errno != 0 && !already, "a VF that is not there: -1 with errno");
	set_type(VF4, 0);
}

static void
test_complete(void)
{
	struct claim cl = { .vf = VF4 };
	char sock[] = "/run/vm/i-1/qmp.sock";

	ok(claimlife_complete(&cl, NULL, NULL, NULL) == 0 &&
	    cl.control_socket == NULL && cl.vsock == NULL &&
	    cl.app_log == NULL, "complete: nothing given, nothing changed");
	ok(claimlife_complete(&cl, sock, "vsock:42:2222", NULL) == 2,
	    "two given: two changed");
	sock[1] = 'X';
	is_str(cl.control_socket, "/run/vm/i-1/qmp.sock",
	    "  the claim holds a copy, not the caller's buffer");
	ok(claimlife_complete(&cl, "/run/vm/i-1/qmp.sock", "vsock:42:2222",
	    NULL) == 0, "the same again: 0 changed (nothing to save)");
	ok(claimlife_complete(&cl, NULL, "vsock:43:2222", "/var/log/i-1.log")
	    == 2 && strcmp(cl.vsock, "vsock:43:2222") == 0 &&
	    strcmp(cl.control_socket, "/run/vm/i-1/qmp.sock") == 0,
	    "a new endpoint and a log: those change, the socket stays");
	free(cl.control_socket);
	free(cl.vsock);
	free(cl.app_log);
}

static void
test_adopt(void)
{
	struct vgpu_type types[] = {
		{ .id = 1160, .name = P12, .framebuffer_mb = 12288 },
		{ .id = 1161, .name = P24, .framebuffer_mb = 24576 },
	};
	struct vf_info vi = { .addr = VF5, .card = CARD, .current_type = 1161,
	    .types = types, .ntypes = 2 };
	struct placement_vf v = { .vi = &vi };
	struct claims c = { 0 };
	struct claim cl = { .instance_id = "i-5" };
	const struct claim *got;
	char now[TIMEFMT_MAX];

	ok(claimlife_adopt(&c, &v, &cl, now, sizeof(now)) == 0,
	    "adopt: the running VM's VF is claimed");
	got = claims_find_vf(&c, VF5);
	ok(got != NULL && strcmp(got->instance_id, "i-5") == 0 &&
	    strcmp(got->type_id, "1161") == 0 &&
	    strcmp(got->profile, P24) == 0,
	    "  with the type the VF holds and that type's profile");
	ok(got != NULL && cl.type_id == got->type_id &&
	    strcmp(cl.vf, VF5) == 0,
	    "  the caller's claim points at the ledger's type_id");
	claims_release(&c);
	memset(&c, 0, sizeof(c));
	cl = (struct claim){ .instance_id = "i-6", .profile = P12 };
	ok(claimlife_adopt(&c, &v, &cl, now, sizeof(now)) == 0 &&
	    c.n == 1 && strcmp(c.v[0].profile, P12) == 0 &&
	    strcmp(c.v[0].type_id, "1161") == 0,
	    "a profile given is recorded; the type stays the VF's");
	claims_release(&c);
}

static void
test_deconfigure(void)
{
	struct vfio_scan held;
	bool wrote = true;
	long pid = 7;

	set_type(VF4, 0);
	set_type(VF5, 1160);
	tap_sh(root, "mkdir -p proc/1234/fd proc/1235/fd && ln -s /dev/vfio/88 "
	    "proc/1234/fd/9");
	ok(vfio_scan_load(&held, root) == 0, "a scan of the fake /proc");
	ok(claimlife_deconfigure(root, &held, VF4, &pid, &wrote) == 0 &&
	    !wrote && pid == 0, "deconfigure: type 0 has nothing to reset");
	ok(claimlife_deconfigure(root, &held, VF5, &pid, &wrote) == 0 &&
	    wrote && pid == 0, "a type and no holder: 0 is written");
	is_str(vgpu_type(VF5), "0", "  current_vgpu_type is 0");
	vfio_scan_release(&held);
	set_type(VF5, 1160);
	tap_sh(root, "ln -s /dev/vfio/87 proc/1235/fd/3");
	ok(vfio_scan_load(&held, root) == 0, "the VF's group held by 1235");
	errno = 0;
	ok(claimlife_deconfigure(root, &held, VF5, &pid, &wrote) == -1 &&
	    errno == EBUSY && pid == 1235 && !wrote,
	    "a process holds its VFIO device: EBUSY with the holder");
	is_str(vgpu_type(VF5), "1160", "  the type is left alone");
	vfio_scan_release(&held);
	ok(claimlife_deconfigure_scan(root, root, VF5, &pid, &wrote) == -1 &&
	    errno == EBUSY && pid == 1235,
	    "deconfigure_scan scans /proc itself: the same holder");
	tap_sh(root, "rm -r proc");
	ok(claimlife_deconfigure_scan(root, root, VF4, &pid, &wrote) == 0 &&
	    !wrote && pid == 0, "type 0: no scan, so no /proc is needed");
	ok(claimlife_deconfigure_scan(root, root, VF5, &pid, &wrote) == -1 &&
	    pid == -1 && !wrote, "a /proc that cannot be scanned: -1, pid -1 "
	    "(nobody is assumed to hold nothing)");
	is_str(vgpu_type(VF5), "1160", "  and the type is left alone");
}

/* The last line of GPU_DIR/audit.jsonl, or "" when there is none. */
static const char *
last_audit(const char *gpu)
{
	static char line[4096];
	char path[PATH_MAX * 2], *t, *nl;

	(void)snprintf(path, sizeof(path), "%s/audit.jsonl", gpu);
	line[0] = '\0';
	if ((t = tap_slurp(path)) == NULL)
		return line;
	while ((nl = strchr(t, '\n')) != NULL && nl[1] != '\0')
		t = nl + 1;
	(void)snprintf(line, sizeof(line), "%.*s", (int)strcspn(t, "\n"), t);
	return line;
}

static void
test_audit(const char *gpu)
{
	struct claimlife_end end = { .command = "reconcile", .vf = VF4,
	    .instance_id = "i-1", .reason = "control socket is gone",
	    .liveness = "gone", .deconfigured = true };
	const char *l;

	ok(claimlife_audit(gpu, &end) == 0, "audit: a release line");
	l = last_audit(gpu);
	ok(strstr(l, "\"command\":\"reconcile\"") != NULL &&
	    strstr(l, "\"vf\":\"" VF4 "\"") != NULL &&
	    strstr(l, "\"reason\":\"control socket is gone\"") != NULL &&
	    strstr(l, "\"instance_id\":\"i-1\"") != NULL &&
	    strstr(l, "\"liveness\":\"gone\"") != NULL &&
	    strstr(l, "\"deconfigured\":true") != NULL &&
	    strstr(l, "\"domain\"") == NULL,
	    "  its fields; no domain given, none written");
	if (!ok(strstr(l, "\"vf\"") < strstr(l, "\"instance_id\"") &&
	    strstr(l, "\"instance_id\"") < strstr(l, "\"liveness\"") &&
	    strstr(l, "\"liveness\"") < strstr(l, "\"deconfigured\""),
	    "  in the order of SPEC 4.1: vf ... instance_id, liveness, "
	    "deconfigured"))
		printf("#   %s\n", l);
	end.instance_id = "i-\xff";
	errno = 0;
	ok(claimlife_audit(gpu, &end) == -1 && errno == EILSEQ &&
	    strstr(last_audit(gpu), "i-1") != NULL,
	    "an instance that is not UTF-8: EILSEQ, nothing written");
}

static void
test_release(void)
{
	char data[PATH_MAX * 2], path[PATH_MAX * 3];
	struct claims c = { 0 }, back = { 0 };
	struct claim a = { .vf = VF4, .instance_id = "i-1",
	    .claimed_at = "2026-08-20T15:00:00Z" };
	struct claim b = { .vf = VF5, .instance_id = "i-2",
	    .claimed_at = "2026-08-20T15:00:01Z" };
	struct claimlife_end end = { .command = "release", .vf = VF4,
	    .instance_id = "i-1", .reason = "operator" };
	struct atomic_result res;
	struct store s;
	bool created;
	int audit_err = -1;

	(void)snprintf(data, sizeof(data), "%s/data", root);
	if (store_init(&s, data) == -1 ||
	    store_create(&s, (uid_t)-1, (gid_t)-1, &created) == -1 ||
	    store_lock(&s, true, 1) == -1 || claims_add(&c, &a) == -1 ||
	    claims_add(&c, &b) == -1 || claims_save(&s, &c, &res) == -1) {
		printf("Bail out! no store in %s\n", data);
		exit(1);
	}
	test_audit(s.dir);
	ok(claimlife_release(&s, &c, &end, &res, &audit_err) == 0 &&
	    audit_err == 0, "release: 0, the audit line written");
	ok(c.n == 1 && claims_find_instance(&c, "i-1") == NULL &&
	    claims_find_instance(&c, "i-2") != NULL,
	    "  the claim is gone from the ledger, the other stays");
	ok(claims_load(&s, &back) == 0 && back.n == 1 &&
	    strcmp(back.v[0].instance_id, "i-2") == 0,
	    "  and from vf-claims.json");
	claims_release(&back);
	ok(strstr(last_audit(s.dir), "\"command\":\"release\"") != NULL &&
	    strstr(last_audit(s.dir), "\"instance_id\":\"i-1\"") != NULL,
	    "  the audit line names the release");
	/* An audit log that cannot be appended to (a directory in its
	 * place): the release stands. */
	(void)snprintf(path, sizeof(path), "%s/audit.jsonl", s.dir);
	ok(unlink(path) == 0 && mkdir(path, 0755) == 0,
	    "audit.jsonl made a directory");
	end.vf = VF5;
	end.instance_id = "i-2";
	ok(claimlife_release(&s, &c, &end, &res, &audit_err) == 0 &&
	    audit_err != 0 && c.n == 0 && claims_load(&s, &back) == 0 &&
	    back.n == 0, "a failed audit line: the release stands, its "
	    "errno in audit_err");
	claims_release(&back);
	/* A ledger that cannot be saved (a directory in its place). */
	if (claims_add(&c, &a) == -1 || claims_save(&s, &c, &res) == -1 ||
	    unlink(s.claims_path) == -1 || mkdir(s.claims_path, 0755) == -1 ||
	    mkdir(strcat(strcpy(path, s.claims_path), "/x"), 0755) == -1) {
		printf("Bail out! cannot put a directory in the ledger's "
		    "place\n");
		exit(1);
	}
	end.vf = VF4;
	end.instance_id = "i-1";
	res.step = NULL;
	ok(claimlife_release(&s, &c, &end, &res, &audit_err) == -1 &&
	    res.step != NULL, "a failed save: -1 with the step that failed");
	ok(c.n == 0, "  the claim is gone from the caller's ledger only");
	store_unlock(&s);
	claims_release(&c);
}

int
main(void)
{
	tap_tmpdir(root, sizeof(root), "claimlife");
	make_vf(VF4, "86");
	make_vf(VF5, "87");
	test_new();
	test_configure();
	test_complete();
	test_adopt();
	test_deconfigure();
	test_release();
	tap_rmtree(root);
	return done_testing();
}
