/*
 * nvdev.c - unit tests (TAP) for the driver's GPU list and the device
 * open of gpu-probe --method open (nvdev_parse_minor, nvdev_list_load,
 * nvdev_node_path, nvdev_node_make, nvdev_probe, nvdev_find_smi) over a
 * fake PROC/driver/nvidia/gpus and dev dir in a temporary directory. A
 * regular file is a node that opens, a directory one that fails (EISDIR).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "gpu-probe/nvdev.h"
#include "tap.h"

#define GPUS "proc/driver/nvidia/gpus"

/* The information file of the NVIDIA module, with its Device Minor. */
#define INFO_FMT "Model: \t\t NVIDIA L40S-12Q\nIRQ:   \t\t 45\n" \
    "GPU UUID: \t GPU-6b2a0c1e-8a5f-4d5e-9c1a-000000000001\n" \
    "Video BIOS: \t ??.??.??.??.??\nBus Type: \t PCIe\n" \
    "Bus Location: \t %s\nDevice Minor: \t %s\nGPU Excluded:\t No\n"

static char root[PATH_MAX];

/* root/rel, in one of two static buffers (two at a time). */
static const char *
at(const char *rel)
{
	static char path[2][PATH_MAX];
	static int i;

	i = !i;
	if (snprintf(path[i], sizeof(path[i]), "%s/%s", root, rel) >=
	    (int)sizeof(path[i]))
		abort();
	return path[i];
}

static void
write_file(const char *path, const char *text)
{
	FILE *f;

	if ((f = fopen(path, "w")) == NULL)
		abort();
	fputs(text, f);
	fclose(f);
}

/* A GPU entry bdf whose information says minor (NULL: no such line). */
static void
gpu(const char *bdf, const char *minor)
{
	char rel[256], text[1024];

	snprintf(rel, sizeof(rel), GPUS "/%s", bdf);
	if (mkdir(at(rel), 0755) < 0)
		abort();
	snprintf(text, sizeof(text), INFO_FMT, bdf, minor ? minor : "");
	if (minor == NULL)
		*strstr(text, "Device Minor:") = '\0';
	snprintf(rel, sizeof(rel), GPUS "/%s/information", bdf);
	write_file(at(rel), text);
}

static void
clean(void)
{
	char cmd[PATH_MAX * 2];

	snprintf(cmd, sizeof(cmd), "cd '%s' && rm -rf proc dev && mkdir -p "
	    GPUS " dev", root);
	if (system(cmd) != 0)
		abort();
}

static void
test_parse_minor(void)
{
	static const char *good = "Model: x\nDevice Minor: \t 7\nIRQ: 1\n";
	char text[512];

	snprintf(text, sizeof(text), INFO_FMT, "0000:00:03.0", "0");
	ok(nvdev_parse_minor(text, strlen(text)) == 0, "the module's file: 0");
	ok(nvdev_parse_minor(good, strlen(good)) == 7, "a line in the middle");
	ok(nvdev_parse_minor("Device Minor:254", 16) == 254,
	    "no blank and no newline: 254 (the highest GPU minor)");
	ok(nvdev_parse_minor("Device Minor: 12 \r\n", 19) == 12,
	    "trailing blanks and CR");
	ok(nvdev_parse_minor("Device Minor: 255\n", 18) == -1,
	    "255 is nvidiactl, not a GPU");
	ok(nvdev_parse_minor("Device Minor: 99999999999999999999\n", 35) ==
	    -1, "a huge number does not overflow");
	ok(nvdev_parse_minor("Device Minor: 3x\n", 17) == -1 &&
	    nvdev_parse_minor("Device Minor: -1\n", 17) == -1 &&
	    nvdev_parse_minor("Device Minor: \n", 15) == -1,
	    "junk, a sign, nothing: no minor");
	ok(nvdev_parse_minor(" Device Minor: 3\n", 17) == -1 &&
	    nvdev_parse_minor("Device Minors: 3\n", 17) == -1,
	    "only a line that starts with the key counts");
	ok(nvdev_parse_minor("Device Minor: 42", 15) == 4,
	    "the length bounds the text (no NUL needed)");
	ok(nvdev_parse_minor("IRQ: 45\n", 8) == -1, "no line: -1");
}

static void
test_list(void)
{
	struct nvdev_list l;
	int rc;

	clean();
	gpu("0000:00:05.0", "2");
	gpu("0000:00:03.0", "0");
	gpu("0000:00:04.0", NULL);
	if (mkdir(at(GPUS "/.hidden"), 0755) < 0 ||
	    mkdir(at(GPUS "/0000:00:06.0"), 0755) < 0)
		abort();
	ok(nvdev_present(root), "the gpus directory is present");
	rc = nvdev_list_load(&l, root);
	ok(rc == 0 && l.n == 4, "four entries, the dot entry skipped (%zu)",
	    l.n);
	is_str(l.gpu[0].name, "0000:00:03.0", "sorted by name (0)");
	is_str(l.gpu[3].name, "0000:00:06.0", "sorted by name (3)");
	ok(l.gpu[0].minor == 0 && l.gpu[0].err == 0, "minor 0");
	ok(l.gpu[1].minor == -1 && l.gpu[1].err == 0,
	    "no Device Minor line: -1, no errno");
	ok(l.gpu[2].minor == 2, "minor 2");
	ok(l.gpu[3].minor == -1 && l.gpu[3].err == ENOENT,
	    "no information file: -1, ENOENT");
	nvdev_list_release(&l);
	ok(l.n == 0 && l.gpu == NULL, "release empties the list");
	ok(nvdev_list_load(&l, "/nonexistent-root") == -1 && errno == ENOENT &&
	    l.n == 0, "no gpus directory: ENOENT, empty");
	nvdev_list_release(&l);
	ok(!nvdev_present("/nonexistent-root"), "and it is not present");
}

static void
test_node_path(void)
{
	char buf[64];

	ok(nvdev_node_path(buf, sizeof(buf), "/dev", 3) == 0, "a path");
	is_str(buf, "/dev/nvidia3", "DEV/nvidiaN");
	nvdev_node_path(buf, sizeof(buf), "/dev//", 0);
	is_str(buf, "/dev/nvidia0", "trailing slashes dropped");
	nvdev_node_path(buf, sizeof(buf), "/", 1);
	is_str(buf, "/nvidia1", "the root directory");
	ok(nvdev_node_path(buf, 8, "/dev", 10) == -1 && errno == ENAMETOOLONG,
	    "too long: ENAMETOOLONG");
}

static void
test_node_make(void)
{
	struct stat st;
	mode_t old;

	clean();
	if (geteuid() != 0) {
		ok(1, "# SKIP mknod needs root");
		return;
	}
	old = umask(077);
	ok(nvdev_node_make(at("dev/nvidia5"), 5) == 0, "a node is made");
	umask(old);
	ok(stat(at("dev/nvidia5"), &st) == 0 && S_ISCHR(st.st_mode) &&
	    major(st.st_rdev) == NVDEV_MAJOR && minor(st.st_rdev) == 5,
	    "character device 195:5");
	ok((st.st_mode & 07777) == 0666, "mode 0666 under umask 077 (%o)",
	    st.st_mode & 07777);
	write_file(at("dev/nvidia6"), "");
	ok(nvdev_node_make(at("dev/nvidia6"), 6) == 0 &&
	    stat(at("dev/nvidia6"), &st) == 0 && S_ISREG(st.st_mode),
	    "an existing path is left as it is");
	ok(nvdev_node_make(at("nodir/nvidia0"), 0) == -1 && errno == ENOENT,
	    "no directory: ENOENT");
}

static void
test_probe(void)
{
	char report[PATH_MAX * 3], want[PATH_MAX * 3];	/* two node paths */

	clean();
	ok(nvdev_probe(root, at("dev"), report, sizeof(report)) == -1,
	    "no GPU: fails");
	is_str(report, NVDEV_NO_GPU, "no GPU: the report says so");
	ok(nvdev_probe("/nonexistent-root", "/dev", report,
	    sizeof(report)) == -1, "no gpus directory: fails");
	is_str(report, NVDEV_NO_GPU, "the same report");

	gpu("0000:00:03.0", "0");
	gpu("0000:00:04.0", "1");
	write_file(at("dev/nvidia0"), "");
	write_file(at("dev/nvidia1"), "");
	ok(nvdev_probe(root, at("dev"), report, sizeof(report)) == 0,
	    "two nodes that open: ok");
	snprintf(want, sizeof(want), "opened %s (0000:00:03.0)\n"
	    "opened %s (0000:00:04.0)", at("dev/nvidia0"), at("dev/nvidia1"));
	is_str(report, want, "one line per node");

	unlink(at("dev/nvidia0"));
	mkdir(at("dev/nvidia0"), 0755);
	ok(nvdev_probe(root, at("dev"), report, sizeof(report)) == -1,
	    "one node a directory: fails");
	snprintf(want, sizeof(want), "open %s (0000:00:03.0): Is a directory",
	    at("dev/nvidia0"));
	is_str(report, want, "only the failure is reported");

	unlink(at("dev/nvidia1"));
	mkdir(at("dev/nvidia1"), 0755);
	ok(nvdev_probe(root, at("nodir"), report, sizeof(report)) == -1,
	    "no dev dir: fails");
	snprintf(want, sizeof(want), "create %s (0000:00:03.0): No such file "
	    "or directory; create %s (0000:00:04.0): No such file or directory",
	    at("nodir/nvidia0"), at("nodir/nvidia1"));
	is_str(report, want, "every failure, joined by \"; \"");

	ok(nvdev_probe(root, at("nodir"), report, 16) == -1 &&
	    strlen(report) == 15, "a short buffer truncates");
}

static void
test_find_smi(void)
{
	char buf[PATH_MAX], path[PATH_MAX * 2];

	clean();
	if (mkdir(at("dev/a"), 0755) < 0 || mkdir(at("dev/b"), 0755) < 0)
		abort();
	write_file(at("dev/a/nvidia-smi"), "");		/* not executable */
	write_file(at("dev/b/nvidia-smi"), "#!/bin/sh\n");
	chmod(at("dev/b/nvidia-smi"), 0755);
	snprintf(path, sizeof(path), "/nonexistent:%s:%s", at("dev/a"),
	    at("dev/b"));
	ok(nvdev_find_smi(NULL, path, buf, sizeof(buf)) == 0,
	    "found on PATH");
	is_str(buf, at("dev/b/nvidia-smi"), "the first executable one");
	ok(nvdev_find_smi(NULL, "/nonexistent::", buf, sizeof(buf)) == -1 &&
	    errno == ENOENT, "not on PATH: ENOENT");
	ok(nvdev_find_smi(NULL, NULL, buf, sizeof(buf)) == -1,
	    "no PATH: ENOENT");
	ok(nvdev_find_smi(at("dev/a/nvidia-smi"), path, buf, sizeof(buf)) ==
	    -1, "a named file that is not executable: ENOENT");
	ok(nvdev_find_smi(at("dev/b"), path, buf, sizeof(buf)) == -1,
	    "a named directory: ENOENT");
	ok(nvdev_find_smi(at("dev/b/nvidia-smi"), NULL, buf, sizeof(buf)) ==
	    0, "a named executable");
}

int
main(void)
{
	alarm(30);		/* a blocking bug must not hang the suite */
	tap_tmpdir(root, sizeof(root), "nvdev");
	test_parse_minor();
	test_list();
	test_node_path();
	test_node_make();
	test_probe();
	test_find_smi();
	tap_rmtree(root);
	return done_testing();
}
