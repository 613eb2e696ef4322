/*
 * prom.h - Prometheus text exposition (the node_exporter textfile
 * collector's format): HELP and TYPE once per family, samples without
 * timestamps, label values escaped, a final newline.
 */
#ifndef VFS_PROM_H
#define VFS_PROM_H

#include <stddef.h>

struct prom {
	char *buf;		/* owned */
	size_t len;
	size_t cap;
	int failed;		/* an allocation failed: prom_finish() says so */
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
 * Rewrites the textfile path with len bytes of text: path.tmp (a name
 * the collector ignores, not ending in .prom), mode 0644 whatever the
 * umask, then rename. No fsync: metrics restart with the process anyway,
 * and the collector only needs never to see a partial file. 0 or
 * -1/errno (path.tmp removed).
 */
int prom_write_textfile(const char *path, const char *text, size_t len);

#endif
