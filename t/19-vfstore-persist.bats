#!/usr/bin/env bats
# 19-vfstore-persist.bats - fail-closed loading and self-heal, fault
# injection at every persist step, parallel mutators and kill -9 storms
# (SPEC.md 4.1; upstream 2.8, 2.9 and test list 3.C).

load helpers
load lib/store

GOOD='{"version":1,"records":[{"vf_address":"0000:e3:00.6","quarantined_at":"2026-08-20T00:00:00Z"}]}'

setup() {
	vfs_setup
	store_setup
}

# closed TEXT REASON: with the health file TEXT, every command that needs
# the store fails closed with 69, the bytes stay, check and the error log
# give REASON after the file's name (SPEC 6.3).
closed() {
	put_health "$1"
	local sum
	sum=$(sha "$HEALTH")
	run -69 --separate-stderr rfail 0000:e3:00.5 A $AT1
	assert_output ''
	run -69 --separate-stderr rok 0000:e3:00.5 A $AT1
	run -69 --separate-stderr vs show
	assert_equal "$(jq -r .error <<<"$stderr")" "$HEALTH: $2"
	run -69 --separate-stderr vs quarantine --vf 0000:e3:00.5
	run -69 --separate-stderr vs clear --vf 0000:e3:00.5
	run -69 --separate-stderr vs check
	assert_equal "$(jq -r .status <<<"$output")" unavailable
	assert_equal "$(jq -r .reason <<<"$output")" "$HEALTH: $2"
	assert_equal "$(sha "$HEALTH")" "$sum"
	assert_not_exists "$HEALTH.tmp"
}

@test "a file that is not JSON fails closed and is never overwritten" {
	closed 'not json' "unmarshal VF health state: '[' or '{' expected near 'not'"
}

@test "each invalid store fails closed with upstream's reason" {
	closed '{"version":2,"records":[]}' 'validate VF health state: unsupported version 2'
	closed '{"version":1}' 'validate VF health state: expected a records array'
	closed '{"version":1,"records":[{"vf_address":"0000:E3:00.4","quarantined_at":"2026-08-20T00:00:00Z"}]}' \
	    'validate VF health state record 0: invalid VF address "0000:E3:00.4"'
	closed '{"version":1,"records":[{"vf_address":"0000:e3:00.4"}]}' \
	    'validate VF health state record 0: neither quarantined nor any recorded failures'
	closed '{"version":1,"records":[{"vf_address":"0000:e3:00.4","quarantined_at":"0001-01-01T00:00:00Z"}]}' \
	    'validate VF health state record 0: missing quarantine timestamp'
	closed '{"version":1,"records":[{"vf_address":"0000:e3:00.4","failures":[{"instance_id":"instance-1"}]}]}' \
	    'validate VF health state record 0 failure 0: missing report timestamp'
	closed '{"version":1,"records":[{"vf_address":"0000:e3:00.4","failures":[{"instance_id":"instance-1","assigned_at":"a","reported_at":"2026-08-20T00:00:00Z"},{"instance_id":"instance-1","assigned_at":"a","reported_at":"2026-08-20T00:00:01Z"}]}]}' \
	    'validate VF health state record 0: duplicate failure for instance "instance-1" assigned at "a"'
	q='{"vf_address":"0000:e3:00.6","quarantined_at":"2026-08-20T00:00:00Z"}'
	closed "{\"version\":1,\"records\":[$q,$q]}" \
	    'validate VF health state record 1: duplicate VF address "0000:e3:00.6"'
}

@test "an unreadable store (a directory in its place) fails closed" {
	mkdir -p "$HEALTH"
	run -69 --separate-stderr vs check
	assert_equal "$(jq -r .reason <<<"$output")" \
	    "$HEALTH: read VF health state: not a regular file"
	run -69 --separate-stderr rfail $VF A $AT1
}

@test "fixing the file heals the store without a restart; the restored quarantine is kept" {
	put_health 'not json'
	run -69 --separate-stderr rfail $VF A $AT1
	put_health "$GOOD"
	run -0 --separate-stderr rfail $VF A $AT1
	assert_output --partial '"outcome":"recorded"'
	rfail $VF B $AT2
	run -0 jq -r '[.records[] | select(.quarantined_at) | .vf_address] | join(" ")' "$HEALTH"
	assert_output "0000:e3:00.4 0000:e3:00.6"
}

@test "missing files in an existing DATA_DIR/gpu are an empty, healthy store" {
	run -0 --separate-stderr vs check
	run -0 --separate-stderr vs show
	assert_output ''
	run -0 --separate-stderr vs claims
	assert_equal "$(ls -A "$DATA/gpu")" lock
}

# persist_fault VAR=VALUE...: a mutating report with the shim failing one
# step must exit 74, naming the step, and leave the old file.
persist_fault() {
	local sum
	rfail $VF A $AT1 2>/dev/null
	sum=$(sha "$HEALTH")
	run -74 --separate-stderr env LD_PRELOAD="$(fault_env)" "$@" \
	    vfstore --data-dir "$DATA" report-failure --vf $VF --instance B --assigned-at $AT2
	assert_output ''
	assert_equal "$(sha "$HEALTH")" "$sum"
	assert_not_exists "$HEALTH.tmp"
	run -0 vs check
}

@test "persist fault: create dir -> 74, old file intact, next call succeeds" {
	persist_fault FAIL_MATCH=/gpu FAIL_mkdir=1
	assert_equal "$(jq -r .error <<<"${stderr_lines[0]}")" "create VF health state dir: Input/output error"
	run -0 --separate-stderr rfail $VF B $AT2
	assert_output --partial quarantined
}

@test "persist fault: parent dir fsync (first write) -> 74, no file, retried next time" {
	run -74 --separate-stderr env LD_PRELOAD="$(fault_env)" FAIL_fsync=1 \
	    vfstore --data-dir "$DATA" report-failure --vf $VF --instance B --assigned-at $AT2
	assert_equal "$(jq -r .error <<<"${stderr_lines[0]}")" "sync VF health state parent dir: Input/output error"
	assert_not_exists "$HEALTH"
	assert_not_exists "$HEALTH.tmp"
	# No file yet, so the next write syncs the parent again: fail it too.
	run -74 --separate-stderr env LD_PRELOAD="$(fault_env)" FAIL_fsync=1 \
	    vfstore --data-dir "$DATA" report-failure --vf $VF --instance B --assigned-at $AT2
	run -0 --separate-stderr rfail $VF B $AT2
	assert_output --partial recorded
}

@test "persist fault: removing a stale temp file -> 74" {
	persist_fault FAIL_MATCH=vf-health.json.tmp FAIL_unlink=1
	assert_equal "$(jq -r .error <<<"${stderr_lines[0]}")" "remove stale VF health state temp: Input/output error"
}

@test "persist fault: open of the temp file -> 74" {
	persist_fault FAIL_MATCH=vf-health.json.tmp FAIL_open=1 FAIL_ERRNO=28
	assert_equal "$(jq -r .error <<<"${stderr_lines[0]}")" "create VF health state: No space left on device"
}

@test "persist fault: write -> 74" {
	persist_fault FAIL_MATCH=vf-health.json.tmp FAIL_write=1 FAIL_ERRNO=28
	assert_equal "$(jq -r .error <<<"${stderr_lines[0]}")" "write VF health state: No space left on device"
}

@test "persist fault: fsync of the temp file -> 74" {
	persist_fault FAIL_fsync=1
	assert_equal "$(jq -r .error <<<"${stderr_lines[0]}")" "sync VF health state: Input/output error"
}

@test "persist fault: close -> 74" {
	persist_fault FAIL_MATCH=vf-health.json.tmp FAIL_close=1
	assert_equal "$(jq -r .error <<<"${stderr_lines[0]}")" "close VF health state: Input/output error"
}

@test "persist fault: rename -> 74" {
	persist_fault FAIL_rename=1 FAIL_ERRNO=18
	assert_equal "$(jq -r .error <<<"${stderr_lines[0]}")" "rename VF health state: Invalid cross-device link"
	run -0 --separate-stderr rfail $VF B $AT2
	assert_output --partial quarantined
}

@test "persist fault: final dir fsync -> 74 with the complete new file in place" {
	rfail $VF A $AT1
	run -74 --separate-stderr env LD_PRELOAD="$(fault_env)" FAIL_fsync=2 \
	    vfstore --data-dir "$DATA" report-failure --vf $VF --instance B --assigned-at $AT2
	assert_equal "$(jq -r .error <<<"${stderr_lines[0]}")" "sync VF health state dir: Input/output error"
	assert_equal "$(tallies $VF)" "A B"
	run -0 vs check
	run -0 --separate-stderr rfail $VF B $AT2
	assert_output --partial '"outcome":"unchanged","failures":2'
}

@test "persist fault on a claims release -> 74 and the ledger is unchanged" {
	put_claims '{"version":1,"claims":[{"vf_address":"0000:e3:00.4","instance_id":"i-1","claimed_at":"x"}]}'
	sum=$(sha "$CLAIMS")
	run -74 --separate-stderr env LD_PRELOAD="$(fault_env)" FAIL_fsync=1 \
	    vfstore --data-dir "$DATA" release --instance i-1
	assert_equal "$(jq -r .error <<<"${stderr_lines[0]}")" "sync VF claims: Input/output error"
	assert_equal "$(sha "$CLAIMS")" "$sum"
	run -0 --separate-stderr vs release --instance i-1
}

@test "a lock file that cannot be created exits 74" {
	run -74 --separate-stderr env LD_PRELOAD="$(fault_env)" FAIL_MATCH=/gpu/lock FAIL_open=0 \
	    vfstore --data-dir "$DATA" report-failure --vf $VF --instance A --assigned-at $AT1
	assert_not_exists "$HEALTH"
}

@test "50 parallel mutators lose nothing" {
	local i pids=()
	set_threshold 1000
	for i in $(seq 0 49); do
		vfstore --data-dir "$DATA" --lock-timeout 60 report-failure \
		    --vf "$(printf '0000:e3:%02x.%d' $((i / 8)) $((i % 8)))" \
		    --instance "i-$i" --assigned-at $AT1 >"$T/out.$i" 2>/dev/null 3>&- &
		pids+=($!)
		vfstore --data-dir "$DATA" --lock-timeout 60 report-failure \
		    --vf 0000:e4:00.0 --instance "j-$i" --assigned-at $AT1 >/dev/null 2>&1 3>&- &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i"; done
	run -0 jq '.records | length' "$HEALTH"
	assert_output 51
	run -0 jq '[.records[] | select(.vf_address == "0000:e4:00.0") | .failures[]] | length' "$HEALTH"
	assert_output 50
	run -0 vs check
}

@test "kill -9 at random moments leaves a valid file holding every acknowledged report" {
	local i n=0 pids=() ids=()
	set_threshold 100000
	for ((i = 0; i < 150; i++)); do
		vfstore --data-dir "$DATA" --lock-timeout 60 report-failure \
		    --vf "0000:e3:00.$((i % 8))" --instance "i-$i" --assigned-at $AT1 \
		    >/dev/null 2>&1 3>&- &
		pids+=($!)
		ids+=("0000:e3:00.$((i % 8)) i-$i")
		if ((RANDOM % 3 == 0)); then
			sleep "0.00$((RANDOM % 10))"
			kill -9 "${pids[-1]}" 2>/dev/null && n=$((n + 1))
		fi
	done
	for ((i = 0; i < 150; i++)); do
		if wait "${pids[i]}"; then
			echo "${ids[i]}" >>"$T/acked"
		fi
	done
	run -0 vs check
	[ -s "$T/acked" ]
	while read -r vf id; do
		jq -e --arg vf "$vf" --arg id "$id" \
		    '.records[] | select(.vf_address == $vf) | .failures[] | select(.instance_id == $id)' \
		    "$HEALTH" >/dev/null || fail "acknowledged report $vf $id is missing"
	done <"$T/acked"
	echo "# killed $n of 150, $(wc -l <"$T/acked") acknowledged" >&3
}

@test "a success whose final dir fsync fails exits 74 with the cleared file in place" {
	rfail $VF A $AT1
	run -74 --separate-stderr env LD_PRELOAD="$(fault_env)" FAIL_fsync=2 \
	    vfstore --data-dir "$DATA" report-success --vf $VF --instance A --assigned-at $AT1
	assert_equal "$(jq -r .error <<<"${stderr_lines[0]}")" "sync VF health state dir: Input/output error"
	run -0 jq -c .records "$HEALTH"
	assert_output '[]'
	run -0 vs check
}

@test "tallies that meet the threshold quarantine at load even when the persist fails" {
	put_health '{"version":1,"records":[{"vf_address":"0000:e3:00.4","failures":[{"instance_id":"a","assigned_at":"x","reported_at":"2026-08-20T00:00:00Z"},{"instance_id":"b","assigned_at":"y","reported_at":"2026-08-20T00:00:01Z"}]}]}'
	sum=$(sha "$HEALTH")
	quarantined $VF
	run -74 --separate-stderr env LD_PRELOAD="$(fault_env)" FAIL_fsync=1 \
	    vfstore --data-dir "$DATA" report-failure --vf 0000:e3:00.5 --instance c --assigned-at z
	assert_equal "$(sha "$HEALTH")" "$sum"
	quarantined $VF
	run -0 --separate-stderr rfail $VF c z
	assert_output --partial '"outcome":"unchanged"'
	run -0 --separate-stderr rfail 0000:e3:00.5 c z
	run -0 jq -r '.records[0].quarantined_at // "none"' "$HEALTH"
	refute_output none
}
