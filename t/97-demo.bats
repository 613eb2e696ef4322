#!/usr/bin/env bats
# 97-demo.bats - `make demo` (tools/demo.sh) runs the whole loop on a
# simulated host and shows what it claims to: a wedged VF recorded, then
# quarantined, placement avoiding it and its card, vfrecover cycling
# its card (step 7) and clearing it, a SIGKILLed VMM's claim released by reconcile, and nothing left
# running afterwards. Where libvirt can run (tools/libvirt-ns.sh's
# lv_missing), step 10 runs libvirt-hook under a real libvirtd: a
# quarantined VF's domain refused with the hook's line in virsh's error,
# a metadata VF's domain claimed, completed, alive, released on destroy;
# elsewhere the demo says why it skips that step.

load helpers

setup_file() {
	export DEMO_OUT=$BATS_FILE_TMPDIR/demo.out
	mkdir -p "$BATS_FILE_TMPDIR/tmp"
	cd "$VFS_ROOT"
	local rc=0
	TMPDIR=$BATS_FILE_TMPDIR/tmp bash tools/demo.sh >"$DEMO_OUT" \
	    2>"$BATS_FILE_TMPDIR/demo.err" 3>&- || rc=$?
	# The first test reports a failed demo; the others say what is missing.
	echo "$rc" >"$BATS_FILE_TMPDIR/demo.rc"
}

setup() {
	vfs_setup
}

# json FILTER: the demo's one-line JSON outputs through a jq filter.
json() {
	jq -R -c "fromjson? // empty | objects | $1" "$DEMO_OUT"
}

wedged_vf() {
	json 'select(.instance_id == "vm-1" and .outcome == "recorded") | .vf_address' |
	    head -n 1 | tr -d '"'
}

@test "the demo exits 0 and says it is done" {
	run cat "$BATS_FILE_TMPDIR/demo.rc"
	assert_output 0
	run tail -n 1 "$DEMO_OUT"
	assert_output --regexp '^== Done in [0-9]+ s: wedged 0000:'
}

@test "the first failed boot is recorded below the threshold" {
	run -0 json 'select(.instance_id == "vm-1" and .outcome == "recorded") | [.failures, .threshold]'
	assert_output '[1,2]'
}

# step N: the demo's output of step N (its heading to the next one's).
step() {
	awk -v n="== $1. " 'index($0, n) == 1 { on = 1; next }
	    /^== / { on = 0 } on' "$DEMO_OUT"
}

# step_json N FILTER: step N's one-line JSON outputs through FILTER.
step_json() {
	step "$1" | jq -R -c "fromjson? // empty | objects | $2"
}

@test "step 1 shows the store created and 16 free slots" {
	run -0 step_json 1 'select(has("created")) | .created'
	assert_output true
	run -0 step_json 1 'select(.total_slots) | [.total_slots, .allocatable_slots, .quarantined_slots, (.profiles | map(.available))]'
	assert_output '[16,16,0,[16,16]]'
}

@test "step 2 shows only the kernel's failure events, and the warn line it means, chosen by message" {
	local vf
	vf=$(wedged_vf)
	# kmsg-watch's events: the kernel's line each time, never the record
	# forged from user space.
	run -0 step_json 2 'select(.seq) | .message'
	[ "${#lines[@]}" -ge 1 ]
	for l in "${lines[@]}"; do
		assert_equal "$l" '"NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)"'
	done
	# The log line shown under "Below the threshold": vfstore apply's,
	# with the fields it claims; no other log line is shown in step 2.
	run -0 step_json 2 'select(.level)'
	assert_output "{\"level\":\"warn\",\"msg\":\"recorded vGPU VF init failure below quarantine threshold\",\"vf\":\"$vf\",\"instance_id\":\"vm-1\",\"failures\":1,\"threshold\":2}"
	run -0 grep -A 1 -F 'Below the threshold: the VF stays in rotation (warn log):' "$DEMO_OUT"
	assert_line --index 1 --partial '"msg":"recorded vGPU VF init failure below quarantine threshold"'
}

@test "step 3 shows the quarantine's error line and the record with both assignments" {
	local vf
	vf=$(wedged_vf)
	run -0 step_json 3 'select(.level)'
	assert_output "{\"level\":\"error\",\"msg\":\"quarantined wedged vGPU VF\",\"vf\":\"$vf\",\"instance_id\":\"vm-2\",\"failures\":2,\"threshold\":2}"
	# vfstore show --vf, printed by jq . over several lines.
	run -0 jq -c '[.vf_address, .quarantined, [.failures[].instance_id],
	    (.why | startswith("2 failed assignments (instances vm-1, vm-2)"))]' \
	    <<<"$(show_lines)"
	assert_output "[\"$vf\",true,[\"vm-1\",\"vm-2\"],true]"
}

# show_lines: step 3's vfstore show --vf output (jq . over several lines).
show_lines() {
	awk '/^\$ vfstore show --vf / { on = 1; next }
	    on && /^(\$ |   [^ ])/ { exit } on' "$DEMO_OUT"
}

@test "step 7 shows the stand-in DCGM commands, the audit trail and the capacity back" {
	run -0 step 7
	assert_line 'would run: systemctl stop nvidia-dcgm-exporter nvidia-dcgm nvidia-persistenced'
	assert_line 'would run: systemctl start nvidia-persistenced nvidia-dcgm nvidia-dcgm-exporter'
	run -0 step_json 7 'select(.command and .user) | .command'
	assert_equal "$(tr -d '"' <<<"$output" | xargs)" \
	    "release apply release preflight drain idle quiesce disable enable restore verify clear"
	run -0 step_json 7 'select(.total_slots and (.profiles | not)) | [.total_slots, .used_slots, .allocatable_slots, .quarantined_slots]'
	assert_output '[16,1,15,0]'
}

@test "step 9 shows the sentinel skipping vm-5 once its VMM is gone" {
	run -0 step_json 9 'select(.level)'
	assert_output '{"level":"warn","msg":"skipping target: VMM not alive","instance_id":"vm-5","vmm":"gone"}'
}

@test "the second failed boot, another assignment, quarantines the same VF" {
	local vf
	vf=$(wedged_vf)
	[[ $vf =~ ^0000:e[34]:0[01]\.[0-7]$ ]]
	run -0 json 'select(.instance_id == "vm-2" and .outcome == "quarantined") | [.vf_address, .failures]'
	assert_output "[\"$vf\",2]"
	# The failure message is the kernel's, not the record forged from
	# user space in the same recording.
	run -0 json 'select(.instance_id == "vm-2" and .outcome == "quarantined") | .nvrm'
	assert_output '"NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)"'
}

@test "vm-2 was reached through the hybrid-vsock proxy" {
	run -0 grep -c 'vfpick .*--claim vm-2 .*--vsock hvsock:.*/vm-2/vmm.vsock:2222' "$DEMO_OUT"
	assert_output 1
	# The hand-made query through the proxy: the VMM's OK, then the
	# guest's answer.
	run -0 grep -A 2 "^\$ printf 'CONNECT 2222" "$DEMO_OUT"
	assert_line --index 1 'OK 1073741824'
	assert_line --index 2 '{"state":"FAILED","failure_message":"NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)"}'
}

@test "placement then avoids the wedged VF and its card" {
	local vf card
	vf=$(wedged_vf)
	card=$(json "select(.instance_id == \"vm-1\" and .card) | .card" |
	    head -n 1 | tr -d '"')
	[ -n "$card" ]
	# The 20 dry runs all land on the other card.
	run -0 bash -c "grep '^\[{\"card\"' '$DEMO_OUT'"
	refute_output --partial "\"$card\""
	assert_output --partial '"picks":20'
	run -0 json "select(.instance_id == \"vm-3\" and .card) | .card"
	refute_output "\"$card\""
}

@test "vm-3's image has no nvidia-smi: it reaches ok through gpu-probe --method open" {
	run -0 json 'select(.event == "gpu_init_ok") | [.method, (.output | test("^opened /.*/vm-3/dev/nvidia0 \\(0000:00:03.0\\)$"))]'
	assert_output '["open",true]'
	run -0 json 'select(.instance_id == "vm-3" and .check == "ok") | .instance_id'
	assert_output '"vm-3"'
}

@test "resources-report counts the quarantined VF" {
	run -0 json 'select(.quarantined_slots == 1) | [.total_slots, .allocatable_slots]'
	assert_line '[16,14]'
}

@test "the metrics textfiles carry the counters and gauges" {
	run -0 grep -E '^hypeman_instances_vgpu_sentinel_(quarantines|init_failures)_total ' "$DEMO_OUT"
	assert_line 'hypeman_instances_vgpu_sentinel_quarantines_total 1'
	assert_line 'hypeman_instances_vgpu_sentinel_init_failures_total 2'
	run -0 grep -E '^hypeman_resources_gpu_slots\{kind="quarantined"\} ' "$DEMO_OUT"
	assert_output 'hypeman_resources_gpu_slots{kind="quarantined"} 1'
}

# cycle_lines: the output of step 7's vfrecover run (the lines after
# its command line, up to the next command or text).
cycle_lines() {
	awk '/^\$ vfrecover .* --wait / { on = 1; next }
	    on && /^(\$ |   [^ ])/ { exit } on' "$DEMO_OUT"
}

@test "step 7's vfrecover cycles the wedged VF's card: every step done or skipped, recovered" {
	local card
	card=$(json 'select(.instance_id == "vm-1" and .card) | .card' |
	    head -n 1 | tr -d '"')
	[ -n "$card" ]
	run -0 cycle_lines
	assert_equal "${lines[-1]}" "{\"card\":\"$card\",\"result\":\"recovered\"}"
	assert_equal "$(jq -r 'select(.status) | .step' <<<"$output" | xargs)" \
	    "preflight drain idle quiesce disable enable restore verify clear"
	assert_equal "$(jq -r 'select(.status) | .status' <<<"$output" | sort -u | xargs)" \
	    "done skipped"
	# The wedged VF was among those drained and cleared.
	run -0 jq -r 'select(.step == "clear") | .vfs[]' <<<"$output"
	assert_line "$(wedged_vf)"
}

@test "after the runbook the VF is back and its verification boot is ok" {
	local vf
	vf=$(wedged_vf)
	run -0 json 'select(.quarantined_slots == 0 and .total_slots == 16) | .allocatable_slots'
	assert_line 15
	run -0 json 'select(.instance_id == "vm-4" and .check == "ok") | .vf_address'
	assert_output "\"$vf\""
}

@test "the demo leaves no process and no temporary directory behind" {
	run pgrep -f "$BATS_FILE_TMPDIR/tmp/vfsdemo"
	assert_failure
	run -0 find "$BATS_FILE_TMPDIR/tmp" -mindepth 1
	assert_output ''
}

@test "an interrupted demo still cleans up after itself" {
	mkdir -p "$T/tmp"
	cd "$VFS_ROOT"
	TMPDIR=$T/tmp bash tools/demo.sh >"$T/out" 2>&1 3>&- &
	local pid=$!
	wait_for grep -q 'vm-1 boots' "$T/out" ||
	    wait_for grep -q 'vm-1 boots' "$T/out"
	kill -TERM "$pid"
	local rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 1 ]
	run pgrep -f "$T/tmp/vfsdemo"
	assert_failure
	run -0 find "$T/tmp" -mindepth 1
	assert_output ''
}

@test "a VMM killed with SIGKILL: reconcile releases its claim and the capacity comes back" {
	run -0 json 'select(.instance_id == "vm-5") | [.liveness, .released]'
	assert_line '["alive",false]'
	assert_line '["gone",true]'
	run -0 json 'select(.instance_id == "vm-5" and .released) | .reason'
	assert_output '"control socket refused connections"'
	# resources-report before the kill and after the release.
	run -0 json 'select(.reconcile) | [.reconcile, .allocatable_slots]'
	[ "${#lines[@]}" -eq 2 ]
	before=$(jq '.[1]' <<<"${lines[0]}")
	after=$(jq '.[1]' <<<"${lines[1]}")
	assert_equal "$(jq -r '.[0]' <<<"${lines[0]}") $(jq -r '.[0]' <<<"${lines[1]}")" \
	    'before after'
	assert_equal "$((after - before))" 1
}

# step10: the demo's output from step 10's heading to the last step's.
step10() {
	awk '/^== 10\. / { on = 1 } /^== Done / { on = 0 } on' "$DEMO_OUT"
}

@test "step 10 runs a real libvirtd, or says why it cannot" {
	local why
	. "$VFS_ROOT/tools/libvirt-ns.sh"
	run -0 step10
	assert_line --index 0 '== 10. libvirt: libvirt-hook as the qemu hook of a real libvirtd'
	if why=$(lv_missing); then
		assert_line --index 1 --partial "   Skipped: $why."
	else
		assert_line --index 1 --partial '   libvirtd runs in a private mount namespace'
	fi
}

LV_UUID=0c9d8e7f-6a5b-4c3d-9e2f-1a0b9c8d7e6f

@test "step 10: libvirt refuses a quarantined VF's domain with the hook's line; a metadata VF's is claimed, completed, released on destroy" {
	local q vf why
	. "$VFS_ROOT/tools/libvirt-ns.sh"
	! why=$(lv_missing) || skip "$why"
	q=$(json 'select(.outcome == "quarantined" and (has("instance_id") | not)) | .vf_address' | tr -d '"')
	[[ $q =~ ^0000:e[34]:0[01]\.[0-7]$ ]]
	run -0 step10
	assert_line --partial "error: Hook script execution failed"
	assert_line "vfsentinel: VF $q is quarantined by an operator; pick another with vfpick --profile 'NVIDIA L40S-12Q' --claim 6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f1 --format libvirt and put the <hostdev> element it prints in the domain"
	run -0 json "select(.instance_id == \"$LV_UUID\" and .app_log) | .vf_address"
	vf=$(tr -d '"' <<<"$output")
	[[ $vf =~ ^0000:e[34]:0[01]\.[0-7]$ ]]
	[ "$vf" != "$q" ]
	run -0 json "select(.instance_id == \"$LV_UUID\" and .app_log) | [.profile, .type_id, (.control_socket | test(\"^/var/lib/libvirt/qemu/domain-[0-9]+-lv-2/monitor.sock$\")), (.app_log | endswith(\"/lv/lv-2.console\"))]"
	assert_output '["NVIDIA L40S-12Q","1160",true,true]'
	run -0 json "select(.instance_id == \"$LV_UUID\" and .liveness) | .liveness"
	assert_output '"alive"'
	# After virsh destroy: no claim left, the VF's type back to 0.
	run -0 grep -A 2 -F -- "$LV_UUID\")' | wc -l; cat " "$DEMO_OUT"
	assert_equal "${lines[1]} ${lines[2]}" "0 0"
	run -0 grep -E '^lv-[12] [a-z]+ [a-z]+ rc=[0-9]+$' "$DEMO_OUT"
	assert_equal "$output" "$(printf '%s\n' 'lv-1 prepare begin rc=1' \
	    'lv-1 stopped end rc=0' 'lv-1 release end rc=0' \
	    'lv-2 prepare begin rc=0' 'lv-2 start begin rc=0' \
	    'lv-2 started begin rc=0' 'lv-2 stopped end rc=0' \
	    'lv-2 release end rc=0')"
}

@test "step 9b: the killed VM's VF is suspect, placement avoids it, the verification clears it" {
	local vf
	vf=$(json 'select(.instance_id == "vm-5" and .released == true) | .vf_address' | head -n 1 | tr -d '"')
	[ -n "$vf" ]
	run -0 json "select(.instance_id == \"vm-5\" and .released == true) | [.ended, .suspect]"
	assert_output '["unclean",true]'
	run -0 json "select(.vf_address == \"$vf\" and .suspect != null and .why != null) | .suspect"
	assert_output '"reconcile: control socket refused connections"'
	run -0 json 'select(.picks == 20) | .on_suspect'
	assert_output 0
	run -0 json "select(.vf_address == \"$vf\" and .result != null) | .result"
	assert_output '"pass"'
	run -0 json "select(.vf_address == \"$vf\" and .state != null) | .state"
	assert_output '"free"'
}
