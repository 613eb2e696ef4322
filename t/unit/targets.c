/*
 * targets.c - unit tests (TAP) for the target list: --targets lines
 * (required fields, defaults, bad lines with their reason), lookup, and
 * copies from the claims ledger.
 */
#include <stdio.h>
#include <string.h>

#include "store.h"
#include "targets.h"
#include "tap.h"

static int
parse(struct targets *ts, const char *line, const char **why)
{
	*why = NULL;
	return targets_parse_line(ts, line, strlen(line), why);
}

static void
test_lines(void)
{
	struct targets ts = { 0 };
	const struct target *t;
	const char *why;

	ok(parse(&ts, "{\"vf_address\":\"0000:e3:00.4\",\"instance_id\":"
	    "\"i-1\",\"claimed_at\":\"2026-08-20T15:00:00Z\",\"vsock\":"
	    "\"vsock:7:9999\",\"control_socket\":\"/run/i-1.sock\","
	    "\"app_log\":\"/var/log/i-1\"}", &why) == 1 && ts.n == 1,
	    "a full line is appended");
	t = &ts.v[0];
	ok(strcmp(t->vf, "0000:e3:00.4") == 0 &&
	    strcmp(t->instance_id, "i-1") == 0 &&
	    strcmp(t->claimed_at, "2026-08-20T15:00:00Z") == 0 &&
	    strcmp(t->vsock, "vsock:7:9999") == 0 &&
	    strcmp(t->control_socket, "/run/i-1.sock") == 0 &&
	    strcmp(t->app_log, "/var/log/i-1") == 0, "with every field");
	ok(parse(&ts, "{\"vf_address\":\"0000:e3:00.5\",\"instance_id\":"
	    "\"i-2\"}", &why) == 1 && ts.n == 2, "a minimal line is appended");
	t = &ts.v[1];
	ok(strcmp(t->claimed_at, "") == 0 && t->vsock == NULL &&
	    t->control_socket == NULL && t->app_log == NULL,
	    "claimed_at defaults to \"\", the rest to absent");
	ok(parse(&ts, "{\"vf_address\":\"0000:e3:00\",\"instance_id\":"
	    "\"i-3\"}", &why) == 0 && ts.n == 2, "an invalid VF is refused");
	is_str(why, "needs a valid vf_address and an instance_id",
	    "with the reason");
	ok(parse(&ts, "{\"vf_address\":\"0000:e3:00.6\",\"instance_id\":"
	    "\"\"}", &why) == 0 && ts.n == 2, "an empty instance is refused");
	ok(parse(&ts, "{\"vf_address\":\"0000:e3:00.6\"", &why) == 0 &&
	    why != NULL && strncmp(why, "invalid JSON", 12) == 0 && ts.n == 2,
	    "bad JSON is refused with the parser's reason");
	ok(parse(&ts, "[1]", &why) == 0 && ts.n == 2,
	    "a line that is no object is refused");
	ok(targets_find(&ts, "i-2") == &ts.v[1] &&
	    targets_find(&ts, "i-9") == NULL, "targets_find by instance");
	targets_free(&ts);
	ok(ts.n == 0 && ts.v == NULL, "targets_free empties the list");
}

static void
test_copies(void)
{
	struct claim cl[2] = {
		{ "0000:e3:00.4", "i-1", "2026-08-20T15:00:00Z", NULL, NULL,
		    "vsock:3:1", "/run/a.sock" },
		{ "0000:e3:00.5", "i-2", "2026-08-20T16:00:00Z", NULL, NULL,
		    NULL, NULL }
	};
	struct claims c = { cl, 2, 2 };
	struct targets ts = { 0 }, copy = { 0 };

	ok(targets_from_claims(&c, &ts) == 0 && ts.n == 2,
	    "every claim becomes a target");
	ok(strcmp(ts.v[0].vsock, "vsock:3:1") == 0 &&
	    strcmp(ts.v[0].control_socket, "/run/a.sock") == 0 &&
	    ts.v[0].app_log == NULL && ts.v[1].vsock == NULL,
	    "with the claim's endpoint and control socket");
	ok(ts.v[0].vf != cl[0].vf && ts.v[0].instance_id != cl[0].instance_id,
	    "as deep copies");
	ok(targets_append_all(&copy, &ts) == 0 && copy.n == 2 &&
	    strcmp(copy.v[1].instance_id, "i-2") == 0 &&
	    copy.v[1].instance_id != ts.v[1].instance_id,
	    "targets_append_all deep-copies a list");
	targets_free(&ts);
	targets_free(&copy);
}

int
main(void)
{
	test_lines();
	test_copies();
	return done_testing();
}
