/*
 * emit.c - vfstore's output: one JSON object a line on stdout, flushed
 * or buffered (vfstore.h), each returning an exit code (SPEC.md 2.2).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "jsonl.h"
#include "log.h"

#include "vfstore.h"

static int
write_failed(void)
{
	log_msg(LVL_ERROR, "write stdout failed", "{s:s}", "error",
	    strerror(errno));
	return EX_IOERR;
}

/* Writes obj as one line, flushed unless buffered (emit_flush() then
 * follows), and drops the reference; 0 or EX_IOERR. */
int
emit_line(json_t *obj, bool buffered)
{
	int rc = 0;

	if (obj == NULL) {
		log_msg(LVL_ERROR, "out of memory", NULL);
		return EX_OSERR;
	}
	if ((buffered ? jsonl_put(stdout, obj) : jsonl_write(stdout, obj)) < 0)
		rc = write_failed();
	json_decref(obj);
	return rc;
}

int
emit(json_t *obj)
{
	return emit_line(obj, false);
}

int
emit_flush(void)
{
	return fflush(stdout) == EOF ? write_failed() : 0;
}
