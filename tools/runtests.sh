#!/bin/sh
# runtests.sh BUILD BIN [BATS FILES...] - run the unit tests (TAP programs
# in BUILD/unit) and the bats files through one prove(1), so the run ends
# with prove's summary ("Files=..., Tests=...", "Result: PASS|FAIL").
#
# The files run in parallel, VFS_JOBS at a time (default: one more than
# the number of cores, nproc + 1: about a third of the suite's time is
# waits, a runsv's 1 s restart, timeouts tested on purpose, in which a
# core would idle; on 2 cores 3 jobs took 440 s, 2 jobs 507 s, both
# green; VFS_JOBS=1 runs them one after another). Each bats test
# has its own temp dir, sockets, runsvdir and ports (t/README), so any
# two files may run side by side. The order is the one that ends
# soonest: bats files not in t/durations first (new ones, of unknown
# length), then those in it, longest first, then the unit programs, so
# that the short files fill the cores beside the long ones.
set -eu
build=$1
bin=$2
shift 2
VFS_BUILD=$(cd "$build" && pwd)
VFS_BIN=$bin
VFS_ROOT=$(pwd)
export VFS_BUILD VFS_BIN VFS_ROOT
jobs=${VFS_JOBS:-$(($(nproc 2>/dev/null || echo 2) + 1))}

# order FILE...: FILE... in the order above, one a line (test paths have
# no blanks).
order() {
	for f; do
		s=$(awk -v f="$f" '$2 == f { print $1; exit }' \
		    "$VFS_ROOT/t/durations" 2>/dev/null) || s=
		echo "${s:-999999} $f"
	done | sort -s -k1,1nr | cut -d' ' -f2
}

# The unit programs (not their .d dependency files) go last. PROVE_FLAGS
# and units are blank-separated lists (build paths have no blanks),
# split on purpose; a -j in PROVE_FLAGS overrides VFS_JOBS.
flags=${PROVE_FLAGS:---failures --comments --timer}
units=
for u in "$build"/unit/*; do
	case $u in *.d) ;; *) [ -e "$u" ] && units="$units $u" ;; esac
done
# shellcheck disable=SC2086,SC2046 # flags, units and order's lines are lists
exec prove -j "$jobs" $flags -e "sh $VFS_ROOT/tools/tapexec.sh" \
    $(order "$@") $units
