/*
 * fuzz-domain.c - libvirt-hook's reader of the domain XML libvirt writes
 * to a hook's stdin (domain_parse, src/libvirt-hook/domain.c). The XML
 * carries what domain authors chose, so every value taken from it must
 * come out checked. Properties, for every input the parser accepts:
 * - the UUID is empty or 8-4-4-4-12 lower-case hex digits;
 * - the name is valid UTF-8 without control characters;
 * - every <hostdev> VF and the metadata's VF are canonical addresses;
 * - the channel socket and the console log are empty or absolute paths
 *   without control characters; the CID is a guest's (3 and up);
 * - parsing it again gives the same result.
 * A rejected input must come with a reason, and leave nothing to free.
 */
#include <ctype.h>

#include <libxml/parser.h>

#include "fuzz.h"
#include "utf8.h"
#include "libvirt-hook/libvirt-hook.h"

#define T "domain"

static bool
uuid_ok(const char *u)
{
	size_t i;

	if (u[0] == '\0')
		return true;
	if (strlen(u) != UUID_LEN)
		return false;
	for (i = 0; i < UUID_LEN; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (u[i] != '-')
				return false;
		} else if (!isxdigit((unsigned char)u[i]) ||
		    isupper((unsigned char)u[i]))
			return false;
	}
	return true;
}

static bool
path_ok(const char *p, size_t max)
{
	return p[0] == '\0' || (p[0] == '/' && utf8_printable(p, max));
}

static void
check_shape(const struct domain *d)
{
	size_t i;

	fuzz_require(uuid_ok(d->uuid), T, "a UUID of the wrong shape");
	fuzz_require(utf8_printable(d->name, sizeof(d->name)), T,
	    "a name that is not clean text");
	for (i = 0; i < d->hostdevs.n; i++)
		fuzz_require(vfaddr_valid(d->hostdevs.v[i]), T,
		    "a hostdev VF that is not a canonical address");
	fuzz_require(d->meta_vf[0] == '\0' || vfaddr_valid(d->meta_vf), T,
	    "a metadata VF that is not a canonical address");
	fuzz_require(utf8_printable(d->profile, sizeof(d->profile)), T,
	    "a profile that is not clean text");
	fuzz_require(path_ok(d->channel, sizeof(d->channel)), T,
	    "a channel path that is not absolute clean text");
	fuzz_require(path_ok(d->app_log, sizeof(d->app_log)), T,
	    "a console path that is not absolute clean text");
	fuzz_require(!d->has_cid || (d->cid >= 3 && d->cid < UINT_MAX), T,
	    "a CID that is not a guest's");
	fuzz_require(d->id >= -1, T, "a negative domain id");
}

static void
check_again(const uint8_t *data, size_t size, const struct domain *d)
{
	struct domain again;
	char why[512];
	size_t i;

	fuzz_require(domain_parse((const char *)data, size, &again, why,
	    sizeof(why)) == 0, T, "accepted once, refused the second time");
	fuzz_require(strcmp(d->uuid, again.uuid) == 0 &&
	    strcmp(d->name, again.name) == 0 && d->id == again.id &&
	    strcmp(d->meta_vf, again.meta_vf) == 0 &&
	    strcmp(d->profile, again.profile) == 0 &&
	    d->has_cid == again.has_cid && d->cid == again.cid &&
	    strcmp(d->channel, again.channel) == 0 &&
	    strcmp(d->app_log, again.app_log) == 0 &&
	    d->hostdevs.n == again.hostdevs.n, T, "a second parse differs");
	for (i = 0; i < d->hostdevs.n; i++)
		fuzz_require(strcmp(d->hostdevs.v[i], again.hostdevs.v[i]) ==
		    0, T, "a second parse differs in a hostdev");
	domain_release(&again);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct domain d;
	char why[512];

	why[0] = '\0';
	if (domain_parse((const char *)data, size, &d, why, sizeof(why)) < 0) {
		fuzz_require(why[0] != '\0', T, "refused without a reason");
		domain_release(&d);
		return 0;
	}
	check_shape(&d);
	check_again(data, size, &d);
	domain_release(&d);
	return 0;
}
