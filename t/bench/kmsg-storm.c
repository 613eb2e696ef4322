/*
 * kmsg-storm - writes a paced storm of kernel log records to stdout, for
 * the kmsg-watch benchmark.
 *
 *	kmsg-storm RATE SECONDS EVERY
 *
 * RATE records a second for SECONDS seconds, in batches every 10 ms, in
 * /dev/kmsg's "PRIO,SEQ,TS_USEC,-;MESSAGE" form, one a line; every
 * EVERY-th record is an RmInitAdapter failure. Exits 0 when done, 1 on a
 * write error, 64 on bad arguments.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TICK_NS 10000000L

static long
arg(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v <= 0)
		return -1;
	return v;
}

static void
tick_add(struct timespec *t)
{
	t->tv_nsec += TICK_NS;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_nsec -= 1000000000L;
		t->tv_sec++;
	}
}

static int
batch(long from, long n, long every)
{
	long seq;

	for (seq = from; seq < from + n; seq++) {
		if (seq % every == every / 2)
			printf("3,%ld,%ld,-;NVRM: GPU 0000:00:03.0: RmInitAdapter "
			    "failed! (0x22:0x65:884)\n", seq, seq * 50);
		else
			printf("6,%ld,%ld,-;virtio_net virtio1 eth0: link up, "
			    "record %ld\n", seq, seq * 50, seq);
	}
	return fflush(stdout) == EOF ? -1 : 0;
}

int
main(int argc, char **argv)
{
	long rate, secs, every, per_tick, ticks, i;
	struct timespec next;

	if (argc != 4 || (rate = arg(argv[1])) < 0 ||
	    (secs = arg(argv[2])) < 0 || (every = arg(argv[3])) < 0) {
		fputs("usage: kmsg-storm RATE SECONDS EVERY\n", stderr);
		return 64;
	}
	per_tick = rate / 100;
	ticks = secs * 100;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (i = 0; i < ticks; i++) {
		if (batch(i * per_tick, per_tick, every) < 0)
			return 1;
		tick_add(&next);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	return 0;
}
