/*
 * log.h - JSON log lines on stderr, and the exit codes of SPEC.md 2.2.
 *
 * Every record is one JSON object on one line, keys in the fixed order
 * ts, level, prog, msg, then context fields, written with one write(2)
 * and kept under 1000 bytes (long context strings are truncated).
 */
#ifndef VFS_LOG_H
#define VFS_LOG_H

#include <stdbool.h>
#include <stdnoreturn.h>
#include <sysexits.h>

/* make VERSION=X.Y.Z (debian/rules: the package's upstream version). */
#ifndef VFS_VERSION
#define VFS_VERSION "0.1.0"
#endif

/* Exit codes (sysexits.h names, listed here as the contract). */
enum {
	EXIT_NO = 1		/* a well-formed "no" */
};

enum log_level {
	LVL_DEBUG,
	LVL_INFO,
	LVL_WARN,
	LVL_ERROR
};

/* Sets the program name used in every record. Call first in main. */
void log_init(const char *prog);

/*
 * From now on, every record at warn and above also goes to syslog(3)
 * (facility daemon, ident the program's name, priority warning or err;
 * the message is the JSON record): for a program whose stderr nobody
 * reads, as libvirt's hooks (SPEC 8.1). log_syslog_line() sends a plain
 * line so, when log_syslog() was called.
 */
void log_syslog(void);
void log_syslog_line(enum log_level level, const char *text);

/* The program name given to log_init (borrowed, static). */
const char *log_prog(void);

/* Sets the minimum level; 0 on success, -1 for an unknown level name. */
int log_set_level_name(const char *name);
void log_set_level(enum log_level level);
bool log_enabled(enum log_level level);

/*
 * Writes one record. fmt is a jansson json_pack() object format for the
 * context fields, e.g. "{s:s, s:i}", "vf", vf, "failures", n; or NULL for
 * none. A pack error is itself logged as a field, never fatal.
 */
void log_msg(enum log_level level, const char *msg, const char *fmt, ...);

/*
 * Logs at error level and returns code: the failure of a program's
 * helper, which returns the exit code to main instead of exiting there.
 */
int log_fail(int code, const char *msg, const char *fmt, ...);

/* Logs at error level and exits with code. Program files only. */
noreturn void die(int code, const char *msg, const char *fmt, ...);

#endif
