#!/usr/bin/env bats
# The vfsentinel-reconcile runit service (SPEC 5) under a private
# runsvdir: a QEMU killed with SIGKILL has its claim released within one
# interval, a live one keeps it; sv kill and kill -9 leave no orphan; sv
# down stops it on its TERM.

load helpers
load lib/sentinel
load lib/runit

BATS_NO_PARALLELIZE_WITHIN_FILE=true
SVC=vfsentinel-reconcile
OLD='2026-08-20T15:00:00Z'

setup() {
	need_tool runsv qemu-system-x86_64 socat
	vfs_setup
	sentinel_setup
	runit_setup
	runit_copy $SVC
	runit_test_path $SVC
	runit_tag $SVC
	PROM=$T/prom
	CLAIMS=$DATA/gpu/vf-claims.json
	mkdir -p "$PROM"
	cat >"$T/svc.conf" <<-EOC
	data_dir = $DATA
	sysfs_root = $SYSFS
	metrics.textfile_dir = $PROM
	reconcile.grace = 0
	EOC
	runit_env $SVC VFSENTINEL_CONF "$T/svc.conf"
	runit_env $SVC INTERVAL 1
}

teardown() {
	runit_teardown
	sentinel_teardown
}

ledger() {
	printf '%s\n' "$@" | jq -s '{version:1, claims:.}' >"$CLAIMS"
}

claimed() {
	jq -r '[.claims[].instance_id] | join(" ")' "$CLAIMS"
}

released_total() {
	grep -qx "vfsentinel_claims_released_total $1" \
	    "$PROM/$SVC.prom" 2>/dev/null
}

not_claimed() {
	! jq -e --arg id "$1" '.claims[] | select(.instance_id == $id)' \
	    "$CLAIMS" >/dev/null
}

@test "reconcile service: a SIGKILLed QEMU's claim is released within one interval, a live one's kept" {
	qemu_start vm1
	qemu_start vm2
	ledger "$(target 0000:e3:00.4 i-1 "$OLD" "" "$G/vm1.qmp")" \
	    "$(target 0000:e3:00.5 i-2 "$OLD" "" "$G/vm2.qmp")"
	echo 1160 >"$SYSFS/sys/bus/pci/devices/0000:e3:00.5/nvidia/current_vgpu_type"
	runit_start
	runit_wait_stat $SVC run
	wait_long test -e "$PROM/$SVC.prom"
	qemu_kill vm2
	t0=$(date +%s%N)
	wait_for not_claimed i-2
	# One interval (1 s) and the time a pass takes on a busy machine.
	[ $((($(date +%s%N) - t0) / 1000000)) -lt "$(load_scaled 2500)" ]
	assert_equal "$(claimed)" i-1
	assert_equal "$(cat "$SYSFS/sys/bus/pci/devices/0000:e3:00.5/nvidia/current_vgpu_type")" 0
	wait_for released_total 1
	wait_long grep -q 'released the claim of a gone VMM' \
	    "$RUNIT_SV/$SVC/log/main/current"
	# The run shell became vfstore: runsv supervises it directly.
	assert_equal "$(cat "/proc/$(runit_pid $SVC)/comm")" vfstore
	sleep 1.5
	assert_equal "$(claimed)" i-1
}

@test "reconcile service: sv kill and kill -9 leave no orphan; sv down stops it on TERM" {
	runit_start
	runit_wait_stat $SVC run
	local old
	for victim in sv-kill vfstore; do
		wait_long runit_one $SVC vfstore
		sleep 1.2
		old=$(runit_pid $SVC)
		if [ "$victim" = sv-kill ]; then
			sv kill "$RUNIT_SV/$SVC" >/dev/null
		else
			kill -KILL "$old"
		fi
		sleep 2
		run runit_strays $SVC
		assert_success
		assert_output ''
		run ! kill -0 "$old"
		wait_long runit_one $SVC vfstore
		[ "$(runit_pid $SVC)" != "$old" ]
	done
	run sv -w 15 down "$RUNIT_SV/$SVC"
	assert_success
	sleep 1
	run -0 runit_count $SVC vfstore
	assert_output 0
	grep -q '^vfsentinel_claims_released_total 0$' "$PROM/$SVC.prom"
	run -0 find "$PROM" -name '*.tmp*'
	assert_output ''
}

@test "reconcile service: a configuration error starts nothing and takes the service down with its one error line (SPEC 7.4)" {
	echo 'reconcile.grace = soon' >>"$T/svc.conf"
	runit_start
	wait_long grep -q 'reconcile.grace' "$RUNIT_SV/$SVC/log/main/current"
	# A restart would come a second later: none comes.
	sleep 1.5
	[ ! -e "$PROM/$SVC.prom" ]
	run -0 grep -c 'reconcile.grace' "$RUNIT_SV/$SVC/log/main/current"
	assert_output 1
	run -0 sv status "$RUNIT_SV/$SVC"
	assert_output --regexp '^down: '
}
