#!/bin/sh
# outputs-compare.sh BUILD OLD_BIN NEW_BIN OUT [BATS FILES...] - what
# every program wrote over the whole suite, old binaries against new
# (issue 29, item 8: a move changes no byte a user sees).
#
# Runs the suite (tools/runtests.sh, the given files or every t/*.bats)
# twice, once with OLD_BIN and once with NEW_BIN, each program behind a
# wrapper that records its argument vector, its standard output and its
# standard error (through tools/outputs-relay.c, a tee that leaves when
# its reader does; the program keeps its pid: the wrapper execs it)
# in OUT/old and OUT/new. tools/outputs-compare.py then normalises what
# differs between any two runs (temp paths, times, pids, durations) and
# compares, test by test, the multiset of (program, arguments, output,
# error) records. It prints the totals and each differing record, and
# exits 1 when the binaries wrote anything differently.
#
# Both runs go through the same wrappers, so a test the wrapping breaks
# (a guest initramfs needs the real binaries, a check of a process's
# argv[0]) fails in both the same way; the comparison names the tests
# whose result differs between the runs. Takes two suite runs' time.
set -eu
[ $# -ge 4 ] || {
	echo "usage: outputs-compare.sh BUILD OLD_BIN NEW_BIN OUT [BATS FILES...]" >&2
	exit 64
}
build=$1
old=$(cd "$2" && pwd)
new=$(cd "$3" && pwd)
out=$4
shift 4
[ $# -gt 0 ] || set -- t/*.bats
mkdir -p "$out"
out=$(cd "$out" && pwd)
# Programs run as other users (vfsentinel, nobody) reach the wrappers
# and write their records.
chmod 755 "$out"
# The recording tee (tools/outputs-relay.c): it leaves as soon as its
# reader does, as the program's own stdout would tell it.
${CC:-cc} -O2 -o "$out/relay" tools/outputs-relay.c
for side in old new; do
	if [ "$side" = old ]; then real=$old; else real=$new; fi
	rm -rf "${out:?}/$side"
	mkdir -p "$out/$side/bin" "$out/$side/cap"
	chmod 755 "$out/$side" "$out/$side/bin"
	chmod 1777 "$out/$side/cap"
	for p in "$real"/*; do
		if [ ! -f "$p" ] || [ ! -x "$p" ]; then continue; fi
		w=$out/$side/bin/${p##*/}
		cat >"$w" <<-EOF
		#!/bin/bash
		# outputs-compare.sh's recording wrapper of $p
		umask 0
		d=$out/$side/cap/\${BATS_TEST_FILENAME##*/}/\${BATS_TEST_NUMBER:-0}
		mkdir -p "\$d" 2>/dev/null
		if f=\$(mktemp "\$d/XXXXXXXX" 2>/dev/null); then
			printf '%s\\0' "${p##*/}" "\$@" >"\$f.argv"
			exec > >(exec "$out/relay" "\$f.out") \
			    2> >(exec "$out/relay" "\$f.err" >&2)
		fi
		exec "$p" "\$@"
		EOF
		chmod 755 "$w"
	done
	echo "outputs-compare: the suite with $real ($side)" >&2
	VFS_CAPTURE=$out/$side/cap sh tools/runtests.sh "$build" \
	    "$out/$side/bin" "$@" >"$out/$side/tap" 2>&1 || true
	tail -n 3 "$out/$side/tap" >&2
done
exec python3 tools/outputs-compare.py "$out"
