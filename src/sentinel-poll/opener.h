/*
 * opener.h - sentinel-poll's privilege separation (SPEC.md 8.3), as
 * OpenSSH and OpenBSD's daemons split theirs: the process that parses
 * what tenants control (console logs, agent answers) holds no
 * capability; a small opener process holds only CAP_DAC_READ_SEARCH,
 * parses no file content, and on request opens one file or connects one
 * socket and passes the descriptor back (SCM_RIGHTS).
 *
 * The opener serves only a path of a claim in the current
 * DATA_DIR/gpu/vf-claims.json: for OPENER_FILE its app_log (or that
 * log's rotation, app_log.0 or app_log.1, which logtail.h follows), for
 * OPENER_CONNECT its agent channel (the Unix socket of its unix:,
 * hvsock: or virtio-serial: endpoint), for OPENER_PATH its control
 * socket (an O_PATH descriptor, for the VMM liveness gate, vmm.h). It
 * uses its capability only under sentinel.privileged_dirs, resolved from
 * a descriptor of that directory with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS); any other path it opens
 * with the capability lowered, as the plain service user. A file must be
 * regular and a socket a socket (fstat of the O_PATH descriptor,
 * safeopen.h) before anything opens or connects it.
 *
 * The protocol, over a SOCK_SEQPACKET socketpair (one message each way):
 *   request  one byte, the op ('F', 'C' or 'P'), then the absolute path
 *            (1 to OPENER_PATH_MAX - 1 bytes, no NUL)
 *   reply    a 32-bit errno in host order, 0 with one descriptor
 *            attached, or the error with none
 * Anything else is refused with EINVAL, and the opener goes on.
 */
#ifndef VFS_OPENER_H
#define VFS_OPENER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define OPENER_PATH_MAX 4096		/* with the NUL, as PATH_MAX */
#define OPENER_MSG_MAX (1 + OPENER_PATH_MAX)

enum opener_op {
	OPENER_FILE = 'F',		/* a console log, for reading */
	OPENER_CONNECT = 'C',		/* an agent channel, connected */
	OPENER_PATH = 'P'		/* a control socket, O_PATH */
};

struct opener_request {
	enum opener_op op;
	char path[OPENER_PATH_MAX];	/* NUL-terminated */
};

/* --- the protocol, both sides (opener.c) ---------------------------------- */

/*
 * Decodes one request message of len bytes into rq: 0, or -1/EINVAL (an
 * unknown op, an empty, relative, over-long path or one with a NUL).
 */
int opener_request_parse(const void *msg, size_t len,
    struct opener_request *rq);

/* Encodes rq into msg (OPENER_MSG_MAX bytes); its length, or -1/EINVAL
 * when rq would not parse. */
ssize_t opener_request_format(const struct opener_request *rq, char *msg);

/* --- what the opener serves (opener.c) ------------------------------------ */

/*
 * The privileged directories of sentinel.privileged_dirs: a
 * comma-separated list of absolute paths (blanks around each trimmed,
 * empty items skipped, a trailing '/' dropped). Owns its strings.
 */
struct opener_dirs {
	char **v;
	size_t n;
};

/* Parses list into d: 0, or -1 with errno EINVAL (a relative path) or
 * ENOMEM. */
int opener_dirs_parse(const char *list, struct opener_dirs *d);
void opener_dirs_release(struct opener_dirs *d);

/* The directory of d that path is strictly below, with *rel the rest
 * of path (borrowed from it); NULL when none. */
const char *opener_dirs_match(const struct opener_dirs *d, const char *path,
    const char **rel);

/*
 * True when rq names a path of a claim in the ledger text (len bytes of
 * vf-claims.json) as rq's op allows: see above. A ledger that does not
 * parse allows nothing.
 */
bool opener_allowed(const char *ledger, size_t len,
    const struct opener_request *rq);

/* --- the opener process (opener.c) ---------------------------------------- */

/*
 * Serves requests on sock until its peer closes it: each one checked
 * against DATA_DIR/gpu/vf-claims.json read again when it changed, then
 * answered. cap: the process holds CAP_DAC_READ_SEARCH to raise under
 * dirs. Returns when the parser is gone.
 */
void opener_serve(int sock, const char *data_dir,
    const struct opener_dirs *dirs, bool cap);

/* --- the parser's side (openreq.c) ---------------------------------------- */

/* The parser's end of the opener. */
struct openreq {
	int sock;			/* -1: no opener */
	pid_t pid;
};

/*
 * Forks the opener, which keeps CAP_DAC_READ_SEARCH where this process
 * holds it and nothing else, and serves data_dir's claims under dirs;
 * then drops every capability of this process (the effective,
 * permitted, inheritable and ambient sets) and sets no_new_privs, the
 * opener forked or not. 0, or -1/errno (the capabilities could not be
 * dropped: fatal for the caller). data_dir NULL: no opener (--targets
 * lists no claim to check a path against), only the drop.
 */
int openreq_start(struct openreq *r, const char *data_dir,
    const struct opener_dirs *dirs);

/*
 * Asks the opener for op on path: the descriptor (the caller owns it),
 * or -1 with errno (the opener's refusal: EPERM for a path no claim
 * names; ECONNRESET when there is no opener or it is gone).
 */
int openreq_ask(struct openreq *r, enum opener_op op, const char *path);

/* True when the opener was started and is gone (died, or stuck past
 * its answer's time): nothing more can be asked of it. */
bool openreq_broken(const struct openreq *r);

/* Closes the parser's end; the opener exits at its EOF. */
void openreq_stop(struct openreq *r);

#endif
