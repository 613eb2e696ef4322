/*
 * prom.h - Prometheus text exposition (the node_exporter textfile
 * collector's format): HELP and TYPE once per family, samples without
 * timestamps, label values escaped, a final newline.
 */
#ifndef VFS_PROM_H
#define VFS_PROM_H

#include <stddef.h>

#include "obuf.h"

struct prom {
	struct obuf out;	/* owned; out.failed: prom_finish() says so */
};

void prom_init(struct prom *p);
void prom_release(struct prom *p);

/* Starts a family: "# HELP name help" and "# TYPE name type". */
void prom_family(struct prom *p, const char *name, const char *type,
    const char *help);

/*
 * One sample. labels is NULL or a NULL-terminated list of name, value
 * pairs: (const char *[]){ "kind", "total", NULL }. Values are escaped.
 */
void prom_sample(struct prom *p, const char *name, const char **labels,
    double value);

/* The finished text (borrowed until prom_release), or NULL/ENOMEM. */
const char *prom_finish(struct prom *p, size_t *len);

/*
 * Replaces the file path, which readers (node_exporter's textfile
 * collector) read without any lock, with len bytes of text, so that a
 * reader only ever sees a whole version, even with several writers at
 * once: a temporary file of its own, path.tmp.XXXXXX (mkostemp in the
 * same directory, O_CLOEXEC; the name never ends in .prom), mode 0644
 * whatever the umask, written, fsynced, renamed over path, then the
 * directory fsynced. The directory is created if missing.
 *
 * The writer holds an exclusive flock(2) on its temporary file until
 * after the rename, and first removes every path.tmp and path.tmp.*
 * that no one holds locked: what a killed writer left behind (SPEC 5).
 * A live writer's file is never removed; the lock dies with its owner,
 * so no pid or age guess is needed (neither survives pid namespaces or
 * pid reuse).
 *
 * 0, or -1/errno with path untouched and no temporary file left (except
 * when only the final directory fsync failed: the new path is in place).
 */
int prom_write_textfile(const char *path, const char *text, size_t len);

#endif
