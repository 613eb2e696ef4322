/*
 * lib.c - unit tests for the pure parsers of src/lib: RFC 3339, the
 * JSON-lines reader, the configuration file, endpoints and Prometheus
 * text; io_close_keep_errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "endpoint.h"
#include "io.h"
#include "jsonarena.h"
#include "jsonl.h"
#include "prom.h"
#include "tap.h"
#include "timefmt.h"

static void
roundtrip(const char *in, const char *want)
{
	struct timespec ts;
	char buf[TIMEFMT_MAX];

	if (!ok(timefmt_parse(in, &ts) == 0, "parse %s", in))
		return;
	timefmt_format(&ts, buf, sizeof(buf));
	is_str(buf, want, in);
}

static void
test_timefmt(void)
{
	static const char *bad[] = { "", "2026-08-20", "2026-08-20T15:00:00",
	    "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
	    "2026-08-20T15:00:00.Z", "2026-08-20T15:00:00.1234567890Z",
	    "2026-08-20T15:00:00+0100", "2026-08-20T15:00:00Zjunk",
	    "2026-08-20 15:00:00Z", "2026-08-20T24:00:00Z" };
	struct timespec ts;
	size_t i;

	roundtrip("2026-08-20T15:00:00Z", "2026-08-20T15:00:00Z");
	roundtrip("2026-08-31T12:00:00.123456789Z",
	    "2026-08-31T12:00:00.123456789Z");
	roundtrip("2026-08-20T16:00:29.500Z", "2026-08-20T16:00:29.5Z");
	roundtrip("2026-08-20T17:00:29.5+01:00", "2026-08-20T16:00:29.5Z");
	roundtrip("2026-01-01T00:30:00-01:00", "2026-01-01T01:30:00Z");
	roundtrip("2024-02-29T23:59:59.000000001Z",
	    "2024-02-29T23:59:59.000000001Z");
	roundtrip("1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z");
	roundtrip("1969-12-31T23:59:59.9Z", "1969-12-31T23:59:59.9Z");
	roundtrip("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z");
	roundtrip("9999-12-31T23:59:59.999999999Z",
	    "9999-12-31T23:59:59.999999999Z");
	roundtrip("2026-08-20T15:00:00.010Z", "2026-08-20T15:00:00.01Z");
	roundtrip("2026-08-20T15:00:00.000000100Z",
	    "2026-08-20T15:00:00.0000001Z");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(timefmt_parse(bad[i], &ts) < 0 && errno == EINVAL,
		    "rejects \"%s\"", bad[i]);
	ok(timefmt_parse("0001-01-01T00:00:00Z", &ts) == 0 &&
	    timefmt_is_zero(&ts), "Go's zero time is recognised");
	ok(timefmt_parse("0001-01-01T00:00:00.1Z", &ts) == 0 &&
	    !timefmt_is_zero(&ts), "zero time plus 0.1 s is not zero");
}

/* Feeds text through a pipe into a reader and collects what it says. */
static void
feed(const char *text, char *out, size_t outlen)
{
	struct jsonl_reader r;
	enum jsonl_status st;
	int fds[2];
	char *line;
	size_t len;

	out[0] = '\0';
	if (pipe(fds) < 0)
		return;
	if (fork() == 0) {
		close(fds[0]);
		(void)!write(fds[1], text, strlen(text));
		_exit(0);
	}
	close(fds[1]);
	jsonl_reader_init(&r, fds[0]);
	for (;;) {
		st = jsonl_next(&r, &line, &len);
		if (st == JSONL_END)
			break;
		if (st == JSONL_NEED) {
			if (jsonl_fill(&r) < 0)
				break;
			continue;
		}
		if (st == JSONL_LINE && len > 100)
			snprintf(line, 32, "<len=%zu>", len);
		strncat(out, st == JSONL_LINE ? line : "<long>",
		    outlen - strlen(out) - 2);
		strcat(out, "|");
	}
	jsonl_reader_release(&r);
	close(fds[0]);
}

static void
test_jsonl_reader(void)
{
	char out[512], *big;
	size_t n = JSONL_MAX + 10;

	feed("a\nb\r\n\nlast", out, sizeof(out));
	is_str(out, "a|b||last|", "lines, CRLF, empty line, last without newline");
	big = malloc(3 * n + 16);
	memset(big, 'x', n);
	strcpy(big + n, "\nok\n");
	feed(big, out, sizeof(out));
	is_str(out, "<long>|ok|", "over-long line skipped, next line read");
	memset(big, 'y', 3 * n);
	strcpy(big + 3 * n, "\n{}\n");
	feed(big, out, sizeof(out));
	is_str(out, "<long>|{}|", "a line three times the limit is one skip");
	memset(big, 'z', JSONL_MAX);
	strcpy(big + JSONL_MAX, "\nq");
	feed(big, out, sizeof(out));
	is_str(out, "<len=65536>|q|",
	    "a line of exactly JSONL_MAX bytes is accepted");
	memset(big, 'w', n);
	big[n] = '\0';
	feed(big, out, sizeof(out));
	is_str(out, "<long>|", "over-long final line without newline");
	free(big);
}

static void
test_jsonl_parse(void)
{
	const char *why = NULL;
	json_t *j;

	j = jsonl_parse("{\"a\":1}", 7, &why);
	ok(j != NULL && json_integer_value(json_object_get(j, "a")) == 1,
	    "object parsed");
	json_decref(j);
	ok(jsonl_parse("[1]", 3, &why) == NULL &&
	    strcmp(why, "not a JSON object") == 0, "array rejected");
	ok(jsonl_parse("{\"a\":1,\"a\":2}", 13, &why) == NULL,
	    "duplicate keys rejected");
	ok(jsonl_parse("{\"a\":1} {}", 10, &why) == NULL,
	    "two objects on one line rejected");
	ok(jsonl_parse("{\"a\":\"\\u0000\"}", 14, &why) == NULL,
	    "NUL escape rejected");
	ok(jsonl_parse("nope", 4, &why) == NULL &&
	    strncmp(why, "invalid JSON: ", 14) == 0, "garbage explained");
}

/* The test's temporary directory, for a configuration file and a
 * JSON-lines file. */
static char dir[PATH_MAX];

static int
conf_text(const char *text, struct conf *c, char *err, size_t errlen)
{
	char path[PATH_MAX * 2];
	int fd, rc;

	snprintf(path, sizeof(path), "%s/vfs.conf", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	(void)!write(fd, text, strlen(text));
	close(fd);
	conf_defaults(c);
	rc = conf_load(c, path, true, err, errlen);
	unlink(path);
	return rc;
}

static void
test_conf(void)
{
	struct conf c;
	char err[PATH_MAX + 256];	/* PATH:LINE: why: name (conf.c) */

	ok(conf_text("# comment\n\n  data_dir = /srv/x  # trailing\n"
	    "gpu.vf_quarantine_threshold=3\nsentinel.concurrency = 8\n"
	    "\t\n", &c, err, sizeof(err)) == 0, "valid file loads");
	is_str(c.data_dir, "/srv/x", "path value trimmed, comment dropped");
	ok(c.threshold == 3 && c.concurrency == 8 && c.interval == 5,
	    "numbers set, defaults kept");
	ok(conf_text("a\nnonsense\n", &c, err, sizeof(err)) < 0 &&
	    strstr(err, ":1: expected key = value") != NULL,
	    "line without = names line 1");
	ok(conf_text("\nbogus = 1\n", &c, err, sizeof(err)) < 0 &&
	    strstr(err, ":2: unknown key: bogus") != NULL,
	    "unknown key names line 2 and key");
	ok(conf_text("gpu.vf_quarantine_threshold = 0\n", &c, err,
	    sizeof(err)) < 0, "threshold 0 rejected");
	ok(conf_text("sentinel.interval = 5s\n", &c, err, sizeof(err)) < 0,
	    "unit suffix rejected");
	ok(conf_text("sentinel.timeout = -1\n", &c, err, sizeof(err)) < 0,
	    "negative rejected");
	ok(conf_text("data_dir = relative\n", &c, err, sizeof(err)) < 0,
	    "relative path rejected");
	ok(conf_load(&c, "/nonexistent/x.conf", false, err, sizeof(err)) == 0,
	    "missing optional file is all defaults");
	ok(conf_load(&c, "/nonexistent/x.conf", true, err, sizeof(err)) < 0,
	    "missing required file is an error");
}

static void
test_endpoint(void)
{
	struct endpoint ep;
	char longp[200];

	ok(endpoint_parse("vsock:42:2222", &ep) == 0 && ep.kind == EP_VSOCK &&
	    ep.cid == 42 && ep.port == 2222, "vsock:CID:PORT");
	ok(endpoint_parse("hvsock:/run/vm/a:b.sock:1024", &ep) == 0 &&
	    ep.kind == EP_HVSOCK && ep.port == 1024 &&
	    strcmp(ep.path, "/run/vm/a:b.sock") == 0,
	    "hvsock port is after the last colon");
	ok(endpoint_parse("unix:/tmp/s", &ep) == 0 && ep.kind == EP_UNIX &&
	    strcmp(ep.path, "/tmp/s") == 0, "unix:PATH");
	ok(endpoint_parse("vsock:2222", &ep) < 0, "dial vsock needs a CID");
	ok(endpoint_parse("vsock:x:1", &ep) < 0, "bad CID");
	ok(endpoint_parse("unix:", &ep) < 0, "empty path");
	ok(endpoint_parse("tcp:1.2.3.4:5", &ep) < 0, "unknown scheme");
	ok(endpoint_parse("hvsock:/x:", &ep) < 0, "hvsock without port");
	memset(longp, 'a', sizeof(longp));
	memcpy(longp, "unix:", 5);
	longp[sizeof(longp) - 1] = '\0';
	ok(endpoint_parse(longp, &ep) < 0 && errno == ENAMETOOLONG,
	    "over-long unix path");
	ok(endpoint_parse_listen("vsock:2222", &ep) == 0 && ep.port == 2222,
	    "listen vsock:PORT");
	ok(endpoint_parse_listen("vsock:1:2", &ep) < 0,
	    "listen vsock takes no CID");
}

static void
test_prom(void)
{
	struct prom p;
	const char *text;
	size_t len;

	prom_init(&p);
	prom_family(&p, "x_total", "counter", "a \\ help\nline");
	prom_sample(&p, "x_total", (const char *[]){ "r", "a\"b\\c\nd",
	    "k", "v", NULL }, 3);
	prom_sample(&p, "x_total", NULL, 0);
	text = prom_finish(&p, &len);
	is_str(text, "# HELP x_total a \\\\ help\\nline\n"
	    "# TYPE x_total counter\n"
	    "x_total{r=\"a\\\"b\\\\c\\nd\",k=\"v\"} 3\nx_total 0\n",
	    "exposition text escaped");
	prom_release(&p);
}

/* jansson in an arena: values made inside, before and in a nested one. */
static void
test_jsonarena(void)
{
	struct jsonarena outer, inner;
	json_t *before, *in_outer, *in_inner, *big;
	char text[16];
	size_t n;
	int i;

	before = json_pack("{s:s}", "made", "before");
	ok(jsonarena_begin(&outer, 0) == 0, "an arena begins");
	in_outer = json_pack("{s:s, s:i}", "made", "in outer", "n", 1);
	big = json_array();
	for (i = 0; i < 20000; i++)	/* beyond the first chunk */
		json_array_append_new(big, json_integer(i));
	ok(json_array_size(big) == 20000, "an arena grows past its chunk");
	ok(jsonarena_begin(&inner, 0) == 0, "arenas nest");
	in_inner = json_loads("{\"made\": \"in inner\"}", 0, NULL);
	json_decref(before);		/* goes to the allocator that made it */
	json_decref(in_outer);		/* waits for the outer arena's end */
	ok(in_inner != NULL, "jansson parses in a nested arena");
	json_decref(in_inner);
	jsonarena_end(&inner);
	n = json_dumpb(big, text, sizeof(text), JSON_COMPACT);
	ok(n > 7 && strncmp(text, "[0,1,2,", 7) == 0,
	    "the outer arena's values outlive the inner arena");
	json_decref(big);
	jsonarena_end(&outer);
	before = json_pack("{s:s}", "made", "after");
	ok(before != NULL && strcmp(json_string_value(json_object_get(before,
	    "made")), "after") == 0, "jansson's own allocator is back after");
	json_decref(before);
}

/* A line longer than jsonl_write's stack buffer is written whole. */
static void
test_jsonl_write_long(void)
{
	char path[PATH_MAX * 2], buf[12000];
	json_t *obj = json_object();
	FILE *f;
	size_t n;

	memset(buf, 'x', 9000);
	buf[9000] = '\0';
	json_object_set_new(obj, "long", json_string(buf));
	snprintf(path, sizeof(path), "%s/long.jsonl", dir);
	f = fopen(path, "w+");
	ok(f != NULL && jsonl_write(f, obj) == 0, "a 9 KB line is written");
	if (f != NULL) {
		rewind(f);
		n = fread(buf, 1, sizeof(buf), f);
		ok(n == 9000 + 12 && strncmp(buf, "{\"long\":\"xxx", 11) == 0 &&
		    memcmp(buf + n - 4, "x\"}\n", 4) == 0,
		    "  whole, on one line");
		fclose(f);
	}
	unlink(path);
	json_decref(obj);
}

/* The error a failed call set survives the close of its descriptor, also
 * a close that fails itself (EBADF). */
static void
test_close_keep_errno(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	errno = ENOSPC;
	io_close_keep_errno(fd);
	ok(errno == ENOSPC, "io_close_keep_errno: errno kept (%d)", errno);
	ok(fcntl(fd, F_GETFD) == -1 && errno == EBADF,
	    "io_close_keep_errno: the descriptor is closed");
	errno = ENOSPC;
	io_close_keep_errno(-1);
	ok(errno == ENOSPC, "io_close_keep_errno: a failed close keeps it too");
}

int
main(void)
{
	tap_tmpdir(dir, sizeof(dir), "lib");
	test_timefmt();
	test_jsonl_reader();
	test_jsonl_parse();
	test_conf();
	test_endpoint();
	test_prom();
	test_jsonarena();
	test_jsonl_write_long();
	test_close_keep_errno();
	if (rmdir(dir) != 0)
		ok(0, "the temp dir is left empty and removed");
	return done_testing();
}
