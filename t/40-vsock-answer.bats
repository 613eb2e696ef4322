#!/usr/bin/env bats
# vsock-answer (SPEC.md 3.3): the guest GPU init state machine, the status
# protocol over a Unix socket, the state file, console markers, and
# clients that try to stall the server.

load helpers
load lib/answer

setup() {
	vfs_setup
	answer_setup
}

teardown() {
	answer_teardown
}

# marker_re KIND: the V2 console marker shape (upstream-behavior.md 2.12).
marker_re() {
	local d='[0-9]{4}/[0-9]{2}/[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}'
	if [ "$1" = FAILED ]; then
		echo "^$d \\[guest-agent\\] HYPEMAN-GPU-INIT-FAILED ts=[^ ]+ nvrm=\"NVRM: [^\"]*RmInitAdapter failed![^\"]*\"\$"
	else
		echo "^$d \\[guest-agent\\] HYPEMAN-GPU-INIT-OK ts=[^ ]+\$"
	fi
}

@test "usage: --help on stdout, --version, bad option and stray argument exit 64" {
	run -0 --separate-stderr vsock-answer --help
	assert_output --partial "usage: vsock-answer"
	run -0 vsock-answer --version
	assert_output "vsock-answer (vfsentinel) 0.1.0"
	run -64 --separate-stderr vsock-answer --bogus
	[[ "$stderr" == *usage:* ]]
	run -64 --separate-stderr vsock-answer extra
	run -64 --separate-stderr vsock-answer --events "$T/ev" --listen tcp:1
}

@test "a --listen longer than a path is a usage error naming the option, not a truncated socket" {
	local long
	long=unix:$T/$(head -c 5000 /dev/zero | tr '\0' a)
	run -64 --separate-stderr vsock-answer --events "$T/ev" \
	    --state-file "$T/s.json" --listen "$long"
	[[ "$stderr" == *'vsock-answer: --listen: endpoint too long'* ]]
	[ -z "$output" ]
	[ ! -e "$T/ev" ]
}

@test "a new server answers UNKNOWN and creates the events FIFO" {
	answer_start
	[ -p "$T/ev" ]
	run -0 answer_query
	assert_output '{"state":"UNKNOWN"}'
	answer_stop
}

@test "an unknown method, a non-object and garbage get error replies" {
	answer_start
	run -0 answer_query '{"method":"GetSomethingElse"}'
	assert_output '{"error":"unsupported method"}'
	run -0 answer_query '[1,2]'
	assert_output '{"error":"bad request"}'
	run -0 answer_query 'hello'
	assert_output '{"error":"bad request"}'
	run -0 answer_query '{}'
	assert_output '{"error":"bad request"}'
	run -0 answer_query
	assert_output '{"state":"UNKNOWN"}'
	answer_stop
}

@test "a request of 4096 bytes is answered, one of 4097 is a bad request" {
	answer_start
	pad=$(head -c $((4096 - ${#REQ})) /dev/zero | tr '\0' ' ')
	run -0 answer_query "$REQ$pad"
	assert_output '{"state":"UNKNOWN"}'
	run -0 answer_query "$REQ$pad "
	assert_output '{"error":"bad request"}'
	answer_stop
}

@test "state machine: failures give FAILED with the newest message, OK is terminal" {
	answer_start
	answer_fail "$NVRM1"
	wait_for answer_state_is FAILED
	run -0 answer_query
	assert_output "{\"state\":\"FAILED\",\"failure_message\":\"$NVRM1\"}"
	answer_fail "$NVRM2"
	wait_for eval '[ "$(answer_query | jq -r .failure_message)" = "$NVRM2" ]'
	answer_event '{"event":"gpu_init_ok","output":"GPU 0: NVIDIA L40S"}'
	wait_for answer_state_is OK
	answer_fail "$NVRM1"
	answer_event '{"event":"gpu_probe_failed","error":"x"}'
	sleep 0.2
	run -0 answer_query
	assert_output '{"state":"OK"}'
	run -0 jq -c . "$T/state.json"
	assert_output '{"boot_id":"boot-1111","state":"OK","failure_message":""}'
	answer_stop
	# First failure and success are logged at info, once each.
	[ "$(grep -c '"GPU init failure detected"' "$T/answer.log")" -eq 1 ]
	[ "$(grep -c '"GPU driver initialized"' "$T/answer.log")" -eq 1 ]
}

@test "UNKNOWN goes straight to OK on gpu_init_ok" {
	answer_start
	answer_event '{"event":"gpu_init_ok","output":"GPU 0"}'
	wait_for answer_state_is OK
	answer_stop
}

@test "bad event lines are warned, counted and skipped; other events are ignored" {
	answer_start
	answer_event 'not json' '[1]' '{"no_event":1}' \
	    '{"event":"gpu_init_failed"}' '{"event":"gpu_probe_disabled"}'
	answer_fail "$NVRM1"
	wait_for answer_state_is FAILED
	answer_stop
	run -0 jq -rs 'map(select(.msg == "bad event line skipped")) |
	    (length|tostring) + " " + (last.bad_lines|tostring)' "$T/answer.log"
	assert_output "4 4"
	grep -q '"msg":"event ignored","event":"gpu_probe_disabled"' "$T/answer.log"
}

@test "an over-long event line is skipped and later lines still count" {
	answer_start
	{
		head -c 70000 /dev/zero | tr '\0' 'x'
		echo
		jq -cn --arg m "$NVRM1" '{event:"gpu_init_failed",message:$m}'
	} >"$T/ev"
	wait_for answer_state_is FAILED
	answer_stop
	grep -q '"error":"line too long"' "$T/answer.log"
}

@test "writers of the FIFO may come and go without ending the input" {
	answer_start
	for i in 1 2 3; do
		answer_event '{"event":"gpu_probe_failed","error":"try"}'
	done
	answer_fail "$NVRM1"
	wait_for answer_state_is FAILED
	kill -0 "$ANSWER_PID"
	answer_stop
}

@test "events from stdin: at its end the server keeps serving its state" {
	jq -cn --arg m "$NVRM1" '{event:"gpu_init_failed",message:$m}' >"$T/in"
	vsock-answer --events - --listen "unix:$SOCK" --state-file "$T/state.json" \
	    --boot-id-file "$T/boot_id" <"$T/in" 2>"$T/answer.log" 3>&- &
	ANSWER_PID=$!
	wait_for answer_state_is FAILED
	sleep 0.3
	run -0 answer_query
	assert_output --partial '"state":"FAILED"'
	grep -q 'end of event input; still serving' "$T/answer.log"
	answer_stop
}

@test "state survives kill -9 and a restart within the same boot" {
	answer_start
	answer_fail "$NVRM1"
	wait_for answer_state_is FAILED
	kill -KILL "$ANSWER_PID"
	wait "$ANSWER_PID" || true
	[ -S "$SOCK" ]
	answer_start
	run -0 answer_query
	assert_output "{\"state\":\"FAILED\",\"failure_message\":\"$NVRM1\"}"
	grep -q '"msg":"state restored","state":"FAILED"' "$T/answer.log"
	answer_stop
}

@test "a state file from another boot is ignored" {
	printf '{"boot_id":"boot-0000","state":"OK","failure_message":""}' \
	    >"$T/state.json"
	answer_start
	run -0 answer_query
	assert_output '{"state":"UNKNOWN"}'
	grep -q 'state file is from another boot' "$T/answer.log"
	answer_fail "$NVRM1"
	wait_for answer_state_is FAILED
	run -0 jq -r .boot_id "$T/state.json"
	assert_output "boot-1111"
	answer_stop
}

@test "a corrupt state file is warned about and ignored" {
	printf '{"boot_id":"boot-1111","state":"MAYBE"' >"$T/state.json"
	answer_start
	run -0 answer_query
	assert_output '{"state":"UNKNOWN"}'
	grep -q '"level":"warn".*state file invalid' "$T/answer.log"
	answer_stop
}

@test "a failed state-file write is logged and serving continues" {
	LD_PRELOAD=$(fault_env) FAIL_rename=0 FAIL_MATCH=state.json \
	    vsock-answer --events "$T/ev" --listen "unix:$SOCK" \
	    --state-file "$T/state.json" --boot-id-file "$T/boot_id" \
	    2>>"$T/answer.log" 3>&- &
	ANSWER_PID=$!
	wait_for answer_query >/dev/null
	answer_fail "$NVRM1"
	wait_for answer_state_is FAILED
	grep -q '"level":"error".*"write state file failed".*"step":"rename"' \
	    "$T/answer.log"
	[ ! -e "$T/state.json" ]
	run -0 answer_query
	assert_output --partial "$NVRM1"
	answer_stop
}

@test "console: a failure writes three identical marker lines of the V2 shape" {
	answer_start --console "$T/console"
	answer_fail "$NVRM1"
	wait_for answer_state_is FAILED
	run -0 wc -l <"$T/console"
	assert_output 3
	[ "$(sort -u "$T/console" | wc -l)" -eq 1 ]
	grep -Eq "$(marker_re FAILED)" "$T/console"
	grep -Fq "nvrm=\"$NVRM1\"" "$T/console"
	answer_stop
}

@test "console: failures are throttled to one marker per 30 s, state still moves" {
	answer_start --console "$T/console"
	answer_fail "$NVRM1"
	wait_for answer_state_is FAILED
	answer_fail "$NVRM2"
	wait_for eval '[ "$(answer_query | jq -r .failure_message)" = "$NVRM2" ]'
	[ "$(wc -l <"$T/console")" -eq 3 ]
	run -1 grep -q '0x26:0xffff' "$T/console"
	answer_stop
}

@test "console: OK writes three markers once and nothing after OK" {
	answer_start --console "$T/console"
	answer_fail "$NVRM1"
	answer_event '{"event":"gpu_init_ok"}'
	wait_for answer_state_is OK
	answer_event '{"event":"gpu_init_ok"}'
	answer_fail "$NVRM2"
	sleep 0.3
	run -0 cat "$T/console"
	[ "${#lines[@]}" -eq 6 ]
	[[ "${lines[2]}" == *INIT-FAILED* ]]
	for i in 3 4 5; do
		[[ "${lines[$i]}" =~ $(marker_re OK) ]]
		[ "${lines[$i]}" = "${lines[3]}" ]
	done
	answer_stop
}

@test "console: quotes and backslashes in the message are escaped" {
	answer_start --console "$T/console"
	answer_fail 'NVRM: a "quoted" \path RmInitAdapter failed!'
	wait_for answer_state_is FAILED
	grep -Fq 'nvrm="NVRM: a \"quoted\" \\path RmInitAdapter failed!"' \
	    "$T/console"
	answer_stop
}

@test "a client that sends nothing is dropped after 5 s" {
	answer_start
	run -0 answer-client hold "$SOCK" 1 9
	run -0 jq -e '.closed == 1 and .first_close_ms >= 4900 and
	    .first_close_ms < 6500' <<<"$output"
	answer_stop
}

# open_fds_ge PID N: PID has N descriptors open or more (connections
# accepted).
open_fds_ge() {
	local fds=("/proc/$1/fd/"*)
	[ "${#fds[@]}" -ge "$2" ]
}

@test "500 silent clients block neither other clients nor the event input" {
	answer_start
	answer-client hold "$SOCK" 500 9 >"$T/hold.out" 3>&- &
	HOLD_PID=$!
	wait_long open_fds_ge "$ANSWER_PID" 500
	start=$(date +%s%N)
	run -0 answer_query
	assert_output '{"state":"UNKNOWN"}'
	answer_fail "$NVRM1"
	wait_for answer_state_is FAILED
	# Blocked by a silent client, the answer would wait for the clients'
	# close 9 s after they connected; 6 s leaves room for a loaded machine.
	took=$((($(date +%s%N) - start) / 1000000))
	echo "answered in $took ms"
	[ "$took" -lt 6000 ]
	wait "$HOLD_PID"
	HOLD_PID=
	run -0 jq -e '.opened == 500 and .closed == 500' "$T/hold.out"
	answer_hwm_below 8192
	answer_stop
}

@test "a byte-at-a-time client is answered and does not stall others" {
	answer_start
	answer-client drip "$SOCK" 50 >"$T/drip.out" 3>&- &
	HOLD_PID=$!
	sleep 0.2
	run -0 answer_query
	assert_output '{"state":"UNKNOWN"}'
	wait "$HOLD_PID"
	HOLD_PID=
	run -0 cat "$T/drip.out"
	assert_output '{"state":"UNKNOWN"}'
	answer_stop
}

@test "a 10 MiB request gets bad request, and memory stays bounded" {
	answer_start
	run -0 --separate-stderr answer-client flood "$SOCK" 10485760
	assert_output '{"error":"bad request"}'
	run -0 answer_query
	assert_output '{"state":"UNKNOWN"}'
	answer_hwm_below 4096
	answer_stop
}

@test "clients that close early do not disturb the server" {
	answer_start
	run -0 answer-client abort "$SOCK" 200
	run -0 answer_query
	assert_output '{"state":"UNKNOWN"}'
	answer_stop
}

@test "over the connection cap the oldest connection is dropped for a new one" {
	answer_start
	answer-client hold "$SOCK" 1100 4 >"$T/hold.out" 3>&- &
	HOLD_PID=$!
	wait_long grep -q '"connection cap reached' "$T/answer.log"
	run -0 answer_query
	assert_output '{"state":"UNKNOWN"}'
	wait "$HOLD_PID"
	HOLD_PID=
	run -0 jq -e '.opened == 1100 and .closed >= 77' "$T/hold.out"
	grep -q '"connection cap reached; oldest dropped","cap":1024' \
	    "$T/answer.log"
	answer_stop
}

@test "SIGTERM exits 0 and a stale socket file is replaced" {
	answer_start
	kill -KILL "$ANSWER_PID"
	wait "$ANSWER_PID" || true
	[ -S "$SOCK" ]
	answer_start
	run -0 answer_query
	assert_output '{"state":"UNKNOWN"}'
	answer_stop
	grep -q '"msg":"stopping"' "$T/answer.log"
}

@test "vsock:PORT listens on AF_VSOCK (where the kernel has a transport)" {
	[ -e /dev/vsock ] || skip "no vsock transport"
	vsock-answer --events "$T/ev" --listen vsock:52222 \
	    --state-file "$T/state.json" --boot-id-file "$T/boot_id" \
	    2>>"$T/answer.log" 3>&- &
	ANSWER_PID=$!
	wait_for grep -q '"msg":"listening","endpoint":"vsock:52222"' \
	    "$T/answer.log"
	kill -0 "$ANSWER_PID"
	answer_stop
}

@test "the default endpoint is vsock on guest.vsock_port" {
	[ -e /dev/vsock ] || skip "no vsock transport"
	echo 'guest.vsock_port = 52223' >"$VFSENTINEL_CONF"
	vsock-answer --events "$T/ev" --state-file "$T/state.json" \
	    --boot-id-file "$T/boot_id" 2>>"$T/answer.log" 3>&- &
	ANSWER_PID=$!
	wait_for grep -q '"endpoint":"vsock:52223"' "$T/answer.log"
	answer_stop
}

@test "a failed state-file write is retried within 5 s" {
	LD_PRELOAD=$(fault_env) FAIL_rename=1 FAIL_MATCH=state.json \
	    vsock-answer --events "$T/ev" --listen "unix:$SOCK" \
	    --state-file "$T/state.json" --boot-id-file "$T/boot_id" \
	    2>>"$T/answer.log" 3>&- &
	ANSWER_PID=$!
	wait_for answer_query >/dev/null
	answer_fail "$NVRM1"
	wait_for answer_state_is FAILED
	[ ! -e "$T/state.json" ]
	# The retry comes about 5 s later: waited for, not slept through.
	local start
	start=$(date +%s%N)
	wait_long test -s "$T/state.json"
	echo "written after $((($(date +%s%N) - start) / 1000000)) ms"
	run -0 jq -r .state "$T/state.json"
	assert_output FAILED
	grep -q '"msg":"state file written"' "$T/answer.log"
	answer_stop
}

# vport_start SPEC [ARGS...]: vsock-answer on a virtio-serial port
# (SPEC 6.1) in a fake sysfs $T/sys and device dir $T/dev, where the
# port's device is a regular file: like a port without a host, a read
# returns end-of-file at once; what a "host" appends is read, and the
# replies land after it (the file is a transcript).
vport_start() {
	local spec=$1
	shift
	vsock-answer --events "$T/ev" --listen "virtio-serial:$spec" \
	    --sysfs-root "$T/sys" --dev-dir "$T/dev" \
	    --state-file "$T/state.json" --boot-id-file "$T/boot_id" \
	    --log-level debug "$@" 2>>"$T/answer.log" 3>&- &
	ANSWER_PID=$!
	wait_for grep -q '"virtio-serial port open"' "$T/answer.log"
}

# vport_fixture ENTRY NAME: a port ENTRY (vport0p1) named NAME.
vport_fixture() {
	mkdir -p "$T/sys/sys/class/virtio-ports/$1" "$T/dev"
	echo "$2" >"$T/sys/sys/class/virtio-ports/$1/name"
	: >"$T/dev/$1"
}

# replies_in FILE N: FILE holds at least N reply lines.
replies_in() {
	[ "$(grep -c '^{"state"\|^{"error"' "$1")" -ge "$2" ]
}

@test "virtio-serial: the port is found by its name in sysfs and answers one request at a time" {
	vport_fixture vport0p1 other.port
	vport_fixture vport0p2 org.vfsentinel.0
	vport_start org.vfsentinel.0
	grep -q '"device":"'"$T"'/dev/vport0p2"' "$T/answer.log"
	answer_fail "$NVRM1"
	printf '%s\n' "$REQ" '{"method":"Nope"}' >>"$T/dev/vport0p2"
	wait_for replies_in "$T/dev/vport0p2" 2
	run -0 cat "$T/dev/vport0p2"
	assert_output "$(printf '%s\n' "$REQ" '{"method":"Nope"}' \
	    "$(jq -cn --arg m "$NVRM1" '{state:"FAILED",failure_message:$m}')" \
	    '{"error":"unsupported method"}')"
	assert_equal "$(cat "$T/dev/vport0p1")" ''
}

@test "virtio-serial: udev's /dev/virtio-ports/NAME wins, and a device path is used as given" {
	vport_fixture vport0p1 org.vfsentinel.0
	mkdir -p "$T/dev/virtio-ports"
	: >"$T/dev/virtio-ports/org.vfsentinel.0"
	vport_start org.vfsentinel.0
	echo "$REQ" >>"$T/dev/virtio-ports/org.vfsentinel.0"
	wait_for replies_in "$T/dev/virtio-ports/org.vfsentinel.0" 1
	answer_stop
	: >"$T/port"
	vport_start "$T/port"
	echo "$REQ" >>"$T/port"
	wait_for replies_in "$T/port" 1
	assert_equal "$(tail -n 1 "$T/port")" '{"state":"UNKNOWN"}'
	assert_equal "$(cat "$T/dev/vport0p1")" ''
}

@test "virtio-serial: no host (end of file) drops a partial request, never spins, and a host that comes back is served" {
	vport_fixture vport0p1 org.vfsentinel.0
	vport_start org.vfsentinel.0
	printf '{"method":"Get' >>"$T/dev/vport0p1"
	wait_for grep -q '"virtio-serial host gone"' "$T/answer.log"
	echo "$REQ" >>"$T/dev/vport0p1"
	wait_for replies_in "$T/dev/vport0p1" 1
	assert_equal "$(tail -n 1 "$T/dev/vport0p1")" '{"state":"UNKNOWN"}'
	# No host for 2 s: the port is read again every 0.2 s, no more.
	local t0 t1
	t0=$(awk '{ print $14 + $15 }' "/proc/$ANSWER_PID/stat")
	sleep 2
	t1=$(awk '{ print $14 + $15 }' "/proc/$ANSWER_PID/stat")
	[ $((t1 - t0)) -le 20 ]
	echo "$REQ" >>"$T/dev/vport0p1"
	wait_for replies_in "$T/dev/vport0p1" 2
	answer_stop
}

@test "virtio-serial: a port that is not there yet is waited for" {
	vsock-answer --events "$T/ev" --listen virtio-serial:org.vfsentinel.0 \
	    --sysfs-root "$T/sys" --dev-dir "$T/dev" \
	    --state-file "$T/state.json" --boot-id-file "$T/boot_id" \
	    2>>"$T/answer.log" 3>&- &
	ANSWER_PID=$!
	wait_for grep -q '"virtio-serial port not available; waiting"' \
	    "$T/answer.log"
	vport_fixture vport0p1 org.vfsentinel.0
	wait_long grep -q '"virtio-serial port open"' "$T/answer.log"
	echo "$REQ" >>"$T/dev/vport0p1"
	wait_for replies_in "$T/dev/vport0p1" 1
	answer_stop
}
