/*
 * guestproto.c - request/reply lines of GetGPUInitStatus and the V2
 * console markers. The marker matcher is hand-written rather than built
 * on regex(3): POSIX EREs have no \S or \d, and a line may hold bytes
 * (NUL, invalid UTF-8) that RE2 matches but regexec cannot see.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>

#include "guestproto.h"
#include "jsonl.h"
#include "timefmt.h"

static const char *const state_names[] = {
	[GUEST_UNKNOWN] = "UNKNOWN",
	[GUEST_OK] = "OK",
	[GUEST_FAILED] = "FAILED"
};

const char *
guestproto_state_name(enum guest_state st)
{
	if ((unsigned)st > GUEST_FAILED)
		return "UNKNOWN";
	return state_names[st];
}

int
guestproto_state_parse(const char *s, enum guest_state *st)
{
	unsigned i;

	for (i = 0; i <= GUEST_FAILED; i++) {
		if (strcmp(s, state_names[i]) == 0) {
			*st = (enum guest_state)i;
			return 0;
		}
	}
	errno = EINVAL;
	return -1;
}

int
guestproto_request_parse(const char *line, size_t len,
    enum guest_method *method)
{
	const char *why, *name;
	json_t *obj;
	int rc = -1;

	if (len > GUEST_REQUEST_MAX)
		goto out_inval;
	obj = jsonl_parse(line, len, &why);
	if (obj == NULL)
		goto out_inval;
	name = jsonl_str(obj, "method");
	if (name != NULL) {
		*method = strcmp(name, GUEST_METHOD_STATUS_NAME) == 0 ?
		    GUEST_METHOD_STATUS : GUEST_METHOD_UNSUPPORTED;
		rc = 0;
	}
	json_decref(obj);
	if (rc == 0)
		return 0;
out_inval:
	errno = EINVAL;
	return -1;
}

/* Dumps obj compactly plus '\n' and NUL into buf; steals obj. */
static int
dump_line(json_t *obj, char *buf, size_t len)
{
	size_t n;

	if (obj == NULL) {
		errno = EINVAL;
		return -1;
	}
	n = json_dumpb(obj, buf, len, JSON_COMPACT);
	json_decref(obj);
	if (n == 0 || n + 2 > len) {
		errno = ENOSPC;
		return -1;
	}
	buf[n] = '\n';
	buf[n + 1] = '\0';
	return (int)n + 1;
}

int
guestproto_reply_format(enum guest_state st, const char *msg, char *buf,
    size_t len)
{
	json_t *obj;

	if (st == GUEST_FAILED)
		obj = json_pack("{s:s, s:s}", "state", "FAILED",
		    "failure_message", msg != NULL ? msg : "");
	else
		obj = json_pack("{s:s}", "state", guestproto_state_name(st));
	return dump_line(obj, buf, len);
}

int
guestproto_error_format(const char *why, char *buf, size_t len)
{
	return dump_line(json_pack("{s:s}", "error", why), buf, len);
}

/* Sets r to an error with a formatted reason; returns -1. */
static int
reply_error(struct guest_reply *r, const char *what, const char *detail)
{
	r->kind = GUEST_REPLY_ERROR;
	r->state = GUEST_UNKNOWN;
	(void)snprintf(r->message, sizeof(r->message), "%s%s", what, detail);
	return -1;
}

/* Fills r from a {"state":...} object. */
static int
reply_state(const json_t *obj, const char *state, struct guest_reply *r)
{
	const json_t *m = json_object_get(obj, "failure_message");
	const char *msg = "";

	if (guestproto_state_parse(state, &r->state) == -1)
		return reply_error(r, "bad reply: unknown state ", state);
	if (m != NULL && !json_is_string(m))
		return reply_error(r, "bad reply: failure_message not a string",
		    "");
	if (m != NULL && r->state == GUEST_FAILED)
		msg = json_string_value(m);
	if (strlen(msg) > GUEST_MESSAGE_MAX)
		return reply_error(r, "bad reply: failure_message too long",
		    "");
	r->kind = GUEST_REPLY_STATE;
	memcpy(r->message, msg, strlen(msg) + 1);
	return 0;
}

/* Fills r from an object: a state, or an error the guest sent. */
static int
reply_object(const json_t *obj, struct guest_reply *r)
{
	const char *state = jsonl_str(obj, "state");
	const char *err = jsonl_str(obj, "error");

	if (state != NULL)
		return reply_state(obj, state, r);
	if (err != NULL && strcmp(err, GUEST_ERR_UNSUPPORTED) == 0) {
		r->kind = GUEST_REPLY_UNSUPPORTED;
		r->state = GUEST_UNKNOWN;
		r->message[0] = '\0';
		return 0;
	}
	if (err != NULL)
		return reply_error(r, "guest error: ", err);
	return reply_error(r, "bad reply: no state", "");
}

int
guestproto_reply_parse(const char *line, size_t len, struct guest_reply *r)
{
	const char *why;
	json_t *obj;
	int rc;

	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (len > GUEST_REPLY_MAX)
		return reply_error(r, "bad reply: too long", "");
	obj = jsonl_parse(line, len, &why);
	if (obj == NULL)
		return reply_error(r, "bad reply: ", why);
	rc = reply_object(obj, r);
	json_decref(obj);
	return rc;
}

/* Appends the escaped message to buf at *pos; -1 when it does not fit. */
static int
escape_into(const char *msg, char *buf, size_t len, size_t *pos)
{
	const unsigned char *p;
	int n;

	for (p = (const unsigned char *)msg; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			n = snprintf(buf + *pos, len - *pos, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			n = snprintf(buf + *pos, len - *pos, "\\x%02x", *p);
		else
			n = snprintf(buf + *pos, len - *pos, "%c", *p);
		if (n < 0 || (size_t)n >= len - *pos)
			return -1;
		*pos += (size_t)n;
	}
	return 0;
}

int
guestproto_marker_format(bool failed, const struct timespec *now,
    const char *msg, char *buf, size_t len)
{
	char ts[TIMEFMT_MAX], date[32];
	struct tm tm;
	size_t pos;
	int n;

	if (timefmt_format(now, ts, sizeof(ts)) == -1 ||
	    gmtime_r(&now->tv_sec, &tm) == NULL ||
	    strftime(date, sizeof(date), "%Y/%m/%d %H:%M:%S", &tm) == 0)
		goto nospc;
	n = snprintf(buf, len, "%s [guest-agent] HYPEMAN-GPU-INIT-%s ts=%s%s",
	    date, failed ? "FAILED" : "OK", ts, failed ? " nvrm=\"" : "");
	if (n < 0 || (size_t)n >= len)
		goto nospc;
	pos = (size_t)n;
	if (failed && escape_into(msg != NULL ? msg : "", buf, len, &pos) == -1)
		goto nospc;
	n = snprintf(buf + pos, len - pos, "%s\n", failed ? "\"" : "");
	if (n < 0 || (size_t)n >= len - pos)
		goto nospc;
	return (int)(pos + (size_t)n);
nospc:
	errno = ENOSPC;
	return -1;
}

/* Consumes exactly lit at *p; false if it is not there. */
static bool
eat(const char **p, const char *end, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(end - *p) < n || memcmp(*p, lit, n) != 0)
		return false;
	*p += n;
	return true;
}

/* Consumes n ASCII digits. */
static bool
eat_digits(const char **p, const char *end, int n)
{
	for (; n > 0; n--, (*p)++)
		if (*p >= end || **p < '0' || **p > '9')
			return false;
	return true;
}

/* RE2's \S: anything but space, \t, \n, \f, \r. */
static bool
is_nonspace(char c)
{
	return c != ' ' && c != '\t' && c != '\n' && c != '\f' && c != '\r';
}

/* "YYYY/MM/DD HH:MM:SS [guest-agent] HYPEMAN-GPU-INIT-" */
static bool
eat_prefix(const char **p, const char *end)
{
	return eat_digits(p, end, 4) && eat(p, end, "/") &&
	    eat_digits(p, end, 2) && eat(p, end, "/") &&
	    eat_digits(p, end, 2) && eat(p, end, " ") &&
	    eat_digits(p, end, 2) && eat(p, end, ":") &&
	    eat_digits(p, end, 2) && eat(p, end, ":") &&
	    eat_digits(p, end, 2) &&
	    eat(p, end, " [guest-agent] HYPEMAN-GPU-INIT-");
}

/* "ts=\S+" */
static bool
eat_ts(const char **p, const char *end)
{
	const char *start;

	if (!eat(p, end, "ts="))
		return false;
	for (start = *p; *p < end && is_nonspace(**p); (*p)++)
		;
	return *p > start;
}

/* \r?\n?$ */
static bool
at_line_end(const char *p, const char *end)
{
	if (p < end && *p == '\r')
		p++;
	if (p < end && *p == '\n')
		p++;
	return p == end;
}

/* The nvrm="NVRM: [^"\r\n]*RmInitAdapter failed![^"\r\n]*" tail. */
static bool
eat_nvrm(const char **p, const char *end, const char **text, size_t *n)
{
	static const char needle[] = "RmInitAdapter failed!";
	const char *start, *q;

	if (!eat(p, end, " nvrm=\""))
		return false;
	start = *p;
	if (!eat(p, end, "NVRM: "))
		return false;
	for (q = *p; q < end && *q != '"' && *q != '\r' && *q != '\n'; q++)
		;
	if (q == end || *q != '"' ||
	    memmem(*p, (size_t)(q - *p), needle, sizeof(needle) - 1) == NULL)
		return false;
	*text = start;
	*n = (size_t)(q - start);
	*p = q + 1;
	return true;
}

enum guest_marker
guestproto_marker_match(const char *line, size_t len, const char **nvrm,
    size_t *nvrm_len)
{
	const char *p = line, *end = line + len, *text = NULL;
	enum guest_marker kind = GUEST_MARKER_NONE;
	size_t n = 0;

	if (!eat_prefix(&p, end))
		goto out;
	if (eat(&p, end, "OK ")) {
		if (eat_ts(&p, end) && at_line_end(p, end))
			kind = GUEST_MARKER_OK;
	} else if (eat(&p, end, "FAILED ") && eat_ts(&p, end) &&
	    eat_nvrm(&p, end, &text, &n) && at_line_end(p, end)) {
		kind = GUEST_MARKER_FAILED;
	}
out:
	if (kind != GUEST_MARKER_FAILED) {
		text = NULL;
		n = 0;
	}
	if (nvrm != NULL)
		*nvrm = text;
	if (nvrm_len != NULL)
		*nvrm_len = n;
	return kind;
}

/* --- the guest kernel's own console line (SPEC 6.2) --------------------- */

/* Consumes a run of at least one byte of set; false if there is none. */
static bool
eat_run(const char **p, const char *end, const char *set)
{
	const char *start = *p;

	while (*p < end && **p != '\0' && strchr(set, **p) != NULL)
		(*p)++;
	return *p > start;
}

/*
 * The printk prefix, if there: an optional time "[" spaces digits "."
 * digits "]", an optional caller id "[" spaces ("T" | "C") digits "]"
 * (CONFIG_PRINTK_CALLER: the task or CPU that logged), and after either
 * one space. The kernel prints the caller id directly after the time,
 * or alone when printk.time=0; the space follows whatever it printed.
 */
static void
eat_printk_prefix(const char **p, const char *end)
{
	const char *q = *p, *r;
	bool any = false;

	if (eat(&q, end, "[")) {
		while (q < end && *q == ' ')
			q++;
		if (!eat_run(&q, end, "0123456789") || !eat(&q, end, ".") ||
		    !eat_run(&q, end, "0123456789") || !eat(&q, end, "]"))
			q = *p;
		else
			any = true;
	}
	r = q;
	if (eat(&r, end, "[")) {
		while (r < end && *r == ' ')
			r++;
		if ((eat(&r, end, "T") || eat(&r, end, "C")) &&
		    eat_run(&r, end, "0123456789") && eat(&r, end, "]")) {
			q = r;
			any = true;
		}
	}
	if (any && eat(&q, end, " "))
		*p = q;
}

/* One byte of the address shape: x a lower-case hex digit, f 0-7. */
static bool
shape_ok(char want, char c)
{
	if (want == 'x')
		return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
	if (want == 'f')
		return c >= '0' && c <= '7';
	return c == want;
}

/* A PCI address as the kernel prints it: dddd:bb:dd.f, lower-case hex. */
static bool
eat_pci_address(const char **p, const char *end)
{
	static const char shape[] = "xxxx:xx:xx.f";
	size_t i;

	if ((size_t)(end - *p) < sizeof(shape) - 1)
		return false;
	for (i = 0; i < sizeof(shape) - 1; i++)
		if (!shape_ok(shape[i], (*p)[i]))
			return false;
	*p += sizeof(shape) - 1;
	return true;
}

bool
guestproto_kernel_line_match(const char *line, size_t len, const char **nvrm,
    size_t *nvrm_len)
{
	const char *p = line, *end = line + len, *start;

	eat_printk_prefix(&p, end);
	start = p;
	if (!eat(&p, end, "NVRM: "))
		return false;
	/* "GPU <address>: " is optional (SPEC 7.2): the driver prints the
	 * short form when it fails before it names the device. */
	if (eat(&p, end, "GPU ") && (!eat_pci_address(&p, end) ||
	    !eat(&p, end, ": ")))
		return false;
	if (!eat(&p, end, "RmInitAdapter failed! (") ||
	    !eat_run(&p, end, "0123456789abcdefABCDEFxX:") ||
	    !eat(&p, end, ")") || !at_line_end(p, end))
		return false;
	if (nvrm != NULL)
		*nvrm = start;
	if (nvrm_len != NULL)
		*nvrm_len = (size_t)(p - start);
	return true;
}
