/*
 * hvsock.c - the hybrid-vsock "CONNECT"/"OK" handshake lines.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "hvsock.h"

int
hvsock_format_connect(unsigned port, char *buf, size_t len)
{
	int n;

	n = snprintf(buf, len, "CONNECT %u\n", port);
	if (n < 0 || (size_t)n >= len) {
		errno = ENOSPC;
		return -1;
	}
	return n;
}

static int
proto_error(void)
{
	errno = EPROTO;
	return -1;
}

int
hvsock_parse_ok(const char *line, size_t len, unsigned long *host_port)
{
	unsigned long v = 0;
	size_t i, digits = 0;

	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len < 4 || line[0] != 'O' || line[1] != 'K' || line[2] != ' ')
		return proto_error();
	for (i = 3; i < len && line[i] >= '0' && line[i] <= '9'; i++) {
		v = v * 10 + (unsigned long)(line[i] - '0');
		if (++digits > 10 || v > UINT32_MAX)
			return proto_error();
	}
	if (digits == 0)
		return proto_error();
	for (; i < len; i++)
		if (line[i] != ' ' && line[i] != '\t')
			return proto_error();
	*host_port = v;
	return 0;
}
