/*
 * fuzz-vgpu-types.c - the parser of nvidia/creatable_vgpu_types
 * (sysfs_vgpu_types_parse) and the profile framebuffer rule
 * (sysfs_vgpu_fb_mb). A VF's sysfs file is written by the vendor
 * driver, but vfsentinel must not trust its shape. Properties: every
 * type has a non-zero id, a non-empty trimmed name without NUL that fits
 * VGPU_NAME_MAX, and the framebuffer of its name; no more types than
 * lines; the framebuffer of any name is a whole number of GiB.
 */
#include <ctype.h>

#include "fuzz.h"
#include "sysfs.h"

#define T "vgpu-types"

static size_t
count_lines(const uint8_t *data, size_t size)
{
	size_t i, n = size > 0;

	for (i = 0; i < size; i++)
		n += data[i] == '\n' && i + 1 < size;
	return n;
}

static void
check_type(const struct vgpu_type *t)
{
	size_t len = strnlen(t->name, sizeof(t->name));

	fuzz_require(t->id != 0, T, "type id 0 accepted");
	fuzz_require(len > 0 && len < sizeof(t->name), T, "bad name length");
	fuzz_require(!isspace((unsigned char)t->name[0]) &&
	    !isspace((unsigned char)t->name[len - 1]), T, "name not trimmed");
	fuzz_require(t->framebuffer_mb == sysfs_vgpu_fb_mb(t->name), T,
	    "framebuffer differs from the name rule");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vgpu_type *types = NULL;
	size_t i, n = 0;
	char *name;

	if (sysfs_vgpu_types_parse((const char *)data, size, &types, &n) < 0)
		abort();
	fuzz_require(n <= count_lines(data, size), T, "more types than lines");
	for (i = 0; i < n; i++)
		check_type(&types[i]);
	free(types);
	name = fuzz_strndup(data, size);
	fuzz_require(sysfs_vgpu_fb_mb(name) % 1024 == 0, T,
	    "framebuffer not whole GiB");
	free(name);
	return 0;
}
