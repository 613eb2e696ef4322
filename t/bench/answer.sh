#!/bin/bash
# answer.sh - status queries per second that vsock-answer serves over a
# Unix socket, and its peak RSS while doing so. The client
# (build/t/answer-client bench) keeps 8 connections in flight, each one
# connect + request line + reply line + close. The same-run reference is
# the same client against socat's echo server (UNIX-LISTEN,fork PIPE),
# the usual shell-level way to answer a line on a socket.
# Prints: "figure: VALUE (ratio X against REFERENCE ...; target ...)".
# Fails only on a wrong reply; figures below target are reported, not
# fatal, since a loaded 2-core machine cannot promise a rate.
set -eu

SECS=${SECS:-5}
INFLIGHT=${INFLIGHT:-8}
# shellcheck source=t/bench/lib.bash
. t/bench/lib.bash
bench_workspace answer
# A regular file: a configuration that is not one is refused (SPEC 6.3).
export VFSENTINEL_CONF=$PWD/t/bench/empty.conf
export PATH="$PWD/bin:$PWD/build/t:$PATH"
echo bench-boot >"$W/boot_id"

# A FAILED state, so every reply carries the NVRM message.
vsock-answer --events - --listen "unix:$W/a.sock" --state-file "$W/state.json" \
    --boot-id-file "$W/boot_id" --log-level warn 2>"$W/answer.log" \
    <<<'{"event":"gpu_init_failed","message":"NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)"}' &
APID=$!
PIDS="$PIDS $APID"
socat UNIX-LISTEN:"$W/e.sock",fork PIPE 2>/dev/null &
PIDS="$PIDS $!"
for _ in $(seq 100); do
	[ -S "$W/a.sock" ] && [ -S "$W/e.sock" ] && break
	sleep 0.05
done

ans=$(answer-client bench "$W/a.sock" "$SECS" "$INFLIGHT")
ref=$(answer-client bench "$W/e.sock" "$SECS" "$INFLIGHT" '{"method":' || true)
hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$APID/status")
rate=$(jq -r .rate <<<"$ans")
refrate=$(jq -r .rate <<<"$ref")
bad=$(jq -r .bad <<<"$ans")
[ "$bad" -eq 0 ] || { echo "answer: $bad bad replies" >&2; exit 1; }

awk -v r="$rate" -v ref="$refrate" -v k="$INFLIGHT" 'BEGIN {
	printf "vsock-answer status queries/s (unix socket, %d in flight): %d (ratio %.1f against socat echo server %d/s measured in the same run; target >= 20000/s, ratio %.2f against target)\n", k, r, r / ref, ref, r / 20000 }'
awk -v h="$hwm" 'BEGIN {
	printf "vsock-answer peak RSS during the run: %.2f MiB (ratio %.2f against target 2 MiB; target <= 2 MiB)\n", h / 1024, h / 2048 }'
