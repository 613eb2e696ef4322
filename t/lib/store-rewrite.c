/*
 * store-rewrite - test aid: loads a health file or a claims ledger with
 * the strict loader and writes it back to stdout with the store's writer,
 * as a save would (no threshold applied), to compare with upstream's
 * bytes for the same records.
 *
 * usage: store-rewrite health|claims FILE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claims.h"
#include "healthfile.h"
#include "io.h"
#include "store.h"

static char *
rewrite(const char *kind, const char *text, size_t len, size_t *outlen,
    char *why, size_t whylen)
{
	struct health h;
	struct claims c;
	char *out = NULL;

	if (strcmp(kind, "health") == 0 &&
	    health_parse(text, len, &h, why, whylen) == 0) {
		out = health_dump(&h, outlen);
		health_release(&h);
	} else if (strcmp(kind, "claims") == 0 &&
	    claims_parse(text, len, &c, why, whylen) == 0) {
		out = claims_dump(&c, outlen);
		claims_release(&c);
	}
	return out;
}

int
main(int argc, char **argv)
{
	char why[1024] = "", *text, *out;
	size_t len, outlen = 0;

	if (argc != 3) {
		fputs("usage: store-rewrite health|claims FILE\n", stderr);
		return 64;
	}
	if ((text = io_slurp(argv[2], 64u << 20, &len)) == NULL) {
		perror(argv[2]);
		return 66;
	}
	out = rewrite(argv[1], text, len, &outlen, why, sizeof(why));
	free(text);
	if (out == NULL) {
		fprintf(stderr, "store-rewrite: %s\n", why[0] ? why : "refused");
		return 65;
	}
	fwrite(out, 1, outlen, stdout);
	free(out);
	return fflush(stdout) == 0 ? 0 : 74;
}
