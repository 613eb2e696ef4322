/*
 * sysfs.c - the NVIDIA vendor-VFIO VF inventory (SPEC.md 4.3).
 *
 * On hosts with the vendor-specific VFIO framework (Ada and newer, vGPU
 * 17+) every VF directory under /sys/bus/pci/devices has an nvidia/
 * subdirectory: creatable_vgpu_types lists the profiles the VF can take
 * right now (the list shrinks as the card fills), and current_vgpu_type
 * holds the assigned type id, "0" when none. The card is the target of
 * the VF's physfn link. Nothing here prints or exits.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "sysfs.h"

#define TYPES_MAX (256 * 1024)	/* creatable_vgpu_types is a page at most */
#define FB_GIB_MAX (UINT_MAX / 1024)

/* Builds SYSFS_ROOT/sys/bus/pci/devices[/vf[/rel]] without doubling '/'. */
static int
devices_path(const char *root, const char *vf, const char *rel, char *buf,
    size_t len)
{
	size_t rlen = strlen(root);
	int n;

	while (rlen > 0 && root[rlen - 1] == '/')
		rlen--;
	n = snprintf(buf, len, "%.*s/sys/bus/pci/devices%s%s%s%s", (int)rlen,
	    root, vf ? "/" : "", vf ? vf : "", rel ? "/" : "",
	    rel ? rel : "");
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int
sysfs_vf_path(const char *sysfs_root, const char *vf, const char *rel,
    char *buf, size_t len)
{
	return devices_path(sysfs_root, vf, rel, buf, len);
}

/* Parses a whole decimal unsigned number (no sign, no blanks). */
static int
parse_uint(const char *s, size_t len, unsigned *out)
{
	unsigned long v = 0;
	size_t i;

	if (len == 0 || len > 9)
		return -1;
	for (i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	*out = (unsigned)v;
	return 0;
}

unsigned
vgpu_profile_fb_mb(const char *name)
{
	size_t len = strlen(name), end, start;
	unsigned gib;

	/* "NVIDIA L40S-12Q", "NVIDIA A100-4-20C": digits after a '-' and
	 * before the final series letter. */
	if (len < 3 || !isalpha((unsigned char)name[len - 1]))
		return 0;
	end = len - 1;
	start = end;
	while (start > 0 && isdigit((unsigned char)name[start - 1]))
		start--;
	if (start == end || start == 0 || name[start - 1] != '-')
		return 0;
	if (parse_uint(name + start, end - start, &gib) == -1 ||
	    gib > FB_GIB_MAX)
		return 0;
	return gib * 1024;
}

static const char *
trim(const char *s, const char *e, size_t *len)
{
	while (s < e && isspace((unsigned char)*s))
		s++;
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	*len = (size_t)(e - s);
	return s;
}

/* Parses one "ID : NAME" line; -1 for the header or a malformed line. */
static int
parse_type_line(const char *s, const char *e, struct vgpu_type *t)
{
	const char *colon = memchr(s, ':', (size_t)(e - s));
	const char *p;
	size_t len;

	if (colon == NULL)
		return -1;
	p = trim(s, colon, &len);
	if (parse_uint(p, len, &t->id) == -1 || t->id == 0)
		return -1;
	p = trim(colon + 1, e, &len);
	if (len == 0 || len >= sizeof(t->name) || memchr(p, '\0', len))
		return -1;
	memcpy(t->name, p, len);
	t->name[len] = '\0';
	t->framebuffer_mb = vgpu_profile_fb_mb(t->name);
	return 0;
}

int
vgpu_types_parse(const char *text, size_t len, struct vgpu_type **types,
    size_t *n)
{
	const char *s = text, *end = text + len, *nl;
	struct vgpu_type *v = NULL, *nv, t;
	size_t count = 0;

	while (s < end) {
		nl = memchr(s, '\n', (size_t)(end - s));
		if (nl == NULL)
			nl = end;
		if (parse_type_line(s, nl, &t) == 0) {
			nv = reallocarray(v, count + 1, sizeof(*v));
			if (nv == NULL) {
				free(v);
				return -1;
			}
			v = nv;
			v[count++] = t;
		}
		s = nl + 1;
	}
	*types = v;
	*n = count;
	return 0;
}

/* The basename of the VF's physfn link into card; "" when it has none. */
static void
read_card(const char *root, const char *vf, char *card, size_t len)
{
	char path[PATH_MAX], target[PATH_MAX];
	const char *base;
	ssize_t n;

	card[0] = '\0';
	if (devices_path(root, vf, "physfn", path, sizeof(path)) == -1)
		return;
	n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return;
	target[n] = '\0';
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (vf_addr_valid(base) && strlen(base) < len)
		strcpy(card, base);
}

/*
 * Fills vi for one device directory entry. 1 if it is a VF (nvidia/
 * creatable_vgpu_types exists), 0 if not a VF, -1 if a VF whose files
 * could not be read.
 */
static int
read_vf(const char *root, const char *name, struct vf_info *vi)
{
	char path[PATH_MAX], cur[32];
	char *text;
	size_t len;
	int rc;

	if (devices_path(root, name, "nvidia/creatable_vgpu_types", path,
	    sizeof(path)) == -1)
		return -1;
	if (access(path, F_OK) == -1)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
	if (!vf_addr_valid(name) || strlen(name) >= sizeof(vi->addr))
		return -1;
	memset(vi, 0, sizeof(*vi));
	strcpy(vi->addr, name);
	if ((text = io_slurp(path, TYPES_MAX, &len)) == NULL)
		return -1;
	rc = vgpu_types_parse(text, len, &vi->types, &vi->ntypes);
	free(text);
	if (rc == -1)
		return -1;
	if (devices_path(root, name, "nvidia/current_vgpu_type", path,
	    sizeof(path)) == -1 || io_read_attr(path, cur, sizeof(cur)) == -1 ||
	    parse_uint(cur, strlen(cur), &vi->current_type) == -1) {
		free(vi->types);
		vi->types = NULL;
		return -1;
	}
	read_card(root, name, vi->card, sizeof(vi->card));
	return 1;
}

static int
vf_cmp(const void *a, const void *b)
{
	return strcmp(((const struct vf_info *)a)->addr,
	    ((const struct vf_info *)b)->addr);
}

/* Appends a slot to inv; NULL/ENOMEM. */
static struct vf_info *
inventory_grow(struct vf_inventory *inv, size_t *cap)
{
	struct vf_info *nv;

	if (inv->n == *cap) {
		nv = reallocarray(inv->v, *cap ? *cap * 2 : 16, sizeof(*nv));
		if (nv == NULL)
			return NULL;
		inv->v = nv;
		*cap = *cap ? *cap * 2 : 16;
	}
	return &inv->v[inv->n];
}

static int
scan_devices(const char *root, DIR *d, struct vf_inventory *inv,
    size_t *skipped)
{
	struct dirent *de;
	struct vf_info *vi;
	size_t cap = 0;
	int rc;

	while ((errno = 0, de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if ((vi = inventory_grow(inv, &cap)) == NULL)
			return -1;
		rc = read_vf(root, de->d_name, vi);
		if (rc == 1)
			inv->n++;
		else if (rc == -1 && skipped != NULL)
			(*skipped)++;
	}
	return errno != 0 ? -1 : 0;
}

int
sysfs_inventory(const char *sysfs_root, struct vf_inventory *inv,
    size_t *skipped)
{
	char path[PATH_MAX];
	DIR *d;
	int rc, saved;

	inv->v = NULL;
	inv->n = 0;
	if (skipped != NULL)
		*skipped = 0;
	if (devices_path(sysfs_root, NULL, NULL, path, sizeof(path)) == -1)
		return -1;
	if ((d = opendir(path)) == NULL)
		return errno == ENOENT ? 0 : -1;
	rc = scan_devices(sysfs_root, d, inv, skipped);
	saved = errno;
	closedir(d);
	if (rc == -1) {
		sysfs_inventory_free(inv);
		errno = saved;
		return -1;
	}
	if (inv->n > 1)
		qsort(inv->v, inv->n, sizeof(*inv->v), vf_cmp);
	return 0;
}

void
sysfs_inventory_free(struct vf_inventory *inv)
{
	size_t i;

	for (i = 0; i < inv->n; i++)
		free(inv->v[i].types);
	free(inv->v);
	inv->v = NULL;
	inv->n = 0;
}

bool
sysfs_has_vgpu_framework(const char *sysfs_root)
{
	char path[PATH_MAX];
	struct dirent *de;
	bool found = false;
	DIR *d;

	if (devices_path(sysfs_root, NULL, NULL, path, sizeof(path)) == -1 ||
	    (d = opendir(path)) == NULL)
		return false;
	while (!found && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' ||
		    devices_path(sysfs_root, de->d_name,
		    "nvidia/creatable_vgpu_types", path, sizeof(path)) == -1)
			continue;
		found = access(path, F_OK) == 0;
	}
	closedir(d);
	return found;
}

/* Writes "ID\n" with one write(2): sysfs takes an attribute per write. */
static int
write_type(const char *path, unsigned type_id)
{
	char buf[16];
	int fd, n, saved;

	n = snprintf(buf, sizeof(buf), "%u\n", type_id);
	if (n < 0 || (size_t)n >= sizeof(buf)) {
		errno = EINVAL;
		return -1;
	}
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
	if (fd == -1)
		return -1;
	if (io_write_all(fd, buf, (size_t)n) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return close(fd);
}

int
sysfs_set_vgpu_type(const char *sysfs_root, const char *vf,
    unsigned type_id)
{
	char path[PATH_MAX], back[32];
	unsigned got;

	if (devices_path(sysfs_root, vf, "nvidia/current_vgpu_type", path,
	    sizeof(path)) == -1)
		return -1;
	if (write_type(path, type_id) == -1)
		return -1;
	if (io_read_attr(path, back, sizeof(back)) == -1)
		return -1;
	if (parse_uint(back, strlen(back), &got) == -1 || got != type_id) {
		errno = EIO;
		return -1;
	}
	return 0;
}
