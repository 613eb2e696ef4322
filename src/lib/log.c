/*
 * log.c - JSON log lines on stderr.
 *
 * Each record is built as a jansson object (ts, level, prog, msg, then the
 * context), dumped compactly and written with one write(2), so concurrent
 * writers sharing a pipe (runit's log service) never interleave records.
 * Records are kept under LOG_MAX bytes by truncating long strings.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <jansson.h>

#include "io.h"
#include "log.h"
#include "timefmt.h"

#define LOG_MAX 1000		/* bytes per record, newline included */
#define LOG_STR_MAX 400		/* longest context string kept whole */

static const char *prog_name = "vfsentinel";
static enum log_level min_level = LVL_INFO;
static bool to_syslog;		/* log_syslog(): warn and above, too */

static const char *const level_names[] = {
	[LVL_DEBUG] = "debug",
	[LVL_INFO] = "info",
	[LVL_WARN] = "warn",
	[LVL_ERROR] = "error",
};

void
log_init(const char *prog)
{
	prog_name = prog;
}

void
log_syslog(void)
{
	/* No LOG_CONS, no LOG_NDELAY: where no syslog socket exists,
	 * syslog(3) sends nothing and nothing fails. */
	openlog(prog_name, LOG_PID, LOG_DAEMON);
	to_syslog = true;
}

void
log_syslog_line(enum log_level level, const char *text)
{
	if (to_syslog && level >= LVL_WARN)
		syslog(level == LVL_WARN ? LOG_WARNING : LOG_ERR, "%s", text);
}

const char *
log_prog(void)
{
	return prog_name;
}

int
log_set_level_name(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(name, level_names[i]) == 0) {
			min_level = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

void
log_set_level(enum log_level level)
{
	min_level = level;
}

bool
log_enabled(enum log_level level)
{
	return level >= min_level;
}

/* Shortens a string value to limit bytes (on a UTF-8 boundary). Steals
 * v; returns a new reference. */
static json_t *
shorten(json_t *v, size_t limit)
{
	const char *s = json_string_value(v);
	size_t len = json_string_length(v);
	json_t *cut;

	if (s == NULL || len <= limit)
		return v;
	while (limit > 0 && ((unsigned char)s[limit] & 0xc0) == 0x80)
		limit--;
	cut = json_sprintf("%.*s...", (int)limit, s);
	json_decref(v);
	return cut;
}

static json_t *
build(enum log_level level, const char *msg, json_t *ctx, size_t strmax)
{
	char ts[TIMEFMT_MAX];
	struct timespec now;
	json_t *rec, *v;
	const char *key;

	timefmt_now(&now);
	if (timefmt_format(&now, ts, sizeof(ts)) < 0)
		strcpy(ts, "");
	rec = json_object();
	if (rec == NULL)
		return NULL;
	json_object_set_new(rec, "ts", json_string(ts));
	json_object_set_new(rec, "level", json_string(level_names[level]));
	json_object_set_new(rec, "prog", json_string(prog_name));
	json_object_set_new(rec, "msg", shorten(json_string(msg), strmax));
	json_object_foreach(ctx, key, v)
		json_object_set_new(rec, key, shorten(json_incref(v), strmax));
	return rec;
}

/* Dumps the record into buf with a newline; 0 if it fit in LOG_MAX. */
static int
render(enum log_level level, const char *msg, json_t *ctx, char *buf,
    size_t *len)
{
	size_t limits[] = { LOG_STR_MAX, 120, 40 };
	size_t i, n = 0;
	json_t *rec;

	for (i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		rec = build(level, msg, ctx, limits[i]);
		if (rec == NULL)
			return -1;
		n = json_dumpb(rec, buf, LOG_MAX - 1, JSON_COMPACT);
		json_decref(rec);
		if (n > 0 && n < LOG_MAX - 1)
			break;
	}
	if (n == 0 || n >= LOG_MAX - 1)
		return -1;
	buf[n++] = '\n';
	*len = n;
	return 0;
}

static void
vlog(enum log_level level, const char *msg, const char *fmt, va_list ap)
{
	char buf[LOG_MAX];
	json_error_t err;
	json_t *ctx = NULL;
	size_t len;
	int saved = errno;

	if (fmt != NULL)
		ctx = json_vpack_ex(&err, 0, fmt, ap);
	if (fmt != NULL && ctx == NULL)
		ctx = json_pack("{s:s}", "log_error", err.text);
	if (render(level, msg, ctx, buf, &len) < 0) {
		len = (size_t)snprintf(buf, sizeof(buf),
		    "{\"level\":\"%s\",\"prog\":\"%s\",\"msg\":"
		    "\"log record too large\"}\n", level_names[level],
		    prog_name);
		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
	}
	(void)io_write_all(STDERR_FILENO, buf, len);
	buf[len - 1] = '\0';		/* the newline, or a cut's last */
	log_syslog_line(level, buf);
	json_decref(ctx);
	errno = saved;
}

void
log_msg(enum log_level level, const char *msg, const char *fmt, ...)
{
	va_list ap;

	if (!log_enabled(level))
		return;
	va_start(ap, fmt);
	vlog(level, msg, fmt, ap);
	va_end(ap);
}

int
log_fail(int code, const char *msg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LVL_ERROR, msg, fmt, ap);
	va_end(ap);
	return code;
}

noreturn void
die(int code, const char *msg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LVL_ERROR, msg, fmt, ap);
	va_end(ap);
	exit(code);
}
