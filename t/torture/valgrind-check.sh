#!/bin/sh
# valgrind-check.sh BUILD BIN BATS... - `make check-valgrind`: runs the
# given bats files (in parallel, as tools/runtests.sh runs them) with
# every program of BIN replaced by a wrapper that runs it under valgrind
# memcheck (and the fuzz replays of t/85-fuzz-regress.bats under
# valgrind, VFS_VALGRIND=1), then fails if any valgrind log holds an
# error or a definite/indirect leak.
#
# Logs: BUILD/valgrind/logs/PROG.PID.log (empty when clean).
set -u
if ! command -v valgrind >/dev/null; then
	echo "valgrind-check: valgrind missing (make deps installs it)" >&2
	exit 1
fi
build=$1
bin=$(cd "$2" && pwd)
shift 2
root=$(pwd)
vdir=$root/$build/valgrind
rm -rf "$vdir"
mkdir -p "$vdir/bin" "$vdir/logs"
for p in "$bin"/*; do
	[ -x "$p" ] || continue
	name=${p##*/}
	cat >"$vdir/bin/$name" <<WRAP
#!/bin/sh
exec valgrind -q --error-exitcode=99 --leak-check=full \\
	--errors-for-leak-kinds=definite,indirect \\
	--show-leak-kinds=definite,indirect \\
	--log-file="$vdir/logs/$name.%p.log" "$p" "\$@"
WRAP
	chmod +x "$vdir/bin/$name"
done
VFS_VALGRIND=1 sh tools/runtests.sh "$build" "$vdir/bin" "$@"
rc=$?
# The unit tests (pure library code) under memcheck too, as many at a
# time as runtests.sh runs files (VFS_JOBS, default nproc).
# shellcheck disable=SC2016 # $1 and $2 are the inner shell's
find "$build/unit" -maxdepth 1 -type f -perm -u+x -print0 |
	xargs -0 -r -n 1 -P "${VFS_JOBS:-$(nproc 2>/dev/null || echo 1)}" \
	sh -c 'exec valgrind -q --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite,indirect \
		--log-file="$1/logs/unit-${2##*/}.%p.log" "$2" >/dev/null' \
	_ "$vdir" || rc=1
# valgrind 3.19 (Debian 12) does not know openat2 (syscall 437): it
# warns and returns ENOSYS, and safeopen.c then takes its fallback for
# kernels before 5.6 (O_NOFOLLOW, no ".."), which memcheck thus checks;
# that warning alone is no error. Any other line is.
bad=0
for log in "$vdir"/logs/*.log; do
	[ -s "$log" ] || continue
	sed -i '/WARNING: unhandled amd64-linux syscall: 437$/,+4d' "$log"
	[ -s "$log" ] || continue
	echo "valgrind: $log:"
	sed 's/^/  /' "$log"
	bad=1
done
runs=$(find "$vdir/logs" -mindepth 1 -maxdepth 1 | wc -l)
echo "valgrind: $runs program runs checked, $( [ $bad = 0 ] && echo clean || echo ERRORS)"
[ "$rc" = 0 ] && [ "$bad" = 0 ]
