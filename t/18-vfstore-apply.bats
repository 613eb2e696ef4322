#!/usr/bin/env bats
# 18-vfstore-apply.bats - `vfstore apply`: check lines in, one answer per
# line out, durable before acknowledged, never stopping on bad input,
# failing closed and healing, metrics textfile, signals (SPEC.md 4.2).

load helpers
load lib/store

setup() {
	vfs_setup
	store_setup
	PROM=$T/tf/vfsentinel-sentinel.prom
	mkdir -p "$T/tf"
}

teardown() {
	if [ -n "${APID:-}" ]; then kill "$APID" 2>/dev/null || true; fi
}

# check KIND VF ID AT [NVRM]: one check line as sentinel-poll writes it.
check() {
	jq -nc --arg c "$1" --arg vf "$2" --arg id "$3" --arg at "$4" --arg n "${5:-}" \
	    '{check: $c, vf_address: $vf, instance_id: $id, assigned_at: $at} +
	    (if $n == "" then {} else {nvrm: $n} end)'
}

# metric NAME: the sample value of one series in the textfile.
metric() {
	awk -v n="$1" '$1 == n { print $2 }' "$PROM"
}

# start_apply: vfstore apply reading the FIFO $T/in, writing $T/out.
start_apply() {
	mkfifo "$T/in"
	vfstore --data-dir "$DATA" apply --metrics-file "$PROM" <"$T/in" \
	    >"$T/out" 2>"$T/err" 3>&- &
	APID=$!
	exec 5>"$T/in"
}

# term_apply: SIGTERM to start_apply's vfstore, which exits 0; its input
# closed.
term_apply() {
	local rc=0
	kill -TERM "$APID"
	wait "$APID" || rc=$?
	APID=
	assert_equal "$rc" 0
	exec 5>&-
}

# answers N: waits until $T/out holds N lines.
has_lines() {
	[ "$(wc -l <"$T/out")" -ge "$1" ]
}
answers() {
	wait_for has_lines "$1"
}

@test "reports become outcomes; every input line gets exactly one answer" {
	{
		check failed $VF A $AT1 "NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)"
		check failed $VF A $AT1
		check unknown $VF A $AT1
		check rpc_error $VF B $AT2
		check failed $VF B $AT2 "NVRM: x"
		check ok 0000:e3:00.5 C $AT1
		echo '{"check":"list_error","error":"cannot read ledger"}'
		check unsupported_agent $VF D $AT1
	} >"$T/in.jsonl"
	run -0 --separate-stderr vs apply <"$T/in.jsonl"
	assert_equal "${#lines[@]}" 8
	assert_equal "$(jq -r '.outcome // .cleared' <<<"$output" | tr '\n' ' ')" \
	    "recorded unchanged counted counted quarantined 0 counted counted "
	assert_equal "$(jq -c 'del(.nvrm)' <<<"${lines[4]}")" \
	    '{"check":"failed","vf_address":"0000:e3:00.4","instance_id":"B","assigned_at":"2026-08-20T16:00:00Z","outcome":"quarantined","failures":2,"threshold":2}'
	assert_equal "$(jq -r .nvrm <<<"${lines[0]}")" "NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)"
	quarantined $VF
	assert_equal "$(grep -c '"quarantined wedged vGPU VF"' <<<"$stderr")" 1
	assert_equal "$(grep '"quarantined wedged vGPU VF"' <<<"$stderr" | jq -r '.nvrm + " " + (.failures|tostring) + " " + (.threshold|tostring)')" \
	    "NVRM: x 2 2"
	assert_equal "$(grep -c 'below quarantine threshold' <<<"$stderr")" 1
}

@test "success lines clear tallies and rescind from the triggering assignment" {
	{
		check failed $VF A $AT1
		check failed $VF B $AT2
		check ok $VF A $AT1
		check ok $VF B $AT2
	} >"$T/in.jsonl"
	run -0 --separate-stderr vs apply <"$T/in.jsonl"
	assert_equal "$(jq -c '[.cleared, .rescinded]' <<<"${lines[2]}")" '[1,false]'
	assert_equal "$(jq -c '[.cleared, .rescinded]' <<<"${lines[3]}")" '[1,true]'
	run -0 jq -c .records "$HEALTH"
	assert_output '[]'
}

@test "bad lines get error answers and the stream goes on" {
	{
		echo 'not json'
		echo '[1,2]'
		echo '"a string"'
		echo '{"check":"failed","vf_address":"0000:e3:00.4"}'
		echo '{"vf_address":"0000:e3:00.4"}'
		echo '{"check":"exploded"}'
		echo '{"check":"failed","vf_address":"0000:E3:00.4","instance_id":"A","assigned_at":"x"}'
		echo '{"check":"failed","vf_address":4,"instance_id":"A","assigned_at":"x"}'
		head -c 1048576 /dev/zero | tr '\0' a; echo
		echo '{"check":"ok","check":"ok"}'
		check failed $VF A $AT1
	} >"$T/in.jsonl"
	run -0 --separate-stderr vs apply <"$T/in.jsonl"
	assert_equal "${#lines[@]}" 11
	for i in 0 1 2 3 4 5 6 7 8 9; do
		jq -e 'has("error")' <<<"${lines[i]}" >/dev/null || fail "line $i: ${lines[i]}"
	done
	assert_equal "$(jq -r .error <<<"${lines[3]}")" 'missing string field "instance_id"'
	assert_equal "$(jq -r .vf_address <<<"${lines[3]}")" 0000:e3:00.4
	assert_equal "$(jq -r .error <<<"${lines[6]}")" 'invalid VF address "0000:E3:00.4"'
	assert_equal "$(jq -r .error <<<"${lines[8]}")" 'line longer than 64 KiB'
	assert_equal "$(jq -r .outcome <<<"${lines[10]}")" recorded
	assert_equal "$(grep -c 'skipping bad check line' <<<"$stderr")" 10
}

@test "an unavailable store gets error answers, is never written, and heals when fixed" {
	put_health 'not json'
	sum=$(sha "$HEALTH")
	start_apply
	check failed $VF A $AT1 >&5
	check ok $VF A $AT1 >&5
	check unknown $VF A $AT1 >&5
	answers 3
	assert_equal "$(sed -n 1p "$T/out" | jq -r .error)" \
	    "VF health state unavailable: $HEALTH: unmarshal VF health state: '[' or '{' expected near 'not'"
	assert_equal "$(sed -n 2p "$T/out" | jq -r .error)" \
	    "VF health state unavailable: $HEALTH: unmarshal VF health state: '[' or '{' expected near 'not'"
	assert_equal "$(sed -n 3p "$T/out" | jq -r .outcome)" counted
	assert_equal "$(sha "$HEALTH")" "$sum"
	put_health '{"version":1,"records":[{"vf_address":"0000:e3:00.6","quarantined_at":"2026-08-20T00:00:00Z"}]}'
	check failed $VF A $AT1 >&5
	answers 4
	assert_equal "$(sed -n 4p "$T/out" | jq -r .outcome)" recorded
	exec 5>&-
	wait "$APID"
	APID=
}

@test "the metrics textfile has every counter, zero-initialised, and passes promtool" {
	start_apply
	wait_for test -s "$PROM"
	for r in ok failed unknown rpc_error unsupported_agent list_error; do
		assert_equal "$(metric "hypeman_instances_vgpu_sentinel_checks_total{result=\"$r\"}")" 0
	done
	check failed $VF A $AT1 >&5
	check failed $VF B $AT2 >&5
	check failed $VF B $AT2 >&5
	check unknown $VF C $AT2 >&5
	answers 4
	wait_for grep -qx 'hypeman_instances_vgpu_sentinel_checks_total{result="unknown"} 1' "$PROM"
	assert_equal "$(metric 'hypeman_instances_vgpu_sentinel_checks_total{result="failed"}')" 3
	assert_equal "$(metric hypeman_instances_vgpu_sentinel_init_failures_total)" 2
	assert_equal "$(metric hypeman_instances_vgpu_sentinel_quarantines_total)" 1
	# The gauges belong to resources-report alone (SPEC 4.5): two files
	# exporting one series make node_exporter reject the scrape.
	run ! grep -q 'quarantined_vfs\|store_unavailable' "$PROM"
	assert_equal "$(stat -c %a "$PROM")" 644
	assert_equal "$(ls -A "$T/tf")" vfsentinel-sentinel.prom
	if [ -x "$VFS_TOOLS/promtool" ]; then
		run -0 "$VFS_TOOLS/promtool" check metrics <"$PROM"
	else
		run -0 /usr/bin/python3 -c 'import sys
from prometheus_client.parser import text_string_to_metric_families as p
print(len(list(p(sys.stdin.read()))))' <"$PROM"
		assert_output 3
	fi
	exec 5>&-
	wait "$APID"
	APID=
}

@test "a persist failure answers an error, and the resent check succeeds" {
	mkfifo "$T/in"
	env LD_PRELOAD="$(fault_env)" FAIL_fsync=1 \
	    vfstore --data-dir "$DATA" apply <"$T/in" >"$T/out" 2>"$T/err" 3>&- &
	APID=$!
	exec 5>"$T/in"
	check failed $VF A $AT1 >&5
	answers 1
	assert_equal "$(jq -r .error "$T/out")" \
	    "persist VF health state: sync VF health state parent dir: Input/output error"
	assert_not_exists "$HEALTH"
	grep -q '"failed to record vGPU VF init failure"' "$T/err"
	check failed $VF A $AT1 >&5
	answers 2
	assert_equal "$(sed -n 2p "$T/out" | jq -r .outcome)" recorded
	assert_equal "$(tallies $VF)" A
	exec 5>&-
	wait "$APID"
	APID=
}

@test "SIGTERM mid-stream: exit 0, and every acknowledged report is durable" {
	set_threshold 1000
	start_apply
	for i in $(seq 1 40); do check failed "0000:e3:00.$((i % 8))" "i-$i" $AT1 >&5; done
	answers 10
	term_apply
	n=$(wc -l <"$T/out")
	[ "$n" -ge 10 ]
	while read -r line; do
		vf=$(jq -r .vf_address <<<"$line")
		id=$(jq -r .instance_id <<<"$line")
		[ "$(jq -r .outcome <<<"$line")" = recorded ] || fail "$line"
		jq -e --arg vf "$vf" --arg id "$id" '.records[] |
		    select(.vf_address == $vf) | .failures[] | select(.instance_id == $id)' \
		    "$HEALTH" >/dev/null || fail "acknowledged $vf $id not on disk"
	done <"$T/out"
}

@test "SIGTERM while idle exits 0 at once" {
	start_apply
	wait_for test -s "$PROM"
	term_apply
}

@test "a write error on stdout exits 74" {
	check unknown $VF A $AT1 >"$T/in.jsonl"
	run -74 --separate-stderr bash -c 'vfstore --data-dir "$DATA" apply <"$T/in.jsonl" >/dev/full'
}

@test "apply exits within a second or two when its stdout reader goes away while idle" {
	mkfifo "$T/in" "$T/o"
	vfstore --data-dir "$DATA" apply <"$T/in" >"$T/o" 2>"$T/err" 3>&- &
	APID=$!
	exec 5>"$T/in"
	head -n 1 "$T/o" >/dev/null 3>&- &
	reader=$!
	check unknown $VF A $AT1 >&5
	wait "$reader"
	SECONDS=0
	rc=0
	wait "$APID" || rc=$?
	APID=
	assert [ "$SECONDS" -le 2 ]
	assert_equal "$rc" 74
	exec 5>&-
}

@test "a lock held elsewhere answers errors for mutating reports only" {
	rfail $VF A $AT1
	hold_lock
	{
		check failed $VF A $AT1
		check failed $VF B $AT2
		check ok 0000:e3:00.7 Z $AT2
	} >"$T/in.jsonl"
	run -0 --separate-stderr vfstore --data-dir "$DATA" --lock-timeout 1 apply <"$T/in.jsonl"
	assert_equal "$(jq -r .outcome <<<"${lines[0]}")" unchanged
	assert_equal "$(jq -r .error <<<"${lines[1]}" | cut -c1-5)" "lock "
	assert_equal "$(jq -r .cleared <<<"${lines[2]}")" 0
	release_lock
	assert_equal "$(tallies $VF)" A
}

# claim VF ID AT: a claims ledger holding one claim.
one_claim() {
	put_claims "$(jq -nc --arg vf "$1" --arg id "$2" --arg at "$3" \
	    '{version: 1, claims: [{vf_address: $vf, instance_id: $id,
	    claimed_at: $at, vsock: "vsock:42:2222"}]}')"
}

@test "the first confirmed ok of an assignment sets ok_at on its claim, once" {
	one_claim $VF A $AT1
	check ok $VF A $AT1 >"$T/in.jsonl"
	run -0 --separate-stderr vs apply <"$T/in.jsonl"
	run -0 jq -r '.claims[0].ok_at' "$CLAIMS"
	first=$output
	[[ $first =~ ^20[0-9][0-9]-.*Z$ ]]
	# jq --indent 2 layout, ok_at last: the ledger stays the writer's own.
	run -0 jq -r 'keys_unsorted | join(" ")' <(jq '.claims[0]' "$CLAIMS")
	assert_output "vf_address instance_id claimed_at vsock ok_at"
	before=$(stat -c '%i %Y.%y' "$CLAIMS")
	sleep 0.2
	run -0 --separate-stderr vs apply <"$T/in.jsonl"
	assert_equal "$(stat -c '%i %Y.%y' "$CLAIMS")" "$before"
	assert_equal "$(jq -r '.claims[0].ok_at' "$CLAIMS")" "$first"
	run -0 vs check
}

@test "an ok of another assignment, or a failed check, sets no ok_at" {
	one_claim $VF A $AT1
	{
		check ok $VF A $AT2
		check ok $VF B $AT1
		check ok 0000:e3:00.5 A $AT1
		check failed $VF A $AT1
	} >"$T/in.jsonl"
	run -0 --separate-stderr vs apply <"$T/in.jsonl"
	run -0 jq -c '.claims[0] | has("ok_at")' "$CLAIMS"
	assert_output false
}

@test "ok_at within one batch of a failure: the failure is tallied, the ok is kept" {
	one_claim $VF A $AT1
	{
		check failed $VF B $AT2
		check ok $VF A $AT1
	} >"$T/in.jsonl"
	run -0 --separate-stderr vs apply <"$T/in.jsonl"
	assert_equal "$(tallies $VF)" B
	run -0 jq -c '.claims[0] | has("ok_at")' "$CLAIMS"
	assert_output true
}

@test "a running apply sees a claim made after its start: the new assignment's first ok sets ok_at" {
	one_claim $VF A $AT1
	start_apply
	check ok $VF A $AT1 >&5
	answers 1
	# Another VF's claim is added (as the hook's prepare adds one); the
	# health file does not change.
	jq --arg at "$AT2" '.claims += [{vf_address: "0000:e3:00.5",
	    instance_id: "B", claimed_at: $at}]' "$CLAIMS" >"$T/c.json"
	mv "$T/c.json" "$CLAIMS"
	check ok 0000:e3:00.5 B $AT2 >&5
	answers 2
	run -0 jq -r '.claims[] | select(.instance_id == "B") | has("ok_at")' \
	    "$CLAIMS"
	assert_output true
	exec 5>&-
	wait "$APID"
	APID=
}
