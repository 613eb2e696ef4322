/*
 * conf.h - the one configuration format (SPEC.md 2.4).
 *
 * "key = value" lines, '#' comments to end of line, blank lines ignored.
 * A line without '=', an unknown key or an invalid value is an error that
 * names the file and line.
 */
#ifndef VFS_CONF_H
#define VFS_CONF_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define CONF_DEFAULT_PATH "/etc/vfsentinel/vfsentinel.conf"
#define CONF_COMMAND_MAX 1024		/* a recovery.*_command, NUL included */

struct conf {
	char data_dir[PATH_MAX];
	char sysfs_root[PATH_MAX];
	unsigned threshold;		/* gpu.vf_quarantine_threshold, >= 1 */
	unsigned interval;		/* sentinel.interval, seconds */
	unsigned timeout;		/* sentinel.timeout, seconds */
	unsigned concurrency;		/* sentinel.concurrency */
	unsigned vsock_port;		/* guest.vsock_port */
	char textfile_dir[PATH_MAX];	/* metrics.textfile_dir */
	unsigned framework_recheck;	/* sentinel.framework_recheck, s */
	char console_kernel_lines[8];	/* sentinel.console_kernel_lines:
					 * auto, on or off (SPEC 6.2) */
	unsigned console_read_max;	/* sentinel.console_read_max: bytes
					 * of each console log per scan */
	char privileged_dirs[CONF_COMMAND_MAX];	/* sentinel.privileged_dirs:
					 * where sentinel-poll's opener uses
					 * its capability (SPEC 8.3); "":
					 * libvirt.log_dir,
					 * libvirt.qemu_state_dir,
					 * /run/libvirt/qemu */
	unsigned reconcile_grace;	/* reconcile.grace, seconds */
	unsigned systemic_window;	/* recovery.systemic_window, s */
	double systemic_fraction;	/* recovery.systemic_fraction, (0, 1] */
	char quiesce_command[CONF_COMMAND_MAX];	/* recovery.*: "" = none */
	char restore_command[CONF_COMMAND_MAX];
	char sriov_manage[PATH_MAX];	/* recovery.sriov_manage */
	char verify_command[CONF_COMMAND_MAX];
	unsigned step_timeout;		/* recovery.step_timeout, seconds */
	unsigned settle_timeout;	/* recovery.settle_timeout, seconds */
	char qemu_state_dir[PATH_MAX];	/* libvirt.qemu_state_dir */
	bool libvirt_deconfigure;	/* libvirt.deconfigure */
	unsigned libvirt_lock_timeout;	/* libvirt.lock_timeout, seconds */
	char libvirt_log_dir[PATH_MAX];	/* libvirt.log_dir: NAME.log */
	unsigned suspect_window;	/* suspect.window, seconds (7.3) */
	unsigned suspect_verify_interval;	/* suspect.verify_interval */
	bool suspect_on_unknown;	/* suspect.on_unknown */
	char suspect_placement[8];	/* suspect.placement: auto, last
					 * or exclude */
	bool suspect_trust_ok;		/* suspect.trust_ok (SPEC 8.2) */
	char verify_domain_xml[PATH_MAX];	/* recovery.verify_domain_xml:
					 * libvirt-verify's template; "" */
	unsigned verify_wait;		/* recovery.verify_wait, seconds,
					 * < recovery.step_timeout */
	char verify_libvirt_uri[CONF_COMMAND_MAX];	/* recovery.
					 * verify_libvirt_uri */
	bool verify_set;		/* the file sets recovery.verify_wait
					 * or recovery.verify_domain_xml:
					 * verify_wait < step_timeout is
					 * checked */
};

/*
 * suspect.placement as it acts (SPEC.md 7.3): auto is exclude when a
 * verify command is set, else last. True when suspects are excluded.
 */
bool conf_suspect_exclude(const struct conf *c);

void conf_defaults(struct conf *c);

/*
 * Loads path over the values already in c. A missing file is an error
 * only when must_exist. Returns 0, or -1 with a message "FILE:LINE: ..."
 * (or "FILE: ...") in err.
 */
int conf_load(struct conf *c, const char *path, bool must_exist,
    char *err, size_t errlen);

/* Who loads (SPEC 8.1): a reader skips, with a warning, an error in a
 * key it does not read (an unknown key included). */
#define CONF_READER_HOOK 1u		/* libvirt-hook */

/* The host programs that refuse every error in the file. */
#define CONF_HOST_PROGRAMS "sentinel-poll, vfstore, vfpick, " \
	"resources-report, vfrecover"

struct conf_load_opts {
	unsigned reader;		/* 0: every error is one */
	void (*warn)(const char *msg, void *arg);	/* a skipped error:
					 * "FILE:LINE: REASON: KEY" */
	void *arg;
	char bad_key[64];		/* out: the failing key; "" none */
};

/* conf_load() as reader o->reader (o may be NULL: every error). */
int conf_load_as(struct conf *c, const char *path, bool must_exist,
    struct conf_load_opts *o, char *err, size_t errlen);

/* conf_load_default() as conf_load_as(). */
int conf_load_default_as(struct conf *c, const char *arg,
    struct conf_load_opts *o, char *err, size_t errlen);

/* The programs an error in key stops, as a comma-separated list; key
 * "" is a line that names none. */
const char *conf_key_stops(const char *key);

/*
 * Chooses and loads the file: arg if not NULL, else $VFSENTINEL_CONF, else
 * CONF_DEFAULT_PATH (which may be missing). Same returns as conf_load.
 */
int conf_load_default(struct conf *c, const char *arg, char *err,
    size_t errlen);

/*
 * The configuration as one JSON object (a jansson json_t), every key of
 * the file format with its value in c, in the file's key order; numbers
 * as numbers. NULL with errno: EILSEQ when a path is not valid UTF-8,
 * ENOMEM.
 */
struct json_t *conf_json(const struct conf *c);

/* Parses a whole decimal number in [min, max]. 0 or -1. */
int conf_parse_uint(const char *s, unsigned min, unsigned max,
    unsigned *out);

/* Parses a fraction above 0 and at most 1: digits, then "." and digits
 * if any ("0.5", "1", "0.25"). 0 or -1. */
int conf_parse_fraction(const char *s, double *out);

#endif
