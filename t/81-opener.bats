#!/usr/bin/env bats
# 81-opener: sentinel-poll's privilege split (SPEC 8.3). The process that
# parses console logs and agent answers holds no capability; its opener
# holds only CAP_DAC_READ_SEARCH, serves only the paths of the claims in
# vf-claims.json, uses the capability only below sentinel.privileged_dirs
# with no link followed, and never opens a FIFO or a device node, not
# even one swapped in between a check and an open.

load helpers
load lib/sentinel
load lib/store

setup() {
	vfs_setup
	store_setup
	sentinel_setup
	need_tool setpriv
	# The poller runs as nobody: the test's directories (bats makes
	# them 0700) are opened to it; priv/ and other/ stay root's 0700,
	# as libvirt's domain directories and virtlogd's logs are.
	local d=$T
	while [ "$d" != / ] && [ "$d" != /tmp ]; do
		chmod o+x "$d"
		d=$(dirname "$d")
	done
	mkdir -m 0700 "$T/priv" "$T/other"
	printf 'sentinel.privileged_dirs = %s\n' "$T/priv" >"$VFSENTINEL_CONF"
	vfstore --data-dir "$DATA" init --owner nobody >/dev/null
}

teardown() {
	[ -z "${WATCH_PID:-}" ] || kill "$WATCH_PID" 2>/dev/null || true
	[ -z "${SWAP_PID:-}" ] || kill "$SWAP_PID" 2>/dev/null || true
	sentinel_teardown
}

# log_at PATH: a root-only console log holding a FAILED marker.
log_at() {
	{ marker_failed; echo; } >"$1"
	chmod 0600 "$1"
}

# claims_of ID=LOG...: the ledger's claims, VFs e3:00.4 on, each with
# the live control socket.
claims_of() {
	local a n=4 items=
	for a; do
		items="$items$(jq -cn --arg vf "0000:e3:00.$n" --arg id "${a%%=*}" \
		    --arg log "${a#*=}" --arg ctl "$CTL" --arg at "$TS1" \
		    '{vf_address:$vf, instance_id:$id, claimed_at:$at,
		      control_socket:$ctl, app_log:$log}'),"
		n=$((n + 1))
	done
	put_claims "{\"version\":1,\"claims\":[${items%,}]}"
}

# sentinel: the poller from the ledger as the packaged sentinel
# runs it (nobody here, CAP_DAC_READ_SEARCH ambient), --source log, one
# scan a second; output in $T/out, log in $T/err.
sentinel() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
	    --inh-caps=-all,+dac_read_search \
	    --ambient-caps=-all,+dac_read_search \
	    sentinel-poll --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --source log --interval 1 --log-level debug \
	    >"$T/out" 2>"$T/err" 3>&- &
	POLLER_PID=$!
	bg_track $POLLER_PID
	wait_for scans_ge 2
}

# cap_eff PID: the effective capability set of PID.
cap_eff() {
	awk '$1 == "CapEff:" { print $2 }' "/proc/$1/status"
}

# unpolled_of ID: the reasons logged for instance ID, sorted, unique.
unpolled_of() {
	jq -r --arg id "$1" 'select(.instance_id == $id and .unpolled != null) |
	    .unpolled' "$T/err" | sort -u
}

@test "opener: the parser holds no capability, its opener only CAP_DAC_READ_SEARCH" {
	log_at "$T/priv/a.log"
	claims_of "i-1=$T/priv/a.log"
	sentinel
	local opener
	opener=$(pgrep -P "$POLLER_PID")
	[ -n "$opener" ]
	assert_equal "$(cat "/proc/$POLLER_PID/comm") $(cap_eff "$POLLER_PID")" \
	    "sentinel-poll 0000000000000000"
	assert_equal "$(cat "/proc/$opener/comm") $(cap_eff "$opener")" \
	    "sentinel-opener 0000000000000004"
	assert_equal "$(awk '$1 == "NoNewPrivs:" { print $2 }' \
	    "/proc/$POLLER_PID/status")" 1
	# Both end with the parser.
	kill -TERM "$POLLER_PID"
	wait_for bash -c "! kill -0 $opener 2>/dev/null"
}

@test "opener: a dead opener ends the parser (71), for the supervisor to start both again" {
	log_at "$T/priv/a.log"
	claims_of "i-1=$T/priv/a.log"
	sentinel
	local rc=0
	kill -KILL "$(pgrep -P "$POLLER_PID")"
	wait_for bash -c "! kill -0 $POLLER_PID 2>/dev/null || grep -q '^State:.*Z' /proc/$POLLER_PID/status"
	wait "$POLLER_PID" || rc=$?
	assert_equal "$rc" 71
	run -0 jq -r 'select(.level == "error") | .msg' "$T/err"
	assert_output "the opener process is gone: exiting, for the supervisor to start both again"
}

@test "opener: a claim's root-only log below a privileged dir is read; one elsewhere, or reached through a link, is not" {
	log_at "$T/priv/a.log"
	log_at "$T/other/b.log"
	mkdir -m 0700 "$T/priv/d"
	ln -s ../other/b.log "$T/priv/c.log"
	ln -s "$T/other" "$T/priv/d/up"
	claims_of "i-1=$T/priv/a.log" "i-2=$T/other/b.log" \
	    "i-3=$T/priv/c.log" "i-4=$T/priv/d/up/b.log"
	sentinel
	assert_equal "$(jq -r '"\(.check) \(.instance_id)"' "$T/out" | sort -u)" \
	    "failed i-1"
	assert_equal "$(unpolled_of i-2)" permission
	assert_equal "$(unpolled_of i-3)" console_unreadable
	assert_equal "$(unpolled_of i-4)" console_unreadable
}

@test "opener: a claim's agent channel and control socket below a privileged dir are reached through it" {
	# A guest's channel and its VMM's monitor in a root-only directory,
	# as libvirt's domain directories are; the channel granted to the
	# user (libvirt-hook's ACL), the monitor not.
	sentinel-guests "$T/priv" ch=failed 2>>"$T/guests.log" 3>&- &
	bg_track $!
	wait_for test -e "$T/priv/ready"
	chmod 0777 "$T/priv/ch"
	ctl_listen "$T/priv/ctl"
	put_claims "$(jq -nc --arg ch "unix:$T/priv/ch" --arg ctl "$T/priv/ctl" \
	    --arg at "$TS1" '{version:1, claims:[{vf_address:"0000:e3:00.4",
	      instance_id:"i-1", claimed_at:$at, vsock:$ch, control_socket:$ctl}]}')"
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
	    --inh-caps=-all,+dac_read_search \
	    --ambient-caps=-all,+dac_read_search \
	    sentinel-poll --sysfs-root "$SYSFS" --data-dir "$DATA" --once \
	    --log-level debug >"$T/out" 2>"$T/err"
	assert_equal "$(jq -r '"\(.check) \(.instance_id)"' "$T/out")" "failed i-1"
}

@test "opener: a FIFO and a device node as a claim's log are never opened" {
	mkfifo -m 0600 "$T/priv/fifo"
	mknod -m 0600 "$T/priv/dev" c 1 3
	mkfifo "$T/fifo2"
	claims_of "i-1=$T/priv/fifo" "i-2=$T/priv/dev" "i-3=$T/fifo2"
	open-watch "$T/opens" "$T/priv/fifo" "$T/priv/dev" "$T/fifo2" &
	WATCH_PID=$!
	wait_for test -e "$T/opens.ready"
	sentinel
	next_scan
	assert_equal "$(unpolled_of i-1) $(unpolled_of i-2) $(unpolled_of i-3)" \
	    "console_unreadable console_unreadable console_unreadable"
	run -0 cat "$T/opens"
	assert_output ''
}

@test "opener: a log swapped between a regular file and a FIFO between check and open is never opened as the FIFO" {
	local i
	mkfifo "$T/fifo"
	{ marker_ok; echo; } >"$T/reg"
	# 50 targets of the same log, 20 runs: 1000 checks and opens while
	# the name flips as fast as rename(2) goes.
	for i in $(seq 50); do
		target 0000:e3:00.4 "i-$i" "$TS1" "" "$CTL" "$T/log"
	done >"$TARGETS"
	open-watch "$T/opens" "$T/fifo" &
	WATCH_PID=$!
	wait_for test -e "$T/opens.ready"
	# The two names swap places (renameat2 RENAME_EXCHANGE) as fast as
	# the kernel goes: the log is now the file, now the FIFO.
	ln "$T/fifo" "$T/log"
	ln "$T/reg" "$T/alt"
	swap_names "$T"
	for i in $(seq 20); do
		sentinel-poll --sysfs-root "$SYSFS" --targets "$TARGETS" \
		    --source log --once >/dev/null 2>&1 || true
	done
	kill "$SWAP_PID"
	run -0 cat "$T/opens"
	assert_output ''
}

@test "opener: sentinel.privileged_dirs must be absolute paths (78)" {
	printf 'sentinel.privileged_dirs = %s, var/log\n' "$T/priv" \
	    >"$VFSENTINEL_CONF"
	run -78 --separate-stderr sentinel-poll --sysfs-root "$SYSFS" \
	    --targets "$TARGETS" --once
	[[ $stderr == *'sentinel.privileged_dirs'* ]]
}
