#!/bin/sh
# tapexec.sh FILE - how prove runs one test file: bats files through
# bats --tap, anything else (the C unit tests) directly. A file gets
# VFS_FILE_TIMEOUT seconds (default 1200; the longest took 6 minutes on
# a machine loaded ten times over): a test that hangs fails its file
# instead of holding one of the parallel runner's slots for good.
# timeout(1) signals its whole process group, so the file's test
# processes go with bats.
limit=${VFS_FILE_TIMEOUT:-1200}
case "$1" in
*.bats) timeout -k 10 "$limit" bats --tap "$1" ;;
*) timeout -k 10 "$limit" "$1" ;;
esac
rc=$?
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
	echo "# $1: killed after $limit s (VFS_FILE_TIMEOUT)"
fi
exit "$rc"
