/*
 * logtail.c - console-log marker tailing (upstream V2 rules), and the
 * per-instance tails that read the logs.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "logtail.h"
#include "safeopen.h"

void
logtail_init(struct logtail *t)
{
	memset(t, 0, sizeof(*t));
	t->last = GUEST_MARKER_NONE;
}

void
logtail_release(struct logtail *t)
{
	free(t->nvrm);
	t->nvrm = NULL;
	free(t->kernel);
	t->kernel = NULL;
}

void
logtail_pass_begin(struct logtail *t)
{
	t->last = GUEST_MARKER_NONE;
	logtail_release(t);
}

void
logtail_restart(struct logtail *t)
{
	t->offset = 0;
	t->skipping = false;
}

static int
hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Undoes the marker escapes of guestproto_marker_format(): "\\" and "\xNN".
 * Anything else is kept as written. New string, NULL/ENOMEM.
 */
static char *
unescape(const char *s, size_t len)
{
	char *out;
	size_t i, o = 0;
	int hi, lo;

	if ((out = malloc(len + 1)) == NULL)
		return NULL;
	for (i = 0; i < len; i++) {
		if (s[i] == '\\' && i + 1 < len && s[i + 1] == '\\') {
			out[o++] = s[++i];
			continue;
		}
		if (s[i] == '\\' && i + 3 < len && s[i + 1] == 'x' &&
		    (hi = hex_value(s[i + 2])) >= 0 &&
		    (lo = hex_value(s[i + 3])) >= 0) {
			out[o++] = (char)(hi << 4 | lo);
			i += 3;
			continue;
		}
		out[o++] = s[i];
	}
	out[o] = '\0';
	return out;
}

/* Keeps the guest kernel's line (without its time prefix). 0, -1/ENOMEM. */
static int
take_kernel(struct logtail *t, const char *text, size_t len)
{
	char *copy = strndup(text, len);

	if (copy == NULL)
		return -1;
	free(t->kernel);
	t->kernel = copy;
	return 0;
}

/* Records the marker or kernel line of one whole line, if it is one. 0
 * or -1/ENOMEM. */
static int
take_line(struct logtail *t, const char *line, size_t len)
{
	const char *nvrm = NULL;
	size_t nlen = 0;
	enum guest_marker m;
	char *copy = NULL;

	if (guestproto_kernel_line_match(line, len, &nvrm, &nlen))
		return take_kernel(t, nvrm, nlen);
	m = guestproto_marker_match(line, len, &nvrm, &nlen);
	if (m == GUEST_MARKER_NONE)
		return 0;
	if (m == GUEST_MARKER_FAILED && (copy = unescape(nvrm, nlen)) == NULL)
		return -1;
	free(t->nvrm);
	t->nvrm = copy;
	t->last = m;
	return 0;
}

ssize_t
logtail_feed(struct logtail *t, const char *buf, size_t len)
{
	size_t pos = 0, n;
	const char *nl;

	while (pos < len) {
		nl = memchr(buf + pos, '\n', len - pos);
		if (nl == NULL) {
			if (!t->skipping && len - pos <= LOGTAIL_LINE_MAX)
				break;
			/* Over-long: drop it and everything up to its
			 * newline, in this call or a later one. */
			t->skipping = true;
			pos = len;
			break;
		}
		n = (size_t)(nl - (buf + pos));
		if (t->skipping)
			t->skipping = false;
		else if (n <= LOGTAIL_LINE_MAX &&
		    take_line(t, buf + pos, n) == -1)
			return -1;
		pos += n + 1;
	}
	t->offset += pos;
	return (ssize_t)pos;
}

/* --- the tails of every instance ---------------------------------------- */

int
logtails_init(struct logtails *ts)
{
	memset(ts, 0, sizeof(*ts));
	ts->buf = malloc(LOGTAIL_LINE_MAX + 1);
	return ts->buf == NULL ? -1 : 0;
}

static void
file_release(struct logtail_file *f)
{
	free(f->instance_id);
	free(f->vf);
	free(f->claimed_at);
	logtail_release(&f->lt);
}

void
logtails_release(struct logtails *ts)
{
	size_t i;

	for (i = 0; i < ts->n; i++)
		file_release(&ts->v[i]);
	free(ts->v);
	free(ts->buf);
	memset(ts, 0, sizeof(*ts));
}

/* Removes the tail at i (the last one takes its place). */
static void
file_remove(struct logtails *ts, size_t i)
{
	file_release(&ts->v[i]);
	ts->v[i] = ts->v[--ts->n];
}

/* Fills the tail at i for a new assignment; on ENOMEM it is removed. */
static struct logtail_file *
file_fill(struct logtails *ts, size_t i, const char *instance_id,
    const char *vf, const char *claimed_at)
{
	struct logtail_file *f = &ts->v[i];

	memset(f, 0, sizeof(*f));
	logtail_init(&f->lt);
	f->seen = true;
	f->fresh = true;
	f->instance_id = strdup(instance_id);
	f->vf = strdup(vf);
	f->claimed_at = strdup(claimed_at);
	if (f->instance_id && f->vf && f->claimed_at)
		return f;
	file_remove(ts, i);
	errno = ENOMEM;
	return NULL;
}

struct logtail_file *
logtails_get(struct logtails *ts, const char *instance_id, const char *vf,
    const char *claimed_at)
{
	struct logtail_file *f;
	size_t i;

	for (i = 0; i < ts->n; i++) {
		f = &ts->v[i];
		if (strcmp(f->instance_id, instance_id) != 0)
			continue;
		if (strcmp(f->vf, vf) == 0 &&
		    strcmp(f->claimed_at, claimed_at) == 0) {
			f->seen = true;
			return f;
		}
		file_release(f);
		return file_fill(ts, i, instance_id, vf, claimed_at);
	}
	if ((f = reallocarray(ts->v, ts->n + 1, sizeof(*f))) == NULL)
		return NULL;
	ts->v = f;
	ts->n++;
	return file_fill(ts, ts->n - 1, instance_id, vf, claimed_at);
}

void
logtails_sweep(struct logtails *ts)
{
	size_t i = 0;

	while (i < ts->n) {
		if (ts->v[i].seen)
			ts->v[i++].seen = false;
		else
			file_remove(ts, i);
	}
}

static bool
stopped(const struct logtail_io *io)
{
	return io->stop != NULL && io->stop(io->arg);
}

/* What one pass may still read, and whether the bound cut it. */
struct budget {
	unsigned long long left;
	bool cut;
};

/*
 * Feeds fd from f's offset to its end or the end of b; a partial last
 * line waits (it is read again by the next pass). 0, or -1/ENOMEM; a
 * read error is passed to io->report.
 */
static int
file_read(struct logtails *ts, struct logtail_file *f, int fd,
    const char *path, const struct logtail_io *io, struct budget *b)
{
	size_t have = 0, want;
	ssize_t n = 0, used;

	for (;;) {
		if (stopped(io))
			break;
		want = LOGTAIL_LINE_MAX + 1 - have;
		if (want > b->left)
			want = (size_t)b->left;
		if (want == 0) {
			b->cut = true;
			break;
		}
		n = pread(fd, ts->buf + have, want,
		    (off_t)(f->lt.offset + have));
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		b->left -= (unsigned long long)n;
		have += (size_t)n;
		if ((used = logtail_feed(&f->lt, ts->buf, have)) == -1)
			return -1;
		memmove(ts->buf, ts->buf + used, have - (size_t)used);
		have -= (size_t)used;
	}
	if (n == -1 && io->report != NULL)
		io->report(io->arg, path, LOGTAIL_READ, errno);
	return 0;
}

/*
 * Opens path for reading if it is a regular file, without blocking; -1
 * with errno, or EINVAL for any other kind of file. Merely opening some
 * devices acts (a watchdog arms, a tape rewinds), and a domain's author
 * chooses the path: it is resolved to an O_PATH descriptor and checked
 * before it is opened (safeopen.h). st gets its status.
 */
static int
open_regular(const struct logtail_io *io, const char *path, struct stat *st)
{
	int fd;

	fd = io->open != NULL ? io->open(io->arg, path, st) :
	    safeopen_file(AT_FDCWD, path, SAFEOPEN_FOLLOW, st);
	if (fd == -1 && errno == IO_ENOTREG)
		errno = EINVAL;
	return fd;
}

/*
 * The rotated file that holds the rest of the log f was reading: the one
 * of PATH.0 (virtlogd) and PATH.1 (logrotate) with f's inode, else, for a
 * log truncated in place (copytruncate), PATH.1. A descriptor, or -1.
 */
static int
open_rotated(const struct logtail_file *f, const char *path, bool same,
    const struct logtail_io *io)
{
	static const char *const suffix[] = { ".0", ".1" };
	char old[PATH_MAX];
	struct stat st;
	size_t i;
	int fd, n;

	for (i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++) {
		n = snprintf(old, sizeof(old), "%s%s", path, suffix[i]);
		if (n < 0 || (size_t)n >= sizeof(old) ||
		    (fd = open_regular(io, old, &st)) == -1)
			continue;
		if ((f->ino != 0 && st.st_ino == f->ino) || (same && i == 1))
			return fd;
		close(fd);
	}
	return -1;
}

/*
 * The log was rotated (same: truncated in place): finish the old file's
 * rest from the old offset, then restart at 0 of the new one. *done is
 * false when the bound or a stop cut the rest: the next pass finishes
 * it first. 0 or -1/ENOMEM.
 */
static int
file_rotated(struct logtails *ts, struct logtail_file *f, const char *path,
    bool same, const struct logtail_io *io, struct budget *b, bool *done)
{
	int fd, rc = 0;

	if ((fd = open_rotated(f, path, same, io)) != -1) {
		rc = file_read(ts, f, fd, path, io, b);
		close(fd);
	}
	*done = rc == 0 && !b->cut && !stopped(io);
	if (*done)
		logtail_restart(&f->lt);
	return rc;
}

void
logtails_start(struct logtail_file *f, unsigned long long ino,
    unsigned long long offset)
{
	if (!f->fresh || ino == 0)
		return;
	f->ino = (ino_t)ino;
	f->lt.offset = offset;
}

int
logtails_pass(struct logtails *ts, struct logtail_file *f, const char *path,
    const struct logtail_io *io)
{
	struct budget b = { .left = io->max };
	struct stat st;
	bool same, done = true;
	int fd, rc = 0;

	if (b.left < LOGTAIL_LINE_MAX + 1)
		b.left = LOGTAIL_LINE_MAX + 1;
	f->fresh = false;
	logtail_pass_begin(&f->lt);
	if ((fd = open_regular(io, path, &st)) == -1) {
		if (io->report != NULL)
			io->report(io->arg, path, errno == EINVAL ?
			    LOGTAIL_NOT_REGULAR : LOGTAIL_OPEN,
			    errno == EINVAL ? 0 : errno);
		return 0;
	}
	same = f->ino == 0 || st.st_ino == f->ino;
	if ((unsigned long long)st.st_size < f->lt.offset || !same)
		rc = file_rotated(ts, f, path, same, io, &b, &done);
	if (rc == 0 && done) {
		f->ino = st.st_ino;
		rc = file_read(ts, f, fd, path, io, &b);
	}
	close(fd);
	if (rc == -1)
		errno = ENOMEM;
	return rc;
}
