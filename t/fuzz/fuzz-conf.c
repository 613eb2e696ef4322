/*
 * fuzz-conf.c - the configuration file reader (conf_load on a file).
 *
 * The input is written to a memfd and loaded through /proc/self/fd/N, the
 * way a program opens -c FILE. Properties: a rejected file yields a
 * message that names the file; an accepted one holds values in the
 * ranges of SPEC.md 2.4 and absolute paths, and writing those values back
 * as "key = value" lines loads to the same configuration.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "conf.h"
#include "fuzz.h"

#define T "conf"

static int
memfile(const void *data, size_t size, char *path, size_t len)
{
	int fd = memfd_create("fuzz-conf", MFD_CLOEXEC);

	if (fd < 0 || (size > 0 && write(fd, data, size) != (ssize_t)size))
		abort();
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

static void
check_ranges(const struct conf *c)
{
	fuzz_require(c->threshold >= 1 && c->interval >= 1 &&
	    c->timeout >= 1 && c->concurrency >= 1 && c->vsock_port >= 1, T,
	    "a value out of range was accepted");
	fuzz_require(c->data_dir[0] == '/' && c->sysfs_root[0] == '/' &&
	    c->textfile_dir[0] == '/', T, "a relative path was accepted");
}

static void
check_rewrite(const struct conf *c)
{
	struct conf again;
	char path[64], err[8192], *text;
	size_t len;
	FILE *f;
	int fd;

	f = open_memstream(&text, &len);
	if (f == NULL)
		abort();
	fprintf(f, "data_dir = %s\nsysfs_root = %s\n"
	    "gpu.vf_quarantine_threshold = %u\nsentinel.interval = %u\n"
	    "sentinel.timeout = %u\nsentinel.concurrency = %u\n"
	    "guest.vsock_port = %u\nmetrics.textfile_dir = %s\n",
	    c->data_dir, c->sysfs_root, c->threshold, c->interval,
	    c->timeout, c->concurrency, c->vsock_port, c->textfile_dir);
	fclose(f);
	fd = memfile(text, len, path, sizeof(path));
	conf_defaults(&again);
	/* A path may hold '#' or end in blanks, which a file cannot say. */
	if (conf_load(&again, path, true, err, sizeof(err)) == 0 &&
	    strpbrk(c->data_dir, "#") == NULL)
		fuzz_require(again.threshold == c->threshold &&
		    again.vsock_port == c->vsock_port &&
		    again.concurrency == c->concurrency, T,
		    "rewritten configuration loads differently");
	close(fd);
	free(text);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct conf c;
	char path[64], err[8192];
	int fd;

	fd = memfile(data, size, path, sizeof(path));
	conf_defaults(&c);
	err[0] = '\0';
	if (conf_load(&c, path, true, err, sizeof(err)) < 0) {
		fuzz_require(strncmp(err, path, strlen(path)) == 0, T,
		    "error message does not name the file");
	} else {
		check_ranges(&c);
		check_rewrite(&c);
	}
	close(fd);
	return 0;
}
