#!/usr/bin/env bats
# vfstore reconcile (SPEC 4.2) with a real QEMU as the VMM (4.4): alive,
# killed with SIGKILL (its socket file stays), quit cleanly (no file);
# the grace window; a VF held open through VFIO (a fake /proc and
# /dev/vfio links, as for release --deconfigure); a claim without a
# control socket; a socket path that is a regular file; --dry-run; store
# unavailable; vfpick --claim racing reconcile; --interval with SIGTERM;
# the metrics textfile. And vfstore deconfigure --vf.

load helpers
load lib/sentinel
load lib/placement

OLD='2026-08-20T15:00:00Z'
VF4=0000:e3:00.4
VF5=0000:e3:00.5
VF6=0000:e3:00.6

setup() {
	need_tool qemu-system-x86_64 socat
	vfs_setup
	sentinel_setup
	CLAIMS=$DATA/gpu/vf-claims.json
	DEV=$SYSFS/sys/bus/pci/devices
	PIDS=
}

teardown() {
	kill_pids
	sentinel_teardown
}

vs() {
	vfstore --data-dir "$DATA" --sysfs-root "$SYSFS" "$@"
}

# ledger TARGET_LINES...: writes the claims ledger from target() lines.
ledger() {
	printf '%s\n' "$@" | jq -s '{version:1, claims:.}' >"$CLAIMS"
}

# dirty VF [TYPE]: the VF carries a vGPU type (the launcher wrote it).
dirty() {
	echo "${2:-1160}" >"$DEV/$1/nvidia/current_vgpu_type"
}

vgpu_type() {
	cat "$DEV/$1/nvidia/current_vgpu_type"
}

# claimed: the instance ids in the ledger, in its order.
claimed() {
	jq -r '[.claims[].instance_id] | join(" ")' "$CLAIMS"
}

# line ID: the output line of instance ID in $output (stdout).
line() {
	jq -c --arg id "$1" 'select(.instance_id == $id)' <<<"$output"
}

# field ID KEY: one field of instance ID's line.
field() {
	jq -r --arg id "$1" --arg k "$2" 'select(.instance_id == $id) | .[$k]' \
	    <<<"$output"
}

# vfio_group VF GROUP: the VF's iommu_group link names GROUP.
vfio_group() {
	mkdir -p "$T/groups/$2"
	ln -sfn "../../../../../groups/$2" "$DEV/$1/iommu_group"
}

# holder PID LINK: a fake process PID under $T/proc with fd 9 -> LINK.
holder() {
	mkdir -p "$T/proc/$1/fd"
	ln -sfn "$2" "$T/proc/$1/fd/9"
}

now_ts() {
	date -u +%Y-%m-%dT%H:%M:%SZ
}

@test "reconcile: a live QEMU keeps its claim; SIGKILLed and cleanly quit ones are released and deconfigured" {
	qemu_start vm1
	qemu_start vm2
	qemu_start vm3
	# vm1's monitor is held by another client, as libvirt holds it.
	qmp_hold "$G/vm1.qmp"
	ledger "$(target $VF4 i-1 "$OLD" "" "$G/vm1.qmp")" \
	    "$(target $VF5 i-2 "$OLD" "" "$G/vm2.qmp")" \
	    "$(target $VF6 i-3 "$OLD" "" "$G/vm3.qmp")"
	dirty $VF4
	dirty $VF5
	dirty $VF6
	qemu_kill vm2
	[ -S "$G/vm2.qmp" ]
	qemu_quit vm3
	run -0 --separate-stderr vs reconcile
	assert_equal "${#lines[@]}" 3
	assert_equal "$(line i-1)" '{"instance_id":"i-1","vf_address":"0000:e3:00.4","liveness":"alive","released":false,"reason":"control socket is listening"}'
	assert_equal "$(line i-2)" '{"instance_id":"i-2","vf_address":"0000:e3:00.5","liveness":"gone","released":true,"reason":"control socket refused connections","deconfigured":true,"ended":"unclean","suspect":false}'
	assert_equal "$(line i-3)" '{"instance_id":"i-3","vf_address":"0000:e3:00.6","liveness":"gone","released":true,"reason":"control socket does not exist","deconfigured":true,"ended":"unknown","suspect":false}'
	assert_equal "$(claimed)" i-1
	assert_equal "$(vgpu_type $VF4)" 1160
	assert_equal "$(vgpu_type $VF5)" 0
	assert_equal "$(vgpu_type $VF6)" 0
	# Releases are logged at info with the VF and the instance.
	run -0 jq -r 'select(.msg == "released the claim of a gone VMM") |
	    "\(.level) \(.vf) \(.instance_id)"' <<<"$stderr"
	assert_output "info $VF5 i-2
info $VF6 i-3"
	# A second pass finds nothing more to release.
	run -0 --separate-stderr vs reconcile
	assert_output '{"instance_id":"i-1","vf_address":"0000:e3:00.4","liveness":"alive","released":false,"reason":"control socket is listening"}'
	# The live VMM was never connected to (it is listed as listening):
	# both places of its accept queue are still free.
	run -0 accept_queue_room "$G/vm1.qmp"
	assert_output 2
}

@test "reconcile: claims younger than the grace period are left alone (--grace, reconcile.grace)" {
	qemu_start vm1
	ledger "$(target $VF4 i-1 "$(now_ts)" "" "$G/vm1.qmp")" \
	    "$(target $VF5 i-2 "$OLD" "" "$G/nothing.qmp")"
	qemu_kill vm1
	run -0 --separate-stderr vs reconcile
	# Only the old claim is examined (one line); the fresh one is kept.
	assert_output '{"instance_id":"i-2","vf_address":"0000:e3:00.5","liveness":"gone","released":true,"reason":"control socket does not exist","deconfigured":true,"ended":"unknown","suspect":false}'
	assert_equal "$(claimed)" i-1
	echo 'reconcile.grace = 3600' >"$VFSENTINEL_CONF"
	run -64 vs reconcile --grace 1000000000
	assert_output --partial 'invalid value "1000000000" (expected 0..86400)'
	run -0 --separate-stderr vs --log-level debug reconcile
	assert_output ''
	assert_equal "$(claimed)" i-1
	run -0 jq -r 'select(.instance_id == "i-1") | .msg' <<<"$stderr"
	assert_output 'claim within the grace period; not judged'
	echo 'reconcile.grace = 0' >"$VFSENTINEL_CONF"
	run -0 --separate-stderr vs reconcile
	assert_equal "$(field i-1 released) $(field i-1 reason)" \
	    'true control socket refused connections'
	assert_equal "$(claimed)" ''
}

@test "reconcile: a VF held open through VFIO is alive whatever its socket says" {
	qemu_start vm1
	ledger "$(target $VF4 i-1 "$OLD" "" "$G/vm1.qmp")" \
	    "$(target $VF5 i-2 "$OLD" "" "")" \
	    "$(target $VF6 i-3 "$OLD" "" "")"
	dirty $VF4
	dirty $VF5
	vfio_group $VF4 87
	mkdir -p "$DEV/$VF5/vfio-dev/vfio3"
	holder 1234 /dev/vfio/87
	holder 77 /dev/vfio/devices/vfio3
	mkdir -p "$T/proc/5/fd"
	ln -s /dev/null "$T/proc/5/fd/0"
	qemu_kill vm1
	sum=$(sha "$CLAIMS")
	run -0 --separate-stderr vs reconcile --proc-root "$T"
	assert_equal "$(line i-1)" '{"instance_id":"i-1","vf_address":"0000:e3:00.4","liveness":"alive","released":false,"reason":"a process holds the VF'"'"'s VFIO device","pid":1234}'
	# A claim without a control socket is alive while its VF is held...
	assert_equal "$(line i-2)" '{"instance_id":"i-2","vf_address":"0000:e3:00.5","liveness":"alive","released":false,"reason":"a process holds the VF'"'"'s VFIO device","pid":77}'
	# ... and uncertain otherwise, logged at warn.
	assert_equal "$(line i-3)" '{"instance_id":"i-3","vf_address":"0000:e3:00.6","liveness":"uncertain","released":false,"reason":"no control socket in the claim"}'
	run -0 jq -r 'select(.instance_id == "i-3") | "\(.level) \(.msg)"' <<<"$stderr"
	assert_output 'warn VMM liveness uncertain; claim kept'
	assert_equal "$(sha "$CLAIMS")" "$sum"
	assert_equal "$(vgpu_type $VF4) $(vgpu_type $VF5)" '1160 1160'
	# The holder of the group goes: the dead VMM's claim is released.
	rm "$T/proc/1234/fd/9"
	run -0 --separate-stderr vs reconcile --proc-root "$T"
	assert_equal "$(field i-1 liveness) $(field i-1 released)" 'gone true'
	assert_equal "$(vgpu_type $VF4)" 0
	assert_equal "$(claimed)" 'i-2 i-3'
}

@test "reconcile: a /proc that cannot be scanned keeps every gone claim as uncertain" {
	ledger "$(target $VF4 i-1 "$OLD" "" "$G/nothing.qmp")"
	sum=$(sha "$CLAIMS")
	run -0 --separate-stderr vs reconcile --proc-root "$T/no-such-root"
	assert_output '{"instance_id":"i-1","vf_address":"0000:e3:00.4","liveness":"uncertain","released":false,"reason":"cannot scan /proc for VFIO holders"}'
	assert_equal "$(sha "$CLAIMS")" "$sum"
}

@test "reconcile: a control socket path that is a regular file is uncertain and kept" {
	: >"$G/file.qmp"
	ledger "$(target $VF4 i-1 "$OLD" "" "$G/file.qmp")"
	sum=$(sha "$CLAIMS")
	run -0 --separate-stderr vs reconcile --metrics-file "$T/m.prom"
	assert_output '{"instance_id":"i-1","vf_address":"0000:e3:00.4","liveness":"uncertain","released":false,"reason":"control socket path is not a socket"}'
	assert_equal "$(sha "$CLAIMS")" "$sum"
	run -0 grep '^hypeman_instances_vgpu_liveness_uncertain_total ' "$T/m.prom"
	assert_output 'hypeman_instances_vgpu_liveness_uncertain_total 1'
}

@test "reconcile --dry-run decides and prints, and changes nothing" {
	qemu_start vm1
	ledger "$(target $VF4 i-1 "$OLD" "" "$G/vm1.qmp")" \
	    "$(target $VF5 i-2 "$OLD" "" "")"
	dirty $VF4
	qemu_kill vm1
	sum=$(sha "$CLAIMS")
	run -0 --separate-stderr vs reconcile --dry-run
	assert_equal "$(line i-1)" '{"instance_id":"i-1","vf_address":"0000:e3:00.4","liveness":"gone","released":false,"reason":"control socket refused connections","dry_run":true}'
	assert_equal "$(sha "$CLAIMS")" "$sum"
	assert_equal "$(vgpu_type $VF4)" 1160
	run -0 jq -r '"\(.level) \(.msg)"' <<<"$stderr"
	assert_output 'info VMM gone; claim not released (dry run)
warn VMM liveness uncertain; claim kept'
}

@test "reconcile: a lock held too long releases nothing and exits 75" {
	ledger "$(target $VF4 i-1 "$OLD" "" "$G/none.qmp")"
	dirty $VF4
	sum=$(sha "$CLAIMS")
	run -75 --separate-stderr flock "$DATA/gpu/lock" vfstore \
	    --data-dir "$DATA" --sysfs-root "$SYSFS" --lock-timeout 1 reconcile
	assert_output '{"instance_id":"i-1","vf_address":"0000:e3:00.4","liveness":"gone","released":false,"reason":"control socket does not exist"}'
	run -0 jq -r 'select(.level == "error") | .msg' <<<"$stderr"
	assert_output 'lock wait timed out; nothing released'
	assert_equal "$(sha "$CLAIMS")" "$sum"
	assert_equal "$(vgpu_type $VF4)" 1160
}

@test "reconcile: store unavailable releases nothing and exits 69 (--once)" {
	qemu_start vm1
	ledger "$(target $VF4 i-1 "$OLD" "" "$G/vm1.qmp")"
	dirty $VF4
	qemu_kill vm1
	printf '{"version":2,"claims":[]}' >"$CLAIMS"
	sum=$(sha "$CLAIMS")
	run -69 --separate-stderr vs reconcile
	assert_output ''
	assert_equal "$(jq -r .msg <<<"$stderr")" \
	    'VF claims unavailable; nothing released'
	assert_equal "$(sha "$CLAIMS")" "$sum"
	mv "$DATA/gpu" "$DATA/gone"
	run -69 --separate-stderr vs reconcile
	assert_output ''
	run -0 jq -r .error <<<"$stderr"
	assert_output --partial 'create it with vfstore init'
	[ ! -e "$DATA/gpu" ]
	assert_equal "$(vgpu_type $VF4)" 1160
}

@test "reconcile --interval: an unavailable store is logged and the next pass releases; SIGTERM exits 0" {
	need_tool promtool prometheus-node-exporter
	qemu_start vm1
	qemu_start vm2
	ledger "$(target $VF4 i-1 "$OLD" "" "$G/vm1.qmp")" \
	    "$(target $VF5 i-2 "$OLD" "" "$G/vm2.qmp")" \
	    "$(target $VF6 i-3 "$OLD" "" "$G/file.qmp")"
	: >"$G/file.qmp"
	good=$(cat "$CLAIMS")
	printf 'not json' >"$CLAIMS"
	mkdir -p "$T/prom"
	vfstore --data-dir "$DATA" --sysfs-root "$SYSFS" reconcile \
	    --interval 1 --metrics-file "$T/prom/rec.prom" \
	    >"$T/out" 2>"$T/err" 3>&- &
	pid=$!
	PIDS="$PIDS $pid"
	wait_for grep -q 'VF claims unavailable; nothing released' "$T/err"
	kill -0 "$pid"
	printf '%s\n' "$good" >"$CLAIMS"
	qemu_kill vm2
	wait_for grep -q '"instance_id":"i-2".*"released":true' "$T/out"
	assert_equal "$(claimed)" 'i-1 i-3'
	qemu_kill vm1
	wait_for grep -q '"instance_id":"i-1".*"released":true' "$T/out"
	wait_for grep -q '^vfsentinel_claims_released_total 2$' \
	    "$T/prom/rec.prom"
	# Each pass that examined i-3 counted it as uncertain.
	run -0 awk '/^hypeman_instances_vgpu_liveness_uncertain_total / { print ($2 >= 2) }' \
	    "$T/prom/rec.prom"
	assert_output 1
	kill -TERM "$pid"
	t0=$(date +%s%N)
	rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 0
	[ $((($(date +%s%N) - t0) / 1000000)) -lt "$(load_scaled 2500)" ]
	assert_equal "$(claimed)" i-3
	# The textfile is a valid exposition that node_exporter reads.
	run -0 "$VFS_TOOLS/promtool" check metrics <"$T/prom/rec.prom"
	grep -q '^# TYPE vfsentinel_claims_released_total counter$' \
	    "$T/prom/rec.prom"
	grep -q '^# HELP hypeman_instances_vgpu_liveness_uncertain_total ' \
	    "$T/prom/rec.prom"
	run -0 ne_scrape "$T/prom"
	assert_line 'node_textfile_scrape_error 0'
	assert_line 'vfsentinel_claims_released_total 2'
	[ "$(ls -A "$T/prom")" = rec.prom ]
}

@test "reconcile and vfpick --claim at once: no claim lost, no VF handed out twice" {
	# Two live VMs hold .4 and .5 for good; instances with dead VMMs
	# (a control socket nobody listens on) keep claiming the other two
	# VFs while reconcile --grace 0 releases them.
	ledger "$(target $VF4 live-1 "$OLD" "" "$CTL")" \
	    "$(target $VF5 live-2 "$OLD" "" "$CTL")"
	(
		while [ ! -e "$T/stop" ]; do
			vs reconcile --grace 0 || exit 1
		done
	) >"$T/rec" 2>"$T/rec.err" 3>&- &
	rec=$!
	PIDS="$PIDS $rec"
	picked=0
	for ((k = 0; k < 24; k++)); do
		for ((try = 0; try < 100; try++)); do
			if vfpick --data-dir "$DATA" --sysfs-root "$SYSFS" \
			    --profile 'NVIDIA L40S-12Q' --claim "dead-$k" \
			    --control-socket "$G/dead-$k" --configure \
			    >>"$T/picks" 2>>"$T/picks.err"; then
				picked=$((picked + 1))
				break
			fi
			sleep 0.05
		done
	done
	touch "$T/stop"
	rc=0
	wait "$rec" || rc=$?
	assert_equal "$rc" 0
	assert_equal "$picked" 24
	# The live claims were never touched, their VFs never handed out.
	run -0 jq -r '.claims[] | select(.instance_id | startswith("live")) |
	    "\(.instance_id) \(.vf_address)"' "$CLAIMS"
	assert_output "live-1 $VF4
live-2 $VF5"
	run -0 jq -r .vf_address "$T/picks"
	refute_line $VF4
	refute_line $VF5
	# Every claim vfpick made is in the ledger or was released by a
	# reconcile pass, once.
	run -0 jq -r 'select(.released) | .instance_id' "$T/rec"
	released=$output
	for ((k = 0; k < 24; k++)); do
		n=$(grep -cx "dead-$k" <<<"$released" || :)
		in=$(jq --arg id "dead-$k" '[.claims[] | select(.instance_id == $id)] | length' "$CLAIMS")
		assert_equal "dead-$k $((n + in))" "dead-$k 1"
	done
	run -0 vs check
	assert_output --partial '"status":"ok"'
}

@test "release --deconfigure and deconfigure refuse when /proc cannot be scanned" {
	ledger "$(target $VF4 i-1 "$OLD" "" "")"
	dirty $VF4
	dirty $VF6
	run -74 --separate-stderr vs release --instance i-1 --deconfigure \
	    --proc-root "$T/no-such-root"
	assert_equal "$(jq -r .msg <<<"$stderr")" \
	    'cannot scan for VFIO holders; not deconfigured'
	assert_equal "$(claimed)" i-1
	assert_equal "$(vgpu_type $VF4)" 1160
	run -74 --separate-stderr vs deconfigure --vf $VF6 \
	    --proc-root "$T/no-such-root"
	assert_equal "$(vgpu_type $VF6)" 1160
}

@test "deconfigure --vf resets an unclaimed dirty VF; refuses a claimed or held one" {
	ledger "$(target $VF4 i-1 "$OLD" "" "")"
	dirty $VF4
	dirty $VF5
	vfio_group $VF5 91
	holder 300 /dev/vfio/91
	mkdir -p "$T/proc/1/fd"
	dirty $VF6 1161
	run -0 --separate-stderr vs deconfigure --vf e3:00.6 --proc-root "$T"
	assert_output '{"vf_address":"0000:e3:00.6","deconfigured":true}'
	assert_equal "$(vgpu_type $VF6)" 0
	assert_equal "$(jq -r '"\(.level) \(.msg) \(.vf)"' <<<"$stderr")" \
	    "info deconfigured VF $VF6"
	# Claimed: refused, nothing written.
	run -1 --separate-stderr vs deconfigure --vf $VF4 --proc-root "$T"
	assert_output ''
	assert_equal "$(jq -r '"\(.msg) \(.instance_id)"' <<<"$stderr")" \
	    'VF is claimed; not deconfigured i-1'
	assert_equal "$(vgpu_type $VF4)" 1160
	# Held open through VFIO: refused, naming the holder.
	run -1 --separate-stderr vs deconfigure --vf $VF5 --proc-root "$T"
	assert_equal "$(jq -r '"\(.msg) \(.pid)"' <<<"$stderr")" \
	    'VF is held open; not deconfigured 300'
	assert_equal "$(vgpu_type $VF5)" 1160
	rm "$T/proc/300/fd/9"
	run -0 --separate-stderr vs deconfigure --vf $VF5 --proc-root "$T"
	assert_equal "$(vgpu_type $VF5)" 0
	# A VF this host does not have, and a missing --vf.
	run -65 --separate-stderr vs deconfigure --vf 0000:e9:00.4 --proc-root "$T"
	assert_equal "$(jq -r .msg <<<"$stderr")" \
	    'no such VF on this host; check the address'
	run -64 vs deconfigure
	assert_line 'vfstore: deconfigure: missing --vf'
	# Store unavailable: nothing written.
	dirty $VF6
	printf 'x' >"$CLAIMS"
	run -69 --separate-stderr vs deconfigure --vf $VF6 --proc-root "$T"
	assert_equal "$(vgpu_type $VF6)" 1160
}

# reconcile_blocked ARGS...: starts reconcile in the background while
# the test holds the store's exclusive lock: the decision (no lock) is
# made at once, the release phase waits for the lock. Then the caller
# changes the world and calls unblock.
reconcile_blocked() {
	flock "$DATA/gpu/lock" sh -c 'touch "$1/held"; while [ ! -e "$1/go" ]; do sleep 0.05; done' \
	    sh "$T" 3>&- &
	PIDS="$PIDS $!"
	wait_for test -e "$T/held"
	vfstore --data-dir "$DATA" --sysfs-root "$SYSFS" reconcile "$@" \
	    >"$T/out" 2>"$T/err" 3>&- &
	REC=$!
	# The decision needs no lock; the release phase opens the lock file
	# and waits for it.
	wait_long opened_lock "$REC"
}

# opened_lock PID: the process has the store's lock file open.
opened_lock() {
	find "/proc/$1/fd" -lname "$DATA/gpu/lock" 2>/dev/null | grep -q .
}

unblock() {
	touch "$T/go"
	rc=0
	wait "$REC" || rc=$?
	assert_equal "$rc" 0
	output=$(cat "$T/out")
}

@test "reconcile: a VM relaunched between the decision and the release keeps its claim" {
	qemu_start vm1
	ledger "$(target $VF4 i-1 "$OLD" "" "$G/vm1.qmp")"
	dirty $VF4
	qemu_kill vm1
	reconcile_blocked
	# The launcher starts a new VMM for the same claim meanwhile.
	rm -f "$G/vm1.qmp"
	qemu_start vm1
	unblock
	assert_output '{"instance_id":"i-1","vf_address":"0000:e3:00.4","liveness":"alive","released":false,"reason":"control socket is listening"}'
	assert_equal "$(claimed)" i-1
	assert_equal "$(vgpu_type $VF4)" 1160
}

@test "reconcile: a claim that changed, or whose VF was opened, before the release is kept" {
	ledger "$(target $VF4 i-1 "$OLD" "" "$G/none.qmp")" \
	    "$(target $VF5 i-2 "$OLD" "" "$G/none.qmp")" \
	    "$(target $VF6 i-3 "$OLD" "" "$G/none.qmp")"
	dirty $VF4
	dirty $VF5
	dirty $VF6
	vfio_group $VF6 55
	mkdir -p "$T/proc/1/fd"
	reconcile_blocked --proc-root "$T"
	# i-1 was released and claimed again (a new claimed_at); i-2 is gone
	# from the ledger; a process opened i-3's VF.
	ledger "$(target $VF4 i-1 "2026-08-21T00:00:00Z" "" "$G/none.qmp")" \
	    "$(target $VF6 i-3 "$OLD" "" "$G/none.qmp")"
	holder 900 /dev/vfio/55
	unblock
	assert_equal "$(field i-1 released) $(field i-1 reason)" \
	    'false the claim changed before it could be released'
	assert_equal "$(field i-2 released) $(field i-2 reason)" \
	    'false the claim changed before it could be released'
	assert_equal "$(field i-3 liveness) $(field i-3 released) $(field i-3 pid)" \
	    'alive false 900'
	assert_equal "$(claimed)" 'i-1 i-3'
	assert_equal "$(vgpu_type $VF4) $(vgpu_type $VF5) $(vgpu_type $VF6)" \
	    '1160 1160 1160'
}

@test "reconcile: usage errors exit 64; a full stdout exits 74; it runs within 16 MiB" {
	run -64 vs reconcile --once --interval 5
	assert_line 'vfstore: reconcile: --once and --interval exclude each other'
	run -64 vs reconcile --interval 0
	assert_line --partial 'vfstore: --interval: invalid value "0"'
	run -64 vs reconcile --vf $VF4
	assert_line 'vfstore: reconcile: unknown option or missing argument: --vf'
	ledger "$(target $VF4 i-1 "$OLD" "" "$G/none.qmp")"
	sum=$(sha "$CLAIMS")
	run -74 sh -c '"$@" >/dev/full' sh vfstore --data-dir "$DATA" \
	    reconcile --dry-run
	run -74 sh -c '"$@" >/dev/full' sh vfstore --data-dir "$DATA" \
	    reconcile --dry-run --interval 1
	assert_equal "$(sha "$CLAIMS")" "$sum"
	need_tool chpst
	local cap=()
	# A sanitizer build cannot run under chpst -m (t/13-memory.bats).
	[ -n "${VFS_SAN:-}" ] || cap=(chpst -m 16777216)
	run -0 --separate-stderr "${cap[@]}" vfstore --data-dir "$DATA" \
	    --sysfs-root "$SYSFS" reconcile
	assert_output --partial '"released":true'
}

@test "reconcile: a gone claim whose claimed_at is no timestamp is uncertain and kept" {
	# claimed_at is opaque to the store (an upstream launcher may write
	# anything); without a time the grace period cannot be applied.
	ledger "$(target $VF4 i-1 "not a time" "" "$G/none.qmp")" \
	    "$(target $VF5 i-2 "not a time" "" "$CTL")"
	sum=$(sha "$CLAIMS")
	run -0 --separate-stderr vs reconcile --grace 0
	assert_equal "$(line i-1)" '{"instance_id":"i-1","vf_address":"0000:e3:00.4","liveness":"uncertain","released":false,"reason":"claimed_at is not a timestamp"}'
	assert_equal "$(field i-2 liveness)" alive
	assert_equal "$(sha "$CLAIMS")" "$sum"
}

@test "reconcile: a ledger that cannot be saved releases nothing and exits 74" {
	ledger "$(target $VF4 i-1 "$OLD" "" "$G/none.qmp")"
	dirty $VF4
	sum=$(sha "$CLAIMS")
	run -74 --separate-stderr env LD_PRELOAD="$(fault_env)" \
	    FAIL_MATCH=vf-claims.json.tmp FAIL_fsync=1 vfstore \
	    --data-dir "$DATA" --sysfs-root "$SYSFS" reconcile
	assert_output '{"instance_id":"i-1","vf_address":"0000:e3:00.4","liveness":"gone","released":false,"reason":"cannot persist the VF claims","deconfigured":true}'
	run -0 jq -r 'select(.level == "error") | "\(.msg) \(.step)"' <<<"$stderr"
	assert_output 'cannot persist VF claims; nothing released sync'
	assert_equal "$(sha "$CLAIMS")" "$sum"
	[ ! -e "$CLAIMS.tmp" ]
	# The VF was reset first (its VMM is gone); the next pass releases.
	assert_equal "$(vgpu_type $VF4)" 0
	run -0 --separate-stderr vs reconcile
	assert_equal "$(field i-1 released)" true
	assert_equal "$(claimed)" ''
}

@test "reconcile, release: a VMM in a chroot holding its VF's VFIO node is found by the device numbers" {
	need_tool busybox
	local jail=$T/jail pid
	mkdir -p "$jail/dev/vfio" "$jail/bin"
	cp "$(command -v busybox)" "$jail/bin/busybox"
	# The fake group's node has /dev/full's numbers (a driver must
	# answer the open), and the fake sysfs names them for group 87.
	mknod "$jail/dev/vfio/87" c 1 7
	vfio_group $VF4 87
	mkdir -p "$SYSFS/sys/class/vfio/87"
	echo 1:7 >"$SYSFS/sys/class/vfio/87/dev"
	ledger "$(target $VF4 i-1 "$OLD" "" "$G/gone.qmp")"
	dirty $VF4
	chroot "$jail" /bin/busybox sh -c \
	    'exec 9</dev/vfio/87; exec /bin/busybox sleep 600' &
	pid=$!
	PIDS="$PIDS $pid"
	wait_for test -e "/proc/$pid/fd/9"
	# The kernel shows the path from the reader's root, not /dev/vfio/87.
	assert_equal "$(readlink "/proc/$pid/fd/9")" "$jail/dev/vfio/87"
	run -1 --separate-stderr vs release --instance i-1 --deconfigure \
	    --proc-root /
	assert_equal "$(vgpu_type $VF4)" 1160
	run -0 --separate-stderr vs reconcile --proc-root /
	assert_equal "$(field i-1 liveness) $(field i-1 released)" 'alive false'
	assert_equal "$(claimed)" 'i-1'
	# The chrooted VMM goes: the claim is released.
	kill "$pid"
	wait_for test ! -e "/proc/$pid/fd/9"
	run -0 --separate-stderr vs reconcile --proc-root /
	assert_equal "$(field i-1 released)" true
	assert_equal "$(claimed)" ''
}

@test "reconcile: a SIGKILLed QEMU (its socket refuses) ended unclean: a young claim's VF becomes suspect; a quit one's does not" {
	echo 'reconcile.grace = 0' >"$VFSENTINEL_CONF"
	qemu_start vm1
	qemu_start vm2
	ledger "$(target $VF4 i-1 "$(now_ts)" vsock:42:2222 "$G/vm1.qmp")" \
	    "$(target $VF5 i-2 "$(now_ts)" vsock:43:2222 "$G/vm2.qmp")"
	qemu_kill vm1
	qemu_quit vm2
	run -0 --separate-stderr vs reconcile
	run -0 jq -c '[.instance_id, .ended, .suspect]' <<<"$output"
	assert_line '["i-1","unclean",true]'
	assert_line '["i-2","unknown",false]'
	run -0 jq -c '.suspects[] | [.vf_address, .instance_id, .ended, .source]' \
	    "$DATA/gpu/vf-suspect.json"
	assert_output '["0000:e3:00.4","i-1","unclean","reconcile: control socket refused connections"]'
}
