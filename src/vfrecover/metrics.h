/*
 * metrics.h - vfrecover's Prometheus textfile (node_exporter's
 * textfile collector), derived from the journals of DATA_DIR/gpu/recovery
 * alone, so that it says what the journals say after any crash:
 *
 *	vfsentinel_recovery_last_success_timestamp_seconds{card}
 *		the clear step's time in PF.last.json: the card's last
 *		recovery
 *	vfsentinel_recovery_unfinished{card,step} 1
 *		PF.json: a run in progress, or one that failed, found the
 *		card busy or was stopped or killed; step is the failed
 *		step, else the journal's last entry (the one a killed run
 *		was in). The card stays drained until a run recovers it.
 *
 * A vfrecover run rewrites the file after each change of its journal,
 * under GPU_DIR/recovery/metrics.lock, so that two cards' runs leave the
 * newer view: each change is followed by a locked rewrite that reads it.
 * Nothing here prints or exits.
 */
#ifndef VFS_METRICS_H
#define VFS_METRICS_H

/*
 * Rewrites path (prom_write_textfile()) from GPU_DIR's journals. 0, or
 * -1 with errno (path untouched).
 */
int metrics_write(const char *gpu_dir, const char *path);

#endif
