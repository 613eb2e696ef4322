#!/usr/bin/env bats
# 66-service-orphans: SPEC 5 for every service under a private runsvdir.
# `sv kill` (SIGKILL to ./run's process) and kill -9 of each process of a
# service (its run shell, each stage, a child, the logger) leave, 2 s
# later, exactly one instance running and no process of the old one (an
# orphan is found anywhere in the process tree by the tag its environment
# carries, runit_tag); no temporary file or directory is left behind; the
# sentinel writes neither the store nor its textfile once it is down.

load helpers
load lib/sentinel
load lib/answer
load lib/runit

BATS_NO_PARALLELIZE_WITHIN_FILE=true
REC1='3,1042,8462102,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)'
SVC=vfsentinel-sentinel
RES=vfsentinel-resources

setup() {
	need_tool runsv socat
	vfs_setup
	runit_setup
	mkdir -p "$T/tmp" "$T/prom"
	HOLD_PIDS=
}

teardown() {
	local p
	runit_teardown
	for p in $HOLD_PIDS; do
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	sentinel_teardown
}

# hold CMD...: a background helper killed at teardown.
hold() {
	"$@" 3>&- &
	HOLD_PIDS="$HOLD_PIDS $!"
}

# service NAME: copies NAME, tags it, points PATH, TMPDIR and (host
# services) VFSENTINEL_CONF at the test.
service() {
	runit_copy "$1"
	runit_test_path "$1"
	runit_tag "$1"
	runit_env "$1" TMPDIR "$T/tmp"
}

# host_conf: the configuration of the host services, in $T/svc.conf.
host_conf() {
	cat >"$T/svc.conf" <<-EOC
	data_dir = $DATA
	sysfs_root = $SYSFS
	metrics.textfile_dir = $T/prom
	sentinel.interval = 1
	sentinel.timeout = 1
	EOC
}

# kill_round NAME VICTIM COMM...: waits until NAME runs one process of
# each COMM, for over a second (runsv restarts at once only a run of 1 s
# or more), then kills VICTIM: "sv-kill" (sv kill NAME) or the COMM of a
# process of NAME (kill -9). Within 2 s no process of NAME may live
# outside its runsv's tree; NAME runs one process of each COMM again;
# when ./run's process changed, none of the old instance is alive.
kill_round() {
	local name=$1 victim=$2 main old vpid p i
	shift 2
	echo "round: $name, $victim"
	wait_long runit_one "$name" "$@"
	sleep 1.2
	main=$(runit_pid "$name")
	old=$(runit_procs "$name" |
	    awk '$3 != "runsv" && $3 != "svlogd" { print $1 ":" $4 }')
	if [ "$victim" = sv-kill ]; then
		vpid=$main
		sv kill "$RUNIT_SV/$name" >/dev/null
	else
		# (A report between two runs is looked for until one runs:
		# on a loaded machine the one seen above may have ended.)
		for ((i = 0; i < 200; i++)); do
			vpid=$(runit_procs "$name" |
			    awk -v c="$victim" '$3 == c { print $1; exit }')
			[ -n "$vpid" ] && break
			sleep 0.05
		done
		[ -n "$vpid" ] || fail "$name runs no $victim"
		kill -KILL "$vpid"
	fi
	runit_gone "$vpid" || fail "$name: $victim $vpid outlived SIGKILL"
	runit_no_strays "$name" 2 || true
	run runit_strays "$name"
	assert_success
	assert_output ""
	wait_long runit_one "$name" "$@" ||
	    fail "$name: not one of each $*: $(runit_procs "$name")"
	if [ "$(runit_pid "$name")" != "$main" ]; then
		for p in $old; do
			! runit_alive "${p%:*}" "${p#*:}" ||
			    fail "$name: $p of the old instance is alive"
		done
	fi
	run runit_strays "$name"
	assert_output ""
}

# down_clean NAME: sv down stops NAME on its TERM (no KILL needed), and
# within 2 s only its runsv and logger are left.
down_clean() {
	local end left
	run sv -w 15 down "$RUNIT_SV/$1"
	assert_success
	end=$((${EPOCHREALTIME/./} + 2000000))
	while :; do
		left=$(runit_procs "$1" | awk '$3 != "runsv" && $3 != "svlogd"')
		[ -n "$left" ] || return 0
		[ "${EPOCHREALTIME/./}" -lt "$end" ] || break
		nap 0.05
	done
	fail "$1 is down, yet runs: $left"
}

# no_temp DIR...: nothing but the listed final files: no temporary file a
# killed writer left behind, no temp dir, no FIFO.
no_temp() {
	run find "$@" -mindepth 1 \( -name '*.tmp*' -o -name '.*' -o -type p \
	    -o -name 'vfsentinel-*.??????' \) -print
	assert_success
	assert_output ""
}

# sentinel_service: the host sentinel over one guest that answers FAILED.
sentinel_service() {
	sentinel_setup
	host_conf
	service $SVC
	runit_env $SVC VFSENTINEL_CONF "$T/svc.conf"
	runit_env $SVC VFSENTINEL_ARGS "--targets $TARGETS"
	answer_guest a1 FAILED
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/a1" >"$TARGETS"
	runit_start
	wait_long failures_are 1
}

# failures_are N: the store holds N failures for 0000:e3:00.4 (show
# exits 1 with no output once it has no record).
failures_are() {
	[ "$({ vfstore --data-dir "$DATA" show --vf 0000:e3:00.4 || :; } |
	    jq -rs '.[0].failures // [] | length')" = "$1" ]
}

# checks_total: the sentinel textfile's checks, all results summed.
checks_total() {
	awk '/^hypeman_instances_vgpu_sentinel_checks_total\{/ { n += $2 }
	    END { print n + 0 }' "$T/prom/$SVC.prom" 2>/dev/null
}

@test "service scripts: executable, parsed by their shell, shellcheck clean" {
	local f sh
	for f in "$VFS_ROOT"/sv/*/run "$VFS_ROOT"/sv/*/finish \
	    "$VFS_ROOT"/sv/*/log/run "$VFS_ROOT"/sv/*/control/*; do
		[ -x "$f" ] || fail "$f is not executable"
		sh=$(head -n 1 "$f")
		case $sh in
		'#!/bin/sh' | '#!/bin/bash') ;;
		*) fail "$f: unexpected interpreter $sh" ;;
		esac
		"${sh#\#!}" -n "$f" || fail "$f does not parse"
	done
	need_tool shellcheck
	run shellcheck "$VFS_ROOT"/sv/sv-lib.sh "$VFS_ROOT"/sv/*/run \
	    "$VFS_ROOT"/sv/*/finish "$VFS_ROOT"/sv/*/log/run \
	    "$VFS_ROOT"/sv/*/control/*
	assert_success
	assert_output ""
}

@test "runit_strays: a process that ended while looked at is no stray; one outside runsv is" {
	local fake_sv fake_gone fake_out
	# A stand-in runsv, a process that has ended, one that never was
	# the stand-in's: the check's view of a service that is restarting.
	hold sleep 100
	fake_sv=${HOLD_PIDS##* }
	true &
	fake_gone=$!
	wait "$fake_gone"
	hold sleep 100
	fake_out=${HOLD_PIDS##* }
	# (Names of its own: runit_strays' locals would hide sup, out.)
	# shellcheck disable=SC2317 # called by runit_strays
	runit_procs() {
		printf '%s 1 runsv 0\n%s %s run 0\n%s 1 sleep 0\n' \
		    "$fake_sv" "$fake_gone" "$fake_sv" "$fake_out"
	}
	run runit_strays x
	assert_success
	assert_output "$fake_out sleep"
}

@test "sentinel: sv kill, kill -9 of each process: one instance, no orphan, no temp dir" {
	sentinel_service
	# ./run execs into vfstore apply and its process substitution into
	# sentinel-poll: no shell is left to kill.
	for v in sv-kill vfstore sentinel-poll svlogd; do
		kill_round $SVC "$v" vfstore sentinel-poll svlogd
	done
	run -0 runit_count $SVC run
	assert_output 0
	down_clean $SVC
	no_temp "$T/tmp" "$T/prom" "$DATA/gpu"
}

@test "sentinel waiting for VFs: sv kill, kill -9 of each process: one instance, no orphan" {
	sentinel_setup
	rm -rf "$SYSFS/sys/bus/pci/devices"/*
	host_conf
	service $SVC
	runit_env $SVC VFSENTINEL_CONF "$T/svc.conf"
	runit_env $SVC VFSENTINEL_ARGS "--targets $TARGETS"
	runit_start
	wait_long test -s "$T/prom/vfsentinel-poller.prom"
	for v in sv-kill vfstore sentinel-poll svlogd; do
		kill_round $SVC "$v" vfstore sentinel-poll svlogd
	done
	down_clean $SVC
	no_temp "$T/tmp" "$T/prom"
}

@test "sentinel: after sv kill and sv down nothing writes: a clear stays cleared, the textfile unchanged" {
	sentinel_service
	sleep 1.2
	old=$(runit_pid $SVC)
	sv kill "$RUNIT_SV/$SVC" >/dev/null
	runit_wait_new_pid $SVC "$old" 30
	sleep 1
	run -0 sv -w 15 down "$RUNIT_SV/$SVC"
	run -0 vfstore --data-dir "$DATA" clear --vf 0000:e3:00.4
	prom=$(sha "$T/prom/$SVC.prom")
	# The guest keeps answering FAILED; nothing may record it now.
	guest_state_is "$G/a1" FAILED
	sleep 3
	failures_are 0
	[ "$(sha "$T/prom/$SVC.prom")" = "$prom" ]
	down_clean $SVC
}

@test "sentinel: the checks counter never goes backwards after sv kill" {
	sentinel_service
	sleep 1.2
	old=$(runit_pid $SVC)
	sv kill "$RUNIT_SV/$SVC" >/dev/null
	runit_wait_new_pid $SVC "$old" 30
	sleep 2
	last=0
	for ((i = 0; i < 30; i++)); do
		n=$(checks_total)
		[ "$n" -ge "$last" ] || fail "checks_total went from $last to $n"
		last=$n
		sleep 0.1
	done
	[ "$last" -ge 1 ]
}

@test "resources: sv kill, kill -9 of each process, idle or in a report: one instance, no orphan" {
	mk_card "$SYSFS" 0000:e3:00.0
	mk_vf "$SYSFS" 0000:e3:00.0 0000:e3:00.4
	host_conf
	service $RES
	runit_env $RES VFSENTINEL_CONF "$T/svc.conf"
	# 5 s between reports: a pause outlives a kill by more than 2 s.
	runit_env $RES INTERVAL 5
	runit_start
	wait_long test -s "$T/prom/$RES.prom"
	for v in sv-kill run svlogd; do
		kill_round $RES "$v" run svlogd
	done
	# A writer holds the store lock: every report waits for it (up to
	# its 10 s lock timeout), so the report is there to be killed.
	[ -e "$DATA/gpu/lock" ] || : >"$DATA/gpu/lock"
	hold bash -c 'exec 9<"$1" && flock 9 && exec sleep 600' _ "$DATA/gpu/lock"
	# (A comm has at most 15 characters.)
	rr=resources-repor
	wait_long runit_one $RES run $rr svlogd
	for v in $rr run sv-kill; do
		kill_round $RES "$v" run $rr svlogd
	done
	kill -KILL $HOLD_PIDS
	down_clean $RES
	no_temp "$T/tmp" "$T/prom" "$DATA/gpu"
}

# guest_services: the three guest services on $T: kmsg-watch reads a FIFO
# kept open (so it runs on), gpu-probe's nvidia-smi never ends (so
# the probe always has its child, killed after 60 s).
guest_services() {
	local s
	answer_setup
	mk_card "$SYSFS" 0000:00:03.0
	mkfifo "$T/kmsgfifo"
	hold bash -c 'exec sleep 600 >"$1"' _ "$T/kmsgfifo"
	mkdir -p "$T/bin"
	printf '#!/bin/sh\nexec sleep infinity\n' >"$T/bin/nvidia-smi"
	chmod +x "$T/bin/nvidia-smi"
	for s in vfsentinel-answer vfsentinel-kmsg vfsentinel-probe; do
		service "$s"
		runit_env "$s" VFSENTINEL_CONF "$VFSENTINEL_CONF"
		runit_env "$s" VFSENTINEL_EVENTS "$T/run/events"
	done
	runit_env vfsentinel-answer VFSENTINEL_STATE_FILE "$T/run/gpu-init.json"
	runit_env vfsentinel-answer VFSENTINEL_LISTEN "unix:$SOCK"
	runit_env vfsentinel-kmsg VFSENTINEL_KMSG "$T/kmsgfifo"
	runit_env vfsentinel-kmsg VFSENTINEL_SYSFS_ROOT "$SYSFS"
	runit_env vfsentinel-probe VFSENTINEL_METHOD nvidia-smi
	runit_env vfsentinel-probe VFSENTINEL_NVIDIA_SMI "$T/bin/nvidia-smi"
	runit_env vfsentinel-probe VFSENTINEL_ARGS \
	    "--retry-interval 1 --attempt-timeout 60 --window 600"
	runit_start
	printf '%s\n' "$REC1" >"$T/kmsgfifo"
	wait_long answer_state_is FAILED
}

@test "guest services: sv kill, kill -9 of each process and of nvidia-smi: one instance, no orphan" {
	guest_services
	for v in sv-kill vsock-answer svlogd; do
		kill_round vfsentinel-answer "$v" vsock-answer svlogd
	done
	for v in sv-kill kmsg-watch svlogd; do
		kill_round vfsentinel-kmsg "$v" kmsg-watch svlogd
	done
	for v in sv-kill gpu-probe sleep svlogd; do
		kill_round vfsentinel-probe "$v" gpu-probe sleep svlogd
	done
	wait_long answer_state_is FAILED
	for s in vfsentinel-probe vfsentinel-kmsg vfsentinel-answer; do
		down_clean "$s"
	done
	no_temp "$T/tmp"
	run find "$T/run" -mindepth 1 -name '*.tmp*' -print
	assert_output ""
}
