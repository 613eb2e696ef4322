# shellcheck shell=sh
# sv-lib.sh - what every vfsentinel run script does, written once
# (STYLE.md, "Run scripts are programs too"): a run script sources it,
# says what is its own, and execs its program. POSIX sh, so that the
# guest's /bin/sh scripts and the host's bash scripts share it.
#
# Where it is: /usr/lib/vfsentinel/sv-lib.sh on a host and
# /usr/lib/vfsentinel-guest/sv-lib.sh in a guest (the packages; make
# install puts it in PREFIX/lib/vfsentinel/ and names that in the run
# scripts it installs); $VFSENTINEL_SV_LIB names another (the tests'
# copies of the services). A run script reads
#
#	. "${VFSENTINEL_SV_LIB:-/usr/lib/vfsentinel/sv-lib.sh}"
#	sv_start vfsentinel-NAME "$@"	# the log, ./env, one supervisor
#	sv_config			# host services: SV_CFG
#	dir=$(sv_conf metrics.textfile_dir) || exit
#	sv_drop "the textfile directory $dir" "$dir"
#	exec PROGRAM ...
#
# A new supervisor, a new way to read settings or another log format is
# one change here. Names: functions sv_*, variables SV_* (the run
# scripts' own are lowercase); nothing here runs when sourced.

# sv_start NAME ARGS...: the run script's start, ARGS its own ("$@").
# stderr joins stdout (the service's log). ./env is loaded: by runit's
# chpst -e, which runs the script again with the argument env-loaded;
# without runit (a systemd host need not have it: install.md, "Which
# supervisor") read here as chpst -e reads it, an empty file unsetting
# its variable. Then one supervisor a service: on a host whose PID 1 is
# systemd, runit leaves this service down while its unit NAME.service
# is enabled or running (the unit runs the script with
# VFSENTINEL_SUPERVISOR=systemd). Sets SV_NAME, and SV_DROPPED when
# sv_drop's second start.
sv_start() {
	SV_NAME=$1
	shift
	exec 2>&1
	if [ "${1:-}" != env-loaded ] && ! command -v chpst >/dev/null; then
		for _sv_f in ./env/*; do
			if [ -s "$_sv_f" ]; then
				IFS= read -r _sv_v <"$_sv_f" || :
				export "${_sv_f##*/}=$_sv_v"
			else
				unset "${_sv_f##*/}"
			fi
		done
		set -- env-loaded
	fi
	[ "${1:-}" = env-loaded ] || exec chpst -e ./env "$0" env-loaded
	SV_DROPPED=
	[ "${2:-}" != dropped ] || SV_DROPPED=yes
	if [ "${VFSENTINEL_SUPERVISOR:-}" != systemd ] &&
	    [ -d /run/systemd/system ] &&
	    { systemctl -q is-enabled "$SV_NAME.service" ||
	    systemctl -q is-active "$SV_NAME.service"; } 2>/dev/null; then
		sv_log warn "systemd runs this service; runit keeps it down" \
		    unit "$SV_NAME.service"
		exec sv down .
	fi
}

# sv_log LEVEL MSG [KEY VALUE]...: one JSON log line of the service on
# stdout, keys as the programs write theirs (ts, level, prog, msg, then
# the context). A guest image need not have jq (the guest package does
# not depend on it), so awk escapes every value: quote, backslash and
# each control character (as \u00XX); a byte above 127 passes as is.
sv_log() {
	LC_ALL=C awk 'function q(s,  i, c, o) {
		o = "\""
		for (i = 1; i <= length(s); i++) {
			c = substr(s, i, 1)
			o = o (c in esc ? esc[c] : c)
		}
		return o "\""
	}
	BEGIN {
		for (i = 1; i < 32; i++)
			esc[sprintf("%c", i)] = sprintf("\\u%04x", i)
		esc["\""] = "\\\""
		esc["\\"] = "\\\\"
		line = "{\"ts\":" q(ARGV[1]) ",\"level\":" q(ARGV[3]) \
		    ",\"prog\":" q(ARGV[2]) ",\"msg\":" q(ARGV[4])
		for (i = 5; i + 1 < ARGC; i += 2)
			line = line "," q(ARGV[i]) ":" q(ARGV[i + 1])
		print line "}"
	}' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$SV_NAME" "$@"
}

# sv_config: the effective configuration into SV_CFG, from `vfstore
# config` (the file named by VFSENTINEL_CONF), never parsed here. A
# configuration error (78, said once by vfstore with file, line and key)
# is not fixed by a restart: runit keeps the service down until sv up
# (under systemd the unit's RestartPreventExitStatus=78 leaves it
# failed); TERM from that sv down waits for it, then the script exits
# 78. Any other failure exits with vfstore's status.
sv_config() {
	SV_CFG=$(vfstore config) || {
		_sv_rc=$?
		if [ "$_sv_rc" = 78 ] &&
		    [ "${VFSENTINEL_SUPERVISOR:-}" != systemd ]; then
			trap 'exit 78' TERM
			sv down . 2>/dev/null
		fi
		exit "$_sv_rc"
	}
}

# sv_conf KEY: KEY's value in SV_CFG on stdout ("" when it has none).
sv_conf() {
	printf '%s\n' "$SV_CFG" |
	    jq -r --arg k "$1" '.[$k] | if . == null then "" else . end'
}

# sv_user: sets SV_USER (VFSENTINEL_USER, default vfsentinel); true when
# this process should become it: it is root, the user is not root (the
# operator's choice) and this is not sv_drop's second start. An
# unprivileged start (systemd's User=) is already where it should be.
sv_user() {
	SV_USER=${VFSENTINEL_USER:-vfsentinel}
	[ -z "${SV_DROPPED:-}" ] && [ "$SV_USER" != root ] &&
	    [ "$(id -u)" = 0 ]
}

# sv_as_user CMD...: CMD as SV_USER, its primary group and its groups.
sv_as_user() {
	setpriv --reuid="$SV_USER" --regid="$(id -g "$SV_USER")" \
	    --init-groups "$@"
}

# sv_drop [--SETPRIV-OPTION]... [WHAT DIR]...: root starts the script
# again as the service user (sv_user), with those setpriv options (no
# blanks in them), when that user exists and may write each DIR;
# otherwise it stays root and says why at warn, once a start ("user U
# may not write WHAT"). Returns only where the script goes on as it is.
sv_drop() {
	sv_user || return 0
	_sv_opts=
	while [ $# -gt 0 ] && [ "${1#--}" != "$1" ]; do
		_sv_opts="$_sv_opts $1"
		shift
	done
	_sv_why=
	if ! id "$SV_USER" >/dev/null 2>&1; then
		_sv_why="user $SV_USER does not exist"
	else
		while [ $# -ge 2 ]; do
			if ! sv_as_user test -w "$2"; then
				_sv_why="user $SV_USER may not write $1"
				break
			fi
			shift 2
		done
	fi
	if [ -z "$_sv_why" ]; then
		# shellcheck disable=SC2086 # options, split on purpose
		exec setpriv --reuid="$SV_USER" --regid="$(id -g "$SV_USER")" \
		    --init-groups $_sv_opts "$0" env-loaded dropped
	fi
	sv_log warn "running as root: cannot drop to the service user" \
	    reason "$_sv_why"
}

# sv_exec_user CMD...: execs CMD as SV_USER (runit's chpst -u where it
# is installed, else setpriv), for a service that drops in one step.
sv_exec_user() {
	if command -v chpst >/dev/null; then
		exec chpst -u "$SV_USER" "$@"
	fi
	exec setpriv --reuid="$SV_USER" --regid="$(id -g "$SV_USER")" \
	    --init-groups "$@"
}
