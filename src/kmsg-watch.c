/*
 * kmsg-watch - report NVIDIA driver init failures from the kernel log
 * (SPEC.md 3.1).
 *
 * Input: /dev/kmsg (or --kmsg FILE). On the character device one read(2)
 * returns one record; a regular file or FIFO holds one record per line
 * and ends the run at its end. Output, one line per kernel-facility
 * record whose message starts "NVRM:" and holds "RmInitAdapter failed!":
 *
 *	{"event":"gpu_init_failed","seq":N,"ts_usec":N,"message":"NVRM: ..."}
 *
 * The first open replays the whole ring buffer, so a failure logged before
 * the watcher started is still caught; every reopen seeks to the end so
 * old records are not reported twice. EPIPE means records were
 * overwritten before they were read: the scan goes on with the same
 * descriptor. Any other read error closes the device and reopens it after
 * --reopen-delay seconds; an open failure is retried every --open-retry
 * seconds.
 *
 * Exit: 0 at the end of a file or FIFO, on SIGTERM/SIGINT, or at once
 * when the guest has no NVIDIA PCI function; 64 usage; 71 out of memory;
 * 74 stdout write error, stdout reader gone, or an unreadable PCI tree;
 * 78 configuration.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "conf.h"
#include "io.h"
#include "jsonl.h"
#include "kmsg-watch/kmsg.h"
#include "log.h"
#include "pci.h"
#include "sig.h"
#include "wait.h"

#define PROG "kmsg-watch"
#define WAKE_MS 500		/* bound on noticing a signal that raced poll */

static const char usage[] =
    "usage: kmsg-watch [-c FILE] [--sysfs-root DIR] [--log-level LEVEL]\n"
    "                  [--kmsg FILE] [--no-pci-check] [--open-retry S]\n"
    "                  [--reopen-delay S]\n"
    "\n"
    "Writes a gpu_init_failed event line for each NVIDIA driver init failure\n"
    "(RmInitAdapter) in the kernel log.\n"
    "\n"
    "Options:\n"
    "  -c, --config FILE     configuration file (default $VFSENTINEL_CONF,\n"
    "                        else /etc/vfsentinel/vfsentinel.conf)\n"
    "  --sysfs-root DIR      prefix for /sys (default sysfs_root, else /)\n"
    "  --log-level LEVEL     debug, info, warn or error (default info)\n"
    "  --kmsg FILE           read FILE instead of /dev/kmsg; a regular file\n"
    "                        or FIFO holds one record a line, and its end\n"
    "                        exits 0\n"
    "  --no-pci-check        skip the check for an NVIDIA PCI function\n"
    "  --open-retry S        seconds between attempts to open the input\n"
    "                        (default 60)\n"
    "  --reopen-delay S      seconds to wait after a read error before\n"
    "                        reopening (default 5)\n"
    "  -h, --help            print this help and exit\n"
    "  --version             print the version and exit\n";

enum {
	OPT_KMSG = CLI_OPT_FIRST_FREE,
	OPT_NO_PCI_CHECK,
	OPT_OPEN_RETRY,
	OPT_REOPEN_DELAY
};

struct watch {
	const char *path;
	bool pci_check;
	unsigned open_retry;
	unsigned reopen_delay;
	int fd;
	bool opened_once;
	bool read_first;	/* character device or regular file */
	struct stop stop;
	struct kmsg_reader r;
};

/*
 * The reader's seam. The descriptor is non-blocking. The device and
 * regular files are read first and polled only when the device is empty
 * (EAGAIN), which halves the system calls of a record storm; a FIFO is
 * read only after poll reports it, because a FIFO with no writer yet
 * reads as EOF, while poll reports POLLHUP only once a writer has come
 * and gone.
 */
static ssize_t
watch_read(void *ctx, void *buf, size_t len)
{
	struct watch *w = ctx;
	bool ready = w->read_first;
	ssize_t n;
	int rc;

	for (;;) {
		if (ready && !wait_stop_check(&w->stop)) {
			n = read(w->fd, buf, len);
			if (n >= 0 || (errno != EAGAIN && errno != EINTR))
				return n;
		}
		rc = wait_fd(&w->stop, w->fd, WAKE_MS);
		if (rc < 0) {
			errno = ECANCELED;
			return -1;
		}
		ready = rc > 0;
	}
}

static int
watch_emit(void *ctx, const struct kmsg_record *rec)
{
	struct watch *w = ctx;
	json_t *ev;
	int rc;

	/* Bytes that are not UTF-8 are possible in a recording, never from
	 * the kernel, which escapes them. */
	ev = json_pack("{s:s, s:I, s:I, s:o?}", "event", "gpu_init_failed",
	    "seq", (json_int_t)rec->seq, "ts_usec", (json_int_t)rec->ts_usec,
	    "message", jsonl_string_lossy(rec->msg, rec->msglen));
	if (ev == NULL || json_object_get(ev, "message") == NULL) {
		json_decref(ev);
		wait_stop_set(&w->stop, STOP_MEMORY, ENOMEM);
		return -1;
	}
	rc = jsonl_write(stdout, ev);
	json_decref(ev);
	if (rc < 0)
		wait_stop_set(&w->stop, STOP_OUTPUT, errno);
	return rc;
}

static void
watch_note(void *ctx, enum kmsg_note what, unsigned long long n)
{
	(void)ctx;
	if (what == KMSG_NOTE_OVERRUN && n > 0)
		log_msg(LVL_WARN, "kmsg records overwritten before they were "
		    "read", "{s:I}", "lost", (json_int_t)n);
	else if (what == KMSG_NOTE_OVERRUN)
		log_msg(LVL_WARN, "kmsg records overwritten before they were "
		    "read", "{s:s}", "lost", "unknown");
	else
		log_msg(LVL_WARN, "skipped an over-long kmsg line", "{s:I}",
		    "bytes", (json_int_t)n);
}

/* Opens the input; the first open replays, later ones seek to the end. */
static int
watch_open(struct watch *w)
{
	struct stat st;

	w->fd = open(w->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (w->fd < 0 || fstat(w->fd, &st) < 0) {
		log_msg(LVL_ERROR, "cannot open kmsg (retrying)", "{s:s, s:s, "
		    "s:i}", "path", w->path, "error", strerror(errno),
		    "retry_s", (int)w->open_retry);
		if (w->fd >= 0)
			close(w->fd);
		w->fd = -1;
		return -1;
	}
	if (w->opened_once && lseek(w->fd, 0, SEEK_END) < 0)
		log_msg(LVL_WARN, "cannot seek kmsg to end (may re-report old "
		    "records)", "{s:s, s:s}", "path", w->path, "error",
		    strerror(errno));
	log_msg(LVL_INFO, "watching kmsg for GPU init failures", "{s:s, s:s}",
	    "path", w->path, "from", w->opened_once ? "end" : "start");
	w->opened_once = true;
	w->read_first = S_ISCHR(st.st_mode) || S_ISREG(st.st_mode);
	if (w->r.buf != NULL && w->r.lines == !S_ISCHR(st.st_mode)) {
		kmsg_reader_reset(&w->r);	/* keeps the counters */
		return 0;
	}
	kmsg_reader_release(&w->r);
	if (kmsg_reader_init(&w->r, !S_ISCHR(st.st_mode)) < 0) {
		wait_stop_set(&w->stop, STOP_MEMORY, ENOMEM);
		return -1;
	}
	return 0;
}

/* Reads until the input ends (1), fails (0: reopen) or the watch stops
 * (-1). */
static int
watch_scan(struct watch *w)
{
	int rc;

	while ((rc = kmsg_step(&w->r)) > 0)
		;
	if (rc < 0 && w->stop.why != RUNNING)
		return -1;
	if (rc == 0 && w->r.lines)
		return 1;
	log_msg(LVL_WARN, "read kmsg failed (reopening)", "{s:s, s:s, s:i}",
	    "path", w->path, "error", rc < 0 ? strerror(errno) :
	    "end of input", "delay_s", (int)w->reopen_delay);
	return 0;
}

static int
watch_run(struct watch *w)
{
	int rc = 0;

	while (w->stop.why == RUNNING) {
		if (watch_open(w) < 0) {
			if (w->stop.why == RUNNING)
				wait_nap(&w->stop, w->open_retry);
			continue;
		}
		rc = watch_scan(w);
		close(w->fd);
		w->fd = -1;
		if (rc != 0)
			break;
		wait_nap(&w->stop, w->reopen_delay);
	}
	return rc;
}

static void
parse_args(int argc, char **argv, struct watch *w, struct conf *conf)
{
	static const struct option opts[] = {
		CLI_COMMON_OPTIONS,
		{ "kmsg", required_argument, NULL, OPT_KMSG },
		{ "no-pci-check", no_argument, NULL, OPT_NO_PCI_CHECK },
		{ "open-retry", required_argument, NULL, OPT_OPEN_RETRY },
		{ "reopen-delay", required_argument, NULL, OPT_REOPEN_DELAY },
		{ 0 }
	};
	struct cli cli;
	int c;

	cli_init(&cli, usage);
	while ((c = cli_next(&cli, argc, argv, CLI_SHORTOPTS, opts)) != -1) {
		switch (c) {
		case OPT_KMSG:
			w->path = optarg;
			break;
		case OPT_NO_PCI_CHECK:
			w->pci_check = false;
			break;
		case OPT_OPEN_RETRY:
			w->open_retry = cli_uint(&cli, "--open-retry", optarg,
			    1, 86400);
			break;
		case OPT_REOPEN_DELAY:
			w->reopen_delay = cli_uint(&cli, "--reopen-delay",
			    optarg, 0, 86400);
			break;
		default:
			cli_bad_option(&cli, argv);
		}
	}
	cli_no_operands(&cli, argc, argv);
	cli_finish(&cli, conf);
}

/*
 * Whether the watch is needed: 1 the guest has an NVIDIA function, 0 it
 * has none (logged), or the exit code 74 when the scan failed (logged).
 */
static int
need_watch(const struct conf *conf)
{
	char why[512] = "";
	int rc;

	rc = pci_has_nvidia(conf->sysfs_root, why, sizeof(why));
	if (rc < 0)
		return log_fail(EX_IOERR, "cannot scan PCI functions",
		    "{s:s, s:s}", "sysfs_root", conf->sysfs_root, "error",
		    why);
	if (rc == 0)
		log_msg(LVL_INFO, "no NVIDIA PCI function; GPU init watch not "
		    "needed", "{s:s}", "sysfs_root", conf->sysfs_root);
	return rc;
}

static int
exit_code(const struct watch *w)
{
	cli_stop_log(&w->stop);
	if (w->stop.why == STOP_MEMORY)
		log_msg(LVL_ERROR, "out of memory", NULL);
	log_msg(LVL_INFO, "kmsg watch ended", "{s:I, s:I, s:I, s:I}",
	    "matched", (json_int_t)w->r.stats.matched,
	    "overruns", (json_int_t)w->r.stats.overruns,
	    "lost", (json_int_t)w->r.stats.lost,
	    "overlong", (json_int_t)w->r.stats.overlong);
	return wait_exit_code(&w->stop);
}

int
main(int argc, char **argv)
{
	struct watch w = {
		.path = "/dev/kmsg", .pci_check = true, .open_retry = 60,
		.reopen_delay = 5, .fd = -1,
		.r = { .read = watch_read, .emit = watch_emit,
		    .note = watch_note }
	};
	struct conf conf;
	int code;

	cli_start(PROG);
	parse_args(argc, argv, &w, &conf);
	if (w.pci_check && (code = need_watch(&conf)) != 1) {
		if (code == 0)
			cli_close_stdout();
		return code;
	}
	w.r.ctx = &w;
	cli_stop_signals(true);
	watch_run(&w);
	code = exit_code(&w);
	kmsg_reader_release(&w.r);
	return cli_stop_close(code);
}
