#!/usr/bin/env bats
# 23-store-text.bats - the writer never writes what the reader refuses:
# every string that goes into a store from the command line is valid
# UTF-8, or the command exits 65 naming the argument and writes nothing
# (SPEC.md 2.3, 4.1). One bad byte used to disable placement host-wide.

load helpers
load lib/store

VF=0000:e3:00.4
PF=0000:e3:00.0
AT=2026-08-20T15:00:00Z
P12="NVIDIA L40S-12Q"

setup() {
	vfs_setup
	store_setup
	mk_card "$SYSFS" $PF
	mk_vf "$SYSFS" $PF $VF
	mk_vf "$SYSFS" $PF 0000:e3:00.5
}

pick() {
	vfpick --data-dir "$DATA" --sysfs-root "$SYSFS" "$@"
}

# refused OPTION: the last run exited 65 and its log names OPTION.
refused() {
	assert_equal "$status" 65
	assert_equal "$(jq -r .option <<<"${stderr_lines[0]}")" "$1"
}

# still_works: the stores load and placement goes on.
still_works() {
	run -0 --separate-stderr vs check
	run -0 --separate-stderr pick --profile "$P12" --claim good-1
	run -0 --separate-stderr rfail $VF good-2 $AT
	run -0 --separate-stderr vs clear --vf $VF
}

@test "vfpick refuses a claim id, profile, endpoint or control socket that is not UTF-8 (65, nothing written)" {
	run --separate-stderr pick --profile "$P12" --claim $'vm\xff'
	refused --claim
	run --separate-stderr pick --profile $'NVIDIA L40S-12Q\xff' --claim vm-1
	refused --profile
	run --separate-stderr pick --profile "$P12" --claim vm-1 \
	    --vsock $'unix:/run/a\xc0\xaf'
	refused --vsock
	run --separate-stderr pick --profile "$P12" --claim vm-1 \
	    --control-socket $'/run/vm/\xed\xa0\x80/qmp.sock'
	refused --control-socket
	assert_file_not_exists "$CLAIMS"
	still_works
}

@test "vfstore refuses an instance, assigned-at or reason that is not UTF-8 (65, nothing written)" {
	run --separate-stderr rfail $VF $'bad\xff' $AT
	refused --instance
	run --separate-stderr rfail $VF i-1 $'2026\xf5'
	refused --assigned-at
	run --separate-stderr rok $VF $'bad\xe2\x82' $AT
	refused --instance
	run --separate-stderr vs --sysfs-root "$SYSFS" quarantine --vf $VF \
	    --reason $'typo\x80'
	refused --reason
	assert_file_not_exists "$HEALTH"
	still_works
}

@test "valid multi-byte UTF-8 is kept byte for byte in both stores" {
	local id=$'vm-\xc3\xa9t\xc3\xa9-\xf0\x9f\x9a\x80'
	run -0 --separate-stderr rfail $VF "$id" $AT
	run -0 jq -r '.records[0].failures[0].instance_id' "$HEALTH"
	assert_output "$id"
	run -0 --separate-stderr pick --profile "$P12" --claim "$id" \
	    --control-socket $'/run/vm/\xe2\x82\xac/qmp.sock'
	run -0 jq -r '.claims[0].instance_id, .claims[0].control_socket' "$CLAIMS"
	assert_line -n 0 "$id"
	assert_line -n 1 $'/run/vm/\xe2\x82\xac/qmp.sock'
	run -0 --separate-stderr vs check
}
