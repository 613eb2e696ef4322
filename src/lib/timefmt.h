/*
 * timefmt.h - RFC 3339 timestamps.
 *
 * Written: UTC, nanoseconds with trailing zeros trimmed
 * ("2026-08-20T15:00:00Z", "2026-08-31T12:00:00.123456789Z"), the layout
 * of Go's time.RFC3339Nano. Read: any offset, 0-9 fraction digits.
 */
#ifndef VFS_TIMEFMT_H
#define VFS_TIMEFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#define TIMEFMT_MAX 40		/* enough for any formatted timestamp */

/* Parses s (whole string). 0, or -1 with errno EINVAL. */
int timefmt_parse(const char *s, struct timespec *ts);

/* Formats ts in UTC into buf. 0, or -1 (ERANGE/ENOSPC). */
int timefmt_format(const struct timespec *ts, char *buf, size_t len);

/* The current time (CLOCK_REALTIME). */
void timefmt_now(struct timespec *ts);

/* True for Go's zero time, 0001-01-01T00:00:00Z, which the store rejects. */
bool timefmt_is_zero(const struct timespec *ts);

#endif
