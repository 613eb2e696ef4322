/*
 * nvdev.c - the driver's GPU list and the device-node open of
 * gpu-probe --method open (see nvdev.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "io.h"
#include "nvdev.h"

#define INFO_MAX 65536		/* an information file is ~400 bytes */
#define MINOR_KEY "Device Minor:"

static bool
is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* The value after "Device Minor:" on one line (s to end), or -1. */
static int
line_minor(const char *s, const char *end)
{
	long v = 0;

	while (s < end && is_blank(*s))
		s++;
	if (s == end || *s < '0' || *s > '9')
		return -1;
	for (; s < end && *s >= '0' && *s <= '9'; s++)
		if ((v = v * 10 + (*s - '0')) > NVDEV_MINOR_MAX)
			return -1;
	while (s < end && is_blank(*s))
		s++;
	return s == end ? (int)v : -1;
}

int
nvdev_parse_minor(const char *text, size_t len)
{
	const char *s = text, *end = text + len, *nl;
	size_t klen = strlen(MINOR_KEY);

	while (s < end) {
		nl = memchr(s, '\n', (size_t)(end - s));
		if (nl == NULL)
			nl = end;
		if ((size_t)(nl - s) >= klen && memcmp(s, MINOR_KEY, klen) == 0)
			return line_minor(s + klen, nl);
		s = nl + 1;
	}
	return -1;
}

static bool
is_executable(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	    access(path, X_OK) == 0;
}

int
nvdev_find_smi(const char *arg, const char *path_env, char *buf, size_t len)
{
	const char *dir, *end;
	int n;

	if (arg != NULL) {
		n = snprintf(buf, len, "%s", arg);
		if (n >= 0 && (size_t)n < len && is_executable(buf))
			return 0;
		errno = ENOENT;
		return -1;
	}
	for (dir = path_env; dir != NULL && *dir != '\0'; dir = end + 1) {
		end = strchrnul(dir, ':');
		n = snprintf(buf, len, "%.*s/nvidia-smi", end == dir ? 1 :
		    (int)(end - dir), end == dir ? "." : dir);
		if (n >= 0 && (size_t)n < len && is_executable(buf))
			return 0;
		if (*end == '\0')
			break;
	}
	errno = ENOENT;
	return -1;
}

static int
gpus_dir(char *buf, size_t len, const char *proc_root)
{
	return io_pathf(buf, len, "%s/proc/driver/nvidia/gpus", proc_root);
}

bool
nvdev_present(const char *proc_root)
{
	char path[PATH_MAX];
	struct stat st;

	return gpus_dir(path, sizeof(path), proc_root) == 0 &&
	    stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Reads dir/name/information into g (minor or err). */
static void
gpu_read(struct nvdev_gpu *g, const char *dir)
{
	char path[PATH_MAX];
	size_t len;
	char *text;
	int n;

	g->minor = -1;
	g->err = 0;
	n = snprintf(path, sizeof(path), "%s/%s/information", dir, g->name);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		g->err = ENAMETOOLONG;
		return;
	}
	text = io_slurp(path, INFO_MAX, &len);
	if (text == NULL) {
		g->err = errno;
		return;
	}
	g->minor = nvdev_parse_minor(text, len);
	free(text);
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(((const struct nvdev_gpu *)a)->name,
	    ((const struct nvdev_gpu *)b)->name);
}

/* Appends a copy of name to l (growing by doubling). 0 or -1/errno. */
static int
list_add(struct nvdev_list *l, size_t *cap, const char *name)
{
	struct nvdev_gpu *g;

	if (l->n == *cap) {
		g = reallocarray(l->gpu, *cap ? *cap * 2 : 4, sizeof(*g));
		if (g == NULL)
			return -1;
		l->gpu = g;
		*cap = *cap ? *cap * 2 : 4;
	}
	g = &l->gpu[l->n];
	if ((g->name = strdup(name)) == NULL)
		return -1;
	l->n++;
	return 0;
}

int
nvdev_list_load(struct nvdev_list *l, const char *proc_root)
{
	char dir[PATH_MAX];
	struct dirent *de;
	size_t cap = 0, i;
	DIR *d;
	int rc = 0;

	l->gpu = NULL;
	l->n = 0;
	if (gpus_dir(dir, sizeof(dir), proc_root) < 0 ||
	    (d = opendir(dir)) == NULL)
		return -1;
	while (rc == 0 && (errno = 0, de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			rc = list_add(l, &cap, de->d_name);
	if (rc == 0 && errno != 0)
		rc = -1;
	closedir(d);
	if (rc < 0)
		return -1;
	if (l->n > 1)
		qsort(l->gpu, l->n, sizeof(*l->gpu), by_name);
	for (i = 0; i < l->n; i++)
		gpu_read(&l->gpu[i], dir);
	return 0;
}

void
nvdev_list_release(struct nvdev_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->gpu[i].name);
	free(l->gpu);
	l->gpu = NULL;
	l->n = 0;
}

int
nvdev_node_path(char *buf, size_t len, const char *dev_dir, int minor)
{
	size_t dlen = strlen(dev_dir);

	while (dlen > 1 && dev_dir[dlen - 1] == '/')
		dlen--;
	return io_pathf(buf, len, "%.*s%snvidia%d", (int)dlen, dev_dir,
	    dev_dir[dlen - 1] == '/' ? "" : "/", minor);
}

int
nvdev_node_make(const char *path, int minor)
{
	if (mknod(path, S_IFCHR | 0666, makedev(NVDEV_MAJOR, minor)) < 0)
		return errno == EEXIST ? 0 : -1;
	/* mknod applies the umask; the driver's users need 0666. */
	return chmod(path, 0666);
}

int
nvdev_node_open(const char *path, int minor, bool *make_failed)
{
	int fd;

	*make_failed = false;
	fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		if (nvdev_node_make(path, minor) < 0) {
			*make_failed = true;
			return -1;
		}
		fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	}
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* A report in a caller's buffer: items joined by a separator, truncated
 * (always NUL-terminated) when the buffer is full. */
struct report {
	char *buf;
	size_t len, used;
	unsigned items;
	bool failed;		/* items are failures (successes dropped) */
};

static void __attribute__((format(printf, 3, 4)))
report_add(struct report *r, bool failure, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (failure && !r->failed) {
		r->failed = true;	/* the successes so far are no news */
		r->used = r->items = 0;
	} else if (!failure && r->failed)
		return;
	if (r->items++ > 0 && r->used + 2 < r->len) {
		memcpy(r->buf + r->used, r->failed ? "; " : "\n",
		    r->failed ? 2 : 1);
		r->used += r->failed ? 2 : 1;
	}
	va_start(ap, fmt);
	n = vsnprintf(r->buf + r->used, r->len - r->used, fmt, ap);
	va_end(ap);
	if (n > 0)
		r->used += (size_t)n < r->len - r->used ? (size_t)n :
		    r->len - r->used - 1;
	r->buf[r->used] = '\0';
}

/* Opens one GPU's node (made first when missing); reports the outcome. */
static void
probe_gpu(struct report *r, const struct nvdev_gpu *g, const char *gpus,
    const char *dev_dir)
{
	char node[PATH_MAX];
	bool make_failed;

	if (g->err != 0)
		report_add(r, true, "read %s/%s/information: %s", gpus,
		    g->name, strerror(g->err));
	else if (g->minor < 0)
		report_add(r, true, "%s/%s/information: no valid Device "
		    "Minor line", gpus, g->name);
	else if (nvdev_node_path(node, sizeof(node), dev_dir, g->minor) < 0)
		report_add(r, true, "node of %s: %s", g->name,
		    strerror(errno));
	else if (nvdev_node_open(node, g->minor, &make_failed) < 0)
		report_add(r, true, "%s %s (%s): %s", make_failed ? "create" :
		    "open", node, g->name, strerror(errno));
	else
		report_add(r, false, "opened %s (%s)", node, g->name);
}

int
nvdev_probe(const char *proc_root, const char *dev_dir, char *report,
    size_t len)
{
	struct report r = { .buf = report, .len = len };
	struct nvdev_list l;
	char gpus[PATH_MAX];
	size_t i;

	if (len == 0)
		return -1;
	report[0] = '\0';
	(void)gpus_dir(gpus, sizeof(gpus), proc_root);
	if (nvdev_list_load(&l, proc_root) < 0 && errno != ENOENT) {
		report_add(&r, true, "read %s: %s", gpus, strerror(errno));
		nvdev_list_release(&l);
		return -1;
	}
	if (l.n == 0)
		report_add(&r, true, "%s", NVDEV_NO_GPU);
	for (i = 0; i < l.n; i++)
		probe_gpu(&r, &l.gpu[i], gpus, dev_dir);
	nvdev_list_release(&l);
	return r.failed ? -1 : 0;
}
