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
units=$(ls "$build"/unit/* 2>/dev/null | grep -v "\.d$" || true)
exec prove ${PROVE_FLAGS:---failures --comments --timer} -e "sh $VFS_ROOT/tools/tapexec.sh" $units "$@"
