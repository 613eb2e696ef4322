/*
 * drain.c - unit tests (TAP) for the drain file (src/lib/drain.c): its
 * layout, round trip, the loader's refusals, the sorted edits and the
 * placement query.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drain.h"
#include "tap.h"

static const char example[] =
    "{\n"
    "  \"version\": 1,\n"
    "  \"drains\": [\n"
    "    {\n"
    "      \"vf_address\": \"0000:e3:00.4\",\n"
    "      \"drained_at\": \"2026-12-02T13:00:00.5Z\",\n"
    "      \"reason\": \"SR-IOV cycle\"\n"
    "    },\n"
    "    {\n"
    "      \"vf_address\": \"0000:e3:00.5\",\n"
    "      \"drained_at\": \"2026-12-02T13:00:00Z\",\n"
    "      \"reason\": \"\"\n"
    "    }\n"
    "  ]\n"
    "}";

/* Parses text; 0 or -1 with why. */
static int
parse(const char *text, struct drains *d, char *why, size_t len)
{
	return drains_parse(text, strlen(text), d, why, len);
}

static void
test_round_trip(void)
{
	struct drains d;
	char why[256], *out;
	size_t len = 0;

	ok(parse(example, &d, why, sizeof(why)) == 0 && d.n == 2,
	    "the example loads");
	out = drains_dump(&d, &len);
	is_str(out, example, "and is written back byte for byte");
	ok(drains_vf_drained(&d, "0000:e3:00.5") &&
	    !drains_vf_drained(&d, "0000:e3:00.6") &&
	    !drains_vf_drained(NULL, "0000:e3:00.5"),
	    "drains_vf_drained: listed, not listed, no drains");
	free(out);
	drains_release(&d);
}

static void
refused(const char *text, const char *want)
{
	struct drains d;
	char why[256] = "";

	ok(parse(text, &d, why, sizeof(why)) == -1 &&
	    strstr(why, want) != NULL, "refused: %s", want);
	if (strstr(why, want) == NULL)
		printf("#   why: %s\n", why);
}

static void
test_refusals(void)
{
	refused("{\"version\":2,\"drains\":[]}", "unsupported version 2");
	refused("{\"version\":1,\"drains\":[{\"vf_address\":\"e3:00.4\","
	    "\"drained_at\":\"2026-12-02T13:00:00Z\"}]}",
	    "drain 0: invalid VF address \"e3:00.4\"");
	refused("{\"version\":1,\"drains\":[{\"vf_address\":\"0000:e3:00.4\""
	    "}]}", "drain 0: missing drained_at");
	refused("{\"version\":1,\"drains\":[{\"vf_address\":\"0000:e3:00.4\","
	    "\"drained_at\":\"yesterday\"}]}", "unmarshal VF drains");
	refused("{\"version\":1,\"drains\":[{\"vf_address\":\"0000:e3:00.4\","
	    "\"drained_at\":\"2026-12-02T13:00:00Z\"},{\"vf_address\":"
	    "\"0000:e3:00.4\",\"drained_at\":\"2026-12-02T13:00:00Z\"}]}",
	    "drain 1: duplicate VF address \"0000:e3:00.4\"");
	refused("{\"version\":1,\"drains\":[1]}", "unmarshal VF drains");
	refused("{\"version\":1,\"drains\":{}}", "VF drains");
}

static void
test_edits(void)
{
	static const char *const vfs[] = { "0000:e3:00.6", "0000:e3:00.4",
	    "0000:e4:00.4", "0000:e3:00.5" };
	struct drains d = { 0 };
	bool changed;
	size_t i;
	int rc = 0;

	for (i = 0; i < 4; i++) {
		changed = false;
		rc |= drains_add(&d, vfs[i], "2026-12-02T13:00:00Z", "r",
		    &changed);
		rc |= !changed;
	}
	ok(rc == 0 && d.n == 4 && strcmp(d.v[0].vf, "0000:e3:00.4") == 0 &&
	    strcmp(d.v[3].vf, "0000:e4:00.4") == 0, "adds, kept sorted");
	changed = false;
	ok(drains_add(&d, "0000:e3:00.5", "2027-01-01T00:00:00Z", "other",
	    &changed) == 0 && !changed && d.n == 4 &&
	    strcmp(drains_find(&d, "0000:e3:00.5")->reason, "r") == 0,
	    "a second drain changes nothing: the first time and reason stay");
	ok(drains_add(&d, "bad", "2026-12-02T13:00:00Z", "r", &changed) == -1
	    && errno == EINVAL, "a bad address is refused");
	drains_remove(&d, "0000:e3:00.5", &changed);
	ok(changed && d.n == 3 && drains_find(&d, "0000:e3:00.5") == NULL &&
	    strcmp(d.v[1].vf, "0000:e3:00.6") == 0, "remove keeps the order");
	changed = false;
	drains_remove(&d, "0000:e3:00.5", &changed);
	ok(!changed && d.n == 3, "removing an undrained VF changes nothing");
	drains_release(&d);
}

int
main(void)
{
	test_round_trip();
	test_refusals();
	test_edits();
	return done_testing();
}
