#!/usr/bin/env bats
# vfpick (SPEC.md 4.3; upstream tests 3.D 51-52, 3.E 54-65): selection
# rules, claims, configure, fail-closed, concurrency.

load helpers
load lib/placement

E3=0000:e3:00.0

setup() {
	vfs_setup
}

# two_vfs: card e3 with free VFs .4 and .5.
two_vfs() {
	mk_card "$SYSFS" $E3
	mk_vf "$SYSFS" $E3 0000:e3:00.4
	mk_vf "$SYSFS" $E3 0000:e3:00.5
}

@test "usage errors: missing --profile, --configure without --claim, bad --vsock, bad --seed" {
	run -64 --separate-stderr vfpick
	[[ "$stderr" == *"--profile is required"* ]]
	[[ "$stderr" == *"usage: vfpick"* ]]
	run -64 --separate-stderr vfpick --profile "$P12" --configure
	run -64 --separate-stderr vfpick --profile "$P12" --vsock vsock:3:2222
	run -64 --separate-stderr vfpick --profile "$P12" --claim i-1 --vsock bogus
	run -64 --separate-stderr vfpick --profile "$P12" --seed -1
	run -64 --separate-stderr vfpick --profile "$P12" extra
	[ -z "$output" ]
}

@test "a dry run prints the VF, its card and type id, and writes nothing" {
	two_vfs
	run -0 --separate-stderr pick --profile "$P12"
	run jq -c 'del(.vf_address)' <<<"$output"
	assert_output '{"card":"0000:e3:00.0","profile":"NVIDIA L40S-12Q","type_id":"1160"}'
	assert_equal "$(ls -A "$DATA/gpu")" lock
	assert_equal "$(current 0000:e3:00.4)$(current 0000:e3:00.5)" 00
}

@test "a quarantined VF is never chosen; with only it left there is no VF" {
	two_vfs
	quarantine 0000:e3:00.4
	run picks 20 --profile "$P12"
	[ "$(sort -u <<<"$output")" = 0000:e3:00.5 ]
	rm -r "$(vfdir 0000:e3:00.5)"
	run -1 --separate-stderr pick --profile "$P12"
	[ -z "$output" ]
	[[ "$stderr" == *'no available VF for profile \"NVIDIA L40S-12Q\"'* ]]
}

@test "the threshold applies on load: enough failures quarantine without quarantined_at" {
	two_vfs
	record_failures 0000:e3:00.4 2
	run picks 20 --profile "$P12"
	[ "$(sort -u <<<"$output")" = 0000:e3:00.5 ]
	echo 'gpu.vf_quarantine_threshold = 3' >"$VFSENTINEL_CONF"
	run picks 30 --profile "$P12"
	[ "$(sort -u <<<"$output" | wc -l)" -eq 2 ]
}

@test "a card with a wedged VF is overflow only, even against a loaded card" {
	mk_card "$SYSFS" 0000:82:00.0
	mk_vf "$SYSFS" 0000:82:00.0 0000:82:00.4
	mk_vf "$SYSFS" 0000:82:00.0 0000:82:00.5
	mk_card "$SYSFS" $E3
	mk_vf "$SYSFS" $E3 0000:e3:00.4
	mk_vf "$SYSFS" $E3 0000:e3:00.5
	quarantine 0000:82:00.4
	claim 0000:e3:00.4 i-busy "$P24" 1161
	run picks 10 --profile "$P12"
	[ "$(sort -u <<<"$output")" = 0000:e3:00.5 ]
}

@test "a card with a wedged VF loses to an idle card and is used when nothing else is left" {
	mk_card "$SYSFS" 0000:82:00.0
	mk_vf "$SYSFS" 0000:82:00.0 0000:82:00.4
	mk_vf "$SYSFS" 0000:82:00.0 0000:82:00.5
	mk_card "$SYSFS" $E3
	mk_vf "$SYSFS" $E3 0000:e3:00.4
	mk_vf "$SYSFS" $E3 0000:e3:00.5
	quarantine 0000:82:00.4
	run picks 10 --profile "$P12"
	[ "$(cut -c1-7 <<<"$output" | sort -u)" = 0000:e3 ]
	claim 0000:e3:00.4 i-a
	claim 0000:e3:00.5 i-b
	run -0 --separate-stderr pick --profile "$P12"
	[ "$(jq -r .vf_address <<<"$output")" = 0000:82:00.5 ]
}

@test "30 unseeded picks on an idle card spread over more than one VF" {
	mk_host "$SYSFS" 1 8
	run picks 30 --profile "$P12"
	[ "$(wc -l <<<"$output")" -eq 30 ]
	[ "$(sort -u <<<"$output" | wc -l)" -gt 1 ]
}

@test "--seed makes the pick repeatable, and different seeds reach different VFs" {
	mk_host "$SYSFS" 1 8
	a=$(pick --profile "$P12" --seed 42)
	b=$(pick --profile "$P12" --seed 42)
	assert_equal "$a" "$b"
	for s in 1 2 3 4 5 6 7 8 9 10 11 12; do
		pick --profile "$P12" --seed $s | jq -r .vf_address
	done | sort -u >"$T/seen"
	[ "$(wc -l <"$T/seen")" -gt 1 ]
}

@test "the least loaded card wins; ties go to the lower card address" {
	mk_host "$SYSFS" 2 2
	run picks 10 --profile "$P12"
	[ "$(cut -c1-7 <<<"$output" | sort -u)" = 0000:40 ]
	claim 0000:40:01.0 i-a "$P12" 1160
	run picks 10 --profile "$P12"
	[ "$(cut -c1-7 <<<"$output" | sort -u)" = 0000:44 ]
	claim 0000:44:01.0 i-b "$P24" 1161
	run picks 10 --profile "$P12"
	[ "$(cut -c1-7 <<<"$output" | sort -u)" = 0000:40 ]
}

@test "a card with unknown load loses to known load, and is used when alone" {
	mk_host "$SYSFS" 2 3
	# 0000:40 holds a profile no VF offers any more: its load is unknown.
	claim 0000:40:01.0 i-a 'NVIDIA L40S-48Q' 1162
	claim 0000:44:01.0 i-b "$P24" 1161
	run picks 10 --profile "$P12"
	[ "$(cut -c1-7 <<<"$output" | sort -u)" = 0000:44 ]
	claim 0000:44:01.1 i-c
	claim 0000:44:01.2 i-d
	run picks 5 --profile "$P12"
	[ "$(cut -c1-7 <<<"$output" | sort -u)" = 0000:40 ]
}

@test "dirty VFs count as load and are candidates only when no clean VF is left" {
	two_vfs
	mk_vf "$SYSFS" $E3 0000:e3:00.6 1160
	run picks 20 --profile "$P12"
	refute_output --partial 0000:e3:00.6
	[ "$(sort -u <<<"$output" | wc -l)" -eq 2 ]
	claim 0000:e3:00.4 i-a
	claim 0000:e3:00.5 i-b
	run -0 --separate-stderr pick --profile "$P12"
	[ "$(jq -r '.vf_address + " " + .type_id' <<<"$output")" = "0000:e3:00.6 1160" ]
	# A leftover of another profile is not reused.
	run -1 --separate-stderr pick --profile "$P24"
	[[ "$stderr" == *'no available VF for profile'* ]]
}

@test "dirty VFs make their card the more loaded one" {
	mk_host "$SYSFS" 2 2
	echo 1161 >"$(vfdir 0000:40:01.0)/nvidia/current_vgpu_type"
	run picks 10 --profile "$P12"
	[ "$(cut -c1-7 <<<"$output" | sort -u)" = 0000:44 ]
}

@test "an unknown profile, a full host and a host with no creatable profile exit 1 with the upstream messages" {
	two_vfs
	run -1 --separate-stderr pick --profile 'NVIDIA L40S-99Q'
	[ -z "$output" ]
	[[ "$stderr" == *'profile \"NVIDIA L40S-99Q\" is not creatable on any VF (unknown profile or insufficient capacity)'* ]]
	# ... and it lists the profiles some VF does offer (SPEC 4.3).
	run -0 jq -c .offered <<<"$stderr"
	assert_output '["NVIDIA L40S-12Q","NVIDIA L40S-24Q"]'
	claim 0000:e3:00.4 i-a
	claim 0000:e3:00.5 i-b
	run -1 --separate-stderr pick --profile "$P12" --claim i-c
	[[ "$stderr" == *'no available VF for profile \"NVIDIA L40S-12Q\"'* ]]
	[ "$(jq '.claims | length' "$DATA/gpu/vf-claims.json")" -eq 2 ]
	for vf in 0000:e3:00.4 0000:e3:00.5; do
		echo 'ID    : vGPU Name' >"$(vfdir $vf)/nvidia/creatable_vgpu_types"
	done
	run -1 --separate-stderr pick --profile "$P12"
	[[ "$stderr" == *'no creatable vGPU profiles on any VF (GPUs at capacity or dirty VFs consuming framebuffer): profile \"NVIDIA L40S-12Q\"'* ]]
}

@test "--claim persists the claim before answering, with claimed_at as the assignment identity" {
	two_vfs
	run -0 --separate-stderr pick --profile "$P12" --claim i-1 \
	    --vsock vsock:42:2222 --control-socket /run/vm/i-1/qmp.sock
	line=$output
	vf=$(jq -r .vf_address <<<"$line")
	at=$(jq -r .claimed_at <<<"$line")
	[[ "$at" =~ ^20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]*[1-9])?Z$ ]]
	age=$(($(date +%s) - $(date -d "$at" +%s)))
	[ "$age" -ge 0 ]
	[ "$age" -le 5 ]
	run jq -c '.claims[0]' "$DATA/gpu/vf-claims.json"
	assert_output "{\"vf_address\":\"$vf\",\"instance_id\":\"i-1\",\"claimed_at\":\"$at\",\"profile\":\"NVIDIA L40S-12Q\",\"type_id\":\"1160\",\"vsock\":\"vsock:42:2222\",\"control_socket\":\"/run/vm/i-1/qmp.sock\"}"
	[ "$(jq -r .instance_id <<<"$line")" = i-1 ]
	[ "$(current "$vf")" = 0 ]
}

@test "asking again for an instance that holds a claim returns that claim and writes nothing" {
	two_vfs
	first=$(pick --profile "$P12" --claim i-1 2>/dev/null)
	before=$(sha "$DATA/gpu/vf-claims.json")
	run -0 --separate-stderr pick --profile "$P12" --claim i-1
	assert_output "$first"
	[ "$(sha "$DATA/gpu/vf-claims.json")" = "$before" ]
	second=$(pick --profile "$P12" --claim i-2 2>/dev/null)
	[ "$(jq -r .vf_address <<<"$second")" != "$(jq -r .vf_address <<<"$first")" ]
}

@test "a second claim with another profile exits 65 naming the held VF and profile, and changes nothing" {
	two_vfs
	first=$(pick --profile "$P12" --claim i-1 --vsock unix:/a \
	    --control-socket /c1 --configure 2>/dev/null)
	vf=$(jq -r .vf_address <<<"$first")
	before=$(sha "$DATA/gpu/vf-claims.json")
	run -65 --separate-stderr pick --profile "$P24" --claim i-1 \
	    --vsock unix:/b --control-socket /c2 --configure
	[ -z "$output" ]
	[[ "$stderr" == *"instance i-1 already holds VF $vf with profile \\\"$P12\\\"; release it first"* ]]
	[ "$(sha "$DATA/gpu/vf-claims.json")" = "$before" ]
	[ "$(current "$vf")" = 1160 ]
}

@test "a second claim with the same profile returns the claim and updates changed endpoints in the ledger" {
	two_vfs
	first=$(pick --profile "$P12" --claim i-1 --vsock unix:/a \
	    --control-socket /c1 --configure 2>/dev/null)
	at=$(jq -r .claimed_at <<<"$first")
	run -0 --separate-stderr pick --profile "$P12" --claim i-1 \
	    --vsock unix:/b --control-socket /c2 --configure
	assert_output "$first"
	run -0 jq -c '.claims[0] | [.claimed_at, .vsock, .control_socket]' \
	    "$DATA/gpu/vf-claims.json"
	assert_output "[\"$at\",\"unix:/b\",\"/c2\"]"
	[[ "$stderr" == *'"level":"info"'*'"msg":"updated the claim'"'"'s endpoints"'*'"vsock":"unix:/b","control_socket":"/c2"'* ]]
	# Only the endpoint given changes; one not given is kept.
	run -0 --separate-stderr pick --profile "$P12" --claim i-1 --vsock unix:/c
	assert_output "$first"
	run -0 jq -c '.claims[0] | [.claimed_at, .vsock, .control_socket]' \
	    "$DATA/gpu/vf-claims.json"
	assert_output "[\"$at\",\"unix:/c\",\"/c2\"]"
	# The same endpoints again: nothing is written.
	before=$(sha "$DATA/gpu/vf-claims.json")
	run -0 --separate-stderr pick --profile "$P12" --claim i-1 --vsock unix:/c \
	    --control-socket /c2
	[ "$(sha "$DATA/gpu/vf-claims.json")" = "$before" ]
	[[ "$stderr" != *"updated the claim"* ]]
}

@test "a failed persist of updated endpoints exits 74 and leaves the ledger as it was" {
	two_vfs
	pick --profile "$P12" --claim i-1 --vsock unix:/a >/dev/null 2>&1
	before=$(sha "$DATA/gpu/vf-claims.json")
	run -74 --separate-stderr faulty FAIL_rename=1 FAIL_MATCH=vf-claims \
	    vfpick --sysfs-root "$SYSFS" --data-dir "$DATA" --profile "$P12" \
	    --claim i-1 --vsock unix:/b
	[ -z "$output" ]
	[ "$(sha "$DATA/gpu/vf-claims.json")" = "$before" ]
}

@test "--configure writes the type id to current_vgpu_type" {
	two_vfs
	run -0 --separate-stderr pick --profile "$P24" --claim i-1 --configure
	vf=$(jq -r .vf_address <<<"$output")
	[ "$(jq -r .type_id <<<"$output")" = 1161 ]
	[ "$(current "$vf")" = 1161 ]
	run -0 --separate-stderr report
	[ "$(jq .gpu.used_slots <<<"$output")" -eq 1 ]
}

@test "a retried --configure returns the same claim and leaves a configured VF alone" {
	two_vfs
	first=$(pick --profile "$P12" --claim i-1 --configure 2>/dev/null)
	vf=$(jq -r .vf_address <<<"$first")
	[ "$(current "$vf")" = 1160 ]
	# Every write to current_vgpu_type would fail: none may happen.
	run -0 --separate-stderr faulty FAIL_write=0 FAIL_MATCH=current_vgpu_type \
	    vfpick --sysfs-root "$SYSFS" --data-dir "$DATA" --profile "$P12" \
	    --claim i-1 --configure
	assert_output "$first"
	# A reused dirty VF that holds the type is not written either.
	if [ "$vf" = 0000:e3:00.4 ]; then other=0000:e3:00.5; else other=0000:e3:00.4; fi
	claim "$other" i-a
	mk_vf "$SYSFS" $E3 0000:e3:00.6 1160
	run -0 --separate-stderr faulty FAIL_write=0 FAIL_MATCH=current_vgpu_type \
	    vfpick --sysfs-root "$SYSFS" --data-dir "$DATA" --profile "$P12" \
	    --claim i-2 --configure
	[ "$(jq -r .vf_address <<<"$output")" = 0000:e3:00.6 ]
	[ "$(current 0000:e3:00.6)" = 1160 ]
}

@test "--configure re-checks the quarantine: a claimed VF quarantined since is refused and unclaimed" {
	mk_card "$SYSFS" $E3
	mk_vf "$SYSFS" $E3 0000:e3:00.4
	pick --profile "$P12" --claim i-1 >/dev/null 2>&1
	quarantine 0000:e3:00.4
	run -1 --separate-stderr pick --profile "$P12" --claim i-1 --configure
	[ -z "$output" ]
	[[ "$stderr" == *'vendor VFIO vGPU on VF 0000:e3:00.4 is quarantined'* ]]
	[ "$(current 0000:e3:00.4)" = 0 ]
	[ "$(jq '.claims | length' "$DATA/gpu/vf-claims.json")" -eq 0 ]
}

@test "an unavailable health store or ledger fails closed: exit 69, no claim, files untouched" {
	two_vfs
	mkdir -p "$DATA/gpu"
	echo '{"version":1,"records":[{"vf_address":"bogus"}]}' >"$DATA/gpu/vf-health.json"
	h=$(sha "$DATA/gpu/vf-health.json")
	run -69 --separate-stderr pick --profile "$P12" --claim i-1 --configure
	[ -z "$output" ]
	[[ "$stderr" == *'VF health state unavailable'* ]]
	[ ! -e "$DATA/gpu/vf-claims.json" ]
	[ "$(sha "$DATA/gpu/vf-health.json")" = "$h" ]
	[ "$(current 0000:e3:00.4)$(current 0000:e3:00.5)" = 00 ]
	run -69 --separate-stderr pick --profile "$P12"
	rm "$DATA/gpu/vf-health.json"
	echo '{"version":2,"claims":[]}' >"$DATA/gpu/vf-claims.json"
	c=$(sha "$DATA/gpu/vf-claims.json")
	run -69 --separate-stderr pick --profile "$P12" --claim i-1
	[ "$(sha "$DATA/gpu/vf-claims.json")" = "$c" ]
	# Fixing the file is enough: there is no daemon to restart.
	echo '{"version":1,"claims":[]}' >"$DATA/gpu/vf-claims.json"
	run -0 --separate-stderr pick --profile "$P12" --claim i-1
}

@test "a failed claim persist exits 74 and leaves the ledger as it was" {
	two_vfs
	claim 0000:e3:00.4 i-a
	c=$(sha "$DATA/gpu/vf-claims.json")
	run -74 --separate-stderr faulty FAIL_rename=1 FAIL_MATCH=vf-claims \
	    vfpick --sysfs-root "$SYSFS" --data-dir "$DATA" --profile "$P12" \
	    --claim i-1 --configure
	[ -z "$output" ]
	[ "$(sha "$DATA/gpu/vf-claims.json")" = "$c" ]
	[ "$(current 0000:e3:00.5)" = 0 ]
}

@test "a failed write of current_vgpu_type exits 74 and removes the claim again" {
	mk_card "$SYSFS" $E3
	mk_vf "$SYSFS" $E3 0000:e3:00.4
	run -74 --separate-stderr faulty FAIL_write=1 \
	    FAIL_MATCH=current_vgpu_type vfpick --sysfs-root "$SYSFS" \
	    --data-dir "$DATA" --profile "$P12" --claim i-1 --configure
	[ -z "$output" ]
	[[ "$stderr" == *'cannot configure VF'* ]]
	[ "$(jq '.claims | length' "$DATA/gpu/vf-claims.json")" -eq 0 ]
	# The fake attribute is a regular file that O_TRUNC emptied; real
	# sysfs ignores O_TRUNC and keeps the old value.
	[ "$(current 0000:e3:00.4)" != 1160 ]
}

@test "a busy store lock times out with 75 and no claim" {
	two_vfs
	mkdir -p "$DATA/gpu"
	lock_hold "$DATA/gpu/lock"
	run -75 --separate-stderr pick --lock-timeout 1 --profile "$P12" --claim i-1
	lock_release
	[ ! -e "$DATA/gpu/vf-claims.json" ]
}

@test "a write error on stdout exits 74" {
	two_vfs
	run -74 --separate-stderr bash -c 'vfpick --sysfs-root "$SYSFS" --data-dir "$DATA" --profile "NVIDIA L40S-12Q" >/dev/full'
	[[ "$stderr" == *'write stdout'* ]]
}

@test "20 concurrent claims get 20 distinct VFs" {
	mk_host "$SYSFS" 2 12
	for i in $(seq 1 20); do
		pick --profile "$P12" --claim "i-$i" >"$T/out.$i" 2>"$T/err.$i" 3>&- &
	done
	wait
	cat "$T"/out.* | jq -r .vf_address | sort >"$T/vfs"
	[ "$(wc -l <"$T/vfs")" -eq 20 ]
	[ "$(sort -u "$T/vfs" | wc -l)" -eq 20 ]
	[ "$(jq '.claims | length' "$DATA/gpu/vf-claims.json")" -eq 20 ]
	[ "$(jq -r '.claims[].vf_address' "$DATA/gpu/vf-claims.json" | sort)" = "$(cat "$T/vfs")" ]
}

@test "a concurrent quarantine is never violated by --configure" {
	mk_host "$SYSFS" 1 16
	for i in $(seq 1 16); do
		pick --profile "$P12" --claim "i-$i" >/dev/null 2>&1
	done
	jq -r '.claims[].vf_address' "$DATA/gpu/vf-claims.json" | shuf >"$T/order"
	# The quarantiner notes, under the store lock, each VF's type at the
	# moment it is quarantined.
	(
		while read -r vf; do
			flock "$DATA/gpu/lock" bash -c '
				f=$DATA/gpu/vf-health.json vf=$1
				[ -e "$f" ] || echo "{\"version\":1,\"records\":[]}" >"$f"
				jq --indent 2 --arg vf "$vf" ".records = (.records + [{vf_address: \$vf, quarantined_at: \"2026-08-20T16:00:00Z\"}] | sort_by(.vf_address))" "$f" >"$f.q" && mv "$f.q" "$f"
				echo "$vf $(cat "$SYSFS/sys/bus/pci/devices/$vf/nvidia/current_vgpu_type")" >>"$T/snap"
			' _ "$vf"
			sleep 0.0$((RANDOM % 5))
		done <"$T/order"
	) 3>&- &
	q=$!
	for i in $(seq 1 16); do
		rc=0
		pick --profile "$P12" --claim "i-$i" --configure >/dev/null 2>&1 || rc=$?
		echo "$rc" >>"$T/rcs"
	done
	wait "$q"
	[ "$(wc -l <"$T/snap")" -eq 16 ]
	# A VF still free when quarantined must stay free.
	while read -r vf cur; do
		if [ "$cur" = 0 ]; then
			[ "$(current "$vf")" = 0 ] || { echo "configured after quarantine: $vf"; false; }
		fi
	done <"$T/snap"
	# Every refused configure gave its claim back.
	refused=$(grep -c '^1$' "$T/rcs" || true)
	[ "$(grep -vc '^[01]$' "$T/rcs" || true)" -eq 0 ]
	[ "$(jq '.claims | length' "$DATA/gpu/vf-claims.json")" -eq $((16 - refused)) ]
}

@test "vfstore quarantine takes effect for the very next pick" {
	command -v vfstore >/dev/null || skip "vfstore not built yet"
	two_vfs
	run -0 --separate-stderr vfstore --data-dir "$DATA" --sysfs-root "$SYSFS" \
	    quarantine --vf 0000:e3:00.5 --reason test
	run picks 10 --profile "$P12"
	[ "$(sort -u <<<"$output")" = 0000:e3:00.4 ]
}

@test "SIGTERM while waiting for the lock: the claim is still finished, exit 0" {
	two_vfs
	mkdir -p "$DATA/gpu"
	lock_hold "$DATA/gpu/lock"
	vfpick --sysfs-root "$SYSFS" --data-dir "$DATA" --profile "$P12" \
	    --claim i-1 >"$T/out" 2>"$T/err" 3>&- &
	p=$!
	wait_long has_open "$p" "$DATA/gpu/lock"
	kill -TERM "$p"
	lock_release
	rc=0
	wait "$p" || rc=$?
	[ "$rc" -eq 0 ]
	[ "$(jq -r .instance_id "$T/out")" = i-1 ]
	[ "$(jq -r '.claims[0].vf_address' "$DATA/gpu/vf-claims.json")" = "$(jq -r .vf_address "$T/out")" ]
}

@test "vfstore quarantine racing vfpick --configure: no configure that starts after a quarantine touches that VF" {
	command -v vfstore >/dev/null || skip "vfstore not built yet"
	mk_host "$SYSFS" 1 16
	for i in $(seq 1 16); do
		pick --profile "$P12" --claim "i-$i" >/dev/null 2>&1
	done
	jq -r '.claims[].vf_address' "$DATA/gpu/vf-claims.json" | shuf >"$T/order"
	(
		while read -r vf; do
			vfstore --data-dir "$DATA" --sysfs-root "$SYSFS" \
			    quarantine --vf "$vf" --reason race >/dev/null 2>&1
			echo "$vf ${EPOCHREALTIME/./}" >>"$T/quarantined"
			sleep 0.0$((RANDOM % 8))
		done <"$T/order"
	) 3>&- &
	q=$!
	# Start once one quarantine is durable, so some configures are late.
	wait_for test -s "$T/quarantined"
	for i in $(seq 1 16); do
		vf=$(jq -r --arg id "i-$i" '.claims[] | select(.instance_id == $id) | .vf_address' "$DATA/gpu/vf-claims.json")
		start=${EPOCHREALTIME/./}
		rc=0
		pick --profile "$P12" --claim "i-$i" --configure >/dev/null 2>&1 || rc=$?
		echo "$vf $start $rc" >>"$T/configured"
	done
	wait "$q"
	[ "$(wc -l <"$T/quarantined")" -eq 16 ]
	# A configure that started after the quarantine was durable must
	# have been refused, and its VF left free.
	late=0
	while read -r vf start rc; do
		qt=$(awk -v v="$vf" '$1 == v { print $2 }' "$T/quarantined")
		if [ "$start" -gt "$qt" ]; then
			late=$((late + 1))
			[ "$rc" -eq 1 ] || { echo "configured $vf after its quarantine"; false; }
			[ "$(current "$vf")" = 0 ]
		fi
		[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ]
	done <"$T/configured"
	[ "$late" -gt 0 ]
}

@test "vfstore release frees the claimed VF for the next pick" {
	command -v vfstore >/dev/null || skip "vfstore not built yet"
	mk_card "$SYSFS" $E3
	mk_vf "$SYSFS" $E3 0000:e3:00.4
	pick --profile "$P12" --claim i-1 --configure >/dev/null 2>&1
	run -1 --separate-stderr pick --profile "$P12" --claim i-2
	# An empty /proc: nobody holds the VF (a /proc that cannot be read
	# refuses the deconfigure, 74).
	mkdir -p "$T/proc"
	run -0 --separate-stderr vfstore --data-dir "$DATA" --sysfs-root "$SYSFS" \
	    release --instance i-1 --deconfigure --proc-root "$T"
	[ "$(current 0000:e3:00.4)" = 0 ]
	run -0 --separate-stderr pick --profile "$P12" --claim i-2
	[ "$(jq -r .vf_address <<<"$output")" = 0000:e3:00.4 ]
}
