/*
 * hvsock.h - the host side of the hybrid-vsock handshake (Firecracker,
 * Cloud Hypervisor): after connecting to the VMM's Unix socket the host
 * sends "CONNECT PORT\n" and the VMM answers "OK HOSTPORT\n" when a guest
 * listener accepted, or closes the connection when none did.
 *
 * Pure functions (no I/O), fuzzed.
 */
#ifndef VFS_HVSOCK_H
#define VFS_HVSOCK_H

#include <stddef.h>

#define HVSOCK_LINE_MAX 64	/* longest accepted answer line */

/*
 * Formats "CONNECT PORT\n" into buf. Returns its length, or -1 with errno
 * ENOSPC when buf is too small.
 */
int hvsock_format_connect(unsigned port, char *buf, size_t len);

/*
 * Parses one answer line (without its newline; a trailing '\r' is
 * allowed): "OK " then the decimal host-side port of the connection (not
 * the guest port; it fits 32 bits), optionally followed by blanks.
 * Returns 0 and sets *host_port, or -1 with errno EPROTO.
 */
int hvsock_parse_ok(const char *line, size_t len, unsigned long *host_port);

#endif
