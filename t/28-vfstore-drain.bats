#!/usr/bin/env bats
# 28-vfstore-drain.bats - drains (SPEC.md 6.3): vfstore drain and undrain
# keep DATA_DIR/gpu/vf-drain.json and never touch the health records, so
# an undrain restores exactly the placement state before the drain (a VF
# quarantined by failures stays quarantined with them); a drained VF is
# not offered by vfpick and not counted allocatable by resources-report
# (drained_slots, the state drained); the drain file fails closed like
# the other stores; operator commands that change nothing say
# "unchanged"; vfstore show says why a VF is out.
# shellcheck disable=SC2154 # bats' run sets stderr and stderr_lines

load helpers
load lib/store
load lib/placement

CARD=0000:e3:00.0
VF4=0000:e3:00.4
VF5=0000:e3:00.5
VF6=0000:e3:00.6
AT1=2026-08-20T15:00:00Z
AT2=2026-08-20T16:00:00Z

setup() {
	vfs_setup
	store_setup
	DRAIN=$DATA/gpu/vf-drain.json
	AUDIT=$DATA/gpu/audit.jsonl
	mk_card "$SYSFS" $CARD
	mk_vf "$SYSFS" $CARD $VF4
	mk_vf "$SYSFS" $CARD $VF5
	mk_vf "$SYSFS" $CARD $VF6
	unset SUDO_USER
}

vsys() {
	vs --sysfs-root "$SYSFS" "$@"
}

# last EXPR: jq -r EXPR on the last audit line.
last() {
	tail -n 1 "$AUDIT" | jq -r "$1"
}

# offered: the VFs 30 dry picks handed out, sorted, each once.
offered() {
	picks 30 --profile "$P12" | sort -u | xargs
}

# wedge VF: two failed assignments (the default threshold): quarantined.
wedge() {
	rfail "$1" "i-$1-1" $AT1 >/dev/null 2>&1
	rfail "$1" "i-$1-2" $AT2 >/dev/null 2>&1
}

@test "drain --card then undrain --card: the health file is untouched, a wedged VF stays quarantined with its failures" {
	wedge $VF4
	rfail $VF5 i-5 $AT1 2>/dev/null
	before=$(sha "$HEALTH")
	assert_equal "$(offered)" "$VF5 $VF6"
	run -0 --separate-stderr vsys drain --card e3:00.0 --reason "SR-IOV cycle"
	assert_equal "${#lines[@]}" 3
	run -0 jq -c '[.vf_address, .drained, .reason, .outcome]' <<<"${lines[1]}"
	assert_output '["0000:e3:00.5",true,"SR-IOV cycle","drained"]'
	assert_equal "$(sha "$HEALTH")" "$before"
	run -0 jq -c '[.version, (.drains | map(.vf_address)),
	    (.drains | map(.reason) | unique)]' "$DRAIN"
	assert_output '[1,["0000:e3:00.4","0000:e3:00.5","0000:e3:00.6"],["SR-IOV cycle"]]'
	run -0 jq -r '.drains[0].drained_at' "$DRAIN"
	assert_output --regexp '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$'
	run -1 --separate-stderr pick --profile "$P12"
	run -0 --separate-stderr vsys undrain --card $CARD
	run -0 jq -c '[.vf_address, .drained, .outcome]' <<<"${lines[0]}"
	assert_output '["0000:e3:00.4",false,"undrained"]'
	assert_equal "$(sha "$HEALTH")" "$before"
	quarantined $VF4
	assert_equal "$(tallies $VF4)" "i-$VF4-1 i-$VF4-2"
	assert_equal "$(tallies $VF5)" "i-5"
	run -0 jq -c '.drains' "$DRAIN"
	assert_output '[]'
	assert_equal "$(offered)" "$VF5 $VF6"
}

@test "drain --vf, undrain --vf; a drained VF is refused when pinned, offered to a verification boot" {
	run -0 --separate-stderr vsys drain --vf e3:00.5 --reason "fan"
	assert_equal "${#lines[@]}" 1
	assert_equal "$(offered)" "$VF4 $VF6"
	run -1 --separate-stderr pick --profile "$P12" --vf $VF5
	assert_output ''
	[[ "$stderr" == *"VF $VF5 is drained"* ]]
	run -0 --separate-stderr pick --profile "$P12" --vf $VF5 \
	    --include-quarantined
	assert_equal "$(jq -r .vf_address <<<"$output")" $VF5
	run -0 --separate-stderr vsys undrain --vf $VF5 --reason "fan fixed"
	assert_equal "$(offered)" "$VF4 $VF5 $VF6"
}

@test "resources-report: drained_slots, the card's drained, the state drained, and the gauges" {
	claim $VF6 i-6
	wedge $VF4
	vsys drain --card $CARD --reason cycle >/dev/null 2>&1
	run -0 --separate-stderr report
	run -0 jq -c '.gpu | [.total_slots, .used_slots, .allocatable_slots,
	    .quarantined_slots, .drained_slots, .cards[0].drained,
	    (.profiles | map(.available))]' <<<"$output"
	assert_output '[3,1,0,1,2,2,[0,0]]'
	run -0 --separate-stderr report --vfs
	run -0 jq -r '"\(.vf_address) \(.state)"' <<<"$output"
	assert_output "$VF4 quarantined
$VF5 drained
$VF6 drained"
	run -0 --separate-stderr report --format prometheus
	assert_line 'hypeman_resources_gpu_slots{kind="drained"} 2'
	assert_line 'hypeman_resources_gpu_slots{kind="allocatable"} 0'
	assert_line 'vfsentinel_card_vfs{card="0000:e3:00.0",state="drained"} 2'
	assert_line 'vfsentinel_card_vfs{card="0000:e3:00.0",state="quarantined"} 1'
	vsys undrain --card $CARD >/dev/null 2>&1
	run -0 --separate-stderr report
	run -0 jq -c '.gpu | [.allocatable_slots, .quarantined_slots,
	    .drained_slots]' <<<"$output"
	assert_output '[1,1,0]'
}

@test "drain and undrain are audited; a repeat is unchanged: exit 0, an info log, audited unchanged, nothing written" {
	run -0 --separate-stderr vsys drain --card $CARD --reason "cycle"
	run -0 last '[.prog, .command, .card, (.vfs | join(",")), .reason,
	    .outcome] | join(" ")'
	assert_output "vfstore drain $CARD $VF4,$VF5,$VF6 cycle ok"
	sum=$(sha "$DRAIN")
	run -0 --separate-stderr vsys drain --vf $VF5 --reason "again"
	assert_equal "$(jq -r .outcome <<<"$output")" unchanged
	assert_equal "$(jq -r .reason <<<"$output")" cycle
	assert_equal "$(jq -r .level <<<"${stderr_lines[0]}")" info
	assert_equal "$(sha "$DRAIN")" "$sum"
	assert_equal "$(last '.command + " " + .outcome')" "drain unchanged"
	run -0 --separate-stderr vsys undrain --card $CARD --reason done
	assert_equal "$(last '.command + " " + .reason + " " + .outcome')" \
	    "undrain done ok"
	run -0 --separate-stderr vsys undrain --vf $VF4
	assert_equal "$(jq -r .outcome <<<"$output")" unchanged
	assert_equal "$(jq -r .level <<<"${stderr_lines[0]}")" info
	assert_equal "$(last '.command + " " + .outcome')" "undrain unchanged"
}

@test "quarantine of a quarantined VF and clear of a VF without a record are unchanged, and keep the failures" {
	wedge $VF4
	before=$(sha "$HEALTH")
	run -0 --separate-stderr vsys quarantine --vf $VF4 --reason "again"
	assert_equal "$(jq -r .outcome <<<"$output")" unchanged
	assert_equal "$(jq -r .level <<<"${stderr_lines[0]}")" info
	assert_equal "$(sha "$HEALTH")" "$before"
	assert_equal "$(tallies $VF4)" "i-$VF4-1 i-$VF4-2"
	assert_equal "$(last '.command + " " + .outcome')" "quarantine unchanged"
	run -0 --separate-stderr vsys quarantine --vf $VF5 --reason "by hand"
	assert_equal "$(jq -r .outcome <<<"$output")" quarantined
	assert_equal "$(last '.command + " " + .outcome')" "quarantine ok"
	before=$(sha "$HEALTH")
	run -0 --separate-stderr vsys quarantine --vf $VF5
	assert_equal "$(jq -r .outcome <<<"$output")" unchanged
	assert_equal "$(sha "$HEALTH")" "$before"
	run -0 --separate-stderr vsys clear --vf $VF6
	assert_equal "$(jq -r .outcome <<<"$output")" unchanged
	assert_equal "$(jq -r .level <<<"${stderr_lines[0]}")" info
	assert_equal "$(last '.command + " " + .outcome')" "clear unchanged"
	run -0 --separate-stderr vsys clear --vf $VF5
	assert_equal "$(jq -r .outcome <<<"$output")" cleared
	assert_equal "$(last '.command + " " + .outcome')" "clear ok"
}

@test "show says why: the operator's reason, the drain's, the failures and their NVRM line; vf-health.json has no why" {
	vsys quarantine --vf $VF4 --reason "fan noise" >/dev/null 2>&1
	printf '{"check":"failed","vf_address":"%s","instance_id":"A","assigned_at":"%s","nvrm":"NVRM: GPU at PCI:0000:01:00: RmInitAdapter failed! (0x22:0x65:884)"}\n{"check":"failed","vf_address":"%s","instance_id":"B","assigned_at":"%s","nvrm":"NVRM: GPU at PCI:0000:01:00: RmInitAdapter failed! (0x22:0x65:885)"}\n' \
	    $VF5 $AT1 $VF5 $AT2 | vs apply >/dev/null 2>&1
	vsys drain --vf $VF6 --reason "SR-IOV cycle" >/dev/null 2>&1
	run -0 --separate-stderr vs show --vf $VF4
	run -0 jq -r .why <<<"$output"
	assert_output --partial "fan noise"
	run -0 --separate-stderr vs show --vf $VF5
	run -0 jq -r .why <<<"$output"
	assert_output --partial "2 failed assignments (instances A, B)"
	assert_output --partial "RmInitAdapter failed! (0x22:0x65:885)"
	# A drained VF without a record is shown, with the drain's reason.
	run -0 --separate-stderr vs show --vf $VF6
	run -0 jq -r '[.drained, .why] | join(" ")' <<<"$output"
	assert_output --partial "true"
	assert_output --partial "SR-IOV cycle"
	run -0 --separate-stderr vs show
	assert_equal "${#lines[@]}" 3
	run -1 grep -c why "$HEALTH"
}

@test "drain: usage errors name what is wrong; --reason is required; a VF sysfs lacks is refused" {
	run -64 --separate-stderr vsys drain --vf $VF4
	[[ "$stderr" == *"drain: missing --reason"* ]]
	run -64 --separate-stderr vsys drain --vf $VF4 --card $CARD --reason x
	run -64 --separate-stderr vsys undrain
	run -64 --separate-stderr vsys undrain --vf $VF4 --force
	run -65 --separate-stderr vsys drain --vf 0000:99:00.1 --reason x
	assert_file_not_exists "$DRAIN"
	run -1 --separate-stderr vsys drain --card 0000:e5:00.0 --reason x
	assert_file_not_exists "$DRAIN"
}

@test "a broken drain file fails closed, naming it: vfstore 69, vfpick 69, resources-report allocates nothing" {
	printf '{"version":1,"drains":[{"vf_address":"e3:00.4"}]}' >"$DRAIN"
	sum=$(sha "$DRAIN")
	run -69 --separate-stderr vsys drain --vf $VF5 --reason x
	[[ "$stderr" == *"$DRAIN"* ]]
	run -69 --separate-stderr vsys undrain --vf $VF5
	run -69 --separate-stderr pick --profile "$P12"
	[[ "$stderr" == *"$DRAIN"* ]]
	run -69 --separate-stderr vs check
	assert_equal "$(jq -r .status <<<"$output")" unavailable
	run -0 --separate-stderr report
	run -0 jq -r '.gpu | "\(.allocatable_slots) \(.placement_disabled_reason)"' <<<"$output"
	assert_output --partial "0 "
	assert_output --partial "$DRAIN"
	assert_equal "$(sha "$DRAIN")" "$sum"
	for bad in '{"version":2,"drains":[]}' '{"version":1,"drains":{}}' \
	    '{"version":1,"drains":[{"vf_address":"0000:e3:00.4","drained_at":"x","reason":"r"}]}' \
	    '{"version":1,"drains":[{"vf_address":"0000:e3:00.4","drained_at":"2026-08-20T15:00:00Z","reason":"r"},{"vf_address":"0000:e3:00.4","drained_at":"2026-08-20T15:00:00Z","reason":"r"}]}' \
	    'not json'; do
		printf '%s' "$bad" >"$DRAIN"
		run -69 --separate-stderr vsys drain --vf $VF5 --reason x
		assert_equal "$(cat "$DRAIN")" "$bad"
	done
}

@test "a FIFO as the drain file is refused at once, the lock is not held" {
	mkfifo "$DRAIN"
	run -69 --separate-stderr timeout 10 vfstore --data-dir "$DATA" \
	    --sysfs-root "$SYSFS" drain --vf $VF5 --reason x
	[[ "$stderr" == *"$DRAIN"* ]]
	run -69 --separate-stderr timeout 10 vfpick --data-dir "$DATA" \
	    --sysfs-root "$SYSFS" --profile "$P12"
}

@test "drain waits for the store lock (75), and a failed save leaves the drain file as it was (74)" {
	hold_lock
	run -75 --separate-stderr vsys --lock-timeout 1 drain --vf $VF4 --reason x
	release_lock
	assert_file_not_exists "$DRAIN"
	vsys drain --vf $VF4 --reason x >/dev/null 2>&1
	sum=$(sha "$DRAIN")
	run -74 --separate-stderr faulty FAIL_fsync=1 FAIL_MATCH=vf-drain \
	    vfstore --data-dir "$DATA" --sysfs-root "$SYSFS" drain --vf $VF5 \
	    --reason y
	assert_equal "$(sha "$DRAIN")" "$sum"
	run -0 jq -r '.drains | map(.vf_address) | join(" ")' "$DRAIN"
	assert_output "$VF4"
}
