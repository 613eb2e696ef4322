/*
 * store.c - unit tests (TAP) for the health store and claims ledger
 * parsers and writers: upstream's validation texts, Go's MarshalIndent
 * layout and escaping, round trips and the claims helpers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claims.h"
#include "healthfile.h"
#include "store.h"
#include "tap.h"

#define R0 "{\"version\":1,\"records\":["
#define F(id, at, rep) "{\"instance_id\":\"" id "\",\"assigned_at\":\"" at \
	"\",\"reported_at\":\"" rep "\"}"

static const char example[] =
    "{\n"
    "  \"version\": 1,\n"
    "  \"records\": [\n"
    "    {\n"
    "      \"vf_address\": \"0000:e3:00.4\",\n"
    "      \"failures\": [\n"
    "        {\n"
    "          \"instance_id\": \"instance-1\",\n"
    "          \"assigned_at\": \"2026-08-20T15:00:00Z\",\n"
    "          \"reported_at\": \"2026-08-20T15:00:31.123456789Z\"\n"
    "        },\n"
    "        {\n"
    "          \"instance_id\": \"instance-2\",\n"
    "          \"assigned_at\": \"2026-08-20T16:00:00Z\",\n"
    "          \"reported_at\": \"2026-08-20T16:00:29.5Z\"\n"
    "        }\n"
    "      ],\n"
    "      \"quarantined_at\": \"2026-08-20T16:00:29.5Z\"\n"
    "    },\n"
    "    {\n"
    "      \"vf_address\": \"0000:e3:00.6\",\n"
    "      \"quarantined_at\": \"2026-08-20T00:00:00Z\"\n"
    "    }\n"
    "  ]\n"
    "}";

static int
parse(const char *text, struct health *h, char *why, size_t whylen)
{
	why[0] = '\0';
	return health_parse(text, strlen(text), h, why, whylen);
}

/* Expects text to be rejected with exactly want. */
static void
rejects(const char *text, const char *want)
{
	struct health h;
	char why[512];

	if (!ok(parse(text, &h, why, sizeof(why)) == -1 && h.n == 0,
	    "rejected: %s", want))
		return;
	is_str(why, want, "  with upstream's text");
}

static void
test_addresses(void)
{
	ok(vfaddr_valid("0000:e3:00.4"), "valid VF address");
	ok(vfaddr_valid("ffff:ff:1f.7"), "valid VF address, high digits");
	ok(!vfaddr_valid("0000:E3:00.4"), "uppercase hex rejected");
	ok(vfaddr_pci_valid("0000:E3:00.4", true), "any case: uppercase taken");
	ok(!vfaddr_pci_valid("0000:E3:00.8", true), "any case: function 8 not");
	ok(!vfaddr_pci_valid("0000:E3:00.4", false), "lower case only");
	ok(!vfaddr_valid("0000:e3:00.8"), "function 8 rejected");
	ok(!vfaddr_valid("0000:e3:00.4 "), "trailing space rejected");
	ok(!vfaddr_valid("e3:00.4"), "short form rejected");
	ok(!vfaddr_valid("not-a-pci-address"), "garbage rejected");
	ok(!vfaddr_valid(""), "empty rejected");
	ok(!vfaddr_valid(NULL), "NULL rejected");
}

static void
test_validation(void)
{
	rejects("not json", "unmarshal VF health state: '[' or '{' expected "
	    "near 'not'");
	rejects("{\"version\":2,\"records\":[]}",
	    "validate VF health state: unsupported version 2");
	rejects("{\"records\":[]}",
	    "validate VF health state: unsupported version 0");
	rejects("{\"version\":1}",
	    "validate VF health state: expected a records array");
	rejects("{\"version\":1,\"records\":null}",
	    "validate VF health state: expected a records array");
	rejects(R0 "{\"vf_address\":\"x\",\"quarantined_at\":"
	    "\"2026-08-20T00:00:00Z\"}]}",
	    "validate VF health state record 0: invalid VF address \"x\"");
	rejects(R0 "{\"vf_address\":\"0000:e3:00.4\",\"quarantined_at\":"
	    "\"0001-01-01T00:00:00Z\"}]}",
	    "validate VF health state record 0: missing quarantine timestamp");
	rejects(R0 "{\"vf_address\":\"0000:e3:00.4\"}]}",
	    "validate VF health state record 0: neither quarantined nor any "
	    "recorded failures");
	rejects(R0 "{\"vf_address\":\"0000:e3:00.4\",\"quarantined_at\":null,"
	    "\"failures\":[]}]}",
	    "validate VF health state record 0: neither quarantined nor any "
	    "recorded failures");
	rejects(R0 "{\"vf_address\":\"0000:e3:00.4\",\"failures\":["
	    F("a", "b", "2026-08-20T00:00:00Z") ",{\"instance_id\":\"c\"}]}]}",
	    "validate VF health state record 0 failure 1: missing report "
	    "timestamp");
	rejects(R0 "{\"vf_address\":\"0000:e3:00.4\",\"failures\":["
	    F("instance-1", "a", "2026-08-20T00:00:00Z") ","
	    F("instance-1", "a", "2026-08-20T00:00:01Z") "]}]}",
	    "validate VF health state record 0: duplicate failure for "
	    "instance \"instance-1\" assigned at \"a\"");
	rejects(R0 "{\"vf_address\":\"0000:e3:00.4\",\"quarantined_at\":"
	    "\"2026-08-20T00:00:00Z\"},{\"vf_address\":\"0000:e3:00.5\","
	    "\"quarantined_at\":\"2026-08-20T00:00:00Z\"},{\"vf_address\":"
	    "\"0000:e3:00.4\",\"quarantined_at\":\"2026-08-20T00:00:00Z\"}]}",
	    "validate VF health state record 2: duplicate VF address "
	    "\"0000:e3:00.4\"");
}

static void
test_unmarshal_errors(void)
{
	rejects("{\"version\":\"1\",\"records\":[]}",
	    "unmarshal VF health state: json: cannot unmarshal string into "
	    "field \"version\" of type int");
	rejects("{\"version\":1.0,\"records\":[]}",
	    "unmarshal VF health state: json: cannot unmarshal number into "
	    "field \"version\" of type int");
	rejects("[]", "unmarshal VF health state: json: cannot unmarshal "
	    "array into a document object");
	rejects(R0 "{\"vf_address\":\"0000:e3:00.4\",\"quarantined_at\":"
	    "\"yesterday\"}]}",
	    "unmarshal VF health state: parsing time \"yesterday\": not an "
	    "RFC 3339 timestamp");
	/* A type error deep in the file wins over the version, as in Go. */
	rejects("{\"version\":7,\"records\":[{\"vf_address\":4}]}",
	    "unmarshal VF health state: json: cannot unmarshal number into "
	    "field \"vf_address\" of type string");
	rejects("{\"version\":7,\"records\":[{\"vf_address\":\"x\"}]}",
	    "validate VF health state: unsupported version 7");
}

static void
test_example_roundtrip(void)
{
	struct health h;
	struct vf_record *r;
	char why[512], *out;
	size_t len = 0;

	if (!ok(parse(example, &h, why, sizeof(why)) == 0, "example loads"))
		printf("# %s\n", why);
	ok(h.n == 2, "two records");
	r = health_find(&h, "0000:e3:00.4");
	ok(r != NULL && r->nfailures == 2 && r->quarantined,
	    "record .4: 2 failures, quarantined");
	ok(r != NULL && strcmp(r->failures[0].instance_id, "instance-1") == 0,
	    "failures keep file order (oldest first)");
	ok(health_find(&h, "0000:e3:00.5") == NULL, "no record for .5");
	out = health_dump(&h, &len);
	ok(out != NULL && len == strlen(example), "dump length");
	is_str(out, example, "dump is byte-identical to the upstream example");
	free(out);
	health_release(&h);
}

static void
test_offsets_and_order(void)
{
	struct health h;
	char why[512], *out;
	size_t len;

	ok(parse(R0 "{\"vf_address\":\"0000:e3:00.6\",\"quarantined_at\":"
	    "\"2026-08-20T17:00:00.500+01:00\",\"extra\":[1,2]},"
	    "{\"vf_address\":\"0000:e3:00.4\",\"failures\":["
	    "{\"reported_at\":\"2026-08-20T15:00:31.100000000-02:00\"}]}],"
	    "\"unknown\":true}", &h, why, sizeof(why)) == 0,
	    "offsets, unknown keys and unsorted records load");
	out = health_dump(&h, &len);
	is_str(out, "{\n  \"version\": 1,\n  \"records\": [\n    {\n"
	    "      \"vf_address\": \"0000:e3:00.4\",\n      \"failures\": [\n"
	    "        {\n          \"reported_at\": \"2026-08-20T17:00:31.1Z\"\n"
	    "        }\n      ]\n    },\n    {\n"
	    "      \"vf_address\": \"0000:e3:00.6\",\n"
	    "      \"quarantined_at\": \"2026-08-20T16:00:00.5Z\"\n    }\n"
	    "  ]\n}", "written sorted, in UTC, empty strings omitted");
	free(out);
	health_release(&h);
	ok(parse("{\"version\":1,\"records\":[]}", &h, why, sizeof(why)) == 0,
	    "empty store loads");
	out = health_dump(&h, &len);
	is_str(out, "{\n  \"version\": 1,\n  \"records\": []\n}",
	    "empty store is written as []");
	free(out);
	health_release(&h);
}

static void
test_escaping(void)
{
	struct health h;
	char why[512], *out;
	size_t len;

	ok(parse(R0 "{\"vf_address\":\"0000:e3:00.4\",\"failures\":[{"
	    "\"instance_id\":\"a\\\"b\\\\c\\n\\b\\f\\u0001\\u007f</é>&\","
	    "\"assigned_at\":\"\\u2028\\u2029\\u2027\","
	    "\"reported_at\":\"2026-08-20T15:00:00Z\"}]}]}", &h, why,
	    sizeof(why)) == 0, "odd bytes in instance_id load");
	out = health_dump(&h, &len);
	ok(out != NULL && strstr(out, "\"instance_id\": \"a\\\"b\\\\c\\n"
	    "\\u0008\\u000c\\u0001\x7f\\u003c/é\\u003e\\u0026\"") != NULL,
	    "written with Go's escapes: \\u0008 \\u000c, DEL and UTF-8 raw, "
	    "<>& as \\u003c \\u003e \\u0026");
	ok(out != NULL && strstr(out, "\"assigned_at\": \"\\u2028\\u2029"
	    "\xe2\x80\xa7\"") != NULL,
	    "U+2028 and U+2029 escaped as Go does, U+2027 raw");
	free(out);
	health_release(&h);
}

/* The nanoseconds of quarantined_at T, or -1 when the file is refused. */
static long
quarantine_nsec(const char *t)
{
	char text[256], why[512];
	struct health h;
	long ns;

	snprintf(text, sizeof(text), R0 "{\"vf_address\":\"0000:e3:00.4\","
	    "\"quarantined_at\":\"%s\"}]}", t);
	if (parse(text, &h, why, sizeof(why)) < 0)
		return -1;
	ns = h.recs[0].quarantined_at.tv_nsec;
	health_release(&h);
	return ns;
}

static void
test_go_timestamps(void)
{
	ok(quarantine_nsec("2026-08-20T15:00:31,5Z") == 500000000,
	    "a ',' fraction reads as Go reads it");
	ok(quarantine_nsec("2026-08-20T15:00:31.1234567899Z") == 123456789,
	    "10 fraction digits are cut, not rounded, to nanoseconds");
	ok(quarantine_nsec("2026-08-20T15:00:31.Z") == -1 &&
	    quarantine_nsec("2026-08-20T15:00:31,Z") == -1,
	    "a fraction needs a digit");
	ok(quarantine_nsec("2026-08-20t15:00:31Z") == -1 &&
	    quarantine_nsec("2026-08-20T15:00:31z") == -1,
	    "lowercase t and z are refused, as in Go");
}

static void
test_record_json(void)
{
	struct health h;
	char why[512], *s;
	json_t *j;

	parse(example, &h, why, sizeof(why));
	j = health_record_json(&h.recs[1]);
	s = json_dumps(j, JSON_COMPACT);
	is_str(s, "{\"vf_address\":\"0000:e3:00.6\",\"quarantined_at\":"
	    "\"2026-08-20T00:00:00Z\",\"quarantined\":true}",
	    "record JSON in upstream order plus quarantined");
	free(s);
	json_decref(j);
	health_release(&h);
}

static void
claims_rejects(const char *text, const char *want)
{
	struct claims c;
	char why[512];

	why[0] = '\0';
	if (!ok(claims_parse(text, strlen(text), &c, why, sizeof(why)) == -1,
	    "claims rejected: %s", want))
		return;
	is_str(why, want, "  with the ledger's text");
}

#define C0 "{\"version\":1,\"claims\":["
#define CL(vf, id) "{\"vf_address\":\"" vf "\",\"instance_id\":\"" id \
	"\",\"claimed_at\":\"2026-08-20T15:00:00Z\"}"

static void
test_claims_validation(void)
{
	claims_rejects("{\"version\":3,\"claims\":[]}",
	    "validate VF claims: unsupported version 3");
	claims_rejects("{\"version\":1}",
	    "validate VF claims: expected a claims array");
	claims_rejects(C0 CL("0000:e3:00.4", "a") "," CL("0000:E3:00.5", "b")
	    "]}", "validate VF claims claim 1: invalid VF address "
	    "\"0000:E3:00.5\"");
	claims_rejects(C0 "{\"vf_address\":\"0000:e3:00.4\",\"claimed_at\":"
	    "\"x\"}]}", "validate VF claims claim 0: missing instance_id");
	claims_rejects(C0 CL("0000:e3:00.4", "a") "," CL("0000:e3:00.4", "b")
	    "]}", "validate VF claims claim 1: duplicate VF address "
	    "\"0000:e3:00.4\"");
	claims_rejects(C0 CL("0000:e3:00.4", "a") "," CL("0000:e3:00.5", "a")
	    "]}", "validate VF claims claim 1: duplicate instance \"a\"");
	claims_rejects(C0 "{\"vf_address\":\"0000:e3:00.4\",\"instance_id\":"
	    "\"a\",\"claimed_at\":\"x\",\"type_id\":1160}]}",
	    "unmarshal VF claims: json: cannot unmarshal number into field "
	    "\"type_id\" of type string");
}

static void
test_claims_roundtrip(void)
{
	static const char want[] =
	    "{\n  \"version\": 1,\n  \"claims\": [\n    {\n"
	    "      \"vf_address\": \"0000:e3:00.4\",\n"
	    "      \"instance_id\": \"i-2\",\n"
	    "      \"claimed_at\": \"2026-08-20T15:00:00Z\"\n    },\n    {\n"
	    "      \"vf_address\": \"0000:e3:00.5\",\n"
	    "      \"instance_id\": \"i-1\",\n"
	    "      \"claimed_at\": \"2026-08-20T15:00:00Z\",\n"
	    "      \"profile\": \"NVIDIA L40S-12Q\",\n"
	    "      \"type_id\": \"1160\",\n"
	    "      \"vsock\": \"vsock:42:2222\",\n"
	    "      \"control_socket\": \"/run/vm/i-1/qmp.sock\"\n    }\n"
	    "  ]\n}";
	struct claims c;
	struct claim add = { "0000:e3:00.4", "i-2", "2026-08-20T15:00:00Z",
	    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL };
	char why[512], *out;
	size_t len;
	const char *in = C0 "{\"vf_address\":\"0000:e3:00.5\",\"instance_id\":"
	    "\"i-1\",\"claimed_at\":\"2026-08-20T15:00:00Z\",\"vsock\":"
	    "\"vsock:42:2222\",\"profile\":\"NVIDIA L40S-12Q\",\"type_id\":"
	    "\"1160\",\"control_socket\":\"/run/vm/i-1/qmp.sock\",\"x\":1}]}";

	ok(claims_parse(in, strlen(in), &c, why, sizeof(why)) == 0,
	    "ledger loads");
	ok(claims_add(&c, &add) == 0 && c.n == 2, "claim added");
	ok(claims_find_vf(&c, "0000:e3:00.4") != NULL &&
	    claims_find_instance(&c, "i-1") != NULL &&
	    claims_find_instance(&c, "i-9") == NULL, "claims found");
	out = claims_dump(&c, &len);
	is_str(out, want, "ledger written sorted, in ledger key order");
	free(out);
	ok(claims_remove_instance(&c, "i-2") == 1 && c.n == 1 &&
	    claims_remove_instance(&c, "i-2") == 0, "claim removed once");
	claims_release(&c);
}

/* claims_find_vf is a binary search over the ledger, which the loader
 * sorts by VF: every VF is found, wherever it stood in the file, and
 * addresses before, between and after them are not. */
static void
test_find_vf(void)
{
	static const char *const vfs[] = { "0000:e4:00.1", "0000:e3:00.6",
	    "0000:e3:00.4", "0000:e5:00.7", "0000:e3:00.5" };
	static const char *const absent[] = { "0000:e3:00.3", "0000:e3:00.7",
	    "0000:e4:00.0", "0000:e6:00.0" };
	char text[2048], why[512];
	struct claims c;
	size_t i, n = 0, all = 1;

	n += (size_t)snprintf(text, sizeof(text), "{\"version\":1,\"claims\":[");
	for (i = 0; i < 5; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
		    "%s{\"vf_address\":\"%s\",\"instance_id\":\"i-%zu\","
		    "\"claimed_at\":\"2026-08-20T15:00:00Z\"}", i ? "," : "",
		    vfs[i], i);
	(void)snprintf(text + n, sizeof(text) - n, "]}");
	ok(claims_parse(text, strlen(text), &c, why, sizeof(why)) == 0,
	    "an unsorted ledger loads");
	for (i = 0; i < 5; i++)
		all &= claims_find_vf(&c, vfs[i]) != NULL &&
		    strcmp(claims_find_vf(&c, vfs[i])->vf, vfs[i]) == 0;
	ok(all, "every claimed VF is found");
	for (i = 0, all = 1; i < 4; i++)
		all &= claims_find_vf(&c, absent[i]) == NULL;
	ok(all && claims_find_vf(&c, NULL) == NULL,
	    "no VF before, between or after them");
	claims_release(&c);
}

/* The loader drops whitespace outside strings before jansson reads the
 * text: tokens that whitespace separates stay apart, strings keep theirs. */
static void
test_whitespace(void)
{
	struct health h;
	char why[512];

	rejects("{\"version\":1 2,\"records\":[]}",
	    "unmarshal VF health state: '}' expected near '2'");
	rejects("{\"version\":tr ue,\"records\":[]}",
	    "unmarshal VF health state: invalid token near 'tr'");
	rejects("{\"version\":-  1,\"records\":[]}",
	    "unmarshal VF health state: invalid token near '-'");
	ok(parse(" {\t\"version\"\r\n: 1 ,\"records\" :[ {\"vf_address\":"
	    "\"0000:40:01.0\", \"failures\": [ {\"instance_id\": "
	    "\"a  \\\" b \", \"assigned_at\": \" x\\\\\", "
	    "\"reported_at\": \"2026-08-20T15:00:31Z\"} ] } ]\n}\n", &h, why,
	    sizeof(why)) == 0 && h.n == 1, "whitespace between tokens: %s",
	    why);
	if (h.n == 1 && h.recs[0].nfailures == 1) {
		is_str(h.recs[0].failures[0].instance_id, "a  \" b ",
		    "  spaces and an escaped quote inside a string are kept");
		is_str(h.recs[0].failures[0].assigned_at, " x\\",
		    "  a string ending in an escaped backslash ends there");
	}
	health_release(&h);
}

int
main(void)
{
	test_addresses();
	test_validation();
	test_unmarshal_errors();
	test_example_roundtrip();
	test_offsets_and_order();
	test_escaping();
	test_go_timestamps();
	test_record_json();
	test_claims_validation();
	test_claims_roundtrip();
	test_whitespace();
	test_find_vf();
	return done_testing();
}
