# lib.bash - shared by the t/bench scripts (`. t/bench/lib.bash`).

# bench_workspace NAME: a fresh directory W (/tmp/bench-NAME.XXXXXX),
# removed at exit after the background processes whose pids the script
# added to PIDS are killed (a benchmark's servers and holders).
bench_workspace() {
	W=$(mktemp -d "/tmp/bench-$1.XXXXXX")
	PIDS=
	trap bench_cleanup EXIT
}

bench_cleanup() {
	local p
	for p in $PIDS; do
		kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$W"
}

# quarantined VF: $D/gpu/vf-health.json (replaced by rename, so read
# without the lock) has VF's record with quarantined_at.
quarantined() {
	jq -e --arg vf "$1" '.records[] | select(.vf_address == $vf) |
	    .quarantined_at != null' "$D/gpu/vf-health.json" >/dev/null 2>&1
}
