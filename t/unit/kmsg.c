/*
 * kmsg.c - unit tests for the kmsg matcher and reader (TAP).
 *
 * The matcher is checked against every example line of the upstream
 * behaviour document (section 4 and test 3.A.1); the reader through its
 * read seam, fed the way the kernel feeds it: one record per read, EPIPE
 * after an overrun, EINVAL for a record larger than the buffer, then EOF.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kmsg-watch/kmsg.h"

static int ntest;
static int nfail;

static void
ok(int cond, const char *name)
{
	char clean[200];
	size_t i;

	for (i = 0; name[i] != '\0' && i < sizeof(clean) - 1; i++)
		clean[i] = name[i] == '\n' ? '|' : name[i];
	clean[i] = '\0';
	ntest++;
	if (!cond)
		nfail++;
	printf("%sok %d - %s\n", cond ? "" : "not ", ntest, clean);
}

static const char *const matching[] = {
	"3,1042,8462102,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed! "
	    "(0x22:0x65:884)",
	"4,1044,8462120,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed! "
	    "(0x22:0x65:884)",
	"3,1050,9000000,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed! "
	    "(0x26:0xffff:1482)",
	"3,1,2,-;NVRM: GPU 0000:e3:00.4: RmInitAdapter failed! (0x22:0x65:884)",
	"3,1,2,-;NVRM: RmInitAdapter failed! (0x30:0xffff:660)",
	"3,1,2,-;NVRM: RmInitAdapter failed! (0x30:0xffffffff:861)",
	"3,1,2,-;NVRM: GPU 0000:00:06.0: RmInitAdapter failed! (0x11:0x45:2540)",
	"3,1,2,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x23:0x3b:1206)",
	"3,1,2,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x61:0x56:1927)",
	"3,1,2,-;NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x25:0x65:1245)",
	"3,1,2,-;NVRM: RmInitAdapter failed!",
	"0,1,2,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed!",
	"7,1,2;NVRM: GPU 0000:00:03.0: RmInitAdapter failed!",
	"3,1,2,-,caller=T1;  NVRM: RmInitAdapter failed! (0x22:0x65:884)  \n",
	"3,5,6,-;NVRM: RmInitAdapter failed! (0x22:0x65:884)\n"
	    " SUBSYSTEM=pci\n DEVICE=+pci:0000:00:03.0\n",
};

static const char *const rejected[] = {
	"6,1041,8462100,-;NVRM: loading NVIDIA UNIX Open Kernel Module for "
	    "x86_64",
	"12,307,4250363151,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed! "
	    "(0x22:0x65:884)",
	"8,1,2,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed!",
	"9,1,2,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed!",
	"11,1,2,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed!",
	"24,1,2,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed!",
	"x,1,2,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed!",
	"3x,1,2,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed!",
	"-3,1,2,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed!",
	" 3,1,2,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed!",
	",1,2,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed!",
	"3,1;NVRM: GPU 0000:00:03.0: RmInitAdapter failed!",
	"3;NVRM: GPU 0000:00:03.0: RmInitAdapter failed!",
	"3,x,2,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed!",
	"3,1,,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed!",
	"99999999999,1,2,-;NVRM: RmInitAdapter failed!",
	"3,1,2,-;some tool: RmInitAdapter failed! (0x22:0x65:884)",
	"3,1,2,-;xNVRM: RmInitAdapter failed!",
	"NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)",
	"[   27.031415] NVRM: GPU 0000:e3:00.4: RmInitAdapter failed! "
	    "(0x22:0x65:884)",
	" SUBSYSTEM=pci",
	" 3,1,2,-;NVRM: RmInitAdapter failed!",
	"3,1,2,-;NVRM: GPU 0000:00:06.0: rm_init_adapter failed, device minor "
	    "number 0",
	"3,1,2,-;NVRM: rm_init_adapter(0) failed",
	"3,1,2,-;NVRM: failed to copy vbios to system memory.",
	"3,1,2,-;NVRM: Xid (PCI:0000:00:03): 79, GPU has fallen off the bus.",
	"3,1,2,-;[drm] RmInitAdapter failed!",
	"3,1,2,-;NVRM: RmInitAdapter failed",
	"3,1,2,-;NVRM: ok\n NVRM: RmInitAdapter failed!",
	"",
};

static void
test_matcher(void)
{
	struct kmsg_record rec;
	char name[160];
	size_t i;

	for (i = 0; i < sizeof(matching) / sizeof(matching[0]); i++) {
		snprintf(name, sizeof(name), "matches: %.120s", matching[i]);
		ok(kmsg_match(matching[i], strlen(matching[i]), &rec), name);
	}
	for (i = 0; i < sizeof(rejected) / sizeof(rejected[0]); i++) {
		snprintf(name, sizeof(name), "rejects: %.120s", rejected[i]);
		ok(!kmsg_match(rejected[i], strlen(rejected[i]), &rec), name);
	}
}

static void
test_fields(void)
{
	static const char line[] = "4,1044,8462120,-,caller=T7;  NVRM: GPU "
	    "0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884) \n"
	    " SUBSYSTEM=pci\n";
	static const char want[] = "NVRM: GPU 0000:00:03.0: RmInitAdapter "
	    "failed! (0x22:0x65:884)";
	struct kmsg_record rec;

	ok(kmsg_match(line, sizeof(line) - 1, &rec), "fields: matches");
	ok(rec.prio == 4 && rec.seq == 1044 && rec.ts_usec == 8462120,
	    "fields: prio, seq and ts_usec parsed");
	ok(rec.msglen == sizeof(want) - 1 &&
	    memcmp(rec.msg, want, rec.msglen) == 0,
	    "fields: message trimmed, ends at the first newline");
	ok(kmsg_parse("6,77,88,-;hello", 15, &rec) == 0 && rec.seq == 77,
	    "parse: a non-matching record still yields its seq");
}

/* A scripted read seam: each step is a record or an errno. */
struct step {
	const char *data;	/* NULL: fail with err */
	int err;
	size_t repeat;		/* data repeated to this length (0: as is) */
};

struct script {
	const struct step *steps;
	size_t n, at;
	int matches;
	unsigned long long last_seq;
	int overrun_notes;
	unsigned long long lost;
	int overlong_notes;
	char *big;
};

static ssize_t
script_read(void *ctx, void *buf, size_t len)
{
	struct script *s = ctx;
	const struct step *st;
	size_t n;

	if (s->at == s->n)
		return 0;
	st = &s->steps[s->at++];
	if (st->data == NULL) {
		errno = st->err;
		return -1;
	}
	n = st->repeat ? st->repeat : strlen(st->data);
	if (n > len) {
		errno = EINVAL;		/* what the kernel does */
		return -1;
	}
	if (st->repeat) {
		memset(buf, 'a', n);
		memcpy(buf, st->data, strlen(st->data));
		((char *)buf)[n - 1] = '\n';
	} else
		memcpy(buf, st->data, n);
	return (ssize_t)n;
}

static int
script_emit(void *ctx, const struct kmsg_record *rec)
{
	struct script *s = ctx;

	s->matches++;
	s->last_seq = rec->seq;
	return 0;
}

static void
script_note(void *ctx, enum kmsg_note what, unsigned long long n)
{
	struct script *s = ctx;

	if (what == KMSG_NOTE_OVERRUN) {
		s->overrun_notes++;
		s->lost += n;
	} else
		s->overlong_notes++;
}

/* Runs the script through a record-mode reader; returns the last step
 * result and errno in *err. */
static int
run_records(struct script *s, const struct step *steps, size_t n, int *err)
{
	struct kmsg_reader r = { 0 };
	int rc;

	memset(s, 0, sizeof(*s));
	s->steps = steps;
	s->n = n;
	r.read = script_read;
	r.emit = script_emit;
	r.note = script_note;
	r.ctx = s;
	if (kmsg_reader_init(&r, false) < 0)
		return -2;
	while ((rc = kmsg_step(&r)) > 0)
		;
	*err = errno;
	kmsg_reader_release(&r);
	return rc;
}


static void
test_reader_records(void)
{
	static const struct step each[] = {
		{ "6,1,10,-;NVRM: loading\n", 0, 0 },
		{ "3,2,11,-;NVRM: RmInitAdapter failed! (0x22:0x65:884)\n", 0, 0 },
		{ "12,3,12,-;NVRM: RmInitAdapter failed!\n", 0, 0 },
		{ "4,4,13,-;NVRM: RmInitAdapter failed!\n SUBSYSTEM=pci\n", 0, 0 },
		{ "5,5,14,-;unrelated\n", 0, 0 },
	};
	static const struct step overrun[] = {
		{ "6,10,10,-;NVRM: loading\n", 0, 0 },
		{ NULL, EPIPE, 0 },
		{ "3,15,11,-;NVRM: RmInitAdapter failed!\n", 0, 0 },
	};
	static const struct step big[] = {
		{ "6,1,1,-;", 0, 5000 },
		{ "3,2,2,-;NVRM: RmInitAdapter failed!\n", 0, 0 },
		{ "6,3,3,-;", 0, KMSG_RECORD_MAX + 1 },
		{ "3,4,4,-;NVRM: RmInitAdapter failed!\n", 0, 0 },
	};
	struct script s;
	int rc, err;

	rc = run_records(&s, each, 5, &err);
	ok(rc == 0 && s.matches == 2, "reader: one record per read, "
	    "two failure records among others give two reports, then EOF");
	rc = run_records(&s, overrun, 3, &err);
	ok(rc == 0 && s.matches == 1 && s.last_seq == 15,
	    "reader: EPIPE is not an error, the next failure is reported");
	ok(s.overrun_notes == 1 && s.lost == 4,
	    "reader: records lost in the overrun counted from the seq gap");
	rc = run_records(&s, big, 4, &err);
	ok(s.matches == 1, "reader: a 5000-byte record, then a failure: "
	    "one report");
	ok(rc == -1 && err == EINVAL && s.at == 3,
	    "reader: a record over the buffer ends the scan with EINVAL");
}

/* Stream mode: feeds the text in chunks of chunk bytes. */
struct chunks {
	const char *text;
	size_t len, off, chunk;
	int matches;
	int overlong;
};

static ssize_t
chunk_read(void *ctx, void *buf, size_t len)
{
	struct chunks *c = ctx;
	size_t n = c->len - c->off;

	if (n > c->chunk)
		n = c->chunk;
	if (n > len)
		n = len;
	memcpy(buf, c->text + c->off, n);
	c->off += n;
	return (ssize_t)n;
}

static int
chunk_emit(void *ctx, const struct kmsg_record *rec)
{
	(void)rec;
	((struct chunks *)ctx)->matches++;
	return 0;
}

static void
chunk_note(void *ctx, enum kmsg_note what, unsigned long long n)
{
	(void)n;
	if (what == KMSG_NOTE_OVERLONG)
		((struct chunks *)ctx)->overlong++;
}

static int
run_stream(struct chunks *c)
{
	struct kmsg_reader r = { 0 };
	int rc;

	r.read = chunk_read;
	r.emit = chunk_emit;
	r.note = chunk_note;
	r.ctx = c;
	if (kmsg_reader_init(&r, true) < 0)
		return -2;
	while ((rc = kmsg_step(&r)) > 0)
		;
	kmsg_reader_release(&r);
	return rc;
}

/* Builds: N blocks of (unrelated, failure, '!' noise, failure among
 * '!'s, userspace forgery), an
 * over-long line holding the needle, and a last line without newline. */
static char *
stream_text(size_t nblocks, size_t *len)
{
	static const char block[] = "6,1,1,-;NVRM: loading\n"
	    "3,2,2,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (1)\n"
	    " SUBSYSTEM=pci\n"
	    "6,3,3,-;wow! such! bang!!\n"
	    "4,3,3,-;NVRM: !! RmInitAdapter failed!!! (x)\n"
	    "12,3,3,-;NVRM: RmInitAdapter failed!\n";
	static const char tail[] = "\n3,9,9,-;NVRM: RmInitAdapter failed!";
	size_t bl = sizeof(block) - 1, longlen = 3 * KMSG_STREAM_BUF, i;
	char *t, *p;

	t = malloc(nblocks * bl + longlen + sizeof(tail));
	if (t == NULL)
		return NULL;
	for (p = t, i = 0; i < nblocks; i++, p += bl)
		memcpy(p, block, bl);
	memcpy(p, "3,4,4,-;NVRM: RmInitAdapter failed! ", 36);
	memset(p + 36, 'x', longlen - 36);
	p += longlen;
	memcpy(p, tail, sizeof(tail));
	*len = (size_t)(p - t) + sizeof(tail) - 1;
	return t;
}

static void
test_reader_stream(void)
{
	static const size_t chunks[] = { 1, 7, 100, 4096, 1 << 20 };
	struct chunks c;
	char name[96];
	size_t i, len;
	char *text;

	text = stream_text(3000, &len);
	if (text == NULL) {
		ok(0, "stream: allocate");
		return;
	}
	for (i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		memset(&c, 0, sizeof(c));
		c.text = text;
		c.len = len;
		c.chunk = chunks[i];
		snprintf(name, sizeof(name), "stream: %zu-byte reads: 6001 "
		    "reports, over-long line skipped", chunks[i]);
		ok(run_stream(&c) == 0 && c.matches == 6001 &&
		    c.overlong == 1, name);
	}
	free(text);
}

int
main(void)
{
	test_matcher();
	test_fields();
	test_reader_records();
	test_reader_stream();
	printf("1..%d\n", ntest);
	return nfail != 0;
}
