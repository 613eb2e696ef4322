#!/bin/sh
# valgrind-check.sh BUILD BIN BATS... - `make check-valgrind`: runs the
# given bats files with every program of BIN replaced by a wrapper that
# runs it under valgrind memcheck (and the fuzz replays of
# t/85-fuzz-regress.bats under valgrind, VFS_VALGRIND=1), then fails if
# any valgrind log holds an error or a definite/indirect leak.
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
# The unit tests (pure library code) under memcheck too.
for u in "$build"/unit/*; do
	[ -x "$u" ] || continue
	valgrind -q --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite,indirect \
		--log-file="$vdir/logs/unit-${u##*/}.%p.log" "$u" >/dev/null ||
		rc=1
done
bad=0
for log in "$vdir"/logs/*.log; do
	[ -s "$log" ] || continue
	echo "valgrind: $log:"
	sed 's/^/  /' "$log"
	bad=1
done
runs=$(find "$vdir/logs" -mindepth 1 -maxdepth 1 | wc -l)
echo "valgrind: $runs program runs checked, $( [ $bad = 0 ] && echo clean || echo ERRORS)"
[ "$rc" = 0 ] && [ "$bad" = 0 ]
