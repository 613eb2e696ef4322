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
