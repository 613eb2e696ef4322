#!/usr/bin/env bats
# 29-vfstore-suspect.bats - suspect VFs (SPEC.md 7.3) in the store:
# DATA_DIR/gpu/vf-suspect.json fails closed like the drain file; vfstore
# show gives a suspicion and its "why", also for a VF without a health
# record; clear --vf|--card ends it, audited "unsuspect" with cause
# "clear", and history shows the suspicion's lines.
# shellcheck disable=SC2154 # bats' run sets stderr and stderr_lines

load helpers
load lib/store
load lib/placement

CARD=0000:e3:00.0
VF4=0000:e3:00.4
VF5=0000:e3:00.5
AT1=2026-08-20T15:00:00Z

setup() {
	vfs_setup
	store_setup
	SUSPECT=$DATA/gpu/vf-suspect.json
	AUDIT=$DATA/gpu/audit.jsonl
	mk_card "$SYSFS" $CARD
	mk_vf "$SYSFS" $CARD $VF4
	mk_vf "$SYSFS" $CARD $VF5
	vs init >/dev/null 2>&1
}

vsys() {
	vs --sysfs-root "$SYSFS" "$@"
}

# put_suspect VF...: a suspect file suspecting each VF (instance i-VF).
put_suspect() {
	local vf list=
	for vf; do
		list="$list${list:+,}$(jq -nc --arg vf "$vf" '{vf_address: $vf,
		    instance_id: ("i-" + $vf[-1:]), assigned_at: "'$AT1'",
		    ended_at: "2026-08-20T15:01:00Z", ended: "unclean",
		    source: "libvirt-hook: reason=crashed"}')"
	done
	printf '{"version":1,"suspects":[%s]}' "$list" >"$SUSPECT"
}

@test "show: a suspect VF without a health record, with its suspicion and why" {
	put_suspect $VF4
	run -0 --separate-stderr vs show --vf $VF4
	run -0 jq -c '[.vf_address, .quarantined, .suspect.instance_id,
	    .suspect.ended, .suspect.source]' <<<"$output"
	assert_output '["0000:e3:00.4",false,"i-4","unclean","libvirt-hook: reason=crashed"]'
	run -0 --separate-stderr vs show --vf $VF4
	run -0 jq -r .why <<<"$output"
	assert_output "suspect: assignment of i-4 ended unclean at 2026-08-20T15:01:00Z (libvirt-hook: reason=crashed) before its guest said OK"
	run -0 --separate-stderr vs show
	assert_equal "${#lines[@]}" 1
	run -1 --separate-stderr vs show --vf $VF5
}

@test "show: a quarantined suspect VF gives both in its why" {
	put_suspect $VF4
	vs quarantine --vf $VF4 --force --reason bad >/dev/null 2>&1
	run -0 --separate-stderr vs show --vf $VF4
	run -0 jq -r .why <<<"$output"
	assert_output --regexp '^quarantined by operator: bad; suspect: assignment of i-4 ended unclean'
}

@test "a suspect file that does not load fails closed (69), names the file, changes nothing" {
	put_health '{"version":1,"records":[{"vf_address":"0000:e3:00.4","quarantined_at":"2026-08-20T15:00:00Z"}]}'
	before=$(cat "$HEALTH")
	for bad in '{"version":1,"suspects":[{"vf_address":"0000:e3:00.4","instance_id":"i","ended_at":"2026-08-20T15:01:00Z","ended":"sideways"}]}' \
	    '{"version":2,"suspects":[]}' 'not json'; do
		printf '%s' "$bad" >"$SUSPECT"
		run -69 --separate-stderr vs show
		assert_output ""
		[[ $stderr == *"$SUSPECT"* ]]
		run -69 --separate-stderr vsys clear --vf $VF4
		assert_equal "$(cat "$HEALTH")" "$before"
	done
	rm "$SUSPECT"
	mkfifo "$SUSPECT"
	run -69 --separate-stderr vs show
}

@test "clear --vf ends a suspicion, audited unsuspect with cause clear" {
	put_suspect $VF4 $VF5
	run -0 --separate-stderr vsys clear --vf $VF4 --reason verified
	run -0 jq -c '[.vf_address, .outcome]' <<<"$output"
	assert_output '["0000:e3:00.4","cleared"]'
	run -0 jq -c '[.suspects[].vf_address]' "$SUSPECT"
	assert_output '["0000:e3:00.5"]'
	run -0 jq -c 'select(.command == "unsuspect") |
	    [.vf, .instance_id, .assigned_at, .ended, .source, .cause]' "$AUDIT"
	assert_output '["0000:e3:00.4","i-4","2026-08-20T15:00:00Z","unclean","libvirt-hook: reason=crashed","clear"]'
	run -0 --separate-stderr vs history --vf $VF4
	run -0 jq -r .command <<<"$output"
	assert_line unsuspect
	# Again: nothing left to clear.
	run -0 --separate-stderr vsys clear --vf $VF4
	run -0 jq -r .outcome <<<"$output"
	assert_output unchanged
}

@test "clear --card ends the suspicions of the card's VFs" {
	put_suspect $VF4 $VF5
	run -0 --separate-stderr vsys clear --card $CARD
	run -0 jq -c '.suspects' "$SUSPECT"
	assert_output '[]'
	run -0 jq -c 'select(.command == "unsuspect") | .vf' "$AUDIT"
	assert_equal "${#lines[@]}" 2
}

# claim VF ID [EXTRA-JSON]: a claim made now (claimed_at), with a vsock
# endpoint unless EXTRA says otherwise.
claim() {
	local now x=${3:-}
	now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	[ -n "$x" ] || x='{"vsock":"vsock:42:2222"}'
	put_claims "$(jq -nc --arg vf "$1" --arg id "$2" --arg at "${CLAIMED_AT:-$now}" \
	    --argjson x "$x" \
	    '{version: 1, claims: [{vf_address: $vf, instance_id: $id,
	    claimed_at: $at} + $x]}')"
}

@test "release --ended unclean before any OK: the VF is suspect, recorded and audited" {
	claim $VF4 i-1
	at=$(jq -r '.claims[0].claimed_at' "$CLAIMS")
	run -0 --separate-stderr vsys release --instance i-1 --ended unclean
	run -0 jq -c 'keys_unsorted' <<<"$output"
	assert_output '["instance_id","vf_address","released","deconfigured","ended","suspect"]'
	run -0 --separate-stderr vsys show --vf $VF4
	run -0 jq -c '.suspect | [.instance_id, .assigned_at == "'"$at"'", .ended, .source]' <<<"$output"
	assert_output '["i-1",true,"unclean","vfstore"]'
	run -0 jq -c 'select(.command == "suspect") | [.vf, .instance_id, .ended, .source]' "$AUDIT"
	assert_output '["0000:e3:00.4","i-1","unclean","vfstore"]'
}

@test "release: the JSON says ended and suspect; --ended defaults to unknown; another value is 64" {
	claim $VF4 i-1
	run -64 --separate-stderr vsys release --instance i-1 --ended sideways
	run -0 --separate-stderr vsys release --instance i-1
	run -0 jq -c '[.released, .ended, .suspect]' <<<"$output"
	assert_output '[true,"unknown",false]'
	[ ! -e "$SUSPECT" ]
	run -0 --separate-stderr vsys release --instance i-1 --ended clean
	run -0 jq -c '[.released, .ended, .suspect]' <<<"$output"
	assert_output '[false,"clean",false]'
}

@test "no suspicion: a clean end, an OK first, no endpoint, past the window, a failure recorded, an OK in the console log" {
	claim $VF4 i-1
	run -0 --separate-stderr vsys release --instance i-1 --ended clean
	assert_equal "$(jq -r .suspect <<<"$output")" false
	claim $VF4 i-2 '{"vsock":"vsock:42:2222","ok_at":"2026-12-07T00:00:00Z"}'
	run -0 --separate-stderr vsys release --instance i-2 --ended unclean
	assert_equal "$(jq -r .suspect <<<"$output")" false
	claim $VF4 i-3 '{}'
	run -0 --separate-stderr vsys release --instance i-3 --ended unclean
	assert_equal "$(jq -r .suspect <<<"$output")" false
	CLAIMED_AT=2026-08-20T15:00:00Z claim $VF4 i-4
	run -0 --separate-stderr vsys release --instance i-4 --ended unclean
	assert_equal "$(jq -r .suspect <<<"$output")" false
	claim $VF4 i-5
	at=$(jq -r '.claims[0].claimed_at' "$CLAIMS")
	vs report-failure --vf $VF4 --instance i-5 --assigned-at "$at" >/dev/null 2>&1
	run -0 --separate-stderr vsys release --instance i-5 --ended unclean
	assert_equal "$(jq -r .suspect <<<"$output")" false
	vs clear --vf $VF4 >/dev/null 2>&1
	printf 'boot\n2026/12/07 10:00:00 [guest-agent] HYPEMAN-GPU-INIT-OK ts=2026-12-07T10:00:00Z\nmore\n' >"$T/console.log"
	claim $VF4 i-6 "{\"app_log\":\"$T/console.log\"}"
	run -0 --separate-stderr vsys release --instance i-6 --ended unclean
	assert_equal "$(jq -r .suspect <<<"$output")" false
	[ ! -e "$SUSPECT" ] || [ "$(jq -c .suspects "$SUSPECT")" = '[]' ]
}

@test "suspect.on_unknown = true suspects an unknown end; suspect.window bounds it" {
	echo 'suspect.on_unknown = true' >"$VFSENTINEL_CONF"
	claim $VF4 i-1 "{\"app_log\":\"$T/none.log\"}"
	run -0 --separate-stderr vsys release --instance i-1
	assert_equal "$(jq -r .suspect <<<"$output")" true
	printf 'suspect.on_unknown = true\nsuspect.window = 1\n' >"$VFSENTINEL_CONF"
	CLAIMED_AT=$(date -u -d '-5 sec' +%Y-%m-%dT%H:%M:%SZ) claim $VF5 i-2
	run -0 --separate-stderr vsys release --instance i-2 --ended unclean
	assert_equal "$(jq -r .suspect <<<"$output")" false
}

@test "a second suspicion from another assignment quarantines the VF, with no failure" {
	claim $VF4 i-1
	vsys release --instance i-1 --ended unclean >/dev/null 2>&1
	# The same assignment reported twice changes nothing.
	claim $VF4 i-2
	run -0 --separate-stderr vsys release --instance i-2 --ended unclean
	assert_equal "$(jq -r .suspect <<<"$output")" true
	run -0 jq -c '.records[0] | [.vf_address, has("failures"), has("quarantined_at")]' "$HEALTH"
	assert_output '["0000:e3:00.4",false,true]'
	run -0 jq -c 'select(.command == "quarantine") | [.vf, .instance_id]' "$AUDIT"
	assert_output '["0000:e3:00.4","i-2"]'
}

# check KIND VF ID AT: one check line as sentinel-poll writes it.
check() {
	jq -nc --arg c "$1" --arg vf "$2" --arg id "$3" --arg at "$4" \
	    '{check: $c, vf_address: $vf, instance_id: $id, assigned_at: $at}'
}

@test "apply: a later OK ends the suspicion (unsuspect, cause ok)" {
	put_suspect $VF4 $VF5
	check ok $VF4 i-9 2026-12-07T10:00:00Z >"$T/in.jsonl"
	run -0 --separate-stderr vs apply <"$T/in.jsonl"
	run -0 jq -c '[.suspects[].vf_address]' "$SUSPECT"
	assert_output '["0000:e3:00.5"]'
	run -0 jq -c 'select(.command == "unsuspect") | [.vf, .cause]' "$AUDIT"
	assert_output '["0000:e3:00.4","ok"]'
	[ ! -e "$HEALTH" ] || [ "$(jq -c .records "$HEALTH")" = '[]' ]
}

@test "apply: a later assignment's failure quarantines at once, whatever the threshold" {
	echo 'gpu.vf_quarantine_threshold = 5' >"$VFSENTINEL_CONF"
	put_suspect $VF4
	check failed $VF4 i-9 2026-12-07T10:00:00Z >"$T/in.jsonl"
	run -0 --separate-stderr vs apply <"$T/in.jsonl"
	assert_equal "$(jq -r .outcome <<<"$output")" quarantined
	run -0 jq -c '.records[0] | [[.failures[].instance_id], has("quarantined_at")]' "$HEALTH"
	assert_output '[["i-9"],true]'
	run -0 jq -c '.suspects' "$SUSPECT"
	assert_output '[]'
	run -0 jq -c 'select(.command == "unsuspect" or .command == "apply") | [.command, .vf, .cause]' "$AUDIT"
	assert_line '["apply","0000:e3:00.4",null]'
	assert_line '["unsuspect","0000:e3:00.4","failure"]'
}

@test "apply: the suspected assignment's own failure is tallied as any, and ends the suspicion" {
	put_suspect $VF4
	check failed $VF4 i-4 $AT1 >"$T/in.jsonl"
	run -0 --separate-stderr vs apply <"$T/in.jsonl"
	assert_equal "$(jq -r .outcome <<<"$output")" recorded
	run -0 jq -c '.suspects' "$SUSPECT"
	assert_output '[]'
}
