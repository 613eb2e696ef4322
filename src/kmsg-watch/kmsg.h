/*
 * kmsg.h - kernel log record matching and reading (SPEC.md 3.1).
 *
 * A /dev/kmsg record is "PRIO,SEQ,TS_USEC,FLAGS[,...];MESSAGE\n" followed
 * by continuation lines that start with a space. The character device
 * returns exactly one record per read(2) and fails with EINVAL when the
 * buffer is smaller than the record, and with EPIPE when records were
 * overwritten before they were read. A regular file or FIFO (tests,
 * recordings) holds one record per line instead.
 *
 * The reader never prints: matches go to the emit callback, overruns and
 * over-long lines to the note callback.
 */
#ifndef VFS_KMSG_H
#define VFS_KMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define KMSG_RECORD_MAX 8192	/* the kernel's CONSOLE_EXT_LOG_MAX */
#define KMSG_STREAM_BUF 65536	/* block size for files and FIFOs */
#define KMSG_NEEDLE "RmInitAdapter failed!"
#define KMSG_PREFIX "NVRM:"

struct kmsg_record {
	unsigned prio;		/* facility * 8 + level */
	uint64_t seq;
	uint64_t ts_usec;
	const char *msg;	/* borrowed from the input: trimmed message */
	size_t msglen;		/* not NUL-terminated */
};

/*
 * Parses the header of one record (or line) of len bytes. Fills rec and
 * returns 0 when there is a ';' after at least three comma-separated
 * fields and PRIO, SEQ and TS_USEC are all decimal digits; -1 otherwise.
 * The message ends at the first '\n' and is trimmed of white space.
 */
int kmsg_parse(const char *buf, size_t len, struct kmsg_record *rec);

/*
 * True when the record is a kernel-facility record (PRIO >> 3 == 0) whose
 * trimmed message starts with "NVRM:" and contains "RmInitAdapter
 * failed!". rec is filled whenever the header parses.
 */
bool kmsg_match(const char *buf, size_t len, struct kmsg_record *rec);

enum kmsg_note {
	KMSG_NOTE_OVERRUN,	/* n records lost (0: count unknown) */
	KMSG_NOTE_OVERLONG	/* a line over KMSG_RECORD_MAX was skipped */
};

struct kmsg_stats {
	unsigned long long matched;
	unsigned long long overruns;	/* EPIPE reads */
	unsigned long long lost;	/* records counted from seq gaps */
	unsigned long long overlong;	/* lines skipped (stream mode) */
};

/*
 * The reader. The caller sets read (the seam: read(2) on the device in
 * the program, a script in unit tests; -1 with errno, EPIPE for an
 * overrun), emit (0, or -1 with errno to stop the scan), note (may be
 * NULL) and ctx, all before kmsg_reader_init.
 */
struct kmsg_reader {
	ssize_t (*read)(void *ctx, void *buf, size_t len);
	int (*emit)(void *ctx, const struct kmsg_record *rec);
	void (*note)(void *ctx, enum kmsg_note what, unsigned long long n);
	void *ctx;
	bool lines;		/* a byte stream of lines, not records */
	struct kmsg_stats stats;
	/* private */
	char *buf;
	size_t cap;
	size_t len;
	bool skipping;		/* inside an over-long line */
	bool overrun;		/* EPIPE seen, gap not yet counted */
	bool seq_known;
	uint64_t next_seq;
};

/* Allocates the buffer: KMSG_RECORD_MAX bytes for records, or
 * KMSG_STREAM_BUF for lines. 0 or -1/ENOMEM. */
int kmsg_reader_init(struct kmsg_reader *r, bool lines);
void kmsg_reader_release(struct kmsg_reader *r);

/* Forgets the sequence (after a reopen, where a gap is expected). */
void kmsg_reader_reset(struct kmsg_reader *r);

/*
 * Does one read and handles what it returned. Returns 1 after progress
 * (including an EPIPE overrun, which is not an error), 0 at end of input,
 * or -1 with errno: the read's error (EINVAL: a record over the buffer),
 * or the emit callback's.
 */
int kmsg_step(struct kmsg_reader *r);

#endif
