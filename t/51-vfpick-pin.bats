#!/usr/bin/env bats
# vfpick --vf VF [--include-quarantined] (SPEC.md 4.3): a placement pinned
# to one VF, as a verification boot after a repair needs it (random
# placement cannot land on the repaired VF on purpose, and placing by hand
# bypasses the ledger, so the sentinel would never check it).

load helpers
load lib/placement

E3=0000:e3:00.0

setup() {
	vfs_setup
	mk_card "$SYSFS" $E3
	mk_vf "$SYSFS" $E3 0000:e3:00.4
	mk_vf "$SYSFS" $E3 0000:e3:00.5
	mk_vf "$SYSFS" $E3 0000:e3:00.6 0 "1161:NVIDIA L40S-24Q"
}

@test "--vf pins the choice: every draw is that VF, short and upper-case forms too" {
	local i
	for i in 1 2 3 4 5 6; do
		run -0 --separate-stderr pick --profile "$P12" --vf 0000:e3:00.5
		run -0 jq -r .vf_address <<<"$output"
		assert_output 0000:e3:00.5
	done
	run -0 --separate-stderr pick --profile "$P12" --vf E3:00.5
	run -0 jq -c . <<<"$output"
	assert_output '{"vf_address":"0000:e3:00.5","card":"0000:e3:00.0","profile":"NVIDIA L40S-12Q","type_id":"1160"}'
}

@test "--vf with --claim --configure claims and configures exactly that VF" {
	run -0 --separate-stderr pick --profile "$P12" --vf 0000:e3:00.4 \
	    --claim verify-1 --configure
	run -0 jq -r '.vf_address, .instance_id' <<<"$output"
	assert_output $'0000:e3:00.4\nverify-1'
	run -0 jq -r '.claims[] | "\(.vf_address) \(.instance_id)"' \
	    "$DATA/gpu/vf-claims.json"
	assert_output "0000:e3:00.4 verify-1"
	assert_equal "$(cat "$SYSFS/sys/bus/pci/devices/0000:e3:00.4/nvidia/current_vgpu_type")" 1160
}

@test "--vf of a quarantined VF is refused (1) unless --include-quarantined" {
	quarantine 0000:e3:00.4
	run -1 --separate-stderr pick --profile "$P12" --vf 0000:e3:00.4 --claim v-1
	[ -z "$output" ]
	[[ "$stderr" == *'VF 0000:e3:00.4 is quarantined'* ]]
	[[ "$stderr" == *'--include-quarantined'* ]]
	[ ! -e "$DATA/gpu/vf-claims.json" ]
	run -0 --separate-stderr pick --profile "$P12" --vf 0000:e3:00.4 \
	    --include-quarantined --claim v-1 --configure
	run -0 jq -r .vf_address <<<"$output"
	assert_output 0000:e3:00.4
	assert_equal "$(cat "$SYSFS/sys/bus/pci/devices/0000:e3:00.4/nvidia/current_vgpu_type")" 1160
	# The quarantine stays: the verification boot's ok lifts it, not the pick.
	run -0 vfstore --data-dir "$DATA" show --vf 0000:e3:00.4
	run -0 jq -r .quarantined <<<"$output"
	assert_output true
}

@test "--vf of a used VF is refused: claimed by another instance, or dirty" {
	claim 0000:e3:00.4 i-other
	run -1 --separate-stderr pick --profile "$P12" --vf 0000:e3:00.4 --claim v-1
	[[ "$stderr" == *'VF 0000:e3:00.4 is in use (claimed by i-other)'* ]]
	echo 1160 >"$SYSFS/sys/bus/pci/devices/0000:e3:00.5/nvidia/current_vgpu_type"
	run -1 --separate-stderr pick --profile "$P12" --vf 0000:e3:00.5
	[[ "$stderr" == *'VF 0000:e3:00.5 is in use (allocated in sysfs without a claim'* ]]
	run -0 jq -r '[.claims[].instance_id] | join(" ")' "$DATA/gpu/vf-claims.json"
	assert_output i-other
}

@test "--vf of a VF that does not offer the profile, or that this host lacks, is refused" {
	run -1 --separate-stderr pick --profile "$P12" --vf 0000:e3:00.6
	[[ "$stderr" == *'VF 0000:e3:00.6 does not offer profile \"NVIDIA L40S-12Q\"'* ]]
	run -1 --separate-stderr pick --profile "$P12" --vf 0000:e3:00.7
	[[ "$stderr" == *'no vGPU VF 0000:e3:00.7 on this host'* ]]
	run -65 --separate-stderr pick --profile "$P12" --vf e3:00
	[[ "$stderr" == *'invalid VF address'* ]]
	[ ! -e "$DATA/gpu/vf-claims.json" ]
}

@test "--include-quarantined needs --vf; a held claim on another VF is not moved" {
	run -64 --separate-stderr pick --profile "$P12" --include-quarantined
	[[ "$stderr" == *'--include-quarantined needs --vf'* ]]
	run -0 --separate-stderr pick --profile "$P12" --vf 0000:e3:00.4 --claim v-1
	run -65 --separate-stderr pick --profile "$P12" --vf 0000:e3:00.5 --claim v-1
	[[ "$stderr" == *'instance v-1 already holds VF 0000:e3:00.4'* ]]
	run -0 --separate-stderr pick --profile "$P12" --vf 0000:e3:00.4 --claim v-1
	run -0 jq -r .vf_address <<<"$output"
	assert_output 0000:e3:00.4
}

# suspect VF...: a suspect file suspecting each VF (SPEC.md 7.3).
suspect() {
	local vf list=
	mkdir -p "$DATA/gpu"
	for vf; do
		list="$list${list:+,}{\"vf_address\":\"$vf\",\"instance_id\":\"i-$vf\",\"assigned_at\":\"2026-12-07T10:00:00Z\",\"ended_at\":\"2026-12-07T10:00:09Z\",\"ended\":\"unclean\",\"source\":\"libvirt-hook: reason=crashed\"}"
	done
	printf '{"version":1,"suspects":[%s]}' "$list" >"$DATA/gpu/vf-suspect.json"
}

@test "suspect.placement last (the default without a verify command): a suspect VF only when nothing else fits" {
	local i
	suspect 0000:e3:00.4
	for i in 1 2 3 4 5 6; do
		run -0 --separate-stderr pick --profile "$P12" --seed $i
		run -0 jq -r .vf_address <<<"$output"
		assert_output 0000:e3:00.5
	done
	suspect 0000:e3:00.4 0000:e3:00.5
	run -0 --separate-stderr pick --profile "$P12"
	run -0 jq -r .vf_address <<<"$output"
	assert_output --regexp '^0000:e3:00\.[45]$'
	# Pinned: taken, with a warning in the line and the log.
	run -0 --separate-stderr pick --profile "$P12" --vf 0000:e3:00.4 --claim t-1
	run -0 jq -r .warning <<<"$output"
	assert_output --partial "suspect VF"
}

@test "suspect.placement exclude (auto with a verify command): never offered; pinned only with --include-suspect" {
	suspect 0000:e3:00.4 0000:e3:00.5
	echo 'recovery.verify_command = /bin/true' >"$VFSENTINEL_CONF"
	run -1 --separate-stderr pick --profile "$P12"
	run -1 --separate-stderr pick --profile "$P12" --vf 0000:e3:00.4 --claim v-1
	assert_output ""
	[[ $stderr == *"suspect"*"--include-suspect"* ]]
	run -0 --separate-stderr pick --profile "$P12" --vf 0000:e3:00.4 --claim verify-0000:e3:00.4 --include-suspect
	run -64 --separate-stderr pick --profile "$P12" --include-suspect
	echo 'suspect.placement = last' >>"$VFSENTINEL_CONF"
	run -0 --separate-stderr pick --profile "$P12"
}

@test "a suspect file that does not load fails closed: no placement (69)" {
	mkdir -p "$DATA/gpu"
	echo '{"version":1,"suspects":{}}' >"$DATA/gpu/vf-suspect.json"
	run -69 --separate-stderr pick --profile "$P12"
}
