#!/bin/bash
# sentinel.sh - sentinel-poll scan time and memory.
#
#  1. One scan (--once) of 1,000 responsive guests (all OK, so every line also goes through the
#     assignment re-read) on Unix sockets, all
#     served by one sentinel-guests process: wall time and peak RSS. The
#     same-run references are a shell loop asking 100 of the same guests
#     with socat one after the other (scaled to 1,000), the way an
#     operator would script it, and the RSS of a scan with no targets.
#  2. 200 guests of which 100 never answer, --concurrency 64 --timeout 1:
#     scan time against its floor ceil(100/64) x timeout = 2 s.
# Prints: "figure: VALUE (ratio X against REFERENCE ...; target ...)".
set -eu

ulimit -n 4096 2>/dev/null || true
W=$(mktemp -d /tmp/bench-sentinel.XXXXXX)
GPID=
CPID=
cleanup() {
	[ -z "$GPID" ] || kill "$GPID" 2>/dev/null || true
	[ -z "$CPID" ] || kill "$CPID" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT
export VFSENTINEL_CONF=/dev/null
export PATH="$PWD/bin:$PWD/build/t:$PATH"
SYSFS=$W/sysfs
mkdir -p "$SYSFS/sys/bus/pci/devices/0000:e3:00.4/nvidia" "$W/g"
: >"$SYSFS/sys/bus/pci/devices/0000:e3:00.4/nvidia/creatable_vgpu_types"
# The VMs' control socket: a real listener (sentinel-poll polls only
# targets whose VMM is alive, SPEC 4.4).
socat "UNIX-LISTEN:$W/ctl,fork" EXEC:true 2>"$W/ctl.log" &
CPID=$!

# targets N PREFIX [SILENT_PREFIX]: N target lines; with SILENT_PREFIX
# every other one points at a silent guest.
targets() {
	local i ep
	for ((i = 0; i < $1; i++)); do
		ep="unix:$W/g/$2$i"
		if [ -n "${3:-}" ] && ((i % 2)); then
			ep="unix:$W/g/$3$((i / 2))"
		elif [ -n "${3:-}" ]; then
			ep="unix:$W/g/$2$((i / 2))"
		fi
		printf '{"vf_address":"0000:%02x:%02x.%d","instance_id":"i-%d","claimed_at":"2026-08-20T15:00:00Z","vsock":"%s","control_socket":"%s"}\n' \
		    $((0x40 + i / 256)) $((i / 8 % 32)) $((i % 8)) "$i" "$ep" "$W/ctl"
	done
}

sentinel-guests "$W/g" 'g*1000=ok' 'r*100=ok' 's*100=silent' \
    2>"$W/guests.log" &
GPID=$!
for i in $(seq 200); do
	[ -e "$W/g/ready" ] && [ -S "$W/ctl" ] && break
	sleep 0.05
done
targets 1000 g >"$W/t1000"
: >"$W/t0"
{ targets 200 r s; } >"$W/t200"

# run_time FILE ARGS...: "seconds maxrss_kib" of one sentinel-poll run.
run_time() {
	local f=$1
	shift
	/usr/bin/time -f '%e %M' -o "$W/time" sentinel-poll --sysfs-root \
	    "$SYSFS" --targets "$f" --once --log-level warn "$@" \
	    >"$W/out" 2>"$W/err"
	cat "$W/time"
}

# Best of 5 (the machine is shared), checked for 1,000 answers.
best=999 rss=0
for i in 1 2 3 4 5; do
	read -r s m < <(run_time "$W/t1000")
	[ "$(grep -c '"check":"ok"' "$W/out")" -eq 1000 ] ||
	    { echo "sentinel: scan of 1000 did not answer 1000" >&2; exit 1; }
	best=$(echo "$s $best" | awk '{ print ($1 < $2) ? $1 : $2 }')
	[ "$m" -gt "$rss" ] && rss=$m
done
read -r _ rss0 < <(run_time "$W/t0")
t0=$(date +%s%N)
for ((i = 0; i < 100; i++)); do
	printf '{"method":"GetGPUInitStatus"}\n' |
	    socat -t 1 - "UNIX-CONNECT:$W/g/g$i" >/dev/null
done
ref=$(( ($(date +%s%N) - t0) / 100000 ))	# x10, in ms
ref=$(awk -v r="$ref" 'BEGIN { printf "%.2f", r / 1000 }')
echo "scan of 1000 responsive guests: ${best} s (ratio $(awk -v a="$best" -v b="$ref" 'BEGIN { printf "%.3f", a / b }') against a sequential socat loop, ${ref} s scaled from 100, measured in the same run; target <= 0.5 s)"
echo "peak RSS scanning 1000 guests: $((rss)) KiB (ratio $(awk -v a="$rss" -v b="$rss0" 'BEGIN { printf "%.2f", a / b }') against the same program scanning no targets, ${rss0} KiB, measured in the same run; target <= 4096 KiB)"

read -r s _ < <(run_time "$W/t200" --concurrency 64 --timeout 1)
[ "$(grep -c rpc_error "$W/out")" -eq 100 ] ||
    { echo "sentinel: expected 100 timeouts" >&2; exit 1; }
echo "scan of 200 guests, 100 silent, concurrency 64, timeout 1: ${s} s (ratio $(awk -v a="$s" 'BEGIN { printf "%.2f", a / 2 }') against the floor ceil(100/64) x 1 s = 2 s; target <= 1.2)"
