/*
 * timefmt.c - RFC 3339 parse and format, the layout of Go's RFC3339Nano.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "timefmt.h"

/* Seconds from 0001-01-01T00:00:00Z (Go's zero time) to the epoch. */
#define ZERO_TIME_SEC (-62135596800LL)
/* The instants RFC 3339 can write in UTC: 0000-01-01 to 9999-12-31. */
#define MIN_TIME_SEC (-62167219200LL)
#define MAX_TIME_SEC (253402300799LL)

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar. */
static long long
days_from_civil(long long y, unsigned m, unsigned d)
{
	long long era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void
civil_from_days(long long z, int *y, unsigned *m, unsigned *d)
{
	long long era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	*m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	*y = (int)(yoe + era * 400 + (*m <= 2));
}

/* Reads exactly n digits. */
static int
digits(const char **p, int n, int *out)
{
	int v = 0;

	while (n-- > 0) {
		if (!isdigit((unsigned char)**p))
			return -1;
		v = v * 10 + (**p - '0');
		(*p)++;
	}
	*out = v;
	return 0;
}

static int
expect(const char **p, const char *set)
{
	if (**p == '\0' || strchr(set, **p) == NULL)
		return -1;
	(*p)++;
	return 0;
}

static bool
leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int
valid_date(int y, int mo, int d, int h, int mi, int s)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31,
	    30, 31 };
	int max;

	if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59)
		return -1;
	max = mdays[mo - 1] + (mo == 2 && leap(y));
	return d <= max ? 0 : -1;
}

/* Parses ".ddddddddd" (0-9 digits) into nanoseconds. */
static int
fraction(const char **p, long *nsec)
{
	long v = 0;
	int n = 0;

	*nsec = 0;
	if (**p != '.')
		return 0;
	(*p)++;
	while (isdigit((unsigned char)**p)) {
		if (++n > 9)
			return -1;
		v = v * 10 + (**p - '0');
		(*p)++;
	}
	if (n == 0)
		return -1;
	while (n++ < 9)
		v *= 10;
	*nsec = v;
	return 0;
}

/* Parses "Z" or "+hh:mm"/"-hh:mm" into seconds east of UTC. */
static int
offset(const char **p, long *off)
{
	int sign, h, m;

	if (**p == 'Z' || **p == 'z') {
		(*p)++;
		*off = 0;
		return 0;
	}
	if (**p != '+' && **p != '-')
		return -1;
	sign = **p == '-' ? -1 : 1;
	(*p)++;
	if (digits(p, 2, &h) < 0 || expect(p, ":") < 0 ||
	    digits(p, 2, &m) < 0 || h > 23 || m > 59)
		return -1;
	*off = sign * (h * 3600L + m * 60L);
	return 0;
}

int
timefmt_parse(const char *s, struct timespec *ts)
{
	const char *p = s;
	int y, mo, d, h, mi, sec;
	long nsec, off;

	if (digits(&p, 4, &y) < 0 || expect(&p, "-") < 0 ||
	    digits(&p, 2, &mo) < 0 || expect(&p, "-") < 0 ||
	    digits(&p, 2, &d) < 0 || expect(&p, "Tt") < 0 ||
	    digits(&p, 2, &h) < 0 || expect(&p, ":") < 0 ||
	    digits(&p, 2, &mi) < 0 || expect(&p, ":") < 0 ||
	    digits(&p, 2, &sec) < 0 || fraction(&p, &nsec) < 0 ||
	    offset(&p, &off) < 0 || *p != '\0' ||
	    valid_date(y, mo, d, h, mi, sec) < 0) {
		errno = EINVAL;
		return -1;
	}
	ts->tv_sec = (time_t)(days_from_civil(y, (unsigned)mo, (unsigned)d) *
	    86400LL + h * 3600LL + mi * 60LL + sec - off);
	ts->tv_nsec = nsec;
	/* An offset can move a valid local time out of years 0000-9999 in
	 * UTC (9999-12-31T23:59:59-00:01), which cannot be written back: a
	 * store holding one would load but never save. Refuse it on read. */
	if (ts->tv_sec < MIN_TIME_SEC || ts->tv_sec > MAX_TIME_SEC) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/* Writes v as width decimal digits, zero-padded (v < 10^width). */
static void
put_digits(char *p, long v, int width)
{
	while (width-- > 0) {
		p[width] = (char)('0' + v % 10);
		v /= 10;
	}
}

int
timefmt_format(const struct timespec *ts, char *buf, size_t len)
{
	long long days, secs = ts->tv_sec;
	unsigned m, d;
	int y, n, i;
	long rem;
	char frac[11] = "";

	days = secs / 86400 - (secs % 86400 < 0);
	rem = (long)(secs - days * 86400);
	civil_from_days(days, &y, &m, &d);
	if (y < 0 || y > 9999 || ts->tv_nsec < 0 || ts->tv_nsec > 999999999) {
		errno = ERANGE;
		return -1;
	}
	if (ts->tv_nsec != 0) {
		frac[0] = '.';
		put_digits(frac + 1, ts->tv_nsec, 9);
		for (i = 9; frac[i] == '0'; i--)
			frac[i] = '\0';
	}
	/* Digits by hand: snprintf was most of a store save's time. */
	n = 20 + (int)strlen(frac);
	if ((size_t)n >= len) {
		errno = ENOSPC;
		return -1;
	}
	put_digits(buf, y, 4);
	put_digits(buf + 5, m, 2);
	put_digits(buf + 8, d, 2);
	put_digits(buf + 11, rem / 3600, 2);
	put_digits(buf + 14, rem / 60 % 60, 2);
	put_digits(buf + 17, rem % 60, 2);
	buf[4] = buf[7] = '-';
	buf[10] = 'T';
	buf[13] = buf[16] = ':';
	memcpy(buf + 19, frac, (size_t)n - 20);
	buf[n - 1] = 'Z';
	buf[n] = '\0';
	return 0;
}

void
timefmt_now(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

bool
timefmt_is_zero(const struct timespec *ts)
{
	return ts->tv_sec == ZERO_TIME_SEC && ts->tv_nsec == 0;
}
