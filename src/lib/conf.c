/*
 * conf.c - the configuration file of SPEC.md 2.4.
 */
#include <ctype.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "conf.h"
#include "io.h"
#include "utf8.h"

#define CONF_LINE_MAX 4096

enum key_kind {
	KEY_PATH,
	KEY_UINT,
	KEY_STRING,			/* UTF-8 text, "" allowed; max: size */
	KEY_BOOL,			/* true or false */
	KEY_FRACTION,			/* above 0, at most 1; a double */
	KEY_PLACEMENT,			/* auto, last or exclude */
	KEY_REPLACED			/* a whole number in [min, max], read
					 * and ignored: a key a newer one
					 * replaced, kept so that old files
					 * load; not listed by conf_json() */
};

struct key {
	const char *name;
	enum key_kind kind;
	size_t offset;
	unsigned min;			/* KEY_PATH: 1 when "" (none) is
					 * allowed */
	unsigned max;
	unsigned readers;		/* CONF_READER_HOOK when libvirt-hook
					 * reads it (SPEC 8.1); 0 otherwise */
};

static const struct key keys[] = {
	{ "data_dir", KEY_PATH, offsetof(struct conf, data_dir), 0, 0,
	    CONF_READER_HOOK },
	{ "sysfs_root", KEY_PATH, offsetof(struct conf, sysfs_root), 0, 0,
	    CONF_READER_HOOK },
	{ "gpu.vf_quarantine_threshold", KEY_UINT,
	    offsetof(struct conf, threshold), 1, 1000000,
	    CONF_READER_HOOK },
	{ "sentinel.interval", KEY_UINT, offsetof(struct conf, interval),
	    1, 86400, 0 },
	{ "sentinel.timeout", KEY_UINT, offsetof(struct conf, timeout),
	    1, 3600, 0 },
	{ "sentinel.concurrency", KEY_UINT,
	    offsetof(struct conf, concurrency), 1, 4096, 0 },
	{ "guest.vsock_port", KEY_UINT, offsetof(struct conf, vsock_port),
	    1, 4294967294U,
	    CONF_READER_HOOK },
	{ "metrics.textfile_dir", KEY_PATH,
	    offsetof(struct conf, textfile_dir), 0, 0, 0 },
	{ "sentinel.framework_recheck", KEY_UINT,
	    offsetof(struct conf, framework_recheck), 1, 86400, 0 },
	{ "sentinel.console_kernel_lines", KEY_STRING,
	    offsetof(struct conf, console_kernel_lines), 0,
	    sizeof(((struct conf *)0)->console_kernel_lines), 0 },
	{ "sentinel.console_read_max", KEY_UINT,
	    offsetof(struct conf, console_read_max), 65536, 1073741824,
	    CONF_READER_HOOK },
	{ "sentinel.privileged_dirs", KEY_STRING,
	    offsetof(struct conf, privileged_dirs), 0,
	    sizeof(((struct conf *)0)->privileged_dirs), 0 },
	{ "reconcile.grace", KEY_UINT, offsetof(struct conf, reconcile_grace),
	    0, 86400, 0 },
	{ "recovery.systemic_window", KEY_UINT,
	    offsetof(struct conf, systemic_window), 1, 2592000, 0 },
	{ "recovery.systemic_fraction", KEY_FRACTION,
	    offsetof(struct conf, systemic_fraction), 0, 0, 0 },
	/* Replaced by systemic_fraction (SPEC.md 6.5). */
	{ "recovery.systemic_cards", KEY_REPLACED, 0, 1, 1000000, 0 },
	{ "recovery.systemic_vfs", KEY_REPLACED, 0, 1, 1000000, 0 },
	{ "recovery.quiesce_command", KEY_STRING,
	    offsetof(struct conf, quiesce_command), 0, CONF_COMMAND_MAX, 0 },
	{ "recovery.restore_command", KEY_STRING,
	    offsetof(struct conf, restore_command), 0, CONF_COMMAND_MAX, 0 },
	{ "recovery.sriov_manage", KEY_PATH,
	    offsetof(struct conf, sriov_manage), 0, 0, 0 },
	{ "recovery.verify_command", KEY_STRING,
	    offsetof(struct conf, verify_command), 0, CONF_COMMAND_MAX,
	    CONF_READER_HOOK },
	{ "recovery.step_timeout", KEY_UINT,
	    offsetof(struct conf, step_timeout), 1, 86400, 0 },
	{ "recovery.settle_timeout", KEY_UINT,
	    offsetof(struct conf, settle_timeout), 1, 86400, 0 },
	{ "libvirt.qemu_state_dir", KEY_PATH,
	    offsetof(struct conf, qemu_state_dir), 0, 0,
	    CONF_READER_HOOK },
	{ "libvirt.deconfigure", KEY_BOOL,
	    offsetof(struct conf, libvirt_deconfigure), 0, 0,
	    CONF_READER_HOOK },
	{ "libvirt.lock_timeout", KEY_UINT,
	    offsetof(struct conf, libvirt_lock_timeout), 0, 3600,
	    CONF_READER_HOOK },
	{ "libvirt.log_dir", KEY_PATH,
	    offsetof(struct conf, libvirt_log_dir), 0, 0,
	    CONF_READER_HOOK },
	{ "suspect.window", KEY_UINT, offsetof(struct conf, suspect_window),
	    1, 2592000,
	    CONF_READER_HOOK },
	{ "suspect.verify_interval", KEY_UINT,
	    offsetof(struct conf, suspect_verify_interval), 1, 86400, 0 },
	{ "suspect.on_unknown", KEY_BOOL,
	    offsetof(struct conf, suspect_on_unknown), 0, 0,
	    CONF_READER_HOOK },
	{ "suspect.placement", KEY_PLACEMENT,
	    offsetof(struct conf, suspect_placement), 0, 0,
	    CONF_READER_HOOK },
	{ "suspect.trust_ok", KEY_BOOL,
	    offsetof(struct conf, suspect_trust_ok), 0, 0,
	    CONF_READER_HOOK },
	/* libvirt-verify's (SPEC 8.2): read by vfstore config for it. */
	{ "recovery.verify_domain_xml", KEY_PATH,
	    offsetof(struct conf, verify_domain_xml), 1, 0, 0 },
	{ "recovery.verify_wait", KEY_UINT,
	    offsetof(struct conf, verify_wait), 1, 86400, 0 },
	{ "recovery.verify_libvirt_uri", KEY_STRING,
	    offsetof(struct conf, verify_libvirt_uri), 0, CONF_COMMAND_MAX,
	    0 },
};

void
conf_defaults(struct conf *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->data_dir, "/var/lib/vfsentinel");
	strcpy(c->sysfs_root, "/");
	c->threshold = 2;
	c->interval = 5;
	c->timeout = 5;
	c->concurrency = 64;
	c->vsock_port = 2222;
	strcpy(c->textfile_dir, "/var/lib/vfsentinel/metrics");
	c->framework_recheck = 60;
	strcpy(c->console_kernel_lines, "auto");
	c->console_read_max = 4194304;
	c->reconcile_grace = 120;
	c->systemic_window = 3600;
	c->systemic_fraction = 0.5;
	strcpy(c->sriov_manage, "/usr/lib/nvidia/sriov-manage");
	c->step_timeout = 120;
	c->settle_timeout = 60;
	strcpy(c->qemu_state_dir, "/var/lib/libvirt/qemu");
	c->libvirt_deconfigure = true;
	c->libvirt_lock_timeout = 10;
	strcpy(c->libvirt_log_dir, "/var/log/libvirt/qemu");
	c->suspect_window = 600;
	c->suspect_verify_interval = 30;
	strcpy(c->suspect_placement, "auto");
	c->suspect_trust_ok = true;
	c->verify_wait = 90;
	strcpy(c->verify_libvirt_uri, "qemu:///system");
}

bool
conf_suspect_exclude(const struct conf *c)
{
	if (strcmp(c->suspect_placement, "auto") == 0)
		return c->verify_command[0] != '\0';
	return strcmp(c->suspect_placement, "exclude") == 0;
}

int
conf_parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = (unsigned)v;
	return 0;
}

int
conf_parse_fraction(const char *s, double *out)
{
	static const char digits[] = "0123456789";
	const char *p = s + strspn(s, digits);
	double v;
	char *end;

	if (p == s)
		return -1;
	if (*p == '.') {
		if (strspn(p + 1, digits) == 0)
			return -1;
		p += 1 + strspn(p + 1, digits);
	}
	if (*p != '\0')
		return -1;
	/* Digits and a '.': strtod() reads them so in the C locale, and the
	 * programs never set another. */
	v = strtod(s, &end);
	if (*end != '\0' || !(v > 0.0 && v <= 1.0))
		return -1;
	*out = v;
	return 0;
}

static char *
trim(char *s)
{
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

static const struct key *
find_key(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

/* A value for a number key; 0, or -1 with the range in why. */
static int
apply_uint(const struct key *k, const char *value, unsigned *field,
    char *why, size_t whylen)
{
	if (conf_parse_uint(value, k->min, k->max, field) == 0)
		return 0;
	snprintf(why, whylen, "invalid value (expected a whole number from "
	    "%u to %u)", k->min, k->max);
	return -1;
}

/* A value for a fraction key; 0, or -1 with what is accepted in why. */
static int
apply_fraction(const char *value, double *field, char *why, size_t whylen)
{
	if (conf_parse_fraction(value, field) == 0)
		return 0;
	snprintf(why, whylen, "invalid value (expected a fraction above 0 "
	    "and at most 1, as 0.5)");
	return -1;
}

/* A value for a true/false key; 0, or -1 with what is accepted in why. */
static int
apply_bool(const char *value, bool *field, char *why, size_t whylen)
{
	if (strcmp(value, "true") == 0 || strcmp(value, "false") == 0) {
		*field = value[0] == 't';
		return 0;
	}
	snprintf(why, whylen, "invalid value (expected true or false)");
	return -1;
}

/*
 * Applies one "key = value" pair; 0, or -1 with the reason in why: what
 * would be accepted, a number's range included.
 */
static int
apply(struct conf *c, const char *name, const char *value, char *why,
    size_t whylen)
{
	const struct key *k = find_key(name);
	char *field;
	const char *bad = NULL;
	unsigned ignored;

	if (k == NULL)
		bad = "unknown key";
	else if (k->kind == KEY_BOOL)
		return apply_bool(value, (bool *)(void *)((char *)c +
		    k->offset), why, whylen);
	else if (k->kind == KEY_UINT)
		return apply_uint(k, value, (unsigned *)(void *)((char *)c +
		    k->offset), why, whylen);
	else if (k->kind == KEY_REPLACED)
		return apply_uint(k, value, &ignored, why, whylen);
	else if (k->kind == KEY_FRACTION)
		return apply_fraction(value, (double *)(void *)((char *)c +
		    k->offset), why, whylen);
	else if (k->kind == KEY_PLACEMENT && strcmp(value, "auto") != 0 &&
	    strcmp(value, "last") != 0 && strcmp(value, "exclude") != 0)
		bad = "invalid value (expected auto, last or exclude)";
	else if (k->kind == KEY_STRING && !utf8_valid_str(value))
		bad = "invalid value (not UTF-8)";
	else if (k->kind == KEY_STRING && strlen(value) >= k->max)
		bad = "invalid value (too long)";
	else if (k->kind == KEY_PATH && *value != '/' &&
	    !(k->min == 1 && *value == '\0'))
		bad = "invalid value (expected an absolute path)";
	else if (strlen(value) >= PATH_MAX)
		bad = "invalid value (path too long)";
	if (bad != NULL) {
		snprintf(why, whylen, "%s", bad);
		return -1;
	}
	field = (char *)c + k->offset;
	strcpy(field, value);
	return 0;
}

static int
parse_line(struct conf *c, char *line, char *why, size_t whylen,
    char *name, size_t namelen)
{
	char *eq, *key, *value;

	line[strcspn(line, "#")] = '\0';
	line = trim(line);
	if (*line == '\0')
		return 0;
	eq = strchr(line, '=');
	if (eq == NULL) {
		snprintf(why, whylen, "expected key = value");
		return -1;
	}
	*eq = '\0';
	key = trim(line);
	value = trim(eq + 1);
	snprintf(name, namelen, "%s", key);
	if (strcmp(key, "recovery.verify_wait") == 0 ||
	    strcmp(key, "recovery.verify_domain_xml") == 0)
		c->verify_set = true;
	return apply(c, key, value, why, whylen);
}

/* True when an error in the key named name is skipped for o's reader:
 * a key it does not read, unknown keys included (SPEC 8.1). */
static bool
skipped(const struct conf_load_opts *o, const char *name)
{
	const struct key *k = find_key(name);

	return o != NULL && o->reader != 0 && name[0] != '\0' &&
	    (k == NULL || (k->readers & o->reader) == 0);
}

/* Applies f's lines to c; 0, or -1 with "FILE:LINE: ..." in err (and
 * the key in o->bad_key). An error o's reader skips is o->warn'ed. */
static int
read_lines(struct conf *c, FILE *f, const char *path,
    struct conf_load_opts *o, char *err, size_t errlen)
{
	char line[CONF_LINE_MAX], name[64], why[128], msg[PATH_MAX + 256];
	unsigned lineno = 0;
	int rc = 0;

	while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
		lineno++;
		name[0] = '\0';
		if (strchr(line, '\n') == NULL && !feof(f)) {
			snprintf(why, sizeof(why), "line too long (at most %d "
			    "bytes)", CONF_LINE_MAX - 2);
			rc = -1;
		} else
			rc = parse_line(c, line, why, sizeof(why), name,
			    sizeof(name));
		if (rc < 0 && skipped(o, name)) {
			snprintf(msg, sizeof(msg), "%s:%u: %s: %s", path,
			    lineno, why, name);
			if (o->warn != NULL)
				o->warn(msg, o->arg);
			rc = 0;
		}
	}
	if (rc == 0 && ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		return -1;
	}
	if (rc < 0) {
		snprintf(err, errlen, "%s:%u: %s%s%s", path, lineno, why,
		    name[0] ? ": " : "", name);
		if (o != NULL)
			snprintf(o->bad_key, sizeof(o->bad_key), "%s", name);
	}
	return rc;
}

/* SPEC 8.2: libvirt-verify must end before vfrecover's step_timeout
 * kills it. 0, or -1 with the reason in err. */
static int
check_verify_wait(const struct conf *c, const char *path,
    struct conf_load_opts *o, char *err, size_t errlen)
{
	if (!c->verify_set || c->verify_wait < c->step_timeout ||
	    skipped(o, "recovery.verify_wait"))
		return 0;
	snprintf(err, errlen, "%s: invalid value (recovery.verify_wait %u "
	    "must be less than recovery.step_timeout %u): "
	    "recovery.verify_wait", path, c->verify_wait, c->step_timeout);
	if (o != NULL)
		snprintf(o->bad_key, sizeof(o->bad_key),
		    "recovery.verify_wait");
	return -1;
}

int
conf_load_as(struct conf *c, const char *path, bool must_exist,
    struct conf_load_opts *o, char *err, size_t errlen)
{
	FILE *f = NULL;
	int fd, rc;

	if (o != NULL)
		o->bad_key[0] = '\0';
	/* Never blocks, and only a regular file (SPEC 6.3): a FIFO in its
	 * place would hang every program at start. A link is followed. */
	if ((fd = io_open_regular(path, O_RDONLY, 0)) >= 0 &&
	    (f = fdopen(fd, "re")) == NULL) {
		close(fd);
		errno = ENOMEM;
	}
	if (f == NULL) {
		if (errno == ENOENT && !must_exist)
			return 0;
		snprintf(err, errlen, "%s: %s", path, io_strerror(errno));
		return -1;
	}
	rc = read_lines(c, f, path, o, err, errlen);
	if (rc == 0)
		rc = check_verify_wait(c, path, o, err, errlen);
	fclose(f);
	return rc;
}

int
conf_load(struct conf *c, const char *path, bool must_exist, char *err,
    size_t errlen)
{
	return conf_load_as(c, path, must_exist, NULL, err, errlen);
}

int
conf_load_default_as(struct conf *c, const char *arg,
    struct conf_load_opts *o, char *err, size_t errlen)
{
	const char *env = getenv("VFSENTINEL_CONF");

	if (arg != NULL)
		return conf_load_as(c, arg, true, o, err, errlen);
	if (env != NULL && *env != '\0')
		return conf_load_as(c, env, true, o, err, errlen);
	return conf_load_as(c, CONF_DEFAULT_PATH, false, o, err, errlen);
}

int
conf_load_default(struct conf *c, const char *arg, char *err, size_t errlen)
{
	return conf_load_default_as(c, arg, NULL, err, errlen);
}

const char *
conf_key_stops(const char *key)
{
	const struct key *k = find_key(key);

	/* No key (a line without "="), or one the hook reads. */
	if (key[0] == '\0' || (k != NULL && (k->readers &
	    CONF_READER_HOOK) != 0))
		return CONF_HOST_PROGRAMS ", libvirt-hook (the start of "
		    "domains with vGPU VFs)";
	return CONF_HOST_PROGRAMS;
}

/* One key's value in c as JSON; NULL with errno. */
static json_t *
key_json(const struct conf *c, const struct key *k)
{
	const char *field = (const char *)c + k->offset;
	json_t *v;

	if (k->kind == KEY_UINT)
		v = json_integer((json_int_t)*(const unsigned *)(const void *)
		    field);
	else if (k->kind == KEY_FRACTION)
		v = json_real(*(const double *)(const void *)field);
	else if (k->kind == KEY_BOOL)
		v = json_boolean(*(const bool *)(const void *)field);
	else
		v = json_string(field);
	if (v == NULL)
		errno = k->kind == KEY_UINT || k->kind == KEY_FRACTION ||
		    utf8_valid_str(field) ? ENOMEM : EILSEQ;
	return v;
}

json_t *
conf_json(const struct conf *c)
{
	json_t *obj = json_object();
	json_t *v;
	size_t i;

	if (obj == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (keys[i].kind == KEY_REPLACED)
			continue;
		v = key_json(c, &keys[i]);
		if (v == NULL ||
		    json_object_set_new(obj, keys[i].name, v) < 0) {
			if (v != NULL)
				errno = ENOMEM;
			json_decref(obj);
			return NULL;
		}
	}
	return obj;
}
