/*
 * pci.c - libpci over SYSFS_ROOT/sys/bus/pci (see pci.h).
 *
 * libpci reports every problem through pacc->error, whose default prints
 * "pcilib: ..." and calls exit(1); it has no error returns. Its sysfs back
 * end treats as fatal: a missing devices/ directory, an entry there that
 * is not named DDDD:BB:DD.F, and (for PCI_FILL_IDENT) a vendor or device
 * file it cannot read. So the tree is checked for exactly those first,
 * and the handler installed here only longjmps back for the race where
 * the tree changes between the check and the scan. Such a jump leaks the
 * scan's DIR and half-built device (libpci cannot release them), which is
 * why the check comes first rather than relying on the jump.
 *
 * The jump buffer is static: these functions are not thread-safe.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include <pci/pci.h>

#include "io.h"
#include "pci.h"
#include "sysfs.h"
#include "vfaddr.h"

static jmp_buf pci_jump;
static char pci_error_text[256];

static void pci_on_error(char *msg, ...)
    __attribute__((noreturn, format(printf, 1, 2)));
static void pci_on_warning(char *msg, ...)
    __attribute__((format(printf, 1, 2)));

static void
pci_on_error(char *msg, ...)
{
	va_list ap;

	va_start(ap, msg);
	vsnprintf(pci_error_text, sizeof(pci_error_text), msg, ap);
	va_end(ap);
	longjmp(pci_jump, 1);
}

/* libpci's warnings (a missing pci.ids, say) would go to stderr, which
 * carries JSON logs only; the callers report what matters themselves. */
static void
pci_on_warning(char *msg, ...)
{
	(void)msg;
}

static void
set_why(char *why, size_t whylen, const char *a, const char *b)
{
	if (why != NULL && whylen > 0)
		(void)snprintf(why, whylen, "%s%s", a, b);
}

/* SYSFS_ROOT/sys/bus/pci, without a doubled slash for root "/". */
static int
pci_dir(const char *root, char *buf, size_t len)
{
	return sysfs_pci_path(root, NULL, NULL, NULL, buf, len);
}

/* DDDD:BB:DD.F, the only names the kernel gives sysfs PCI entries. */
static bool
is_bdf(const char *s)
{
	return vfaddr_pci_valid(s, true);
}

/* The vendor and device files libpci will read for PCI_FILL_IDENT. */
static int
check_ident(const char *devices, const char *name, char *why, size_t whylen)
{
	static const char *const files[] = { "vendor", "device" };
	char path[PATH_MAX], val[64];
	size_t i;
	int n;

	for (i = 0; i < 2; i++) {
		n = snprintf(path, sizeof(path), "%s/%s/%s", devices, name,
		    files[i]);
		if (n < 0 || (size_t)n >= sizeof(path)) {
			set_why(why, whylen, "path too long: ", name);
			return -1;
		}
		if (io_read_attr(path, val, sizeof(val)) < 0) {
			(void)snprintf(val, sizeof(val), ": %s",
			    strerror(errno));
			set_why(why, whylen, path, val);
			return -1;
		}
	}
	return 0;
}

/*
 * Checks DIR/devices the way libpci's sysfs scan will read it. Returns 0
 * when the scan is safe, 1 when there is no devices/ directory (no PCI
 * bus), -1 with a reason.
 */
static int
check_tree(const char *dir, char *why, size_t whylen)
{
	char devices[PATH_MAX + 16];
	struct dirent *e;
	DIR *d;
	int rc = 0;

	/* Fits: devices has 16 bytes more than dir. */
	(void)snprintf(devices, sizeof(devices), "%s/devices", dir);
	d = opendir(devices);
	if (d == NULL) {
		set_why(why, whylen, "cannot open ", devices);
		return errno == ENOENT ? 1 : -1;
	}
	while (rc == 0 && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;	/* libpci skips these too */
		if (!is_bdf(e->d_name)) {
			set_why(why, whylen, "not a PCI function address: ",
			    e->d_name);
			rc = -1;
		} else
			rc = check_ident(devices, e->d_name, why, whylen);
	}
	closedir(d);
	return rc;
}

static struct pci_access *
pacc_new(char *dir)
{
	struct pci_access *pacc;

	pacc = pci_alloc();
	if (pacc == NULL)
		return NULL;
	pacc->error = pci_on_error;
	pacc->warning = pci_on_warning;
	pacc->debug = pci_on_warning;
	pacc->method = PCI_ACCESS_SYS_BUS_PCI;
	pci_set_param(pacc, "sysfs.path", dir);
	return pacc;
}

/* The scan proper; only called on a checked tree. */
static int
scan_nvidia(char *dir, char *why, size_t whylen)
{
	static struct pci_access *volatile pacc;
	struct pci_dev *dev;
	volatile int found = 0;		/* set between setjmp and longjmp */

	pacc = pacc_new(dir);
	if (pacc == NULL) {
		set_why(why, whylen, "pci_alloc failed", "");
		return -1;
	}
	if (setjmp(pci_jump) != 0) {
		set_why(why, whylen, "libpci: ", pci_error_text);
		pci_cleanup(pacc);
		return -1;
	}
	pci_init(pacc);
	pci_scan_bus(pacc);
	for (dev = pacc->devices; dev != NULL; dev = dev->next) {
		pci_fill_info(dev, PCI_FILL_IDENT);
		if (dev->vendor_id == PCI_VENDOR_NVIDIA)
			found = 1;
	}
	pci_cleanup(pacc);
	return found;
}

int
pci_has_nvidia(const char *sysfs_root, char *why, size_t whylen)
{
	char dir[PATH_MAX];
	int rc;

	if (pci_dir(sysfs_root, dir, sizeof(dir)) < 0) {
		set_why(why, whylen, "path too long: ", sysfs_root);
		return -1;
	}
	rc = check_tree(dir, why, whylen);
	if (rc == 1)
		return 0;
	if (rc < 0)
		return -1;
	return scan_nvidia(dir, why, whylen);
}

/* Length of the line at p, newline excluded. */
static size_t
line_len(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));

	return (size_t)((nl != NULL ? nl : end) - p);
}

/*
 * Finds the device name of vendor:device in libpci's own ID database
 * (the pci.ids file pacc->id_file_name names), the name lspci -mm prints
 * in its fourth field. pci_lookup_name() first parses all of the file's
 * ~30,000 entries into a hash (about 7 ms, most of a resources-report
 * run); scanning the same file for the two lines takes a fraction of
 * that. libpci answers from pci.ids before it asks the udev hwdb, so a
 * name found here is libpci's too. 0; 1 when the file lacks the device
 * (libpci would then ask the hwdb); -1 when it cannot be read here (a
 * compressed one): the caller asks libpci for either.
 */
static int
ids_scan(const char *file, unsigned vendor, unsigned device, char *buf,
    size_t len)
{
	char key[16], plain[PATH_MAX], *text, *end, *v, *p, *d = NULL;
	size_t n, vlen, klen;
	int rc = -1;

	n = strlen(file);
	if (n > 3 && strcmp(file + n - 3, ".gz") == 0) {
		/* libpci reads NAME.gz, or NAME when that is missing (as on
		 * Debian); a compressed database is left to libpci. */
		if (access(file, F_OK) == 0 || n - 3 >= sizeof(plain))
			return -1;
		(void)snprintf(plain, sizeof(plain), "%.*s", (int)(n - 3),
		    file);
		file = plain;
	}
	text = io_slurp(file, 64u << 20, &n);
	if (text == NULL)
		return -1;
	end = text + n;
	klen = (size_t)snprintf(key, sizeof(key), "\n%04x  ", vendor);
	v = memmem(text, n, key, klen);
	rc = 1;
	if (v == NULL)
		goto out;
	v += klen;
	vlen = line_len(v, end);
	klen = (size_t)snprintf(key, sizeof(key), "\n\t%04x  ", device);
	/* The vendor's block: lines that start with a tab or '#'. */
	p = v + vlen;
	while (p < end - 1 && (p[1] == '\t' || p[1] == '#')) {
		if ((size_t)(end - p) > klen && memcmp(p, key, klen) == 0) {
			d = p + klen;
			break;
		}
		p += 1 + line_len(p + 1, end);
	}
	if (d != NULL)
		rc = snprintf(buf, len, "%.*s", (int)line_len(d, end), d) > 0 ?
		    0 : -1;
out:
	free(text);
	return rc;
}

/* Looks up the name of one checked device without scanning the bus. */
static int
lookup_name(char *dir, const char *addr, char *buf, size_t len)
{
	static struct pci_access *volatile pacc;
	struct pci_dev *dev;
	unsigned dom, bus, slot, func;
	char *name;
	int rc;

	if (sscanf(addr, "%x:%x:%x.%u", &dom, &bus, &slot, &func) != 4)
		return -1;
	pacc = pacc_new(dir);
	if (pacc == NULL)
		return -1;
	if (setjmp(pci_jump) != 0) {
		pci_cleanup(pacc);
		errno = EIO;
		return -1;
	}
	pci_init(pacc);
	dev = pci_get_dev(pacc, (int)dom, (int)bus, (int)slot, (int)func);
	pci_fill_info(dev, PCI_FILL_IDENT);
	rc = ids_scan(pacc->id_file_name, dev->vendor_id, dev->device_id,
	    buf, len);
	if (rc == 0) {
		pci_free_dev(dev);
		pci_cleanup(pacc);
		return 0;
	}
	/* pci.ids lacks it: libpci's next source is the udev hwdb, so it
	 * is spared parsing all of pci.ids again (7 ms) for nothing. */
	if (rc == 1)
		pci_set_name_list_path(pacc, (char *)"/dev/null", 0);
	/* As lspci -mm: pci.ids, then the udev hwdb where libudev finds
	 * one (a newer list on every systemd host), else "Device 26b9". */
	name = pci_lookup_name(pacc, buf, (int)len, PCI_LOOKUP_DEVICE,
	    dev->vendor_id, dev->device_id);
	pci_free_dev(dev);
	pci_cleanup(pacc);
	return name != NULL ? 0 : -1;
}

int
pci_device_name(const char *sysfs_root, const char *addr, char *buf,
    size_t len)
{
	char dir[PATH_MAX], devices[PATH_MAX + 8];

	if (!is_bdf(addr) || len == 0 || len > INT_MAX) {
		errno = EINVAL;
		return -1;
	}
	if (pci_dir(sysfs_root, dir, sizeof(dir)) < 0)
		return -1;
	(void)snprintf(devices, sizeof(devices), "%s/devices", dir);
	if (check_ident(devices, addr, NULL, 0) < 0)
		return -1;
	return lookup_name(dir, addr, buf, len);
}
