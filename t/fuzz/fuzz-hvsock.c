/*
 * fuzz-hvsock.c - the hybrid-vsock answer line (hvsock_parse_ok), read
 * from a VMM's Unix socket before the guest speaks. Property: it is
 * accepted exactly when it is "OK ", 1-10 digits of a value that fits 32
 * bits, then only blanks, with one optional trailing '\r' (a reference
 * written independently here), and the port is that value. Also: the
 * CONNECT line formats any port and round-trips through sscanf.
 */
#include <errno.h>
#include <stdint.h>

#include "fuzz.h"
#include "sentinel-poll/hvsock.h"

#define T "hvsock"

static bool
reference(const char *s, size_t len, unsigned long *port)
{
	size_t i = 3, d = 0;
	unsigned long long v = 0;

	if (len > 0 && s[len - 1] == '\r')
		len--;
	if (len < 4 || memcmp(s, "OK ", 3) != 0)
		return false;
	while (i < len && s[i] >= '0' && s[i] <= '9' && d <= 10) {
		v = v * 10 + (unsigned long long)(s[i++] - '0');
		d++;
	}
	if (d == 0 || d > 10 || v > UINT32_MAX)
		return false;
	for (; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t')
			return false;
	*port = (unsigned long)v;
	return true;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned long got = 0, want = 0;
	unsigned port = 0, back = 0;
	char buf[32];
	bool ok, ref;

	ok = hvsock_parse_ok((const char *)data, size, &got) == 0;
	ref = reference((const char *)data, size, &want);
	fuzz_require(ok == ref, T, "OK line verdict differs from reference");
	fuzz_require(!ok || got == want, T, "wrong host port");
	if (size >= sizeof(port))
		memcpy(&port, data, sizeof(port));
	fuzz_require(hvsock_format_connect(port, buf, sizeof(buf)) > 0 &&
	    sscanf(buf, "CONNECT %u\n", &back) == 1 && back == port, T,
	    "CONNECT line does not round-trip");
	fuzz_require(hvsock_format_connect(port, buf, 4) == -1 &&
	    errno == ENOSPC, T, "short buffer not refused");
	return 0;
}
