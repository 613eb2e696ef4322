#!/usr/bin/env bats
# 99-libvirt-suspect.bats - how a real guest's VM ended decides a
# suspicion (SPEC.md 7.3), on the stock libvirt host of
# t/94-libvirt-stock.bats (lib/stock.bash: libvirt's defaults, virtlogd,
# the sentinel's own run script as vfsentinel): Debian's kernel on one
# VF; a guest that powers itself off before its OK is no suspect
# (reason=shutdown), a destroy before its OK is one (reason=destroyed),
# a later guest's console OK, read by the sentinel, ends it, a destroy
# after an OK is none, and a kill -9 of QEMU while it boots is one
# (reason=crashed). Its own libvirtd, so it runs beside
# t/94-libvirt-stock.bats.

load helpers
load lib/stock

setup_file() {
	stock_setup_file
}

teardown_file() {
	stock_teardown_file
}

setup() {
	stock_setup
}

@test "stock libvirt: a real guest that powers itself off before its OK is no suspect; a destroy before its OK is, until a later guest's OK; a destroy after the OK is not; kill -9 is" {
	local logged="<serial type='pty'><log file='/var/log/libvirt/qemu/LOG' append='off'/></serial>"
	local id1=11111111-2222-3333-4444-000000000011
	local id2=11111111-2222-3333-4444-000000000012
	local id3=11111111-2222-3333-4444-000000000013
	local id4=11111111-2222-3333-4444-000000000014
	printf '%s\n' "3,1,1,-;nothing here" >"$T/kmsg.rec"
	# The guest's init powers off after its script: reason=shutdown.
	echo "echo 'guest: bye'" >"$T/bye.sh"
	guest_xml p1 $id1 "$T/bye.sh" "${logged/LOG/p1-console.log}" $VF5 \
	    >"$T/p1.xml"
	lvsh create "$T/p1.xml"
	wait_secs "$RG_BOOT_S" released $id1
	run -0 grep -h 'shutting down, reason=' "$LV/log/qemu/p1.log"
	assert_output --partial 'reason=shutdown'
	assert_equal "$(suspect_of $VF5)" ""
	# Destroyed while it boots, before any OK: reason=destroyed.
	echo 'sleep 600' >"$T/sleep.sh"
	guest_xml d1 $id2 "$T/sleep.sh" "${logged/LOG/d1-console.log}" $VF5 \
	    >"$T/d1.xml"
	lvsh create "$T/d1.xml"
	lvsh destroy d1
	wait_secs 30 released $id2
	assert_equal "$(suspect_of $VF5)" "libvirt-hook: reason=destroyed"
	# The next guest on it says OK on its console (as vsock-answer's
	# marker does): the sentinel reads it as vfsentinel, apply records
	# ok_at, the suspicion ends; destroyed after its OK: no suspect.
	echo "echo '2026/12/07 10:00:00 [guest-agent] HYPEMAN-GPU-INIT-OK ts=2026-12-07T10:00:00.000000001Z'; sleep 600" \
	    >"$T/ok.sh"
	guest_xml o1 $id3 "$T/ok.sh" "${logged/LOG/o1-console.log}" $VF5 \
	    >"$T/o1.xml"
	lvsh create "$T/o1.xml"
	wait_secs "$RG_BOOT_S" ok_recorded $id3
	assert_equal "$(suspect_of $VF5)" ""
	lvsh destroy o1
	wait_secs 30 released $id3
	assert_equal "$(suspect_of $VF5)" ""
	# kill -9 of QEMU while its guest boots: reason=crashed, suspect.
	guest_xml k1 $id4 "$T/sleep.sh" "${logged/LOG/k1-console.log}" $VF5 \
	    >"$T/k1.xml"
	lvsh create "$T/k1.xml"
	kill -KILL "$(cat "$LV/run/qemu/k1.pid")"
	wait_secs 30 released $id4
	assert_equal "$(suspect_of $VF5)" "libvirt-hook: reason=crashed"
}
