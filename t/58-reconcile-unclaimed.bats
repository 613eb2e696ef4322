#!/usr/bin/env bats
# 58-reconcile-unclaimed.bats - vfstore reconcile tells of every VF of
# the inventory that a process holds through VFIO with no claim (SPEC.md
# 8.1): a hook installed but not yet called, a VM started outside
# libvirt, a launcher that does not claim. Nothing watches such a guest.
# A fake /proc (fd links to /dev/vfio/GROUP) as in t/63. And how its
# releases judge an end: suspect.trust_ok, verification claims (8.2).

load helpers

VF4=0000:e3:00.4
VF5=0000:e3:00.5
VF6=0000:e3:00.6

setup() {
	vfs_setup
	DEV=$SYSFS/sys/bus/pci/devices
	mk_card "$SYSFS" 0000:e3:00.0
	for vf in $VF4 $VF5 $VF6; do
		mk_vf "$SYSFS" 0000:e3:00.0 $vf
	done
	vfstore --data-dir "$DATA" init >/dev/null 2>&1
	# VF4 is claimed (now: within the grace period); VF4 and VF5 are
	# held by processes; VF6 by none.
	jq -n --arg vf $VF4 --arg at "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
	    '{version:1, claims:[{vf_address:$vf, instance_id:"i-1",
	    claimed_at:$at}]}' >"$DATA/gpu/vf-claims.json"
	holds $VF4 81 1000 qemu-claimed
	holds $VF5 82 2000 qemu-system-x86
	mkdir -p "$T/proc/3000/fd"
	ln -s /dev/null "$T/proc/3000/fd/0"
}

# holds VF GROUP PID COMM: fake process PID (named COMM) holds VF's
# VFIO group GROUP.
holds() {
	mkdir -p "$T/groups/$2" "$T/proc/$3/fd"
	ln -sfn "../../../../../groups/$2" "$DEV/$1/iommu_group"
	ln -sfn "/dev/vfio/$2" "$T/proc/$3/fd/9"
	echo "$4" >"$T/proc/$3/comm"
}

vs() {
	vfstore --data-dir "$DATA" --sysfs-root "$SYSFS" "$@"
}

@test "reconcile --once: each VF in use with no claim is a warn line, and the gauge counts them (0 when none)" {
	run -0 --separate-stderr vs reconcile --once --proc-root "$T" \
	    --metrics-file "$T/r.prom"
	run -0 jq -c 'select(.msg == "VF in use with no claim: not watched") |
	    [.level, .vf, .pid, .comm]' <<<"$stderr"
	assert_output '["warn","0000:e3:00.5",2000,"qemu-system-x86"]'
	run -0 grep '^vfsentinel_unclaimed_vfs_in_use ' "$T/r.prom"
	assert_output 'vfsentinel_unclaimed_vfs_in_use 1'
	# Every --once run warns again; once claimed, nothing is told.
	run -0 --separate-stderr vs reconcile --once --proc-root "$T"
	assert_equal "$(grep -c 'not watched' <<<"$stderr")" 1
	rm "$T/proc/2000/fd/9"
	run -0 --separate-stderr vs reconcile --once --proc-root "$T" \
	    --metrics-file "$T/r.prom"
	refute_output --partial 'not watched'
	run -0 grep '^vfsentinel_unclaimed_vfs_in_use ' "$T/r.prom"
	assert_output 'vfsentinel_unclaimed_vfs_in_use 0'
}

@test "reconcile --interval: the warning once per VF per 5 minutes; the gauge every pass" {
	vfstore --data-dir "$DATA" --sysfs-root "$SYSFS" reconcile --interval 1 \
	    --proc-root "$T" --metrics-file "$T/r.prom" \
	    >/dev/null 2>"$T/err" &
	PID=$!
	wait_for grep -q '^vfsentinel_unclaimed_vfs_in_use 1' "$T/r.prom"
	# A second unclaimed VF appears: warned at the next pass.
	holds $VF6 83 3000 other-vmm
	wait_long grep -q '^vfsentinel_unclaimed_vfs_in_use 2' "$T/r.prom"
	wait_for grep -q "$VF6" "$T/err"
	rm -f "$T/r.prom"
	wait_for test -e "$T/r.prom"
	kill -TERM $PID
	wait $PID
	run -0 grep -c "not watched.*\"vf\":\"$VF5\"" "$T/err"
	assert_output 1
	run -0 grep -c "not watched.*\"vf\":\"$VF6\"" "$T/err"
	assert_output 1
}

# dead_claim VF INSTANCE [TOKEN]: a claim of VF made a minute ago whose
# VMM was killed (its control socket refuses connections), whose guest
# said OK (ok_at, and the marker in its console log); with TOKEN, a
# verification claim (verify_token).
dead_claim() {
	python3 -c 'import socket, sys
socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$T/$2.qmp"
	echo "VFSENTINEL-HEALTH: OK" >"$T/$2.console"
	jq --arg vf "$1" --arg i "$2" --arg q "$T/$2.qmp" \
	    --arg log "$T/$2.console" --arg tok "${3:-}" \
	    --arg at "$(date -u -d '-60 sec' +%Y-%m-%dT%H:%M:%SZ)" \
	    '.claims += [{vf_address:$vf, instance_id:$i, claimed_at:$at,
	    ok_at:$at, control_socket:$q, app_log:$log} +
	    (if $tok == "" then {} else {verify_token:$tok} end)]' \
	    "$DATA/gpu/vf-claims.json" >"$T/c"
	mv "$T/c" "$DATA/gpu/vf-claims.json"
}

# suspects: the instance ids of vf-suspect.json.
suspects() {
	jq -r '.suspects[]?.instance_id' "$DATA/gpu/vf-suspect.json" 2>/dev/null || true
}

@test "reconcile honours suspect.trust_ok (SPEC 8.2), and releases a stopped verification's claim without judging its end" {
	dead_claim $VF6 i-ok
	run -0 --separate-stderr vs reconcile --once --grace 0 --proc-root "$T"
	assert_equal "$(jq -r 'select(.instance_id == "i-ok") | "\(.released) \(.ended) \(.suspect)"' <<<"$output")" "true unclean false"
	assert_equal "$(suspects)" ""
	echo "suspect.trust_ok = false" >>"$VFSENTINEL_CONF"
	dead_claim $VF6 i-ok2
	run -0 --separate-stderr vs reconcile --once --grace 0 --proc-root "$T"
	assert_equal "$(jq -r 'select(.instance_id == "i-ok2") | "\(.released) \(.ended) \(.suspect)"' <<<"$output")" "true unclean true"
	assert_equal "$(suspects)" i-ok2
	# vfrecover killed mid-verification leaves verify-VF: released,
	# never judged (a second suspicion would quarantine the VF).
	dead_claim $VF6 "verify-$VF6" 0123456789abcdef0123456789abcdef
	run -0 --separate-stderr vs reconcile --once --grace 0 --proc-root "$T"
	assert_equal "$(jq -r "select(.instance_id == \"verify-$VF6\") | .released" <<<"$output")" true
	assert_equal "$(suspects)" i-ok2
	run -1 grep -q '"command":"quarantine"' "$DATA/gpu/audit.jsonl"
}

@test "reconcile, as root, follows no link to a claim's control socket (SPEC 8.3): such a claim is kept, uncertain" {
	dead_claim $VF6 i-link
	mv "$T/i-link.qmp" "$T/real.qmp"
	ln -s "$T/real.qmp" "$T/i-link.qmp"
	sum=$(sha "$DATA/gpu/vf-claims.json")
	run -0 --separate-stderr vs reconcile --once --grace 0 --proc-root "$T"
	assert_equal "$(jq -c 'select(.instance_id == "i-link") | [.liveness, .released, .reason]' <<<"$output")" \
	    '["uncertain",false,"control socket path has a link (not followed)"]'
	assert_equal "$(sha "$DATA/gpu/vf-claims.json")" "$sum"
	# The socket itself, named without a link: gone, released.
	rm "$T/i-link.qmp"
	mv "$T/real.qmp" "$T/i-link.qmp"
	run -0 --separate-stderr vs reconcile --once --grace 0 --proc-root "$T"
	assert_equal "$(jq -c 'select(.instance_id == "i-link") | [.liveness, .released]' <<<"$output")" '["gone",true]'
}
