/*
 * vsock-answer - hold the guest's GPU init state and answer the host.
 *
 * Input: event lines (SPEC.md 3.1, 3.2) from --events PATH, a FIFO
 * created if missing and opened read-write so that producers may come and
 * go without an end of file, or from stdin ("-"), served on after its end.
 * gpu_init_failed moves UNKNOWN/FAILED to FAILED (newest message wins),
 * gpu_init_ok moves UNKNOWN/FAILED to OK, which is terminal. Every change
 * is written atomically to --state-file, restored at start when its boot
 * id is this boot's.
 *
 * Output: no data on stdout. On each connection to --listen (vsock:PORT
 * or unix:PATH): one request line {"method":"GetGPUInitStatus"}, one reply
 * line ({"state":...}, or {"error":...}), close. With --console, markers
 * for the serial-console transport (three identical lines per event).
 *
 * One poll loop serves everything: sockets and the console are
 * non-blocking, a connection lives at most 5 s, at most CLIENT_MAX are
 * open (the oldest is dropped for a new one), and every buffer is bounded,
 * so no client can stall another client or the event input.
 *
 * Exit codes: 0 on SIGTERM/SIGINT, 64 usage, 71 cannot listen, 74 cannot
 * open the event input or the console, 78 configuration.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>

#include "atomic.h"
#include "cli.h"
#include "endpoint.h"
#include "guestproto.h"
#include "io.h"
#include "jsonl.h"
#include "log.h"
#include "sig.h"
#include "timefmt.h"

#define PROG "vsock-answer"
#define CLIENT_MAX 1024			/* connections open at once */
#define CLIENT_MIN 16			/* ... whatever the open files limit */
#define FD_SPARE 64			/* descriptors beside the connections */
#define CLIENT_MS 5000			/* lifetime of one connection */
#define CLIENT_BUF0 128			/* first request buffer size */
#define FAIL_MARKER_MS 30000		/* failure markers at most so often */
#define CONSOLE_MAX (256 * 1024)	/* console bytes waiting */
#define SAVE_RETRY_MS 5000		/* retry a failed state-file write */
#define POLL_FIXED 3			/* listen, events, console */

static const char usage[] =
    "usage: vsock-answer [-c FILE] [--log-level LEVEL] [--events PATH | -]\n"
    "                    [--listen ENDPOINT] [--state-file PATH]\n"
    "                    [--boot-id-file PATH] [--console PATH]\n"
    "\n"
    "Holds the guest's GPU init state, fed by kmsg-watch and gpu-probe, and\n"
    "answers the host's GetGPUInitStatus.\n"
    "\n"
    "Options:\n"
    "  -c, --config FILE     configuration file; only guest.vsock_port is\n"
    "                        used (default $VFSENTINEL_CONF, else\n"
    "                        /etc/vfsentinel/vfsentinel.conf)\n"
    "  --log-level LEVEL     debug, info, warn or error (default info)\n"
    "  --events PATH|-       event input: a FIFO (created if missing), a\n"
    "                        regular file, or - for standard input\n"
    "  --listen ENDPOINT     vsock:PORT or unix:PATH (default\n"
    "                        vsock:guest.vsock_port)\n"
    "  --state-file PATH     the state, written on every change and restored\n"
    "                        within one boot\n"
    "  --boot-id-file PATH   where the boot id is read (default\n"
    "                        /proc/sys/kernel/random/boot_id)\n"
    "  --console PATH        also write the serial-console markers\n"
    "                        (HYPEMAN-GPU-INIT-OK/FAILED) to PATH\n"
    "  -h, --help            print this help and exit\n"
    "  --version             print the version and exit\n";

enum {
	OPT_EVENTS = CLI_OPT_FIRST_FREE,
	OPT_LISTEN,
	OPT_STATE_FILE,
	OPT_BOOT_ID_FILE,
	OPT_CONSOLE
};

/* A reply line, shared by every client sending it, freed with its last
 * user: a state change never waits for slow readers of the old reply. */
struct reply {
	unsigned refs;
	size_t len;
	char line[];
};

struct client {
	int fd;
	long long deadline;		/* io_now_ms() when it is dropped */
	char *buf;			/* owned: the request so far */
	size_t len, cap;
	struct reply *out;		/* a reference, once replying */
	size_t off;			/* out->line[off, len) is to send */
	bool replying;
};

struct answer {
	const char *events_path, *state_path;
	const char *boot_id_path, *console_path;
	char listen[PATH_MAX];
	char boot_id[64];
	enum guest_state state;
	char *message;			/* owned, FAILED only */
	struct reply *reply;		/* a reference: the reply for state */
	struct reply *bad, *unsupported;	/* error replies */
	bool save_pending;
	long long save_at;
	int listen_fd, events_fd, console_fd;
	struct jsonl_reader events;
	bool events_done;		/* stdin or a file reached its end */
	char *con_buf;			/* owned: console bytes to write */
	size_t con_len;
	bool fail_marked, ok_marked;
	long long fail_marker_at;
	struct client *clients;		/* owned array of nclients */
	size_t nclients, max_clients;
	struct pollfd *pfds;		/* owned: POLL_FIXED + max_clients */
	unsigned long bad_events, evicted;
	long long evict_logged_at;
};

static void
parse_args(struct answer *a, int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_COMMON_OPTIONS,
		{ "events", required_argument, NULL, OPT_EVENTS },
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "state-file", required_argument, NULL, OPT_STATE_FILE },
		{ "boot-id-file", required_argument, NULL, OPT_BOOT_ID_FILE },
		{ "console", required_argument, NULL, OPT_CONSOLE },
		{ 0 }
	};
	const char *listen = NULL;
	struct cli cli;
	struct conf conf;
	int c;

	cli_init(&cli, usage);
	while ((c = cli_next(&cli, argc, argv, "c:h", opts)) != -1) {
		switch (c) {
		case OPT_EVENTS:
			a->events_path = optarg;
			break;
		case OPT_LISTEN:
			listen = optarg;
			break;
		case OPT_STATE_FILE:
			a->state_path = optarg;
			break;
		case OPT_BOOT_ID_FILE:
			a->boot_id_path = optarg;
			break;
		case OPT_CONSOLE:
			a->console_path = optarg;
			break;
		default:
			cli_bad_option(&cli, argv);
		}
	}
	if (optind != argc)
		cli_usage_error(&cli, "unexpected argument");
	cli_finish(&cli, &conf);
	if (listen != NULL)
		snprintf(a->listen, sizeof(a->listen), "%s", listen);
	else
		snprintf(a->listen, sizeof(a->listen), "vsock:%u",
		    conf.vsock_port);
}

/* A new reply (one reference): the error line for err if not NULL, else
 * the line for state st with message msg. */
static struct reply *
reply_new(enum guest_state st, const char *msg, const char *err)
{
	size_t cap = 64 + (msg != NULL ? 6 * strlen(msg) : 0);
	struct reply *r = malloc(sizeof(*r) + cap);
	int n;

	if (r == NULL)
		die(EX_OSERR, "out of memory", NULL);
	if (err != NULL)
		n = guest_error_format(err, r->line, cap);
	else
		n = guest_reply_format(st, msg, r->line, cap);
	if (n < 0)
		die(EX_SOFTWARE, "cannot format reply", "{s:s}", "error",
		    strerror(errno));
	r->refs = 1;
	r->len = (size_t)n;
	return r;
}

static void
reply_put(struct reply *r)
{
	if (r != NULL && --r->refs == 0)
		free(r);
}

/* Rebuilds the reply line for the current state. */
static void
reply_update(struct answer *a)
{
	reply_put(a->reply);
	a->reply = reply_new(a->state, a->message, NULL);
}

/* Sets the failure message (NULL clears), cut to GUEST_MESSAGE_MAX bytes
 * at a UTF-8 character boundary. */
static void
message_set(struct answer *a, const char *msg)
{
	size_t n;

	free(a->message);
	a->message = NULL;
	if (msg == NULL)
		return;
	n = strlen(msg);
	if (n > GUEST_MESSAGE_MAX) {
		n = GUEST_MESSAGE_MAX;
		while (n > 0 && ((unsigned char)msg[n] & 0xc0) == 0x80)
			n--;
	}
	a->message = strndup(msg, n);
	if (a->message == NULL)
		die(EX_OSERR, "out of memory", NULL);
}

/* Writes the state file; a failure is logged and retried later. */
static void
state_save(struct answer *a)
{
	struct atomic_result res = { 0 };
	char *text;
	json_t *obj;
	int rc = -1;

	obj = json_pack("{s:s, s:s, s:s}", "boot_id", a->boot_id, "state",
	    guest_state_name(a->state), "failure_message",
	    a->message != NULL ? a->message : "");
	text = obj != NULL ? json_dumps(obj, JSON_COMPACT) : NULL;
	if (text != NULL) {
		rc = atomic_write(a->state_path, text, strlen(text), 0644,
		    &res);
		if (rc < 0)
			log_msg(LVL_ERROR, "write state file failed",
			    "{s:s, s:s, s:s}", "file", a->state_path, "step",
			    res.step != NULL ? res.step : "?", "error",
			    strerror(errno));
		else if (a->save_pending)
			log_msg(LVL_INFO, "state file written", "{s:s}",
			    "file", a->state_path);
	}
	free(text);
	json_decref(obj);
	a->save_pending = rc < 0;
	a->save_at = io_now_ms() + SAVE_RETRY_MS;
}

/* Applies a restored state file object if its boot id is ours. */
static void
state_restore(struct answer *a, const json_t *obj)
{
	const char *boot = jsonl_str(obj, "boot_id");
	const char *name = jsonl_str(obj, "state");
	const char *msg = jsonl_str(obj, "failure_message");
	enum guest_state st;

	if (boot == NULL || name == NULL || guest_state_parse(name, &st) < 0) {
		log_msg(LVL_WARN, "state file invalid; ignored", "{s:s}",
		    "file", a->state_path);
		return;
	}
	if (a->boot_id[0] == '\0' || strcmp(boot, a->boot_id) != 0) {
		log_msg(LVL_INFO, "state file is from another boot; ignored",
		    "{s:s, s:s}", "file", a->state_path, "boot_id", boot);
		return;
	}
	a->state = st;
	message_set(a, st == GUEST_FAILED ? (msg != NULL ? msg : "") : NULL);
	a->ok_marked = st == GUEST_OK;
	log_msg(LVL_INFO, "state restored", "{s:s, s:s}", "state", name,
	    "file", a->state_path);
}

static void
state_load(struct answer *a)
{
	const char *why = NULL;
	json_t *obj = NULL;
	char *text;
	size_t len;

	if (io_read_attr(a->boot_id_path, a->boot_id, sizeof(a->boot_id)) < 0) {
		log_msg(LVL_WARN, "cannot read boot id; state is not restored",
		    "{s:s, s:s}", "file", a->boot_id_path, "error",
		    strerror(errno));
		a->boot_id[0] = '\0';
		return;
	}
	text = io_slurp(a->state_path, 1024 * 1024, &len);
	if (text == NULL && errno != ENOENT)
		log_msg(LVL_WARN, "cannot read state file", "{s:s, s:s}",
		    "file", a->state_path, "error", strerror(errno));
	if (text != NULL && (obj = jsonl_parse(text, len, &why)) == NULL)
		log_msg(LVL_WARN, "state file invalid; ignored", "{s:s, s:s}",
		    "file", a->state_path, "error", why);
	if (obj != NULL)
		state_restore(a, obj);
	json_decref(obj);
	free(text);
}

/* Writes what the console buffer holds, as far as the console takes it. */
static void
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
static void
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
	n = guest_marker_format(failed, &now, a->message, a->con_buf +
	    a->con_len, cap);
	if (n < 0)
		return;
	for (i = 1; i < 3; i++)
		memcpy(a->con_buf + a->con_len + (size_t)i * (size_t)n,
		    a->con_buf + a->con_len, (size_t)n);
	a->con_len += 3 * (size_t)n;
	console_flush(a);
}

static void
on_failure(struct answer *a, const char *msg)
{
	bool changed;

	if (a->state == GUEST_OK) {
		log_msg(LVL_DEBUG, "failure after OK ignored", "{s:s}",
		    "nvrm", msg);
		return;
	}
	if (a->state == GUEST_UNKNOWN)
		log_msg(LVL_INFO, "GPU init failure detected", "{s:s}",
		    "nvrm", msg);
	changed = a->state != GUEST_FAILED || strcmp(a->message, msg) != 0;
	a->state = GUEST_FAILED;
	message_set(a, msg);
	if (changed) {
		reply_update(a);
		state_save(a);
	}
	if (a->console_fd >= 0 && !a->ok_marked && (!a->fail_marked ||
	    io_now_ms() >= a->fail_marker_at)) {
		a->fail_marked = true;
		a->fail_marker_at = io_now_ms() + FAIL_MARKER_MS;
		console_marker(a, true);
	}
}

static void
on_success(struct answer *a)
{
	if (a->state == GUEST_OK)
		return;
	log_msg(LVL_INFO, "GPU driver initialized", NULL);
	a->state = GUEST_OK;
	message_set(a, NULL);
	reply_update(a);
	state_save(a);
	if (a->console_fd >= 0 && !a->ok_marked)
		console_marker(a, false);
	a->ok_marked = true;
}

static void
bad_event(struct answer *a, const char *why)
{
	a->bad_events++;
	log_msg(LVL_WARN, "bad event line skipped", "{s:s, s:I, s:I}",
	    "error", why, "line", (json_int_t)a->events.lineno,
	    "bad_lines", (json_int_t)a->bad_events);
}

static void
handle_event(struct answer *a, const char *line, size_t len)
{
	const char *why, *name, *msg;
	json_t *obj;

	obj = jsonl_parse(line, len, &why);
	if (obj == NULL) {
		bad_event(a, why);
		return;
	}
	name = jsonl_str(obj, "event");
	msg = jsonl_str(obj, "message");
	if (name == NULL)
		bad_event(a, "missing event");
	else if (strcmp(name, "gpu_init_failed") == 0 && msg == NULL)
		bad_event(a, "gpu_init_failed without message");
	else if (strcmp(name, "gpu_init_failed") == 0)
		on_failure(a, msg);
	else if (strcmp(name, "gpu_init_ok") == 0)
		on_success(a);
	else
		log_msg(LVL_INFO, "event ignored", "{s:s, s:O?}", "event",
		    name, "error", json_object_get(obj, "error"));
	json_decref(obj);
}

/* Reads once from the event input and handles every whole line. */
static void
events_read(struct answer *a)
{
	enum jsonl_status st;
	ssize_t n;
	size_t len;
	char *line;
	int err;

	n = jsonl_fill(&a->events);
	err = n < 0 && errno != EAGAIN && errno != EINTR ? errno : 0;
	if (err != 0)
		log_msg(LVL_ERROR, "read events failed", "{s:s}", "error",
		    strerror(err));
	while ((st = jsonl_next(&a->events, &line, &len)) != JSONL_NEED &&
	    st != JSONL_END) {
		if (st == JSONL_TOO_LONG)
			bad_event(a, "line too long");
		else
			handle_event(a, line, len);
	}
	if (n == 0 || err != 0) {
		a->events_done = true;
		log_msg(LVL_INFO, "end of event input; still serving",
		    "{s:s}", "state", guest_state_name(a->state));
	}
}

/* Creates the directory that holds path (one level, as /run/vfsentinel). */
static void
mkdir_parent(const char *path)
{
	char dir[PATH_MAX];
	char *slash;

	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
		return;
	slash = strrchr(dir, '/');
	if (slash == NULL || slash == dir)
		return;
	*slash = '\0';
	(void)mkdir(dir, 0755);
}

/* Opens the event input: stdin, a FIFO (made if missing) or a file. */
static void
events_open(struct answer *a)
{
	const char *p = a->events_path;
	struct stat st;

	if (strcmp(p, "-") == 0) {
		a->events_fd = STDIN_FILENO;
	} else {
		if (mkfifo(p, 0600) < 0 && errno == ENOENT)
			mkdir_parent(p);
		if (mkfifo(p, 0600) < 0 && errno != EEXIST)
			die(EX_IOERR, "cannot create events FIFO", "{s:s, s:s}",
			    "file", p, "error", strerror(errno));
		if (stat(p, &st) == 0 && S_ISFIFO(st.st_mode))
			a->events_fd = open(p, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		else
			a->events_fd = open(p, O_RDONLY | O_CLOEXEC);
		if (a->events_fd < 0)
			die(EX_IOERR, "cannot open events", "{s:s, s:s}",
			    "file", p, "error", strerror(errno));
	}
	if (jsonl_reader_init(&a->events, a->events_fd) < 0)
		die(EX_OSERR, "out of memory", NULL);
}

static void
console_open(struct answer *a)
{
	if (a->console_path == NULL)
		return;
	a->console_fd = open(a->console_path, O_WRONLY | O_APPEND | O_CREAT |
	    O_NOCTTY | O_NONBLOCK | O_CLOEXEC, 0644);
	if (a->console_fd < 0)
		die(EX_IOERR, "cannot open console", "{s:s, s:s}", "file",
		    a->console_path, "error", strerror(errno));
}

static void
listen_open(struct answer *a)
{
	struct endpoint ep;

	if (endpoint_parse_listen(a->listen, &ep) < 0)
		die(EX_USAGE, "invalid listen endpoint", "{s:s}", "endpoint",
		    a->listen);
	a->listen_fd = endpoint_listen(&ep);
	if (a->listen_fd < 0)
		die(EX_OSERR, "cannot listen", "{s:s, s:s}", "endpoint",
		    a->listen, "error", strerror(errno));
	log_msg(LVL_INFO, "listening", "{s:s, s:s}", "endpoint", a->listen,
	    "state", guest_state_name(a->state));
}

/* Chooses the connection cap: CLIENT_MAX, within the descriptor limit. */
static void
limits_set(struct answer *a)
{
	a->max_clients = io_fd_limit_fit(CLIENT_MAX, FD_SPARE);
	if (a->max_clients < CLIENT_MIN)
		a->max_clients = CLIENT_MIN;
	a->pfds = malloc((POLL_FIXED + a->max_clients) * sizeof(*a->pfds));
	a->clients = malloc(a->max_clients * sizeof(*a->clients));
	if (a->pfds == NULL || a->clients == NULL)
		die(EX_OSERR, "out of memory", NULL);
}

static void
signals_set(sigset_t *old)
{
	cli_stop_signals(false);
	sig_stop_block(old);
}

static void
client_close(struct answer *a, size_t i)
{
	close(a->clients[i].fd);
	free(a->clients[i].buf);
	reply_put(a->clients[i].out);
	a->clients[i] = a->clients[--a->nclients];
}

/* Sends what is left of the reply; closes the client once it is all sent. */
static void
client_send(struct answer *a, size_t i)
{
	struct client *c = &a->clients[i];
	ssize_t n;

	n = send(c->fd, c->out->line + c->off, c->out->len - c->off,
	    MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n > 0)
		c->off += (size_t)n;
	if (c->off == c->out->len ||
	    (n < 0 && errno != EAGAIN && errno != EINTR))
		client_close(a, i);
}

/* Answers the request line held in buf[0, len) (newline excluded). */
static void
client_answer(struct answer *a, size_t i, size_t len)
{
	struct client *c = &a->clients[i];
	enum guest_method m = GUEST_METHOD_UNSUPPORTED;
	struct reply *r = a->reply;

	if (len > 0 && c->buf[len - 1] == '\r')
		len--;
	if (guest_request_parse(c->buf, len, &m) < 0)
		r = a->bad;
	else if (m == GUEST_METHOD_UNSUPPORTED)
		r = a->unsupported;
	free(c->buf);
	c->buf = NULL;
	r->refs++;
	c->out = r;
	c->off = 0;
	c->replying = true;
	client_send(a, i);
}

/* Makes room for more request bytes, up to GUEST_REQUEST_MAX + 1. */
static int
client_grow(struct client *c)
{
	size_t cap = c->cap > 0 ? c->cap * 4 : CLIENT_BUF0;
	char *p;

	if (cap > GUEST_REQUEST_MAX + 1)
		cap = GUEST_REQUEST_MAX + 1;
	p = realloc(c->buf, cap);
	if (p == NULL)
		return -1;
	c->buf = p;
	c->cap = cap;
	return 0;
}

/* Reads request bytes; answers on a newline, on EOF or when too long. */
static void
client_read(struct answer *a, size_t i)
{
	struct client *c = &a->clients[i];
	char *nl;
	ssize_t n;

	if (c->len == c->cap && client_grow(c) < 0) {
		client_close(a, i);
		return;
	}
	n = read(c->fd, c->buf + c->len, c->cap - c->len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0 || (n == 0 && c->len == 0)) {
		client_close(a, i);
		return;
	}
	nl = memchr(c->buf + c->len, '\n', (size_t)n);
	c->len += (size_t)n;
	if (nl != NULL)
		client_answer(a, i, (size_t)(nl - c->buf));
	else if (n == 0 || c->len > GUEST_REQUEST_MAX)
		client_answer(a, i, c->len);
}

/* Drops the connection that has lived longest, to admit a new one. */
static void
client_evict(struct answer *a)
{
	size_t i, oldest = 0;

	for (i = 1; i < a->nclients; i++)
		if (a->clients[i].deadline < a->clients[oldest].deadline)
			oldest = i;
	client_close(a, oldest);
	a->evicted++;
	if (io_now_ms() - a->evict_logged_at >= 10000) {
		a->evict_logged_at = io_now_ms();
		log_msg(LVL_WARN, "connection cap reached; oldest dropped",
		    "{s:I, s:I}", "cap", (json_int_t)a->max_clients,
		    "dropped", (json_int_t)a->evicted);
	}
}

/* Accepts a batch of waiting connections. */
static void
clients_accept(struct answer *a)
{
	struct client *c;
	int fd, k;

	for (k = 0; k < 64; k++) {
		fd = accept4(a->listen_fd, NULL, NULL,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				log_msg(LVL_WARN, "accept failed", "{s:s}",
				    "error", strerror(errno));
			return;
		}
		if (a->nclients == a->max_clients)
			client_evict(a);
		c = &a->clients[a->nclients++];
		memset(c, 0, sizeof(*c));
		c->fd = fd;
		c->deadline = io_now_ms() + CLIENT_MS;
	}
}

/* Fills the poll set; returns its size and the poll timeout in ms. */
static nfds_t
poll_prepare(struct answer *a, long long *timeout)
{
	long long now = io_now_ms(), until = now + 60000;
	size_t i;

	a->pfds[0] = (struct pollfd){ a->listen_fd, POLLIN, 0 };
	a->pfds[1] = (struct pollfd){ a->events_done ? -1 : a->events_fd,
	    POLLIN, 0 };
	a->pfds[2] = (struct pollfd){ a->con_len > 0 ? a->console_fd : -1,
	    POLLOUT, 0 };
	for (i = 0; i < a->nclients; i++) {
		a->pfds[POLL_FIXED + i] = (struct pollfd){ a->clients[i].fd,
		    a->clients[i].replying ? POLLOUT : POLLIN, 0 };
		if (a->clients[i].deadline < until)
			until = a->clients[i].deadline;
	}
	if (a->save_pending && a->save_at < until)
		until = a->save_at;
	*timeout = until > now ? until - now : 0;
	return POLL_FIXED + a->nclients;
}

/* Handles client readiness and expiry; walks backwards because closing
 * moves the last client into the closed one's slot. */
static void
clients_service(struct answer *a, nfds_t nfds)
{
	long long now = io_now_ms();
	size_t i = nfds - POLL_FIXED;
	short ev;

	while (i-- > 0) {
		ev = a->pfds[POLL_FIXED + i].revents;
		if (ev != 0 && a->clients[i].replying)
			client_send(a, i);
		else if (ev != 0)
			client_read(a, i);
		else if (now >= a->clients[i].deadline)
			client_close(a, i);
	}
}

static void
serve(struct answer *a, const sigset_t *mask)
{
	struct timespec ts;
	long long ms;
	nfds_t n;

	while (!sig_stop) {
		n = poll_prepare(a, &ms);
		ts.tv_sec = ms / 1000;
		ts.tv_nsec = (ms % 1000) * 1000000;
		if (ppoll(a->pfds, n, &ts, mask) < 0) {
			if (errno != EINTR)
				die(EX_OSERR, "poll failed", "{s:s}", "error",
				    strerror(errno));
			continue;
		}
		if (a->pfds[1].revents != 0)
			events_read(a);
		if (a->pfds[2].revents != 0)
			console_flush(a);
		clients_service(a, n);
		if (a->pfds[0].revents != 0)
			clients_accept(a);
		if (a->save_pending && io_now_ms() >= a->save_at)
			state_save(a);
	}
}

static void
answer_release(struct answer *a)
{
	while (a->nclients > 0)
		client_close(a, a->nclients - 1);
	jsonl_reader_release(&a->events);
	if (a->events_fd > STDIN_FILENO)
		close(a->events_fd);
	if (a->console_fd >= 0)
		close(a->console_fd);
	close(a->listen_fd);
	free(a->clients);
	free(a->pfds);
	free(a->con_buf);
	free(a->message);
	reply_put(a->reply);
	reply_put(a->bad);
	reply_put(a->unsupported);
}

int
main(int argc, char **argv)
{
	static struct answer a = {
		.events_path = "/run/vfsentinel/events",
		.state_path = "/run/vfsentinel/gpu-init.json",
		.boot_id_path = "/proc/sys/kernel/random/boot_id",
		.console_fd = -1,
		.listen_fd = -1
	};
	sigset_t mask;

	cli_start(PROG);
	parse_args(&a, argc, argv);
	signals_set(&mask);
	(void)prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	limits_set(&a);
	state_load(&a);
	reply_update(&a);
	a.bad = reply_new(GUEST_UNKNOWN, NULL, GUEST_ERR_BAD_REQUEST);
	a.unsupported = reply_new(GUEST_UNKNOWN, NULL, GUEST_ERR_UNSUPPORTED);
	events_open(&a);
	console_open(&a);
	listen_open(&a);
	serve(&a, &mask);
	log_msg(LVL_INFO, "stopping", "{s:s}", "state",
	    guest_state_name(a.state));
	answer_release(&a);
	return EX_OK;
}
