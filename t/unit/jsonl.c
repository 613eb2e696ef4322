/*
 * jsonl.c - unit tests (TAP) for the fast paths of jsonl_parse() and
 * jsonl_write() (jsonflat.c) against jansson: whatever the fast reader
 * accepts, json_loadb() accepts as the same object in the same order;
 * whatever the fast writer renders, json_dumpb() renders the same bytes
 * with the same length. Fixed tricky lines first, then many generated
 * ones (a fixed seed, so a failure repeats).
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonflat.h"
#include "jsonl.h"
#include "tap.h"

#define GEN_LINES 200000

static uint64_t seed = 0x9e3779b97f4a7c15ULL;

static unsigned
rnd(unsigned n)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return (unsigned)(seed >> 32) % n;
}

/* The compact dump of j, in a static buffer ("" if jansson fails). */
static const char *
dumped(const json_t *j, char *buf, size_t size)
{
	size_t n = json_dumpb(j, buf, size - 1, JSON_COMPACT);

	buf[n < size ? n : 0] = '\0';
	return buf;
}

/* 0: the fast reader declined; 1: it agrees with jansson; -1: it does not. */
static int
parse_agrees(const char *s, size_t len)
{
	static char a[8192], b[8192];
	json_error_t err;
	json_t *flat = jsonflat_parse(s, len), *ref;
	int rc;

	if (flat == NULL)
		return 0;
	ref = json_loadb(s, len, JSON_REJECT_DUPLICATES, &err);
	rc = ref != NULL && json_is_object(ref) && json_equal(flat, ref) &&
	    strcmp(dumped(flat, a, sizeof(a)), dumped(ref, b, sizeof(b))) == 0 ?
	    1 : -1;
	json_decref(flat);
	json_decref(ref);
	return rc;
}

/* What jsonl_parse() answered before the fast path: jansson's verdict. */
static const char *
reference_why(const char *s, size_t len)
{
	static char msg[200];
	json_error_t err;
	json_t *j = json_loadb(s, len, JSON_REJECT_DUPLICATES, &err);

	if (j == NULL)
		snprintf(msg, sizeof(msg), "invalid JSON: %s", err.text);
	else
		snprintf(msg, sizeof(msg), "%s", json_is_object(j) ? "" :
		    "not a JSON object");
	json_decref(j);
	return msg;
}

static const char *const tricky[] = {
	"{}", " { } ", "{\"a\":\"b\"}", "\t{\r\n\"a\" : \"b\" ,\"c\":\"\"}\n",
	"{\"a\":\"b\",}", "{\"a\":\"b\",\"a\":\"c\"}", "{\"a\":\"b\\\"\"}",
	"{\"a\":\"\\u0000\"}", "{\"a\\u0000\":\"b\"}", "{\"a\":1}",
	"{\"a\":{\"b\":\"c\"}}", "{\"a\":[\"b\"]}", "{\"a\":\"b\"} x",
	"{\"a\":\"b\"}}", "{\"a\" \"b\"}", "{\"a\":\"b\" \"c\":\"d\"}",
	"{\"a\":\"\xc3\xa9\"}", "{\"a\":\"\xff\"}", "{\"a\":\"\x01\"}",
	"{\"a\":\"\x7f\"}", "{\"\":\"\"}", "{\"a\":\"b", "{\"a\":", "{",
	"", " ", "[]", "\"a\"", "{\"a\":true}", "{\"a\":null}", "{,}",
	"{\"a\":\"b\",,\"c\":\"d\"}", "{\"a\":\"b\"\v}", "\xef\xbb\xbf{}",
	"{'a':'b'}", "{\"a\":\"b\"}\f", "{\"a\":\"/\"}",
};

static void
test_tricky(void)
{
	const char *why;
	char name[64];
	size_t i, len;
	json_t *j;
	int bad = 0;

	for (i = 0; i < sizeof(tricky) / sizeof(tricky[0]); i++) {
		len = strlen(tricky[i]);
		why = "";
		bad += parse_agrees(tricky[i], len) < 0;
		j = jsonl_parse(tricky[i], len, &why);
		snprintf(name, sizeof(name), "tricky line %zu: as jansson", i);
		if (!is_str(j != NULL ? "" : why, reference_why(tricky[i],
		    len), name))
			bad++;
		json_decref(j);
	}
	ok(bad == 0, "tricky lines: the fast reader agrees with jansson");
	ok(parse_agrees("{\"a\":\"b\"}\0", 10) == 0,
	    "a NUL byte after the object is left to jansson");
	ok(parse_agrees(" {\"check\":\"ok\", \"vf\" :\"x\"}\r", 27) == 1,
	    "whitespace around every token is taken");
	ok(parse_agrees("{\"a\":\"b\",\"a\":\"b\"}", 17) == 0,
	    "a duplicate key is left to jansson");
}

static void
append(char *s, size_t *n, size_t max, const char *p)
{
	size_t l = strlen(p);

	if (*n + l < max) {
		memcpy(s + *n, p, l);
		*n += l;
	}
}

static void
gen_ws(char *s, size_t *n, size_t max)
{
	static const char *const ws[] = { " ", "\t", "\r", "\n", "  " };

	while (rnd(4) == 0)
		append(s, n, max, ws[rnd(5)]);
}

/* A value: a plain string mostly, else something jansson must judge. */
static const char *
gen_value(void)
{
	static const char *const plain[] = { "\"ok\"", "\"\"", "\"a b/c\"",
	    "\"0000:40:01.0\"", "\"2026-08-20T15:00:00Z\"", "\"~!@#$%^&*\"" };
	static const char *const other[] = { "\"x\\\"y\"", "\"\\u0000\"",
	    "\"\\n\"", "1", "-0", "1.5", "true", "null", "{}", "[]",
	    "{\"a\":\"b\"}", "[\"a\"]", "\"\xc3\xa9\"", "\"\x01\"",
	    "\"\x7f\"", "\"\xff\"", "\"", "\"a", "'a'", "" };

	if (rnd(4) != 0)
		return plain[rnd(sizeof(plain) / sizeof(plain[0]))];
	return other[rnd(sizeof(other) / sizeof(other[0]))];
}

/* One byte changed, inserted or removed somewhere in s[0, *n). */
static void
mutate(char *s, size_t *n, size_t max)
{
	static const char byte[] = " \t\r\n{}[]:,\"\\u0a\x01\x7f\xc3\xff";
	size_t at = *n > 0 ? rnd((unsigned)*n) : 0;
	char c = byte[rnd(sizeof(byte) - 1)];

	if (rnd(3) == 0 && *n > 0) {
		memmove(s + at, s + at + 1, *n - at - 1);
		(*n)--;
	} else if (rnd(2) == 0 && *n + 1 < max) {
		memmove(s + at + 1, s + at, *n - at);
		s[at] = c;
		(*n)++;
	} else if (*n > 0) {
		s[at] = c;
	}
}

/* A flat object of random members and whitespace, perhaps mutated. */
static size_t
gen_line(char *s, size_t max)
{
	static const char *const key[] = { "\"a\"", "\"b\"", "\"c\"",
	    "\"check\"", "\"vf_address\"", "\"\"", "\"a\\u0000\"" };
	size_t n = 0, m = rnd(8), i;

	gen_ws(s, &n, max);
	append(s, &n, max, "{");
	for (i = 0; i < m; i++) {
		gen_ws(s, &n, max);
		append(s, &n, max, i > 0 ? "," : "");
		gen_ws(s, &n, max);
		append(s, &n, max, key[rnd(rnd(8) == 0 ? 7 : 6)]);
		gen_ws(s, &n, max);
		append(s, &n, max, ":");
		gen_ws(s, &n, max);
		append(s, &n, max, gen_value());
	}
	gen_ws(s, &n, max);
	append(s, &n, max, "}");
	gen_ws(s, &n, max);
	for (i = rnd(2) == 0 ? rnd(3) + 1 : 0; i > 0; i--)
		mutate(s, &n, max);
	return n;
}

static void
test_generated_lines(void)
{
	char s[512];
	size_t i, len;
	int took = 0, left = 0, bad = 0, r;

	for (i = 0; i < GEN_LINES; i++) {
		len = gen_line(s, sizeof(s));
		r = parse_agrees(s, len);
		took += r > 0;
		left += r == 0;
		if (r < 0 && bad++ < 5)
			printf("# disagrees: %.*s\n", (int)len, s);
	}
	ok(bad == 0, "%d generated lines: the fast reader agrees with jansson",
	    GEN_LINES);
	ok(took > GEN_LINES / 10 && left > GEN_LINES / 10,
	    "both paths are taken (fast %d, jansson %d)", took, left);
}

/* 0: the fast writer declined; 1: it agrees with jansson; -1: not. */
static int
dump_agrees(const json_t *obj)
{
	char a[4096], b[4096];
	size_t n = jsonflat_dump(obj, a, sizeof(a)), m, small;

	if (n == 0)
		return 0;
	m = json_dumpb(obj, b, sizeof(b), JSON_COMPACT);
	if (n != m || n > sizeof(a) || memcmp(a, b, n) != 0) {
		printf("# fast:    %.*s\n# jansson: %.*s\n", (int)n, a,
		    (int)m, b);
		return -1;
	}
	small = n / 2;
	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	return jsonflat_dump(obj, a, small) == n &&
	    json_dumpb(obj, b, small, JSON_COMPACT) == n &&
	    memcmp(a, b, sizeof(a)) == 0 ? 1 : -1;
}

/* A random scalar (or, rarely, what the fast writer must decline). */
static json_t *
gen_scalar(void)
{
	static const json_int_t ints[] = { 0, 1, -1, 42, 1000000007,
	    LLONG_MAX, LLONG_MIN, -9 };
	char s[8];
	size_t i, n = rnd(6);

	switch (rnd(9)) {
	case 0:
		return json_integer(ints[rnd(8)]);
	case 1:
		return rnd(2) ? json_true() : json_false();
	case 2:
		return json_null();
	case 3:
		return rnd(4) == 0 ? json_real(1.5) : json_stringn("\xc3\xa9",
		    2);
	case 4:
		return rnd(4) == 0 ? json_array() : json_object();
	default:
		for (i = 0; i < n; i++)
			s[i] = (char)rnd(0x80);
		return json_stringn(s, n);
	}
}

static void
test_generated_objects(void)
{
	char key[4];
	json_t *obj;
	size_t i, m, k;
	int took = 0, bad = 0, r;

	for (i = 0; i < GEN_LINES / 4; i++) {
		obj = json_object();
		for (m = rnd(9); m > 0; m--) {
			for (k = 0; k < sizeof(key) - 1; k++)
				key[k] = (char)(rnd(4) == 0 ? rnd(0x80) :
				    'a' + rnd(3));
			json_object_setn_new(obj, key, rnd(4), gen_scalar());
		}
		r = dump_agrees(obj);
		took += r > 0;
		bad += r < 0;
		json_decref(obj);
	}
	ok(bad == 0, "generated objects: the fast writer agrees with jansson");
	ok(took > GEN_LINES / 40, "the fast writer took %d of them", took);
}

/* jsonl_write() of an answer line, byte for byte. */
static void
test_write(void)
{
	json_t *obj = json_pack("{s:s, s:s, s:I, s:b, s:n}", "check",
	    "failed", "e", "a\"b\\c\n\x01/\x7f", "failures", (json_int_t)-3,
	    "rescinded", 1, "z");
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ok(f != NULL && jsonl_write(f, obj) == 0 && fclose(f) == 0,
	    "jsonl_write");
	is_str(text, "{\"check\":\"failed\","
	    "\"e\":\"a\\\"b\\\\c\\n\\u0001/\x7f\",\"failures\":-3,"
	    "\"rescinded\":true,\"z\":null}\n", "the line jansson writes");
	ok(dump_agrees(obj) == 1, "and the fast writer wrote it");
	free(text);
	json_decref(obj);
}

int
main(void)
{
	test_tricky();
	test_generated_lines();
	test_generated_objects();
	test_write();
	return done_testing();
}
