#!/bin/sh
# run.sh BUILD SECONDS NAME... - runs each libFuzzer target BUILD/fuzz/fuzz-NAME
# for SECONDS seconds, one after the other, and prints a summary line per
# target: seconds run, executions, corpus size, findings.
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
	health|claims) echo 16384 ;;
	*) echo 8192 ;;
	esac
}

for name in "$@"; do
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
	[ "$finds" -gt 0 ] && found=1
	printf 'fuzz-%s: seconds=%s execs=%s corpus=%s findings=%s rc=%s\n' \
	    "$name" "$ran" "${execs:-0}" "$units" "$finds" "$rc" |
	    tee -a "$logs/summary.txt"
done
exit "$found"
