/*
 * vfaddr.h - PCI addresses (VFs and cards): the canonical form's checks,
 * and the forms the command line gives (SPEC.md 2.3).
 *
 * Files and JSON lines take only the canonical form DDDD:BB:DD.F in lower
 * case (vfaddr_valid()). An operator types what lspci prints,
 * "e3:00.4" (domain 0000 implied) or "0000:E3:00.4": --vf and --card of
 * every program accept those and turn them into the canonical form here,
 * so that no file ever holds a second spelling of one VF.
 */
#ifndef VFS_VFADDR_H
#define VFS_VFADDR_H

#include <stdbool.h>
#include <stddef.h>

#define VF_ADDR_LEN 12			/* "0000:e3:00.4" */

/* True if s fully matches ^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$ */
bool vfaddr_valid(const char *s);

/* The same shape; with any_case also upper-case hex digits (sysfs). */
bool vfaddr_pci_valid(const char *s, bool any_case);

/* The accepted forms, for error messages. */
#define VFADDR_EXPECTED "DDDD:BB:DD.F or BB:DD.F, hex"

/*
 * Parses arg (DDDD:BB:DD.F or BB:DD.F, hex digits of either case, F 0-7)
 * into out, the canonical lower-case DDDD:BB:DD.F. 0, or -1 with errno
 * EINVAL (out is then "").
 */
int vfaddr_parse_arg(const char *arg, char out[VF_ADDR_LEN + 1]);

/*
 * Writes the error for an invalid arg into why: `invalid NOUN address
 * "ARG" (expected DDDD:BB:DD.F or BB:DD.F, hex)`, noun being e.g. "VF" or
 * "card". ARG is cut at 64 bytes, and bytes outside printable ASCII are
 * shown as \xNN, so the text is always valid UTF-8 for a log line.
 */
void vfaddr_why(const char *noun, const char *arg, char *why, size_t len);

#endif
