#!/usr/bin/env bats
# resources-report --vfs, the per-VF and per-card gauges and the
# systemic-failure flag (SPEC.md 4.5): one line per VF with the state the
# shared placement rule gives it, and counts that agree with those lines.
# The jq, awk and bash -c scripts are in single quotes on purpose (their
# $names are theirs); bats' run sets $stderr.
# shellcheck disable=SC2016,SC2154

load helpers
load lib/placement

A=0000:e3:00.0
B=0000:e4:00.0

setup() {
	vfs_setup
}

# failed_ago VF AGE...: a record of VF with one failure per AGE, each
# reported AGE seconds ago (distinct assignments), no quarantined_at.
failed_ago() {
	local vf=$1
	shift
	_store_edit "$DATA/gpu/vf-health.json" records \
	    '.records = ([.records[] | select(.vf_address != $vf)] +
	    [{vf_address: $vf, failures: [$ages | split(" ") | to_entries[] |
	    {instance_id: "i-f\(.key)", assigned_at: "2026-08-20T15:00:0\(.key)Z",
	    reported_at: (now - (.value | tonumber) | floor | todate)}]}]
	    | sort_by(.vf_address))' --arg vf "$vf" --arg ages "$*"
}

# five_states: card A with a VF in each state of --vfs. .4 free with one
# failure, .5 claimed (allocated 1160), .6 dirty (1161, no claim), .7
# quarantined by hand, 01.0 claimed and quarantined; card B: .4 free.
five_states() {
	mk_card "$SYSFS" $A
	mk_card "$SYSFS" $B
	mk_vf "$SYSFS" $A 0000:e3:00.4
	mk_vf "$SYSFS" $A 0000:e3:00.5 1160
	mk_vf "$SYSFS" $A 0000:e3:00.6 1161
	mk_vf "$SYSFS" $A 0000:e3:00.7
	mk_vf "$SYSFS" $A 0000:e3:01.0
	mk_vf "$SYSFS" $B 0000:e4:00.4
	record_failures 0000:e3:00.4 1
	claim 0000:e3:00.5 i-5
	quarantine 0000:e3:00.7 0000:e3:01.0
	claim 0000:e3:01.0 i-10
}

# random_states SEED: random_host of t/55 in small: 1-3 cards of 1-6
# VFs, each free, claimed, dirty, quarantined, failed or a mix, and a
# quarter of them drained.
random_states() {
	local c n vf pf bus
	RANDOM=$1
	for ((c = 0; c < 1 + RANDOM % 3; c++)); do
		bus=$(printf '%02x' $((0x40 + c)))
		pf=0000:$bus:00.0
		mk_card "$SYSFS" "$pf"
		for ((n = 1; n <= 1 + RANDOM % 6; n++)); do
			vf=0000:$bus:00.$n
			if ((RANDOM % 4 == 0)); then
				mk_vf "$SYSFS" "$pf" "$vf" 1161
			else
				mk_vf "$SYSFS" "$pf" "$vf"
			fi
			case $((RANDOM % 6)) in
			0) claim "$vf" "i-$vf" ;;
			1) quarantine "$vf" ;;
			2) record_failures "$vf" 2 ;;
			3) record_failures "$vf" 1 ;;
			4) claim "$vf" "i-$vf"; quarantine "$vf" ;;
			esac
			((RANDOM % 4 != 0)) || drain_vf "$vf"
		done
	done
}

@test "--vfs: one line per VF, each state, absent fields omitted" {
	five_states
	run -0 --separate-stderr report --vfs
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" 6
	assert_line -n 0 '{"vf_address":"0000:e3:00.4","card":"0000:e3:00.0","state":"free","failures":1}'
	assert_line -n 1 '{"vf_address":"0000:e3:00.5","card":"0000:e3:00.0","state":"claimed","instance_id":"i-5","current_type":"1160"}'
	assert_line -n 2 '{"vf_address":"0000:e3:00.6","card":"0000:e3:00.0","state":"dirty","current_type":"1161"}'
	assert_line -n 3 '{"vf_address":"0000:e3:00.7","card":"0000:e3:00.0","state":"quarantined","quarantined_at":"2026-08-20T16:00:29.5Z"}'
	assert_line -n 4 '{"vf_address":"0000:e3:01.0","card":"0000:e3:00.0","state":"quarantined","instance_id":"i-10","quarantined_at":"2026-08-20T16:00:29.5Z"}'
	assert_line -n 5 '{"vf_address":"0000:e4:00.4","card":"0000:e4:00.0","state":"free"}'
}

@test "--vfs: a VF quarantined by its failures shows them and the quarantine time" {
	five_states
	record_failures 0000:e3:00.4 2
	run -0 --separate-stderr report --vfs
	run -0 jq -c 'select(.vf_address == "0000:e3:00.4") | [.state, .failures, (.quarantined_at | type)]' <<<"$output"
	assert_output '["quarantined",2,"string"]'
}

@test "--vfs: the per-VF states agree with the capacity counts, on random hosts" {
	local seed rep vfs
	for seed in 3 17 29 44 58 71; do
		rm -rf "$SYSFS" "$DATA"
		mkdir -p "$SYSFS/sys/bus/pci/devices" "$DATA/gpu"
		random_states "$seed"
		rep=$(report 2>/dev/null)
		vfs=$(report --vfs 2>/dev/null)
		run -0 jq -sc '[length,
		    ([.[] | select(.instance_id or .current_type)] | length),
		    ([.[] | select(.state == "free")] | length),
		    ([.[] | select(.state == "quarantined")] | length),
		    ([.[] | select(.state == "drained")] | length)]' <<<"$vfs"
		echo "seed $seed: $output"
		assert_equal "$output" "$(jq -c '[.gpu.total_slots, .gpu.used_slots,
		    .gpu.allocatable_slots, .gpu.quarantined_slots,
		    .gpu.drained_slots]' <<<"$rep")"
	done
}

@test "--vfs with the store unavailable: sysfs and claims, no quarantine, store_unavailable, exit 0" {
	five_states
	printf '{"version":1,"records":' >"$DATA/gpu/vf-health.json"
	run -0 --separate-stderr report --vfs
	[[ "$stderr" == *'"level":"warn"'*'placement disabled'* ]]
	run -0 jq -sc 'map([.vf_address[8:], .state, .instance_id, .store_unavailable, has("failures"), has("quarantined_at")])' <<<"$output"
	assert_output '[["00.4","free",null,true,false,false],["00.5","claimed","i-5",true,false,false],["00.6","dirty",null,true,false,false],["00.7","free",null,true,false,false],["01.0","claimed","i-10",true,false,false],["00.4","free",null,true,false,false]]'
}

@test "--vfs: no VFs prints nothing; with prometheus it is a usage error; a full stdout is 74" {
	mk_card "$SYSFS" $A
	run -0 --separate-stderr report --vfs
	assert_output ''
	run -64 --separate-stderr report --vfs --format prometheus
	assert_output ''
	[[ "$stderr" == *'--vfs'* ]]
	five_states
	run -74 --separate-stderr bash -c 'resources-report --sysfs-root "$SYSFS" --data-dir "$DATA" --vfs >/dev/full'
	report --vfs --output "$T/vfs.jsonl"
	run -0 jq -s length "$T/vfs.jsonl"
	assert_output 6
}

@test "prometheus: per-VF gauges for quarantined, dirty or failed VFs only" {
	five_states
	run -0 --separate-stderr report --format prometheus
	run -0 grep -E '^vfsentinel_vf_(quarantined|failures)\{' <<<"$output"
	assert_equal "${#lines[@]}" 8
	assert_line 'vfsentinel_vf_quarantined{vf="0000:e3:00.4",card="0000:e3:00.0"} 0'
	assert_line 'vfsentinel_vf_failures{vf="0000:e3:00.4",card="0000:e3:00.0"} 1'
	assert_line 'vfsentinel_vf_quarantined{vf="0000:e3:00.6",card="0000:e3:00.0"} 0'
	assert_line 'vfsentinel_vf_failures{vf="0000:e3:00.6",card="0000:e3:00.0"} 0'
	assert_line 'vfsentinel_vf_quarantined{vf="0000:e3:00.7",card="0000:e3:00.0"} 1'
	assert_line 'vfsentinel_vf_quarantined{vf="0000:e3:01.0",card="0000:e3:00.0"} 1'
	refute_line --partial '0000:e3:00.5'
	refute_line --partial '0000:e4:00.4'
}

@test "prometheus: vfsentinel_card_vfs has the six states of each card, summing to its VFs" {
	five_states
	run -0 --separate-stderr report --format prometheus
	run -0 grep '^vfsentinel_card_vfs{' <<<"$output"
	assert_equal "${#lines[@]}" 12
	assert_line 'vfsentinel_card_vfs{card="0000:e3:00.0",state="suspect"} 0'
	assert_line 'vfsentinel_card_vfs{card="0000:e3:00.0",state="drained"} 0'
	assert_line 'vfsentinel_card_vfs{card="0000:e4:00.0",state="drained"} 0'
	assert_line 'vfsentinel_card_vfs{card="0000:e3:00.0",state="free"} 1'
	assert_line 'vfsentinel_card_vfs{card="0000:e3:00.0",state="claimed"} 1'
	assert_line 'vfsentinel_card_vfs{card="0000:e3:00.0",state="dirty"} 1'
	assert_line 'vfsentinel_card_vfs{card="0000:e3:00.0",state="quarantined"} 2'
	assert_line 'vfsentinel_card_vfs{card="0000:e4:00.0",state="free"} 1'
	assert_line 'vfsentinel_card_vfs{card="0000:e4:00.0",state="claimed"} 0'
	assert_line 'vfsentinel_card_vfs{card="0000:e4:00.0",state="dirty"} 0'
	assert_line 'vfsentinel_card_vfs{card="0000:e4:00.0",state="quarantined"} 0'
}

@test "prometheus: the card gauges sum to each card's VFs and the --vfs lines, on random hosts" {
	local seed want
	for seed in 5 19 33; do
		rm -rf "$SYSFS" "$DATA"
		mkdir -p "$SYSFS/sys/bus/pci/devices" "$DATA/gpu"
		random_states "$seed"
		want=$(report 2>/dev/null | jq -r '.gpu.cards[] | "\(.address) \(.vfs)"')
		[ -n "$want" ]
		run -0 jq -rs 'group_by(.card)[] | "\(.[0].card) \(length)"' \
		    <<<"$(report --vfs 2>/dev/null)"
		assert_equal "$output" "$want"
		report --format prometheus >"$T/r.prom" 2>/dev/null
		run -0 awk '/^vfsentinel_card_vfs\{/ { split($1, f, "\""); n[f[2]] += $2 }
		    END { for (c in n) print c, n[c] }' "$T/r.prom"
		assert_equal "$(sort <<<"$output")" "$want"
	done
}

@test "prometheus: build_info, the systemic gauge, and promtool passes" {
	need_tool promtool
	five_states
	failed_ago 0000:e3:00.6 60
	run -0 --separate-stderr report --format prometheus
	printf '%s\n' "$output" >"$T/r.prom"
	assert_line 'hypeman_instances_vgpu_vf_health_store_unavailable 0'
	assert_line 'vfsentinel_vf_failures{vf="0000:e3:00.6",card="0000:e3:00.0"} 1'
	assert_line 'vfsentinel_build_info{version="0.1.0"} 1'
	assert_line 'vfsentinel_systemic_failure_suspected 0'
	assert_line '# TYPE vfsentinel_vf_quarantined gauge'
	assert_line '# TYPE vfsentinel_card_vfs gauge'
	run -0 "$VFS_TOOLS/promtool" check metrics <"$T/r.prom"
	[ -z "$(dup_series "$T/r.prom")" ]
	run -0 grep -c '^# HELP vfsentinel_' "$T/r.prom"
	assert_output 8
}

# The systemic rule (SPEC.md 6.5) on an 8-card host of 4 VFs each
# (mk_host: card c is 0000:BUS:00.0, BUS 40, 44, ... 5c; its VFs
# 0000:BUS:01.0-3).

# ago S: the RFC 3339 time S seconds ago.
ago() {
	date -u -d "@$(($(date +%s) - $1))" +%Y-%m-%dT%H:%M:%SZ
}

# failed_run VF BEGAN REPORTED: a failure on VF of an assignment that
# began BEGAN seconds ago, reported REPORTED seconds ago, added to VF's
# record.
failed_run() {
	_store_edit "$DATA/gpu/vf-health.json" records \
	    '.records = ([.records[] | select(.vf_address != $vf)] +
	    [(first(.records[] | select(.vf_address == $vf)) //
	    {vf_address: $vf, failures: []}) | .failures += [{instance_id:
	    "i-\($vf)-\(.failures | length)", assigned_at: $began,
	    reported_at: $reported}]] | sort_by(.vf_address))' \
	    --arg vf "$1" --arg began "$(ago "$2")" --arg reported "$(ago "$3")"
}

# claim_ago VF S: a claim of VF made S seconds ago (claim's are months
# old).
claim_ago() {
	_store_edit "$DATA/gpu/vf-claims.json" claims \
	    '.claims = (.claims + [{vf_address: $vf, instance_id: "i-\($vf)",
	    claimed_at: $at, profile: $p, type_id: "1160"}]
	    | sort_by(.vf_address))' \
	    --arg vf "$1" --arg at "$(ago "$2")" --arg p "$P12"
}

# recovered CARD S [PROG]: the audit line of vfrecover's clear of CARD,
# S seconds ago (PROG: another program's clear).
recovered() {
	mkdir -p "$DATA/gpu"
	jq -nc --arg ts "$(ago "$2")" --arg card "$1" \
	    --arg prog "${3:-vfrecover}" '{ts: $ts, prog: $prog,
	    command: "clear", card: $card, vfs: [], uid: 0, user: "root",
	    outcome: "done"}' >>"$DATA/gpu/audit.jsonl"
}

# systemic_is JSON: the flag and the reason (null when absent) of a
# report, and the gauge agrees.
systemic_is() {
	local gauge=0
	run -0 --separate-stderr report
	run -0 jq -c '.gpu | [.systemic_failure_suspected, .systemic_reason]' \
	    <<<"$output"
	assert_output "$1"
	[[ "$1" != '[true,'* ]] || gauge=1
	run -0 --separate-stderr report --format prometheus
	assert_line "vfsentinel_systemic_failure_suspected $gauge"
}

@test "systemic: one mass VMM kill wedging 8 VFs on 4 cards of an 8-card host is not systemic" {
	local bus
	mk_host "$SYSFS" 8 4
	# 16 VMs run for months, two on each card; three more started
	# within the window.
	for bus in 40 44 48 4c 50 54 58 5c; do
		claim 0000:$bus:01.0 "i-$bus-0"
		claim 0000:$bus:01.1 "i-$bus-1"
	done
	claim_ago 0000:50:01.2 600
	claim_ago 0000:54:01.2 500
	claim_ago 0000:58:01.2 400
	# The OOM killer takes 8 VMs on 4 cards; each VF wedges and the
	# sentinel reports it. Two of them had started within the window.
	for bus in 40 44 48 4c; do
		failed_run 0000:$bus:01.0 9000000 60
		failed_run 0000:$bus:01.1 9000000 59
	done
	failed_run 0000:40:01.2 1800 58
	failed_run 0000:44:01.2 1200 57
	systemic_is '[false,null]'
	# Were all eight killed VMs young, with nothing else assigned
	# since, the rule could not tell the kill from a rollout: every VF
	# assigned within the window failed.
	rm "$DATA/gpu/vf-health.json" "$DATA/gpu/vf-claims.json"
	for bus in 40 44 48 4c; do
		failed_run 0000:$bus:01.0 900 60
		failed_run 0000:$bus:01.1 900 59
	done
	systemic_is '[true,"failures on 8 of the 8 VFs assigned within 3600 s"]'
}

@test "systemic: a rollout that fails half the VFs assigned within the window is systemic" {
	mk_host "$SYSFS" 8 4
	claim 0000:40:01.0 i-old-1
	claim 0000:44:01.0 i-old-2
	# Since the rollout six VMs booted: three failed, three run.
	failed_run 0000:48:01.0 900 880
	failed_run 0000:4c:01.0 600 590
	claim_ago 0000:50:01.0 300
	claim_ago 0000:54:01.0 240
	claim_ago 0000:58:01.0 120
	systemic_is '[false,null]'
	failed_run 0000:5c:01.0 60 50
	systemic_is '[true,"failures on 3 of the 6 VFs assigned within 3600 s"]'
	# One VF failing twice is still one VF.
	failed_run 0000:5c:01.0 40 30
	systemic_is '[true,"failures on 3 of the 6 VFs assigned within 3600 s"]'
	echo 'recovery.systemic_fraction = 0.6' >"$VFSENTINEL_CONF"
	systemic_is '[false,null]'
	echo 'recovery.systemic_fraction = 0.25' >"$VFSENTINEL_CONF"
	systemic_is '[true,"failures on 3 of the 6 VFs assigned within 3600 s"]'
	# A window of 700 s: two failed (5c and 4c) of five assigned.
	printf 'recovery.systemic_window = 700\nrecovery.systemic_fraction = 0.4\n' \
	    >"$VFSENTINEL_CONF"
	systemic_is '[true,"failures on 2 of the 5 VFs assigned within 700 s"]'
	echo 'recovery.systemic_window = 700' >"$VFSENTINEL_CONF"
	systemic_is '[false,null]'
}

@test "systemic: a card that fails again right after its recovery is systemic" {
	mk_host "$SYSFS" 8 4
	claim 0000:40:01.0 i-old-1
	claim_ago 0000:48:01.0 300
	claim_ago 0000:4c:01.0 300
	recovered 0000:44:00.0 1200
	failed_run 0000:44:01.0 600 300
	systemic_is '[true,"failures on 1 VF of card 0000:44:00.0 since its recovery"]'
	# Both rules: the reasons are joined.
	failed_run 0000:48:01.1 200 100
	systemic_is '[true,"failures on 1 VF of card 0000:44:00.0 since its recovery; failures on 2 of the 4 VFs assigned within 3600 s"]'
	rm "$DATA/gpu/vf-health.json"
	failed_run 0000:44:01.0 600 300
	# A newer recovery of the card: the failure came before it.
	recovered 0000:44:00.0 200
	systemic_is '[false,null]'
	# A recovery older than the window does not count, nor an
	# operator's clear, nor a failure of an assignment older than the
	# recovery.
	rm "$DATA/gpu/audit.jsonl"
	recovered 0000:44:00.0 4000
	recovered 0000:44:00.0 1000 vfstore
	systemic_is '[false,null]'
	rm "$DATA/gpu/audit.jsonl"
	recovered 0000:44:00.0 500
	systemic_is '[false,null]'
	# An unreadable audit log: the recoveries are unknown, said once.
	rm "$DATA/gpu/audit.jsonl"
	mkfifo "$DATA/gpu/audit.jsonl"
	run -0 --separate-stderr report
	run -0 jq -c '.gpu.systemic_failure_suspected' <<<"$output"
	assert_output false
	assert_equal "$(jq -r .msg <<<"$stderr")" \
	    "cannot read the audit log; the systemic rule ignores recoveries"
}

@test "systemic: the recovery.* keys move the rule; systemic_cards and systemic_vfs are accepted and replaced" {
	mk_host "$SYSFS" 8 4
	failed_run 0000:40:01.0 5000 4000
	failed_run 0000:44:01.0 3700 3650
	systemic_is '[false,null]'
	echo 'recovery.systemic_window = 7200' >"$VFSENTINEL_CONF"
	systemic_is '[true,"failures on 2 of the 2 VFs assigned within 7200 s"]'
	printf 'recovery.systemic_cards = 1\nrecovery.systemic_vfs = 1\n' \
	    >"$VFSENTINEL_CONF"
	systemic_is '[false,null]'
	for bad in 0 1.5 -0.5 0.5x .5 abc ''; do
		echo "recovery.systemic_fraction = $bad" >"$VFSENTINEL_CONF"
		run -78 --separate-stderr report
		[[ "$stderr" == *'recovery.systemic_fraction'* ]]
	done
	echo 'recovery.systemic_fraction = 1' >"$VFSENTINEL_CONF"
	run -0 --separate-stderr report
	echo 'recovery.systemic_cards = 0' >"$VFSENTINEL_CONF"
	run -78 --separate-stderr report
	[[ "$stderr" == *'recovery.systemic_cards'* ]]
}

@test "systemic: absent while the store is unavailable, false on a host without VFs" {
	five_states
	failed_ago 0000:e3:00.6 10
	failed_ago 0000:e4:00.4 10
	printf '{"version":1,"claims":' >"$DATA/gpu/vf-claims.json"
	run -0 --separate-stderr report
	run -0 jq -c '.gpu | [has("systemic_failure_suspected"), has("placement_disabled_reason")]' <<<"$output"
	assert_output '[false,true]'
	run -0 --separate-stderr report --format prometheus
	assert_line 'vfsentinel_systemic_failure_suspected 0'
	rm -rf "$SYSFS/sys/bus/pci/devices"/*
	rm "$DATA/gpu/vf-claims.json"
	run -0 --separate-stderr report
	run -0 jq -c '.gpu | [.systemic_failure_suspected, has("systemic_reason")]' <<<"$output"
	assert_output '[false,false]'
}

# suspects VF...: a suspect file suspecting each VF (SPEC.md 7.3).
suspects() {
	local vf list=
	for vf; do
		list="$list${list:+,}{\"vf_address\":\"$vf\",\"instance_id\":\"i-$vf\",\"assigned_at\":\"2026-12-07T10:00:00Z\",\"ended_at\":\"2026-12-07T10:00:09Z\",\"ended\":\"unclean\",\"source\":\"reconcile: control socket refused connections\"}"
	done
	printf '{"version":1,"suspects":[%s]}' "$list" >"$DATA/gpu/vf-suspect.json"
}

@test "suspect VFs: suspect_slots, the state suspect (after quarantined and drained), the gauges; exclude takes them out of allocatable" {
	five_states
	suspects 0000:e3:00.4 0000:e3:00.5 0000:e3:00.7
	run -0 --separate-stderr report
	run -0 jq -c '.gpu | [.suspect_slots, .allocatable_slots]' <<<"$output"
	assert_output '[2,2]'
	run -0 --separate-stderr report --vfs
	run -0 jq -rs 'map("\(.vf_address) \(.state)") | join(",")' <<<"$output"
	assert_output --partial "0000:e3:00.4 suspect,0000:e3:00.5 suspect,0000:e3:00.6 dirty,0000:e3:00.7 quarantined"
	run -0 --separate-stderr report --format prometheus
	assert_line 'vfsentinel_suspect_vfs 2'
	assert_line 'vfsentinel_card_vfs{card="0000:e3:00.0",state="suspect"} 2'
	assert_line 'vfsentinel_card_vfs{card="0000:e3:00.0",state="quarantined"} 2'
	echo 'suspect.placement = exclude' >"$VFSENTINEL_CONF"
	run -0 --separate-stderr report
	run -0 jq -c '.gpu | [.suspect_slots, .allocatable_slots,
	    (.profiles[] | select(.name == "NVIDIA L40S-12Q") | .available)]' <<<"$output"
	assert_output '[2,1,1]'
}

@test "the counters vfsentinel_suspects_total and vfsentinel_verifications_total{result} come from the audit log" {
	five_states
	{
		echo '{"ts":"2026-12-07T10:00:00Z","command":"suspect","vf":"0000:e3:00.4"}'
		echo '{"ts":"2026-12-07T10:01:00Z","command":"suspect","vf":"0000:e3:00.5"}'
		echo '{"ts":"2026-12-07T10:02:00Z","command":"verify","vf":"0000:e3:00.4","result":"pass"}'
		echo '{"ts":"2026-12-07T10:03:00Z","command":"verify","vf":"0000:e3:00.5","result":"fail"}'
		echo '{"ts":"2026-12-07T10:04:00Z","command":"verify","vf":"0000:e3:00.5","result":"error"}'
		echo '{"ts":"2026-12-07T10:05:00Z","command":"unsuspect","vf":"0000:e3:00.4","cause":"verify"}'
	} >"$DATA/gpu/audit.jsonl"
	run -0 --separate-stderr report --format prometheus
	assert_line 'vfsentinel_suspects_total 2'
	assert_line 'vfsentinel_verifications_total{result="pass"} 1'
	assert_line 'vfsentinel_verifications_total{result="fail"} 1'
	assert_line 'vfsentinel_verifications_total{result="error"} 1'
	assert_line '# TYPE vfsentinel_suspects_total counter'
	rm "$DATA/gpu/audit.jsonl"
	run -0 --separate-stderr report --format prometheus
	assert_line 'vfsentinel_suspects_total 0'
}
