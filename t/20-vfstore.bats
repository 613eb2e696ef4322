#!/usr/bin/env bats
# 20-vfstore.bats - vfstore's report rules, show/check/quarantine/clear,
# claims and release, threshold semantics, fail-closed loading and exit
# codes (SPEC.md 4.1, 4.2; upstream 2.7-2.9, test list 3.C).

load helpers
load lib/store

setup() {
	vfs_setup
	store_setup
	# The VFs that quarantine --vf may name (it refuses others).
	mk_card "$SYSFS" 0000:e3:00.0
	mk_vf "$SYSFS" 0000:e3:00.0 $VF
	mk_vf "$SYSFS" 0000:e3:00.0 0000:e3:00.5
}

# vq ARGS...: quarantine on the test's sysfs tree.
vq() {
	vs --sysfs-root "$SYSFS" quarantine "$@"
}

@test "first failure is recorded, a second assignment quarantines (default threshold 2)" {
	run -0 --separate-stderr rfail $VF instance-1 $AT1
	assert_output '{"vf_address":"0000:e3:00.4","outcome":"recorded","failures":1,"threshold":2}'
	run -0 jq -c '.' <<<"${stderr_lines[0]}"
	assert_output --partial '"level":"warn"'
	run -0 --separate-stderr rfail $VF instance-2 $AT2
	assert_output '{"vf_address":"0000:e3:00.4","outcome":"quarantined","failures":2,"threshold":2}'
	assert [ "$(jq -r .level <<<"${stderr_lines[0]}")" = error ]
	assert [ "$(jq -r .msg <<<"${stderr_lines[0]}")" = "quarantined wedged vGPU VF" ]
	run -0 --separate-stderr rfail $VF instance-3 $AT2
	assert_output '{"vf_address":"0000:e3:00.4","outcome":"unchanged","failures":2,"threshold":2}'
	assert_equal "$(tallies $VF)" "instance-1 instance-2"
	run -0 jq -r '.records[0].quarantined_at' "$HEALTH"
	assert_output --regexp '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$'
}

@test "the same assignment is counted once (dedup on instance and assigned_at)" {
	rfail $VF instance-1 $AT1
	run -0 --separate-stderr rfail $VF instance-1 $AT1
	assert_output '{"vf_address":"0000:e3:00.4","outcome":"unchanged","failures":1,"threshold":2}'
	run -0 --separate-stderr rfail $VF instance-1 $AT2
	assert_output --partial '"outcome":"quarantined"'
	run -0 jq '.records[0].failures | length' "$HEALTH"
	assert_output 2
}

@test "a duplicate report writes nothing" {
	rfail $VF instance-1 $AT1
	before=$(stat -c %i.%Y.%Z "$HEALTH")
	sleep 1.1
	run -0 --separate-stderr rfail $VF instance-1 $AT1
	assert_equal "$(stat -c %i.%Y.%Z "$HEALTH")" "$before"
}

@test "success clears the tally of its assignment; repeating it clears nothing" {
	rfail $VF instance-1 $AT1
	run -0 --separate-stderr rok $VF instance-1 $AT1
	assert_output '{"vf_address":"0000:e3:00.4","cleared":1,"rescinded":false}'
	run -0 --separate-stderr rok $VF instance-1 $AT1
	assert_output '{"vf_address":"0000:e3:00.4","cleared":0,"rescinded":false}'
	run -0 --separate-stderr rfail $VF instance-2 $AT2
	assert_output --partial '"outcome":"recorded","failures":1'
}

@test "success from the triggering assignment rescinds the quarantine" {
	rfail $VF A $AT1
	rfail $VF B $AT2
	run -0 --separate-stderr rok $VF B $AT2
	assert_output '{"vf_address":"0000:e3:00.4","cleared":2,"rescinded":true}'
	assert [ "$(jq -r .msg <<<"${stderr_lines[0]}")" = \
	    "rescinded vGPU VF quarantine after successful driver init from the triggering assignment" ]
	run -1 --separate-stderr vs show --vf $VF
	assert_output ''
	run -0 jq -c '.records' "$HEALTH"
	assert_output '[]'
}

@test "success from an older assignment trims older tallies and keeps the quarantine" {
	rfail $VF A $AT1
	rfail $VF B $AT2
	run -0 --separate-stderr rok $VF A $AT1
	assert_output '{"vf_address":"0000:e3:00.4","cleared":1,"rescinded":false}'
	quarantined $VF
	assert_equal "$(tallies $VF)" "B"
	run -0 --separate-stderr rok $VF B $AT2
	assert_output '{"vf_address":"0000:e3:00.4","cleared":1,"rescinded":true}'
	run ! quarantined $VF
}

@test "a success without an exact match clears nothing and never lifts another's quarantine" {
	rfail $VF X $AT1
	rfail $VF Y $AT2
	sum=$(sha "$HEALTH")
	run -0 --separate-stderr rok $VF Y ""
	assert_output '{"vf_address":"0000:e3:00.4","cleared":0,"rescinded":false}'
	run -0 --separate-stderr rok $VF Z $AT2
	assert_output '{"vf_address":"0000:e3:00.4","cleared":0,"rescinded":false}'
	assert_equal "$(sha "$HEALTH")" "$sum"
	quarantined $VF
}

@test "success for a VF with no failures touches no file, not even the lock" {
	run -0 --separate-stderr rok $VF A $AT1
	assert_output '{"vf_address":"0000:e3:00.4","cleared":0,"rescinded":false}'
	assert_equal "$(ls -A "$DATA/gpu")" lock
	rfail 0000:e3:00.5 A $AT1
	rm "$LOCK"
	sum=$(sha "$HEALTH")
	run -0 --separate-stderr rok $VF A $AT1
	assert_equal "$(sha "$HEALTH")" "$sum"
	assert_not_exists "$LOCK"
	assert_not_exists "$HEALTH.tmp"
}

@test "an operator quarantine (no failures) is never rescinded by a success" {
	run -0 --separate-stderr vq --vf $VF --reason "drain for test"
	run -0 jq -r .quarantined <<<"$output"
	assert [ "$(jq -r .msg <<<"${stderr_lines[0]}")" = "quarantined VF by operator" ]
	run -0 --separate-stderr rok $VF A $AT1
	assert_output --partial '"cleared":0'
	run -0 --separate-stderr rfail $VF A $AT1
	assert_output --partial '"outcome":"unchanged","failures":0'
	quarantined $VF
}

@test "quarantine of a VF with tallies drops them, so no success can lift it" {
	rfail $VF A $AT1
	vq --vf $VF
	run -0 jq -c '.records[0] | keys' "$HEALTH"
	assert_output '["quarantined_at","vf_address"]'
	run -0 --separate-stderr rok $VF A $AT1
	assert_output --partial '"cleared":0'
	quarantined $VF
}

@test "clear removes the record: tally and quarantine are gone" {
	rfail $VF A $AT1
	rfail $VF B $AT2
	run -0 --separate-stderr vs clear --vf $VF
	assert_output '{"vf_address":"0000:e3:00.4","quarantined":false,"outcome":"cleared"}'
	run -1 vs show --vf $VF
	run -0 --separate-stderr rfail $VF A $AT1
	assert_output --partial '"outcome":"recorded","failures":1'
}

@test "quarantine --card and clear --card act on every VF whose physfn is the card" {
	mk_card "$SYSFS" 0000:e3:00.0
	mk_vf "$SYSFS" 0000:e3:00.0 0000:e3:00.4
	mk_vf "$SYSFS" 0000:e3:00.0 0000:e3:00.5
	mk_card "$SYSFS" 0000:e4:00.0
	mk_vf "$SYSFS" 0000:e4:00.0 0000:e4:00.4
	run -0 --separate-stderr vs --sysfs-root "$SYSFS" quarantine --card 0000:e3:00.0 --reason drain
	assert_equal "${#lines[@]}" 2
	run -0 jq -r '[.records[].vf_address] | join(" ")' "$HEALTH"
	assert_output "0000:e3:00.4 0000:e3:00.5"
	run -0 --separate-stderr vs --sysfs-root "$SYSFS" clear --card 0000:e3:00.0
	run -0 jq -c '.records' "$HEALTH"
	assert_output '[]'
	run -1 --separate-stderr vs --sysfs-root "$SYSFS" quarantine --card 0000:e5:00.0
	assert_output ''
}

@test "show lists every record with the threshold applied" {
	rfail 0000:e3:00.5 A $AT1
	vq --vf $VF
	run -0 --separate-stderr vs show
	assert_equal "${#lines[@]}" 2
	assert_equal "$(jq -r '.vf_address + " " + (.quarantined|tostring)' <<<"$output" | tr '\n' ,)" \
	    "0000:e3:00.4 true,0000:e3:00.5 false,"
	set_threshold 1
	run -0 --separate-stderr vs show --vf 0000:e3:00.5
	assert_equal "$(jq -r .quarantined <<<"$output")" true
	run -0 jq -r '.records[1].quarantined_at // "none"' "$HEALTH"
	assert_output none
}

@test "invalid VF addresses are rejected with exit 65 and nothing is written" {
	for bad in not-a-pci-address 0000:e3:00.8 e3:00.8 e3:0.4 0000:e3:00.4x \
	    " e3:00.4" 0000:g3:00.4 ""; do
		run -65 --separate-stderr rfail "$bad" A $AT1
		run -65 --separate-stderr rok "$bad" A $AT1
		run -65 --separate-stderr vs show --vf "$bad"
		run -65 --separate-stderr vq --vf "$bad"
		run -65 --separate-stderr vs --sysfs-root "$SYSFS" clear --card "$bad"
	done
	assert_not_exists "$HEALTH"
	run -65 --separate-stderr rfail $VF "$(printf 'x%.0s' {1..257})" $AT1
}

@test "an invalid address's error shows the expected form" {
	run -65 --separate-stderr vq --vf xyz
	assert_output ''
	run -0 jq -r .msg <<<"${stderr_lines[0]}"
	assert_output 'invalid VF address "xyz" (expected DDDD:BB:DD.F or BB:DD.F, hex)'
	run -65 --separate-stderr vs --sysfs-root "$SYSFS" quarantine --card e3:00
	run -0 jq -r .msg <<<"${stderr_lines[0]}"
	assert_output 'invalid card address "e3:00" (expected DDDD:BB:DD.F or BB:DD.F, hex)'
	run -65 --separate-stderr rfail $'e3\xff' A $AT1
	run -0 jq -r .msg <<<"${stderr_lines[0]}"
	assert_output 'invalid VF address "e3\xff" (expected DDDD:BB:DD.F or BB:DD.F, hex)'
}

@test "--vf and --card take the short form lspci prints and upper-case hex; files keep the canonical form" {
	run -0 --separate-stderr rfail E3:00.4 A $AT1
	assert_output --partial '"vf_address":"0000:e3:00.4"'
	run -0 --separate-stderr rfail 0000:E3:00.4 B $AT2
	assert_output --partial '"outcome":"quarantined","failures":2'
	run -0 jq -c '[.records[].vf_address]' "$HEALTH"
	assert_output '["0000:e3:00.4"]'
	run -0 --separate-stderr vs show --vf e3:00.4
	assert_output --partial '"vf_address":"0000:e3:00.4"'
	run -0 --separate-stderr rok e3:00.4 B $AT2
	assert_output '{"vf_address":"0000:e3:00.4","cleared":2,"rescinded":true}'
	run -0 --separate-stderr vq --vf e3:00.5
	assert_output --partial '"vf_address":"0000:e3:00.5"'
	run -0 --separate-stderr vs --sysfs-root "$SYSFS" clear --card E3:00.0
	assert_equal "${#lines[@]}" 2
	run -0 --separate-stderr vs --sysfs-root "$SYSFS" quarantine --card e3:00.0
	run -0 jq -r '[.records[].vf_address] | join(" ")' "$HEALTH"
	assert_output "0000:e3:00.4 0000:e3:00.5"
	# The stores and JSON lines take the canonical form only.
	run -0 --separate-stderr vs apply <<<'{"check":"ok","vf_address":"e3:00.4","instance_id":"A","assigned_at":"x"}'
	assert_output --partial '"error":"invalid VF address'
}

@test "quarantine --vf of a VF this host's sysfs does not have exits 65 and writes nothing, unless --force" {
	run -65 --separate-stderr vq --vf 0000:99:00.1 --reason typo
	assert_output ''
	run -0 jq -r .msg <<<"${stderr_lines[0]}"
	assert_output 'no VF 0000:99:00.1 on this host; check the address, or quarantine it with --force'
	assert_not_exists "$HEALTH"
	# A PCI function that is no VF (here the card itself) is no VF either.
	run -65 --separate-stderr vq --vf 0000:e3:00.0
	assert_not_exists "$HEALTH"
	run -0 --separate-stderr vq --vf 0000:99:00.1 --force --reason "VF gone"
	run -0 jq -r .quarantined <<<"$output"
	assert_output true
	run -0 jq -r '.records[0].vf_address' "$HEALTH"
	assert_output 0000:99:00.1
	run -64 --separate-stderr vs --sysfs-root "$SYSFS" clear --vf 0000:99:00.1 --force
}

@test "clear --vf still removes the record of a VF that sysfs no longer has" {
	vq --vf 0000:e3:00.5
	rm -r "$SYSFS/sys/bus/pci/devices/0000:e3:00.5"
	run -0 --separate-stderr vs --sysfs-root "$SYSFS" clear --vf 0000:e3:00.5
	assert_output '{"vf_address":"0000:e3:00.5","quarantined":false,"outcome":"cleared"}'
	run -0 jq -c '.records' "$HEALTH"
	assert_output '[]'
}

@test "raising the threshold never lifts a quarantine; lowering it quarantines at load" {
	set_threshold 3
	rfail $VF A $AT1
	run -0 --separate-stderr rfail $VF B $AT2
	assert_output --partial '"outcome":"recorded","failures":2,"threshold":3'
	set_threshold 2
	quarantined $VF
	run -0 jq -r '.records[0].quarantined_at // "none"' "$HEALTH"
	assert_output none
	# The next mutation persists quarantined_at.
	rfail 0000:e3:00.5 C $AT1
	run -0 jq -r '.records[0].quarantined_at // "none"' "$HEALTH"
	refute_output none
	set_threshold 5
	quarantined $VF
	run -0 --separate-stderr rfail $VF C $AT1
	assert_output --partial '"outcome":"unchanged"'
}

@test "an upstream-written file with offsets loads and is written back in UTC" {
	set_threshold 3
	put_health @upstream.json
	run -0 --separate-stderr vs check
	assert_output --partial '"status":"ok"'
	run -0 --separate-stderr vs clear --vf 0000:e3:00.5
	run -0 cmp "$HEALTH" "$FIX/upstream-rewritten.json"
	# What vfstore writes is exactly jq's layout.
	diff <(jq --indent 2 . "$HEALTH") <(cat "$HEALTH"; echo)
}

@test "claims says for each claim what the sentinel can use: agent, console, both or none" {
	put_claims '{"version":1,"claims":[{"vf_address":"0000:e3:00.4","instance_id":"i-1","claimed_at":"t","vsock":"vsock:42:2222","control_socket":"/run/q1","app_log":"/var/log/c1.log"},{"vf_address":"0000:e3:00.5","instance_id":"i-2","claimed_at":"t","vsock":"virtio-serial:/run/ch","control_socket":"/run/q2"},{"vf_address":"0000:e3:00.6","instance_id":"i-3","claimed_at":"t","control_socket":"/run/q3","app_log":"/var/log/c3.log"},{"vf_address":"0000:e3:00.7","instance_id":"i-4","claimed_at":"t","control_socket":"/run/q4"},{"vf_address":"0000:e4:00.4","instance_id":"i-5","claimed_at":"t","vsock":"vsock:43:2222"}]}'
	run -0 --separate-stderr vs claims
	run -0 jq -r '"\(.instance_id) \(.sentinel_sources)"' <<<"$output"
	assert_output 'i-1 agent,console
i-2 agent
i-3 console
i-4 none
i-5 none'
}

@test "claims lists the ledger; release removes one instance's claim" {
	put_claims '{"version":1,"claims":[{"vf_address":"0000:e3:00.5","instance_id":"i-2","claimed_at":"2026-08-20T15:00:00Z"},{"vf_address":"0000:e3:00.4","instance_id":"i-1","claimed_at":"2026-08-20T16:00:00Z","profile":"NVIDIA L40S-12Q","type_id":"1160","vsock":"vsock:42:2222","control_socket":"/run/vm/i-1/qmp.sock"}]}'
	run -0 --separate-stderr vs claims
	assert_equal "${#lines[@]}" 2
	assert_equal "$(jq -r .instance_id <<<"${lines[0]}")" i-1
	assert_equal "$(jq -r .vsock <<<"${lines[0]}")" vsock:42:2222
	run -0 --separate-stderr vs release --instance i-1
	assert_output '{"instance_id":"i-1","vf_address":"0000:e3:00.4","released":true,"deconfigured":false,"ended":"unknown","suspect":false}'
	run -0 jq -r '[.claims[].instance_id] | join(" ")' "$CLAIMS"
	assert_output i-2
	run -0 --separate-stderr vs release --instance i-1
	assert_output '{"instance_id":"i-1","released":false,"ended":"unknown","suspect":false}'
}

@test "release and deconfigure take --reason (SPEC 2.1: every operator edit); a missing one is named" {
	put_claims '{"version":1,"claims":[{"vf_address":"0000:e3:00.4","instance_id":"i-1","claimed_at":"2026-08-20T16:00:00Z"}]}'
	mkdir -p "$T/proc"
	run -0 --separate-stderr vs release --instance i-1 --reason "VM moved"
	assert_output '{"instance_id":"i-1","vf_address":"0000:e3:00.4","released":true,"deconfigured":false,"ended":"unknown","suspect":false}'
	run -0 jq -r '[.msg, .reason] | join(": ")' <<<"${stderr_lines[0]}"
	assert_output 'released VF claim: VM moved'
	echo 1160 >"$SYSFS/sys/bus/pci/devices/$VF/nvidia/current_vgpu_type"
	run -0 --separate-stderr vs --sysfs-root "$SYSFS" deconfigure --vf $VF --reason "launcher crashed" --proc-root "$T"
	assert_output '{"vf_address":"0000:e3:00.4","deconfigured":true}'
	run -0 jq -r '[.msg, .reason] | join(": ")' <<<"${stderr_lines[0]}"
	assert_output 'deconfigured VF: launcher crashed'
	run -64 --separate-stderr vs release --instance i-1 --reason
	assert_equal "${stderr_lines[0]}" \
	    'vfstore: unknown option or missing argument: --reason'
	run -64 --separate-stderr vs deconfigure --vf $VF --instance i-1
	assert_equal "${stderr_lines[0]}" \
	    'vfstore: deconfigure: unknown option or missing argument: --instance'
}

@test "release --deconfigure resets current_vgpu_type unless the VFIO device is open" {
	mk_card "$SYSFS" 0000:e3:00.0
	mk_vf "$SYSFS" 0000:e3:00.0 $VF 1160
	d=$SYSFS/sys/bus/pci/devices/$VF
	mkdir -p "$T/groups/87" "$d/vfio-dev/vfio3" "$T/proc/1234/fd" "$T/proc/77/fd"
	ln -s "../../../groups/87" "$d/iommu_group"
	ln -s /dev/null "$T/proc/77/fd/0"
	ln -s /dev/vfio/87 "$T/proc/1234/fd/9"
	put_claims '{"version":1,"claims":[{"vf_address":"0000:e3:00.4","instance_id":"i-1","claimed_at":"2026-08-20T16:00:00Z"}]}'
	sum=$(sha "$CLAIMS")
	run -1 --separate-stderr vs --sysfs-root "$SYSFS" release --instance i-1 --deconfigure --proc-root "$T"
	assert_equal "$(cat "$d/nvidia/current_vgpu_type")" 1160
	assert_equal "$(sha "$CLAIMS")" "$sum"
	assert_equal "$(jq -r .pid <<<"${stderr_lines[0]}")" 1234
	rm "$T/proc/1234/fd/9"
	ln -s /dev/vfio/devices/vfio3 "$T/proc/1234/fd/10"
	run -1 --separate-stderr vs --sysfs-root "$SYSFS" release --instance i-1 --deconfigure --proc-root "$T"
	rm "$T/proc/1234/fd/10"
	ln -s /dev/vfio/devices/vfio4 "$T/proc/1234/fd/10"
	run -0 --separate-stderr vs --sysfs-root "$SYSFS" release --instance i-1 --deconfigure --proc-root "$T"
	assert_output --partial '"deconfigured":true'
	assert_equal "$(cat "$d/nvidia/current_vgpu_type")" 0
	run -0 jq -c .claims "$CLAIMS"
	assert_output '[]'
}

@test "check says ok with counts, or unavailable with the reason and exit 69" {
	run -0 --separate-stderr vs check
	assert_output '{"status":"ok","records":0,"quarantined":0,"claims":0,"drained":0}'
	put_claims '{"version":1,"claims":[{"vf_address":"0000:e3:00.4","instance_id":"a","claimed_at":"x"},{"vf_address":"0000:e3:00.5","instance_id":"a","claimed_at":"y"}]}'
	run -69 --separate-stderr vs check
	assert_equal "$(jq -r .reason <<<"$output")" \
	    "$CLAIMS: validate VF claims claim 1: duplicate instance \"a\""
}

@test "check waits --lock-timeout for a held lock once, not twice (75)" {
	hold_lock
	SECONDS=0
	run -75 --separate-stderr vs --lock-timeout 3 check
	# One wait of 3 s; before, check waited 3 s, then took the lock
	# again through ctx_lock for its message and waited 3 s more.
	assert [ "$SECONDS" -le 5 ]
	run -0 grep -c 'lock wait timed out' <<<"$stderr"
	assert_output 1
	release_lock
}

@test "a held lock makes mutators exit 75 after --lock-timeout" {
	hold_lock
	SECONDS=0
	run -75 --separate-stderr vs --lock-timeout 1 report-failure --vf $VF --instance A --assigned-at $AT1
	assert [ "$SECONDS" -le 3 ]
	assert_output ''
	release_lock
	assert_not_exists "$HEALTH"
}

@test "a write error on stdout exits 74" {
	run -74 --separate-stderr bash -c 'vfstore --data-dir "$DATA" check >/dev/full'
	run -74 --separate-stderr bash -c 'vfstore --data-dir "$DATA" report-success --vf 0000:e3:00.4 --instance a --assigned-at b >/dev/full'
}

@test "usage errors exit 64: unknown command, missing options, misplaced options" {
	run -64 --separate-stderr vs frobnicate
	assert_output ''
	assert [ "${stderr_lines[0]}" = 'vfstore: unknown command "frobnicate"' ]
	run -64 --separate-stderr vs report-failure --vf $VF
	run -64 --separate-stderr vs --vf $VF show
	run -64 --separate-stderr vs show extra
	run -64 --separate-stderr vs quarantine --vf $VF --card 0000:e3:00.0
	run -64 --separate-stderr vs claims --vf $VF
	run -64 --separate-stderr vs
	run -0 --separate-stderr vs --help
	assert_output --partial 'report-failure --vf VF --instance ID --assigned-at TS'
}

@test "a usage error names the program and the missing or unknown option" {
	run -64 --separate-stderr vs report-failure --vf $VF --instance i-1
	assert_output ''
	assert_equal "${stderr_lines[0]}" 'vfstore: report-failure: missing --assigned-at'
	run -64 --separate-stderr vs report-success --vf $VF
	assert_equal "${stderr_lines[0]}" \
	    'vfstore: report-success: missing --instance, --assigned-at'
	run -64 --separate-stderr vs release
	assert_equal "${stderr_lines[0]}" 'vfstore: release: missing --instance'
	run -64 --separate-stderr vs show --vff
	assert_equal "${stderr_lines[0]}" \
	    'vfstore: unknown option or missing argument: --vff'
	assert_equal "${stderr_lines[1]:0:15}" 'usage: vfstore '
}

@test "a missing configuration file named by -c is exit 78" {
	run -78 --separate-stderr vfstore -c "$T/nope.conf" --data-dir "$DATA" check
	echo "gpu.vf_quarantine_threshold = 0" >"$T/bad.conf"
	run -78 --separate-stderr vfstore -c "$T/bad.conf" --data-dir "$DATA" check
}

@test "success for a healthy VF answers at once while a writer holds the lock" {
	rfail 0000:e3:00.5 A $AT1
	hold_lock
	run -0 --separate-stderr vs --lock-timeout 5 report-success --vf $VF --instance A --assigned-at $AT1
	assert_output '{"vf_address":"0000:e3:00.4","cleared":0,"rescinded":false}'
	run -75 --separate-stderr vs --lock-timeout 1 report-success --vf 0000:e3:00.5 --instance A --assigned-at $AT1
	release_lock
}
