#!/usr/bin/env bats
# 88-libvirt-verify.bats - verification as production runs it (SPEC.md
# 8.2): the stock libvirt host of t/94-libvirt-stock.bats (lib/stock:
# libvirt's defaults, QEMU as libvirt-qemu, virtlogd, the hook in qemu.d,
# the sentinel's run script as vfsentinel), plus the vfsentinel-verify
# service's own run script with the shipped libvirt-verify and a
# template booting Debian's kernel (suspects.md's recipe, with a kernel
# and initramfs in place of a disk image). A tenant's QEMU killed with
# kill -9 while it boots makes its VF suspect; the service verifies it:
# a guest that says OK clears it (the VF is offered again), a guest that
# prints the NVRM line quarantines it, a guest that says nothing times
# out and quarantines it; each time the verification domain is gone and
# its claim released. Then the figure of 7.3: tenants who boot on a VF
# wedged by kill -9 during boot: 0. Its own libvirtd, so it runs beside
# t/94 and t/99.

load helpers
load lib/stock

P12='NVIDIA L40S-12Q'
VNAME=vfsentinel-verify-0000-e3-00-4
OKLINE="echo '2026/12/07 10:00:00 [guest-agent] HYPEMAN-GPU-INIT-OK ts=2026-12-07T10:00:00.000000001Z'"

setup_file() {
	stock_setup_file
	# The shipped verify command, its template, and the verify service
	# (its own run script) under the same runsvdir as the sentinel.
	mkdir -p "$W/share"
	install -m 755 "$VFS_ROOT/integrations/libvirt/libvirt-verify" \
	    "$W/share/libvirt-verify"
	verify_template >"$W/etc/verify.xml"
	cat >>"$W/etc/vfsentinel.conf" <<-EOF
	recovery.verify_command = $W/share/libvirt-verify
	recovery.verify_domain_xml = $W/etc/verify.xml
	recovery.verify_wait = 150
	recovery.step_timeout = 180
	suspect.verify_interval = 1
	EOF
	cp -R "$VFS_ROOT/sv/vfsentinel-verify" "$W/sv-verify"
	rm -rf "$W/sv-verify/log"
	echo "$W/bin:/usr/bin:/bin" >"$W/sv-verify/env/PATH"
	echo "$W/etc/vfsentinel.conf" >"$W/sv-verify/env/VFSENTINEL_CONF"
	ln -s "$W/sv-verify" "$W/service/vfsentinel-verify"
}

teardown_file() {
	stock_teardown_file
}

setup() {
	stock_setup
}

# verify_template: the verification domain's template, as suspects.md
# gives it, booting Debian's kernel with the image $LV/lib/images/verify.gz
# (verify_image) and its console logged.
verify_template() {
	cat <<-EOF
	<domain type='qemu'>
	  <name>verify-template</name>
	  <memory unit='MiB'>256</memory>
	  <os>
	    <type arch='x86_64' machine='q35'>hvm</type>
	    <kernel>/var/lib/libvirt/images/vmlinuz</kernel>
	    <initrd>/var/lib/libvirt/images/verify.gz</initrd>
	    <cmdline>console=ttyS0 panic=-1 quiet</cmdline>
	  </os>
	  <devices>
	    <serial type='pty'>
	      <log file='/var/log/libvirt/qemu/vfsentinel-verify-console.log' append='off'/>
	    </serial>
	  </devices>
	</domain>
	EOF
}

# verify_image SCRIPT: the verification guest's initramfs runs SCRIPT.
verify_image() {
	echo "$1" >"$T/verify.sh"
	printf '%s\n' "3,1,1,-;nothing here" >"$T/kmsg.rec"
	sh "$VFS_ROOT/t/lib/guest-initramfs.sh" scenario "$T/verify.part.gz" \
	    "$T/verify.sh" "$T/kmsg.rec=/rec/kmsg"
	cat "$W/base.gz" "$T/verify.part.gz" >"$LV/lib/images/verify.gz"
}

# wedge NAME UUID: a tenant on $VF (profile 12Q) whose QEMU is killed
# with kill -9 while it boots; waits for its release; its VF suspect.
wedge() {
	local logged="<serial type='pty'><log file='/var/log/libvirt/qemu/$1-console.log' append='off'/></serial>"
	echo 'sleep 600' >"$T/sleep.sh"
	printf '%s\n' "3,1,1,-;nothing here" >"$T/kmsg.rec"
	guest_xml "$1" "$2" "$T/sleep.sh" "$logged" |
	    sed "s|vf='$VF'/>|vf='$VF' profile='$P12'/>|" >"$T/$1.xml"
	lvsh create "$T/$1.xml"
	kill -KILL "$(cat "$LV/run/qemu/$1.pid")"
	wait_secs 30 released "$2"
}

# verifications: the audit log's verify lines, "VF RESULT" each.
verifications() {
	jq -r 'select(.command == "verify") | "\(.vf) \(.result)"' \
	    "$W/data/gpu/audit.jsonl" 2>/dev/null
}

# exits: vfrecover's exit of each verification, from the service's log.
exits() {
	grep -ho '"vf_address":"[^"]*","result":"[a-z]*","exit":-*[0-9]*' \
	    "$W/sentinel.log" | sed 's/.*"exit"://'
}

verified() {
	[ "$(verifications | wc -l)" -ge "$1" ]
}

# after_verification N: the Nth verification ended; its domain is gone
# and its claim released.
after_verification() {
	wait_secs "$RG_BOOT_S" verified "$1"
	run -0 lvsh list --all --name
	refute_output --partial "$VNAME"
	run -0 claims
	refute_output --partial "verify-$VF"
	echo "# verification $1: $(verifications | sed -n "$1p")" >&3
}

@test "verify service, stock libvirt: a guest's OK clears the suspicion; the VF is offered again" {
	verify_image "$OKLINE; sleep 600"
	n=$(verifications | wc -l)
	start=$SECONDS
	wedge k1 11111111-2222-3333-4444-000000000101
	assert_equal "$(suspect_of $VF)" "libvirt-hook: reason=crashed"
	# The verification domain takes the claim over: the profile's type.
	wait_secs 60 sh -c "jq -e '.claims[] | select(.instance_id == \"verify-$VF\") |
	    .domain_uuid' '$W/data/gpu/vf-claims.json' >/dev/null"
	assert_equal "$(cat "$W/sysfs/sys/bus/pci/devices/$VF/nvidia/current_vgpu_type")" 1160
	after_verification $((n + 1))
	echo "# a verification that passes, from the kill: $((SECONDS - start)) s" >&3
	assert_equal "$(verifications | sed -n "$((n + 1))p")" "$VF pass"
	assert_equal "$(exits | sed -n "$((n + 1))p")" 0
	assert_equal "$(suspect_of $VF)" ""
	run ! quarantined
	assert_equal "$(cat "$W/sysfs/sys/bus/pci/devices/$VF/nvidia/current_vgpu_type")" 0
	run -0 "$W/bin/vfpick" -c "$W/etc/vfsentinel.conf" --profile "$P12" --vf $VF
	assert_equal "$(jq -r .vf_address <<<"$output")" $VF
}

@test "verify service, stock libvirt: a guest that prints the NVRM line quarantines the VF" {
	verify_image "echo '<3>$WEDGED' >/dev/kmsg; sleep 600"
	n=$(verifications | wc -l)
	wedge k2 11111111-2222-3333-4444-000000000102
	after_verification $((n + 1))
	assert_equal "$(verifications | sed -n "$((n + 1))p")" "$VF fail"
	# libvirt-verify saw the quarantine: exit 1, not a timeout.
	assert_equal "$(exits | sed -n "$((n + 1))p")" 1
	quarantined
	assert_equal "$(suspect_of $VF)" ""
	vfs clear --vf $VF >/dev/null
}

@test "verify service, stock libvirt: a guest that says nothing times out (recovery.verify_wait) and quarantines" {
	verify_image 'sleep 600'
	sed -i 's/^recovery.verify_wait = 150$/recovery.verify_wait = 12/' \
	    "$W/etc/vfsentinel.conf"
	n=$(verifications | wc -l)
	wedge k3 11111111-2222-3333-4444-000000000103
	start=$SECONDS
	after_verification $((n + 1))
	sed -i 's/^recovery.verify_wait = 12$/recovery.verify_wait = 150/' \
	    "$W/etc/vfsentinel.conf"
	assert_equal "$(verifications | sed -n "$((n + 1))p")" "$VF fail"
	assert_equal "$(exits | sed -n "$((n + 1))p")" 75
	[ $((SECONDS - start)) -ge 11 ]
	quarantined
	vfs clear --vf $VF >/dev/null
}

@test "verify service, stock libvirt: tenants who boot on a VF wedged by kill -9 during boot: 0" {
	local boots=0 i
	# The VF is wedged: every guest on it prints the NVRM line.
	verify_image "echo '<3>$WEDGED' >/dev/kmsg; sleep 600"
	n=$(verifications | wc -l)
	wedge k4 11111111-2222-3333-4444-000000000104
	echo 'sleep 600' >"$T/sleep.sh"
	guest_xml tenant 11111111-2222-3333-4444-000000000105 "$T/sleep.sh" "" |
	    sed "s|vf='$VF'/>|vf='$VF' profile='$P12'/>|" >"$T/tenant.xml"
	# A tenant pinned to the VF tries while it is suspect or verified,
	# and again after the verdict.
	for i in 1 2; do
		if lvsh create "$T/tenant.xml" >"$T/create.out" 2>&1; then
			boots=$((boots + 1))
			lvsh destroy tenant >/dev/null 2>&1
		fi
		[ "$i" = 2 ] || after_verification $((n + 1))
	done
	echo "# tenants who boot on the wedged VF, with libvirt-verify: $boots" >&3
	assert_equal "$boots" 0
	run -0 cat "$T/create.out"
	assert_output --partial "vfsentinel: VF $VF is quarantined"
	quarantined
	vfs clear --vf $VF >/dev/null
}
