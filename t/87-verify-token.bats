#!/usr/bin/env bats
# 87-verify-token.bats - vfrecover --verify-suspects as SPEC.md 8.2 has
# it: the verification claim carries a fresh 32-hex verify_token and the
# suspicion's profile; the command gets VFSENTINEL_VF, _CARD, _INSTANCE,
# _VERIFY_TOKEN and _CONF; its exit 0 clears, 1 and 75 quarantine, 69
# leaves the VF suspect (result error, exit 1); --dry-run changes
# nothing; a stop signal or the timeout sends the command's group
# SIGTERM, then SIGKILL 10 s later; a stop leaves the VF suspect
# (result interrupted, exit 75); a passing command's leftovers die
# with its group before the claim is released.

load helpers
load lib/store
load lib/placement

setup() {
	vfs_setup
	store_setup
	suspects_host
	AUDIT=$DATA/gpu/audit.jsonl
	CLAIMS=$DATA/gpu/vf-claims.json
}

# verify SCRIPT [TIMEOUT]: the configuration's verify command.
verify() {
	printf 'recovery.verify_command = %s\nrecovery.step_timeout = %s\n' \
	    "$1" "${2:-5}" >"$VFSENTINEL_CONF"
}

vr() {
	vfrecover --data-dir "$DATA" --sysfs-root "$SYSFS" "$@"
}

# alive PID: PID runs (a zombie that no init reaps here is dead).
alive() {
	[ -e "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status"
}

# until_term SCRIPT: a verify command that writes its pid to $T/pid and
# runs until a TERM, which it notes in $T/got and ends with exit 3.
until_term() {
	cat >"$1" <<-EOF
	#!/bin/sh
	trap 'echo term >>"$T/got"; exit 3' TERM
	echo \$\$ >"$T/pid"
	while :; do sleep 0.1; done
	EOF
	chmod +x "$1"
}

# only VF: leaves only VF suspect, with profile P.
only() {
	jq -c --arg vf "$1" '.suspects |= map(select(.vf_address == $vf) |
	    .profile = "A40-2Q")' "$SUSPECT" >"$T/s" && mv "$T/s" "$SUSPECT"
}

@test "verify: the claim's fresh token and profile, the command's environment" {
	cat >"$T/v.sh" <<-EOF
	#!/bin/sh
	jq -c '.claims[] | [.instance_id, .verify_token, .profile]' "$CLAIMS" >>"$T/claims-seen"
	echo "\$VFSENTINEL_VF \$VFSENTINEL_CARD \$VFSENTINEL_INSTANCE \$VFSENTINEL_VERIFY_TOKEN \$VFSENTINEL_CONF" >>"$T/seen"
	exit 1
	EOF
	chmod +x "$T/v.sh"
	verify "$T/v.sh"
	only $VF4
	run -0 --separate-stderr vr --verify-suspects
	cp "$DATA/gpu/vf-suspect.json" "$T/after"
	read -r vf card id token conf <"$T/seen"
	assert_equal "$vf $card $id $conf" "$VF4 $CARD verify-$VF4 $VFSENTINEL_CONF"
	[[ $token =~ ^[0-9a-f]{32}$ ]]
	assert_equal "$(cat "$T/claims-seen")" "[\"verify-$VF4\",\"$token\",\"A40-2Q\"]"
	# -c FILE is the one the command is told.
	cp "$VFSENTINEL_CONF" "$T/other.conf"
	suspects_host
	only $VF4
	run -0 --separate-stderr vr -c "$T/other.conf" --verify-suspects
	read -r vf card id token2 conf <<<"$(tail -1 "$T/seen")"
	assert_equal "$conf" "$T/other.conf"
	[[ $token2 =~ ^[0-9a-f]{32}$ ]]
	[ "$token2" != "$token" ]
}

@test "verify: --dry-run prints would_verify per suspect and runs, claims and changes nothing" {
	verify "touch $T/ran"
	for f in "$SUSPECT" "$CLAIMS" "$DATA/gpu/vf-health.json" "$AUDIT"; do
		if [ -e "$f" ]; then
			cp "$f" "$T/$(basename "$f").before"
		fi
	done
	run -0 --separate-stderr vr --verify-suspects --dry-run
	run -0 jq -c '[.vf_address, .action, .instance_id]' <<<"$output"
	assert_output "[\"$VF4\",\"would_verify\",\"verify-$VF4\"]
[\"$VF5\",\"would_verify\",\"verify-$VF5\"]"
	[ ! -e "$T/ran" ]
	for f in "$SUSPECT" "$CLAIMS" "$DATA/gpu/vf-health.json" "$AUDIT"; do
		if [ -e "$T/$(basename "$f").before" ]; then
			cmp "$f" "$T/$(basename "$f").before"
		else
			[ ! -e "$f" ]
		fi
	done
}

@test "verify: exit 75 quarantines, 69 leaves the VF suspect (result error, vfrecover 1)" {
	verify "[ \"\$VFSENTINEL_VF\" = $VF4 ] && exit 75; exit 69"
	run -1 --separate-stderr vr --verify-suspects
	run -0 jq -c '[.vf_address, .result, .exit]' <<<"$output"
	assert_line "[\"$VF4\",\"fail\",75]"
	assert_line "[\"$VF5\",\"error\",69]"
	quarantined $VF4
	run ! quarantined $VF5
	assert_equal "$(jq -c '[.suspects[].vf_address]' "$SUSPECT")" "[\"$VF5\"]"
	assert_equal "$(jq -c .claims "$CLAIMS")" '[]'
	run -0 jq -c 'select(.command == "verify") | [.vf, .result]' "$AUDIT"
	assert_output "[\"$VF4\",\"fail\"]
[\"$VF5\",\"error\"]"
}

@test "verify: a passing command's leftover processes die with its group before the release" {
	cat >"$T/v.sh" <<-EOF
	#!/bin/sh
	sleep 300 &
	echo \$! >"$T/left"
	exit 0
	EOF
	chmod +x "$T/v.sh"
	verify "$T/v.sh"
	only $VF4
	run -0 --separate-stderr vr --verify-suspects
	assert_equal "$(jq -r .result <<<"$output")" pass
	pid=$(cat "$T/left")
	run ! alive "$pid"
	assert_equal "$(jq -c .claims "$CLAIMS")" '[]'
}

@test "verify: SIGTERM to vfrecover ends the command's group, releases the claim, leaves the VF suspect, 75" {
	until_term "$T/v.sh"
	verify "$T/v.sh" 60
	vfrecover --data-dir "$DATA" --sysfs-root "$SYSFS" --verify-suspects \
	    >"$T/out" 2>"$T/err" &
	bg=$!
	for _ in $(seq 100); do [ -s "$T/pid" ] && break; sleep 0.1; done
	[ -s "$T/pid" ]
	[ "$(jq -r '.claims[0].instance_id' "$CLAIMS")" = "verify-$VF4" ]
	kill -TERM $bg
	rc=0
	wait $bg || rc=$?
	assert_equal "$rc" 75
	assert_equal "$(cat "$T/got")" term
	run -0 jq -c '[.vf_address, .result]' "$T/out"
	assert_output "[\"$VF4\",\"interrupted\"]"
	assert_equal "$(jq -c .claims "$CLAIMS")" '[]'
	# Both stay suspect: VF5 was never started.
	assert_equal "$(jq -c '[.suspects[].vf_address]' "$SUSPECT")" "[\"$VF4\",\"$VF5\"]"
	run ! quarantined $VF4
	run -0 jq -c 'select(.command == "verify") | [.vf, .result]' "$AUDIT"
	assert_output "[\"$VF4\",\"interrupted\"]"
	run -0 resources-report --data-dir "$DATA" --sysfs-root "$SYSFS" --format prometheus
	assert_line 'vfsentinel_verifications_total{result="interrupted"} 1'
}

@test "verify: at step_timeout the group gets SIGTERM, then SIGKILL 10 s later; a fail" {
	cat >"$T/v.sh" <<-EOF
	#!/bin/sh
	trap 'echo term >>"$T/got"' TERM
	while :; do sleep 0.1; done
	EOF
	chmod +x "$T/v.sh"
	verify "$T/v.sh" 1
	only $VF4
	start=$(date +%s)
	run -0 --separate-stderr vr --verify-suspects
	took=$(($(date +%s) - start))
	assert_equal "$(jq -c '[.result, .exit]' <<<"$output")" '["fail",-1]'
	assert_equal "$(cat "$T/got")" term
	[ "$took" -ge 10 ]
	[ "$took" -le 20 ]
	quarantined $VF4
}

@test "verify service: sv down mid-verification passes the TERM on; the verification ends interrupted, its claim released" {
	load lib/runit
	runit_setup
	printf 'data_dir = %s\nsysfs_root = %s\n' "$DATA" "$SYSFS" >"$T/svc.conf"
	runit_copy vfsentinel-verify
	runit_env vfsentinel-verify VFSENTINEL_CONF "$T/svc.conf"
	runit_test_path vfsentinel-verify
	until_term "$T/v.sh"
	printf 'recovery.verify_command = %s\nrecovery.step_timeout = 60\n' \
	    "$T/v.sh" >>"$T/svc.conf"
	only $VF4
	runit_start
	wait_long test -s "$T/pid"
	sv down "$RUNIT_SV/vfsentinel-verify"
	wait_long grep -q term "$T/got"
	wait_long grep -q '"command":"verify"' "$AUDIT"
	run -0 jq -c 'select(.command == "verify") | [.vf, .result]' "$AUDIT"
	assert_output "[\"$VF4\",\"interrupted\"]"
	assert_equal "$(jq -c .claims "$CLAIMS")" '[]'
	assert_equal "$(jq -c '[.suspects[].vf_address]' "$SUSPECT")" "[\"$VF4\"]"
	runit_teardown
}
