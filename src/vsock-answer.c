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
 * line ({"state":...}, or {"error":...}), close. On virtio-serial:NAME or
 * virtio-serial:/dev/PATH (SPEC 6.1): the same lines, one request and
 * its reply at a time, on one stream to whichever host is connected
 * (vsock-answer/vport.h). With --console, markers
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

#include "cli.h"
#include "endpoint.h"
#include "guestproto.h"
#include "io.h"
#include "jsonl.h"
#include "vsock-answer/lineserv.h"
#include "log.h"
#include "sig.h"
#include "vsock-answer/vsock-answer.h"

#define PROG "vsock-answer"
#define CLIENT_MAX 1024			/* connections open at once */
#define CLIENT_MIN 16			/* ... whatever the open files limit */
#define FD_SPARE 64			/* descriptors beside the connections */
#define CLIENT_MS 5000			/* lifetime of one connection */
#define FAIL_MARKER_MS 30000		/* failure markers at most so often */
#define POLL_FIXED 3			/* listen, events, console */

static const char usage[] =
    "usage: vsock-answer [-c FILE] [--log-level LEVEL] [--events PATH | -]\n"
    "                    [--listen ENDPOINT] [--state-file PATH]\n"
    "                    [--boot-id-file PATH] [--console PATH]\n"
    "                    [--sysfs-root DIR] [--dev-dir DIR]\n"
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
    "  --listen ENDPOINT     vsock:PORT, unix:PATH, virtio-serial:NAME (a\n"
    "                        port by its name) or virtio-serial:/dev/PATH\n"
    "                        (default vsock:guest.vsock_port)\n"
    "  --state-file PATH     the state, written on every change and restored\n"
    "                        within one boot\n"
    "  --boot-id-file PATH   where the boot id is read (default\n"
    "                        /proc/sys/kernel/random/boot_id)\n"
    "  --console PATH        also write the serial-console markers\n"
    "                        (HYPEMAN-GPU-INIT-OK/FAILED) to PATH\n"
    "  --sysfs-root DIR      prefix for /sys, where a virtio-serial port's\n"
    "                        name is found (default sysfs_root, else /)\n"
    "  --dev-dir DIR         where the port's device is (default /dev)\n"
    "  -h, --help            print this help and exit\n"
    "  --version             print the version and exit\n";

enum {
	OPT_EVENTS = CLI_OPT_FIRST_FREE,
	OPT_LISTEN,
	OPT_STATE_FILE,
	OPT_BOOT_ID_FILE,
	OPT_CONSOLE,
	OPT_DEV_DIR
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
		{ "dev-dir", required_argument, NULL, OPT_DEV_DIR },
		{ 0 }
	};
	const char *listen = NULL;
	struct cli cli;
	struct conf conf;
	int c;

	cli_init(&cli, usage);
	while ((c = cli_next(&cli, argc, argv, CLI_SHORTOPTS, opts)) != -1) {
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
		case OPT_DEV_DIR:
			a->dev_dir = optarg;
			break;
		default:
			cli_bad_option(&cli, argv);
		}
	}
	cli_no_operands(&cli, argc, argv);
	cli_finish(&cli, &conf);
	(void)snprintf(a->sysfs_root, sizeof(a->sysfs_root), "%s",
	    conf.sysfs_root);		/* fits: both are PATH_MAX */
	if (listen == NULL)
		(void)snprintf(a->listen, sizeof(a->listen), "vsock:%u",
		    conf.vsock_port);		/* fits: a port is 10 digits */
	else if (snprintf(a->listen, sizeof(a->listen), "%s", listen) >=
	    (int)sizeof(a->listen))
		cli_usage_error(&cli, "--listen: endpoint too long");
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
	state_message_set(a, msg);
	if (a->fatal != 0)
		return;
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
	state_message_set(a, NULL);
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
	while (a->fatal == 0 && (st = jsonl_next(&a->events, &line,
	    &len)) != JSONL_NEED && st != JSONL_END) {
		if (st == JSONL_TOO_LONG)
			bad_event(a, "line too long");
		else
			handle_event(a, line, len);
	}
	if (n == 0 || err != 0) {
		a->events_done = true;
		log_msg(LVL_INFO, "end of event input; still serving",
		    "{s:s}", "state", guestproto_state_name(a->state));
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
static int
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
			return log_fail(EX_IOERR, "cannot create events FIFO",
			    "{s:s, s:s}", "file", p, "error", strerror(errno));
		if (stat(p, &st) == 0 && S_ISFIFO(st.st_mode))
			a->events_fd = open(p, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		else
			a->events_fd = open(p, O_RDONLY | O_CLOEXEC);
		if (a->events_fd < 0)
			return log_fail(EX_IOERR, "cannot open events",
			    "{s:s, s:s}", "file", p, "error", strerror(errno));
	}
	if (jsonl_reader_init(&a->events, a->events_fd) < 0)
		return log_fail(EX_OSERR, "out of memory", NULL);
	return 0;
}

/* --listen virtio-serial: one port, one host (vport.h); the port is
 * looked for at the first turn of the loop. */
static int
vserial_open(struct answer *a)
{
	a->vserial = true;
	a->pfds = malloc(POLL_FIXED * sizeof(*a->pfds));
	if (a->pfds == NULL || vport_init(&a->port, a->listen +
	    strlen("virtio-serial:"), a->sysfs_root, a->dev_dir,
	    GUEST_REQUEST_MAX, reply_request, a) < 0)
		return log_fail(EX_OSERR, "out of memory", NULL);
	log_msg(LVL_INFO, "serving a virtio-serial port", "{s:s, s:s}",
	    "endpoint", a->listen, "state", guestproto_state_name(a->state));
	return 0;
}

/*
 * Listens, with the connection cap CLIENT_MAX within the descriptor
 * limit.
 */
static int
listen_open(struct answer *a)
{
	struct endpoint ep;
	size_t max;

	if (endpoint_parse_listen(a->listen, &ep) < 0)
		return log_fail(EX_USAGE, "invalid listen endpoint", "{s:s}",
		    "endpoint", a->listen);
	if (ep.kind == EP_VSERIAL)
		return vserial_open(a);
	a->listen_fd = endpoint_listen(&ep);
	if (a->listen_fd < 0)
		return log_fail(EX_OSERR, "cannot listen", "{s:s, s:s}",
		    "endpoint", a->listen, "error", strerror(errno));
	max = io_fd_limit_fit(CLIENT_MAX, FD_SPARE);
	if (max < CLIENT_MIN)
		max = CLIENT_MIN;
	a->pfds = malloc((POLL_FIXED + max) * sizeof(*a->pfds));
	if (a->pfds == NULL || lineserv_init(&a->serv, a->listen_fd, max,
	    GUEST_REQUEST_MAX, CLIENT_MS, reply_request, a) < 0)
		return log_fail(EX_OSERR, "out of memory", NULL);
	log_msg(LVL_INFO, "listening", "{s:s, s:s}", "endpoint", a->listen,
	    "state", guestproto_state_name(a->state));
	return 0;
}

/* Accepts new connections; logs the cap's evictions every 10 s at most. */
static void
clients_accept(struct answer *a)
{
	if (lineserv_accept(&a->serv) < 0)
		log_msg(LVL_WARN, "accept failed", "{s:s}", "error",
		    strerror(errno));
	if (a->serv.evicted == a->evicted_logged ||
	    io_now_ms() - a->evict_logged_at < 10000)
		return;
	a->evict_logged_at = io_now_ms();
	a->evicted_logged = a->serv.evicted;
	log_msg(LVL_WARN, "connection cap reached; oldest dropped",
	    "{s:I, s:I}", "cap", (json_int_t)a->serv.max, "dropped",
	    (json_int_t)a->serv.evicted);
}

/* Fills the poll set; returns its size and the poll timeout in ms. */
static nfds_t
poll_prepare(struct answer *a, long long *timeout)
{
	long long now = io_now_ms(), until = now + 60000;
	size_t n;

	a->pfds[0] = (struct pollfd){ .fd = a->listen_fd, .events = POLLIN };
	if (a->vserial)
		vport_poll_fill(&a->port, &a->pfds[0], &until);
	a->pfds[1] = (struct pollfd){ .fd = a->events_done ? -1 :
	    a->events_fd, .events = POLLIN };
	a->pfds[2] = (struct pollfd){ .fd = a->con_len > 0 ? a->console_fd :
	    -1, .events = POLLOUT };
	n = a->vserial ? 0 : lineserv_poll_fill(&a->serv, a->pfds +
	    POLL_FIXED, &until);
	if (a->save_pending && a->save_at < until)
		until = a->save_at;
	*timeout = until > now ? until - now : 0;
	return POLL_FIXED + n;
}

/* Serves until a stop signal: 0, or the exit code of a fatal error. */
static int
serve(struct answer *a, const sigset_t *mask)
{
	struct timespec ts;
	long long ms;
	nfds_t n;

	while (!sig_stop && a->fatal == 0) {
		n = poll_prepare(a, &ms);
		ts.tv_sec = ms / 1000;
		ts.tv_nsec = (ms % 1000) * 1000000;
		if (ppoll(a->pfds, n, &ts, mask) < 0) {
			if (errno != EINTR)
				return log_fail(EX_OSERR, "poll failed",
				    "{s:s}", "error", strerror(errno));
			continue;
		}
		if (a->pfds[1].revents != 0)
			events_read(a);
		if (a->pfds[2].revents != 0)
			console_flush(a);
		if (a->vserial) {
			vport_service(&a->port, a->pfds[0].revents);
		} else {
			lineserv_service(&a->serv, a->pfds + POLL_FIXED,
			    n - POLL_FIXED);
			if (a->pfds[0].revents != 0)
				clients_accept(a);
		}
		if (a->save_pending && io_now_ms() >= a->save_at)
			state_save(a);
	}
	return a->fatal;
}

/* Everything before serving: the state, the replies, the descriptors. */
static int
answer_open(struct answer *a)
{
	int code;

	state_load(a);
	reply_init(a);
	if (a->fatal != 0)
		return a->fatal;
	if ((code = events_open(a)) != 0 || (code = console_open(a)) != 0)
		return code;
	return listen_open(a);
}

static void
answer_release(struct answer *a)
{
	lineserv_release(&a->serv);
	if (a->vserial)
		vport_release(&a->port);
	jsonl_reader_release(&a->events);
	if (a->events_fd > STDIN_FILENO)
		close(a->events_fd);
	if (a->console_fd >= 0)
		close(a->console_fd);
	if (a->listen_fd >= 0)
		close(a->listen_fd);
	free(a->pfds);
	free(a->con_buf);
	free(a->message);
	reply_release(a);
}

int
main(int argc, char **argv)
{
	struct answer a = {
		.events_path = "/run/vfsentinel/events",
		.state_path = "/run/vfsentinel/gpu-init.json",
		.boot_id_path = "/proc/sys/kernel/random/boot_id",
		.dev_dir = "/dev",
		.console_fd = -1,
		.listen_fd = -1
	};
	sigset_t mask;
	int code;

	cli_start(PROG);
	parse_args(&a, argc, argv);
	cli_stop_signals(false);
	if (sig_stop_block(&mask) < 0)
		die(EX_OSERR, "cannot block the stop signals", "{s:s}",
		    "error", strerror(errno));
	(void)prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if ((code = answer_open(&a)) == 0 && (code = serve(&a, &mask)) == 0)
		log_msg(LVL_INFO, "stopping", "{s:s}", "state",
		    guestproto_state_name(a.state));
	answer_release(&a);
	return code;
}
