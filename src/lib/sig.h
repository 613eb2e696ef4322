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

#endif
