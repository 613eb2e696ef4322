#!/usr/bin/env bats
# vfrecover (SPEC 4.6): the SR-IOV cycle of one card over a fake sysfs
# tree that a stand-in sriov-manage really changes (t/lib/sriov-manage:
# -d removes the VFs, -e brings them back, with faults), stand-in
# quiesce/restore/verify commands that record their calls, and a fake
# /proc whose processes hold /dev/nvidia0 or a VF's VFIO group open.

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

@test "vfrecover: a full cycle prints every step, runs the commands in order, re-creates the VFs and clears the card" {
	vfstore --data-dir "$DATA" --sysfs-root "$SYSFS" quarantine --vf $VF5 \
	    >/dev/null 2>&1
	recovery_conf "recovery.verify_command = echo verify \$VFSENTINEL_VF >>$CALLS"
	run -0 --separate-stderr rec --card e3:00.0
	assert_equal "$(steps)" "preflight:done drain:done idle:done quiesce:done disable:done enable:done restore:done verify:done clear:done"
	assert_equal "${lines[0]}" '{"card":"0000:e3:00.0","step":"preflight","status":"done","vfs":["0000:e3:00.4","0000:e3:00.5","0000:e3:00.6"],"wedged":["0000:e3:00.5"]}'
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"recovered"}'
	run -0 cat "$CALLS"
	assert_output "quiesce $PF
sriov-manage -d $PF
sriov-manage -e $PF
restore $PF
verify $VF5"
	# The VFs are back, with their types, and no VF is quarantined.
	assert_equal "$(cat "$DEV/$PF/sriov_numvfs")" 3
	assert_file_exists "$DEV/$VF6/nvidia/creatable_vgpu_types"
	run -0 vfstore --data-dir "$DATA" show
	assert_output ''
	run -0 jq -c .drains "$DATA/gpu/vf-drain.json"
	assert_output '[]'
	# The journal moved to PF.last.json with every step done or skipped.
	assert_file_not_exists "$JOURNAL"
	run -0 jq -c '[.steps[] | .status] | unique' \
	    "$DATA/gpu/recovery/$PF.last.json"
	assert_output '["done"]'
	# One audit line per step, vfrecover's, with its outcome.
	run -0 jq -r 'select(.prog == "vfrecover") | "\(.command):\(.outcome)"' \
	    "$AUDIT"
	assert_equal "$(echo $output)" "preflight:done drain:done idle:done quiesce:done disable:done enable:done restore:done verify:done clear:done"
	run -0 jq -r 'select(.command == "drain") | .reason, (.vfs | length)' "$AUDIT"
	assert_output 'vfrecover: drain for SR-IOV cycle
3'
}

@test "vfrecover's clear step ends the card's suspicions too, audited unsuspect (cause clear)" {
	printf '{"version":1,"suspects":[{"vf_address":"%s","instance_id":"i-1","assigned_at":"2026-12-07T10:00:00Z","ended_at":"2026-12-07T10:00:09Z","ended":"unclean","source":"vfstore"}]}' \
	    $VF4 >"$DATA/gpu/vf-suspect.json"
	recovery_conf
	run -0 --separate-stderr rec --card e3:00.0
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"recovered"}'
	run -0 jq -c .suspects "$DATA/gpu/vf-suspect.json"
	assert_output '[]'
	run -0 jq -r 'select(.command == "unsuspect") | "\(.vf) \(.cause)"' "$AUDIT"
	assert_output "$VF4 clear"
}

@test "vfrecover --dry-run prints the plan with the commands and changes and runs nothing" {
	vfstore --data-dir "$DATA" --sysfs-root "$SYSFS" quarantine --vf $VF4 \
	    >/dev/null 2>&1
	before=$(sha "$DATA/gpu/vf-health.json")
	audit_before=$(cat "$AUDIT" 2>/dev/null || true)
	run -0 --separate-stderr rec --card $PF --dry-run
	assert_equal "$(steps)" "preflight:done drain:planned idle:planned quiesce:planned disable:planned enable:planned restore:planned verify:planned clear:planned"
	assert_line '{"card":"0000:e3:00.0","step":"disable","status":"planned","command":"'"$VFS_ROOT"'/t/lib/sriov-manage -d 0000:e3:00.0"}'
	assert_line '{"card":"0000:e3:00.0","step":"idle","status":"planned","busy":[]}'
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"dry_run"}'
	assert_equal "$(sha "$DATA/gpu/vf-health.json")" "$before"
	assert_equal "$(cat "$CALLS")" ""
	assert_file_not_exists "$DATA/gpu/recovery"
	assert_equal "$(cat "$AUDIT" 2>/dev/null || true)" "$audit_before"
	# What is busy now stops it: exit 1.
	claim $VF6 i-1
	run -1 --separate-stderr rec --card $PF --dry-run
	assert_line '{"card":"0000:e3:00.0","step":"idle","status":"planned","busy":[{"vf":"0000:e3:00.6","why":"claimed","instance_id":"i-1"}]}'
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"busy"}'
	assert_equal "$(cat "$CALLS")" ""
}

@test "vfrecover: a busy card (claim, sysfs type, VFIO holder) fails idle, runs nothing and stays drained" {
	claim $VF4 i-1
	run -1 --separate-stderr rec --card $PF
	assert_equal "$(steps)" "preflight:done drain:done idle:failed"
	assert_line --index 2 '{"card":"0000:e3:00.0","step":"idle","status":"failed","busy":[{"vf":"0000:e3:00.4","why":"claimed","instance_id":"i-1"}]}'
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"busy"}'
	assert_equal "$(cat "$CALLS")" ""
	# Drained, not quarantined: the health records are untouched.
	drained $VF5
	drained $VF6
	run -1 quarantined $VF5
	run -0 jq -c '[.steps[] | "\(.step):\(.status)"]' "$JOURNAL"
	assert_output '["preflight:done","drain:done","idle:failed"]'
	# A dirty VF (a type in sysfs, no claim) and a VFIO holder.
	_store_edit "$DATA/gpu/vf-claims.json" claims '.claims = []'
	echo 1160 >"$DEV/$VF5/nvidia/current_vgpu_type"
	mkdir -p "$T/groups/77"
	ln -s "../../../../../groups/77" "$DEV/$VF6/iommu_group"
	mkdir -p "$T/proc/4242/fd"
	ln -s /dev/vfio/77 "$T/proc/4242/fd/5"
	run -1 --separate-stderr rec --card $PF
	assert_line '{"card":"0000:e3:00.0","step":"idle","status":"failed","busy":[{"vf":"0000:e3:00.5","why":"allocated","current_type":1160},{"vf":"0000:e3:00.6","why":"held","pid":4242}]}'
	assert_equal "$(cat "$CALLS")" ""
	# Once idle, the next run continues and recovers.
	echo 0 >"$DEV/$VF5/nvidia/current_vgpu_type"
	rm "$T/proc/4242/fd/5"
	run -0 --separate-stderr rec --card $PF
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"recovered"}'
}

@test "vfrecover --wait S waits for the card to go idle" {
	claim $VF4 i-1
	(sleep 1.5; _store_edit "$DATA/gpu/vf-claims.json" claims '.claims = []') &
	PIDS="$PIDS $!"
	run -0 --separate-stderr rec --card $PF --wait 10
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"recovered"}'
}

@test "vfrecover: quiesce fails while a process holds /dev/nvidia0, naming it; restore runs; sriov-manage never runs" {
	nvidia_holder 3131 nv-hostengine
	run -1 --separate-stderr rec --card $PF
	assert_equal "$(steps)" "preflight:done drain:done idle:done quiesce:failed restore:done"
	assert_line --index 3 '{"card":"0000:e3:00.0","step":"quiesce","status":"failed","holders":[{"pid":3131,"comm":"nv-hostengine","dev":"/dev/nvidia0"}]}'
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"failed","step":"quiesce"}'
	run -0 cat "$CALLS"
	assert_output "quiesce $PF
restore $PF"
	drained $VF4
	# The holder goes away while quiesce waits: it succeeds.
	(sleep 1; rm "$T/proc/3131/fd/3") &
	PIDS="$PIDS $!"
	run -0 --separate-stderr rec --card $PF
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"recovered"}'
}

@test "vfrecover: sysfs decides, not sriov-manage's exit status; restore runs after each failed or timed-out step" {
	for mode in unbindlock noop-disable noop-enable hang; do
		echo "# $mode" >&2
		: >"$CALLS"
		SRIOV_MODE=$mode run -1 --separate-stderr rec --card $PF
		want=disable
		[ $mode != noop-enable ] || want=enable
		assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"failed","step":"'$want'"}'
		if [ $mode = hang ]; then
			assert_line '{"card":"0000:e3:00.0","step":"disable","status":"failed","error":"timeout"}'
		fi
		run -0 jq -r '.steps[] | select(.step == "'$want'") | .status' \
		    "$JOURNAL"
		assert_output failed
		run -0 tail -n 1 "$CALLS"
		assert_output "restore $PF"
		drained $VF4
		# The stand-in's state back to a card with VFs.
		"$VFS_ROOT/t/lib/sriov-manage" -e $PF >/dev/null
	done
	run -0 --separate-stderr rec --card $PF
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"recovered"}'
}

@test "vfrecover: two cards' runs share the host: the second waits for the first's quiesce-restore window" {
	PF2=0000:e4:00.0
	mk_sriov_card $PF2 0000:e4:00.4
	echo running >"$T/dcgm"
	DCGM_STATE=$T/dcgm
	export DCGM_STATE
	# The stand-in DCGM: quiesce stops it, restore brings it back; the
	# stand-in sriov-manage -d fails while it runs.
	recovery_conf \
	    "recovery.quiesce_command = echo quiesce \$VFSENTINEL_CARD >>$CALLS; echo stopped >$T/dcgm; touch $T/inq.\$VFSENTINEL_CARD; sleep 1" \
	    "recovery.restore_command = sleep 1; echo restore \$VFSENTINEL_CARD >>$CALLS; echo running >$T/dcgm"
	rec --card $PF >"$T/out1" 2>"$T/err1" &
	p1=$!
	PIDS="$PIDS $p1"
	wait_for test -e "$T/inq.$PF"
	run -0 --separate-stderr rec --card $PF2 --wait 30
	assert_equal "${lines[-1]}" '{"card":"0000:e4:00.0","result":"recovered"}'
	assert_line '{"card":"0000:e4:00.0","waiting_for":"0000:e3:00.0"}'
	[[ $stderr == *'"msg":"waiting for another card'*'"holder":"0000:e3:00.0"'* ]]
	wait "$p1"
	assert_equal "$(tail -n 1 "$T/out1")" '{"card":"0000:e3:00.0","result":"recovered"}'
	run -0 grep -v verify "$CALLS"
	assert_output "quiesce $PF
sriov-manage -d $PF
sriov-manage -e $PF
restore $PF
quiesce $PF2
sriov-manage -d $PF2
sriov-manage -e $PF2
restore $PF2"
}

# metrics: the recovery textfile's samples, without HELP and TYPE.
metrics() {
	grep -v '^#' "$1"
}

@test "vfrecover writes vfsentinel-recovery.prom in metrics.textfile_dir: unfinished runs by step, the last success per card" {
	mkdir "$T/tf"
	claim $VF4 i-1
	run -1 --separate-stderr rec --card $PF
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"busy"}'
	run -0 metrics "$T/tf/vfsentinel-recovery.prom"
	assert_output 'vfsentinel_recovery_unfinished{card="0000:e3:00.0",step="idle"} 1'
	# The card is idle again: the rerun recovers it.
	_store_edit "$DATA/gpu/vf-claims.json" claims '.claims = []'
	before=$(date +%s)
	run -0 --separate-stderr rec --card $PF
	after=$(date +%s)
	run -0 metrics "$T/tf/vfsentinel-recovery.prom"
	assert_output --regexp '^vfsentinel_recovery_last_success_timestamp_seconds\{card="0000:e3:00.0"\} [0-9]+$'
	at=${output##* }
	((before <= at && at <= after))
	# The time is the clear step's, as the journal has it.
	assert_equal "$at" "$(jq -r '.steps[] | select(.step == "clear") |
	    .at | sub("\\.[0-9]+Z$"; "Z") | fromdate' \
	    "$DATA/gpu/recovery/$PF.last.json")"
	run -0 find "$T/tf" -type f
	assert_output "$T/tf/vfsentinel-recovery.prom"
	run -0 stat -c %a "$T/tf/vfsentinel-recovery.prom"
	assert_output 644
	# A failed disable: the step is disable, not the restore after it;
	# the last success stays.
	SRIOV_MODE=unbindlock run -1 --separate-stderr rec --card $PF
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"failed","step":"disable"}'
	run -0 metrics "$T/tf/vfsentinel-recovery.prom"
	assert_output "vfsentinel_recovery_last_success_timestamp_seconds{card=\"0000:e3:00.0\"} $at
vfsentinel_recovery_unfinished{card=\"0000:e3:00.0\",step=\"disable\"} 1"
}

@test "vfrecover's textfile holds every card's journal, also a killed run's, and passes promtool check metrics" {
	need_tool promtool
	PF2=0000:e4:00.0
	mk_sriov_card $PF2 0000:e4:00.4
	mkdir "$T/tf"
	run -0 --separate-stderr rec --card $PF2
	# A run killed in quiesce (kill -9: no restore, no textfile of its
	# own) is unfinished at quiesce in the next run's textfile.
	jq -n --arg pf $PF '{version: 1, card: $pf,
	    started_at: "2026-08-20T15:00:00Z",
	    vfs: ["0000:e3:00.4", "0000:e3:00.5", "0000:e3:00.6"], wedged: [],
	    steps: [{step: "drain", status: "done", at: "2026-08-20T15:00:00Z"},
	    {step: "idle", status: "done", at: "2026-08-20T15:00:01Z"},
	    {step: "quiesce", status: "started", at: "2026-08-20T15:00:02Z"}]}' \
	    >"$JOURNAL"
	rm "$T/tf/vfsentinel-recovery.prom"
	claim 0000:e4:00.4 i-2
	run -1 --separate-stderr rec --card $PF2
	run -0 metrics "$T/tf/vfsentinel-recovery.prom"
	assert_line 'vfsentinel_recovery_unfinished{card="0000:e3:00.0",step="quiesce"} 1'
	assert_line 'vfsentinel_recovery_unfinished{card="0000:e4:00.0",step="idle"} 1'
	assert_line --regexp '^vfsentinel_recovery_last_success_timestamp_seconds\{card="0000:e4:00.0"\} [0-9]+$'
	assert_equal "${#lines[@]}" 3
	run -0 "$VFS_TOOLS/promtool" check metrics <"$T/tf/vfsentinel-recovery.prom"
}

@test "vfrecover --metrics-file PATH: that file; no textfile directory: none; a failed write is a warning" {
	# The test's metrics.textfile_dir, $T/tf, is not there: no file, and
	# vfrecover never creates node_exporter's directory.
	run -0 --separate-stderr rec --card $PF
	assert_file_not_exists "$T/tf"
	run -0 --separate-stderr rec --card $PF --metrics-file "$T/m/r.prom"
	assert_output --partial '"result":"recovered"'
	run -0 grep -c '^vfsentinel_recovery_last_success_timestamp_seconds{card="0000:e3:00.0"} ' "$T/m/r.prom"
	# A file in the way of the directory: the run still recovers, and
	# says once that the textfile was not written.
	: >"$T/file"
	run -0 --separate-stderr rec --card $PF --metrics-file "$T/file/r.prom"
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"recovered"}'
	run -0 grep -c '"level":"warn","prog":"vfrecover","msg":"cannot write the metrics file"' <<<"$stderr"
	assert_output 1
	run -64 --separate-stderr rec --status --metrics-file "$T/m/r.prom"
}

@test "vfrecover refuses a recovery/ that is a link, naming it, and writes nothing through it" {
	# The vfsentinel user owns DATA_DIR/gpu: it can swap recovery/ for a
	# link to a directory of its choosing (SPEC 7.2).
	mkdir -p "$T/elsewhere"
	ln -s "$T/elsewhere" "$DATA/gpu/recovery"
	run -74 --separate-stderr rec --card $PF
	assert_output ""
	assert_regex "$stderr" "\"path\":\"$DATA/gpu/recovery\""
	assert_regex "$stderr" "not a real directory"
	run -0 find "$T/elsewhere" -mindepth 1
	assert_output ""
	assert_equal "$(cat "$CALLS")" ""
	# --status reads nothing through it either.
	echo '{"version":1,"card":"0000:e3:00.0","planted":true}' >"$T/elsewhere/$PF.json"
	run --separate-stderr rec --status
	refute_output --partial planted
}

@test "vfrecover refuses a recovery/ owned by another user, and files planted in it are not followed" {
	[ "$(id -u)" = 0 ] || skip "needs root to chown"
	id nobody >/dev/null 2>&1 || skip "no user nobody"
	mkdir -p "$DATA/gpu/recovery"
	chown nobody "$DATA/gpu/recovery"
	run -74 --separate-stderr rec --card $PF
	assert_regex "$stderr" "\"path\":\"$DATA/gpu/recovery\""
	assert_regex "$stderr" "owned by"
	chown root "$DATA/gpu/recovery"
	# Links planted at its fixed names: replaced or refused, never
	# written through.
	echo keep >"$T/victim"
	ln -s "$T/victim" "$DATA/gpu/recovery/host.lock"
	ln -s "$T/victim" "$DATA/gpu/recovery/$PF.json.tmp"
	ln -s "$T/victim" "$DATA/gpu/recovery/metrics.lock.tmp"
	run -74 --separate-stderr rec --card $PF
	assert_regex "$stderr" "Too many levels of symbolic links"
	assert_equal "$(cat "$T/victim")" keep
	assert_equal "$(stat -c '%a %U' "$T/victim")" "644 root"
}

@test "vfrecover's lock files are the store owner's: 0640 group vfsentinel, else 0600" {
	[ "$(id -u)" = 0 ] || skip "needs root to chown"
	id nobody >/dev/null 2>&1 || skip "no user nobody"
	local want f
	want=$(getent group vfsentinel >/dev/null && echo "640 vfsentinel" || echo "600 $(id -gn nobody)")
	chown nobody:"$(id -gn nobody)" "$DATA/gpu"
	rm -f "$DATA/gpu/lock"
	run -0 --separate-stderr rec --card $PF
	assert_equal "${lines[-1]}" '{"card":"0000:e3:00.0","result":"recovered"}'
	assert_equal "$(stat -c %U "$DATA/gpu/recovery")" nobody
	for f in recovery/host.lock "recovery/$PF.lock" lock; do
		assert_equal "$(stat -c '%U %a %G' "$DATA/gpu/$f")" "nobody $want"
	done
	assert_equal "$(stat -c %U "$DATA/gpu/recovery/$PF.last.json")" nobody
}
