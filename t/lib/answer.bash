# answer.bash - helpers for the vsock-answer tests (`load lib/answer`).
#
# Every helper works on the test's $T: the events FIFO $T/ev, the socket
# $T/s, the state file $T/state.json, the boot id file $T/boot_id and the
# log $T/answer.log.

# shellcheck disable=SC2034 # used by the test files
REQ='{"method":"GetGPUInitStatus"}'
# shellcheck disable=SC2034
NVRM1='NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)'
# shellcheck disable=SC2034
NVRM2='NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x26:0xffff:1482)'

# answer_setup: call from setup() after vfs_setup.
answer_setup() {
	need_tool socat
	SOCK=$T/s
	echo "boot-1111" >"$T/boot_id"
	export SOCK
}

# answer_start [ARGS...]: starts vsock-answer in the background
# (ANSWER_PID) and waits until it answers.
answer_start() {
	vsock-answer --events "$T/ev" --listen "unix:$SOCK" \
	    --state-file "$T/state.json" --boot-id-file "$T/boot_id" "$@" \
	    2>>"$T/answer.log" 3>&- &
	ANSWER_PID=$!
	wait_for answer_query >/dev/null
}

# answer_stop: SIGTERM, then the exit status is checked to be 0.
answer_stop() {
	[ -n "${ANSWER_PID:-}" ] || return 0
	kill -TERM "$ANSWER_PID" 2>/dev/null || true
	local rc=0
	wait "$ANSWER_PID" || rc=$?
	ANSWER_PID=
	return "$rc"
}

# answer_teardown: call from teardown(): kills the vsock-answer a test
# started (ANSWER_PID) and the FIFO writer it held open (HOLD_PID).
answer_teardown() {
	local p
	for p in "${ANSWER_PID:-}" "${HOLD_PID:-}"; do
		[ -n "$p" ] || continue
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}

# answer_query [REQUEST]: one request line, prints the reply line.
answer_query() {
	printf '%s\n' "${1:-$REQ}" | socat -t 5 - "UNIX-CONNECT:$SOCK"
}

# answer_event JSON...: writes event lines into the FIFO.
answer_event() {
	printf '%s\n' "$@" >"$T/ev"
}

# answer_fail MSG: a gpu_init_failed event for MSG.
answer_fail() {
	answer_event "$(jq -cn --arg m "$1" '{event:"gpu_init_failed",seq:1,ts_usec:2,message:$m}')"
}

# answer_state_is STATE: the server answers STATE (for wait_for).
answer_state_is() {
	[ "$(answer_query "$REQ" | jq -r .state)" = "$1" ]
}

# answer_hwm_below KB: the server's peak resident set size is below KB
# KiB (not checked in a sanitizer run, whose shadow memory dominates).
answer_hwm_below() {
	local kb
	kb=$(awk '/^VmHWM:/ { print $2 }' "/proc/$ANSWER_PID/status")
	echo "vsock-answer VmHWM ${kb} KiB" >&2
	[ -n "${VFS_SAN:-}" ] || [ "$kb" -lt "$1" ]
}
