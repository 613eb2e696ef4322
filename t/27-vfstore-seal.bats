#!/usr/bin/env bats
# 27-vfstore-seal.bats - the seal of vf-health.json (store.md, "The
# seal"): a report on a sealed store decodes and rewrites one record and
# writes what the full load would; anything that breaks the seal means
# the full load, which fails closed as before.

load helpers
load lib/store

A=0000:e3:00.4
B=0000:e3:00.5
C=0000:41:00.1
AT=2026-08-20T15:00:00Z

setup() {
	vfs_setup
	store_setup
	SEAL=$HEALTH.seal
}

# untimed FILE: FILE with every timestamp replaced by T (a report stamps
# the time it ran).
untimed() {
	sed -E 's/"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z"/"T"/g' "$1"
}

# reports [unsealed]: a mixed sequence of reports; with "unsealed" the
# seal is removed before each, so every report takes the full load.
reports() {
	local unsealed=${1:-} kind vf id
	while read -r kind vf id; do
		if [ "$unsealed" = unsealed ]; then rm -f "$SEAL"; fi
		if [ "$kind" = f ]; then
			rfail "$vf" "$id" $AT >/dev/null 2>&1 || return 1
		else
			rok "$vf" "$id" $AT >/dev/null 2>&1 || return 1
		fi
	done <<-EOF
	f $A i-1
	f $C i-1
	f $B i-1
	s $C i-1
	f $A i-2
	f $C i-3
	s $B i-1
	f $B i-4
	f $A i-3
	s $A i-9
	EOF
}

@test "a save seals the store, in the one-line format store.md names" {
	run -0 --separate-stderr rfail $A i-1 $AT
	assert_exists "$SEAL"
	run -0 cat "$SEAL"
	assert_output --regexp '^vfsentinel health seal 1 [0-9]{20} [0-9a-f]{16} [0-9]{20}$'
	assert_equal "$(sed -E 's/^[^ ]+ [^ ]+ [^ ]+ 1 0*([0-9]+) .*/\1/' "$SEAL")" \
	    "$(stat -c %s "$HEALTH")"
}

@test "reports on a sealed store write byte for byte what full loads write" {
	reports
	untimed "$HEALTH" >"$BATS_TEST_TMPDIR/sealed"
	rm -rf "$DATA/gpu"
	mkdir -p "$DATA/gpu"
	reports unsealed
	untimed "$HEALTH" >"$BATS_TEST_TMPDIR/full"
	run -0 cmp "$BATS_TEST_TMPDIR/sealed" "$BATS_TEST_TMPDIR/full"
	run -0 --separate-stderr vs check
	assert_equal "$(jq -r .records <<<"$output")" 3
}

@test "a sealed store damaged in another record fails closed, untouched" {
	set_threshold 5
	rfail $A i-1 $AT >/dev/null 2>&1
	rfail $B i-1 $AT >/dev/null 2>&1
	# same size, another record: only the hash can tell
	sed -i "s/\"$B\"/\"0000:e3:00.Z\"/" "$HEALTH"
	local sum
	sum=$(sha "$HEALTH")
	run -69 --separate-stderr rfail $A i-2 $AT
	assert_equal "$(jq -r .error <<<"$stderr")" \
	    "$HEALTH: validate VF health state record 1: invalid VF address \"0000:e3:00.Z\""
	run -69 --separate-stderr rfail $A i-1 $AT
	run -69 --separate-stderr rok $A i-1 $AT
	assert_equal "$(sha "$HEALTH")" "$sum"
}

@test "a torn, foreign or stale seal costs a full load and is rewritten" {
	rfail $A i-1 $AT >/dev/null 2>&1
	printf 'vfsentinel health seal 1 garbage\n' >"$SEAL"
	run -0 --separate-stderr rfail $A i-2 $AT
	assert_equal "$(jq -r .outcome <<<"$output")" quarantined
	run -0 cat "$SEAL"
	assert_output --regexp '^vfsentinel health seal 1 [0-9]{20} '
	rm -f "$SEAL"
	run -0 --separate-stderr rfail $B i-1 $AT
	assert_exists "$SEAL"
}

@test "a lowered threshold still quarantines other records at a report's save" {
	set_threshold 3
	rfail $B i-1 $AT >/dev/null 2>&1
	rfail $B i-2 $AT >/dev/null 2>&1
	assert_equal "$(jq -r '.records[0] | has("quarantined_at")' "$HEALTH")" false
	set_threshold 2
	run -0 --separate-stderr rfail $A i-1 $AT
	assert_equal "$(jq -r --arg vf $B '.records[] | select(.vf_address == $vf) |
	    has("quarantined_at")' "$HEALTH")" true
}

@test "a no-op report writes nothing, not even the seal" {
	rfail $A i-1 $AT >/dev/null 2>&1
	local h s
	h=$(sha "$HEALTH")
	s=$(sha "$SEAL")
	run -0 --separate-stderr rfail $A i-1 $AT
	assert_equal "$(jq -r .outcome <<<"$output")" unchanged
	run -0 --separate-stderr rok $A i-9 $AT
	assert_equal "$(jq -r .cleared <<<"$output")" 0
	assert_equal "$(sha "$HEALTH")" "$h"
	assert_equal "$(sha "$SEAL")" "$s"
}
