/*
 * vmm.h - is the VMM behind a control socket (QEMU's QMP socket, Cloud
 * Hypervisor's or Firecracker's API socket) still running? SPEC.md 4.4,
 * "VMM liveness", decided without disturbing the VMM.
 *
 * A caller loads the listener table once per pass and asks about each
 * path against it:
 *
 *	struct vmm_listeners l;
 *	vmm_listeners_load(&l, proc_root);	(l is usable after a failure)
 *	st = vmm_liveness(&l, path, &why);
 *	vmm_listeners_release(&l);
 */
#ifndef VFS_VMM_H
#define VFS_VMM_H

#include <stdbool.h>
#include <stddef.h>

enum vmm_state {
	VMM_ALIVE,
	VMM_GONE,
	VMM_UNCERTAIN
};

/* The paths of the listening Unix sockets in PROC/net/unix, sorted. */
struct vmm_listeners {
	char **paths;			/* owned, each owned */
	size_t n;
	size_t cap;
	bool loaded;			/* false: the table was not read */
};

/*
 * Reads PROC_ROOT/proc/net/unix into l (l needs no initialisation) and
 * keeps the path of every listener (flag 00010000) bound to a file
 * system path. 0, or -1 with errno (the open or read failed, or ENOMEM);
 * on -1 l is empty and not loaded, and vmm_liveness() then connects.
 */
int vmm_listeners_load(struct vmm_listeners *l, const char *proc_root);

/* Frees the table and empties l. */
void vmm_listeners_release(struct vmm_listeners *l);

/* True if a listener bound to path is in the table. */
bool vmm_listener_listed(const struct vmm_listeners *l, const char *path);

/*
 * The liveness of the VMM whose control socket is path:
 *   - stat(2) (a symbolic link is followed) ENOENT: gone ("no such
 *     file"); another stat error or a file that is not a socket:
 *     uncertain;
 *   - a listener bound to path in l: alive ("listening"), and the socket
 *     is not touched (QEMU's QMP socket has a backlog of 1 and accepts
 *     nobody while another client holds the monitor, so probes would
 *     fill its queue);
 *   - otherwise (not listed, table not loaded, a VMM in another network
 *     namespace) one non-blocking connect(2), closed at once with
 *     nothing sent: success alive, ECONNREFUSED gone (a VMM killed with
 *     SIGKILL leaves its socket file, and nothing listens on it), any
 *     other error (EAGAIN, EACCES, ...) uncertain.
 * *why (static) says which; errno is the failed call's for "stat
 * failed" and "connect failed", else 0. l may be NULL (never loaded).
 */
enum vmm_state vmm_liveness(const struct vmm_listeners *l, const char *path,
    const char **why);

/* The *why of a socket that refused connections: a VMM killed without
 * its socket file going (SIGKILL); compared as a pointer. */
extern const char vmm_why_refused[];

/*
 * vmm_liveness() of the socket that pathfd (an O_PATH descriptor of
 * path, opened by a process allowed to reach it: sentinel-poll's opener,
 * SPEC.md 8.3) names: fstat(2) instead of stat(2), the connect through
 * /proc/self/fd/N. path is only looked up in l.
 */
enum vmm_state vmm_liveness_fd(const struct vmm_listeners *l,
    const char *path, int pathfd, const char **why);

/* "alive", "gone" or "uncertain" (static). */
const char *vmm_state_name(enum vmm_state st);

#endif
