#!/usr/bin/env bats
# sentinel-poll polls a guest only while its VMM is alive (SPEC 4.4, VMM
# liveness), end to end through sentinel-poll --once | vfstore apply, with
# a real QEMU as the VMM: alive, alive while another client holds its QMP
# monitor, killed with SIGKILL (its socket file stays), quit cleanly (no
# file), a regular file.

load helpers
load lib/sentinel
load lib/store

TS0='2026-08-19T08:00:00Z'

setup() {
	need_tool qemu-system-x86_64 socat
	vfs_setup
	sentinel_setup
}

teardown() {
	sentinel_teardown
}

# ledger TARGET_LINES...: writes the claims ledger from target() lines.
ledger() {
	printf '%s\n' "$@" | jq -s '{version:1, claims:.}' \
	    >"$DATA/gpu/vf-claims.json"
}

# pipeline [ARGS...]: one scan of the ledger through vfstore apply; the
# check lines land in $T/poll, the apply lines in $T/apply, logs in $T/err.
pipeline() {
	local st
	sentinel-poll --sysfs-root "$SYSFS" --data-dir "$DATA" --once \
	    --log-level debug "$@" 2>>"$T/err" | tee "$T/poll" |
	    vfstore --data-dir "$DATA" apply >"$T/apply" 2>>"$T/err"
	st="${PIPESTATUS[0]} ${PIPESTATUS[2]}"
	[ "$st" = "0 0" ]
}

# failures VF: how many failures the store counts for VF.
failures() {
	vfstore --data-dir "$DATA" show --vf "$1" | jq -r '.failures | length'
}

# skipped_as INSTANCE STATE: the log says the instance was not polled
# because its VMM is STATE (gone or uncertain).
skipped_as() {
	[ "$(jq -c --arg id "$1" --arg st "$2" 'select(.msg ==
	    "skipping target: VMM not alive" and .instance_id == $id and
	    .vmm == $st)' "$T/err" | wc -l)" -ge 1 ]
}

@test "vmm: a live QEMU's guest is polled and its failure recorded" {
	qemu_start vm1
	answer_guest a1 FAILED
	ledger "$(target 0000:e3:00.4 i-1 "$TS1" "unix:$G/a1" "$G/vm1.qmp")"
	pipeline
	assert_equal "$(jq -r '"\(.check) \(.instance_id)"' "$T/poll")" \
	    "failed i-1"
	assert_equal "$(jq -r .outcome "$T/apply")" recorded
	assert_equal "$(failures 0000:e3:00.4)" 1
}

@test "vmm: a QEMU whose monitor another client holds is polled scan after scan, never probed" {
	qemu_start vm1
	qmp_hold "$G/vm1.qmp"
	answer_guest a1 UNKNOWN
	ledger "$(target 0000:e3:00.4 i-1 "$TS1" "unix:$G/a1" "$G/vm1.qmp")"
	local n
	for n in 1 2 3 4 5; do
		pipeline
		assert_equal "$(jq -r '"\(.check) \(.instance_id)"' "$T/poll")" \
		    "unknown i-1"
	done
	# Nobody connected to the QMP socket since the holder did: both
	# places of its accept queue are still free.
	run -0 accept_queue_room "$G/vm1.qmp"
	assert_output 2
	run -1 skipped_as i-1 uncertain
	assert_output ''
}

@test "vmm: a QEMU killed with SIGKILL leaves its socket file and is not polled" {
	qemu_start vm1
	guests g1=failed
	ledger "$(target 0000:e3:00.4 i-1 "$TS1" "unix:$G/g1" "$G/vm1.qmp")"
	qemu_kill vm1
	[ -S "$G/vm1.qmp" ]
	pipeline
	assert_equal "$(cat "$T/poll")" ''
	assert_equal "$(hits g1)" 0
	skipped_as i-1 gone
	grep -q '"reason":"connect refused"' "$T/err"
	run -1 quarantined 0000:e3:00.4
	assert_output ''
}

@test "vmm: after a SIGKILL a stranger at the old endpoint changes nothing in the store" {
	# .4 is quarantined by two assignments, the second one still claimed;
	# .5 has one failure and a claim of its own.
	vfstore --data-dir "$DATA" report-failure --vf 0000:e3:00.4 \
	    --instance i-0 --assigned-at "$TS0" >/dev/null
	vfstore --data-dir "$DATA" report-failure --vf 0000:e3:00.4 \
	    --instance i-1 --assigned-at "$TS1" >/dev/null
	vfstore --data-dir "$DATA" report-failure --vf 0000:e3:00.5 \
	    --instance i-9 --assigned-at "$TS0" >/dev/null
	quarantined 0000:e3:00.4
	qemu_start vm1
	qemu_start vm2
	ledger "$(target 0000:e3:00.4 i-1 "$TS1" "unix:$G/a1" "$G/vm1.qmp")" \
	    "$(target 0000:e3:00.5 i-2 "$TS2" "unix:$G/a2" "$G/vm2.qmp")"
	qemu_kill vm1
	qemu_kill vm2
	# Unrelated guests now answer at the dead VMs' endpoints (what a
	# reused vsock CID does): one healthy, one wedged.
	answer_guest a1 OK
	answer_guest a2 FAILED
	local before
	before=$(sha "$DATA/gpu/vf-health.json")
	pipeline
	assert_equal "$(cat "$T/poll")" ''
	assert_equal "$(sha "$DATA/gpu/vf-health.json")" "$before"
	quarantined 0000:e3:00.4
	assert_equal "$(failures 0000:e3:00.4)" 2
	assert_equal "$(failures 0000:e3:00.5)" 1
	run -1 quarantined 0000:e3:00.5
	assert_output ''
	skipped_as i-1 gone
	skipped_as i-2 gone
}

@test "vmm: a QEMU that quit cleanly removed its socket and is not polled" {
	qemu_start vm1
	guests g1=ok
	ledger "$(target 0000:e3:00.4 i-1 "$TS1" "unix:$G/g1" "$G/vm1.qmp")"
	qemu_quit vm1
	grep -q '"return"' "$T/vm1.quit"
	pipeline
	assert_equal "$(cat "$T/poll")" ''
	assert_equal "$(hits g1)" 0
	skipped_as i-1 gone
	grep -q '"reason":"no such file"' "$T/err"
}

@test "vmm: a regular file as control socket is uncertain and not polled" {
	: >"$G/file.qmp"
	guests g1=ok
	ledger "$(target 0000:e3:00.4 i-1 "$TS1" "unix:$G/g1" "$G/file.qmp")"
	pipeline
	assert_equal "$(cat "$T/poll")" ''
	assert_equal "$(hits g1)" 0
	skipped_as i-1 uncertain
	grep -q '"reason":"not a socket"' "$T/err"
}

@test "vmm: a live QEMU's monitor given through a symlink is polled" {
	qemu_start vm1
	ln -s "$G/vm1.qmp" "$G/link.qmp"
	answer_guest a1 FAILED
	ledger "$(target 0000:e3:00.4 i-1 "$TS1" "unix:$G/a1" "$G/link.qmp")"
	pipeline
	assert_equal "$(jq -r '"\(.check) \(.instance_id)"' "$T/poll")" \
	    "failed i-1"
	assert_equal "$(failures 0000:e3:00.4)" 1
}

@test "vmm: a killed QEMU's monitor given through a symlink is gone, not polled" {
	qemu_start vm1
	ln -s "$G/vm1.qmp" "$G/link.qmp"
	guests g1=failed
	ledger "$(target 0000:e3:00.4 i-1 "$TS1" "unix:$G/g1" "$G/link.qmp")"
	qemu_kill vm1
	pipeline
	assert_equal "$(cat "$T/poll")" ''
	assert_equal "$(hits g1)" 0
	skipped_as i-1 gone
}

@test "vmm: a symlink to a removed monitor socket is gone" {
	ln -s "$G/nothing.qmp" "$G/link.qmp"
	guests g1=ok
	ledger "$(target 0000:e3:00.4 i-1 "$TS1" "unix:$G/g1" "$G/link.qmp")"
	pipeline
	assert_equal "$(cat "$T/poll")" ''
	skipped_as i-1 gone
	grep -q '"reason":"no such file"' "$T/err"
}

# skip_logs LEVEL: how many "VMM not alive" records at LEVEL $T/err has.
skip_logs() {
	grep -c "\"level\":\"$1\",\"prog\":\"sentinel-poll\",\"msg\":\"skipping target: VMM not alive\"" \
	    "$T/err"
}

# warned N: the VMM-not-alive warning was logged N times (for wait_for).
warned() {
	[ "$(skip_logs warn)" -eq "$1" ]
}

@test "vmm: a dead VMM is warned about once, and polled again when its VM restarts" {
	qemu_start vm1
	guests g1=ok
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/g1" "$G/vm1.qmp" >"$TARGETS"
	qemu_kill vm1
	sentinel-poll --sysfs-root "$SYSFS" --targets "$TARGETS" --interval 1 \
	    --log-level debug >"$T/out" 2>"$T/err" 3>&- &
	bg_track $!
	wait_for scans_ge 3 || wait_for scans_ge 3
	assert_equal "$(cat "$T/out")" ''
	assert_equal "$(skip_logs warn)" 1
	[ "$(skip_logs debug)" -ge 2 ]
	# The VM is started again: QEMU binds the same path.
	qemu_start vm1
	wait_for grep -q '"check":"ok"' "$T/out" ||
	    wait_for grep -q '"check":"ok"' "$T/out"
	# ... and killed again: a new warning.
	qemu_kill vm1
	wait_for warned 2 || wait_for warned 2
	[ "$(hits g1)" -ge 1 ]
}

@test "vmm: --proc-root: a listener listed there is alive and is not connected to" {
	qemu_start vm1
	answer_guest a1 UNKNOWN
	ledger "$(target 0000:e3:00.4 i-1 "$TS1" "unix:$G/a1" "$G/vm1.qmp")"
	qemu_kill vm1
	mkdir -p "$T/proc/proc/net"
	{
		echo 'Num       RefCount Protocol Flags    Type St Inode Path'
		echo "0000000000000000: 00000002 00000000 00010000 0001 01  9983 $G/vm1.qmp"
	} >"$T/proc/proc/net/unix"
	# The table says a listener holds the path: no connect tells otherwise.
	pipeline --proc-root "$T/proc"
	assert_equal "$(jq -r '"\(.check) \(.instance_id)"' "$T/poll")" \
	    "unknown i-1"
	# The real table does not list it.
	pipeline
	assert_equal "$(cat "$T/poll")" ''
}

@test "vmm: --proc-root without net/unix: one connect decides" {
	qemu_start vm1
	qemu_start vm2
	guests g1=ok g2=ok
	ledger "$(target 0000:e3:00.4 i-1 "$TS1" "unix:$G/g1" "$G/vm1.qmp")" \
	    "$(target 0000:e3:00.5 i-2 "$TS1" "unix:$G/g2" "$G/vm2.qmp")"
	qemu_kill vm2
	mkdir -p "$T/proc/proc"
	pipeline --proc-root "$T/proc"
	assert_equal "$(jq -r '"\(.check) \(.instance_id)"' "$T/poll")" "ok i-1"
	assert_equal "$(hits g2)" 0
	skipped_as i-2 gone
}

@test "vmm: sentinel-poll --proc-root is a usage error without a directory" {
	run -64 --separate-stderr sentinel-poll --proc-root
	assert_output ''
	[[ $stderr == *usage:\ sentinel-poll* ]]
}
