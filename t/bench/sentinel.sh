#!/bin/bash
# sentinel.sh - sentinel-poll scan time and memory.
#
#  1. One scan (--once) of 1,000 responsive guests (all OK, so every line also goes through the
#     assignment re-read) on Unix sockets, each with a live control
#     socket of its own (a listener, as a VMM's QMP socket is, so the
#     liveness gate reads a /proc/net/unix of 1,000 more listeners), all
#     served by one sentinel-guests process: wall time and peak RSS. The
#     same-run references are a shell loop asking 100 of the same guests
#     with socat one after the other (scaled to 1,000), the way an
#     operator would script it, and the RSS of a scan with no targets.
#  2. 200 guests of which 100 never answer, --concurrency 64 --timeout 1:
#     scan time against its floor ceil(100/64) x timeout = 2 s.
#  3. Detection latency, end to end through the real pipeline
#     (sentinel-poll --interval 1 | vfstore apply) with real vsock-answer
#     guests: from a guest turning FAILED (its event written) to the
#     second failure's quarantine being in vf-health.json; 20 VFs, each
#     with one earlier failure, turned one at a time at a random phase
#     of the scan interval; median and worst of 20.
# Prints: "figure: VALUE (ratio X against REFERENCE ...; target ...)".
set -eu
# shellcheck source=t/bench/lib.bash
. t/bench/lib.bash

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
# A regular file: a configuration that is not one is refused (SPEC 6.3).
export VFSENTINEL_CONF=$PWD/t/bench/empty.conf
export PATH="${VFS_BIN:-$PWD/bin}:${VFS_BUILD:-$PWD/build}/t:$PATH"
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
		    $((0x40 + i / 256)) $((i / 8 % 32)) $((i % 8)) "$i" "$ep" \
		    "${4:-$W/ctl}"
	done
}

sentinel-guests "$W/g" 'g*1000=ok' 'r*100=ok' 's*100=silent' \
    'c*1000=noaccept' 'v*20=noaccept' 2>"$W/guests.log" &
GPID=$!
for i in $(seq 200); do
	[ -e "$W/g/ready" ] && [ -S "$W/ctl" ] && break
	sleep 0.05
done
# Each guest's own control socket: c0 .. c999.
targets 1000 g | awk -v d="$W/g" '{ sub(/"control_socket":"[^"]*"/,
    "\"control_socket\":\"" d "/c" NR - 1 "\""); print }' >"$W/t1000"
[ "$(grep -c '/g/c[0-9]*"}$' "$W/t1000")" -eq 1000 ] ||
    { echo "sentinel: targets without their own control socket" >&2; exit 1; }
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
echo "scan of 1000 responsive guests, each with a live control socket: ${best} s (ratio $(awk -v a="$best" -v b="$ref" 'BEGIN { printf "%.3f", a / b }') against a sequential socat loop, ${ref} s scaled from 100, measured in the same run; target <= 0.2 s)"
echo "peak RSS scanning 1000 guests: $((rss)) KiB (ratio $(awk -v a="$rss" -v b="$rss0" 'BEGIN { printf "%.2f", a / b }') against the same program scanning no targets, ${rss0} KiB, measured in the same run; target <= 4096 KiB)"

read -r s _ < <(run_time "$W/t200" --concurrency 64 --timeout 1)
[ "$(grep -c rpc_error "$W/out")" -eq 100 ] ||
    { echo "sentinel: expected 100 timeouts" >&2; exit 1; }
echo "scan of 200 guests, 100 silent, concurrency 64, timeout 1: ${s} s (ratio $(awk -v a="$s" 'BEGIN { printf "%.2f", a / 2 }') against the floor ceil(100/64) x 1 s = 2 s; target <= 1.2)"

# --- 3. detection latency ------------------------------------------------
# 20 VFs of one card, each failed once before (assignment i-0-K); the
# claims i-1-K are polled every second; guest K answers UNKNOWN until
# its turn.
D=$W/data
APIDS=()
TS0=2026-08-19T08:00:00Z
mkdir -p "$W/a" "$SYSFS/sys/bus/pci/devices/0000:50:00.0"
vfstore --data-dir "$D" init >/dev/null 2>&1 || mkdir -p "$D/gpu"
vf_of() { printf '0000:50:%02x.%d' $(($1 / 8 + 1)) $(($1 % 8)); }
for ((k = 0; k < 20; k++)); do
	v=$(vf_of $k)
	d=$SYSFS/sys/bus/pci/devices/$v
	mkdir -p "$d/nvidia"
	ln -s ../0000:50:00.0 "$d/physfn"
	echo 0 >"$d/nvidia/current_vgpu_type"
	printf 'ID    : vGPU Name\n1160  : NVIDIA L40S-12Q\n' \
	    >"$d/nvidia/creatable_vgpu_types"
	vfstore --sysfs-root "$SYSFS" --data-dir "$D" report-failure \
	    --vf "$v" --instance "i-0-$k" --assigned-at "$TS0" >/dev/null \
	    2>>"$W/setup.log"
	mkfifo "$W/a/$k.ev"
	echo "boot-$k" >"$W/a/$k.boot"
	vsock-answer --events "$W/a/$k.ev" --listen "unix:$W/a/$k" \
	    --state-file "$W/a/$k.state" --boot-id-file "$W/a/$k.boot" \
	    2>>"$W/answer.log" &
	APIDS+=("$!")
	printf '{"vf_address":"%s","instance_id":"i-1-%d","claimed_at":"2026-08-20T15:00:00Z","vsock":"unix:%s/a/%d","control_socket":"%s/g/v%d"}\n' \
	    "$v" $k "$W" $k "$W" $k
done >"$W/tlat"
for i in $(seq 200); do
	[ "$(find "$W/a" -type s | wc -l)" -eq 20 ] && break
	sleep 0.05
done
sentinel-poll --sysfs-root "$SYSFS" --data-dir "$D" --targets "$W/tlat" \
    --interval 1 --log-level warn 2>"$W/poll.log" |
    vfstore --sysfs-root "$SYSFS" --data-dir "$D" apply >/dev/null \
    2>"$W/apply.log" &
PPIDS=$!
sleep 2
: >"$W/lat"
for ((k = 0; k < 20; k++)); do
	v=$(vf_of $k)
	# A random phase of the 1 s scan interval.
	sleep "0.$(printf '%03d' $((RANDOM % 1000)))"
	ev=$(jq -cn --arg m 'NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)' \
	    '{event:"gpu_init_failed",seq:1,ts_usec:2,message:$m}')
	t0=$(date +%s%N)
	printf '%s\n' "$ev" >"$W/a/$k.ev"
	for ((n = 0; n < 1000; n++)); do
		quarantined "$v" && break
		sleep 0.005
	done
	quarantined "$v" ||
	    { echo "sentinel: $v not quarantined within 5 s" >&2; exit 1; }
	echo $((($(date +%s%N) - t0) / 1000000)) >>"$W/lat"
done
# apply gone, sentinel-poll exits on the broken pipe within a second.
kill "${APIDS[@]}" "$PPIDS" 2>/dev/null || true
read -r med worst < <(sort -n "$W/lat" | awk '{ v[NR] = $1 }
    END { printf "%.2f %.2f\n", (v[10] + v[11]) / 2000, v[NR] / 1000 }')
echo "detection latency, guest FAILED -> second failure's quarantine in vf-health.json, sentinel.interval 1, through sentinel-poll | vfstore apply: median ${med} s, worst ${worst} s of 20 (ratio $(awk -v a="$med" 'BEGIN { printf "%.2f", a / 1.2 }') against interval + 0.2 s = 1.2 s; target median <= 1.2 s)"
