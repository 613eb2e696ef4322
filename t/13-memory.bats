#!/usr/bin/env bats
# Memory (SPEC.md 2.2): every program works under runit's memory cap
# `chpst -m 16777216` on a host of 8 cards x 64 VFs with a 512-record
# health store and 256 claims, and an allocation that fails is an OS
# error (71), never "store unavailable" (69).

load helpers
load lib/store
load lib/guest

CAP=16777216
P12='NVIDIA L40S-12Q'
AT=2026-08-20T15:00:00Z

# vf_addr C N: the address mk_host gives VF N of card C.
vf_addr() {
	printf '0000:%02x:%02x.%d' $((0x40 + $1 * 4)) $(($2 / 8 + 1)) $(($2 % 8))
}

# The host and the store are built once (512 VFs take seconds in bash);
# every test works on its own copy of the store.
setup_file() {
	local c n vf H=$BATS_FILE_TMPDIR
	# ASan maps terabytes of shadow memory: no sanitizer build starts
	# under an address-space cap, so this file is for the plain build.
	[ -z "${VFS_SAN:-}" ] || return 0
	mk_host "$H/sysfs" 8 64
	for ((c = 0; c < 8; c++)); do
		for ((n = 0; n < 64; n++)); do
			vf=$(vf_addr $c $n)
			echo "$vf $c $n"
		done
	done >"$H/vfs"
	# 512 records with one failure each (below the threshold of 2),
	# 256 claims (the first 32 VFs of every card) with endpoints.
	jq -R -s --arg at "$AT" '{version: 1, records: [split("\n")[] |
	    select(. != "") | split(" ") | {vf_address: .[0],
	    failures: [{instance_id: "old-\(.[1])-\(.[2])", assigned_at: $at,
	    reported_at: "2026-08-20T15:00:31Z"}]}] | sort_by(.vf_address)}' \
	    "$H/vfs" >"$H/vf-health.json"
	jq -R -s --arg at "$AT" --arg p "$P12" '{version: 1, claims: [split("\n")[] |
	    select(. != "") | split(" ") | select((.[2] | tonumber) < 32) |
	    {vf_address: .[0], instance_id: "vm-\(.[1])-\(.[2])",
	    claimed_at: $at, profile: $p, type_id: "1160",
	    vsock: "unix:CTLDIR/none-\(.[1])-\(.[2])",
	    control_socket: "CTLDIR/ctl"}] | sort_by(.vf_address)}' \
	    "$H/vfs" >"$H/vf-claims.json"
}

setup() {
	[ -z "${VFS_SAN:-}" ] || skip "a sanitizer build cannot run under chpst -m"
	vfs_setup
	store_setup
	# Shared and read-only; a test that writes sysfs copies it.
	SYSFS=$BATS_FILE_TMPDIR/sysfs
	cp "$BATS_FILE_TMPDIR/vf-health.json" "$HEALTH"
	sed "s|CTLDIR|$T|g" "$BATS_FILE_TMPDIR/vf-claims.json" >"$CLAIMS"
	PIDS=
}

teardown() {
	kill_pids
	guest_teardown
}

# capped CMD...: CMD under runit's memory cap.
capped() {
	chpst -m "$CAP" "$@"
}

@test "the fixture is the size the spec names" {
	run -0 jq '.records | length' "$HEALTH"
	assert_output 512
	run -0 jq '.claims | length' "$CLAIMS"
	assert_output 256
	run -0 bash -c 'ls "$1/sys/bus/pci/devices" | wc -l' - "$SYSFS"
	assert_output 520
}

@test "vfstore check, show and claims work under the cap" {
	run -0 --separate-stderr capped vfstore --data-dir "$DATA" check
	run -0 jq -r '"\(.status) \(.records) \(.claims // "")"' <<<"$output"
	[[ "$output" == "ok 512"* ]]
	run -0 --separate-stderr capped vfstore --data-dir "$DATA" show
	assert_equal "${#lines[@]}" 512
	run -0 --separate-stderr capped vfstore --data-dir "$DATA" show \
	    --vf "$(vf_addr 7 63)"
	assert_equal "${#lines[@]}" 1
	run -0 --separate-stderr capped vfstore --data-dir "$DATA" claims
	assert_equal "${#lines[@]}" 256
}

@test "vfstore report-failure and apply work under the cap" {
	run -0 --separate-stderr capped vfstore --data-dir "$DATA" \
	    report-failure --vf "$(vf_addr 3 40)" --instance new-1 --assigned-at "$AT"
	run -0 jq -r .outcome <<<"$output"
	assert_output quarantined
	for i in 1 2 3; do
		jq -nc --arg vf "$(vf_addr 4 $((40 + i)))" --arg i "$i" --arg at "$AT" \
		    '{check: "failed", vf_address: $vf, instance_id: "ap-\($i)",
		    assigned_at: $at, nvrm: "NVRM: RmInitAdapter failed!"}'
	done >"$T/in"
	run -0 --separate-stderr capped vfstore --data-dir "$DATA" apply \
	    --metrics-file "$T/m.prom" <"$T/in"
	assert_equal "${#lines[@]}" 3
	run -0 jq -r .outcome <<<"${lines[2]}"
	assert_output quarantined
	run -0 grep -x 'hypeman_instances_vgpu_sentinel_init_failures_total 3' "$T/m.prom"
}

@test "vfpick places and claims under the cap" {
	cp -a "$SYSFS" "$T/sysfs-rw"
	SYSFS=$T/sysfs-rw
	run -0 --separate-stderr capped vfpick --sysfs-root "$SYSFS" \
	    --data-dir "$DATA" --profile "$P12"
	run -0 jq -r .vf_address <<<"$output"
	[[ "$output" == 0000:* ]]
	run -0 --separate-stderr capped vfpick --sysfs-root "$SYSFS" \
	    --data-dir "$DATA" --profile "$P12" --claim vm-new --configure
	vf=$(jq -r .vf_address <<<"$output")
	run -0 cat "$SYSFS/sys/bus/pci/devices/$vf/nvidia/current_vgpu_type"
	assert_output 1160
	run -0 jq '.claims | length' "$CLAIMS"
	assert_output 257
}

@test "resources-report json and prometheus work under the cap" {
	run -0 --separate-stderr capped resources-report --sysfs-root "$SYSFS" \
	    --data-dir "$DATA"
	run -0 jq -r '"\(.gpu.total_slots) \(.gpu.placement_disabled_reason // "none")"' <<<"$output"
	[[ "$output" == *" none" ]]
	run -0 --separate-stderr capped resources-report --sysfs-root "$SYSFS" \
	    --data-dir "$DATA" --format prometheus --output "$T/tf/r.prom"
	run -0 grep -x 'hypeman_instances_vgpu_vf_health_store_unavailable 0' "$T/tf/r.prom"
}

@test "sentinel-poll --once polls all 256 claims under the cap" {
	need_tool socat
	socat "UNIX-LISTEN:$T/ctl,fork" /dev/null 2>/dev/null 3>&- &
	PIDS="$PIDS $!"
	wait_for test -S "$T/ctl"
	run -0 --separate-stderr capped sentinel-poll --sysfs-root "$SYSFS" \
	    --data-dir "$DATA" --once --timeout 2
	[[ "$stderr" != *list_error* ]]
	[[ "$stderr" != *'"level":"error"'* ]]
	assert_equal "${#lines[@]}" 256
	run -0 bash -c 'jq -r .check <<<"$1" | sort -u' - "$output"
	assert_output rpc_error
}

@test "the guest programs work under the cap" {
	need_tool socat
	run -0 --separate-stderr capped kmsg-watch --no-pci-check \
	    --kmsg "$VFS_ROOT/t/fixtures/kmsg/upstream.kmsg"
	assert_output "$(cat "$VFS_ROOT/t/fixtures/kmsg/upstream.expected")"
	mkdir -p "$T/path"
	ln -s "$(fake_smi ok)" "$T/path/nvidia-smi"
	PATH=$T/path:$PATH run -0 --separate-stderr capped gpu-probe
	run -0 jq -r .event <<<"$output"
	assert_output gpu_init_ok
	echo boot-1 >"$T/boot_id"
	chpst -m "$CAP" vsock-answer --events "$T/ev" --listen "unix:$T/s" \
	    --state-file "$T/state.json" --boot-id-file "$T/boot_id" \
	    2>"$T/a.err" 3>&- &
	pid=$!
	PIDS="$PIDS $pid"
	wait_for test -S "$T/s"
	jq -cn '{event: "gpu_init_failed", seq: 1, ts_usec: 2,
	    message: "NVRM: RmInitAdapter failed! (0x22:0x65:884)"}' >"$T/ev"
	wait_for grep -q FAILED "$T/state.json"
	run -0 socat -t 5 - "UNIX-CONNECT:$T/s" <<<'{"method":"GetGPUInitStatus"}'
	run -0 jq -r .state <<<"$output"
	assert_output FAILED
	kill -TERM "$pid"
	rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 0
}

@test "vfrecover --dry-run and the whole cycle of a 64-VF card work under the cap" {
	local pf=0000:40:00.0 dev n
	cp -a "$SYSFS" "$T/sysfs-rw"
	SYSFS=$T/sysfs-rw
	dev=$SYSFS/sys/bus/pci/devices
	# The card's virtfn links, as the kernel shows them, and the
	# stand-in sriov-manage over this tree.
	for ((n = 0; n < 64; n++)); do
		ln -s "../$(vf_addr 0 $n)" "$dev/$pf/virtfn$n"
	done
	echo 64 >"$dev/$pf/sriov_numvfs"
	mkdir -p "$T/proc"
	echo "recovery.sriov_manage = $VFS_ROOT/t/lib/sriov-manage" >"$VFSENTINEL_CONF"
	export FAKE_SYSFS=$SYSFS
	# Its first 32 VFs are claimed: busy.
	run -1 --separate-stderr capped vfrecover --sysfs-root "$SYSFS" \
	    --data-dir "$DATA" --proc-root "$T" --card $pf --dry-run
	assert_equal "${lines[-1]}" '{"card":"0000:40:00.0","result":"busy"}'
	run -0 jq -r 'select(.step == "idle") | .busy | length' <<<"$output"
	assert_output 32
	# Without those claims it cycles: drain, sriov-manage -d and -e,
	# clear, over the 512-record store.
	jq '.claims |= map(select(.vf_address | startswith("0000:40:") | not))' \
	    "$CLAIMS" >"$T/claims"
	mv "$T/claims" "$CLAIMS"
	run -0 --separate-stderr capped vfrecover --sysfs-root "$SYSFS" \
	    --data-dir "$DATA" --proc-root "$T" --card $pf
	assert_equal "${lines[-1]}" '{"card":"0000:40:00.0","result":"recovered"}'
	run -0 jq -r 'select(.step == "preflight") | .vfs | length' <<<"$output"
	assert_output 64
	run -0 cat "$dev/$pf/sriov_numvfs"
	assert_output 64
	run -0 --separate-stderr capped vfrecover --data-dir "$DATA" --status
	assert_equal "$(jq -r '"\(.card) \(.state)"' <<<"$output")" "$pf last"
}

# big FILE KEY: a valid store file of 40 MiB (whitespace after the
# document): more than the cap, less than the loader's 64 MiB limit.
big() {
	{
		printf '{"version":1,"%s":[]}' "$2"
		head -c $((40 << 20)) /dev/zero | tr '\0' ' '
	} >"$1"
}

@test "a store too big for the memory cap is an OS error (71), never unavailable (69)" {
	big "$HEALTH" records
	run -71 --separate-stderr capped vfstore --data-dir "$DATA" check
	[[ "$stderr" == *'out of memory'* ]]
	run -71 --separate-stderr capped vfstore --data-dir "$DATA" show
	run -71 --separate-stderr capped vfpick --sysfs-root "$SYSFS" \
	    --data-dir "$DATA" --profile "$P12"
	[[ "$stderr" == *'out of memory'* ]]
	run -71 --separate-stderr capped resources-report --sysfs-root "$SYSFS" \
	    --data-dir "$DATA"
	assert_output ''
	cp "$BATS_FILE_TMPDIR/vf-health.json" "$HEALTH"
	big "$CLAIMS" claims
	run -71 --separate-stderr capped vfstore --data-dir "$DATA" claims
	run -71 --separate-stderr capped sentinel-poll --sysfs-root "$SYSFS" \
	    --data-dir "$DATA" --once
	[[ "$stderr" == *'out of memory'* ]]
	# Without the cap the same files load.
	run -0 --separate-stderr vfstore --data-dir "$DATA" claims
}
