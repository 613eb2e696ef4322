#!/usr/bin/env bats
# The vfsentinel-sentinel runit service (SPEC.md 5) under a private
# runsvdir: sentinel-poll | vfstore apply, waiting for VFs, restarts.

load helpers
load lib/sentinel
load lib/runit

SVC=vfsentinel-sentinel

setup() {
	vfs_setup
	sentinel_setup
	runit_setup
	runit_copy $SVC
	runit_test_path $SVC
	PROM=$T/prom
	mkdir -p "$PROM"
	cat >"$T/svc.conf" <<-EOC
	data_dir = $DATA
	sysfs_root = $SYSFS
	metrics.textfile_dir = $PROM
	sentinel.interval = 1
	sentinel.timeout = 1
	EOC
	runit_env $SVC VFSENTINEL_CONF "$T/svc.conf"
	runit_env $SVC VFSENTINEL_ARGS "--targets $TARGETS"
}

teardown() {
	runit_teardown
	sentinel_teardown
}

# stage NAME: the pid of the service's sentinel-poll or vfstore: ./run's
# process (apply, since run execs into it) or one below it.
stage() {
	local run pid ppid comm start
	run=$(runit_pid $SVC)
	[ -n "$run" ] || return 1
	while read -r pid ppid comm start; do
		if [ "$comm" = "$1" ] && runit_descends "$pid" "$run"; then
			echo "$pid"
			return 0
		fi
	done <<<"$(runit_procs $SVC)"
	return 1
}

# new_stage NAME OLD: a running NAME with a pid other than OLD.
new_stage() {
	local p
	p=$(stage "$1") && [ -n "$p" ] && [ "$p" != "$2" ]
}

recorded() {
	[ -e "$DATA/gpu/vf-health.json" ] &&
	    [ "$(vfstore --data-dir "$DATA" show --vf 0000:e3:00.4 |
	    jq -r '.failures | length')" = "$1" ]
}

@test "service: stays up on a host without VFs and begins checking when they appear" {
	rm -rf "$SYSFS/sys/bus/pci/devices"/*
	mk_card "$SYSFS" 0000:e3:00.0
	answer_guest a1 FAILED
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/a1" >"$TARGETS"
	runit_env $SVC VFSENTINEL_ARGS "--targets $TARGETS --framework-recheck 1"
	runit_start
	runit_wait_stat $SVC run
	wait_for grep -q '^vfsentinel_sentinel_framework_present 0$' \
	    "$PROM/vfsentinel-poller.prom"
	local run
	run=$(runit_pid $SVC)
	sleep 2.5
	assert_equal "$(runit_stat $SVC)" run
	assert_equal "$(runit_pid $SVC)" "$run"
	assert_equal "$(runit_log $SVC | grep -c 'host has no vGPU framework')" 1
	run -1 recorded 1
	# SR-IOV comes up: the VFs appear and the same instance scans them.
	mk_vf "$SYSFS" 0000:e3:00.0 0000:e3:00.4
	wait_for recorded 1
	wait_for grep -q '^vfsentinel_sentinel_polled 1$' \
	    "$PROM/vfsentinel-poller.prom"
	grep -q '^vfsentinel_sentinel_framework_present 1$' \
	    "$PROM/vfsentinel-poller.prom"
	assert_equal "$(runit_pid $SVC)" "$run"
	[ ! -e "$RUNIT_SV/$SVC/finish" ]
}

@test "service: reports a wedged guest into the store and the textfile" {
	answer_guest a1 FAILED
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/a1" >"$TARGETS"
	runit_start
	runit_wait_stat $SVC run
	wait_for recorded 1
	wait_for test -e "$PROM/vfsentinel-sentinel.prom"
	wait_for grep -q '^hypeman_instances_vgpu_sentinel_init_failures_total 1$' \
	    "$PROM/vfsentinel-sentinel.prom"
	wait_for grep -q 'recorded vGPU VF init failure' \
	    "$RUNIT_SV/$SVC/log/main/current"
}

@test "service: kill -9 of sentinel-poll is recovered within 2 s" {
	answer_guest a1 UNKNOWN
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/a1" >"$TARGETS"
	runit_start
	runit_wait_stat $SVC run
	wait_for stage sentinel-poll >/dev/null
	local old apply t0 bound
	old=$(stage sentinel-poll)
	apply=$(stage vfstore)
	kill -9 "$old"
	t0=$(date +%s%N)
	# 2 s, longer on a machine loaded more than once over (load_scaled).
	bound=$(load_scaled 2000)
	for ((i = 0; i < bound / 50; i++)); do
		new_stage sentinel-poll "$old" && new_stage vfstore "$apply" && break
		sleep 0.05
	done
	[ $((($(date +%s%N) - t0) / 1000000)) -lt "$bound" ]
	# The old apply saw end of input and exited.
	run ! kill -0 "$apply"
	answer_set a1 FAILED
	wait_for recorded 1
}

@test "service: kill -9 of vfstore apply is recovered within 2 s" {
	answer_guest a1 FAILED
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/a1" >"$TARGETS"
	runit_start
	runit_wait_stat $SVC run
	wait_for stage vfstore >/dev/null
	wait_for recorded 1
	local old poll t0 bound
	old=$(stage vfstore)
	poll=$(stage sentinel-poll)
	kill -9 "$old"
	t0=$(date +%s%N)
	bound=$(load_scaled 2000)
	for ((i = 0; i < bound / 50; i++)); do
		new_stage vfstore "$old" && new_stage sentinel-poll "$poll" && break
		sleep 0.05
	done
	[ $((($(date +%s%N) - t0) / 1000000)) -lt "$bound" ]
	# The old poller was killed with apply (pdeathsig); PID 1 reaps it.
	wait_for bash -c "! kill -0 $poll 2>/dev/null"
	# The acknowledged failure survived; a new assignment still counts.
	target 0000:e3:00.4 i-2 "$TS2" "unix:$G/a1" >"$TARGETS"
	wait_for recorded 2
}

@test "service: sv restart brings it back; sv down stops both stages" {
	answer_guest a1 UNKNOWN
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/a1" >"$TARGETS"
	runit_start
	runit_wait_stat $SVC run
	wait_for stage sentinel-poll >/dev/null
	local run poll apply
	run=$(runit_pid $SVC)
	sv restart "$RUNIT_SV/$SVC" >/dev/null
	runit_wait_new_pid $SVC "$run" >/dev/null
	wait_for stage sentinel-poll >/dev/null
	poll=$(stage sentinel-poll)
	apply=$(stage vfstore)
	sv -w 5 down "$RUNIT_SV/$SVC" >/dev/null
	assert_equal "$(runit_stat $SVC)" down
	wait_for bash -c "! kill -0 $poll 2>/dev/null && ! kill -0 $apply 2>/dev/null"
}
