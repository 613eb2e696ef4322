/*
 * sig.c - the stop flag set by SIGTERM and SIGINT, and the signal state
 * every program starts from.
 */
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "sig.h"

volatile sig_atomic_t sig_stop;

static void
on_stop(int sig)
{
	sig_stop = sig;
}

int
sig_stop_install(bool restart)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) < 0)
		return -1;
	return sigaction(SIGINT, &sa, NULL);
}

int
sig_stop_block(sigset_t *old)
{
	sigset_t block;

	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	return sigprocmask(SIG_BLOCK, &block, old);
}

void
sig_stop_unblocked(sigset_t *mask)
{
	sigdelset(mask, SIGTERM);
	sigdelset(mask, SIGINT);
}

int
sig_ignore_pipe(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGPIPE, &sa, NULL);
}

/* SIG_IGN survives execve(2): a launcher's ignored signal is ours too. */
static int
default_if_ignored(int sig)
{
	struct sigaction sa;

	if (sigaction(sig, NULL, &sa) < 0)
		return -1;
	if (sa.sa_handler != SIG_IGN)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	return sigaction(sig, &sa, NULL);
}

int
sig_start(void)
{
	sigset_t none;

	/*
	 * The signal mask survives execve(2) too, and some launchers exec
	 * with SIGTERM blocked: a program would then never see the stop
	 * that runit's sv down sends. Nothing is blocked on purpose yet, so
	 * the whole inherited mask goes.
	 */
	sigemptyset(&none);
	if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
		return -1;
	if (default_if_ignored(SIGTERM) < 0 ||
	    default_if_ignored(SIGCHLD) < 0)
		return -1;
	return sig_ignore_pipe();
}
