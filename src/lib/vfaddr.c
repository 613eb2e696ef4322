/*
 * vfaddr.c - PCI addresses: the canonical form's checks, and command-line
 * addresses (the short form lspci prints, upper-case hex) turned into
 * that one form (SPEC.md 2.3).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "vfaddr.h"

#define SHORT_LEN 7			/* "e3:00.4" */
#define ARG_SHOWN 64			/* bytes of a bad argument shown */

static bool
hexdigits(const char *s, size_t n, bool any_case)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f') ||
		    (any_case && s[i] >= 'A' && s[i] <= 'F')))
			return false;
	return true;
}

bool
vfaddr_pci_valid(const char *s, bool any_case)
{
	if (s == NULL || strlen(s) != VF_ADDR_LEN)
		return false;
	return hexdigits(s, 4, any_case) && s[4] == ':' &&
	    hexdigits(s + 5, 2, any_case) && s[7] == ':' &&
	    hexdigits(s + 8, 2, any_case) && s[10] == '.' &&
	    s[11] >= '0' && s[11] <= '7';
}

bool
vfaddr_valid(const char *s)
{
	return vfaddr_pci_valid(s, false);
}

static char
lower(char ch)
{
	return ch >= 'A' && ch <= 'F' ? (char)(ch - 'A' + 'a') : ch;
}

int
vfaddr_parse_arg(const char *arg, char out[VF_ADDR_LEN + 1])
{
	size_t len = arg != NULL ? strnlen(arg, VF_ADDR_LEN + 1) : 0;
	size_t off, i;

	out[0] = '\0';
	if (len != VF_ADDR_LEN && len != SHORT_LEN) {
		errno = EINVAL;
		return -1;
	}
	off = len == SHORT_LEN ? VF_ADDR_LEN - SHORT_LEN : 0;
	memcpy(out, "0000:", off);
	for (i = 0; i < len; i++)
		out[off + i] = lower(arg[i]);
	out[VF_ADDR_LEN] = '\0';
	if (vfaddr_valid(out))
		return 0;
	out[0] = '\0';
	errno = EINVAL;
	return -1;
}

/* arg's first ARG_SHOWN bytes, printable ASCII kept, the rest as \xNN. */
static void
shown(const char *arg, char *buf, size_t len)
{
	size_t i, n = 0;
	unsigned char ch;

	buf[0] = '\0';
	for (i = 0; arg[i] != '\0' && i < ARG_SHOWN && n + 5 <= len; i++) {
		ch = (unsigned char)arg[i];
		if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
			buf[n++] = (char)ch;
		else
			n += (size_t)snprintf(buf + n, len - n, "\\x%02x", ch);
	}
	buf[n] = '\0';
}

void
vfaddr_why(const char *noun, const char *arg, char *why, size_t len)
{
	char buf[ARG_SHOWN * 4 + 1];

	shown(arg != NULL ? arg : "", buf, sizeof(buf));
	snprintf(why, len, "invalid %s address \"%s\"%s (expected "
	    VFADDR_EXPECTED ")", noun, buf, arg != NULL &&
	    strlen(arg) > ARG_SHOWN ? "..." : "");
}
