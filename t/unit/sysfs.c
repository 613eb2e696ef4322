/*
 * sysfs.c - unit tests (TAP) for the pure parsers of src/lib/sysfs.c:
 * sysfs_vgpu_fb_mb() and sysfs_vgpu_types_parse().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sysfs.h"

static int test_no;
static int failed;

static void
ok(int cond, const char *what)
{
	test_no++;
	if (!cond)
		failed++;
	printf("%sok %d - %s\n", cond ? "" : "not ", test_no, what);
}

static void
test_fb(void)
{
	ok(sysfs_vgpu_fb_mb("NVIDIA L40S-12Q") == 12288, "L40S-12Q is 12 GiB");
	ok(sysfs_vgpu_fb_mb("NVIDIA L40S-1B") == 1024, "L40S-1B is 1 GiB");
	ok(sysfs_vgpu_fb_mb("NVIDIA L40S-48Q") == 49152, "L40S-48Q is 48 GiB");
	ok(sysfs_vgpu_fb_mb("NVIDIA A100-4-20C") == 20480,
	    "the number before the final letter wins (A100-4-20C)");
	ok(sysfs_vgpu_fb_mb("GRID T4-16Q") == 16384, "GRID T4-16Q");
	ok(sysfs_vgpu_fb_mb("NVIDIA L40S") == 0, "no series suffix: 0");
	ok(sysfs_vgpu_fb_mb("NVIDIA L40S-12") == 0, "no series letter: 0");
	ok(sysfs_vgpu_fb_mb("NVIDIA L40S-Q") == 0, "no number: 0");
	ok(sysfs_vgpu_fb_mb("12Q") == 0, "number not after '-': 0");
	ok(sysfs_vgpu_fb_mb("") == 0, "empty name: 0");
	ok(sysfs_vgpu_fb_mb("X-99999999999Q") == 0, "overflow: 0");
}

static void
test_parse_basic(void)
{
	const char *text = "ID    : vGPU Name\n"
	    "1155  : NVIDIA L40S-1B\n"
	    "1160  : NVIDIA L40S-12Q\n";
	struct vgpu_type *t = NULL;
	size_t n = 99;

	ok(sysfs_vgpu_types_parse(text, strlen(text), &t, &n) == 0, "parse ok");
	ok(n == 2, "header skipped, two types");
	ok(n == 2 && t[0].id == 1155 && strcmp(t[0].name,
	    "NVIDIA L40S-1B") == 0 && t[0].framebuffer_mb == 1024,
	    "first type id, name, framebuffer");
	ok(n == 2 && t[1].id == 1160 && t[1].framebuffer_mb == 12288,
	    "second type");
	free(t);
}

static void
test_parse_malformed(void)
{
	const char *text = "ID : vGPU Name\n"
	    "garbage line\n"
	    "x12 : NVIDIA bad id\n"
	    "0 : NVIDIA zero id\n"
	    "1161 :   \n"
	    "\n"
	    "  1162 :  NVIDIA L40S-24Q  \r\n"
	    "1163:NVIDIA L40S-48Q";
	struct vgpu_type *t = NULL;
	size_t n = 0;

	ok(sysfs_vgpu_types_parse(text, strlen(text), &t, &n) == 0,
	    "malformed lines do not fail the parse");
	ok(n == 2, "only the two good lines are kept");
	ok(n == 2 && t[0].id == 1162 && strcmp(t[0].name,
	    "NVIDIA L40S-24Q") == 0, "blanks and CR are trimmed");
	ok(n == 2 && t[1].id == 1163 && t[1].framebuffer_mb == 49152,
	    "last line without newline, no blanks around ':'");
	free(t);
}

static void
test_parse_edge(void)
{
	char longname[300];
	struct vgpu_type *t = NULL;
	size_t n = 5;

	ok(sysfs_vgpu_types_parse("", 0, &t, &n) == 0 && n == 0,
	    "empty text: no types");
	free(t);
	t = NULL;
	ok(sysfs_vgpu_types_parse("ID : vGPU Name\n", 15, &t, &n) == 0 && n == 0,
	    "header only: no types");
	free(t);
	t = NULL;
	memset(longname, 'A', sizeof(longname));
	memcpy(longname, "7 : ", 4);
	longname[sizeof(longname) - 1] = '\0';
	ok(sysfs_vgpu_types_parse(longname, strlen(longname), &t, &n) == 0 &&
	    n == 0, "a name over VGPU_NAME_MAX is skipped");
	free(t);
}

/* One path builder for SYSFS_ROOT/sys/bus/pci/... (devices, VFs, pci.c). */
static void
test_pci_path(void)
{
	char buf[64], tiny[16];

	ok(sysfs_pci_path("/", NULL, NULL, NULL, buf, sizeof(buf)) == 0 &&
	    strcmp(buf, "/sys/bus/pci") == 0, "root / is not doubled");
	ok(sysfs_pci_path("/r//", "devices", NULL, "x", buf, sizeof(buf)) ==
	    0 && strcmp(buf, "/r/sys/bus/pci/devices/x") == 0,
	    "a NULL part is left out");
	ok(sysfs_vf_path("/r", "0000:e3:00.4", "driver", buf, sizeof(buf)) ==
	    0 && strcmp(buf, "/r/sys/bus/pci/devices/0000:e3:00.4/driver") ==
	    0, "VF attribute path");
	errno = 0;
	ok(sysfs_pci_path("/r", "devices", NULL, NULL, tiny, sizeof(tiny)) ==
	    -1 && errno == ENAMETOOLONG, "too long: ENAMETOOLONG");
}

int
main(void)
{
	test_fb();
	test_pci_path();
	test_parse_basic();
	test_parse_malformed();
	test_parse_edge();
	printf("1..%d\n", test_no);
	return failed ? 1 : 0;
}
