#!/usr/bin/env bash
# torture.sh - concurrent abuse of the host state, then proof it held.
#
#   torture.sh [-d SECONDS] [-j WORKERS] [-s SEED] [-o DIR] [-k]
#
# For SECONDS (default 60), WORKERS (default 4) processes each loop over
# random operations on one simulated host (2 cards x 8 VFs, threshold 2):
#   vfstore report-failure / report-success   (random VF, instance, key)
#   vfpick --claim ID --configure            (claims point at fake guests)
#   vfstore release --instance ID --deconfigure
#   vfstore quarantine --vf / clear --vf
#   sentinel-poll --once | vfstore apply     (a real scan: four vsock-answer
#                                             guests on Unix sockets, FAILED,
#                                             FAILED, OK and UNKNOWN)
# An operation is killed with SIGKILL at a random moment (about 1 in 6), and
# about 1 in 5 mutations runs under the LD_PRELOAD fault shim failing one
# random persist step (mkdir/open/write/fsync/close/rename/unlink of
# DATA_DIR/gpu, EIO or ENOSPC). A sampler runs `vfstore check` throughout.
#
# Then t/torture/check.py proves, from the operation log and the final files:
# every file loads; every acknowledged mutation (exit 0, or an apply output
# line) is reflected unless a later operation could have undone it; no VF
# was claimed twice; no VF handed out by vfpick was quarantined at the
# time. It prints the counts (operations, kills, injected faults).
#
# Exit: 0 all properties held, 1 a property failed, 64 usage.
set -u
secs=60 workers=4 seed=$$ keep=0 dir=
while getopts d:j:s:o:k opt; do
	case $opt in
	d) secs=$OPTARG ;;
	j) workers=$OPTARG ;;
	s) seed=$OPTARG ;;
	o) dir=$OPTARG ;;
	k) keep=1 ;;
	*) echo "usage: $0 [-d SECONDS] [-j WORKERS] [-s SEED] [-o DIR] [-k]" >&2
	   exit 64 ;;
	esac
done
here=$(cd "$(dirname "$0")" && pwd)
VFS_ROOT=${VFS_ROOT:-$(cd "$here/../.." && pwd)}
VFS_BIN=${VFS_BIN:-$VFS_ROOT/bin}
VFS_BUILD=${VFS_BUILD:-$VFS_ROOT/build}
PATH=$VFS_BIN:$PATH
SHIM=$VFS_BUILD/t/faultinj.so
if [ -z "$dir" ]; then
	dir=$(mktemp -d /tmp/vfs-torture.XXXXXX)
else
	mkdir -p "$dir"
fi
export VFS_ROOT VFS_BIN VFS_BUILD PATH
# shellcheck source=t/torture/lib.bash
. "$here/lib.bash"
torture_main
