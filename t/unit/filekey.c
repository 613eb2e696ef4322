/*
 * filekey.c - unit tests for src/lib/filekey.c: a file's key, when two
 * keys are one version, the rule that a key younger than
 * FILEKEY_YOUNG_MS proves nothing, and the cache a load keeps by it.
 */
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "filekey.h"
#include "tap.h"
#include "timefmt.h"

static char dir[256];

/* Writes text to dir/name by a rename, as the store does. */
static void
replace(const char *name, const char *text)
{
	tap_sh(dir, "printf '%s' >tmp && mv tmp %s", text, name);
}

/* Sleeps past FILEKEY_YOUNG_MS, so that the files now there are old. */
static void
age(void)
{
	struct timespec ts = { 0, (FILEKEY_YOUNG_MS + 50) * 1000000L };

	nanosleep(&ts, NULL);
}

static void
test_key(void)
{
	char path[512], bad[512];
	struct filekey a, b, missing;

	snprintf(path, sizeof(path), "%s/f", dir);
	snprintf(bad, sizeof(bad), "%s/f/x", dir);
	ok(filekey_read(path, &missing) == 0 && missing.missing,
	    "a missing file is a key");
	ok(filekey_read(path, &a) == 0 && filekey_same(&a, &missing),
	    "two missing keys are the same");
	ok(filekey_trusted(&missing), "a missing file is trusted");
	replace("f", "one");
	ok(filekey_read(path, &a) == 0 && !a.missing && a.size == 3,
	    "a file's key has its size");
	ok(!filekey_same(&a, &missing) && !filekey_same(&missing, &a),
	    "a file is not the missing one");
	ok(filekey_read(path, &b) == 0 && filekey_same(&a, &b),
	    "the same file read twice: the same key");
	replace("f", "two");
	ok(filekey_read(path, &b) == 0 && !filekey_same(&a, &b),
	    "replaced by rename, same size: another key");
	errno = 0;
	ok(filekey_read(bad, &b) == -1 && errno == ENOTDIR && !b.missing &&
	    b.ino == 0, "a path that cannot be read: -1, errno, key all 0");
}

static void
test_trust(void)
{
	struct filekey k = { .size = 1 };
	struct timespec now;
	char path[512];

	snprintf(path, sizeof(path), "%s/t", dir);
	replace("t", "x");
	ok(filekey_read(path, &k) == 0 && !filekey_trusted(&k),
	    "a file just written is not trusted");
	age();
	ok(filekey_read(path, &k) == 0 && filekey_trusted(&k),
	    "older than FILEKEY_YOUNG_MS: trusted");
	timefmt_now(&now);
	k.ctime = now;
	k.ctime.tv_sec += 10;
	ok(filekey_trusted(&k), "a ctime 10 s ahead (a clock step): trusted");
	k.ctime = now;
	k.ctime.tv_sec -= 1;
	k.ctime.tv_nsec = now.tv_nsec;
	ok(filekey_trusted(&k), "a ctime 1 s back: trusted");
}

static void
test_cache(void)
{
	struct filekey_cache c = { 0 };
	char path[512];

	snprintf(path, sizeof(path), "%s/c", dir);
	replace("c", "v1");
	age();
	ok(!filekey_unchanged(&c, path), "nothing loaded: load");
	filekey_loaded(&c, path);
	ok(c.valid && filekey_unchanged(&c, path),
	    "loaded, old, not changed since: kept");
	replace("c", "v2");
	ok(!filekey_unchanged(&c, path) && !c.valid,
	    "replaced: load again, the cache no longer valid");
	filekey_loaded(&c, path);
	ok(c.valid && !filekey_unchanged(&c, path),
	    "a version younger than FILEKEY_YOUNG_MS: loaded again");
	filekey_loaded(&c, path);
	age();
	ok(filekey_unchanged(&c, path), "once it is old: kept");
	replace("c", "v3");
	ok(!filekey_unchanged(&c, path), "replaced once more: load");
	replace("c", "v4");
	filekey_loaded(&c, path);
	ok(!c.valid, "replaced while it was read: not kept");
	filekey_written(&c, path);
	ok(c.valid, "what the caller wrote is the load");
	ok(!filekey_unchanged(&c, path), "... and proves nothing while young");
	tap_sh(dir, "rm c");
	filekey_written(&c, path);
	ok(c.valid, "written, then missing: a missing file is a key too");
	ok(filekey_unchanged(&c, path), "still missing: kept");
}

int
main(void)
{
	tap_tmpdir(dir, sizeof(dir), "filekey");
	test_key();
	test_trust();
	test_cache();
	tap_rmtree(dir);
	return done_testing();
}
