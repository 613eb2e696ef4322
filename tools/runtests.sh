#!/bin/sh
# runtests.sh BUILD BIN [BATS FILES...] - run the unit tests (TAP programs
# in BUILD/unit) and the bats files through one prove(1), so the run ends
# with prove's summary ("Files=..., Tests=...", "Result: PASS|FAIL").
set -eu
build=$1
bin=$2
shift 2
VFS_BUILD=$(cd "$build" && pwd)
VFS_BIN=$bin
VFS_ROOT=$(pwd)
export VFS_BUILD VFS_BIN VFS_ROOT
# The unit programs (not their .d dependency files), then the bats files.
# PROVE_FLAGS and units are blank-separated lists (build paths have no
# blanks), split on purpose.
flags=${PROVE_FLAGS:---failures --comments --timer}
units=
for u in "$build"/unit/*; do
	case $u in *.d) ;; *) [ -e "$u" ] && units="$units $u" ;; esac
done
# shellcheck disable=SC2086 # flags and units are lists (above)
exec prove $flags -e "sh $VFS_ROOT/tools/tapexec.sh" $units "$@"
