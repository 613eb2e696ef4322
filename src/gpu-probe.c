/*
 * gpu-probe - force NVIDIA driver initialisation at boot and report it
 * (SPEC.md 3.2).
 *
 * Opening the GPU runs the driver's RmInitAdapter: on a wedged VF the
 * probe itself makes the kernel log the failure that kmsg-watch reports,
 * without waiting for a workload to touch the GPU; on a healthy one it is
 * the only source of "driver init succeeded".
 *
 * Each attempt is a child process in its own process group, its stdin
 * /dev/null, stdout and stderr one pipe that is always drained (at most
 * 64 KiB kept). --method nvidia-smi: the child runs `nvidia-smi -L`.
 * --method open (images without nvidia-smi): the child opens every GPU's
 * /dev/nvidiaN that PROC/driver/nvidia/gpus lists (nvdev.h), which is
 * what runs RmInitAdapter, and exits 0 only if every open succeeded. An
 * attempt still running after --attempt-timeout seconds is killed with
 * SIGKILL to the whole group and reaped before anything else happens, so
 * there is never more than one attempt alive, even when one hangs in the
 * kernel. --method auto (the default): nvidia-smi if there is one, else
 * open if the driver's gpus directory exists, else disabled. Output:
 *
 *	{"event":"gpu_init_ok","method":"nvidia-smi","output":"GPU 0: ..."}
 *	{"event":"gpu_probe_failed","method":"open","error":"open ..."}
 *	{"event":"gpu_probe_gave_up","method":M}	(after --window seconds)
 *	{"event":"gpu_probe_disabled"}		(no method applies)
 *
 * Exit: 0 after success, giving up, disabled, or SIGTERM/SIGINT (which
 * kill and reap a running attempt first); 64 usage; 71 fork or pipe
 * failed; 74 stdout write error or its reader gone; 78 configuration.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "conf.h"
#include "io.h"
#include "jsonl.h"
#include "log.h"
#include "gpu-probe/nvdev.h"
#include "runcmd.h"
#include "sig.h"
#include "wait.h"

#define PROG "gpu-probe"
#define OUTPUT_MAX 65536	/* output kept per attempt */
/* A failure's text: the output and its cause. */
#define WHY_MAX (OUTPUT_MAX + 64)
#define TICK_MS 100		/* how often a running attempt is checked */

static const char usage[] =
    "usage: gpu-probe [-c FILE] [--log-level LEVEL]\n"
    "                 [--method auto|nvidia-smi|open] [--nvidia-smi PATH]\n"
    "                 [--proc-root DIR] [--dev-dir DIR]\n"
    "                 [--attempt-timeout S] [--retry-interval S]\n"
    "                 [--window S]\n"
    "\n"
    "Forces NVIDIA driver init at boot and writes the outcome as event lines\n"
    "(gpu_init_ok, or the failure).\n"
    "\n"
    "Options:\n"
    "  -c, --config FILE     configuration file (default $VFSENTINEL_CONF,\n"
    "                        else /etc/vfsentinel/vfsentinel.conf)\n"
    "  --log-level LEVEL     debug, info, warn or error (default info)\n"
    "  --method auto|nvidia-smi|open\n"
    "                        how an attempt proves driver init: run\n"
    "                        nvidia-smi -L, or open every /dev/nvidiaN; auto:\n"
    "                        nvidia-smi if found, else open (default)\n"
    "  --nvidia-smi PATH     the program to run (default the first nvidia-smi\n"
    "                        on PATH)\n"
    "  --proc-root DIR       where /proc is, for tests (default /)\n"
    "  --dev-dir DIR         where the device nodes are, and are made\n"
    "                        (default /dev)\n"
    "  --attempt-timeout S   seconds an attempt may run (default 30)\n"
    "  --retry-interval S    seconds between attempts (default 15)\n"
    "  --window S            seconds after which a failed attempt is the last\n"
    "                        (default 600)\n"
    "  -h, --help            print this help and exit\n"
    "  --version             print the version and exit\n";

enum {
	OPT_NVIDIA_SMI = CLI_OPT_FIRST_FREE,
	OPT_ATTEMPT_TIMEOUT,
	OPT_RETRY_INTERVAL,
	OPT_WINDOW,
	OPT_METHOD,
	OPT_PROC_ROOT,
	OPT_DEV_DIR
};

enum method {
	METHOD_AUTO,
	METHOD_SMI,
	METHOD_OPEN
};

static const char *const method_names[] = { "auto", "nvidia-smi", "open" };

struct probe {
	enum method method;	/* --method */
	enum method use;	/* the one chosen; METHOD_AUTO: none */
	const char *smi_arg;	/* --nvidia-smi, or NULL: look on PATH */
	char smi[PATH_MAX];
	const char *proc_root;	/* --proc-root */
	const char *dev_dir;	/* --dev-dir */
	unsigned attempt_timeout;
	unsigned retry_interval;
	unsigned window;
	struct stop stop;
};

struct attempt {
	pid_t pid;
	int fd;			/* read end of the output pipe, -1 at EOF */
	char *out;		/* OUTPUT_MAX bytes, owned */
	char *why;		/* WHY_MAX bytes, owned: a failure's text */
	size_t len;
	bool reaped;
	bool killed;		/* by us, at the timeout */
	int status;
};

/* Writes one event line with the method in use (if any); "text" (may be
 * NULL) is added as key. */
static int
emit(struct probe *p, const char *event, const char *key, const char *text,
    size_t len)
{
	json_t *ev;
	int rc = 0;

	ev = json_pack("{s:s}", "event", event);
	if (ev != NULL && p->use != METHOD_AUTO && json_object_set_new(ev,
	    "method", json_string(method_names[p->use])) < 0)
		rc = -1;
	if (ev == NULL || (key != NULL &&
	    json_object_set_new(ev, key, jsonl_string_lossy(text, len)) < 0))
		rc = -1;
	if (rc == 0)
		rc = jsonl_write(stdout, ev);
	json_decref(ev);
	if (rc < 0)
		wait_stop_set(&p->stop, STOP_OUTPUT, errno);
	return rc;
}

/* The child's side of an attempt: own group, dies with the probe,
 * plain signals, stdin /dev/null, stdout and stderr the pipe; then the
 * method's work. */
static noreturn void
child_run(const struct probe *p, char *buf, int out, pid_t parent)
{
	int rc;

	/* Its own group, so a kill reaches what it starts. A kill -9 of
	 * gpu-probe must not leave its attempt running (SPEC 5); getppid()
	 * catches a parent that died before this. */
	if (setpgid(0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 ||
	    getppid() != parent)
		_exit(127);
	if (runcmd_child_stdio(out) < 0)
		_exit(127);
	if (p->use == METHOD_OPEN) {
		/* buf: the parent's output buffer, a copy of our own. */
		rc = nvdev_probe(p->proc_root, p->dev_dir, buf, OUTPUT_MAX);
		_exit(io_write_all(STDOUT_FILENO, buf, strlen(buf)) < 0 ||
		    rc < 0);
	}
	execl(p->smi, "nvidia-smi", "-L", (char *)NULL);
	dprintf(STDERR_FILENO, "exec %s: %s\n", p->smi, strerror(errno));
	_exit(127);
}

static int
attempt_start(const struct probe *p, struct attempt *a)
{
	pid_t self = getpid();
	int pfd[2];

	a->len = 0;
	a->reaped = a->killed = false;
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	if (io_set_nonblock(pfd[0], true) < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	a->pid = fork();
	if (a->pid == 0)
		child_run(p, a->out, pfd[1], self);
	close(pfd[1]);
	if (a->pid < 0) {
		close(pfd[0]);
		return -1;
	}
	/* Also here, so the group exists before any kill (either wins;
	 * this one fails with EACCES once the child has run its exec). */
	(void)setpgid(a->pid, a->pid);
	a->fd = pfd[0];
	return 0;
}

/* Reads what is there: kept up to OUTPUT_MAX, the rest thrown away so a
 * chatty child never blocks on a full pipe. */
static void
attempt_drain(struct attempt *a)
{
	char scratch[4096];
	ssize_t n;

	while (a->fd >= 0) {
		if (a->len < OUTPUT_MAX)
			n = read(a->fd, a->out + a->len, OUTPUT_MAX - a->len);
		else
			n = read(a->fd, scratch, sizeof(scratch));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			close(a->fd);
			a->fd = -1;
		} else if (a->len < OUTPUT_MAX)
			a->len += (size_t)n;
	}
}

static void
attempt_reap(struct attempt *a, int flags)
{
	pid_t r;

	if (a->reaped)
		return;
	do
		r = waitpid(a->pid, &a->status, flags);
	while (r < 0 && errno == EINTR);
	a->reaped = r == a->pid || (r < 0 && errno == ECHILD);
}

/* SIGKILL to the attempt's whole group, then a blocking reap. */
static void
attempt_kill(struct attempt *a)
{
	if (!a->reaped) {
		a->killed = true;
		runcmd_kill_group(a->pid);
		attempt_reap(a, 0);
	} else if (a->fd >= 0)
		kill(-a->pid, SIGKILL);	/* leftovers holding the pipe */
}

/*
 * Runs one attempt to its end: the child reaped and its pipe closed, or
 * the timeout (kill, reap). Returns 0, or -1 when the probe must stop
 * (the attempt is then killed and reaped too).
 */
static int
attempt_wait(struct probe *p, struct attempt *a)
{
	long long deadline = io_now_ms() + 1000LL * p->attempt_timeout;
	long long left = 0;

	while (!a->reaped || a->fd >= 0) {
		if (wait_stop_check(&p->stop) ||
		    (left = deadline - io_now_ms()) <= 0 ||
		    wait_fd(&p->stop, a->fd, left > TICK_MS ? TICK_MS :
		    (int)left) < 0) {
			attempt_kill(a);
			if (a->fd >= 0) {
				attempt_drain(a);
				close(a->fd);	/* nothing more is wanted */
				a->fd = -1;
			}
			break;
		}
		attempt_drain(a);
		attempt_reap(a, WNOHANG);
	}
	return p->stop.why == RUNNING ? 0 : -1;
}

static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The output without surrounding white space (not NUL-terminated). */
static const char *
trimmed(const struct attempt *a, size_t *len)
{
	size_t s = 0, e = a->len;

	while (s < e && is_space(a->out[s]))
		s++;
	while (e > s && is_space(a->out[e - 1]))
		e--;
	*len = e - s;
	return a->out + s;
}

/* Describes a failed attempt; 0 when it succeeded. */
static int
attempt_error(const struct probe *p, struct attempt *a, char *buf,
    size_t len)
{
	const char *out;
	size_t n;

	out = trimmed(a, &n);
	if (a->killed)
		(void)snprintf(buf, len, "killed after %us",
		    p->attempt_timeout);
	else if (WIFEXITED(a->status) && WEXITSTATUS(a->status) == 0)
		return 0;
	else if (p->use == METHOD_OPEN && WIFEXITED(a->status) &&
	    WEXITSTATUS(a->status) == 1 && n > 0)
		(void)snprintf(buf, len, "%.*s", (int)n, out);	/* its report */
	else if (WIFEXITED(a->status))
		(void)snprintf(buf, len, "exit status %d%s%.*s",
		    WEXITSTATUS(a->status), n ? ": " : "", (int)n, out);
	else
		(void)snprintf(buf, len, "killed by signal %d%s%.*s",
		    WTERMSIG(a->status), n ? ": " : "", (int)n, out);
	return -1;
}

/* One attempt: 1 success, 0 failed (reported), -1 stop. */
static int
probe_once(struct probe *p, struct attempt *a, unsigned nr)
{
	char *err = a->why;
	const char *out;
	size_t n;

	if (attempt_start(p, a) < 0) {
		wait_stop_set(&p->stop, STOP_OS, errno);
		return -1;
	}
	if (attempt_wait(p, a) < 0)
		return -1;
	if (attempt_error(p, a, err, WHY_MAX) == 0) {
		out = trimmed(a, &n);
		log_msg(LVL_INFO, "GPU driver initialized", "{s:s, s:i}",
		    "method", method_names[p->use], "attempt", (int)nr);
		return emit(p, "gpu_init_ok", "output", out, n) < 0 ? -1 : 1;
	}
	log_msg(LVL_WARN, "GPU init probe attempt failed", "{s:s, s:s, s:i}",
	    "method", method_names[p->use], "error", err, "attempt", (int)nr);
	return emit(p, "gpu_probe_failed", "error", err, strlen(err)) < 0 ?
	    -1 : 0;
}

static void
probe_run(struct probe *p)
{
	long long start = io_now_ms();
	struct attempt a = { .fd = -1 };
	unsigned nr;
	int rc;

	a.out = malloc(OUTPUT_MAX);
	a.why = malloc(WHY_MAX);
	if (a.out == NULL || a.why == NULL) {
		wait_stop_set(&p->stop, STOP_OS, errno);
		free(a.out);
		free(a.why);
		return;
	}
	log_msg(LVL_INFO, "GPU init probe started", "{s:s}", "method",
	    method_names[p->use]);
	for (nr = 1;; nr++) {
		rc = probe_once(p, &a, nr);
		if (rc != 0)
			break;
		if (io_now_ms() - start >= 1000LL * p->window) {
			log_msg(LVL_WARN, "GPU init probe gave up",
			    "{s:i, s:i}", "window_s", (int)p->window,
			    "attempts", (int)nr);
			emit(p, "gpu_probe_gave_up", NULL, NULL, 0);
			break;
		}
		if (wait_nap(&p->stop, p->retry_interval) < 0)
			break;
	}
	free(a.out);
	free(a.why);
}

/* Chooses p->use (SPEC 3.2); METHOD_AUTO when none applies. */
static void
choose_method(struct probe *p)
{
	bool smi = p->method != METHOD_OPEN && nvdev_find_smi(p->smi_arg,
	    getenv("PATH"), p->smi, sizeof(p->smi)) == 0;

	if (p->method == METHOD_OPEN || (p->method == METHOD_AUTO && !smi &&
	    nvdev_present(p->proc_root)))
		p->use = METHOD_OPEN;
	else if (smi)
		p->use = METHOD_SMI;
}

static void
probe_disabled(struct probe *p)
{
	log_msg(LVL_WARN, "GPU init probe disabled; driver init success "
	    "cannot be reported", "{s:s, s:s, s:s}", "error", p->smi_arg ?
	    "nvidia-smi is not an executable file" :
	    "nvidia-smi not found on PATH", "method", method_names[p->method],
	    "open", p->method == METHOD_AUTO ? "no driver GPU list "
	    "(proc/driver/nvidia/gpus)" : "not tried");
	emit(p, "gpu_probe_disabled", NULL, NULL, 0);
}

static enum method
parse_method(const struct cli *cli, const char *arg)
{
	enum method m;

	for (m = METHOD_AUTO; m <= METHOD_OPEN; m++)
		if (strcmp(arg, method_names[m]) == 0)
			return m;
	cli_usage_error(cli, "--method must be auto, nvidia-smi or open");
}

static void
parse_args(int argc, char **argv, struct probe *p)
{
	static const struct option opts[] = {
		CLI_COMMON_OPTIONS,
		{ "nvidia-smi", required_argument, NULL, OPT_NVIDIA_SMI },
		{ "attempt-timeout", required_argument, NULL,
		    OPT_ATTEMPT_TIMEOUT },
		{ "retry-interval", required_argument, NULL,
		    OPT_RETRY_INTERVAL },
		{ "window", required_argument, NULL, OPT_WINDOW },
		{ "method", required_argument, NULL, OPT_METHOD },
		{ "proc-root", required_argument, NULL, OPT_PROC_ROOT },
		{ "dev-dir", required_argument, NULL, OPT_DEV_DIR },
		{ 0 }
	};
	struct conf conf;
	struct cli cli;
	int c;

	cli_init(&cli, usage);
	while ((c = cli_next(&cli, argc, argv, CLI_SHORTOPTS, opts)) != -1) {
		switch (c) {
		case OPT_NVIDIA_SMI:
			p->smi_arg = optarg;
			break;
		case OPT_ATTEMPT_TIMEOUT:
			p->attempt_timeout = cli_uint(&cli,
			    "--attempt-timeout", optarg, 1, 86400);
			break;
		case OPT_RETRY_INTERVAL:
			p->retry_interval = cli_uint(&cli, "--retry-interval",
			    optarg, 0, 86400);
			break;
		case OPT_WINDOW:
			p->window = cli_uint(&cli, "--window", optarg, 0,
			    864000);
			break;
		case OPT_METHOD:
			p->method = parse_method(&cli, optarg);
			break;
		case OPT_PROC_ROOT:
			p->proc_root = optarg;
			break;
		case OPT_DEV_DIR:
			p->dev_dir = optarg;
			break;
		default:
			cli_bad_option(&cli, argv);
		}
	}
	cli_no_operands(&cli, argc, argv);
	cli_finish(&cli, &conf);
}

static int
exit_code(const struct probe *p)
{
	if (p->stop.why == STOP_SIGNAL)
		log_msg(LVL_INFO, "GPU init probe stopped by signal", NULL);
	cli_stop_log(&p->stop);
	if (p->stop.why == STOP_OS)
		log_msg(LVL_ERROR, "cannot start a probe attempt", "{s:s}",
		    "error", strerror(p->stop.err));
	return wait_exit_code(&p->stop);
}

int
main(int argc, char **argv)
{
	struct probe p = {
		.attempt_timeout = 30, .retry_interval = 15, .window = 600,
		.proc_root = "/", .dev_dir = "/dev"
	};

	cli_start(PROG);
	parse_args(argc, argv, &p);
	cli_stop_signals(true);
	choose_method(&p);
	if (p.use == METHOD_AUTO)
		probe_disabled(&p);
	else
		probe_run(&p);
	return cli_stop_close(exit_code(&p));
}
