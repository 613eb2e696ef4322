#!/usr/bin/env bats
# 89-libvirt-noharm.bats - SPEC.md 8.1 under a real libvirtd on a stock
# Debian libvirt host (t/lib/stock.bash: libvirt's defaults, QEMU as
# libvirt-qemu, virtlogd, the store made by `vfstore init --owner
# vfsentinel`, the hook in qemu.d): vfsentinel's own trouble (a typo in
# its configuration, an unavailable store, a crash of the hook's work)
# refuses the start of a domain with one of its VFs and nothing else. A
# libvirtd restart, which runs `reconnect begin` for every running
# domain and kills a domain whose hook fails there, keeps every domain,
# GPU or not; a failed `release end` is finished by vfstore reconcile.
# The domains are kernel-less TCG guests (firmware only): what is judged
# is libvirt's, not the guest's.

load helpers
load lib/stock
load lib/libvirt

PLAIN_UUID=aaaaaaaa-1111-2222-3333-000000000001
GPU_UUID=aaaaaaaa-1111-2222-3333-000000000002

setup_file() {
	stock_host noguest
	cp "$W/etc/vfsentinel.conf" "$W/etc/good.conf"
	VFSENTINEL_CONF=$W/etc/vfsentinel.conf lv_hook "$W/bin/libvirt-hook"
	lv_start
}

teardown_file() {
	stock_teardown_file
}

setup() {
	stock_setup
	: >"$LV/calls"
}

# dom_xml NAME UUID [VF]: a kernel-less TCG domain, vfsentinel's VF in
# its metadata when VF is given.
dom_xml() {
	local meta=""
	[ -z "${3:-}" ] || meta="<v:vgpu xmlns:v='$NS' vf='$3'/>"
	cat <<-EOF
	<domain type='qemu'>
	  <name>$1</name>
	  <uuid>$2</uuid>
	  <metadata>$meta</metadata>
	  <memory unit='MiB'>96</memory>
	  <os><type arch='x86_64' machine='pc'>hvm</type></os>
	  <devices><serial type='pty'/></devices>
	</domain>
	EOF
}

# start NAME UUID [VF]: virsh create of dom_xml's domain.
start() {
	dom_xml "$@" >"$T/$1.xml"
	lvsh create "$T/$1.xml"
}

# restart_libvirtd: libvirtd stopped and started again (what a package
# upgrade does); waits for its reconnect of each running domain.
restart_libvirtd() {
	local d
	: >"$LV/calls"
	lv_stop
	lv_start
	for d; do
		wait_long grep -q "^$d reconnect begin rc=" "$LV/calls"
	done
}

# ended_by_daemon NAME: libvirt's log of NAME says libvirtd shut it down.
ended_by_daemon() {
	grep -q 'shutting down, reason=daemon' "$LV/log/qemu/$1.log"
}

bad_conf() {
	cp "$W/etc/good.conf" "$W/etc/vfsentinel.conf"
	echo "$1" >>"$W/etc/vfsentinel.conf"
}

good_conf() {
	cp "$W/etc/good.conf" "$W/etc/vfsentinel.conf"
}

@test "a bad configuration: a libvirtd restart keeps every running domain; a domain without a VF starts, one with a VF is refused with the message" {
	good_conf
	run -0 start plain $PLAIN_UUID
	run -0 start gpu $GPU_UUID $VF
	assert_equal "$(claims)" $GPU_UUID
	# A bad value of a key the hook reads: the worst a typo can do.
	bad_conf "libvirt.lock_timeout = soon"
	restart_libvirtd plain gpu
	run -0 cat "$LV/calls"
	assert_line "plain reconnect begin rc=0"
	assert_line "gpu reconnect begin rc=0"
	assert_equal "$(lvsh domstate plain)" running
	assert_equal "$(lvsh domstate gpu)" running
	run -1 ended_by_daemon plain
	run -1 ended_by_daemon gpu
	# A new domain without a VF starts; one with a VF is refused.
	run -0 start plain2 aaaaaaaa-1111-2222-3333-000000000003
	run -1 start gpu2 aaaaaaaa-1111-2222-3333-000000000004 $VF5
	assert_output --partial "vfsentinel: cannot load $W/etc/vfsentinel.conf:5: invalid value (expected a whole number from 0 to 3600): libvirt.lock_timeout; starts of domains with vGPU VFs are refused until it is fixed (check it with vfstore config)"
	# A typo in a key only the sentinel reads refuses nothing.
	bad_conf "sentinel.intreval = 5"
	run -0 start gpu2 aaaaaaaa-1111-2222-3333-000000000004 $VF5
	run -0 lvsh destroy gpu2
	run -0 lvsh destroy plain2
	good_conf
}

@test "a release end that failed on a bad configuration leaves the claim to vfstore reconcile, which releases it once fixed" {
	bad_conf "libvirt.deconfigure = yes"
	run -0 lvsh destroy gpu
	wait_long grep -q "^gpu release end rc=0" "$LV/calls"
	assert_equal "$(claims)" $GPU_UUID
	good_conf
	run -0 vfs reconcile --once --grace 0
	run -0 released $GPU_UUID
}

@test "a crash of the hook's work or an unavailable store: a libvirtd restart keeps every domain, only a VF domain's start is refused" {
	good_conf
	run -0 start gpu $GPU_UUID $VF
	# The hook's work dies of SIGSEGV as it opens the claims.
	cat >"$W/bin/crashing-hook" <<-EOF
	#!/bin/sh
	LD_PRELOAD='$(fault_env)' CRASH_MATCH=vf-claims.json ASAN_OPTIONS=handle_segv=0 exec '$W/bin/libvirt-hook' "\$@"
	EOF
	chmod 755 "$W/bin/crashing-hook"
	VFSENTINEL_CONF=$W/etc/vfsentinel.conf lv_hook "$W/bin/crashing-hook"
	restart_libvirtd plain gpu
	run -0 cat "$LV/calls"
	assert_line "plain reconnect begin rc=0"
	assert_line "gpu reconnect begin rc=0"
	run -0 grep -c "the phase's work died" "$LV/hook.log"
	assert_equal "$(lvsh domstate plain)" running
	assert_equal "$(lvsh domstate gpu)" running
	run -1 start gpu2 aaaaaaaa-1111-2222-3333-000000000004 $VF5
	assert_output --partial "vfsentinel: internal error in libvirt-hook; see journalctl -t libvirt-hook"
	run -0 start plain2 aaaaaaaa-1111-2222-3333-000000000003
	run -0 lvsh destroy plain2
	VFSENTINEL_CONF=$W/etc/vfsentinel.conf lv_hook "$W/bin/libvirt-hook"
	# An unavailable store (as root reads it: not JSON).
	cp "$W/data/gpu/vf-health.json" "$T/health" 2>/dev/null || :
	echo garbage >"$W/data/gpu/vf-health.json"
	restart_libvirtd plain gpu
	assert_equal "$(lvsh domstate plain)" running
	assert_equal "$(lvsh domstate gpu)" running
	run -1 start gpu2 aaaaaaaa-1111-2222-3333-000000000004 $VF5
	assert_output --partial "vfsentinel: the VF health state is unavailable"
	run -0 start plain2 aaaaaaaa-1111-2222-3333-000000000003
	if [ -s "$T/health" ]; then
		cp "$T/health" "$W/data/gpu/vf-health.json"
	else
		rm -f "$W/data/gpu/vf-health.json"
	fi
	for d in plain plain2 gpu; do
		run -0 lvsh destroy $d
	done
	run -1 ended_by_daemon plain
}
