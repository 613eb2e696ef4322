#!/bin/bash
# run.sh - make bench: runs every t/bench/*.sh from the repository root
# and prints their figures as one table. Each script prints lines of the
# form "figure: VALUE (ratio ... against REFERENCE ...; target ...)".
# BENCH=NAME runs only t/bench/NAME.sh.
set -u
cd "$(dirname "$0")/../.." || exit 1
export PATH="$PWD/bin:$PWD/build/t:$PWD/build/bench:$PATH"
# A regular file: a configuration that is not one is refused (SPEC 6.3).
export VFSENTINEL_CONF=$PWD/t/bench/empty.conf
status=0
printf '%s\n' "vfsentinel benchmarks, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(uname -r)"
for s in t/bench/*.sh; do
	name=$(basename "$s" .sh)
	[ "$name" = run ] && continue
	[ -n "${BENCH:-}" ] && [ "$BENCH" != "$name" ] && continue
	printf '\n== %s ==\n' "$name"
	if ! bash "$s"; then
		echo "$name: FAILED"
		status=1
	fi
done
exit $status
