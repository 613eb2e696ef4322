#!/bin/sh
# run.sh BUILD SECONDS NAME... - runs each libFuzzer target BUILD/fuzz/fuzz-NAME
# for SECONDS seconds, FUZZ_JOBS targets at a time (default: the number of
# cores, nproc), and prints a summary line per target as it ends: seconds
# run, executions, corpus size, findings.
#
#   seeds      t/fuzz/corpus/NAME and t/fuzz/regress/NAME (read only)
#   corpus     BUILD/corpus/NAME (grows across runs; new units go here)
#   findings   BUILD/findings/NAME/crash-*, leak-*, timeout-*, oom-* (only
#              those of this run are counted)
#   logs       $FUZZ_LOGS (default BUILD/logs)/NAME.log
#   dictionary t/fuzz/dict/NAME.dict when present
#
# Exit status: 0 when no target found anything, 1 otherwise, 64 usage.
set -u
[ $# -ge 2 ] || { echo "usage: $0 BUILD SECONDS NAME..." >&2; exit 64; }
build=$1
secs=$2
shift 2
here=$(dirname "$0")
logs=${FUZZ_LOGS:-$build/logs}
mkdir -p "$logs"
found=0

max_len() {
	case $1 in
	kmsg|logtail) echo 24576 ;;
	health|claims|domain) echo 16384 ;;
	*) echo 8192 ;;
	esac
}

# fuzz_one NAME: runs one target; its summary line goes to the terminal,
# summary.txt and $logs/NAME.result.
fuzz_one() {
	name=$1
	bin=$build/fuzz/fuzz-$name
	corpus=$build/corpus/$name
	art=$build/findings/$name
	log=$logs/$name.log
	mkdir -p "$corpus" "$art"
	set -- -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
	    -max_len="$(max_len "$name")" -print_final_stats=1 \
	    -artifact_prefix="$art/"
	[ -f "$here/dict/$name.dict" ] && set -- "$@" -dict="$here/dict/$name.dict"
	seeds=
	for d in "$here/corpus/$name" "$here/regress/$name"; do
		[ -d "$d" ] && seeds="$seeds $d"
	done
	: >"$log.stamp"
	start=$(date +%s)
	# shellcheck disable=SC2086
	"$bin" "$@" "$corpus" $seeds >"$log" 2>&1
	rc=$?
	ran=$(( $(date +%s) - start ))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	units=$(find "$corpus" -type f | wc -l)
	finds=$(find "$art" -type f -newer "$log.stamp" | wc -l)
	rm -f "$log.stamp"
	[ "$rc" -ne 0 ] && [ "$finds" -eq 0 ] && finds=1
	printf 'fuzz-%s: seconds=%s execs=%s corpus=%s findings=%s rc=%s\n' \
	    "$name" "$ran" "${execs:-0}" "$units" "$finds" "$rc" \
	    >"$logs/$name.result"
	cat "$logs/$name.result"
	cat "$logs/$name.result" >>"$logs/summary.txt"
}

# The targets are dealt round-robin into $jobs lanes; each lane runs its
# own one after the other (every target runs the same SECONDS, so the
# lanes end together).
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
for name in "$@"; do
	rm -f "$logs/$name.result"
done
lane=0
pids=
while [ "$lane" -lt "$jobs" ]; do
	i=0
	mine=
	for name in "$@"; do
		[ $((i % jobs)) -eq "$lane" ] && mine="$mine $name"
		i=$((i + 1))
	done
	# shellcheck disable=SC2086 # target names have no blanks
	(for name in $mine; do fuzz_one "$name"; done) &
	pids="$pids $!"
	lane=$((lane + 1))
done
for p in $pids; do
	wait "$p"
done
for name in "$@"; do
	grep -q ' findings=0 ' "$logs/$name.result" 2>/dev/null || found=1
done
exit "$found"
