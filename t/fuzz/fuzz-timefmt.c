/*
 * fuzz-timefmt.c - the RFC 3339 reader (timefmt_parse), which reads the
 * timestamps of the health store, the claims ledger and the check lines.
 * Properties: every timestamp accepted on read can be written back
 * (timefmt_format, UTC, Go's RFC3339Nano layout), the written text reads
 * back to the same instant, and writing that again gives the same text.
 */
#include "fuzz.h"
#include "timefmt.h"

#define T "timefmt"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct timespec ts, back;
	char buf[TIMEFMT_MAX], again[TIMEFMT_MAX];
	char *s = fuzz_strndup(data, size);

	if (timefmt_parse(s, &ts) == 0) {
		fuzz_require(ts.tv_nsec >= 0 && ts.tv_nsec <= 999999999, T,
		    "nanoseconds out of range");
		fuzz_require(timefmt_format(&ts, buf, sizeof(buf)) == 0, T,
		    "an accepted timestamp cannot be written");
		fuzz_require(timefmt_parse(buf, &back) == 0 &&
		    back.tv_sec == ts.tv_sec && back.tv_nsec == ts.tv_nsec, T,
		    "written timestamp reads back differently");
		fuzz_require(timefmt_format(&back, again, sizeof(again)) == 0 &&
		    strcmp(buf, again) == 0, T, "writing is not stable");
		fuzz_require(buf[strlen(buf) - 1] == 'Z', T, "not written in UTC");
	}
	free(s);
	return 0;
}
