# runit.bash - a private runsvdir for service tests (`load lib/runit`).
#
# Never touches /etc/service or /etc/sv: the repository's service dirs are
# copied under RUNIT_ROOT (runsv writes supervise/ into each), linked into
# a scan dir of their own, and supervised by a runsvdir started for the
# test (ecosystem.md 1). Typical use:
#
#	setup()    { vfs_setup; runit_setup; }
#	teardown() { runit_teardown; }
#	@test ... {
#		runit_copy vfsentinel-answer vfsentinel-kmsg
#		runit_env vfsentinel-kmsg VFSENTINEL_KMSG "$T/kmsg"
#		runit_start
#		runit_wait_stat vfsentinel-answer run
#	}

# runit_setup [ROOT]: chooses the directories (default $T/runit).
runit_setup() {
	RUNIT_ROOT=${1:-$T/runit}
	RUNIT_SV=$RUNIT_ROOT/sv
	RUNIT_SCAN=$RUNIT_ROOT/service
	RUNIT_PID=
	mkdir -p "$RUNIT_SV" "$RUNIT_SCAN"
	# The run scripts' shared part beside the copies, where a service
	# that dropped root may read it again.
	if [ -n "${VFSENTINEL_SV_LIB:-}" ]; then
		cp "$VFS_ROOT/sv/sv-lib.sh" "$RUNIT_ROOT/sv-lib.sh"
		VFSENTINEL_SV_LIB=$RUNIT_ROOT/sv-lib.sh
	fi
	export RUNIT_ROOT RUNIT_SV RUNIT_SCAN VFSENTINEL_SV_LIB
}

# runit_copy NAME... : copies sv/NAME (from $RUNIT_SRC, default the
# repository's sv/) into RUNIT_SV, without any stale supervise/ or logs,
# with env/VFSENTINEL_USER root.
runit_copy() {
	local src=${RUNIT_SRC:-$VFS_ROOT/sv} n
	for n in "$@"; do
		cp -R "$src/$n" "$RUNIT_SV/"
		rm -rf "$RUNIT_SV/$n/supervise" "$RUNIT_SV/$n/log/supervise" \
		    "$RUNIT_SV/$n/log/main"
		# Root, even where a vfsentinel user exists (make check-deb
		# leaves the package's): a dropped user could not reach the
		# test's private directories. t/80 tests the drop itself.
		runit_env "$n" VFSENTINEL_USER root
	done
}

# runit_env NAME VAR VALUE: sets VAR in the service's env/ dir (chpst -e);
# an empty VALUE unsets VAR for the service.
runit_env() {
	mkdir -p "$RUNIT_SV/$1/env"
	printf '%s\n' "$3" >"$RUNIT_SV/$1/env/$2"
}

# runit_test_path NAME...: points the services' PATH at the programs and
# test aids under test, then the system's.
runit_test_path() {
	local n
	for n in "$@"; do
		runit_env "$n" PATH "$VFS_BIN:$VFS_BUILD/t:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
	done
}

# runit_start: links every copied service into the scan dir, starts
# runsvdir (own session, fd 3 closed so bats does not wait for it) and
# waits until a runsv owns each service.
runit_start() {
	local s
	for s in "$RUNIT_SV"/*; do
		ln -sfn "$s" "$RUNIT_SCAN/"
	done
	# Under a sanitizer, the services run without LeakSanitizer's exit
	# check: it stops the process with a ptrace from a clone of itself,
	# and the TERM and CONT of `sv down` landing in it deadlocked it (the
	# program spinning, its tracer in wait(2), for a minute; kmsg-watch,
	# gpu-probe, vsock-answer and vfstore apply alike in check-asan's
	# t/66). Their leaks are checked where the tests run them directly.
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:detect_leaks=0} \
	    setsid runsvdir -P "$RUNIT_SCAN" 'log: ..........................' \
	    </dev/null >/dev/null 2>&1 3>&- &
	RUNIT_PID=$!
	for s in "$RUNIT_SV"/*; do
		wait_for sv status "$s" >/dev/null 2>&1 || return 1
	done
}

# runit_world PREFIX: runit_setup under R, a directory any user may enter
# (mktemp -d /tmp/PREFIX.XXXXXX; the bats temp dirs are 0700), for
# services that drop root; the programs copied into R/bin, which VFS_BIN
# and PATH then name (SPEC 7.4: a clone under a directory only root may
# enter keeps its bin/ from the user the services drop to). Teardown:
# runit_teardown, then rm -rf "$R".
runit_world() {
	R=$(mktemp -d "/tmp/$1.XXXXXX")
	chmod 755 "$R"
	runit_setup "$R/runit"
	cp -R "$VFS_BIN" "$R/bin"
	chmod -R a+rX "$R/bin"
	VFS_BIN=$R/bin
	PATH=$VFS_BIN:$PATH
}

# runit_stat NAME: "run" or "down" (from supervise/stat), or nothing.
runit_stat() {
	cat "$RUNIT_SV/$1/supervise/stat" 2>/dev/null
}

# runit_pid NAME: the pid of ./run's process, or nothing when down.
runit_pid() {
	local p
	p=$(cat "$RUNIT_SV/$1/supervise/pid" 2>/dev/null) || return 0
	[ "${p:-0}" != 0 ] && echo "$p"
	return 0
}

# runit_wait_stat NAME STAT [TENTHS]: waits until NAME is in STAT
# (default 5 s).
runit_wait_stat() {
	local i
	for ((i = 0; i < ${3:-50}; i++)); do
		[ "$(runit_stat "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	echo "runit: $1 is '$(runit_stat "$1")', wanted '$2'" >&2
	return 1
}

# runit_wait_new_pid NAME OLD [TENTHS]: waits until NAME runs with a pid
# other than OLD (default 5 s); prints the new pid.
runit_wait_new_pid() {
	local i p
	for ((i = 0; i < ${3:-50}; i++)); do
		p=$(runit_pid "$1")
		if [ -n "$p" ] && [ "$p" != "$2" ] &&
		    [ "$(runit_stat "$1")" = run ]; then
			echo "$p"
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# runit_log NAME: the service's svlogd log so far.
runit_log() {
	cat "$RUNIT_SV/$1/log/main/current" 2>/dev/null
}

# runit_teardown: stops runsvdir (TERM leaves the runsv's running), then
# every service and logger (TERM+CONT, KILL after 3 s) and their runsv.
runit_teardown() {
	[ -n "${RUNIT_SV:-}" ] || return 0
	if [ -n "${RUNIT_PID:-}" ]; then
		kill -TERM "$RUNIT_PID" 2>/dev/null || true
		wait "$RUNIT_PID" 2>/dev/null || true
	fi
	sv -w 3 force-shutdown "$RUNIT_SV"/* >/dev/null 2>&1 || true
	runit_sweep
	RUNIT_PID=
}

# runit_sweep: SIGKILL to whatever of the services still lives (orphans
# of a failed test hold the log pipe, which keeps svlogd and runsv up).
runit_sweep() {
	local s pid rest
	for s in "$RUNIT_SV"/*; do
		[ -d "$s" ] || continue
		while read -r pid rest; do
			[ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null || true
		done <<<"$(runit_procs "${s##*/}")"
	done
}

# --- Orphans (SPEC 5: after sv kill or kill -9 of any process of a
# service, 2 s later exactly one instance runs, nothing of the old one).

# runit_tag NAME: puts VFS_RUNIT_TAG=<the service dir> in NAME's env/;
# every process ./run starts inherits it, orphans too (runit_procs).
runit_tag() {
	runit_env "$1" VFS_RUNIT_TAG "$RUNIT_SV/$1"
}

# runit_procs NAME: the live (not zombie) processes of service NAME,
# wherever they are in the process tree, one "PID PPID COMM START" line
# each (START: the start time, field 22 of /proc/PID/stat): those that
# carry NAME's tag (runit_tag) or whose working directory is the service
# dir or its log/ (runsv starts ./run, ./finish and log/run there), and
# NAME's runsv itself (comm runsv).
runit_procs() {
	local dir=$RUNIT_SV/$1 pid s comm
	local -a f
	for pid in $({
		grep -lzx "VFS_RUNIT_TAG=$dir" /proc/[0-9]*/environ
		find /proc -mindepth 2 -maxdepth 2 -name cwd \
		    \( -lname "$dir" -o -lname "$dir/log" \)
	} 2>/dev/null | cut -d/ -f3 | sort -un); do
		read -r s 2>/dev/null <"/proc/$pid/stat" || continue
		comm=${s#*\(}
		comm=${comm%\)*}
		read -ra f <<<"${s##*) }"
		[ "${f[0]}" != Z ] || continue
		echo "$pid ${f[1]} $comm ${f[19]}"
	done
}

# runit_descends PID ANCESTOR: 0 when PID is ANCESTOR or one of its
# descendants, 1 when not, 2 when PID has ended. An ancestor that ends
# during the walk has handed PID to a new parent: the walk starts again.
runit_descends() {
	local p s try
	local -a f
	for ((try = 0; try < 5; try++)); do
		p=$1
		while [ "${p:-0}" -gt 1 ]; do
			[ "$p" = "$2" ] && return 0
			if ! read -r s 2>/dev/null <"/proc/$p/stat"; then
				[ "$p" != "$1" ] || return 2
				continue 2
			fi
			read -ra f <<<"${s##*) }"
			p=${f[1]}
		done
		return 1
	done
	return 1
}

# runit_strays NAME: prints "PID COMM" for every process of NAME
# (runit_procs) that does not descend from NAME's runsv: what a killed
# instance left behind. Nothing when there is none. A process that ends
# before it is looked at (a new instance's short-lived command) is none.
runit_strays() {
	local procs sup pid comm rc
	procs=$(runit_procs "$1")
	sup=$(awk '$3 == "runsv" { print $1 }' <<<"$procs")
	while read -r pid _ comm _; do
		if [ -z "$pid" ] || [ "$comm" = runsv ]; then
			continue
		fi
		rc=1
		[ -z "$sup" ] || { runit_descends "$pid" "$sup" && rc=0 || rc=$?; }
		[ "$rc" != 1 ] || echo "$pid $comm"
	done <<<"$procs"
}

# runit_count NAME COMM: how many processes of NAME have COMM.
runit_count() {
	runit_procs "$1" | awk -v c="$2" '$3 == c { n++ } END { print n + 0 }'
}

# runit_one NAME COMM...: NAME runs exactly one process of each COMM
# (for wait_for; one look at the process table for all of them).
runit_one() {
	local procs c
	procs=$(runit_procs "$1")
	shift
	for c in "$@"; do
		[ "$(awk -v c="$c" '$3 == c { n++ } END { print n + 0 }' \
		    <<<"$procs")" = 1 ] || return 1
	done
}

# runit_gone PID: waits (up to 10 s) until PID has exited (gone, or a
# zombie): by then the kernel has handed its children to their new
# parent, so runit_strays sees them as strays.
runit_gone() {
	local i s
	for ((i = 0; i < 200; i++)); do
		read -r s 2>/dev/null <"/proc/$1/stat" || return 0
		[[ ${s##*) } != Z* ]] || return 0
		nap 0.05
	done
	return 1
}

# runit_no_strays NAME SECONDS: waits until NAME has no stray process
# (runit_strays), SECONDS at most; 1 if strays are left then.
runit_no_strays() {
	local end=$((${EPOCHREALTIME/./} + $2 * 1000000))
	while [ -n "$(runit_strays "$1")" ]; do
		[ "${EPOCHREALTIME/./}" -lt "$end" ] || return 1
		nap 0.05
	done
}

# runit_alive PID START: that process (pid and start time) still lives.
runit_alive() {
	local s
	local -a f
	read -r s 2>/dev/null <"/proc/$1/stat" || return 1
	read -ra f <<<"${s##*) }"
	[ "${f[0]}" != Z ] && [ "${f[19]}" = "$2" ]
}
