#!/usr/bin/env bats
# 12-nonregular.bats - a FIFO, a directory or another non-regular file
# where a program reads a file (SPEC 6.3): every file is opened without
# blocking and refused unless it is a regular file. A store fails closed
# (69) naming the file and is never overwritten; the seal is ignored; the
# audit log, the configuration and vfrecover's journals are refused with
# their name. Each command runs under `bounded`, so a hang (an open(2) of
# a FIFO without a writer blocks for ever) fails the test instead of
# stopping the suite.

load helpers
load lib/store

A=0000:e3:00.4
PF=0000:e3:00.0
AT=2026-08-20T15:00:00Z

setup() {
	vfs_setup
	store_setup
	SEAL=$HEALTH.seal
}

# bounded CMD...: CMD, killed after 10 s (TERM, then KILL: a program that
# catches TERM in a blocked open(2) would restart it). bvs: vfstore so.
bounded() {
	timeout -k 2 10 "$@"
}
bvs() {
	bounded vfstore --data-dir "$DATA" "$@"
}

# refused TEXT FILE: TEXT (a log or a reason) names FILE first, then
# says it is not a regular file ("FILE: read VF health state: not a
# regular file").
refused() {
	[[ "$1" == *"$2: "*"not a regular file"* ]] ||
	    fail "no \"$2: ... not a regular file\" in: $1"
}

# nonregular KIND PATH: PATH made a FIFO (fifo) or a directory (dir).
nonregular() {
	rm -rf "$2"
	if [ "$1" = fifo ]; then mkfifo "$2"; else mkdir "$2"; fi
}

# still KIND PATH: PATH is still that FIFO or directory (never replaced).
still() {
	if [ "$1" = fifo ]; then
		[ -p "$2" ] || fail "$2 is no longer a FIFO"
	else
		[ -d "$2" ] || fail "$2 is no longer a directory"
	fi
}

# store_refused KIND FILE CMD...: with FILE (vf-health.json or
# vf-claims.json) non-regular, check and the vfstore command CMD, which
# needs it, fail closed naming it; FILE stays as it was.
store_refused() {
	local kind=$1 file=$DATA/gpu/$2
	shift 2
	nonregular "$kind" "$file"
	run -69 --separate-stderr bvs check
	assert_equal "$(jq -r .status <<<"$output")" unavailable
	refused "$(jq -r .reason <<<"$output")" "$file"
	run -69 --separate-stderr bvs "$@"
	refused "$(jq -r .error <<<"$stderr")" "$file"
	still "$kind" "$file"
}

@test "a FIFO as vf-health.json: unavailable naming the file, never written, no hang" {
	store_refused fifo vf-health.json report-failure --vf $A --instance i-1 \
	    --assigned-at $AT
	run -69 --separate-stderr bvs quarantine --force --vf $A
	still fifo "$HEALTH"
}

@test "a directory as vf-health.json: unavailable naming the file" {
	store_refused dir vf-health.json report-failure --vf $A --instance i-1 \
	    --assigned-at $AT
	run -69 --separate-stderr bvs show
	refused "$(jq -r .error <<<"$stderr")" "$HEALTH"
}

@test "a FIFO or a directory as vf-claims.json: unavailable naming the file" {
	store_refused fifo vf-claims.json claims
	run -69 --separate-stderr bvs release --instance i-1
	store_refused dir vf-claims.json release --instance i-1
	still dir "$CLAIMS"
}

@test "a FIFO as the seal is ignored: a report under the lock does not hang, and writes what a full load would" {
	run -0 --separate-stderr rfail $A i-1 $AT
	cp "$HEALTH" "$T/before"
	nonregular fifo "$SEAL"
	run -0 --separate-stderr bvs report-failure --vf 0000:e3:00.5 \
	    --instance i-2 --assigned-at $AT
	run -0 jq -r '[.records[].vf_address] | join(" ")' "$HEALTH"
	assert_output "$A 0000:e3:00.5"
	# A second writer does not wait behind a lock held for ever.
	run -0 --separate-stderr bvs --lock-timeout 2 clear --vf 0000:e3:00.5
	run -0 cmp "$HEALTH" "$T/before"
}

@test "a directory as the seal is ignored too" {
	run -0 --separate-stderr rfail $A i-1 $AT
	nonregular dir "$SEAL"
	run -0 --separate-stderr bvs report-failure --vf $A --instance i-2 --assigned-at $AT
	assert_equal "$(tallies $A)" "i-1 i-2"
	run -0 --separate-stderr bvs check
}

@test "a FIFO as the audit log: history fails naming it, a quarantine stands and exits 74, no hang" {
	nonregular fifo "$DATA/gpu/audit.jsonl"
	run -74 --separate-stderr bvs history
	refused "$stderr" "$DATA/gpu/audit.jsonl"
	run -74 --separate-stderr bvs quarantine --force --vf $A
	run -0 quarantined $A
	still fifo "$DATA/gpu/audit.jsonl"
}

@test "a directory as the audit log: history fails naming it" {
	nonregular dir "$DATA/gpu/audit.jsonl"
	run -74 --separate-stderr bvs history
	refused "$stderr" "$DATA/gpu/audit.jsonl"
}

@test "a FIFO or a directory as the configuration: 78 naming it, no hang" {
	nonregular fifo "$T/conf"
	VFSENTINEL_CONF=$T/conf run -78 --separate-stderr bounded vfstore \
	    --data-dir "$DATA" config
	refused "$(jq -r .error <<<"$stderr")" "$T/conf"
	run -78 --separate-stderr bounded vfstore -c "$T/conf" \
	    --data-dir "$DATA" config
	refused "$(jq -r .error <<<"$stderr")" "$T/conf"
	nonregular dir "$T/conf"
	VFSENTINEL_CONF=$T/conf run -78 --separate-stderr bounded vfstore \
	    --data-dir "$DATA" config
	refused "$(jq -r .error <<<"$stderr")" "$T/conf"
}

@test "a FIFO or a directory as a vfrecover journal: --status shows it unreadable, naming it, no hang" {
	mkdir -p "$DATA/gpu/recovery"
	nonregular fifo "$DATA/gpu/recovery/$PF.json"
	run -0 --separate-stderr bounded vfrecover --data-dir "$DATA" --status
	assert_equal "$(jq -r .state <<<"$output")" unreadable
	refused "$(jq -r .error <<<"$output")" "$DATA/gpu/recovery/$PF.json"
	nonregular dir "$DATA/gpu/recovery/$PF.json"
	run -0 --separate-stderr bounded vfrecover --data-dir "$DATA" --status
	assert_equal "$(jq -r .state <<<"$output")" unreadable
	refused "$(jq -r .error <<<"$output")" "$DATA/gpu/recovery/$PF.json"
}
