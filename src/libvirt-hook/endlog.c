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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"

#include "libvirt-hook.h"

#define ENDLOG_TAIL (256 * 1024)	/* the line is among the last ones */
#define ENDLOG_MARK "shutting down, reason="

/* The last part of the file at path, NUL-terminated (caller frees). */
static char *
read_tail(const char *path, size_t *len)
{
	struct stat st;
	char *buf = NULL;
	off_t from;
	ssize_t n;
	int fd;

	if ((fd = io_open_regular(path, O_RDONLY, 0)) < 0)
		return NULL;
	if (fstat(fd, &st) == 0) {
		from = st.st_size > ENDLOG_TAIL ? st.st_size - ENDLOG_TAIL : 0;
		buf = malloc(ENDLOG_TAIL + 1);
		n = buf != NULL ? pread(fd, buf, ENDLOG_TAIL, from) : -1;
		if (n < 0) {
			free(buf);
			buf = NULL;
		} else {
			buf[n] = '\0';
			*len = (size_t)n;
		}
	}
	close(fd);
	return buf;
}

int
endlog_reason(const char *log_dir, const char *name, char *word, size_t len)
{
	char path[PATH_MAX], *text, *at = NULL, *p;
	size_t n = 0, w;

	word[0] = '\0';
	if (strchr(name, '/') != NULL || name[0] == '\0' ||
	    io_pathf(path, sizeof(path), "%s/%s.log", log_dir, name) < 0 ||
	    (text = read_tail(path, &n)) == NULL)
		return -1;
	for (p = text; (p = strstr(p, ENDLOG_MARK)) != NULL; p++)
		at = p + strlen(ENDLOG_MARK);
	if (at != NULL) {
		w = strspn(at, "abcdefghijklmnopqrstuvwxyz_-");
		snprintf(word, len, "%.*s", (int)(w < 32 ? w : 32), at);
	}
	free(text);
	return at != NULL && word[0] != '\0' ? 0 : -1;
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
