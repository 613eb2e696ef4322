#!/bin/bash
# kmsg.sh - kmsg-watch throughput, memory and storm cost.
#
#  1. --kmsg FILE over 1,000,000 records (1 in 1,000 a failure) against
#     `grep -cF 'RmInitAdapter failed!'` on the same (cached) file: the
#     best of 7 alternating runs each (the least disturbed by other load on
#     the machine); target <= 1.5x grep's time.
#  2. Peak RSS of that run (ru_maxrss, via kmsg-rss); target <= 2 MiB.
#  3. A storm of 20,000 records/s for 20 s (shortened from 60 s to keep
#     the benchmark under a minute) through a FIFO, with grep -cF reading
#     the same storm through its own FIFO as the reference: every failure
#     must be reported, CPU from /proc/PID/stat utime+stime; target <= 10%
#     of one core.
# Run from the repository root with bin/ and build/bench/ built.
set -euo pipefail

T=$(mktemp -d)
trap 'exec 7>&- 8>&- 2>/dev/null; rm -rf "$T"' EXIT
NEEDLE='RmInitAdapter failed!'
RATE=20000 SECS=20 EVERY=1000

awk 'BEGIN {
	for (i = 0; i < 1000000; i++) {
		if (i % 1000 == 500)
			printf "3,%d,%d,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)\n", i, i * 37
		else
			printf "6,%d,%d,-;virtio_net virtio1 eth0: renamed from eth%d, queue %d ready\n", i, i * 37, i % 7, i % 64
	}
}' >"$T/m.kmsg"
cat "$T/m.kmsg" >/dev/null

ns() { date +%s%N; }

# time_one VAR CMD...: runs CMD with output to $T/out, adds its wall time
# in ns to the array VAR.
time_one() {
	local -n acc=$1
	shift
	local s e
	s=$(ns)
	"$@" >"$T/out" 2>/dev/null
	e=$(ns)
	acc+=($((e - s)))
}

best() {
	printf '%s\n' "$@" | sort -n | head -1
}

grep_ns=() watch_ns=()
for _ in 1 2 3 4 5 6 7; do
	time_one grep_ns grep -cF "$NEEDLE" "$T/m.kmsg"
	[ "$(cat "$T/out")" = 1000 ] || { echo "grep miscounted"; exit 1; }
	time_one watch_ns kmsg-watch --no-pci-check --kmsg "$T/m.kmsg"
	[ "$(wc -l <"$T/out")" = 1000 ] || { echo "kmsg-watch miscounted"; exit 1; }
done
g=$(best "${grep_ns[@]}") w=$(best "${watch_ns[@]}")
awk -v g="$g" -v w="$w" 'BEGIN {
	printf "kmsg-watch, 1,000,000-record file: %.3f s (ratio %.2f against grep -cF %.3f s measured in the same run; target <= 1.5)\n", w / 1e9, w / g, g / 1e9
}'

rss_w=$(kmsg-rss kmsg-watch --no-pci-check --kmsg "$T/m.kmsg" 2>/dev/null)
rss_g=$(kmsg-rss grep -cF "$NEEDLE" "$T/m.kmsg")
awk -v w="$rss_w" -v g="$rss_g" 'BEGIN {
	printf "kmsg-watch peak RSS: %.2f MiB (ratio %.2f against grep -cF %.2f MiB measured in the same run; target <= 2 MiB)\n", w / 1024, w / g, g / 1024
}'

# cpu_ticks PID: utime + stime of a live process, in clock ticks.
cpu_ticks() {
	awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}

mkfifo "$T/f1" "$T/f2"
kmsg-watch --no-pci-check --kmsg "$T/f1" >"$T/events" 2>"$T/log" &
wpid=$!
grep -cF "$NEEDLE" "$T/f2" >"$T/grep.count" &
gpid=$!
# Holding the FIFOs open keeps both readers alive after the storm, so
# their counters can be read before they see the end.
exec 7>"$T/f1" 8>"$T/f2"
s=$(ns)
kmsg-storm "$RATE" "$SECS" "$EVERY" | tee /dev/fd/7 >&8
e=$(ns)
sleep 0.5
wt=$(cpu_ticks "$wpid") gt=$(cpu_ticks "$gpid")
exec 7>&- 8>&-
wait "$wpid" "$gpid"
want=$((RATE * SECS / EVERY))
got=$(wc -l <"$T/events")
[ "$(cat "$T/grep.count")" = "$want" ] || { echo "storm: grep saw $(cat "$T/grep.count") of $want"; exit 1; }
awk -v w="$wt" -v g="$gt" -v hz="$(getconf CLK_TCK)" -v ns=$((e - s)) \
    -v got="$got" -v want="$want" -v rate="$RATE" -v secs="$SECS" 'BEGIN {
	wall = ns / 1e9
	pw = 100 * w / hz / wall; pg = 100 * g / hz / wall
	printf "kmsg-watch storm, %d records/s for %d s through a FIFO: %d of %d failures reported, CPU %.2f%% of a core (ratio %.2f against grep -cF %.2f%% measured in the same run; target <= 10%%, every failure reported)\n", rate, secs, got, want, pw, (g ? w / g : 0), pg
}'
[ "$got" = "$want" ]
