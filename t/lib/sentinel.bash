# sentinel.bash - helpers for the sentinel-poll and sentinel service tests
# (`load lib/sentinel`). Everything lives under the test's $T; sockets
# under $T/g (short paths).

NVRM='NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)'
# shellcheck disable=SC2034 # for the tests that load this file
TS1='2026-08-20T15:00:00Z'
# shellcheck disable=SC2034
TS2='2026-08-21T09:30:00.5Z'

# sentinel_setup: call from setup() after vfs_setup. A host with the
# vendor-VFIO framework (one card, four VFs), the guest dir $G and a live
# VMM control socket $CTL (a real listener, see ctl_listen).
sentinel_setup() {
	local n
	need_tool socat
	G=$T/g
	CTL=$G/ctl
	TARGETS=$T/targets
	mkdir -p "$G"
	mk_card "$SYSFS" 0000:e3:00.0
	for n in 4 5 6 7; do
		mk_vf "$SYSFS" 0000:e3:00.0 "0000:e3:00.$n"
	done
	: >"$TARGETS"
	SENTINEL_PIDS=
	QEMU_PIDS=
	export G CTL TARGETS
	ctl_listen "$CTL"
}

# sentinel_teardown: call from teardown(); stops every helper started.
sentinel_teardown() {
	local p
	qemu_teardown
	for p in $SENTINEL_PIDS; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in $SENTINEL_PIDS; do
		wait "$p" 2>/dev/null || true
	done
}

# bg_track PID: remember a background helper for teardown.
bg_track() {
	SENTINEL_PIDS="$SENTINEL_PIDS $1"
}

# unix_listening PATH: a listening Unix socket is bound to PATH: its line
# in /proc/net/unix has the flag 00010000 (column 4), the path column 8.
unix_listening() {
	awk -v p="$1" '$4 == "00010000" && $8 == p { f = 1 } END { exit !f }' \
	    /proc/net/unix
}

# unix_unlisted PATH: no listener is bound to PATH (for wait_for).
unix_unlisted() {
	! unix_listening "$1"
}

# ctl_listen PATH: a stand-in for a live VMM's control socket: a real Unix
# listener (socat) bound to PATH. sentinel-poll sees it listed in
# /proc/net/unix and never connects to it.
ctl_listen() {
	socat "UNIX-LISTEN:$1,fork,unlink-early" EXEC:true \
	    2>>"$T/ctl.log" 3>&- &
	bg_track $!
	wait_for unix_listening "$1"
}

# qemu_start NAME: a real QEMU without a guest (no KVM needed) as a VM's
# VMM; its QMP socket is $G/NAME.qmp, its pid in $G/NAME.pid.
qemu_start() {
	qemu-system-x86_64 -machine none -nodefaults -display none \
	    -qmp "unix:$G/$1.qmp,server=on,wait=off" -daemonize \
	    -pidfile "$G/$1.pid" </dev/null >/dev/null 2>>"$T/qemu.log" 3>&-
	QEMU_PIDS="$QEMU_PIDS $(cat "$G/$1.pid")"
	wait_for unix_listening "$G/$1.qmp"
}

# qemu_kill NAME: SIGKILL, as an OOM kill or a crash does: the process
# ends and its QMP socket file stays behind.
qemu_kill() {
	kill -KILL "$(cat "$G/$1.pid")"
	wait_for unix_unlisted "$G/$1.qmp"
}

# qemu_quit NAME: a clean stop through QMP `quit`; QEMU removes its
# socket file.
qemu_quit() {
	printf '%s\n' '{"execute":"qmp_capabilities"}' '{"execute":"quit"}' |
	    socat -t 2 - "UNIX-CONNECT:$G/$1.qmp" >"$T/$1.quit" 2>&1
	wait_for test ! -e "$G/$1.qmp"
}

# qemu_teardown: SIGKILL every QEMU qemu_start started that still runs
# (its comm checked, so a reused pid is left alone).
qemu_teardown() {
	local p
	for p in ${QEMU_PIDS:-}; do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = qemu-system-x86 ] &&
		    kill -KILL "$p" 2>/dev/null
	done
	return 0
}

# qmp_hold SOCK: another client (as libvirt is) connects to the QMP
# socket SOCK, reads the greeting and holds the monitor, idle.
qmp_hold() {
	python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.recv(4096)
open(sys.argv[2], "w").close()
time.sleep(600)' "$1" "$1.held" 2>>"$T/hold.log" 3>&- &
	bg_track $!
	wait_for test -e "$1.held"
}

# accept_queue_room SOCK: how many non-blocking connects SOCK still takes
# (at most 5) before EAGAIN. QEMU's QMP socket listens with a backlog of
# 1, which Linux lets hold two waiting connections; while another client
# holds the monitor nothing is accepted, so each connect anyone made
# since takes one of those two places for good.
accept_queue_room() {
	python3 -c '
import errno, socket, sys
n = 0
for _ in range(5):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_NONBLOCK)
    try:
        s.connect(sys.argv[1])
    except BlockingIOError:
        break
    n += 1
print(n)' "$1"
}

# guests SPEC...: starts sentinel-guests on $G (see t/lib/sentinel-guests.c)
# and waits until every socket listens.
guests() {
	rm -f "$G/ready"
	sentinel-guests "$G" "$@" 2>>"$T/guests.log" 3>&- &
	bg_track $!
	# Up to 15 s: the test machine is shared and can be very busy.
	wait_for test -e "$G/ready" || wait_for test -e "$G/ready" ||
	    wait_for test -e "$G/ready"
}

# answer_guest NAME STATE: a real vsock-answer on unix:$G/NAME in STATE
# (UNKNOWN, FAILED or OK), fed from a FIFO $G/NAME.ev kept open.
answer_guest() {
	local name=$1 state=$2
	mkfifo "$G/$name.ev"
	echo "boot-$name" >"$G/$name.boot"
	vsock-answer --events "$G/$name.ev" --listen "unix:$G/$name" \
	    --state-file "$G/$name.state" --boot-id-file "$G/$name.boot" \
	    2>>"$T/answer-$name.log" 3>&- &
	bg_track $!
	wait_for test -S "$G/$name"
	answer_set "$name" "$state"
}

# answer_set NAME STATE: moves a vsock-answer guest to STATE.
answer_set() {
	local name=$1 state=$2 ev
	case $state in
	FAILED) ev=$(jq -cn --arg m "$NVRM" \
	    '{event:"gpu_init_failed",seq:1,ts_usec:2,message:$m}') ;;
	OK) ev='{"event":"gpu_init_ok","output":"GPU 0: NVIDIA L40S"}' ;;
	*) return 0 ;;
	esac
	printf '%s\n' "$ev" >"$G/$name.ev"
	wait_for guest_state_is "$G/$name" "$state"
}

# guest_state_is SOCK STATE: the guest at SOCK answers STATE.
guest_state_is() {
	[ "$(printf '{"method":"GetGPUInitStatus"}\n' |
	    socat -t 2 - "UNIX-CONNECT:$1" | jq -r .state)" = "$2" ]
}

# hvsock_proxy NAME GUEST_SOCK [PORT]: a fake Firecracker/Cloud
# Hypervisor VMM socket $G/NAME: reads "CONNECT PORT", answers
# "OK 1073741824" when PORT (default 2222) matches and bridges to the
# guest's Unix socket, otherwise closes.
hvsock_proxy() {
	local name=$1 guest=$2 port=${3:-2222}
	cat >"$G/$name.sh" <<-EOS
	#!/bin/sh
	IFS= read -r line || exit 0
	case \$line in "CONNECT "*) p=\${line#CONNECT } ;; *) exit 0 ;; esac
	[ "\$p" = "$port" ] || exit 0
	printf 'OK %s\n' 1073741824
	exec socat - "UNIX-CONNECT:$guest"
	EOS
	chmod +x "$G/$name.sh"
	setsid socat "UNIX-LISTEN:$G/$name,fork,unlink-early" \
	    "EXEC:$G/$name.sh" 2>>"$T/socat.log" 3>&- &
	bg_track $!
	wait_for test -S "$G/$name"
}

# target VF INSTANCE CLAIMED_AT ENDPOINT [CONTROL_SOCKET [APP_LOG]]:
# prints one --targets line.
target() {
	jq -cn --arg vf "$1" --arg id "$2" --arg at "$3" --arg ep "$4" \
	    --arg ctl "${5-$CTL}" --arg log "${6-}" \
	    '{vf_address:$vf, instance_id:$id, claimed_at:$at}
	     + (if $ep == "" then {} else {vsock:$ep} end)
	     + (if $ctl == "" then {} else {control_socket:$ctl} end)
	     + (if $log == "" then {} else {app_log:$log} end)'
}

# hits NAME: how many requests the sentinel-guests socket NAME got.
hits() {
	if [ -e "$G/$1.hits" ]; then
		stat -c %s "$G/$1.hits"
	else
		echo 0
	fi
}

# poll_once [ARGS...]: one scan over $TARGETS (run it with `run`).
poll_once() {
	sentinel-poll --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --targets "$TARGETS" --once "$@"
}

# checks_of: the check lines of $output as "check vf instance" rows,
# sorted (completion order is not fixed).
# shellcheck disable=SC2154 # output is bats' (run)
checks_of() {
	printf '%s\n' "$output" | jq -r '"\(.check) \(.vf_address) \(.instance_id)"' |
	    sort
}

# marker_failed [TS]: a console FAILED marker line (no newline).
marker_failed() {
	printf '2026/08/20 15:00:31 [guest-agent] HYPEMAN-GPU-INIT-FAILED ts=%s nvrm="%s"' \
	    "${1:-2026-08-20T15:00:31.5Z}" "$NVRM"
}

# marker_ok: a console OK marker line (no newline).
marker_ok() {
	printf '2026/08/20 15:01:00 [guest-agent] HYPEMAN-GPU-INIT-OK ts=2026-08-20T15:01:00Z'
}

# hits_ge NAME N: the socket NAME got at least N requests (for wait_for).
hits_ge() {
	[ "$(hits "$1")" -ge "$2" ]
}

# log_poller [ARGS...]: a long-running `sentinel-poll --source log` over
# $TARGETS, one scan a second, output in $T/out, debug log in $T/err.
log_poller() {
	sentinel-poll --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --targets "$TARGETS" --source log --interval 1 --log-level debug \
	    "$@" >"$T/out" 2>"$T/err" 3>&- &
	POLLER_PID=$!
	bg_track $POLLER_PID
	wait_for scans_ge 1
}

# scans_ge N: the poller finished at least N scans.
scans_ge() {
	[ "$(grep -c '"msg":"scan finished"' "$T/err")" -ge "$1" ]
}

# next_scan: waits until a whole scan ran after this call.
next_scan() {
	local n
	n=$(grep -c '"msg":"scan finished"' "$T/err")
	wait_for scans_ge $((n + 2))
}
