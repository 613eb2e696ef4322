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

#define TYPES_MAX 65536	/* creatable_vgpu_types is a page at most */
#define FB_GIB_MAX (UINT_MAX / 1024)

int
sysfs_pci_path(const char *root, const char *sub, const char *vf,
    const char *rel, char *buf, size_t len)
{
	size_t rlen = strlen(root);

	while (rlen > 0 && root[rlen - 1] == '/')
		rlen--;
	return io_pathf(buf, len, "%.*s/sys/bus/pci%s%s%s%s%s%s", (int)rlen,
	    root, sub ? "/" : "", sub ? sub : "", vf ? "/" : "", vf ? vf : "",
	    rel ? "/" : "", rel ? rel : "");
}

/* Builds SYSFS_ROOT/sys/bus/pci/devices[/vf[/rel]]. */
static int
devices_path(const char *root, const char *vf, const char *rel, char *buf,
    size_t len)
{
	return sysfs_pci_path(root, "devices", vf, rel, buf, len);
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
sysfs_vgpu_fb_mb(const char *name)
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
	t->framebuffer_mb = sysfs_vgpu_fb_mb(t->name);
	return 0;
}

int
sysfs_vgpu_types_parse(const char *text, size_t len, struct vgpu_type **types,
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

/*
 * Reads a whole small file relative to dirfd into buf (NUL-terminated).
 * Opening relative to the devices directory spares the kernel a walk of
 * the long sysfs prefix for each of the hundreds of VF attributes.
 */
static int
read_at(int dirfd, const char *rel, char *buf, size_t size, size_t *len)
{
	size_t got = 0, want;
	ssize_t n = 0;
	int fd, saved;

	if ((fd = openat(dirfd, rel, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	/* A short read is the end: sysfs returns an attribute whole, and
	 * a regular file comes up short only at its end. */
	for (;;) {
		want = size - 1 - got;
		if ((n = io_read(fd, buf + got, want)) <= 0)
			break;
		got += (size_t)n;
		if ((size_t)n < want || got == size - 1)
			break;
	}
	saved = n < 0 ? errno : got == size - 1 ? EFBIG : 0;
	close(fd);
	if (saved != 0) {
		errno = saved;
		return -1;
	}
	buf[got] = '\0';
	*len = got;
	return 0;
}

/* The basename of the VF's physfn link into card; "" when it has none. */
static void
read_card(int dirfd, const char *vf, char *card, size_t len)
{
	char path[PATH_MAX], target[PATH_MAX];
	const char *base;
	ssize_t n;
	int rc;

	card[0] = '\0';
	rc = snprintf(path, sizeof(path), "%s/physfn", vf);
	if (rc < 0 || (size_t)rc >= sizeof(path))
		return;
	n = readlinkat(dirfd, path, target, sizeof(target) - 1);
	if (n <= 0)
		return;
	target[n] = '\0';
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (vfaddr_valid(base) && strlen(base) < len)
		strcpy(card, base);
}

/* Reads nvidia/current_vgpu_type of vf into *type. */
static int
read_current(int dirfd, const char *vf, char *buf, size_t size,
    unsigned *type)
{
	size_t len;
	int n;

	n = snprintf(buf, size, "%s/nvidia/current_vgpu_type", vf);
	if (n < 0 || (size_t)n >= size || read_at(dirfd, buf, buf, size,
	    &len) == -1)
		return -1;
	while (len > 0 && isspace((unsigned char)buf[len - 1]))
		len--;
	return parse_uint(buf, len, type);
}

/*
 * Fills vi for one device directory entry, using buf (size bytes) for
 * the attribute text. 1 if it is a VF (nvidia/creatable_vgpu_types
 * exists), 0 if not a VF, -1 if a VF whose files could not be read.
 */
static int
read_vf(int dirfd, const char *name, struct vf_info *vi, char *buf,
    size_t size)
{
	size_t len;
	int n;

	n = snprintf(buf, size, "%s/nvidia/creatable_vgpu_types", name);
	if (n < 0 || (size_t)n >= size)
		return -1;
	if (read_at(dirfd, buf, buf, size, &len) == -1)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
	if (!vfaddr_valid(name) || strlen(name) >= sizeof(vi->addr))
		return -1;
	memset(vi, 0, sizeof(*vi));
	strcpy(vi->addr, name);
	if (sysfs_vgpu_types_parse(buf, len, &vi->types, &vi->ntypes) == -1)
		return -1;
	if (read_current(dirfd, name, buf, size, &vi->current_type) == -1) {
		free(vi->types);
		vi->types = NULL;
		return -1;
	}
	read_card(dirfd, name, vi->card, sizeof(vi->card));
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
scan_devices(DIR *d, struct vf_inventory *inv, size_t *skipped)
{
	struct dirent *de;
	struct vf_info *vi;
	size_t cap = 0;
	char *buf;
	int rc;

	if ((buf = malloc(TYPES_MAX)) == NULL)
		return -1;
	while ((errno = 0, de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if ((vi = inventory_grow(inv, &cap)) == NULL)
			break;
		rc = read_vf(dirfd(d), de->d_name, vi, buf, TYPES_MAX);
		if (rc == 1)
			inv->n++;
		else if (rc == -1 && skipped != NULL)
			(*skipped)++;
	}
	rc = errno != 0 ? -1 : 0;
	free(buf);
	return rc;
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
	rc = scan_devices(d, inv, skipped);
	saved = errno;
	closedir(d);
	if (rc == -1) {
		sysfs_inventory_release(inv);
		errno = saved;
		return -1;
	}
	if (inv->n > 1)
		qsort(inv->v, inv->n, sizeof(*inv->v), vf_cmp);
	return 0;
}

void
sysfs_inventory_release(struct vf_inventory *inv)
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
	int n;

	if (devices_path(sysfs_root, NULL, NULL, path, sizeof(path)) == -1 ||
	    (d = opendir(path)) == NULL)
		return false;
	while (!found && (de = readdir(d)) != NULL) {
		n = snprintf(path, sizeof(path), "%s/nvidia/"
		    "creatable_vgpu_types", de->d_name);
		if (de->d_name[0] == '.' || n < 0 || (size_t)n >= sizeof(path))
			continue;
		found = faccessat(dirfd(d), path, F_OK, 0) == 0;
	}
	closedir(d);
	return found;
}

/* Writes "ID\n" with one write(2): sysfs takes an attribute per write. */
static int
write_type(const char *path, unsigned type_id)
{
	char buf[16];
	int fd, n;

	n = snprintf(buf, sizeof(buf), "%u\n", type_id);
	if (n < 0 || (size_t)n >= sizeof(buf)) {
		errno = EINVAL;
		return -1;
	}
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
	if (fd == -1)
		return -1;
	if (io_write_all(fd, buf, (size_t)n) == -1) {
		io_close_keep_errno(fd);
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

int
sysfs_vgpu_type(const char *sysfs_root, const char *vf, unsigned *type_id)
{
	char path[PATH_MAX], buf[32];

	if (devices_path(sysfs_root, vf, "nvidia/current_vgpu_type", path,
	    sizeof(path)) == -1 || io_read_attr(path, buf, sizeof(buf)) == -1)
		return -1;
	if (parse_uint(buf, strlen(buf), type_id) == -1) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

int
sysfs_vf_list_add(struct vf_list *l, const char *vf)
{
	char (*v)[VF_ADDR_LEN + 1];
	size_t len = strnlen(vf, VF_ADDR_LEN);

	v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (v == NULL)
		return -1;
	l->v = v;
	memcpy(l->v[l->n], vf, len);
	l->v[l->n++][len] = '\0';
	return 0;
}

static int
addr_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* True if SYSFS/.../devices/name has a physfn link to card. */
static bool
is_vf_of(const char *sysfs_root, const char *name, const char *card)
{
	char path[PATH_MAX], link[PATH_MAX];
	const char *base;
	ssize_t n;

	if (!vfaddr_valid(name) ||
	    sysfs_vf_path(sysfs_root, name, "physfn", path, sizeof(path)) < 0)
		return false;
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return false;
	link[n] = '\0';
	base = strrchr(link, '/');
	return strcmp(base ? base + 1 : link, card) == 0;
}

int
sysfs_card_vfs(const char *sysfs_root, const char *card, struct vf_list *l)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if (sysfs_vf_path(sysfs_root, NULL, NULL, dir, sizeof(dir)) < 0)
		return -1;
	d = opendir(dir);
	if (d == NULL)
		return errno == ENOENT ? 0 : -1;
	while (rc == 0 && (de = readdir(d)) != NULL)
		if (is_vf_of(sysfs_root, de->d_name, card))
			rc = sysfs_vf_list_add(l, de->d_name);
	closedir(d);
	if (rc == 0 && l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), addr_cmp);
	return rc;
}

bool
sysfs_vf_present(const char *sysfs_root, const char *vf)
{
	char path[PATH_MAX];
	struct stat st;

	if (!vfaddr_valid(vf))
		return false;
	if (sysfs_vf_path(sysfs_root, vf, "physfn", path, sizeof(path)) == 0 &&
	    lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
		return true;
	return sysfs_vf_path(sysfs_root, vf, "nvidia/creatable_vgpu_types",
	    path, sizeof(path)) == 0 && access(path, F_OK) == 0;
}
