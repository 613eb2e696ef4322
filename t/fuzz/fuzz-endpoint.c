/*
 * fuzz-endpoint.c - the endpoint parsers (endpoint_parse for dialing,
 * endpoint_parse_listen), which read the vsock field of claims and
 * targets as well as command lines. Properties: a parsed path is
 * non-empty and NUL-terminated inside sun_path; writing the parsed
 * endpoint back in its canonical form parses to the same endpoint; a
 * listen endpoint is never hvsock.
 */
#include <stdio.h>

#include "endpoint.h"
#include "fuzz.h"

#define T "endpoint"

static bool
same(const struct endpoint *a, const struct endpoint *b)
{
	return a->kind == b->kind && a->cid == b->cid && a->port == b->port &&
	    strcmp(a->path, b->path) == 0;
}

static void
check_dial(const struct endpoint *ep)
{
	struct endpoint again;
	char text[256];

	fuzz_require(ep->kind == EP_VSOCK || (ep->path[0] != '\0' &&
	    memchr(ep->path, '\0', sizeof(ep->path)) != NULL), T,
	    "bad path");
	if (ep->kind == EP_VSOCK)
		snprintf(text, sizeof(text), "vsock:%u:%u", ep->cid, ep->port);
	else if (ep->kind == EP_HVSOCK)
		snprintf(text, sizeof(text), "hvsock:%s:%u", ep->path,
		    ep->port);
	else if (ep->kind == EP_VSERIAL)
		snprintf(text, sizeof(text), "virtio-serial:%s", ep->path);
	else
		snprintf(text, sizeof(text), "unix:%s", ep->path);
	fuzz_require(endpoint_parse(text, &again) == 0 && same(ep, &again), T,
	    "canonical form parses differently");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct endpoint ep;
	char *s = fuzz_strndup(data, size);

	if (endpoint_parse(s, &ep) == 0)
		check_dial(&ep);
	if (endpoint_parse_listen(s, &ep) == 0) {
		fuzz_require(ep.kind != EP_HVSOCK, T, "hvsock listen endpoint");
		fuzz_require(ep.kind == EP_VSOCK || ep.path[0] != '\0', T,
		    "empty listen path");
	}
	free(s);
	return 0;
}
