#!/usr/bin/env bats
# vfrecover (SPEC 4.6), the hard cases: SIGTERM mid-run (the step ends,
# restore runs, exit 75, a rerun resumes), kill -9 at a random moment of
# each step, 54 times and more in resumes (the store and the journal
# load, a rerun always recovers and restores first, the stand-in DCGM is
# never left stopped, no VF of the card is handed out between drain and
# clear), a vfpick --claim loop during a recovery, two runs on one card,
# the systemic guard and --force, a failed verification, --status, the
# store unavailable and usage errors.

load helpers
load lib/placement
load lib/recovery

setup() {
	vfs_setup
	recovery_setup
}

teardown() {
	kill_pids
}

@test "vfrecover: SIGTERM finishes the step, restores, exits 75; the next run resumes and recovers" {
	recovery_conf "recovery.quiesce_command = echo quiesce >>$CALLS; touch $T/in-quiesce; sleep 1"
	vfrecover --proc-root "$T" --card $PF >"$T/out" 2>"$T/err" &
	pid=$!
	PIDS="$PIDS $pid"
	wait_for test -e "$T/in-quiesce"
	kill -TERM $pid
	rc=0
	wait $pid || rc=$?
	assert_equal "$rc" 75
	run -0 cat "$CALLS"
	assert_output "quiesce
restore $PF"
	run -0 jq -r '.steps[] | "\(.step):\(.status)"' "$JOURNAL"
	assert_equal "$(echo $output)" "preflight:done drain:done idle:done quiesce:done restore:done"
	drained $VF4
	run -0 --separate-stderr rec --card $PF
	assert_equal "$(steps)" "preflight:done drain:done idle:done quiesce:done disable:done enable:done restore:done verify:skipped clear:done"
	assert_line --index 0 --partial '"resumed":true'
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"recovered"}'
}

# claim_free: 0 if vfpick hands out a VF (a dry pick, no claim).
claim_free() {
	vfpick --data-dir "$DATA" --sysfs-root "$SYSFS" \
	    --profile 'NVIDIA L40S-12Q' >/dev/null 2>&1
}

# killed_checks: after a kill, the store and the journal load, and a
# card drained and not yet cleared hands out no VF.
killed_checks() {
	run -0 vfstore --data-dir "$DATA" check
	[ -e "$JOURNAL" ] || return 0
	run -0 jq -e --arg pf "$PF" '.version == 1 and .card == $pf and
	    (.steps | length) > 0' "$JOURNAL"
	run -0 --separate-stderr vfrecover --status
	assert_equal "$(jq -r 'select(.state == "in_progress") | .card' \
	    <<<"$output")" "$PF"
	# Between drain and clear (clear is saved before the journal says
	# so, never before verify is done).
	if journal_has drain done && ! journal_has verify done; then
		run -1 claim_free
		drained $VF4 $VF5 $VF6
	fi
}

# all_hit NAME: 0 if the associative array NAME counts a kill in each
# step.
all_hit() {
	local -n _h=$1
	local s
	for s in "${STEPS[@]}"; do
		[ "${_h[$s]:-0}" -ge 1 ] || return 1
	done
}

@test "vfrecover: killed with SIGKILL at a random moment of each step (54 kills, and more in resumes), a rerun always recovers, restores first; nothing is placed on the drained card" {
	local n step landed base restore_first
	local -A hit=()
	kills=0
	crash_conf
	# 54 kills at least, and until each step has had one (a kill aimed
	# at a step can land in the next one), at most 150 rounds.
	for ((n = 0; n < 150; n++)); do
		all_hit hit && [ "$kills" -ge 54 ] && break
		step=${STEPS[n % 9]}
		vfstore --data-dir "$DATA" --sysfs-root "$SYSFS" quarantine \
		    --vf $VF5 >/dev/null 2>&1
		crash_run "$step"
		if [ "$RC" != 137 ]; then
			# It finished before the kill.
			assert_equal "$RC" 0
			continue
		fi
		kills=$((kills + 1))
		landed=$(landed_step)
		hit[$landed]=$((${hit[$landed]:-0} + 1))
		echo "# kill $kills in $step: landed in $landed" >&2
		killed_checks
		base=$(wc -l <"$CALLS")
		restore_first=0
		if journal_has quiesce started done &&
		    ! journal_has restore done; then
			restore_first=1
		fi
		# Every third time the resumed run is killed too.
		if [ $((n % 3)) = 2 ]; then
			crash_run any
			if [ "$RC" = 137 ]; then
				kills=$((kills + 1))
			fi
			killed_checks
		fi
		run -0 --separate-stderr rec --card $PF
		assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"recovered"}'
		assert_equal "$(cat "$T/dcgm")" running
		assert_equal "$(cat "$DEV/$PF/sriov_numvfs")" 3
		assert_file_not_exists "$JOURNAL"
		if [ $restore_first = 1 ]; then
			run -0 sed -n "$((base + 1))p" "$CALLS"
			assert_output "restore $PF"
		fi
	done
	echo "# $kills kills:$(for s in "${STEPS[@]}"; do printf ' %s:%s' "$s" "${hit[$s]:-0}"; done)" >&2
	[ "$kills" -ge 54 ]
	for step in "${STEPS[@]}"; do
		[ "${hit[$step]:-0}" -ge 1 ]
	done
	# Every quiesce is followed by a restore: the stand-in DCGM runs.
	run -0 grep -E '^(quiesce|restore)' "$CALLS"
	assert_equal "${lines[-1]}" "restore $PF"
	run -0 claim_free
}

# picker: vfpick --claim with a new instance id, again and again, until
# verify starts ($CALLS) and at least 10 picks were made (verify waits
# for picks-done, so the card stays drained until the last pick, however
# slow the machine); each pick's JSON or "exit N" goes to $T/picks.
picker() {
	local i=0 rc
	until grep -q '^verify' "$CALLS" && [ "$i" -ge 10 ]; do
		i=$((i + 1))
		rc=0
		vfpick --data-dir "$DATA" --sysfs-root "$SYSFS" --profile "$P12" \
		    --claim "pick-$i" >>"$T/picks" 2>>"$T/picks.err" || rc=$?
		if [ $rc != 0 ]; then
			echo "exit $rc" >>"$T/picks"
		fi
	done
	touch "$T/picks-done"
}

@test "vfrecover: vfpick --claim in a loop from drain to verify never gets a VF of the card; the other card's VFs go, then it exits 1" {
	local pf2=0000:e4:00.0 pid
	mk_sriov_card $pf2 0000:e4:00.4 0000:e4:00.5
	quarantine $VF5
	# verify waits for the picker to stop: clear comes after.
	recovery_conf "recovery.quiesce_command = echo quiesce >>$CALLS; sleep 0.3" \
	    "recovery.verify_command = echo verify >>$CALLS; while [ ! -e $T/picks-done ]; do sleep 0.05; done"
	SRIOV_DELAY=0.2 vfrecover --proc-root "$T" --card $PF >"$T/out" 2>"$T/err" &
	pid=$!
	PIDS="$PIDS $pid"
	wait_journal drain $pid
	picker &
	PIDS="$PIDS $!"
	rc=0
	wait $pid || rc=$?
	assert_equal "$rc" 0
	assert_equal "$(tail -n 1 "$T/out")" '{"card":"0000:e3:00.0","result":"recovered"}'
	assert_file_exists "$T/picks-done"
	# Card e4's two VFs, then nothing (exit 1) while e3 is drained.
	run -0 jq -R -r 'fromjson? // . | .vf_address? // .' "$T/picks"
	assert_line --index 0 --regexp '^0000:e4:00\.[45]$'
	assert_line --index 1 --regexp '^0000:e4:00\.[45]$'
	assert_equal "$(sed -n '3,$p' <<<"$output" | sort -u)" "exit 1"
	[ "${#lines[@]}" -ge 10 ]
	run -0 vfstore --data-dir "$DATA" claims
	assert_equal "$(jq -r .vf_address <<<"$output" | sort | xargs)" \
	    "0000:e4:00.4 0000:e4:00.5"
}

@test "vfrecover: a second run on the same card exits 75 while the first holds PF.lock" {
	recovery_conf "recovery.quiesce_command = touch $T/in-quiesce; sleep 1.5"
	vfrecover --proc-root "$T" --card $PF >"$T/out" 2>/dev/null &
	pid=$!
	PIDS="$PIDS $pid"
	wait_for test -e "$T/in-quiesce"
	run -75 --separate-stderr rec --card $PF
	assert_output ''
	assert_equal "$(jq -r .msg <<<"$stderr")" "another vfrecover runs on the card"
	rc=0
	wait $pid || rc=$?
	assert_equal "$rc" 0
	assert_equal "$(tail -n 1 "$T/out")" '{"card":"0000:e3:00.0","result":"recovered"}'
}

# ago S: the RFC 3339 time S seconds ago.
ago() {
	date -u -d "@$(($(date +%s) - $1))" +%Y-%m-%dT%H:%M:%SZ
}

# report_failure VF BEGAN: the sentinel's report of a failure on VF of an
# assignment that began BEGAN seconds ago.
report_failure() {
	vfstore --data-dir "$DATA" report-failure --vf "$1" --instance "i-$1" \
	    --assigned-at "$(ago "$2")" >/dev/null 2>&1
}

@test "vfrecover: a suspected systemic failure stops preflight and changes nothing; --force cycles anyway" {
	local vf
	# Every VF of the host booted within the window, and every one failed.
	for vf in $VF4 $VF5 $VF6; do
		report_failure $vf 600
	done
	before=$(sha "$DATA/gpu/vf-health.json")
	run -1 --separate-stderr rec --card $PF
	assert_equal "$(steps)" "preflight:failed"
	run -0 jq -r 'select(.status) | .systemic_reason, .error' <<<"$output"
	assert_output "failures on 3 of the 3 VFs assigned within 3600 s
systemic failure suspected; --force to cycle"
	assert_equal "$(sha "$DATA/gpu/vf-health.json")" "$before"
	assert_equal "$(cat "$CALLS")" ""
	assert_file_not_exists "$JOURNAL"
	run -0 --separate-stderr rec --card $PF --force
	assert_line --index 0 --partial '"forced":true'
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"recovered"}'
	# The drain drops nothing; the clear's audit line keeps the failures
	# it dropped.
	run -0 jq -r 'select(.command == "drain") | .dropped' "$AUDIT"
	assert_output null
	run -0 jq -r 'select(.command == "clear") | .dropped | map(.vf_address) | join(" ")' "$AUDIT"
	assert_output "$VF4 $VF5 $VF6"
}

@test "vfrecover: wedges from one mass VMM kill on 4 cards of an 8-card host do not stop preflight" {
	local bus
	for bus in 40 44 48 4c 50 54 58; do
		mk_sriov_card 0000:$bus:00.0 0000:$bus:01.{0,1,2,3}
	done
	# The OOM killer takes 8 long-running VMs on 4 cards, this one
	# among them; each VF wedges (threshold 1: quarantined).
	echo 'gpu.vf_quarantine_threshold = 1' >>"$VFSENTINEL_CONF"
	report_failure $VF4 9000000
	report_failure $VF5 9000000
	for bus in 40 44 48; do
		report_failure 0000:$bus:01.0 9000000
		report_failure 0000:$bus:01.1 9000000
	done
	quarantined $VF4
	run -0 --separate-stderr rec --card $PF
	assert_line --index 0 '{"card":"0000:e3:00.0","step":"preflight","status":"done","vfs":["0000:e3:00.4","0000:e3:00.5","0000:e3:00.6"],"wedged":["0000:e3:00.4","0000:e3:00.5"]}'
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"recovered"}'
	run -0 jq -c '[.records[].vf_address | select(startswith("0000:e3:"))]' \
	    "$DATA/gpu/vf-health.json"
	assert_output '[]'
	# The next card of the kill passes preflight too.
	run -0 --separate-stderr rec --card 0000:40:00.0 --dry-run
	assert_line --index 0 '{"card":"0000:40:00.0","step":"preflight","status":"done","vfs":["0000:40:01.0","0000:40:01.1","0000:40:01.2","0000:40:01.3"],"wedged":["0000:40:01.0","0000:40:01.1"]}'
}

@test "vfrecover: a card that fails again right after its recovery stops preflight" {
	run -0 --separate-stderr rec --card $PF
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"recovered"}'
	# A VM boots on the recovered card and fails.
	report_failure $VF4 0
	run -1 --separate-stderr rec --card $PF
	assert_equal "$(steps)" "preflight:failed"
	run -0 jq -r 'select(.status) | .systemic_reason' <<<"$output"
	assert_output "failures on 1 VF of card 0000:e3:00.0 since its recovery"
	run -0 --separate-stderr rec --card $PF --force
	assert_line --index 0 --partial '"forced":true'
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"recovered"}'
	# An audit log that cannot be read hides the recoveries: no cycle.
	rm "$AUDIT"
	mkfifo "$AUDIT"
	run -74 --separate-stderr rec --card $PF
	assert_equal "$output" ""
	[[ "$stderr" == *'"msg":"cannot apply the systemic-failure rule","error":"not a regular file"'* ]]
	assert_file_not_exists "$JOURNAL"
}

@test "vfrecover: a failed verification ends the run with exit 1 and leaves the card drained" {
	vfstore --data-dir "$DATA" --sysfs-root "$SYSFS" quarantine --vf $VF6 \
	    >/dev/null 2>&1
	recovery_conf "recovery.verify_command = echo verify \$VFSENTINEL_VF \$VFSENTINEL_CARD >>$CALLS; exit 3"
	run -1 --separate-stderr rec --card $PF
	assert_line '{"card":"0000:e3:00.0","step":"verify","status":"failed","vfs":["0000:e3:00.6"],"error":"exit 3","vf":"0000:e3:00.6"}'
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"failed","step":"verify"}'
	run -0 tail -n 1 "$CALLS"
	assert_output "verify $VF6 $PF"
	drained $VF4
	quarantined $VF6
	run -1 quarantined $VF4
	# --status shows the journal in progress.
	run -0 vfrecover --status
	assert_equal "$(jq -r '.card, .state, .steps[-1].step' <<<"$output")" "$PF
in_progress
verify"
}

@test "vfrecover --status prints the last journal of a recovered card" {
	run -0 vfrecover --status
	assert_output ''
	run -0 rec --card $PF
	run -0 vfrecover --status
	assert_equal "${#lines[@]}" 1
	assert_equal "$(jq -r '.card, .state, (.vfs | length)' <<<"$output")" "$PF
last
3"
}

@test "vfrecover --status --card PF prints that card's journals only, an unreadable one too" {
	PF2=0000:e4:00.0
	mk_sriov_card $PF2 0000:e4:00.4
	run -0 rec --card $PF
	run -0 rec --card $PF2
	mkfifo "$DATA/gpu/recovery/$PF2.json"
	run -0 vfrecover --status
	assert_equal "${#lines[@]}" 3
	run -0 vfrecover --status --card $PF
	assert_equal "$(jq -r '.card, .state' <<<"$output")" "$PF
last"
	run -0 vfrecover --status --card $PF2
	assert_equal "$(jq -r '.card // .file, .state' <<<"$output" | xargs)" \
	    "$DATA/gpu/recovery/$PF2.json unreadable $PF2 last"
	run -0 vfrecover --status --card 0000:e5:00.0
	assert_output ''
}

@test "vfrecover: a failed audit write stops the run like SIGTERM (restore runs) and exits 74" {
	# The 4th audit line is quiesce's (preflight, drain, idle, quiesce).
	# env: the preload reaches vfrecover only, not bats' own helpers of
	# --separate-stderr (an ASan run preloads the sanitizer too).
	run -74 --separate-stderr env LD_PRELOAD="$(fault_env)" FAIL_fsync=4 \
	    FAIL_MATCH=audit.jsonl vfrecover --proc-root "$T" --card $PF
	assert_equal "$(steps)" "preflight:done drain:done idle:done quiesce:done restore:done"
	[[ "$stderr" == *'"cannot write the audit line"'* ]]
	run -0 cat "$CALLS"
	assert_output "quiesce $PF
restore $PF"
	drained $VF4
	# The journal says where to go on; the next run recovers.
	run -0 --separate-stderr rec --card $PF
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"recovered"}'
}

@test "vfrecover: usage errors exit 64, a bad address 65, a missing state directory 69" {
	run -64 --separate-stderr vfrecover
	assert_output ''
	run -64 --separate-stderr vfrecover --dry-run
	run -65 --separate-stderr vfrecover --card e3:00
	run -0 --separate-stderr vfrecover --version
	assert_output 'vfrecover (vfsentinel) 0.1.0'
	rm -r "$DATA/gpu"
	run -69 --separate-stderr rec --card $PF
	assert_output ''
	assert_equal "$(cat "$CALLS")" ""
}
