#!/usr/bin/env bats
# The sentinel that waits for SR-IOV (SPEC 4.4): on a host without the
# vendor-VFIO framework the long-running sentinel-poll does not exit; it
# re-checks sysfs every --framework-recheck seconds and starts scanning
# when VFs appear. --metrics-file tells a waiting sentinel, an idle host
# and a dead VMM apart.

load helpers
load lib/sentinel

setup() {
	vfs_setup
	sentinel_setup
	# A host whose VFs are not enabled yet: the card, no VF.
	rm -rf "$SYSFS/sys/bus/pci/devices"/*
	mk_card "$SYSFS" 0000:e3:00.0
	PROM=$T/prom/vfsentinel-poller.prom
}

teardown() {
	sentinel_teardown
}

# enable_vfs: SR-IOV comes up, the four VFs appear.
enable_vfs() {
	local n
	for n in 4 5 6 7; do
		mk_vf "$SYSFS" 0000:e3:00.0 "0000:e3:00.$n"
	done
}

# waiter [ARGS...]: a long-running sentinel-poll over $TARGETS that
# re-checks sysfs every second; output in $T/out, log in $T/err.
waiter() {
	sentinel-poll --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --targets "$TARGETS" --interval 1 --framework-recheck 1 \
	    --metrics-file "$PROM" "$@" >"$T/out" 2>"$T/err" 3>&- &
	POLLER_PID=$!
	bg_track $POLLER_PID
}

# metric NAME: the value of NAME in the poller's textfile.
metric() {
	awk -v n="$1" '$1 == n { print $2 }' "$PROM" 2>/dev/null
}

# metric_is NAME VALUE (for wait_for).
metric_is() {
	[ "$(metric "$1")" = "$2" ]
}

# out_has CHECK INSTANCE: the poller wrote that check line.
out_has() {
	[ "$(jq -r --arg id "$2" --arg c "$1" \
	    'select(.check == $c and .instance_id == $id) | .check' \
	    "$T/out" 2>/dev/null | head -n 1)" = "$1" ]
}

@test "wait: --once on a host without VFs logs at info, writes no line and exits 0" {
	guests g1=failed
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/g1" >"$TARGETS"
	run -0 --separate-stderr poll_once --metrics-file "$PROM"
	assert_output ''
	[ "$(jq -r 'select(.msg | test("no vGPU framework")) | .level' \
	    <<<"$stderr")" = info ]
	[ "$(hits g1)" -eq 0 ]
	metric_is vfsentinel_sentinel_framework_present 0
	metric_is vfsentinel_sentinel_targets 0
}

@test "wait: the long-running sentinel keeps running, polls nothing, then scans once VFs appear" {
	guests g1=failed
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/g1" >"$TARGETS"
	waiter
	wait_for metric_is vfsentinel_sentinel_framework_present 0
	sleep 2.5
	kill -0 "$POLLER_PID"
	[ "$(hits g1)" -eq 0 ]
	assert_equal "$(cat "$T/out")" ''
	# Logged once at info, not once per re-check.
	[ "$(jq -r 'select(.msg | test("no vGPU framework")) | .level' \
	    "$T/err")" = info ]
	enable_vfs
	wait_for out_has failed i-1
	wait_for metric_is vfsentinel_sentinel_framework_present 1
	wait_for metric_is vfsentinel_sentinel_polled 1
	metric_is vfsentinel_sentinel_targets 1
	grep -q '"msg":"vGPU framework appeared' "$T/err"
}

@test "wait: VFs that go away again send the sentinel back to waiting" {
	enable_vfs
	guests g1=ok
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/g1" >"$TARGETS"
	waiter
	wait_for out_has ok i-1
	wait_for metric_is vfsentinel_sentinel_framework_present 1
	rm -rf "$SYSFS/sys/bus/pci/devices/0000:e3:00."[4-7]
	wait_for metric_is vfsentinel_sentinel_framework_present 0
	metric_is vfsentinel_sentinel_polled 0
	local n
	n=$(hits g1)
	sleep 2.5
	[ "$(hits g1)" -eq "$n" ]
	kill -0 "$POLLER_PID"
	enable_vfs
	wait_for hits_ge g1 $((n + 1))
}

@test "wait: SIGTERM while waiting exits 0; a reader gone while waiting exits 74 within 1 s" {
	waiter
	wait_for metric_is vfsentinel_sentinel_framework_present 0
	kill -TERM "$POLLER_PID"
	local rc=0
	wait "$POLLER_PID" || rc=$?
	[ "$rc" -eq 0 ]
	# The reader side: a pipe whose reader exits.
	rm -f "$PROM"
	local t0
	t0=$(date +%s%N)
	{
		rc=0
		sentinel-poll --sysfs-root "$SYSFS" --targets "$TARGETS" \
		    --framework-recheck 60 2>"$T/err2" 3>&- || rc=$?
		echo "$rc" >"$T/rc"
	} | sleep 1
	wait_long test -s "$T/rc"
	[ "$(cat "$T/rc")" -eq 74 ]
	# Gone at 1 s, noticed at once, not at the re-check 60 s away (10 s
	# leaves room for a loaded machine: one run took over 2.5 s).
	[ $((($(date +%s%N) - t0) / 1000000)) -lt 10000 ]
}

@test "metrics: targets listed vs polled, with a VMM killed with SIGKILL" {
	need_tool qemu-system-x86_64
	enable_vfs
	qemu_start vm1
	qemu_start vm2
	guests g1=unknown g2=unknown
	{
		target 0000:e3:00.4 i-1 "$TS1" "unix:$G/g1" "$G/vm1.qmp"
		target 0000:e3:00.5 i-2 "$TS1" "unix:$G/g2" "$G/vm2.qmp"
	} >"$TARGETS"
	qemu_kill vm2
	local before after
	before=$(date +%s)
	run -0 --separate-stderr poll_once --metrics-file "$PROM"
	after=$(date +%s)
	assert_equal "$(checks_of)" "unknown 0000:e3:00.4 i-1"
	metric_is vfsentinel_sentinel_framework_present 1
	metric_is vfsentinel_sentinel_targets 2
	metric_is vfsentinel_sentinel_polled 1
	local ts
	ts=$(metric vfsentinel_sentinel_last_scan_timestamp_seconds)
	awk -v t="$ts" -v a="$before" -v b="$after" \
	    'BEGIN { exit !(t + 0 >= a && t + 0 <= b + 1) }'
	[ "$(grep -c '^# TYPE vfsentinel_sentinel_[a-z_]* gauge$' "$PROM")" -eq 5 ]
	[ "$(grep -c '^# HELP vfsentinel_sentinel_' "$PROM")" -eq 5 ]
	need_tool promtool
	run -0 "$VFS_TOOLS/promtool" check metrics <"$PROM"
	assert_output ''
}

@test "metrics: rewritten after every scan, and a write failure only warns" {
	enable_vfs
	guests g1=unknown
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/g1" >"$TARGETS"
	waiter
	wait_for metric_is vfsentinel_sentinel_polled 1
	local t1
	t1=$(metric vfsentinel_sentinel_last_scan_timestamp_seconds)
	wait_for bash -c "[ \"\$(awk '\$1 == \"vfsentinel_sentinel_last_scan_timestamp_seconds\" { print \$2 }' '$PROM')\" != '$t1' ]"
	: >"$TARGETS"
	wait_for metric_is vfsentinel_sentinel_targets 0
	metric_is vfsentinel_sentinel_polled 0
	# No temporary file left behind, once the poller stopped (while it
	# runs, a rewrite in progress has one: a loaded run saw it).
	kill -TERM "$POLLER_PID"
	wait "$POLLER_PID" || true
	run find "$T/prom" -name '*.tmp*'
	assert_output ''
	# A metrics path under a regular file cannot be written: warn, go on.
	: >"$T/notadir"
	run -0 --separate-stderr poll_once --metrics-file "$T/notadir/x.prom"
	[[ $stderr == *'"level":"warn"'*'cannot write the metrics file'* ]]
}

@test "wait: --framework-recheck is a usage error outside 1..86400" {
	run -64 --separate-stderr sentinel-poll --framework-recheck 0
	[[ $stderr == *--framework-recheck* ]]
	run -64 --separate-stderr sentinel-poll --framework-recheck 86401
	[[ $stderr == *--framework-recheck* ]]
	run -64 --separate-stderr sentinel-poll --metrics-file
	[[ $stderr == *--metrics-file* ]]
}

# as_sentinel CMD...: CMD as the packaged sentinel runs: not root (nobody
# here), holding only CAP_DAC_READ_SEARCH, which only its opener process
# keeps (SPEC 8.3): the poller itself reads its targets and writes its
# metrics as the plain user, so the test's directories (bats makes them
# 0700) are opened to it.
as_sentinel() {
	local d=$T
	while [ "$d" != / ] && [ "$d" != /tmp ]; do
		chmod o+x "$d"
		d=$(dirname "$d")
	done
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		--inh-caps=-all,+dac_read_search \
		--ambient-caps=-all,+dac_read_search "$@"
}

# unpolled_warns: the warn lines of targets not checked, as
# "instance reason", sorted.
unpolled_warns() {
	jq -r 'select(.level == "warn" and .unpolled != null) |
	    "\(.instance_id) \(.unpolled)"' "$T/err" | sort
}

@test "metrics: targets not checked are counted by the first reason that applies, each warned once with vf, path and fix" {
	need_tool setpriv
	enable_vfs
	guests g1=unknown g2=unknown
	# g1 is open to the sentinel's user; g2 is root's (0755), as a
	# channel socket QEMU made that nobody granted.
	chmod 0777 "$G/g1"
	mkfifo "$T/fifo"
	: >"$T/notasocket"
	mkdir -p "$T/prom"
	chown nobody "$T/prom"
	{
		target 0000:e3:00.4 i-1 "$TS1" "" "$CTL"
		target 0000:e3:00.5 i-2 "$TS1" "unix:$G/g2" "$CTL"
		target 0000:e3:00.6 i-3 "$TS1" "unix:$G/g1" "$G/gone.qmp"
		target 0000:e3:00.7 i-4 "$TS1" "unix:$G/g1" "$T/notasocket"
		target 0000:e3:00.4 i-5 "$TS1" "" "$CTL" "$T/fifo"
		target 0000:e3:00.5 i-6 "$TS1" "unix:$G/g1" "$CTL"
		target 0000:e3:00.6 i-7 "$TS1" "" "" "$T/fifo"
		target 0000:e3:00.7 i-8 "$TS1" "unix:$G/g2" "$CTL" "$T/fifo"
	} >"$TARGETS"
	as_sentinel sentinel-poll --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --targets "$TARGETS" --interval 1 --metrics-file "$PROM" \
	    --log-level debug >"$T/out" 2>"$T/err" 3>&- &
	bg_track $!
	wait_for scans_ge 3 || wait_for scans_ge 3
	assert_equal "$(grep '^vfsentinel_sentinel_unpolled_targets' "$PROM")" \
	    'vfsentinel_sentinel_unpolled_targets{reason="no_source"} 1
vfsentinel_sentinel_unpolled_targets{reason="permission"} 2
vfsentinel_sentinel_unpolled_targets{reason="vmm_not_alive"} 1
vfsentinel_sentinel_unpolled_targets{reason="vmm_uncertain"} 2
vfsentinel_sentinel_unpolled_targets{reason="console_unreadable"} 1'
	metric_is vfsentinel_sentinel_targets 8
	# Three scans, one warning each (debug after).
	assert_equal "$(unpolled_warns)" "i-1 no_source
i-2 permission
i-3 vmm_not_alive
i-4 vmm_uncertain
i-5 console_unreadable
i-7 vmm_uncertain
i-8 permission"
	run -0 jq -r 'select(.level == "warn" and .unpolled != null) |
	    select(.vf == null or .fix == null or .fix == "") | .instance_id' \
	    "$T/err"
	assert_output ''
	run -0 jq -r 'select(.level == "warn" and .unpolled == "permission") |
	    "\(.instance_id) \(.source) \(.path) \(.error)"' "$T/err"
	assert_output "i-2 endpoint unix:$G/g2 Permission denied
i-8 endpoint unix:$G/g2 Permission denied"
	run -0 jq -r 'select(.level == "warn" and .unpolled == "console_unreadable") |
	    "\(.msg) \(.path)"' "$T/err"
	assert_output "console log is not a regular file $T/fifo"
	[[ $(jq -r 'select(.unpolled == "no_source") | .fix' "$T/err" | head -1) == *"<log file="* ]]
	[[ $(jq -r 'select(.unpolled == "permission") | .fix' "$T/err" | head -1) == *CAP_DAC_READ_SEARCH*security.md* ]]
	[ "$(jq -r 'select(.level == "debug" and .unpolled == "no_source") | .instance_id' "$T/err" | wc -l)" -ge 2 ]
	out_has unknown i-6
}

@test "metrics: every unpolled reason is written, 0 when none" {
	enable_vfs
	: >"$TARGETS"
	run -0 --separate-stderr poll_once --metrics-file "$PROM"
	assert_equal "$(grep -c '^vfsentinel_sentinel_unpolled_targets{reason="[a-z_]*"} 0$' "$PROM")" 5
}
