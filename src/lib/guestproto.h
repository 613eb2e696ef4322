/*
 * guestproto.h - the guest status protocol (SPEC.md 3.3, 4.4): request
 * and reply lines of GetGPUInitStatus, and the serial-console markers of
 * the earlier design.
 *
 * Everything here is pure: no I/O, no allocation kept after return, no
 * printing. Lines are passed without their '\n' unless stated otherwise.
 *
 *	request  {"method":"GetGPUInitStatus"}
 *	replies  {"state":"UNKNOWN"}  {"state":"OK"}
 *	         {"state":"FAILED","failure_message":"NVRM: ..."}
 *	         {"error":"unsupported method"}  {"error":"bad request"}
 *	kernel   [  12.3] NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (...)
 *	         [  12.3][  T1] NVRM: RmInitAdapter failed! (...)
 *	         (the guest kernel's own console line, SPEC 6.2, 7.2)
 *	markers  YYYY/MM/DD HH:MM:SS [guest-agent] HYPEMAN-GPU-INIT-FAILED
 *	             ts=<RFC3339Nano> nvrm="<escaped message>"
 *	         YYYY/MM/DD HH:MM:SS [guest-agent] HYPEMAN-GPU-INIT-OK
 *	             ts=<RFC3339Nano>
 */
#ifndef VFS_GUESTPROTO_H
#define VFS_GUESTPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#define GUEST_METHOD_STATUS_NAME "GetGPUInitStatus"
#define GUEST_REQUEST_MAX 4096		/* longest request, without '\n' */
#define GUEST_MESSAGE_MAX 8192		/* longest failure message kept */
/* Longest reply line: a message of control bytes escapes to 6x its size. */
#define GUEST_REPLY_MAX (6 * GUEST_MESSAGE_MAX + 64)
/* Longest marker line: the message escapes to at most 4x (\xNN). */
#define GUEST_MARKER_MAX (4 * GUEST_MESSAGE_MAX + 128)

#define GUEST_ERR_BAD_REQUEST "bad request"
#define GUEST_ERR_UNSUPPORTED "unsupported method"

enum guest_state {
	GUEST_UNKNOWN,
	GUEST_OK,
	GUEST_FAILED
};

enum guest_method {
	GUEST_METHOD_STATUS,		/* GetGPUInitStatus */
	GUEST_METHOD_UNSUPPORTED	/* a good request for another method */
};

/* "UNKNOWN", "OK", "FAILED" (static). */
const char *guestproto_state_name(enum guest_state st);

/* Parses a state name; 0, or -1 (EINVAL) for anything else. */
int guestproto_state_parse(const char *s, enum guest_state *st);

/*
 * Parses one request line. 0 with *method set, or -1 (EINVAL) for a bad
 * request: longer than GUEST_REQUEST_MAX, not one JSON object, or without
 * a string "method" member.
 */
int guestproto_request_parse(const char *line, size_t len,
    enum guest_method *method);

/*
 * Formats the reply line for a state into buf, with a trailing '\n' and a
 * NUL. msg is used only for GUEST_FAILED (NULL means ""); it must be
 * valid UTF-8. Returns the length without the NUL, or -1 with errno
 * ENOSPC (buf too small; GUEST_REPLY_MAX always suffices for a message
 * of at most GUEST_MESSAGE_MAX bytes) or EINVAL (msg not UTF-8).
 */
int guestproto_reply_format(enum guest_state st, const char *msg, char *buf,
    size_t len);

/* Formats {"error":"<why>"} plus '\n' into buf; same returns. */
int guestproto_error_format(const char *why, char *buf, size_t len);

enum guest_reply_kind {
	GUEST_REPLY_STATE,		/* state (and message) are set */
	GUEST_REPLY_UNSUPPORTED,	/* {"error":"unsupported method"} */
	GUEST_REPLY_ERROR		/* any other error or a bad reply */
};

struct guest_reply {
	enum guest_reply_kind kind;
	enum guest_state state;
	/*
	 * GUEST_REPLY_STATE: the failure message (FAILED only, else "").
	 * GUEST_REPLY_ERROR: why, e.g. "guest error: bad request" or
	 * "bad reply: unknown state \"X\"" (truncated to fit).
	 */
	char message[GUEST_MESSAGE_MAX + 1];
};

/*
 * Parses one reply line (a trailing '\r' or '\n' is ignored). Always
 * fills r; returns 0 for GUEST_REPLY_STATE and GUEST_REPLY_UNSUPPORTED,
 * -1 for GUEST_REPLY_ERROR. A reply is bad when it is not one JSON
 * object, has neither a string "state" nor a string "error", names an
 * unknown state, or carries a failure_message that is not a string or
 * is longer than GUEST_MESSAGE_MAX. A FAILED reply without
 * failure_message gets "".
 */
int guestproto_reply_parse(const char *line, size_t len, struct guest_reply *r);

/*
 * Formats one console marker line, '\n' included, plus a NUL, into buf.
 * failed selects HYPEMAN-GPU-INIT-FAILED (with msg) or HYPEMAN-GPU-INIT-OK.
 * The date prefix and ts= are both now, in UTC. In msg, '"' and '\\'
 * are escaped with a backslash, and bytes below 0x20 and 0x7f as \xNN so
 * a marker is always one line. Returns the length or -1 (ENOSPC).
 */
int guestproto_marker_format(bool failed, const struct timespec *now,
    const char *msg, char *buf, size_t len);

enum guest_marker {
	GUEST_MARKER_NONE,
	GUEST_MARKER_FAILED,
	GUEST_MARKER_OK
};

/*
 * Matches a whole console line (with or without its "\r\n", "\n" or
 * "\r") against exactly the V2 marker shapes:
 *
 * ^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2} \[guest-agent\]
 *   (HYPEMAN-GPU-INIT-FAILED ts=\S+
 *    nvrm="NVRM: [^"\r\n]*RmInitAdapter failed![^"\r\n]*")\r?\n?$
 * and the same prefix with (HYPEMAN-GPU-INIT-OK ts=\S+)\r?\n?$
 *
 * (\S is RE2's: not space, \t, \n, \f, \r.) For GUEST_MARKER_FAILED,
 * *nvrm and *nvrm_len (if not NULL) give the text between the quotes,
 * borrowed from line and still escaped; for the others they are NULL/0.
 */
enum guest_marker guestproto_marker_match(const char *line, size_t len,
    const char **nvrm, size_t *nvrm_len);

/*
 * Matches a whole console line (with or without its "\r\n", "\n" or
 * "\r") against exactly the guest kernel's own driver line (SPEC 6.2,
 * 7.2):
 *
 * ^((\[ *\d+\.\d+\])?(\[ *[TC]\d+\])? )?NVRM:
 *   (GPU [0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]: )?
 *   RmInitAdapter failed! \([0-9A-Fa-fx:]+\)\r?\n?$
 *
 * (the space after the prefixes only when one is there): the printk
 * time, the caller id of CONFIG_PRINTK_CALLER, the short form without
 * the address. Anchored at the start of the line: an echoed command or
 * interleaved output never matches. On a match *nvrm and *nvrm_len (if
 * not NULL) give the line without the prefixes and line end, borrowed.
 */
bool guestproto_kernel_line_match(const char *line, size_t len,
    const char **nvrm, size_t *nvrm_len);

#endif
