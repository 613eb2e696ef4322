/*
 * prom.c - Prometheus text exposition for node_exporter's textfile
 * collector, which rejects a whole file for one bad line: so no
 * timestamps, HELP/TYPE once per family, escaped label values and HELP
 * text, and a final newline.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "prom.h"

void
prom_init(struct prom *p)
{
	memset(p, 0, sizeof(*p));
}

void
prom_release(struct prom *p)
{
	free(p->buf);
	memset(p, 0, sizeof(*p));
}

static int
reserve(struct prom *p, size_t more)
{
	size_t cap = p->cap ? p->cap : 1024;
	char *n;

	if (p->failed)
		return -1;
	while (cap < p->len + more + 1)
		cap *= 2;
	if (cap == p->cap)
		return 0;
	n = realloc(p->buf, cap);
	if (n == NULL) {
		p->failed = 1;
		return -1;
	}
	p->buf = n;
	p->cap = cap;
	return 0;
}

static void
append(struct prom *p, const char *s, size_t n)
{
	if (reserve(p, n) < 0)
		return;
	memcpy(p->buf + p->len, s, n);
	p->len += n;
	p->buf[p->len] = '\0';
}

static void
puts_p(struct prom *p, const char *s)
{
	append(p, s, strlen(s));
}

/* Appends s with \\, \n and (in label values) \" escaped. */
static void
escaped(struct prom *p, const char *s, int quote)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			puts_p(p, "\\\\");
		else if (*s == '\n')
			puts_p(p, "\\n");
		else if (*s == '"' && quote)
			puts_p(p, "\\\"");
		else
			append(p, s, 1);
	}
}

void
prom_family(struct prom *p, const char *name, const char *type,
    const char *help)
{
	puts_p(p, "# HELP ");
	puts_p(p, name);
	puts_p(p, " ");
	escaped(p, help, 0);
	puts_p(p, "\n# TYPE ");
	puts_p(p, name);
	puts_p(p, " ");
	puts_p(p, type);
	puts_p(p, "\n");
}

void
prom_sample(struct prom *p, const char *name, const char **labels,
    double value)
{
	char num[64];
	size_t i;

	puts_p(p, name);
	for (i = 0; labels != NULL && labels[i] != NULL; i += 2) {
		puts_p(p, i == 0 ? "{" : ",");
		puts_p(p, labels[i]);
		puts_p(p, "=\"");
		escaped(p, labels[i + 1], 1);
		puts_p(p, "\"");
	}
	if (labels != NULL && labels[0] != NULL)
		puts_p(p, "}");
	snprintf(num, sizeof(num), " %.17g\n", value);
	puts_p(p, num);
}

const char *
prom_finish(struct prom *p, size_t *len)
{
	if (p->failed) {
		errno = ENOMEM;
		return NULL;
	}
	if (p->buf == NULL)
		puts_p(p, "");
	if (p->failed) {
		errno = ENOMEM;
		return NULL;
	}
	*len = p->len;
	return p->buf;
}

int
prom_write_textfile(const char *path, const char *text, size_t len)
{
	char tmp[PATH_MAX];
	int fd, rc = -1, saved;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
	    0644);
	if (fd < 0)
		return -1;
	if (fchmod(fd, 0644) == 0 && io_write_all(fd, text, len) == 0)
		rc = 0;
	if (close(fd) < 0)
		rc = -1;
	if (rc == 0 && rename(tmp, path) == 0)
		return 0;
	saved = errno;
	unlink(tmp);
	errno = saved;
	return -1;
}
