#!/usr/bin/env bats
# 74-verify-service.bats - the vfsentinel-verify service (SPEC.md 7.3)
# under a real runsvdir: sv/vfsentinel-verify/run runs vfrecover
# --verify-suspects every suspect.verify_interval seconds, and is a
# no-op, said once, while no recovery.verify_command is set. The systemd
# unit runs the same script (t/deb/systemd.bats).

load helpers
load lib/store
load lib/runit

SVC=vfsentinel-verify

setup() {
	vfs_setup
	store_setup
	runit_setup
	suspects_host
	printf 'data_dir = %s\nsysfs_root = %s\n' "$DATA" "$SYSFS" \
	    >"$T/svc.conf"
	runit_copy $SVC
	runit_env $SVC VFSENTINEL_CONF "$T/svc.conf"
	runit_test_path $SVC
}

teardown() {
	runit_teardown
}

# no_suspects: vf-suspect.json holds no suspicion.
no_suspects() {
	[ "$(jq -c '[.suspects[].vf_address]' "$SUSPECT")" = '[]' ]
}

@test "verify service: without a verify command it says so once, stays up and verifies nothing" {
	local sum
	sum=$(sha "$SUSPECT")
	runit_start
	wait_long grep -q 'nothing to verify' "$RUNIT_SV/$SVC/log/main/current"
	sleep 1.5
	assert_equal "$(runit_stat $SVC)" run
	run -0 grep -c 'nothing to verify' "$RUNIT_SV/$SVC/log/main/current"
	assert_output 1
	run -0 grep -c '"level":"info","prog":"vfsentinel-verify","msg":"no recovery.verify_command' \
	    "$RUNIT_SV/$SVC/log/main/current"
	assert_output 1
	assert_equal "$(sha "$SUSPECT")" "$sum"
}

@test "verify service: every suspect.verify_interval a pass clears the suspicion, a fail quarantines" {
	cat >"$T/v.sh" <<-EOF
	#!/bin/sh
	[ "\$VFSENTINEL_VF" = $VF4 ]
	EOF
	chmod +x "$T/v.sh"
	printf 'recovery.verify_command = %s\nrecovery.step_timeout = 2\nsuspect.verify_interval = 1\n' \
	    "$T/v.sh" >>"$T/svc.conf"
	runit_start
	wait_long no_suspects
	quarantined $VF5
	run quarantined $VF4
	assert_failure
	# vfrecover's one line per VF, in the service's log.
	run -0 grep -c "\"vf_address\":\"$VF4\".*\"result\":\"pass\"" \
	    "$RUNIT_SV/$SVC/log/main/current"
	# A new suspicion is picked up by a later round.
	printf '{"version":1,"suspects":[{"vf_address":"%s","instance_id":"i-2","assigned_at":"2026-12-07T11:00:00Z","ended_at":"2026-12-07T11:00:09Z","ended":"unclean","source":"vfstore"}]}' \
	    $VF4 >"$T/s.json"
	mv "$T/s.json" "$SUSPECT"
	wait_long no_suspects
	assert_equal "$(runit_stat $SVC)" run
}

@test "verify service: a configuration error takes it down with its one error line" {
	echo 'suspect.verify_interval = soon' >>"$T/svc.conf"
	runit_start
	wait_long grep -q 'suspect.verify_interval' "$RUNIT_SV/$SVC/log/main/current"
	sleep 1.5
	run -0 grep -c 'suspect.verify_interval' "$RUNIT_SV/$SVC/log/main/current"
	assert_output 1
	run -0 sv status "$RUNIT_SV/$SVC"
	assert_output --regexp '^down: '
}
