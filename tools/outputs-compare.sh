#!/bin/sh
# outputs-compare.sh BUILD OLD_BIN NEW_BIN OUT [BATS FILES...] - what
# every program wrote over the whole suite, old binaries against new
# (issue 29, item 8: a move changes no byte a user sees).
#
# Runs the suite (tools/runtests.sh, the given files or every t/*.bats
# but t/98-install.bats, whose make install would put the binaries over
# the wrappers) three times, with OLD_BIN, NEW_BIN and OLD_BIN again,
# each program behind a wrapper that records its argument vector, its
# standard output and its standard error (through tools/outputs-relay.c,
# a tee that leaves when its reader does; the program keeps its pid: the
# wrapper execs it; getrandom(2) is a fixed sequence in it,
# tools/outputs-norandom.c) in OUT/old, OUT/new and OUT/old2.
# tools/outputs-compare.py then normalises what differs between any two
# runs (temp paths, times, pids, durations, line order, repeats) and
# compares, test by test, the records of the old and new binaries; where
# the two old runs differ (timing), a new record counts as different only
# if neither old run wrote it. It prints the totals and each difference,
# and exits 1 when the binaries wrote anything differently.
#
# All runs go through the same wrappers, so a test the wrapping breaks
# (a guest initramfs needs the real binaries, a write to /dev/full that
# the relay takes first) fails the same way in each. Takes three suite
# runs' time.
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
if [ $# -eq 0 ]; then
	for f in t/*.bats; do
		[ "$f" = t/98-install.bats ] || set -- "$@" "$f"
	done
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
# Programs run as other users (vfsentinel, nobody) reach the wrappers
# and write their records.
chmod 755 "$out"
# The recording tee (tools/outputs-relay.c): it leaves as soon as its
# reader does, as the program's own stdout would tell it.
${CC:-cc} -O2 -o "$out/relay" tools/outputs-relay.c
# getrandom(2) as a fixed sequence in the recorded programs (and what
# they start): vfpick's random draw is then the same old and new.
${CC:-cc} -O2 -shared -fPIC -o "$out/norandom.so" tools/outputs-norandom.c
for side in old new old2; do
	if [ "$side" = new ]; then real=$new; else real=$old; fi
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
		LD_PRELOAD=$out/norandom.so exec "$p" "\$@"
		EOF
		chmod 755 "$w"
	done
	echo "outputs-compare: the suite with $real ($side)" >&2
	VFS_CAPTURE=$out/$side/cap sh tools/runtests.sh "$build" \
	    "$out/$side/bin" "$@" >"$out/$side/tap" 2>&1 || true
	tail -n 3 "$out/$side/tap" >&2
done
exec python3 tools/outputs-compare.py "$out"
