/*
 * poller.h - the engine of sentinel-poll (SPEC.md 4.4): scan after scan,
 * list the targets (targets.h), keep those with a transport and a live
 * VMM (vmm.h), ask each guest for its GPU init state (checkpool.h, or
 * its console log, logtail.h, or both: SPEC 6.2), confirm the
 * assignment of each failed/ok verdict (confirm.h) and hand one check
 * line per target to the caller. A failure seen is reported again at
 * every scan until the store holds it (unsaved.h, SPEC 7.2); a target
 * that cannot be checked is reported with its reason (pollstat.h, SPEC
 * 7.1).
 * While no VF has the vendor-VFIO framework it lists nothing and
 * re-checks sysfs every recheck seconds; scans start when VFs appear.
 * After each scan or re-check the metrics textfile (pollstat.h) is
 * rewritten.
 *
 * Nothing here prints or exits: check lines go to the caller's emit
 * function, whatever is worth a log line to its event function. SIGTERM
 * and SIGINT end a wait (sig.h; they are let in only inside ppoll(2),
 * with run_mask), never a line half-written; the long steps (a console
 * log's reads, a store lock's wait) let them in between their parts, so
 * a stop ends the program within a second in any state (SPEC 7.2).
 */
#ifndef VFS_POLLER_H
#define VFS_POLLER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "logtail.h"
#include "opener.h"
#include "pollstat.h"
#include "targets.h"
#include "vmm.h"

enum poller_event_kind {
	POLLER_EV_UNPOLLED,	/* t, reason, source, path, vmm, why, err: t
				 * cannot be checked (SPEC 7.1); repeat: the
				 * same reason reported less than 5 minutes
				 * ago */
	POLLER_EV_TABLE,	/* err; repeat: PROC/net/unix unreadable */
	POLLER_EV_BAD_LINE,	/* lineno, why (NULL: over-long): skipped */
	POLLER_EV_LIST_FAILED,	/* why: a scan cannot list its targets */
	POLLER_EV_STDIN,	/* why: --targets - could not be read */
	POLLER_EV_RPC_ERROR,	/* t, why: the guest agent did not answer;
				 * repeat: the same why within 5 minutes */
	POLLER_EV_VMM_BACK,	/* t: VMM alive again after a skip: polled */
	POLLER_EV_UNCONFIRMED,	/* t, action, why: re-read failed, dropped */
	POLLER_EV_CHANGED,	/* t, action: assignment changed, dropped */
	POLLER_EV_SCAN,		/* listed, polled, ms: a scan finished */
	POLLER_EV_WAITING,	/* no VF has the framework (each time) */
	POLLER_EV_APPEARED,	/* the framework is back: scans start */
	POLLER_EV_METRICS,	/* path, err: the first failed write */
	POLLER_EV_PEER_GONE,	/* the output's reader went away */
	POLLER_EV_OPENER_GONE	/* the opener died: the run ends (71) */
};

/* What an unpolled target's reason is about. */
enum poller_source {
	POLLER_SRC_CLAIM,		/* the claim: no source, no control
					 * socket */
	POLLER_SRC_CONTROL,		/* the VMM's control socket (path) */
	POLLER_SRC_AGENT,		/* the agent endpoint (path) */
	POLLER_SRC_CONSOLE		/* the console log (path; log says
					 * how) */
};

/* What happened; the fields the kind names are set, pointers borrowed
 * for the call. */
struct poller_event {
	enum poller_event_kind kind;
	const struct target *t;
	enum pollstat_reason reason;
	enum poller_source source;
	enum logtail_error log;		/* POLLER_SRC_CONSOLE: what failed */
	const char *why;
	const char *action;		/* "init_failure" or "init_success" */
	const char *path;
	enum vmm_state vmm;
	int err;			/* an errno, 0 for none */
	bool repeat;
	unsigned long lineno;
	size_t listed, polled;
	long long ms;
};

/* Takes one check line (the reference too): 0, or -1 to stop (a write
 * error: the run ends as STOP_OUTPUT). */
typedef int poller_emit_fn(void *arg, json_t *line);
typedef void poller_event_fn(void *arg, const struct poller_event *ev);

/* Whether the guest kernel's own console line counts (SPEC 6.2): auto
 * is unless the agent answered over an endpoint in this assignment. */
enum poller_kernel_lines {
	POLLER_KL_AUTO,
	POLLER_KL_ON,
	POLLER_KL_OFF
};

struct poller_conf {
	unsigned interval;		/* seconds between scan starts */
	unsigned timeout;		/* seconds per check */
	unsigned concurrency;		/* checks in flight */
	unsigned recheck;		/* seconds between framework checks */
	unsigned vsock_port;		/* for "vsock:CID" without a port */
	unsigned threshold;		/* gpu.vf_quarantine_threshold */
	unsigned long long console_read_max;	/* bytes per log per scan */
	bool once;			/* one scan (or check), then return */
	bool no_agent;			/* --source log: no endpoint polled */
	bool no_log;			/* --source vsock: no console read */
	enum poller_kernel_lines kernel_lines;	/* SPEC 6.2 */
	const char *sysfs_root;
	const char *proc_root;		/* PROC is PROC_ROOT/proc */
	const char *metrics;		/* textfile path, or NULL */
	struct targets_source source;	/* stdin_list is the engine's */
	const sigset_t *run_mask;	/* for ppoll: TERM/INT deliverable */
	int out_fd;			/* watched for its reader going away */
	poller_emit_fn *emit;
	poller_event_fn *event;
	void *arg;			/* for emit and event */
	struct openreq *opener;		/* borrowed; NULL: none. What this
					 * process is denied (a console log,
					 * an agent channel, a control
					 * socket) is asked of it (opener.h,
					 * SPEC 8.3) */
};

struct poller;

/*
 * An engine for conf (borrowed; it must outlive the engine). With
 * --targets - (source.path "-") the targets are read from stdin here,
 * once. NULL/ENOMEM.
 */
struct poller *poller_new(const struct poller_conf *conf);

/*
 * Scans until once is done, a stop signal, the output's reader going
 * away or a failed emit. The exit code (wait.h wait_exit_code): 0, 71
 * (out of memory) or 74 (the output).
 */
int poller_run(struct poller *p);

void poller_free(struct poller *p);

#endif
