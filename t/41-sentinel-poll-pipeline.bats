#!/usr/bin/env bats
# The host pipeline sentinel-poll | vfstore apply against real
# vsock-answer guests (upstream tests 12, 16, 19 end to end).

load helpers
load lib/sentinel
load lib/store

setup() {
	vfs_setup
	sentinel_setup
}

teardown() {
	sentinel_teardown
}

# pipeline: one scan of $TARGETS through vfstore apply; the apply lines
# land in $T/apply, both logs in $T/err.
pipeline() {
	poll_once 2>>"$T/err" |
	    vfstore --data-dir "$DATA" apply --metrics-file "$T/m.prom" \
	    >"$T/apply" 2>>"$T/err"
}

@test "pipeline: two assignments of the same wedged VF quarantine it" {
	answer_guest a1 FAILED
	answer_guest a2 FAILED
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/a1" >"$TARGETS"
	pipeline
	assert_equal "$(jq -r .outcome "$T/apply")" recorded
	run ! quarantined 0000:e3:00.4
	# The VM was restarted on the same VF: a new assignment.
	target 0000:e3:00.4 i-2 "$TS2" "unix:$G/a2" >"$TARGETS"
	pipeline
	assert_equal "$(jq -r .outcome "$T/apply")" quarantined
	quarantined 0000:e3:00.4
	grep -q 'quarantined wedged vGPU VF' "$T/err"
	grep -q 'RmInitAdapter failed!' "$T/err"
	grep -q '^hypeman_instances_vgpu_sentinel_quarantines_total 1$' "$T/m.prom"
}

@test "pipeline: the second scan of the same FAILED guest changes nothing" {
	answer_guest a1 FAILED
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/a1" >"$TARGETS"
	pipeline
	local before
	before=$(sha "$DATA/gpu/vf-health.json")
	pipeline
	assert_equal "$(jq -r '"\(.outcome) \(.failures)"' "$T/apply")" "unchanged 1"
	assert_equal "$(sha "$DATA/gpu/vf-health.json")" "$before"
}

@test "pipeline: an ok from the triggering assignment rescinds the quarantine" {
	answer_guest a1 FAILED
	answer_guest a2 FAILED
	{
		target 0000:e3:00.4 i-1 "$TS1" "unix:$G/a1" "$G/gone"
		target 0000:e3:00.4 i-2 "$TS2" "unix:$G/a2"
	} >"$TARGETS"
	vfstore --data-dir "$DATA" report-failure --vf 0000:e3:00.4 \
	    --instance i-1 --assigned-at "$TS1" >/dev/null
	pipeline
	quarantined 0000:e3:00.4
	answer_set a2 OK
	pipeline
	assert_equal "$(jq -c '{check,cleared,rescinded}' "$T/apply")" \
	    '{"check":"ok","cleared":2,"rescinded":true}'
	run ! quarantined 0000:e3:00.4
	grep -q 'rescinded vGPU VF quarantine' "$T/err"
}

@test "pipeline: a failure from a changed assignment never reaches the store" {
	guests slow=slow-failed
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/slow" >"$TARGETS"
	pipeline &
	local pid=$!
	wait_for hits_ge slow 1
	target 0000:e3:00.5 i-1 "$TS2" "unix:$G/slow" >"$TARGETS"
	wait $pid
	[ ! -s "$T/apply" ]
	[ ! -e "$DATA/gpu/vf-health.json" ]
}

@test "pipeline: the store survives kill -9 of the pipeline at random moments" {
	local n i a s
	guests f*8=failed
	for n in 0 1 2 3 4 5 6 7; do
		target "0000:e3:0$((n / 4)).$((4 + n % 4))" "i-$n" "$TS1" "unix:$G/f$n"
	done >"$TARGETS"
	echo 'gpu.vf_quarantine_threshold = 1' >"$VFSENTINEL_CONF"
	mkfifo "$T/p"
	for i in 1 2 3 4 5 6 7 8; do
		vfstore --data-dir "$DATA" apply <"$T/p" >/dev/null 2>&1 3>&- &
		a=$!
		sentinel-poll --sysfs-root "$SYSFS" --targets "$TARGETS" \
		    --interval 1 >"$T/p" 2>/dev/null 3>&- &
		s=$!
		sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
		kill -9 $s $a 2>/dev/null || true
		wait $s $a 2>/dev/null || true
		run -0 vfstore --data-dir "$DATA" check
		assert_equal "$(jq -r .status <<<"$output")" ok
		[ ! -e "$DATA/gpu/vf-health.json" ] ||
		    jq -e '.version == 1' "$DATA/gpu/vf-health.json" >/dev/null
	done
	# A last clean scan records every wedged VF exactly once.
	pipeline
	run -0 vfstore --data-dir "$DATA" show
	assert_equal "$(jq -s 'length' <<<"$output")" 8
	assert_equal "$(jq -s '[.[].failures | length] | add' <<<"$output")" 8
}

# failures_of VF: how many failures the store holds for VF (0: none).
failures_of() {
	vfstore --data-dir "$DATA" show --vf "$1" 2>/dev/null |
	    jq -r '.failures | length' 2>/dev/null || echo 0
}

# apply_failed INSTANCE: vfstore apply answered a line of INSTANCE with an
# error (the store lock was held).
apply_failed() {
	grep -q "^{\"error\":\"lock .*\"instance_id\":\"$1\"" "$T/apply"
}

# held_in_store VF...: each VF has its one failure in the store.
held_in_store() {
	local vf
	for vf in "$@"; do
		[ "$(failures_of "$vf")" = 1 ] || return 1
	done
}

@test "pipeline: what the sentinel saw while the store lock was held reaches the store once it is free" {
	local pid n
	vfstore --data-dir "$DATA" init >/dev/null 2>&1
	answer_guest a2 UNKNOWN
	{
		target 0000:e3:00.4 i-1 "$TS1" "" "$CTL" "$T/kernel.log"
		target 0000:e3:00.5 i-2 "$TS1" "unix:$G/a2" "$CTL"
		target 0000:e3:00.6 i-3 "$TS1" "" "$CTL" "$T/marker.log"
	} >"$TARGETS"
	printf 'SeaBIOS\r\n' >"$T/kernel.log"
	printf 'login: \n' >"$T/marker.log"
	sentinel-poll --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --targets "$TARGETS" --interval 1 --log-level debug 2>"$T/err" |
	    vfstore --data-dir "$DATA" --lock-timeout 1 apply >"$T/apply" \
	    2>"$T/apply.err" 3>&- &
	pid=$!
	bg_track $pid
	wait_for scans_ge 1
	lock_hold "$DATA/gpu/lock" -x
	# Each is seen once while the lock is held, and apply cannot save it.
	printf '[   12.345678] %s\r\n' "$NVRM" >>"$T/kernel.log"
	answer_set a2 FAILED
	{ marker_failed; echo; } >>"$T/marker.log"
	wait_long apply_failed i-1
	wait_long apply_failed i-2
	wait_long apply_failed i-3
	# The agent then goes away: its FAILED answer is not given again.
	rm -f "$G/a2"
	n=$(grep -c '"msg":"scan finished"' "$T/err")
	wait_long scans_ge $((n + 2))
	lock_release
	wait_long held_in_store 0000:e3:00.4 0000:e3:00.5 0000:e3:00.6
	kill -0 $pid
	# Once the store holds them they are not reported again.
	n=$(wc -l <"$T/apply")
	wait_long scans_ge $(($(grep -c '"msg":"scan finished"' "$T/err") + 2))
	assert_equal "$(jq -r 'select(.check == "failed") | .instance_id' \
	    <(tail -n +$((n + 1)) "$T/apply"))" ''
}

@test "pipeline: a repeated failure costs vfstore apply nothing: answered from its cache while another process holds the lock" {
	vfstore --data-dir "$DATA" init >/dev/null 2>&1
	vfstore --data-dir "$DATA" report-failure --vf 0000:e3:00.4 \
	    --instance i-1 --assigned-at "$TS1" >/dev/null
	local before line
	before=$(sha "$DATA/gpu/vf-health.json")
	line=$(jq -cn --arg n "$NVRM" --arg at "$TS1" \
	    '{check:"failed",vf_address:"0000:e3:00.4",instance_id:"i-1",assigned_at:$at,nvrm:$n}')
	printf '%s\n%s\n' "$line" "$line" >"$T/in"
	lock_hold "$DATA/gpu/lock" -x
	run -0 --separate-stderr vfstore --data-dir "$DATA" --lock-timeout 5 \
	    apply <"$T/in"
	lock_release
	assert_equal "$(jq -r '"\(.outcome) \(.failures) \(.error)"' <<<"$output")" \
	    "unchanged 1 null
unchanged 1 null"
	assert_equal "$(sha "$DATA/gpu/vf-health.json")" "$before"
}
