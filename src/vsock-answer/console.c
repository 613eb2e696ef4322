/*
 * console.c - vsock-answer --console: the serial-console markers
 * (HYPEMAN-GPU-INIT-OK/FAILED, three identical lines each), queued in a
 * bounded buffer and written without blocking, so a slow console never
 * stalls the poll loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "timefmt.h"
#include "vsock-answer.h"

#define CONSOLE_MAX (256 * 1024)	/* console bytes waiting */

/* Writes what the console buffer holds, as far as the console takes it. */
void
console_flush(struct answer *a)
{
	ssize_t n;

	while (a->con_len > 0) {
		n = write(a->console_fd, a->con_buf, a->con_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) {
			log_msg(LVL_ERROR, "write console failed; marker lost",
			    "{s:s, s:s}", "file", a->console_path, "error",
			    strerror(errno));
			a->con_len = 0;
			return;
		}
		memmove(a->con_buf, a->con_buf + n, a->con_len - (size_t)n);
		a->con_len -= (size_t)n;
	}
}

/* Queues three identical marker lines, then tries to write them. */
void
console_marker(struct answer *a, bool failed)
{
	size_t cap = 128 + 4 * (a->message != NULL ? strlen(a->message) : 0);
	struct timespec now;
	char *grown;
	int n, i;

	grown = a->con_len + 3 * cap <= CONSOLE_MAX ?
	    realloc(a->con_buf, a->con_len + 3 * cap) : NULL;
	if (grown == NULL) {
		log_msg(LVL_WARN, "console backlog full; marker dropped", NULL);
		return;
	}
	a->con_buf = grown;
	timefmt_now(&now);
	n = guestproto_marker_format(failed, &now, a->message, a->con_buf +
	    a->con_len, cap);
	if (n < 0)
		return;
	for (i = 1; i < 3; i++)
		memcpy(a->con_buf + a->con_len + (size_t)i * (size_t)n,
		    a->con_buf + a->con_len, (size_t)n);
	a->con_len += 3 * (size_t)n;
	console_flush(a);
}

int
console_open(struct answer *a)
{
	if (a->console_path == NULL)
		return 0;
	a->console_fd = open(a->console_path, O_WRONLY | O_APPEND | O_CREAT |
	    O_NOCTTY | O_NONBLOCK | O_CLOEXEC, 0644);
	if (a->console_fd < 0)
		return log_fail(EX_IOERR, "cannot open console", "{s:s, s:s}",
		    "file", a->console_path, "error", strerror(errno));
	return 0;
}
