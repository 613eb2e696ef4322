/*
 * outputs-norandom.c - preloaded by tools/outputs-compare.sh into the
 * programs it records: getrandom(2) gives a fixed sequence, so that a
 * random draw (vfpick's choice among equal candidates) is the same for
 * the old binary and the new one.
 */
#include <stddef.h>
#include <sys/types.h>

ssize_t
getrandom(void *buf, size_t len, unsigned int flags)
{
	static unsigned long long x = 0x2545f4914f6cdd1dULL;
	unsigned char *p = buf;
	size_t i;

	(void)flags;
	for (i = 0; i < len; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		p[i] = (unsigned char)(x >> 56);
	}
	return (ssize_t)len;
}
