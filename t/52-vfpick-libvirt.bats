#!/usr/bin/env bats
# vfpick for libvirt and for running VMs (SPEC.md 6.4): --format libvirt
# prints the <hostdev> element of the claimed VF; --adopt records a claim
# for a VF a running VM already holds, without writing its type; a claim
# the sentinel cannot poll (no --vsock, no --control-socket) is made with
# a warning.

load helpers
load lib/placement

E3=0000:e3:00.0
VF4=0000:e3:00.4
VF5=0000:e3:00.5

setup() {
	vfs_setup
	mk_card "$SYSFS" $E3
	mk_vf "$SYSFS" $E3 $VF4
	mk_vf "$SYSFS" $E3 $VF5 1161
}

@test "--format libvirt prints the claimed VF's <hostdev> element, managed='no'" {
	run -0 --separate-stderr pick --profile "$P12" --vf $VF4 --claim i-1 \
		--configure --control-socket /run/vm/i-1/qmp.sock --format libvirt
	assert_output "<hostdev mode='subsystem' type='pci' managed='no'>
  <source>
    <address domain='0x0000' bus='0xe3' slot='0x00' function='0x4'/>
  </source>
</hostdev>"
	run -0 xmllint --noout - <<<"$output"
	assert_equal "$(current $VF4)" 1160
	# Asked again (the launcher retried), the same claim and element.
	run -0 --separate-stderr pick --profile "$P12" --claim i-1 --format libvirt
	assert_line --index 2 "    <address domain='0x0000' bus='0xe3' slot='0x00' function='0x4'/>"
	run -0 jq -r '.claims[].instance_id' "$DATA/gpu/vf-claims.json"
	assert_output i-1
}

@test "--format libvirt needs --claim; --format json is the default; another format is a usage error" {
	run -64 --separate-stderr pick --profile "$P12" --format libvirt
	grep -qF -- "--format libvirt needs --claim" <<<"$stderr"
	run -64 --separate-stderr pick --profile "$P12" --claim i-1 --format yaml
	run -0 --separate-stderr pick --profile "$P12" --vf $VF4 --claim i-2 \
		--vsock vsock:3:2222 --format json
	run -0 jq -r .vf_address <<<"$output"
	assert_output $VF4
}

@test "a claim without --vsock and --control-socket is made, with a warning in its line and a warn log" {
	echo 0 >"$(vfdir $VF5)/nvidia/current_vgpu_type"
	run -0 --separate-stderr pick --profile "$P12" --claim i-1
	run -0 jq -r '.warning' <<<"$output"
	assert_output --partial "no --vsock and no --control-socket"
	run -0 jq -r 'select(.level == "warn") | .msg' <<<"$stderr"
	assert_output --partial "no --vsock and no --control-socket"
	run -0 jq -r '.claims[].instance_id' "$DATA/gpu/vf-claims.json"
	assert_output i-1
	run -0 --separate-stderr pick --profile "$P12" --claim i-2 \
		--control-socket /run/vm/i-2/qmp.sock
	run -0 jq -r 'has("warning")' <<<"$output"
	assert_output false
}

@test "--adopt records a claim for a configured VF without writing its type; no VFIO holder warns" {
	sum=$(sha "$(vfdir $VF5)/nvidia/current_vgpu_type")
	run -0 --separate-stderr pick --profile "$P24" --vf $VF5 --claim vm-7 \
		--adopt --control-socket /run/vm/7/qmp.sock
	run -0 jq -r '"\(.vf_address) \(.instance_id) \(.type_id) \(.warning)"' <<<"$output"
	assert_output "$VF5 vm-7 1161 no process holds the VF's VFIO device: the VM may not have started"
	run -0 jq -r '.claims[] | "\(.vf_address) \(.instance_id) \(.control_socket)"' \
		"$DATA/gpu/vf-claims.json"
	assert_output "$VF5 vm-7 /run/vm/7/qmp.sock"
	assert_equal "$(sha "$(vfdir $VF5)/nvidia/current_vgpu_type")" "$sum"
}

@test "--adopt warns when no process holds the VF's VFIO device, and not when one does" {
	mkdir -p "$T/groups/87" "$T/proc/1234/fd"
	ln -s "../../../groups/87" "$(vfdir $VF5)/iommu_group"
	run -0 --separate-stderr pick --profile "$P24" --vf $VF5 --claim vm-7 \
		--adopt --control-socket /run/vm/7/qmp.sock --proc-root "$T"
	run -0 jq -r .warning <<<"$output"
	assert_output --partial "no process holds"
	vfstore --data-dir "$DATA" release --instance vm-7 >/dev/null 2>&1
	ln -s /dev/vfio/87 "$T/proc/1234/fd/9"
	run -0 --separate-stderr pick --profile "$P24" --vf $VF5 --claim vm-7 \
		--adopt --control-socket /run/vm/7/qmp.sock --proc-root "$T"
	run -0 jq -r 'has("warning")' <<<"$output"
	assert_output false
}

@test "--adopt refuses a claimed, quarantined, drained, unconfigured or otherwise configured VF (exit 1, no change)" {
	run -1 --separate-stderr pick --profile "$P12" --vf $VF4 --claim vm-1 --adopt \
		--control-socket /run/a.sock
	grep -qF -- "VF $VF4 has no vGPU type configured" <<<"$stderr"
	run -1 --separate-stderr pick --profile "$P12" --vf $VF5 --claim vm-1 --adopt \
		--control-socket /run/a.sock
	grep -qF -- "VF $VF5 is configured with vGPU type 1161, not profile" <<<"$stderr"
	claim $VF5 other
	run -1 --separate-stderr pick --profile "$P24" --vf $VF5 --claim vm-1 --adopt \
		--control-socket /run/a.sock
	grep -qF -- "VF $VF5 is claimed by other" <<<"$stderr"
	_store_edit "$DATA/gpu/vf-claims.json" claims '.claims = []'
	quarantine $VF5
	run -1 --separate-stderr pick --profile "$P24" --vf $VF5 --claim vm-1 --adopt \
		--control-socket /run/a.sock
	grep -qF -- "VF $VF5 is quarantined" <<<"$stderr"
	vfstore --data-dir "$DATA" clear --vf $VF5 >/dev/null 2>&1
	vfstore --data-dir "$DATA" --sysfs-root "$SYSFS" drain --vf $VF5 \
		--reason test >/dev/null 2>&1
	run -1 --separate-stderr pick --profile "$P24" --vf $VF5 --claim vm-1 --adopt \
		--control-socket /run/a.sock
	grep -qF -- "VF $VF5 is drained" <<<"$stderr"
	run -0 jq -c .claims "$DATA/gpu/vf-claims.json"
	assert_output '[]'
	assert_equal "$(current $VF5)" 1161
}

@test "--adopt needs --vf and --claim, and excludes --configure" {
	run -64 --separate-stderr pick --profile "$P24" --claim vm-1 --adopt
	run -64 --separate-stderr pick --profile "$P24" --vf $VF5 --adopt
	run -64 --separate-stderr pick --profile "$P24" --vf $VF5 --claim vm-1 \
		--adopt --configure
}
