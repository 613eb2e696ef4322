#!/usr/bin/env bats
# The guest services under a private runsvdir (SPEC.md 5): kmsg-watch and
# gpu-probe feed vsock-answer through its FIFO, runit restarts whatever is
# killed, and a program that finished its job (exit 0) leaves its
# service down.

load helpers
load lib/answer
load lib/runit

BATS_NO_PARALLELIZE_WITHIN_FILE=true
REC1='3,1042,8462102,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)'

setup() {
	vfs_setup
	answer_setup
	runit_setup
	mk_card "$SYSFS" 0000:00:03.0
	mkdir -p "$T/bin"
	# A fake nvidia-smi whose exit status the test sets in $T/smi_rc.
	cat >"$T/bin/nvidia-smi" <<-EOF
	#!/bin/sh
	echo "GPU 0: NVIDIA L40S-12Q (UUID: GPU-00000000)"
	exit "\$(cat "$T/smi_rc")"
	EOF
	chmod +x "$T/bin/nvidia-smi"
	echo 1 >"$T/smi_rc"
	printf '%s\n' '6,1,100,-;Linux version 6.1' "$REC1" \
	    ' SUBSYSTEM=pci' '6,1043,8462200,-;NVRM: loading' >"$T/kmsg"
}

teardown() {
	runit_teardown
	answer_teardown
}

# guest_services: copies the three services and points them at $T.
guest_services() {
	local s
	runit_copy vfsentinel-answer vfsentinel-kmsg vfsentinel-probe
	for s in vfsentinel-answer vfsentinel-kmsg vfsentinel-probe; do
		runit_test_path "$s"
		runit_env "$s" VFSENTINEL_CONF "$VFSENTINEL_CONF"
		runit_env "$s" VFSENTINEL_EVENTS "$T/run/events"
	done
	runit_env vfsentinel-answer VFSENTINEL_STATE_FILE "$T/run/gpu-init.json"
	runit_env vfsentinel-answer VFSENTINEL_LISTEN "unix:$SOCK"
	runit_env vfsentinel-answer VFSENTINEL_CONSOLE "$T/console"
	runit_env vfsentinel-kmsg VFSENTINEL_KMSG "$T/kmsg"
	runit_env vfsentinel-kmsg VFSENTINEL_SYSFS_ROOT "$SYSFS"
	runit_env vfsentinel-probe VFSENTINEL_NVIDIA_SMI "$T/bin/nvidia-smi"
	runit_env vfsentinel-probe VFSENTINEL_ARGS \
	    "--retry-interval 1 --attempt-timeout 5 --window 600"
}

# stays_down NAME: down (within 15 s: a loaded ASan run once took over 10 s
# to stop kmsg-watch) and still down, never restarted, 2.5 s later.
stays_down() {
	runit_wait_stat "$1" down 150
	sleep 2.5
	[ "$(runit_stat "$1")" = down ]
	[ -z "$(runit_pid "$1")" ]
}

ms_since() {
	echo $(( ($(date +%s%N) - $1) / 1000000 ))
}

@test "service dirs: executable run, finish and log/run; env has PATH and an empty CONF" {
	for s in vfsentinel-answer vfsentinel-kmsg vfsentinel-probe; do
		[ -x "$VFS_ROOT/sv/$s/run" ]
		[ -x "$VFS_ROOT/sv/$s/log/run" ]
		grep -q svlogd "$VFS_ROOT/sv/$s/log/run"
		# Empty: unset, so the programs read the default file when it
		# exists; a guest image needs none (the guest package ships none).
		[ -e "$VFS_ROOT/sv/$s/env/VFSENTINEL_CONF" ]
		[ ! -s "$VFS_ROOT/sv/$s/env/VFSENTINEL_CONF" ]
		[ -s "$VFS_ROOT/sv/$s/env/PATH" ]
		sh -n "$VFS_ROOT/sv/$s/run"
	done
	[ -x "$VFS_ROOT/sv/vfsentinel-kmsg/finish" ]
	[ -x "$VFS_ROOT/sv/vfsentinel-probe/finish" ]
}

# A runit service directory must work on its own (an operator links or
# copies one into the scan directory; the tests copy only the ones they
# run), so the settle logic is two files, not a link between services.
# They must not drift apart.
@test "the kmsg and probe services share one finish and one control/t" {
	run -0 cmp "$VFS_ROOT/sv/vfsentinel-kmsg/finish" \
	    "$VFS_ROOT/sv/vfsentinel-probe/finish"
	[ -z "$output" ]
	run -0 cmp "$VFS_ROOT/sv/vfsentinel-kmsg/control/t" \
	    "$VFS_ROOT/sv/vfsentinel-probe/control/t"
	[ -z "$output" ]
	run -0 find "$VFS_ROOT/sv" -type l
	[ -z "$output" ]
}

@test "a kmsg failure flows to the answer; kmsg-watch settles at the end of its file" {
	guest_services
	runit_start
	wait_long answer_state_is FAILED
	run -0 answer_query
	assert_output "{\"state\":\"FAILED\",\"failure_message\":\"${REC1#*;}\"}"
	stays_down vfsentinel-kmsg
	[ "$(runit_stat vfsentinel-probe)" = run ]
	grep -q HYPEMAN-GPU-INIT-FAILED "$T/console"
	runit_log vfsentinel-answer | grep -q '"GPU init failure detected"'
}

@test "gpu-probe success turns the state OK and the probe service stays down" {
	guest_services
	runit_start
	wait_long answer_state_is FAILED
	echo 0 >"$T/smi_rc"
	wait_long answer_state_is OK
	stays_down vfsentinel-probe
	run -0 jq -r .state "$T/run/gpu-init.json"
	assert_output OK
}

@test "killing any program is recovered within 2 s and the state survives" {
	mkfifo "$T/kmsgfifo"
	# Keep a writer on the kmsg FIFO so kmsg-watch runs on and on.
	sleep 600 >"$T/kmsgfifo" 3>&- &
	HOLD_PID=$!
	guest_services
	runit_env vfsentinel-kmsg VFSENTINEL_KMSG "$T/kmsgfifo"
	runit_start
	printf '%s\n' "$REC1" >"$T/kmsgfifo"
	wait_long answer_state_is FAILED
	sleep 1.2	# runsv restarts at once only after a run of 1 s
	for s in vfsentinel-answer vfsentinel-kmsg vfsentinel-probe; do
		old=$(runit_pid "$s")
		[ -n "$old" ]
		start=$(date +%s%N)
		kill -KILL "$old"
		runit_wait_new_pid "$s" "$old" 20
		wait_for answer_state_is FAILED
		elapsed=$(ms_since "$start")
		echo "$s recovered in $elapsed ms" >&3
		[ "$elapsed" -lt "$(load_scaled 2000)" ]
		sleep 1.2
	done
	# The producers feed the new vsock-answer through the same FIFO.
	echo 0 >"$T/smi_rc"
	wait_long answer_state_is OK
}

@test "sv restart brings a producer back: a requested TERM is not settling" {
	mkfifo "$T/kmsgfifo"
	sleep 600 >"$T/kmsgfifo" 3>&- &
	HOLD_PID=$!
	guest_services
	runit_env vfsentinel-kmsg VFSENTINEL_KMSG "$T/kmsgfifo"
	runit_start
	wait_long answer_state_is UNKNOWN
	sleep 1.2	# runsv restarts at once only after a run of 1 s
	for s in vfsentinel-kmsg vfsentinel-probe; do
		old=$(runit_pid "$s")
		[ -n "$old" ]
		sv restart "$RUNIT_SV/$s" >/dev/null
		runit_wait_new_pid "$s" "$old" 30
		[ ! -e "$RUNIT_SV/$s/supervise/term-requested" ]
	done
	# The restarted producers still feed the answer.
	printf '%s\n' "$REC1" >"$T/kmsgfifo"
	wait_long answer_state_is FAILED
	# sv down still means down.
	sv down "$RUNIT_SV/vfsentinel-kmsg" >/dev/null
	stays_down vfsentinel-kmsg
}

@test "a guest without an NVIDIA function: kmsg service settles, probe disabled settles" {
	rm -rf "$SYSFS/sys/bus/pci/devices/0000:00:03.0"
	guest_services
	runit_env vfsentinel-probe VFSENTINEL_NVIDIA_SMI ""
	runit_env vfsentinel-probe PATH "$VFS_BIN:/usr/bin:/bin"
	runit_start
	stays_down vfsentinel-kmsg
	stays_down vfsentinel-probe
	[ "$(runit_stat vfsentinel-answer)" = run ]
	run -0 answer_query
	assert_output '{"state":"UNKNOWN"}'
	[ "$(runit_log vfsentinel-kmsg | grep -c '"level":"info"')" -ge 1 ]
	runit_log vfsentinel-probe | grep -q 'GPU init probe disabled'
}

@test "shutdown: every runsv exits, finished (exit 0) or running, none is left behind" {
	mkfifo "$T/kmsgfifo"
	sleep 600 >"$T/kmsgfifo" 3>&- &
	HOLD_PID=$!
	guest_services
	runit_env vfsentinel-kmsg VFSENTINEL_KMSG "$T/kmsgfifo"
	echo 0 >"$T/smi_rc"
	runit_start
	wait_long answer_state_is OK
	runit_wait_stat vfsentinel-probe down 100
	runit_wait_stat vfsentinel-kmsg run
	kill -TERM "$RUNIT_PID"
	wait "$RUNIT_PID" || true
	RUNIT_PID=
	# One at a time, producers first, so kmsg-watch sees only the TERM
	# (not its FIFO reader going away) and exits 0: its finish must not
	# turn the pending exit into a plain down.
	for s in vfsentinel-kmsg vfsentinel-probe vfsentinel-answer; do
		run -0 sv -w 15 force-shutdown "$RUNIT_SV/$s"
		wait_for eval "! sv status '$RUNIT_SV/$s' >/dev/null 2>&1"
	done
	run -1 sv status "$RUNIT_SV/vfsentinel-kmsg"
	assert_output --partial "runsv not running"
	runit_log vfsentinel-kmsg | grep -q '"level"'
}

# own_log SERVICE VAR=VALUE...: the service's run script started by hand,
# its env taken as loaded and systemd as its supervisor, with these
# variables, for at most 3 s; $T/own.log holds the lines the script
# wrote under the service's own name.
own_log() {
	local s=$1
	shift
	runit_copy "$s"
	(cd "$RUNIT_SV/$s" && env VFSENTINEL_SUPERVISOR=systemd \
	    PATH="$VFS_BIN:$PATH" "$@" timeout 3 ./run env-loaded) \
	    >"$T/out.log" 2>&1 || true
	grep -F "\"$s\"" "$T/out.log" >"$T/own.log" || true
}

# own_log_ok SERVICE KEY VALUE: one line in $T/own.log, one JSON object
# with ts, level, prog and msg first, and KEY holding VALUE byte for byte.
own_log_ok() {
	[ "$(wc -l <"$T/own.log")" = 1 ]
	jq -e --arg s "$1" --arg k "$2" --arg v "$3" '
	    (keys_unsorted[0:4] == ["ts", "level", "prog", "msg"])
	    and .prog == $s and .level == "warn" and .[$k] == $v
	    and (.ts | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$"))' \
	    "$T/own.log"
}

@test "every run script's own log line is JSON, ts first, with a quote in a path or user" {
	local bad user=$'vfs"no\\user\tx' s
	bad=$T/run/ev$'"il\\path\tx\ny'
	for s in vfsentinel-kmsg vfsentinel-probe; do
		own_log "$s" VFSENTINEL_EVENTS="$bad"
		own_log_ok "$s" file "$bad"
	done
	own_log vfsentinel-answer VFSENTINEL_EVENTS="$bad" \
	    VFSENTINEL_USER="$user" VFSENTINEL_ARGS=--no-such-option
	own_log_ok vfsentinel-answer reason "user $user does not exist"
	# The host scripts' (jq -nc --arg), held to the same line.
	mkdir -p "$T/prom" "$DATA/gpu"
	printf 'data_dir = %s\nmetrics.textfile_dir = %s\nsysfs_root = %s\n' \
	    "$DATA" "$T/prom" "$SYSFS" >"$T/host.conf"
	for s in vfsentinel-sentinel vfsentinel-resources; do
		own_log "$s" VFSENTINEL_CONF="$T/host.conf" \
		    VFSENTINEL_USER="$user" VFSENTINEL_ARGS=--no-such-option
		own_log_ok "$s" reason "user $user does not exist"
	done
}
