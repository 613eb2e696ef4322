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

@test "log source: a partial marker waits for its newline, and a seen marker is not repeated" {
	marker_failed >"$LOG"
	log_poller
	next_scan
	assert_equal "$(lines_out)" ''
	echo >>"$LOG"
	next_scan
	assert_equal "$(lines_out)" "failed 0000:e3:00.4 i-1 $TS1"
	next_scan
	assert_equal "$(lines_out)" "failed 0000:e3:00.4 i-1 $TS1"
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
	assert_equal "$(lines_out)" "failed 0000:e3:00.4 i-1 $TS1"
}

@test "log source: truncation resets the skip state" {
	head -c 70000 /dev/zero | tr '\0' x >"$LOG"
	log_poller
	{ marker_failed; echo; } >"$LOG"
	next_scan
	assert_equal "$(lines_out)" "failed 0000:e3:00.4 i-1 $TS1"
}

@test "log source: a shrunk log restarts from 0 after the rest of LOG.1" {
	printf 'boot line one\nboot line two\n' >"$LOG"
	log_poller
	{ marker_failed; echo; } >>"$LOG"
	mv "$LOG" "$LOG.1"
	echo 'new' >"$LOG"
	next_scan
	assert_equal "$(lines_out)" "failed 0000:e3:00.4 i-1 $TS1"
	{ marker_ok; echo; } >>"$LOG"
	next_scan
	assert_equal "$(lines_out | tail -1)" "ok 0000:e3:00.4 i-1 $TS1"
}

@test "log source: a new claim time or VF starts a new tail" {
	{ marker_failed; echo; } >"$LOG"
	log_poller
	assert_equal "$(lines_out)" "failed 0000:e3:00.4 i-1 $TS1"
	target 0000:e3:00.4 i-1 "$TS2" "" "$CTL" "$LOG" >"$TARGETS"
	next_scan
	assert_equal "$(lines_out | tail -1)" "failed 0000:e3:00.4 i-1 $TS2"
	target 0000:e3:00.5 i-1 "$TS2" "" "$CTL" "$LOG" >"$TARGETS"
	next_scan
	assert_equal "$(lines_out | tail -1)" "failed 0000:e3:00.5 i-1 $TS2"
	assert_equal "$(lines_out | wc -l)" 3
}

@test "log source: vanished targets drop their tail state" {
	{ marker_failed; echo; } >"$LOG"
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

@test "kernel line: the guest kernel's own RmInitAdapter line counts without an agent, once, after its time prefix" {
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
	assert_equal "$(lines_out)" "failed 0000:e3:00.4 i-1 $TS1"
	next_scan
	assert_equal "$(lines_out)" "failed 0000:e3:00.4 i-1 $TS1"
	echo "$NVRM" >>"$LOG"
	next_scan
	assert_equal "$(lines_out | sort | uniq -c | awk '{ print $1 }')" 2
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
