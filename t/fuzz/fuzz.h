/*
 * fuzz.h - shared declarations of the fuzz targets in t/fuzz/.
 *
 * Every t/fuzz/fuzz-NAME.c defines LLVMFuzzerTestOneInput() around one
 * parser that reads untrusted bytes. Built with clang and
 * -fsanitize=fuzzer (make fuzz-build) it is a libFuzzer binary; built
 * with the project's compiler and t/fuzz/replay.c (make test-aids) it
 * replays files and directories given as arguments, which is how the
 * committed corpora and regressions run under ASan and valgrind.
 *
 * A target checks properties, not only crashes: a round trip that does
 * not reproduce its input, or two matchers that disagree, abort() with a
 * message on stderr so the fuzzer keeps the input as a finding.
 */
#ifndef VFS_FUZZ_H
#define VFS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts with what when cond is false: a property of the parser broke. */
static inline void
fuzz_require(bool cond, const char *target, const char *what)
{
	if (cond)
		return;
	fprintf(stderr, "fuzz-%s: property violated: %s\n", target, what);
	abort();
}

/* A NUL-terminated copy of the input (the caller frees it); aborts on
 * ENOMEM, which a fuzzer run must not mistake for a parser problem. */
static inline char *
fuzz_strndup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s == NULL)
		abort();
	if (size > 0)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* Byte 1 in the input stands for FUZZ_WIDE bytes of 'a', so short inputs
 * can reach the line and message size limits. Returns a new buffer (the
 * caller frees it, not NUL-terminated) and its length in *len. */
#define FUZZ_WIDE 16384

static inline char *
fuzz_expand(const uint8_t *data, size_t size, size_t *len)
{
	size_t i, n = 0, wide = 0;
	char *s;

	for (i = 0; i < size; i++)
		wide += data[i] == 1;
	s = malloc(size + wide * FUZZ_WIDE + 1);
	if (s == NULL)
		abort();
	for (i = 0; i < size; i++) {
		if (data[i] == 1) {
			memset(s + n, 'a', FUZZ_WIDE);
			n += FUZZ_WIDE;
		} else {
			s[n++] = (char)data[i];
		}
	}
	*len = n;
	return s;
}

#endif
