/*
 * checkline.c - unit tests (TAP) for the check line: the writer's bytes
 * for each kind of line, the reader giving back what the writer wrote,
 * and the lines the reader refuses (an unknown verdict first).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "checkline.h"
#include "tap.h"

#define VF "0000:e3:00.4"
#define INST "inst-1"
#define AT "2026-01-02T03:04:05Z"

/* The line o as sentinel-poll writes it (compact, keys in order). */
static char *
dump(json_t *o)
{
	char *s = o != NULL ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER)
	    : NULL;

	json_decref(o);
	return s;
}

static void
is_line(json_t *o, const char *want, const char *name)
{
	char *s = dump(o);

	is_str(s, want, name);
	free(s);
}

static void
test_writer(void)
{
	is_line(checkline_new(CHECKLINE_OK, VF, INST, AT, NULL),
	    "{\"check\":\"ok\",\"vf_address\":\"" VF "\",\"instance_id\":\""
	    INST "\",\"assigned_at\":\"" AT "\"}", "an ok line");
	is_line(checkline_new(CHECKLINE_FAILED, VF, INST, AT, "NVRM: x"),
	    "{\"check\":\"failed\",\"vf_address\":\"" VF "\",\"instance_id\":"
	    "\"" INST "\",\"assigned_at\":\"" AT "\",\"nvrm\":\"NVRM: x\"}",
	    "a failed line carries nvrm");
	is_line(checkline_new(CHECKLINE_RPC_ERROR, VF, INST, AT, "connect"),
	    "{\"check\":\"rpc_error\",\"vf_address\":\"" VF "\",\"instance_id\""
	    ":\"" INST "\",\"assigned_at\":\"" AT "\",\"error\":\"connect\"}",
	    "an rpc_error line carries error");
	is_line(checkline_list_error("no store"),
	    "{\"check\":\"list_error\",\"error\":\"no store\"}",
	    "a list_error line");
	is_line(checkline_list_error("bad \xff byte"),
	    "{\"check\":\"list_error\",\"error\":\"bad ? byte\"}",
	    "an invalid byte in an error becomes ?");
}

static void
test_names(void)
{
	int k;

	for (k = 0; k < CHECKLINE_VERDICT_N; k++)
		ok(checkline_verdict_parse(checkline_verdict_name(
		    (enum checkline_verdict)k)) == k, "verdict %s: name and back",
		    checkline_verdict_name((enum checkline_verdict)k));
	is_str(checkline_verdict_name(CHECKLINE_UNSUPPORTED),
	    "unsupported_agent", "unsupported is unsupported_agent");
	is_str(checkline_verdict_name(CHECKLINE_VERDICT_N), "",
	    "a verdict out of range has no name");
	errno = 0;
	ok(checkline_verdict_parse("wedged") == -1 && errno == EINVAL,
	    "an unknown verdict name is refused (EINVAL)");
}

/* Reads the JSON text s; the reason of a refusal into why. */
static int
read_text(const char *s, struct checkline *cl, char *why, size_t len,
    json_t **keep)
{
	json_t *o = json_loads(s, 0, NULL);
	int rc = o != NULL ? checkline_read(o, 256, cl, why, len) : -2;

	*keep = o;
	return rc;
}

static void
test_round_trip(void)
{
	struct checkline cl;
	char *s, why[160];
	json_t *in = NULL;
	int k;

	for (k = 0; k < CHECKLINE_VERDICT_N; k++) {
		s = k == CHECKLINE_LIST_ERROR ? dump(checkline_list_error("x"))
		    : dump(checkline_new((enum checkline_verdict)k, VF, INST,
		    AT, "d"));
		ok(s != NULL && read_text(s, &cl, why, sizeof(why), &in) == 0 &&
		    cl.verdict == (enum checkline_verdict)k,
		    "%s: read back as written", checkline_verdict_name(
		    (enum checkline_verdict)k));
		if (k == CHECKLINE_FAILED)
			ok(cl.vf != NULL && strcmp(cl.vf, VF) == 0 &&
			    strcmp(cl.instance_id, INST) == 0 &&
			    strcmp(cl.assigned_at, AT) == 0,
			    "failed: the target read back");
		json_decref(in);
		in = NULL;
		free(s);
	}
}

static void
refused(const char *s, const char *want, const char *name)
{
	struct checkline cl;
	char why[160];
	json_t *in;

	ok(read_text(s, &cl, why, sizeof(why), &in) == -1, "%s: refused",
	    name);
	is_str(why, want, name);
	json_decref(in);
}

static void
test_refused(void)
{
	refused("{\"check\":\"wedged\"}", "unknown check \"wedged\"",
	    "an unknown verdict");
	refused("{\"vf_address\":\"" VF "\"}", "missing string field \"check\"",
	    "no verdict");
	refused("{\"check\":\"ok\",\"instance_id\":\"i\",\"assigned_at\":\"a\"}",
	    "missing string field \"vf_address\"", "an ok line without a VF");
	refused("{\"check\":\"failed\",\"vf_address\":\"e3:00.4\","
	    "\"instance_id\":\"i\",\"assigned_at\":\"a\"}",
	    "invalid VF address \"e3:00.4\"", "a VF not in canonical form");
	refused("{\"check\":\"ok\",\"vf_address\":\"" VF "\",\"instance_id\":"
	    "3,\"assigned_at\":\"a\"}", "missing string field \"instance_id\"",
	    "an instance that is not a string");
}

int
main(void)
{
	test_writer();
	test_names();
	test_round_trip();
	test_refused();
	return done_testing();
}
