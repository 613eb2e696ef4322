/*
 * vsock-answer.h - what the parts of vsock-answer share: the state of
 * one run (struct answer) and the parts' entry points. src/vsock-answer.c
 * holds the options, the events, the connections and the poll loop;
 * state.c the guest state's message and its file; reply.c the reply
 * lines and the reply to a request; console.c the serial console's
 * markers. Program-side: these log, and set a->fatal.
 */
#ifndef VSOCK_ANSWER_H
#define VSOCK_ANSWER_H

#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "guestproto.h"
#include "jsonl.h"
#include "lineserv.h"
#include "vport.h"

struct answer {
	const char *events_path, *state_path;
	const char *boot_id_path, *console_path;
	char listen[PATH_MAX];
	char sysfs_root[PATH_MAX];	/* for a virtio-serial port's name */
	const char *dev_dir;		/* where its device is (/dev) */
	bool vserial;			/* --listen virtio-serial: */
	struct vport port;		/* ... its port, SPEC 6.1 */
	char boot_id[64];
	enum guest_state state;
	char *message;			/* owned, FAILED only */
	struct lineserv_reply *reply;	/* a reference: the reply for state */
	struct lineserv_reply *bad, *unsupported;	/* error replies */
	bool save_pending;
	long long save_at;
	int listen_fd, events_fd, console_fd;
	struct jsonl_reader events;
	bool events_done;		/* stdin or a file reached its end */
	char *con_buf;			/* owned: console bytes to write */
	size_t con_len;
	bool fail_marked, ok_marked;
	long long fail_marker_at;
	struct lineserv serv;		/* the connections */
	struct pollfd *pfds;		/* owned: POLL_FIXED + serv.max */
	unsigned long bad_events, evicted_logged;
	long long evict_logged_at;
	int fatal;			/* an exit code that ends serve() */
};

/* state.c: sets the failure message (NULL clears), cut to
 * GUEST_MESSAGE_MAX bytes at a UTF-8 character boundary. */
void state_message_set(struct answer *a, const char *msg);

/* state.c: writes the state file; a failure is logged and retried. */
void state_save(struct answer *a);

/* state.c: reads the boot id and restores the state file of this boot. */
void state_load(struct answer *a);

/* reply.c: makes the reply lines (the state's and the two errors'). */
void reply_init(struct answer *a);

/* reply.c: rebuilds the reply line for the current state (the old one
 * stays on failure, with a->fatal set). */
void reply_update(struct answer *a);

/* reply.c: the reply to the request line[0, len) (lineserv_answer_fn;
 * ctx is the struct answer). Borrowed. */
struct lineserv_reply *reply_request(void *ctx, const char *line,
    size_t len);

/* reply.c: drops the reply lines. */
void reply_release(struct answer *a);

/* console.c: opens --console (if given); 0 or 74. */
int console_open(struct answer *a);

/* console.c: writes what the console buffer holds, as far as it goes. */
void console_flush(struct answer *a);

/* console.c: queues three identical marker lines, then tries to write. */
void console_marker(struct answer *a, bool failed);

#endif
