#!/usr/bin/env bats
# 86-torture: 30 s of t/torture/torture.sh (concurrent reports, claims,
# releases, quarantines, clears and sentinel-poll | vfstore apply scans,
# with kill -9 and injected persist failures), then the checker's
# verdict; and proof that the checker can fail.

load helpers

setup() {
	vfs_setup
	RUN=$T/run
}

@test "torture: 30 s of concurrent mutations, kills and faults keep every property" {
	run -0 bash "$VFS_ROOT/t/torture/torture.sh" -d 30 -j 4 -k -o "$RUN"
	assert_output --partial "all properties held"
	# It really did all of it: every kind of operation, kills and faults.
	local ops kills faults
	ops=$(sed -n 's/.* operations=\([0-9]*\).*/\1/p' <<<"$output")
	kills=$(sed -n 's/.* kills=\([0-9]*\).*/\1/p' <<<"$output")
	faults=$(sed -n 's/.* injected_faults=\([0-9]*\).*/\1/p' <<<"$output")
	# (100 in 30 s; fewer where the machine is loaded many times over:
	# one parallel run at load 20 did 89.)
	[ "$ops" -ge $((100 * 1000 / $(load_scaled 1000))) ] ||
	    fail "only $ops operations"
	[ "$kills" -ge 1 ] || fail "no kill"
	[ "$faults" -ge 1 ] || fail "no injected fault"
	for op in pick release report-failure report-success quarantine clear scan; do
		assert_output --regexp "by operation:.* $op=[1-9]"
	done
	# The checker is not a rubber stamp: losing an acknowledged claim or
	# the acknowledged failures is reported.
	cp "$RUN/data/gpu/vf-claims.json" "$T/claims"
	jq '.claims = []' "$T/claims" >"$RUN/data/gpu/vf-claims.json"
	if grep -qP '^[^\t]*\t[^\t]*\tpick\t[^\t]*\t[^\t]*\t0\t' "$RUN/ops.tsv"; then
		run -1 /usr/bin/python3 "$VFS_ROOT/t/torture/check.py" "$RUN" 30
		assert_output --partial "VIOLATION: acknowledged claim"
	fi
	cp "$T/claims" "$RUN/data/gpu/vf-claims.json"
	printf '{"version":1,"records":[]}' >"$RUN/data/gpu/vf-health.json"
	run -1 /usr/bin/python3 "$VFS_ROOT/t/torture/check.py" "$RUN" 30
	assert_output --partial "VIOLATION: acknowledged"
	# A pick that came after a certain quarantine and before any clear.
	cp "$RUN/ops.tsv" "$T/ops"
	printf '9\t1\tquarantine\t9999999990.0\t9999999991.0\t0\t-\t0000:e3:01.1\t-\t-\t{}\n' >>"$RUN/ops.tsv"
	printf '9\t2\tpick\t9999999992.0\t9999999993.0\t0\t-\tp-9-2\t0\t-\t{"vf_address":"0000:e3:01.1"}\n' >>"$RUN/ops.tsv"
	run -1 /usr/bin/python3 "$VFS_ROOT/t/torture/check.py" "$RUN" 30
	assert_output --partial "VIOLATION: quarantined 0000:e3:01.1 configured for p-9-2"
	cp "$T/ops" "$RUN/ops.tsv"
	printf '{"version":1,"records":[' >"$RUN/data/gpu/vf-health.json"
	run -1 /usr/bin/python3 "$VFS_ROOT/t/torture/check.py" "$RUN" 30
	assert_output --partial "vf-health.json does not load"
}
