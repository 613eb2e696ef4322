/*
 * config.c - vfstore config prints the effective configuration, the file
 * then the options, as one JSON object (SPEC.md 4.2).
 */
#include <errno.h>

#include "conf.h"
#include "log.h"

#include "vfstore.h"

int
cmd_config(struct ctx *c)
{
	json_t *obj = conf_json(&c->conf);

	if (obj == NULL && errno == EILSEQ) {
		log_msg(LVL_ERROR, "configuration: a path is not valid UTF-8",
		    NULL);
		return EX_CONFIG;
	}
	return emit(obj);
}
