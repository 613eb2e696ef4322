#!/usr/bin/env bats
# sentinel-poll over the vsock/unix/hybrid-vsock transports (SPEC 4.4,
# upstream tests 12-20).

load helpers
load lib/sentinel

setup() {
	vfs_setup
	sentinel_setup
}

teardown() {
	sentinel_teardown
}

@test "sentinel-poll: --help, --version and a bad option" {
	run -0 sentinel-poll --help
	assert_output --partial 'usage: sentinel-poll'
	run -0 sentinel-poll --version
	assert_output 'sentinel-poll (vfsentinel) 0.1.0'
	run -64 --separate-stderr sentinel-poll --bogus
	assert_output ''
	[[ $stderr == *usage:\ sentinel-poll* ]]
	run -64 --separate-stderr sentinel-poll --source serial
	run -64 --separate-stderr sentinel-poll --concurrency 0
	run -64 --separate-stderr sentinel-poll --once extra
}

@test "sentinel-poll: on a host without the vGPU framework --once exits 0, the long-running form waits" {
	rm -rf "$SYSFS/sys/bus/pci/devices"/*
	mk_card "$SYSFS" 0000:e3:00.0
	guests g1=failed
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/g1" >"$TARGETS"
	run -0 --separate-stderr poll_once
	assert_output ''
	[[ $stderr == *'"level":"info"'*'host has no vGPU framework'* ]]
	# The long-running sentinel never settles (SPEC 4.4).
	sentinel-poll --sysfs-root "$SYSFS" --targets "$TARGETS" --interval 1 \
	    >"$T/out" 2>"$T/err" 3>&- &
	local pid=$!
	bg_track $pid
	wait_for grep -q 'host has no vGPU framework' "$T/err"
	sleep 2
	kill -0 $pid
	assert_equal "$(cat "$T/out")" ''
	[ "$(hits g1)" -eq 0 ]
}

@test "sentinel-poll: real vsock-answer guests give failed, ok and unknown" {
	answer_guest a1 FAILED
	answer_guest a2 OK
	answer_guest a3 UNKNOWN
	guests old=unsupported
	{
		target 0000:e3:00.4 i-1 "$TS1" "unix:$G/a1"
		target 0000:e3:00.5 i-2 "$TS2" "unix:$G/a2"
		target 0000:e3:00.6 i-3 "$TS1" "unix:$G/a3"
		target 0000:e3:00.7 i-4 "$TS1" "unix:$G/old"
	} >"$TARGETS"
	run -0 --separate-stderr poll_once
	assert_equal "$(checks_of)" "failed 0000:e3:00.4 i-1
ok 0000:e3:00.5 i-2
unknown 0000:e3:00.6 i-3
unsupported_agent 0000:e3:00.7 i-4"
	run jq -c 'select(.check == "failed")' <<<"$output"
	assert_output "$(jq -cn --arg n "$NVRM" --arg at "$TS1" \
	    '{check:"failed",vf_address:"0000:e3:00.4",instance_id:"i-1",assigned_at:$at,nvrm:$n}')"
}

@test "sentinel-poll: a hybrid vsock guest is reached through CONNECT/OK" {
	answer_guest a1 FAILED
	hvsock_proxy vmm "$G/a1" 2222
	hvsock_proxy wrong "$G/a1" 1024
	{
		target 0000:e3:00.4 i-1 "$TS1" "hvsock:$G/vmm:2222"
		target 0000:e3:00.5 i-2 "$TS1" "hvsock:$G/wrong:2222"
	} >"$TARGETS"
	run -0 --separate-stderr poll_once --timeout 2
	assert_equal "$(checks_of)" "failed 0000:e3:00.4 i-1
rpc_error 0000:e3:00.5 i-2"
	assert_line --partial '"error":"hybrid vsock: connection closed before OK"'
}

@test "sentinel-poll: the hybrid OK line carries the host port, not the guest port" {
	guests vmm=hv-ok
	target 0000:e3:00.4 i-1 "$TS1" "hvsock:$G/vmm:2222" >"$TARGETS"
	run -0 --separate-stderr poll_once
	assert_equal "$(checks_of)" "failed 0000:e3:00.4 i-1"
}

@test "sentinel-poll: only targets with a control socket and an endpoint are polled" {
	guests g1=failed g2=failed g3=ok
	{
		target 0000:e3:00.4 i-1 "$TS1" "unix:$G/g1" "$G/gone.sock"
		target 0000:e3:00.5 i-2 "$TS1" "unix:$G/g2" ""
		target 0000:e3:00.6 i-3 "$TS1" ""
		target 0000:e3:00.7 i-4 "$TS1" "unix:$G/g3"
		echo 'not json'
		echo '{"vf_address":"bogus","instance_id":"i-9"}'
	} >"$TARGETS"
	run -0 --separate-stderr poll_once
	assert_equal "$(checks_of)" "ok 0000:e3:00.7 i-4"
	[ "$(hits g1)" -eq 0 ]
	[ "$(hits g2)" -eq 0 ]
	[ "$(hits g3)" -eq 1 ]
	[[ $stderr == *'skipping bad target line'*'"line":5'* ]]
}

@test "sentinel-poll: targets come from the claims ledger by default" {
	guests g1=failed g2=unknown
	mkdir -p "$DATA/gpu"
	jq -n --arg g "$G" --arg ctl "$CTL" '{version:1,claims:[
	    {vf_address:"0000:e3:00.4",instance_id:"i-1",claimed_at:"2026-08-20T15:00:00Z",profile:"NVIDIA L40S-12Q",type_id:"1160",vsock:("unix:"+$g+"/g1"),control_socket:$ctl},
	    {vf_address:"0000:e3:00.5",instance_id:"i-2",claimed_at:"2026-08-20T15:00:00Z",vsock:("unix:"+$g+"/g2"),control_socket:$ctl},
	    {vf_address:"0000:e3:00.6",instance_id:"i-3",claimed_at:"2026-08-20T15:00:00Z",control_socket:$ctl}]}' \
	    >"$DATA/gpu/vf-claims.json"
	run -0 --separate-stderr sentinel-poll --sysfs-root "$SYSFS" \
	    --data-dir "$DATA" --once
	assert_equal "$(checks_of)" "failed 0000:e3:00.4 i-1
unknown 0000:e3:00.5 i-2"
}

@test "sentinel-poll: an unavailable ledger is a list_error, and it heals" {
	guests g1=unknown
	mkdir -p "$DATA/gpu"
	echo '{"version":2,"claims":[]}' >"$DATA/gpu/vf-claims.json"
	run -0 --separate-stderr sentinel-poll --sysfs-root "$SYSFS" \
	    --data-dir "$DATA" --once
	assert_equal "$(jq -r .check <<<"$output")" list_error
	assert_output --partial '"error":'
	[[ $stderr == *'failed to list instances'* ]]
	jq -n --arg g "$G" --arg ctl "$CTL" '{version:1,claims:[
	    {vf_address:"0000:e3:00.4",instance_id:"i-1",claimed_at:"2026-08-20T15:00:00Z",vsock:("unix:"+$g+"/g1"),control_socket:$ctl}]}' \
	    >"$DATA/gpu/vf-claims.json"
	run -0 --separate-stderr sentinel-poll --sysfs-root "$SYSFS" \
	    --data-dir "$DATA" --once
	assert_equal "$(checks_of)" "unknown 0000:e3:00.4 i-1"
}

@test "sentinel-poll: a missing targets file is a list_error per scan" {
	run -0 --separate-stderr sentinel-poll --sysfs-root "$SYSFS" \
	    --targets "$T/nope" --once
	assert_output --regexp '^\{"check":"list_error","error":"open .*/nope: No such file or directory"\}$'
}

@test "sentinel-poll: targets from stdin are read once and polled every scan" {
	guests g1=unknown
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/g1" >"$TARGETS"
	sentinel-poll --sysfs-root "$SYSFS" --targets - --interval 1 \
	    <"$TARGETS" >"$T/out" 2>"$T/err" 3>&- &
	local pid=$!
	bg_track $pid
	wait_for hits_ge g1 2
	kill -TERM $pid
	local rc=0
	wait $pid || rc=$?
	[ $rc -eq 0 ]
	[ "$(grep -c '"check":"unknown"' "$T/out")" -ge 2 ]
}

# A report is confirmed against the targets re-read after the poll. The
# slow guest's answer is held (NAME.hold) until the targets changed: a
# loaded run took over its one second to change them.
changed_assignment() {
	local g=$1
	guests "$g=$1"
	: >"$G/$g.hold"
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/$g" >"$TARGETS"
	poll_once >"$T/out" 2>"$T/err" 3>&- &
	local pid=$!
	wait_for hits_ge "$g" 1
	if [ -n "$2" ]; then
		target "$2" i-1 "$3" "unix:$G/$g" >"$TARGETS"
	else
		: >"$TARGETS"
	fi
	rm "$G/$g.hold"
	wait $pid
}

@test "sentinel-poll: a failure is dropped when the instance now holds another VF" {
	changed_assignment slow-failed 0000:e3:00.5 "$TS1"
	assert_equal "$(cat "$T/out")" ''
	grep -q 'assignment changed during poll' "$T/err"
	grep -q '"action":"init_failure"' "$T/err"
}

@test "sentinel-poll: a failure is dropped when the claim time changed" {
	changed_assignment slow-failed 0000:e3:00.4 "$TS2"
	assert_equal "$(cat "$T/out")" ''
}

@test "sentinel-poll: an ok is dropped when the assignment changed" {
	changed_assignment slow-ok 0000:e3:00.4 "$TS2"
	assert_equal "$(cat "$T/out")" ''
	grep -q '"action":"init_success"' "$T/err"
}

@test "sentinel-poll: a vanished instance still reports the polled assignment" {
	changed_assignment slow-failed
	run jq -r '"\(.check) \(.vf_address) \(.instance_id) \(.assigned_at)"' "$T/out"
	assert_output "failed 0000:e3:00.4 i-1 $TS1"
	changed_assignment slow-ok
	assert_equal "$(jq -r .check "$T/out")" ok
}

@test "sentinel-poll: hostile guests each end as rpc_error within the timeout" {
	local modes="noaccept full silent drip huge garbage badstate closer hv-silent hv-close" m
	local args=() n=0
	for m in $modes; do args+=("h$n=$m"); n=$((n + 1)); done
	guests "${args[@]}"
	for ((n = 0; n < 10; n++)); do
		if [[ ${args[$n]} == *hv-* ]]; then
			target 0000:e3:00.4 "i-$n" "$TS1" "hvsock:$G/h$n:2222"
		else
			target 0000:e3:00.4 "i-$n" "$TS1" "unix:$G/h$n"
		fi
	done >"$TARGETS"
	local t0=$SECONDS
	run -0 --separate-stderr poll_once --timeout 2 --concurrency 16
	[ $((SECONDS - t0)) -le 5 ]
	[ "$(jq -r .check <<<"$output" | sort | uniq -c | xargs)" = "10 rpc_error" ]
	assert_line --partial '"instance_id":"i-1","assigned_at":"2026-08-20T15:00:00Z","error":"connect: Resource temporarily unavailable"'
	assert_line --partial '"instance_id":"i-2","assigned_at":"2026-08-20T15:00:00Z","error":"timed out waiting for the reply"'
	assert_line --partial '"instance_id":"i-4","assigned_at":"2026-08-20T15:00:00Z","error":"reply over 64 KiB"'
	assert_line --partial '"instance_id":"i-5","assigned_at":"2026-08-20T15:00:00Z","error":"bad reply'
	assert_line --partial '"instance_id":"i-6","assigned_at":"2026-08-20T15:00:00Z","error":"bad reply'
	assert_line --partial '"instance_id":"i-8","assigned_at":"2026-08-20T15:00:00Z","error":"timed out waiting for the hybrid vsock OK"'
}

@test "sentinel-poll: silent guests never delay the responsive ones" {
	guests s*6=silent u*3=unknown
	{
		for n in 0 1 2 3 4 5; do target 0000:e3:00.4 "s-$n" "$TS1" "unix:$G/s$n"; done
		for n in 0 1 2; do target 0000:e3:00.5 "u-$n" "$TS1" "unix:$G/u$n"; done
	} >"$TARGETS"
	poll_once --timeout 5 --concurrency 8 >"$T/out" 2>"$T/err" 3>&- &
	local pid=$!
	bg_track $pid
	# Six silent guests hold six slots; the other two slots served all
	# three responsive guests before the timeout ended any silent one.
	wait_long eval '[ "$(grep -c "\"check\":\"unknown\"" "$T/out")" -eq 3 ]'
	[ "$(grep -c rpc_error "$T/out")" -eq 0 ]
	wait $pid
	[ "$(grep -c '"error":"timed out waiting for the reply"' "$T/out")" -eq 6 ]
}

@test "sentinel-poll: a slow guest costs one slot for at most the timeout" {
	guests s*4=silent
	for n in 0 1 2 3; do target 0000:e3:00.4 "s-$n" "$TS1" "unix:$G/s$n"; done >"$TARGETS"
	local t0 t1
	t0=$(date +%s%N)
	run -0 --separate-stderr poll_once --timeout 1 --concurrency 2
	t1=$(date +%s%N)
	# Two rounds of two slots: two timeouts, not four and not one.
	[ $(((t1 - t0) / 1000000)) -ge 1900 ]
	[ $(((t1 - t0) / 1000000)) -lt 3800 ]
	[ "$(grep -c rpc_error <<<"$output")" -eq 4 ]
}

@test "sentinel-poll: scans repeat every interval and never overlap" {
	guests u=unknown s=silent
	{
		target 0000:e3:00.4 i-1 "$TS1" "unix:$G/u"
		target 0000:e3:00.5 i-2 "$TS1" "unix:$G/s"
	} >"$TARGETS"
	sentinel-poll --sysfs-root "$SYSFS" --targets "$TARGETS" --interval 1 \
	    --timeout 2 >"$T/out" 2>"$T/err" 3>&- &
	local pid=$!
	bg_track $pid
	sleep 4.5
	kill -TERM $pid
	local rc=0
	wait $pid || rc=$?
	[ $rc -eq 0 ]
	# Each scan lasts 2 s (the silent guest), so at most 3 scans ran,
	# and every one of them was complete before the next started.
	run -0 jq -r .check "$T/out"
	local u s
	u=$(grep -cx unknown <<<"$output")
	s=$(grep -cx rpc_error <<<"$output")
	[ "$u" -ge 2 ]
	[ "$u" -le 3 ]
	[ "$s" -ge 2 ]
	[ "$s" -le "$u" ]
}

@test "sentinel-poll: a write error on stdout exits 74" {
	guests g1=unknown
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/g1" >"$TARGETS"
	run -74 --separate-stderr bash -c 'sentinel-poll --sysfs-root "$SYSFS" --targets "$TARGETS" --once >/dev/full'
	[[ $stderr == *'write stdout failed'* ]]
}

@test "sentinel-poll: SIGTERM mid-scan exits 0 at once" {
	guests s=silent
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/s" >"$TARGETS"
	sentinel-poll --sysfs-root "$SYSFS" --targets "$TARGETS" --timeout 30 \
	    >"$T/out" 2>"$T/err" 3>&- &
	local pid=$!
	wait_for hits_ge s 1
	kill -TERM $pid
	local t0=$SECONDS
	local rc=0
	wait $pid || rc=$?
	[ $rc -eq 0 ]
	[ $((SECONDS - t0)) -le 1 ]
}

@test "sentinel-poll: exits within 1 s when its reader goes away between scans" {
	guests g1=unknown
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/g1" >"$TARGETS"
	mkfifo "$T/pipe"
	sentinel-poll --sysfs-root "$SYSFS" --targets "$TARGETS" --interval 600 \
	    >"$T/pipe" 2>"$T/err" 3>&- &
	local pid=$!
	bg_track $pid
	exec 5<"$T/pipe"
	IFS= read -r line <&5
	[[ $line == *'"check":"unknown"'* ]]
	exec 5<&-
	local t0
	t0=$(date +%s%N)
	local rc=0
	wait $pid || rc=$?
	[ $rc -eq 74 ]
	[ $((($(date +%s%N) - t0) / 1000000)) -lt 1000 ]
	grep -q 'stdout reader went away' "$T/err"
}

@test "sentinel-poll: a bad or unreachable endpoint is an rpc_error" {
	{
		target 0000:e3:00.4 i-1 "$TS1" "vsock:nope"
		target 0000:e3:00.5 i-2 "$TS1" "tcp:127.0.0.1:22"
		# CID 1 is the local CID: no loopback transport here (or no
		# AF_VSOCK at all), so the connect fails or times out.
		target 0000:e3:00.6 i-3 "$TS1" "vsock:1:2222"
		# A bare CID dials guest.vsock_port: a connect, not a parse error.
		target 0000:e3:00.7 i-4 "$TS1" "vsock:1"
	} >"$TARGETS"
	run -0 --separate-stderr poll_once --timeout 1
	assert_equal "$(checks_of)" "rpc_error 0000:e3:00.4 i-1
rpc_error 0000:e3:00.5 i-2
rpc_error 0000:e3:00.6 i-3
rpc_error 0000:e3:00.7 i-4"
	assert_line --partial '"instance_id":"i-1","assigned_at":"2026-08-20T15:00:00Z","error":"invalid endpoint"'
	refute_line --partial '"instance_id":"i-4","assigned_at":"2026-08-20T15:00:00Z","error":"invalid endpoint"'
}

@test "sentinel-poll: a ledger lock held too long is a list_error" {
	mkdir -p "$DATA/gpu"
	echo '{"version":1,"claims":[]}' >"$DATA/gpu/vf-claims.json"
	: >"$DATA/gpu/lock"
	lock_hold "$DATA/gpu/lock" -x
	run -0 --separate-stderr sentinel-poll --sysfs-root "$SYSFS" \
	    --data-dir "$DATA" --lock-timeout 1 --once
	lock_release
	assert_output --regexp '^\{"check":"list_error","error":"lock .*timed out'
}

@test "sentinel-poll: concurrency is lowered to fit the open files limit" {
	guests 'u*40=unknown'
	for n in $(seq 0 39); do target 0000:e3:00.4 "i-$n" "$TS1" "unix:$G/u$n"; done >"$TARGETS"
	run -0 --separate-stderr bash -c 'ulimit -n 48 && exec sentinel-poll --sysfs-root "$SYSFS" --targets "$TARGETS" --once --concurrency 1000'
	[ "$(grep -c '"check":"unknown"' <<<"$output")" -eq 40 ]
	[[ $stderr == *'concurrency lowered to fit the open files limit'*'"limit":16'* ]]
}

# check_warns: the warn lines of $T/err about a target that cannot be
# checked, as "instance endpoint error", one a line.
check_warns() {
	jq -r 'select(.level == "warn" and .msg == "cannot check target") |
	    "\(.instance_id) \(.endpoint) \(.error)"' "$T/err"
}

# rpc_errors: how many rpc_error lines $T/out holds.
rpc_errors() {
	grep -c '"rpc_error"' "$T/out" || true
}

# rpc_errors_ge N: 0 once $T/out holds N rpc_error lines or more.
rpc_errors_ge() {
	[ "$(rpc_errors)" -ge "$1" ]
}

@test "sentinel-poll: why a target cannot be checked is warned once per reason; a VMM back is logged" {
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/none" "$G/vm.ctl" >"$TARGETS"
	sentinel-poll --sysfs-root "$SYSFS" --targets "$TARGETS" --interval 1 \
	    --log-level info >"$T/out" 2>"$T/err" 3>&- &
	bg_track $!
	wait_for grep -q 'skipping target: VMM not alive' "$T/err"
	ctl_listen "$G/vm.ctl"
	wait_for grep -q '"msg":"VMM alive; polling target"' "$T/err"
	# No such socket, three scans in a row: one warning.
	wait_for rpc_errors_ge 3
	assert_equal "$(check_warns)" "i-1 unix:$G/none connect: No such file or directory"
	# A socket nobody listens on: a new reason, warned once more.
	python3 -c 'import socket, sys
socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$G/none"
	n=$(rpc_errors)
	wait_for rpc_errors_ge $((n + 3))
	assert_equal "$(check_warns)" "i-1 unix:$G/none connect: No such file or directory
i-1 unix:$G/none connect: Connection refused"
}

@test "sentinel-poll: SIGTERM ends it within 1 s while --targets - waits for the end of its input" {
	mkfifo "$T/in"
	sentinel-poll --sysfs-root "$SYSFS" --targets - --interval 1 \
	    <"$T/in" >"$T/out" 2>"$T/err" 3>&- &
	local pid=$! t0 rc=0 i
	bg_track $pid
	# A writer that keeps the FIFO open and never ends the list.
	exec 5>"$T/in"
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/none" >&5
	sleep 0.5
	t0=$(date +%s%N)
	kill -TERM $pid
	for ((i = 0; i < 60; i++)); do
		kill -0 $pid 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 $pid 2>/dev/null; then
		kill -KILL $pid
		exec 5>&-
		fail "still running 3 s after SIGTERM"
	fi
	exec 5>&-
	wait $pid || rc=$?
	[ $rc -eq 0 ]
	[ $((($(date +%s%N) - t0) / 1000000)) -lt 1000 ]
}
