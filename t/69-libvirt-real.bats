#!/usr/bin/env bats
# 69-libvirt-real.bats - libvirt-hook under a real libvirtd (SPEC.md 6.6;
# facts in reference/real-vms.md): libvirt 9 running QEMU under TCG in a
# private mount namespace (lib/libvirt.bash), its hook the libvirt-hook
# under test on a fake host. A quarantined VF's domain is refused with
# the hook's message in virsh's error, also when it is named --help; a free hostdev VF is claimed at
# prepare and released when the start fails (no passthrough here); a
# domain naming its VF in vfsentinel's metadata is claimed, completed at
# started with the real monitor socket and console, found alive,
# released on destroy and on kill -9 of its QEMU, and kept (re-adopted)
# across a libvirtd restart; a domain without VFs never touches the
# stores. Suspect VFs (SPEC.md 7.3): a destroy or kill -9 before the
# guest's OK suspects its VF, one after it does not, the verification
# clears or quarantines it, and the tenant boots on a wedged VF are
# counted (0 with a verify command, 1 without). One daemon for the
# file: each test uses its own VF and domain.

load helpers
load lib/placement
load lib/libvirt

setup_file() {
	need_tool libvirtd virsh qemu-system-x86_64 unshare nsenter
	[ "$(id -u)" = 0 ] || skip "needs root (mount namespace, libvirtd)"
	getent passwd libvirt-qemu >/dev/null ||
		skip "libvirt-qemu user missing (make deps creates it)"
	# vfs_setup's layout, in the file's directory (one daemon, one host).
	T=$BATS_FILE_TMPDIR
	DATA=$T/data
	SYSFS=$T/sysfs
	VFSENTINEL_CONF=$T/vfsentinel.conf
	export DATA SYSFS VFSENTINEL_CONF
	mkdir -p "$SYSFS/sys/bus/pci/devices"
	: >"$VFSENTINEL_CONF"
	vfstore --data-dir "$DATA" init >/dev/null 2>&1
	mk_card "$SYSFS" 0000:e3:00.0
	for fn in 4 5 6 7; do
		mk_vf "$SYSFS" 0000:e3:00.0 0000:e3:00.$fn
	done
	printf 'data_dir = %s\nsysfs_root = %s\n' "$DATA" "$SYSFS" \
		>"$VFSENTINEL_CONF"
	lv_setup "$T/lv"
	lv_hook
	lv_start
}

teardown_file() {
	[ -n "${LV_HOLDER:-}" ] || return 0
	LV_LEFT=
	lv_teardown
	lv_left_tap >&3
}

setup() {
	T=$BATS_TEST_TMPDIR
	: >"$LV/calls"
}

# Each test's domains are gone after it, whatever it left.
teardown() {
	local d
	for d in $(lvsh list --name 2>/dev/null); do
		lvsh destroy "$d" >/dev/null 2>&1 || true
	done
}

# claims_json: the ledger's [VF, instance] pairs ([] when none).
claims_json() {
	if [ -e "$DATA/gpu/vf-claims.json" ]; then
		jq -c '[.claims[] | [.vf_address, .instance_id]]' \
			"$DATA/gpu/vf-claims.json"
	else
		echo '[]'
	fi
}

@test "a quarantined VF's domain is refused, with the hook's message in virsh's error" {
	vfstore --data-dir "$DATA" --sysfs-root "$SYSFS" quarantine \
		--vf 0000:e3:00.4 --reason test >/dev/null 2>&1
	META="<v:vgpu xmlns:v='$HOOK_NS' profile='$P12'/>" \
		tcg_xml q1 $UUID1 "$(hostdev_xml 0000:e3:00.4)" >"$T/q1.xml"
	run -1 lvsh create "$T/q1.xml"
	assert_output --partial "Hook script execution failed"
	assert_output --partial "vfsentinel: VF 0000:e3:00.4 is quarantined by an operator; pick another with vfpick --profile 'NVIDIA L40S-12Q'"
	run -0 cat "$LV/calls"
	assert_line "q1 prepare begin rc=1"
	assert_line "q1 release end rc=0"
	assert_equal "$(claims_json)" '[]'
}

@test "a domain named --help on a quarantined VF is refused: the hook takes libvirt's four arguments as operands" {
	vfstore --data-dir "$DATA" --sysfs-root "$SYSFS" quarantine \
		--vf 0000:e3:00.4 --reason test >/dev/null 2>&1
	META="<v:vgpu xmlns:v='$HOOK_NS' profile='$P12'/>" \
		tcg_xml --help $UUID2 "$(hostdev_xml 0000:e3:00.4)" >"$T/help.xml"
	run -1 lvsh create "$T/help.xml"
	assert_output --partial "Hook script execution failed"
	assert_output --partial "vfsentinel: VF 0000:e3:00.4 is quarantined by an operator"
	refute_output --partial "usage:"
	run -0 cat "$LV/calls"
	assert_line -- "--help prepare begin rc=1"
	assert_line -- "--help release end rc=0"
	run -1 lvsh domstate -- --help
	assert_equal "$(claims_json)" '[]'
}

@test "a free VF's domain is claimed at prepare; its start fails here and release end leaves no claim" {
	META="<v:vgpu xmlns:v='$HOOK_NS' profile='$P12'/>" \
		tcg_xml h1 $UUID2 "$(hostdev_xml 0000:e3:00.5)" >"$T/h1.xml"
	run -1 lvsh create "$T/h1.xml"
	refute_output --partial "vfsentinel:"
	run -0 cat "$LV/calls"
	assert_line --index 0 "h1 prepare begin rc=0"
	assert_line "h1 release end rc=0"
	run -0 grep -c "\"msg\":\"claimed VF for the domain\",\"vf\":\"0000:e3:00.5\"" "$LV/hook.log"
	assert_equal "$(claims_json)" '[]'
	assert_equal "$(current 0000:e3:00.5)" 0
}

@test "a metadata VF: claimed, completed at started (real monitor socket, console), alive, released on destroy" {
	local id sock
	META="<v:vgpu xmlns:v='$HOOK_NS' vf='0000:e3:00.6' profile='$P24'/>" \
		tcg_xml m1 $UUID1 >"$T/m1.xml"
	run -0 lvsh create "$T/m1.xml"
	id=$(lvsh domid m1)
	sock=/var/lib/libvirt/qemu/domain-$id-m1/monitor.sock
	assert_equal "$(claim_field $UUID1 vf_address)" 0000:e3:00.6
	assert_equal "$(claim_field $UUID1 control_socket)" "$sock"
	assert_equal "$(claim_field $UUID1 app_log)" "$LV/m1.console"
	assert_equal "$(current 0000:e3:00.6)" 1161
	assert [ -S "$LV/lib/qemu/domain-$id-m1/monitor.sock" ]
	# libvirt holds the monitor: the sentinel's liveness rule says alive.
	run -0 --separate-stderr lv_in vfstore reconcile --once --grace 0 --dry-run
	run -0 jq -r 'select(.instance_id == "'$UUID1'") | .liveness' <<<"$output"
	assert_output alive
	# The sentinel polls it: the guest's marker on the real console.
	printf '%s [guest-agent] HYPEMAN-GPU-INIT-OK ts=%s\n' \
		"$(date -u '+%Y/%m/%d %H:%M:%S')" "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)" \
		>>"$LV/m1.console"
	run -0 --separate-stderr lv_in sentinel-poll --once --source log
	run -0 jq -r '"\(.check) \(.vf_address) \(.instance_id)"' <<<"$output"
	assert_output "ok 0000:e3:00.6 $UUID1"
	run -0 lvsh destroy m1
	assert_equal "$(claims_json)" '[]'
	assert_equal "$(current 0000:e3:00.6)" 0
	run -0 cat "$LV/calls"
	assert_equal "$output" "$(printf '%s\n' 'm1 prepare begin rc=0' \
		'm1 start begin rc=0' 'm1 started begin rc=0' \
		'm1 stopped end rc=0' 'm1 release end rc=0')"
}

@test "kill -9 of the domain's QEMU releases its claim" {
	META="<v:vgpu xmlns:v='$HOOK_NS' vf='0000:e3:00.6' profile='$P24'/>" \
		tcg_xml k1 $UUID2 >"$T/k1.xml"
	run -0 lvsh create "$T/k1.xml"
	assert_equal "$(claims_json)" "[[\"0000:e3:00.6\",\"$UUID2\"]]"
	kill -KILL "$(cat "$LV/run/qemu/k1.pid")"
	wait_long grep -q "k1 release end rc=0" "$LV/calls"
	assert_equal "$(claims_json)" '[]'
	assert_equal "$(current 0000:e3:00.6)" 0
}

@test "a libvirtd restart keeps the running domain's claim, and reconnect re-adopts a lost one" {
	local before
	META="<v:vgpu xmlns:v='$HOOK_NS' vf='0000:e3:00.7' profile='$P12'/>" \
		tcg_xml r1 $UUID1 >"$T/r1.xml"
	run -0 lvsh create "$T/r1.xml"
	before=$(claim_field $UUID1 claimed_at)
	lv_stop
	lv_start
	wait_long grep -q "r1 reconnect begin rc=0" "$LV/calls"
	assert_equal "$(claim_field $UUID1 claimed_at)" "$before"
	assert_equal "$(lvsh domstate r1)" running
	# A claim lost meanwhile (released by hand, the VF still configured):
	# the next reconnect adopts it and completes it again.
	vfstore --data-dir "$DATA" release --instance $UUID1 >/dev/null 2>&1
	assert_equal "$(claims_json)" '[]'
	: >"$LV/calls"
	lv_stop
	lv_start
	wait_long grep -q "r1 reconnect begin rc=0" "$LV/calls"
	assert_equal "$(claim_field $UUID1 vf_address)" 0000:e3:00.7
	assert_equal "$(claim_field $UUID1 type_id)" 1160
	assert_regex "$(claim_field $UUID1 control_socket)" "^/var/lib/libvirt/qemu/domain-[0-9]+-r1/monitor.sock$"
	run -0 lvsh destroy r1
	assert_equal "$(claims_json)" '[]'
}

@test "a domain without NVIDIA VFs starts with a broken store, which is not even read" {
	cp "$DATA/gpu/vf-claims.json" "$T/claims.saved"
	echo garbage >"$DATA/gpu/vf-health.json"
	echo garbage >"$DATA/gpu/vf-claims.json"
	META="" tcg_xml n1 $UUID2 >"$T/n1.xml"
	run -0 lvsh create "$T/n1.xml"
	run -0 lvsh destroy n1
	run -0 cat "$LV/calls"
	assert_line "n1 prepare begin rc=0"
	assert_line "n1 release end rc=0"
	assert_equal "$(cat "$DATA/gpu/vf-claims.json")" garbage
	rm "$DATA/gpu/vf-health.json"
	cp "$T/claims.saved" "$DATA/gpu/vf-claims.json"
}

# suspect_of VF: the source of VF's suspicion ("" when none).
suspect_of() {
	if [ -e "$DATA/gpu/vf-suspect.json" ]; then
		jq -r --arg vf "$1" '[.suspects[] | select(.vf_address == $vf) |
		    .source][0] // ""' "$DATA/gpu/vf-suspect.json"
	fi
}

# boot NAME UUID: a domain on VF 0000:e3:00.7 (vfsentinel's metadata).
boot() {
	META="<v:vgpu xmlns:v='$HOOK_NS' vf='0000:e3:00.7' profile='$P24'/>" \
		tcg_xml "$1" "$2" >"$T/$1.xml"
	run -0 lvsh create "$T/$1.xml"
	assert_equal "$(claim_field "$2" vf_address)" 0000:e3:00.7
}

@test "suspect VFs under a real libvirtd: destroy or kill -9 before the guest's OK suspects; after it, not; a verification clears or quarantines" {
	local vf=0000:e3:00.7 boots=0
	# virsh destroy before any OK: reason=destroyed, suspect.
	boot s1 $UUID1
	run -0 lvsh destroy s1
	assert_equal "$(suspect_of $vf)" "libvirt-hook: reason=destroyed"
	vfstore clear --vf $vf >/dev/null 2>&1
	# The guest's OK first (console marker, sentinel, apply): not suspect.
	boot s2 $UUID2
	printf '%s [guest-agent] HYPEMAN-GPU-INIT-OK ts=%s\n' \
		"$(date -u '+%Y/%m/%d %H:%M:%S')" "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)" \
		>>"$LV/s2.console"
	lv_in sentinel-poll --once --source log >"$T/checks" 2>/dev/null
	lv_in vfstore apply <"$T/checks" >/dev/null 2>&1
	assert [ -n "$(claim_field $UUID2 ok_at)" ]
	run -0 lvsh destroy s2
	assert_equal "$(suspect_of $vf)" ""
	# kill -9 of QEMU during boot: reason=crashed, suspect.
	boot s3 $UUID1
	kill -KILL "$(cat "$LV/run/qemu/s3.pid")"
	wait_long grep -q "s3 release end rc=0" "$LV/calls"
	assert_equal "$(suspect_of $vf)" "libvirt-hook: reason=crashed"
	# With a verify command (placement auto = exclude) the next tenant's
	# start on the wedged VF is refused: no tenant boots there.
	printf 'recovery.verify_command = false\n' >>"$VFSENTINEL_CONF"
	META="<v:vgpu xmlns:v='$HOOK_NS' vf='$vf' profile='$P24'/>" \
		tcg_xml tenant $UUID2 >"$T/tenant.xml"
	if lvsh create "$T/tenant.xml" >/dev/null 2>&1; then
		boots=$((boots + 1))
		lvsh destroy tenant >/dev/null 2>&1
	fi
	echo "# tenant boots on the wedged VF with a verify command: $boots" >&3
	assert_equal "$boots" 0
	# The verification fails (a wedged VF): quarantined.
	run -0 --separate-stderr vfrecover --verify-suspects
	assert_equal "$(jq -r --arg vf $vf 'select(.vf_address == $vf) | .result' <<<"$output")" fail
	run -0 jq -r --arg vf $vf '.records[] | select(.vf_address == $vf) | has("quarantined_at")' \
		"$DATA/gpu/vf-health.json"
	assert_output true
	assert_equal "$(suspect_of $vf)" ""
	# Cleared; suspected again; a passing verification clears it.
	vfstore clear --vf $vf >/dev/null 2>&1
	sed -i 's/^recovery.verify_command = false$/recovery.verify_command = true/' \
		"$VFSENTINEL_CONF"
	boot s4 $UUID1
	run -0 lvsh destroy s4
	assert_equal "$(suspect_of $vf)" "libvirt-hook: reason=destroyed"
	run -0 --separate-stderr vfrecover --verify-suspects
	assert_equal "$(jq -r --arg vf $vf 'select(.vf_address == $vf) | .result' <<<"$output")" pass
	assert_equal "$(suspect_of $vf)" ""
	sed -i '/^recovery.verify_command/d' "$VFSENTINEL_CONF"
	# Without a verify command (last): wedged again, the next tenant
	# pinned to the VF boots there (one boot); its failure quarantines
	# the VF at once, and the tenant after it is refused.
	boot s5 $UUID1
	kill -KILL "$(cat "$LV/run/qemu/s5.pid")"
	wait_long grep -q "s5 release end rc=0" "$LV/calls"
	assert_equal "$(suspect_of $vf)" "libvirt-hook: reason=crashed"
	boots=0
	lvsh create "$T/tenant.xml" >/dev/null 2>&1 && boots=$((boots + 1))
	jq -nc --arg vf $vf --arg id $UUID2 --arg at "$(claim_field $UUID2 claimed_at)" \
		'{check: "failed", vf_address: $vf, instance_id: $id,
		assigned_at: $at, nvrm: "NVRM: RmInitAdapter failed!"}' >"$T/failed"
	run -0 --separate-stderr vfstore apply <"$T/failed"
	assert_equal "$(jq -r .outcome <<<"$output")" quarantined
	lvsh destroy tenant >/dev/null 2>&1
	lvsh create "$T/tenant.xml" >/dev/null 2>&1 && boots=$((boots + 1))
	echo "# tenant boots on the wedged VF without a verify command: $boots" >&3
	assert_equal "$boots" 1
	vfstore clear --vf $vf >/dev/null 2>&1
}
