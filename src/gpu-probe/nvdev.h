/*
 * nvdev - the NVIDIA GPUs the kernel driver knows and their device nodes,
 * for gpu-probe --method open, and the nvidia-smi of --method nvidia-smi
 * (SPEC.md 3.2).
 *
 * The driver lists every GPU it bound as a directory
 * PROC/driver/nvidia/gpus/<pci address>/ whose "information" file has a
 * "Device Minor: N" line; reading it does not initialise the GPU. The
 * GPU's node is /dev/nvidiaN, character device 195:N (/dev/nvidiactl is
 * minor 255 and initialises nothing). A blocking open of /dev/nvidiaN
 * runs RmInitAdapter when the GPU is not initialised yet: it succeeds only
 * if the adapter came up, and fails with EIO (the kernel then logs the
 * "RmInitAdapter failed!" line) on a wedged VF.
 *
 *	struct nvdev_list l;
 *	if (nvdev_list_load(&l, proc_root) == 0) { ... l.gpu[i] ... }
 *	nvdev_list_release(&l);
 *
 * or, in the child process of an attempt, all of it at once:
 *	rc = nvdev_probe(proc_root, dev_dir, report, sizeof(report));
 */
#ifndef VFS_NVDEV_H
#define VFS_NVDEV_H

#include <stdbool.h>
#include <stddef.h>

#define NVDEV_MAJOR 195
#define NVDEV_MINOR_MAX 254	/* 255 is nvidiactl */
#define NVDEV_NO_GPU "no NVIDIA GPU known to the driver"

struct nvdev_gpu {
	char *name;		/* the entry's name (its PCI address), owned */
	int minor;		/* from "Device Minor:", -1 when unknown */
	int err;		/* errno reading information; 0 */
};

struct nvdev_list {
	struct nvdev_gpu *gpu;	/* n entries sorted by name, owned */
	size_t n;
};

/*
 * The minor number of an information file's text (len bytes, need not be
 * NUL-terminated): the value of its "Device Minor:" line, 0 to
 * NVDEV_MINOR_MAX. -1 when there is no such line or its value is not a
 * plain decimal number in range.
 */
int nvdev_parse_minor(const char *text, size_t len);

/*
 * The nvidia-smi to run: arg when given (it must be an executable regular
 * file), else the first such "nvidia-smi" in the directories of path_env
 * (PATH; an empty entry is the current directory). The path goes into buf.
 * 0, or -1 with errno ENOENT.
 */
int nvdev_find_smi(const char *arg, const char *path_env, char *buf,
    size_t len);

/* True when PROC_ROOT/proc/driver/nvidia/gpus is a directory. */
bool nvdev_present(const char *proc_root);

/*
 * Reads every entry of PROC_ROOT/proc/driver/nvidia/gpus (names starting
 * with '.' skipped) and its information file. An entry whose file cannot
 * be read gets minor -1 and err; one without a valid line minor -1 and
 * err 0. 0 (l->n may be 0), or -1 with errno (ENOENT: no such directory;
 * l is then empty). Release l in either case.
 */
int nvdev_list_load(struct nvdev_list *l, const char *proc_root);
void nvdev_list_release(struct nvdev_list *l);

/* DEV_DIR/nvidiaN into buf. 0, or -1 with ENAMETOOLONG. */
int nvdev_node_path(char *buf, size_t len, const char *dev_dir, int minor);

/*
 * Makes the node path as nvidia-modprobe does: character device
 * 195:minor, mode 0666 whatever the umask. An existing path is left as it
 * is. 0, or -1 with errno.
 */
int nvdev_node_make(const char *path, int minor);

/*
 * Opens path blocking and read-write (the open that initialises the GPU)
 * and closes it again; a missing node is made first (nvdev_node_make).
 * 0, or -1 with errno; *make_failed tells whether it was the make that
 * failed (errno is then the make's).
 */
int nvdev_node_open(const char *path, int minor, bool *make_failed);

/*
 * One attempt: loads the list and opens every GPU's node under DEV_DIR.
 * 0 when every node opened: report (NUL-terminated, truncated to len)
 * then holds "opened NODE (ADDRESS)" for each, one a line. -1 otherwise:
 * report holds each failure ("open NODE (ADDRESS): strerror", "create
 * ...", "read INFORMATION: ...", "INFORMATION: no valid Device Minor
 * line"), joined by "; ", or NVDEV_NO_GPU when the driver lists none.
 */
int nvdev_probe(const char *proc_root, const char *dev_dir, char *report,
    size_t len);

#endif
