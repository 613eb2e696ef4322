/*
 * state.c - vsock-answer's state across restarts: the failure message it
 * answers with, and --state-file, written atomically on every change and
 * restored at start when its boot id is this boot's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "atomic.h"
#include "io.h"
#include "log.h"
#include "vsock-answer.h"

#define SAVE_RETRY_MS 5000		/* retry a failed state-file write */

/* Sets the failure message (NULL clears), cut to GUEST_MESSAGE_MAX bytes
 * at a UTF-8 character boundary. */
void
state_message_set(struct answer *a, const char *msg)
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
		a->fatal = log_fail(EX_OSERR, "out of memory", NULL);
}

/* Writes the state file; a failure is logged and retried later. */
void
state_save(struct answer *a)
{
	struct atomic_result res = { 0 };
	char *text;
	json_t *obj;
	int rc = -1;

	obj = json_pack("{s:s, s:s, s:s}", "boot_id", a->boot_id, "state",
	    guestproto_state_name(a->state), "failure_message",
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

	if (boot == NULL || name == NULL ||
	    guestproto_state_parse(name, &st) < 0) {
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
	state_message_set(a, st == GUEST_FAILED ? (msg != NULL ? msg : "") :
	    NULL);
	a->ok_marked = st == GUEST_OK;
	log_msg(LVL_INFO, "state restored", "{s:s, s:s}", "state", name,
	    "file", a->state_path);
}

void
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
