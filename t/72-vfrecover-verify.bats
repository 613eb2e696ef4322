#!/usr/bin/env bats
# 72-vfrecover-verify.bats - vfrecover --verify-suspects (SPEC.md 7.3):
# recovery.verify_command once per suspect VF, the VF claimed as
# verify-VF for the run and released after; exit 0 clears the suspicion,
# anything else (a timeout too) quarantines; one JSON line per VF; 78
# without a verify command, 69 with an unavailable store.

load helpers
load lib/store
load lib/placement

setup() {
	vfs_setup
	store_setup
	suspects_host
	AUDIT=$DATA/gpu/audit.jsonl
}

# verify SCRIPT: the configuration's verify command.
verify() {
	printf 'recovery.verify_command = %s\nrecovery.step_timeout = 2\n' "$1" \
	    >"$VFSENTINEL_CONF"
}

vr() {
	vfrecover --data-dir "$DATA" --sysfs-root "$SYSFS" "$@"
}

@test "--verify-suspects: a pass clears the suspicion, a fail quarantines, one line each; the claim is released" {
	cat >"$T/v.sh" <<-EOF
	#!/bin/sh
	jq -c '[.claims[] | .instance_id]' "$DATA/gpu/vf-claims.json" >>"$T/claims-seen"
	echo "\$VFSENTINEL_VF \$VFSENTINEL_CARD" >>"$T/seen"
	[ "\$VFSENTINEL_VF" = $VF4 ]
	EOF
	chmod +x "$T/v.sh"
	verify "$T/v.sh"
	run -0 --separate-stderr vr --verify-suspects
	run -0 jq -c '[.vf_address, .result, .exit]' <<<"$output"
	assert_line "[\"$VF4\",\"pass\",0]"
	assert_line "[\"$VF5\",\"fail\",1]"
	assert_equal "$(cat "$T/seen")" "$VF4 $CARD
$VF5 $CARD"
	assert_equal "$(head -1 "$T/claims-seen")" "[\"verify-$VF4\"]"
	assert_equal "$(jq -c .claims "$DATA/gpu/vf-claims.json")" '[]'
	assert_equal "$(jq -c .suspects "$SUSPECT")" '[]'
	quarantined $VF5
	run ! quarantined $VF4
	run -0 jq -c 'select(.command == "verify") | [.vf, .result]' "$AUDIT"
	assert_output "[\"$VF4\",\"pass\"]
[\"$VF5\",\"fail\"]"
	run -0 jq -c 'select(.command == "unsuspect") | .cause' "$AUDIT"
	assert_output '"verify"
"verify"'
	# Nothing left: exit 0, no line.
	run -0 --separate-stderr vr --verify-suspects
	assert_output ""
}

@test "--verify-suspects: a timeout is a fail; a VF in use cannot be verified (1)" {
	verify 'sleep 10'
	put_claims "{\"version\":1,\"claims\":[{\"vf_address\":\"$VF5\",\"instance_id\":\"tenant\",\"claimed_at\":\"2026-12-07T11:00:00Z\"}]}"
	run -1 --separate-stderr vr --verify-suspects
	run -0 jq -c '[.vf_address, .result]' <<<"$output"
	assert_line "[\"$VF4\",\"fail\"]"
	assert_line "[\"$VF5\",\"error\"]"
	quarantined $VF4
	assert_equal "$(jq -c '[.claims[].instance_id]' "$DATA/gpu/vf-claims.json")" '["tenant"]'
	run -0 jq -c '[.suspects[].vf_address]' "$SUSPECT"
	assert_output "[\"$VF5\"]"
}

@test "--verify-suspects: 78 without a verify command, 69 with an unavailable store" {
	: >"$VFSENTINEL_CONF"
	run -78 --separate-stderr vr --verify-suspects
	verify /bin/true
	echo '{"version":1,"suspects":{}}' >"$SUSPECT"
	run -69 --separate-stderr vr --verify-suspects
	run -64 --separate-stderr vr --verify-suspects --card $CARD
}
