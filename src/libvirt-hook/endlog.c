/*
 * endlog.c - how a domain ended, from libvirt's own log (SPEC.md 7.3):
 * libvirt writes "shutting down, reason=WORD" to LOG_DIR/NAME.log before
 * it runs the stopped and release hooks (also when virtlogd writes that
 * log); the hook's arguments and XML say nothing of why. Measured with
 * libvirt 9.0 and QEMU 7.2: a kill -9 and an OOM kill read "crashed",
 * virsh destroy "destroyed", a guest poweroff and virsh shutdown
 * "shutdown"; a libvirtd restart alone writes nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "safeopen.h"

#include "libvirt-hook.h"

#define ENDLOG_MARK ": shutting down, reason="

/* n digits at p. */
static bool
digits(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return false;
	return true;
}

/*
 * True when line (len bytes, no newline) is the whole end line as libvirt
 * writes it, "YYYY-MM-DD HH:MM:SS.mmm+0000: shutting down, reason=WORD"
 * (SPEC.md 8.2): a guest's console text quoted inside another line, or a
 * line with more after the word, is not it. word gets WORD.
 */
static bool
end_line(const char *line, size_t len, char *word, size_t wlen)
{
	static const char shape[] = "dddd-dd-dd dd:dd:dd.ddd+0000";
	size_t i, n = sizeof(shape) - 1, m = strlen(ENDLOG_MARK), w;

	if (len <= n + m)
		return false;
	for (i = 0; i < n; i++)
		if (shape[i] == 'd' ? !digits(line + i, 1) :
		    line[i] != shape[i])
			return false;
	if (memcmp(line + n, ENDLOG_MARK, m) != 0)
		return false;
	line += n + m;
	len -= n + m;
	w = strspn(line, "abcdefghijklmnopqrstuvwxyz_-");
	if (w != len || w >= wlen || w > 32)
		return false;
	memcpy(word, line, w);
	word[w] = '\0';
	return true;
}

int
endlog_reason(const char *log_dir, const char *name, size_t max, char *word,
    size_t len)
{
	char path[PATH_MAX], *text, *p, *nl, *end;
	unsigned long long from = 0;
	struct stat st;
	size_t n = 0;
	int fd, found = -1;

	word[0] = '\0';
	if (strchr(name, '/') != NULL || name[0] == '\0' ||
	    io_pathf(path, sizeof(path), "%s/%s.log", log_dir, name) < 0)
		return -1;
	/* LOG_DIR is root's, but the hook runs as root in every domain's
	 * release: the log is opened as any path a domain could name
	 * (SPEC.md 8.3), and only its last max bytes are read. */
	if ((fd = safeopen_regular(path, &st)) == -1)
		return -1;
	text = safeopen_read_tail(fd, &st, 0, max, &n, &from);
	close(fd);
	if (text == NULL)
		return -1;
	end = text + n;
	p = text;
	/* A tail that starts inside a line drops that line's rest. */
	if (from > 0 && (p = memchr(text, '\n', n)) != NULL)
		p++;
	for (; p != NULL && p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		if (end_line(p, (size_t)(nl - p), word, len))
			found = 0;
	}
	free(text);
	if (found == -1) {
		word[0] = '\0';
		errno = ENODATA;
	}
	return found;
}

const char *
endlog_ended(const char *word)
{
	static const char *const clean[] = { "shutdown", "saved",
	    "migrated", NULL };
	static const char *const unclean[] = { "destroyed", "crashed",
	    "failed", "daemon", NULL };
	size_t i;

	for (i = 0; clean[i] != NULL; i++)
		if (strcmp(word, clean[i]) == 0)
			return "clean";
	for (i = 0; unclean[i] != NULL; i++)
		if (strcmp(word, unclean[i]) == 0)
			return "unclean";
	return "unknown";
}
