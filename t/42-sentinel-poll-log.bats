#!/usr/bin/env bats
# sentinel-poll --source log: the serial-console transport (SPEC 4.4 last
# bullet, upstream V2 rules and tests 69-73).

load helpers
load lib/sentinel

setup() {
	vfs_setup
	sentinel_setup
	LOG=$T/app.log
	target 0000:e3:00.4 i-1 "$TS1" "" "$CTL" "$LOG" >"$TARGETS"
}

teardown() {
	sentinel_teardown
}

# lines_out: the check lines written so far, as "check vf instance at".
lines_out() {
	jq -r '"\(.check) \(.vf_address) \(.instance_id) \(.assigned_at)"' "$T/out"
}

# store_holds VF INSTANCE AT: the health store holds the failure of the
# assignment (as vfstore apply would have recorded it).
store_holds() {
	vfstore --data-dir "$DATA" init >/dev/null 2>&1
	vfstore --data-dir "$DATA" report-failure --vf "$1" --instance "$2" \
	    --assigned-at "$3" >/dev/null
}

# reported_again: a scan after this call wrote more check lines.
reported_again() {
	local n
	n=$(lines_out | wc -l)
	next_scan
	[ "$(lines_out | wc -l)" -gt "$n" ]
}

# not_reported_again: two scans after this call wrote no check line.
not_reported_again() {
	local n
	next_scan
	n=$(lines_out | wc -l)
	next_scan
	assert_equal "$(lines_out | wc -l)" "$n"
}

@test "log source: only whole lines of exactly the marker shape count" {
	# The guest kernel's own line (first below) is the next tests'.
	echo 'sentinel.console_kernel_lines = off' >"$VFSENTINEL_CONF"
	{
		echo "[   27.031415] $NVRM"
		echo '# dmesg | grep -c HYPEMAN-GPU-INIT-FAILED'
		echo "2026/08/20 15:00:31 [guest-agent] HYPEMAN-GPU-INIT-FAILED ts=2026-08-20T15:00:31Z nvrm=\"NVRM: GPU 0000:00:03.0: RmInit"
		echo '2026/08/20 15:00:31 [guest-agent] HYPEMAN-GPU-INIT-FAILED ts=2026-08-20T15:00:31Z nvrm="oops: RmInitAdapter failed!"'
		echo '2026/08/20 15:00:31 [guest-agent] HYPEMAN-GPU-INIT-READY ts=2026-08-20T15:00:31Z'
		echo "root@vm:~# echo '$(marker_failed)'"
		echo "$(marker_failed) extra"
	} >"$LOG"
	run -0 --separate-stderr poll_once --source log
	assert_output ''
	marker_failed >>"$LOG"
	echo >>"$LOG"
	run -0 --separate-stderr poll_once --source log
	assert_output "$(jq -cn --arg n "$NVRM" --arg at "$TS1" \
	    '{check:"failed",vf_address:"0000:e3:00.4",instance_id:"i-1",assigned_at:$at,nvrm:$n}')"
}

@test "log source: a missing log or healthy output reports nothing" {
	run -0 --separate-stderr poll_once --source log
	assert_output ''
	printf 'Linux version 6.1\nlogin: \n' >"$LOG"
	run -0 --separate-stderr poll_once --source log
	assert_output ''
}

@test "log source: a partial marker waits for its newline; a seen FAILED marker is reported until the store holds it" {
	marker_failed >"$LOG"
	log_poller
	next_scan
	assert_equal "$(lines_out)" ''
	echo >>"$LOG"
	next_scan
	assert_equal "$(lines_out | uniq)" "failed 0000:e3:00.4 i-1 $TS1"
	reported_again
	store_holds 0000:e3:00.4 i-1 "$TS1"
	not_reported_again
	assert_equal "$(lines_out | uniq)" "failed 0000:e3:00.4 i-1 $TS1"
}

@test "log source: a marker split by an interleaved line does not count; the next intact repeat does" {
	local m
	m=$(marker_failed)
	{
		printf '%s\n' "${m:0:70}"
		echo '[   31.000001] random: crng init done'
		printf '%s\n' "${m:70}"
	} >"$LOG"
	run -0 --separate-stderr poll_once --source log
	assert_output ''
	printf '%s\n' "$m" >>"$LOG"
	run -0 --separate-stderr poll_once --source log
	assert_equal "$(jq -r .check <<<"$output")" failed
}

@test "log source: the last marker of a pass wins" {
	{ marker_failed; echo; marker_ok; echo; } >"$LOG"
	run -0 --separate-stderr poll_once --source log
	assert_equal "$(jq -c . <<<"$output")" "$(jq -cn --arg at "$TS1" \
	    '{check:"ok",vf_address:"0000:e3:00.4",instance_id:"i-1",assigned_at:$at}')"
	{ marker_ok; echo; marker_failed; echo; } >"$LOG"
	run -0 --separate-stderr poll_once --source log
	assert_equal "$(jq -r .check <<<"$output")" failed
}

@test "log source: a marker in a line over 64 KiB is ignored, with its tail on a later scan" {
	{ head -c 70000 /dev/zero | tr '\0' x; marker_failed; echo; } >"$LOG"
	run -0 --separate-stderr poll_once --source log
	assert_output ''
	head -c 70000 /dev/zero | tr '\0' x >"$LOG"
	log_poller
	{ marker_failed; echo; } >>"$LOG"
	next_scan
	assert_equal "$(lines_out)" ''
	{ marker_failed; echo; } >>"$LOG"
	next_scan
	assert_equal "$(lines_out | uniq)" "failed 0000:e3:00.4 i-1 $TS1"
}

@test "log source: truncation resets the skip state" {
	head -c 70000 /dev/zero | tr '\0' x >"$LOG"
	log_poller
	{ marker_failed; echo; } >"$LOG"
	next_scan
	assert_equal "$(lines_out | uniq)" "failed 0000:e3:00.4 i-1 $TS1"
}

@test "log source: a shrunk log restarts from 0 after the rest of LOG.1" {
	printf 'boot line one\nboot line two\n' >"$LOG"
	log_poller
	{ marker_failed; echo; } >>"$LOG"
	mv "$LOG" "$LOG.1"
	echo 'new' >"$LOG"
	next_scan
	assert_equal "$(lines_out | uniq)" "failed 0000:e3:00.4 i-1 $TS1"
	{ marker_ok; echo; } >>"$LOG"
	next_scan
	assert_equal "$(lines_out | tail -1)" "ok 0000:e3:00.4 i-1 $TS1"
}

@test "log source: a new claim time or VF starts a new tail" {
	# An OK marker: written once per pass that reads it.
	{ marker_ok; echo; } >"$LOG"
	log_poller
	assert_equal "$(lines_out)" "ok 0000:e3:00.4 i-1 $TS1"
	target 0000:e3:00.4 i-1 "$TS2" "" "$CTL" "$LOG" >"$TARGETS"
	next_scan
	assert_equal "$(lines_out | tail -1)" "ok 0000:e3:00.4 i-1 $TS2"
	target 0000:e3:00.5 i-1 "$TS2" "" "$CTL" "$LOG" >"$TARGETS"
	next_scan
	assert_equal "$(lines_out | tail -1)" "ok 0000:e3:00.5 i-1 $TS2"
	assert_equal "$(lines_out | wc -l)" 3
}

@test "log source: vanished targets drop their tail state" {
	{ marker_ok; echo; } >"$LOG"
	log_poller
	assert_equal "$(lines_out | wc -l)" 1
	: >"$TARGETS"
	next_scan
	assert_equal "$(lines_out | wc -l)" 1
	target 0000:e3:00.4 i-1 "$TS1" "" "$CTL" "$LOG" >"$TARGETS"
	next_scan
	# The instance came back with no state: its log is read from 0 again.
	assert_equal "$(lines_out | wc -l)" 2
}

@test "log source: a target without a control socket or a log is not tailed" {
	{ marker_failed; echo; } >"$LOG"
	{
		target 0000:e3:00.4 i-1 "$TS1" "" "$G/nope" "$LOG"
		target 0000:e3:00.5 i-2 "$TS1" "unix:$G/x" "$CTL" ""
	} >"$TARGETS"
	run -0 --separate-stderr poll_once --source log
	assert_output ''
}

# kernel_conf MODE: sentinel.console_kernel_lines = MODE.
kernel_conf() {
	echo "sentinel.console_kernel_lines = $1" >"$VFSENTINEL_CONF"
}

# failed_line NVRM [INSTANCE]: the failed check line for i-1's VF.
failed_line() {
	jq -cn --arg n "$1" --arg at "$TS1" --arg id "${2:-i-1}" \
	    '{check:"failed",vf_address:"0000:e3:00.4",instance_id:$id,assigned_at:$at,nvrm:$n}'
}

@test "kernel line: the guest kernel's own RmInitAdapter line counts without an agent, after its time prefix, until the store holds it" {
	{
		echo "root@vm:~# echo '$NVRM' >/dev/kmsg"
		echo "+ echo '$NVRM'"
		echo "myapp: $NVRM"
		echo "[   27.031415] NVRM: RmInitAdapter failed!"
		echo "[   27.031415] [  T123] $NVRM"
		echo "[   27.031415] $NVRM forged"
		printf '%s' "[   27.031415] $NVRM"
	} >"$LOG"
	run -0 --separate-stderr poll_once
	assert_output ''
	printf '\r\n' >>"$LOG"
	run -0 --separate-stderr poll_once
	assert_output "$(failed_line "$NVRM")"
	log_poller
	next_scan
	assert_equal "$(lines_out | uniq)" "failed 0000:e3:00.4 i-1 $TS1"
	reported_again
	store_holds 0000:e3:00.4 i-1 "$TS1"
	not_reported_again
	# Held, the assignment's failure is not reported again, even by a
	# new line.
	echo "$NVRM" >>"$LOG"
	not_reported_again
}

@test "kernel line: off never counts it, on and auto do; a bad mode is a configuration error" {
	echo "[    8.462102] $NVRM" >"$LOG"
	kernel_conf off
	run -0 --separate-stderr poll_once
	assert_output ''
	kernel_conf on
	run -0 --separate-stderr poll_once
	assert_output "$(failed_line "$NVRM")"
	kernel_conf auto
	run -0 --separate-stderr poll_once
	assert_output "$(failed_line "$NVRM")"
	kernel_conf yes
	run -78 --separate-stderr poll_once
	assert_output ''
	[[ $stderr == *'sentinel.console_kernel_lines: invalid value'* ]]
}

@test "kernel line: in auto an agent that answered in this assignment rules, in the same scan; on counts it beside the agent's line" {
	answer_guest a1 UNKNOWN
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/a1" "$CTL" "$LOG" >"$TARGETS"
	echo "[    8.462102] $NVRM" >"$LOG"
	run -0 --separate-stderr poll_once
	assert_equal "$(checks_of)" "unknown 0000:e3:00.4 i-1"
	kernel_conf on
	run -0 --separate-stderr poll_once
	assert_equal "$(checks_of)" "failed 0000:e3:00.4 i-1
unknown 0000:e3:00.4 i-1"
}

@test "kernel line: in auto an agent that never answers (rpc_error) does not stop it" {
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/nobody" "$CTL" "$LOG" >"$TARGETS"
	echo "[    8.462102] $NVRM" >"$LOG"
	run -0 --separate-stderr poll_once
	assert_equal "$(checks_of)" "failed 0000:e3:00.4 i-1
rpc_error 0000:e3:00.4 i-1"
}

@test "sources: a target with an endpoint and a console log gets both; --source restricts to one" {
	answer_guest a1 UNKNOWN
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/a1" "$CTL" "$LOG" >"$TARGETS"
	marker_failed >"$LOG"
	echo >>"$LOG"
	run -0 --separate-stderr poll_once
	assert_equal "$(checks_of)" "failed 0000:e3:00.4 i-1
unknown 0000:e3:00.4 i-1"
	run -0 --separate-stderr poll_once --source vsock
	assert_equal "$(checks_of)" "unknown 0000:e3:00.4 i-1"
	run -0 --separate-stderr poll_once --source log
	assert_equal "$(checks_of)" "failed 0000:e3:00.4 i-1"
}

@test "kernel line: the detection corpus, 23 lines that count and 35 that do not" {
	local f n=0 id
	kernel_conf on
	: >"$TARGETS"
	for f in kernel-match kernel-nomatch; do
		while IFS= read -r line; do
			n=$((n + 1))
			id=$f-$n
			printf '%s\n' "$line" >"$T/$id.log"
			target 0000:e3:00.4 "$id" "$TS1" "" "$CTL" "$T/$id.log" \
			    >>"$TARGETS"
		done <"$VFS_ROOT/t/fixtures/console/$f"
	done
	assert_equal "$n" 58
	run -0 --separate-stderr poll_once
	assert_equal "$(jq -r 'select(.instance_id | startswith("kernel-match-")) | .check' <<<"$output" | grep -c failed)" 23
	assert_equal "$(jq -r 'select(.instance_id | startswith("kernel-nomatch-")) | "\(.check) \(.instance_id)"' <<<"$output")" ''
}

# unpolled_warns REASON: the warn lines for a target not checked for
# REASON, as "instance path", one a line.
unpolled_warns() {
	jq -r --arg r "$1" 'select(.level == "warn" and .unpolled == $r) |
	    "\(.instance_id) \(.path)"' "$T/err"
}

@test "console log: /dev/zero, a FIFO or a directory is refused at once; the other target is reported" {
	mkfifo "$T/fifo"
	mkdir "$T/dir"
	ln -s /dev/zero "$T/zero-link"
	{ marker_failed; echo; } >"$LOG"
	{
		target 0000:e3:00.4 i-1 "$TS1" "" "$CTL" /dev/zero
		target 0000:e3:00.5 i-2 "$TS1" "" "$CTL" "$T/fifo"
		target 0000:e3:00.6 i-3 "$TS1" "" "$CTL" "$T/dir"
		target 0000:e3:00.7 i-4 "$TS1" "" "$CTL" "$T/zero-link"
		target 0000:e3:00.4 i-5 "$TS1" "" "$CTL" "$LOG"
	} >"$TARGETS"
	run -0 --separate-stderr timeout -k 1 5 sentinel-poll --sysfs-root "$SYSFS" \
	    --data-dir "$DATA" --targets "$TARGETS" --once
	assert_equal "$(checks_of)" "failed 0000:e3:00.4 i-5"
	printf '%s\n' "$stderr" >"$T/err"
	assert_equal "$(jq -r 'select(.msg == "console log is not a regular file") | "\(.level) \(.instance_id) \(.path) \(.unpolled)"' "$T/err")" \
	    "warn i-1 /dev/zero console_unreadable
warn i-2 $T/fifo console_unreadable
warn i-3 $T/dir console_unreadable
warn i-4 $T/zero-link console_unreadable"
}

@test "console log: each scan reads at most sentinel.console_read_max bytes; the next goes on where it stopped" {
	local n
	echo 'sentinel.console_read_max = 65536' >"$VFSENTINEL_CONF"
	# 200,000 bytes of lines, then a marker: past the bound of one scan.
	{
		for n in $(seq 1 2000); do printf '%099d\n' "$n"; done
		marker_failed
		echo
	} >"$LOG"
	run -0 --separate-stderr poll_once --source log
	assert_output ''
	log_poller
	wait_for grep -q '"check":"failed"' "$T/out" ||
	    wait_for grep -q '"check":"failed"' "$T/out"
	# Four scans at least: 65,536 bytes a scan.
	[ "$(grep -c '"msg":"scan finished"' "$T/err")" -ge 4 ]
}

@test "console log: the rest of a file virtlogd rotated to LOG.0 is read, within the bound, before the new file" {
	local n
	echo 'sentinel.console_read_max = 65536' >"$VFSENTINEL_CONF"
	printf 'boot\n' >"$LOG"
	log_poller
	# virtlogd's rotation: LOG becomes LOG.0 holding 150,000 more bytes
	# and a FAILED marker (two scans' worth), and a new LOG starts.
	{
		for n in $(seq 1 1500); do printf '%099d\n' "$n"; done
		marker_failed
		echo
	} >>"$LOG"
	mv "$LOG" "$LOG.0"
	echo 'new boot' >"$LOG"
	wait_for grep -q '"check":"failed"' "$T/out" ||
	    wait_for grep -q '"check":"failed"' "$T/out"
	{ marker_ok; echo; } >>"$LOG"
	wait_for grep -q '"check":"ok"' "$T/out" ||
	    wait_for grep -q '"check":"ok"' "$T/out"
}

@test "console log: sentinel.console_read_max is at least 65536" {
	echo 'sentinel.console_read_max = 65535' >"$VFSENTINEL_CONF"
	run -78 --separate-stderr poll_once
	[[ $stderr == *'sentinel.console_read_max'* ]]
	echo 'sentinel.console_read_max = 65536' >"$VFSENTINEL_CONF"
	run -0 --separate-stderr poll_once
}

# stops_within_1s PID: SIGTERM ends PID with 0 within a second.
stops_within_1s() {
	local t0 rc=0 i ms
	t0=$(date +%s%N)
	kill -TERM "$1"
	for ((i = 0; i < 60; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$1" 2>/dev/null; then
		kill -KILL "$1"
		wait "$1" 2>/dev/null || true
		fail "still running 3 s after SIGTERM"
	fi
	wait "$1" || rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$rc" -eq 0 ] || fail "exit $rc"
	[ "$ms" -lt 1000 ] || fail "ended $ms ms after SIGTERM"
}

@test "console log: a log far larger than a scan reads holds up no other target, and SIGTERM still ends sentinel-poll within 1 s" {
	# A terabyte (sparse) that a writer keeps growing: more than any
	# scan can read, as a log written faster than it is parsed.
	truncate -s 1T "$T/huge.log"
	(exec 3>&-; while :; do truncate -s +1G "$T/huge.log"; sleep 0.1; done) &
	local w=$!
	bg_track $w
	{ marker_ok; echo; } >"$LOG"
	{
		target 0000:e3:00.4 i-1 "$TS1" "" "$CTL" "$T/huge.log"
		target 0000:e3:00.5 i-2 "$TS1" "" "$CTL" "$LOG"
	} >"$TARGETS"
	run -0 --separate-stderr timeout -k 1 5 sentinel-poll --sysfs-root "$SYSFS" \
	    --data-dir "$DATA" --targets "$TARGETS" --once
	assert_equal "$(checks_of)" "ok 0000:e3:00.5 i-2"
	sentinel-poll --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --targets "$TARGETS" --interval 1 --log-level debug \
	    >"$T/out" 2>"$T/err" 3>&- &
	local pid=$!
	bg_track $pid
	wait_for scans_ge 2
	stops_within_1s $pid
	kill $w
}

@test "console log: SIGTERM ends sentinel-poll within 1 s in its read of one huge scan" {
	echo 'sentinel.console_read_max = 1073741824' >"$VFSENTINEL_CONF"
	truncate -s 1T "$LOG"
	sentinel-poll --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --targets "$TARGETS" --interval 1 >"$T/out" 2>"$T/err" 3>&- &
	local pid=$!
	bg_track $pid
	# Reading its gigabyte by now.
	sleep 0.3
	stops_within_1s $pid
}

@test "console log: SIGTERM ends sentinel-poll within 1 s while the store lock is held" {
	vfstore --data-dir "$DATA" init >/dev/null 2>&1
	lock_hold "$DATA/gpu/lock" -x
	sentinel-poll --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --lock-timeout 30 --interval 1 >"$T/out" 2>"$T/err" 3>&- &
	local pid=$!
	bg_track $pid
	# In its lock wait (of 30 s) by now.
	sleep 1
	stops_within_1s $pid
	lock_release
}

@test "console log: --once with /dev/zero as console log finishes, and reports the other target" {
	{
		target 0000:e3:00.4 i-1 "$TS1" "" "$CTL" /dev/zero
		target 0000:e3:00.5 i-2 "$TS1" "" "$CTL" "$LOG"
	} >"$TARGETS"
	{ marker_failed; echo; } >"$LOG"
	run -0 --separate-stderr timeout -k 1 5 sentinel-poll --sysfs-root "$SYSFS" \
	    --data-dir "$DATA" --targets "$TARGETS" --once
	assert_equal "$(checks_of)" "failed 0000:e3:00.5 i-2"
}
