/*
 * sig.h - the stop flag: SIGTERM and SIGINT only record that a stop was
 * asked for; the program's loop looks at the flag and finishes its record.
 */
#ifndef VFS_SIG_H
#define VFS_SIG_H

#include <signal.h>
#include <stdbool.h>

/* The number of the signal that asked the program to stop; 0 until then. */
extern volatile sig_atomic_t sig_stop;

/*
 * Makes SIGTERM and SIGINT set sig_stop. With restart (SA_RESTART) a
 * blocked write finishes its line; poll(2) and ppoll(2) are never
 * restarted, so wait loops still see the flag at once. 0 or -1/errno.
 */
int sig_stop_install(bool restart);

/*
 * Blocks SIGTERM and SIGINT; *old gets the mask before (NULL: not
 * wanted). A program that blocks them lets them in only inside ppoll(2),
 * so a stop can end a wait but never a batch half-way. 0 or -1/errno.
 */
int sig_stop_block(sigset_t *old);

/* Removes SIGTERM and SIGINT from mask: the mask to hand ppoll(2). */
void sig_stop_unblocked(sigset_t *mask);

/* Ignores SIGPIPE: a write to a reader that went away fails with EPIPE. */
int sig_ignore_pipe(void);

/*
 * The signal state a program starts from, whatever its launcher left
 * behind (the mask and ignored dispositions survive execve(2)): nothing
 * blocked; SIGTERM and SIGCHLD back to their defaults if they were
 * ignored (a stop must stop, a child must be reapable); SIGPIPE ignored,
 * so a closed stdout is a write error (exit 74), never a death by
 * signal. SIGINT and SIGHUP keep an inherited SIG_IGN (a shell ignores
 * SIGINT for background jobs on purpose); the programs that stop on
 * SIGINT install their handler anyway. Call before anything else; a
 * program that blocks signals later (sig_stop_block) does it after.
 * 0 or -1/errno.
 */
int sig_start(void);

#endif
