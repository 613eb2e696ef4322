/*
 * editengine.c - `vfstore edit`: copy, edit, validate, replace, all under
 * the store's exclusive lock that the caller holds (SPEC.md 4.2).
 *
 * The edited copy is judged by the loader's own parsers, so an edit is
 * accepted exactly when every later load would accept the file, and it
 * is written back by the store's own save: in the canonical layout, with
 * the atomic write every other mutation uses.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io.h"
#include "editengine.h"
#include "healthfile.h"
#include "claims.h"

/* The loader's limit on a file's size; larger is refused. */
#define EDIT_FILE_MAX (64u << 20)
#define SUFFIX ".json"			/* editors pick their JSON mode */

static const char *const file_name[] = {
	"vf-health.json", "vf-claims.json"
};

int
editengine_kind_parse(const char *name, enum storeedit_kind *kind)
{
	if (name == NULL || strcmp(name, "health") == 0)
		*kind = STOREEDIT_HEALTH;
	else if (strcmp(name, "claims") == 0)
		*kind = STOREEDIT_CLAIMS;
	else {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

const char *
editengine_file_name(enum storeedit_kind kind)
{
	return file_name[kind];
}

static int
fail_why(struct storeedit *e, int err, const char *what, const char *path)
{
	snprintf(e->why, sizeof(e->why), "%s %.900s: %s", what, path,
	    strerror(err));
	errno = err;
	return -1;
}

/* The file's bytes, or for a missing file the empty document. */
static int
read_orig(struct storeedit *e)
{
	struct health h = { 0 };
	struct claims c = { 0 };

	e->orig = io_slurp(e->path, EDIT_FILE_MAX, &e->origlen);
	if (e->orig != NULL)
		return 0;
	if (errno != ENOENT)
		return fail_why(e, errno, "read", e->path);
	e->missing = true;
	e->orig = e->kind == STOREEDIT_HEALTH ? health_dump(&h, &e->origlen) :
	    claims_dump(&c, &e->origlen);
	return e->orig != NULL ? 0 : fail_why(e, ENOMEM, "empty document for",
	    e->path);
}

/* Writes the copy into a new temporary file. */
static int
write_copy(struct storeedit *e, const char *tmpdir)
{
	int fd, n, saved;

	n = snprintf(e->tmp, sizeof(e->tmp), "%s/vfstore-edit.%.*s.XXXXXX"
	    SUFFIX, tmpdir, (int)(strlen(file_name[e->kind]) - 5),
	    file_name[e->kind]);
	if (n < 0 || (size_t)n >= sizeof(e->tmp)) {
		e->tmp[0] = '\0';
		return fail_why(e, ENAMETOOLONG, "temporary file in", tmpdir);
	}
	fd = mkostemps(e->tmp, sizeof(SUFFIX) - 1, O_CLOEXEC);
	if (fd < 0) {
		saved = errno;
		e->tmp[0] = '\0';
		return fail_why(e, saved, "create a temporary file in", tmpdir);
	}
	if (io_write_all(fd, e->orig, e->origlen) < 0) {
		saved = errno;
		close(fd);
		return fail_why(e, saved, "write", e->tmp);
	}
	if (close(fd) < 0)
		return fail_why(e, errno, "close", e->tmp);
	return 0;
}

int
editengine_begin(struct storeedit *e, const struct store *s,
    enum storeedit_kind kind, const char *tmpdir)
{
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->path = kind == STOREEDIT_HEALTH ? s->health_path : s->claims_path;
	if (read_orig(e) < 0)
		return -1;
	return write_copy(e, tmpdir);
}

const char *
editengine_editor(void)
{
	static const char *const vars[] = { "VISUAL", "EDITOR" };
	const char *v;
	size_t i;

	for (i = 0; i < sizeof(vars) / sizeof(*vars); i++)
		if ((v = getenv(vars[i])) != NULL && v[0] != '\0')
			return v;
	return "vi";
}

/* In the child: the parent's dispositions back, then the shell. */
static void __attribute__((noreturn))
exec_editor(const char *script, const char *editor, const char *file,
    const struct sigaction *oint, const struct sigaction *oquit)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	sigemptyset(&dfl.sa_mask);
	sigaction(SIGINT, oint, NULL);
	sigaction(SIGQUIT, oquit, NULL);
	sigaction(SIGPIPE, &dfl, NULL);
	execl("/bin/sh", "sh", "-c", script, editor, file, (char *)NULL);
	_exit(127);
}

static int
wait_child(pid_t pid, int *status)
{
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

int
editengine_run_editor(const struct storeedit *e, int *status)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, oint, oquit;
	const char *editor = editengine_editor();
	char *script;
	pid_t pid;
	int saved = 0;

	if (asprintf(&script, "%s \"$@\"", editor) < 0)
		return -1;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGINT, &ign, &oint);
	sigaction(SIGQUIT, &ign, &oquit);
	pid = fork();
	if (pid == 0)
		exec_editor(script, editor, e->tmp, &oint, &oquit);
	if (pid < 0 || wait_child(pid, status) < 0)
		saved = errno;
	sigaction(SIGINT, &oint, NULL);
	sigaction(SIGQUIT, &oquit, NULL);
	free(script);
	errno = saved;
	return saved != 0 ? -1 : 0;
}

static void
free_parsed(struct storeedit *e)
{
	health_release(&e->h);
	claims_release(&e->c);
}

/* Parses text by the loader's rules into e, and dumps it canonically. */
static char *
parse_dump(struct storeedit *e, const char *text, size_t len, size_t *dlen)
{
	int rc;

	rc = e->kind == STOREEDIT_HEALTH ? health_parse(text, len, &e->h,
	    e->why, sizeof(e->why)) : claims_parse(text, len, &e->c, e->why,
	    sizeof(e->why));
	if (rc < 0) {
		errno = EINVAL;
		return NULL;
	}
	return e->kind == STOREEDIT_HEALTH ? health_dump(&e->h, dlen) :
	    claims_dump(&e->c, dlen);
}

int
editengine_check(struct storeedit *e)
{
	char *text, *dump;
	size_t len, dlen = 0;
	int changed;

	free_parsed(e);
	e->why[0] = '\0';
	if ((text = io_slurp(e->tmp, EDIT_FILE_MAX, &len)) == NULL)
		return fail_why(e, errno, "read the edited copy", e->tmp);
	dump = parse_dump(e, text, len, &dlen);
	free(text);
	if (dump == NULL) {
		if (errno != EINVAL)
			return fail_why(e, errno, "serialise the edit of",
			    e->path);
		return -1;
	}
	changed = dlen != e->origlen || memcmp(dump, e->orig, dlen) != 0;
	free(dump);
	return changed;
}

int
editengine_commit(struct storeedit *e, struct store *s,
    struct atomic_result *res)
{
	return e->kind == STOREEDIT_HEALTH ? health_save(s, &e->h, res) :
	    claims_save(s, &e->c, res);
}

void
editengine_release(struct storeedit *e)
{
	if (e->tmp[0] != '\0')
		unlink(e->tmp);
	e->tmp[0] = '\0';
	free(e->orig);
	e->orig = NULL;
	free_parsed(e);
}
