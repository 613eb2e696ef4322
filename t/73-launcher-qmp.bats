#!/usr/bin/env bats
# 73-launcher-qmp.bats - a plain QEMU launcher (no libvirt) reports how
# its VM ended (SPEC.md 7.3): it holds QEMU's QMP socket
# (t/lib/qmp-ended.py, the recipe of share/doc/suspects.md), reads
# SHUTDOWN {"guest": true|false} or the socket closing without one
# (SIGKILL), and says it with vfstore release --ended. A real QEMU.

load helpers
load lib/sentinel

setup() {
	need_tool qemu-system-x86_64 python3
	vfs_setup
	sentinel_setup
	PIDS=
}

teardown() {
	qemu_teardown
	kill_pids
}

# launch NAME VF ID: QEMU, its claim (now, a guest endpoint) and the
# launcher holding its QMP socket, its verdict to $T/NAME.ended.
launch() {
	qemu_start "$1"
	printf '{"version":1,"claims":[%s]}' \
	    "$(target "$2" "$3" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" vsock:42:2222 "$G/$1.qmp")" \
	    >"$DATA/gpu/vf-claims.json"
	"$VFS_ROOT/t/lib/qmp-ended.py" "$G/$1.qmp" >"$T/$1.ended" 2>"$T/$1.err" &
	bg_track $!
	wait_for grep -q connected "$T/$1.err"
}

ended() {
	[ -s "$T/$1.ended" ]
}

@test "SIGTERM: SHUTDOWN guest false, unclean: the VF is suspect" {
	launch vm1 0000:e3:00.4 i-1
	kill -TERM "$(cat "$G/vm1.pid")"
	wait_for ended vm1
	assert_equal "$(cat "$T/vm1.ended")" unclean
	run -0 --separate-stderr vfstore --data-dir "$DATA" release --instance i-1 --ended "$(cat "$T/vm1.ended")"
	assert_equal "$(jq -r .suspect <<<"$output")" true
}

@test "SIGKILL: the socket closes without an event, unclean: the VF is suspect" {
	launch vm2 0000:e3:00.5 i-2
	kill -KILL "$(cat "$G/vm2.pid")"
	wait_for ended vm2
	assert_equal "$(cat "$T/vm2.ended")" unclean
	[ -S "$G/vm2.qmp" ]
	run -0 --separate-stderr vfstore --data-dir "$DATA" release --instance i-2 --ended unclean
	assert_equal "$(jq -r .suspect <<<"$output")" true
}

@test "a guest's own shutdown (guest true) is clean: not suspect" {
	printf '%s\n' '{"QMP": {"version": {}}}' '{"return": {}}' \
	    '{"timestamp": {"seconds": 1, "microseconds": 2}, "event": "SHUTDOWN", "data": {"guest": true, "reason": "guest-shutdown"}}' \
	    >"$T/events"
	run -0 "$VFS_ROOT/t/lib/qmp-ended.py" --events "$T/events"
	assert_output clean
	printf '{"version":1,"claims":[%s]}' \
	    "$(target 0000:e3:00.6 i-3 "$(date -u +%Y-%m-%dT%H:%M:%SZ)" vsock:42:2222 "$G/x.qmp")" \
	    >"$DATA/gpu/vf-claims.json"
	run -0 --separate-stderr vfstore --data-dir "$DATA" release --instance i-3 --ended clean
	assert_equal "$(jq -r .suspect <<<"$output")" false
}
