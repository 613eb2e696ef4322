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

#endif
