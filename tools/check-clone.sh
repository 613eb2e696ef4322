#!/bin/sh
# check-clone.sh [REV] - SPEC 7.4: make check passes from a clone in a
# directory only root can enter (root's home, mktemp -d). Clones REV
# (default HEAD) into mktemp -d (0700), builds it there and runs the
# test files that run a program as another user (chpst -u, setpriv,
# runuser, su) from the clone. .ci/run runs it; as root only (as
# a user, every directory it can enter is its own).
set -eu
rev=${1:-HEAD}
if [ "$(id -u)" != 0 ]; then
	echo "check-clone: needs root (skipped)" >&2
	exit 0
fi
top=$(git rev-parse --show-toplevel)
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
[ "$(stat -c %a "$d")" = 700 ]
git clone -q --no-checkout "$top" "$d/vfsentinel"
cd "$d/vfsentinel"
git checkout -q "$rev"
make -s -j"$(nproc)" test-aids >"$d/build.log" 2>&1 || {
	tail -20 "$d/build.log" >&2
	exit 1
}
files=$(grep -l -E 'chpst -u|setpriv --re[ug]id|runuser|su -s' t/*.bats)
printf 'check-clone: from %s (0700): %s\n' "$d/vfsentinel" \
    "$(echo "$files" | tr '\n' ' ')"
# shellcheck disable=SC2086 # one file a word
sh tools/runtests.sh build "$PWD/bin" $files
