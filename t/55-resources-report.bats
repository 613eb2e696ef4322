#!/usr/bin/env bats
# resources-report (SPEC.md 4.5; upstream tests 3.D 53, 3.F 66-68): the
# capacity JSON, its agreement with vfpick, fail-closed reporting and the
# Prometheus textfile checked by promtool and node_exporter itself.

load helpers
load lib/placement

E3=0000:e3:00.0

setup() {
	vfs_setup
}

# upstream_host: the upstream example. .4 free and quarantined (two
# failures), .5 allocated, .6 free with one failure below the threshold.
upstream_host() {
	mk_card "$SYSFS" $E3
	mk_vf "$SYSFS" $E3 0000:e3:00.4
	mk_vf "$SYSFS" $E3 0000:e3:00.5 1160
	mk_vf "$SYSFS" $E3 0000:e3:00.6
	record_failures 0000:e3:00.4 2
	record_failures 0000:e3:00.6 1
}

# random_host SEED: 1-3 cards of 1-6 VFs, some claimed, some quarantined
# (by hand or by failures), some allocated without a claim (leftover
# 24Q), some with a failure below the threshold, some drained.
random_host() {
	local c n vf pf bus nvfs
	RANDOM=$1
	for ((c = 0; c < 1 + RANDOM % 3; c++)); do
		bus=$(printf '%02x' $((0x40 + c)))
		pf=0000:$bus:00.0
		mk_card "$SYSFS" "$pf"
		nvfs=$((1 + RANDOM % 6))
		for ((n = 1; n <= nvfs; n++)); do
			vf=0000:$bus:00.$n
			if ((RANDOM % 6 == 0)); then
				mk_vf "$SYSFS" "$pf" "$vf" 1161
			else
				mk_vf "$SYSFS" "$pf" "$vf"
			fi
			case $((RANDOM % 8)) in
			0) claim "$vf" "pre-$vf" ;;
			1) quarantine "$vf" ;;
			2) record_failures "$vf" 2 ;;
			3) record_failures "$vf" 1 ;;
			4) claim "$vf" "pre-$vf" "$P24" 1161; quarantine "$vf" ;;
			esac
			((RANDOM % 5 != 0)) || drain_vf "$vf"
		done
	done
}

@test "usage errors: bad --format, empty --output, extra argument" {
	run -64 --separate-stderr resources-report --format xml
	[[ "$stderr" == *"usage: resources-report"* ]]
	run -64 --separate-stderr resources-report --output ''
	run -64 --separate-stderr resources-report extra
	[ -z "$output" ]
}

@test "the upstream example: total 3, used 1, allocatable 1, quarantined 1" {
	upstream_host
	run -0 --separate-stderr report
	run jq -c '.gpu | del(.cards[0].name)' <<<"$output"
	assert_output '{"mode":"vgpu","total_slots":3,"used_slots":1,"allocatable_slots":1,"quarantined_slots":1,"drained_slots":0,"suspect_slots":0,"profiles":[{"name":"NVIDIA L40S-12Q","framebuffer_mb":12288,"available":1},{"name":"NVIDIA L40S-24Q","framebuffer_mb":24576,"available":1}],"cards":[{"address":"0000:e3:00.0","vfs":3,"used":1,"quarantined":1,"drained":0}],"systemic_failure_suspected":false}'
}

@test "a card's name is the device name lspci -mm prints on this host" {
	need_tool lspci
	upstream_host
	want=$(lspci -A linux-sysfs -O sysfs.path="$SYSFS/sys/bus/pci" \
	    -s $E3 -vmm | sed -n 's/^Device:\t//p')
	run -0 --separate-stderr report
	[ -n "$want" ]
	[ "$(jq -r '.gpu.cards[0].name' <<<"$output")" = "$want" ]
}

@test "a quarantined VF held by an instance counts as used and quarantined" {
	upstream_host
	claim 0000:e3:00.4 i-1
	run -0 --separate-stderr report
	[ "$(jq -c '.gpu | [.used_slots, .allocatable_slots, .quarantined_slots]' <<<"$output")" = '[2,1,1]' ]
	echo 'gpu.vf_quarantine_threshold = 1' >"$VFSENTINEL_CONF"
	run -0 --separate-stderr report
	[ "$(jq -c '.gpu | [.used_slots, .allocatable_slots, .quarantined_slots]' <<<"$output")" = '[2,0,2]' ]
}

@test "an unavailable store fails closed: allocatable 0, quarantined 0, no profiles, the reason, exit 0" {
	upstream_host
	printf '{"version":1,"records":' >"$DATA/gpu/vf-health.json"
	h=$(sha "$DATA/gpu/vf-health.json")
	run -0 --separate-stderr report
	run jq -c '.gpu | del(.cards[0].name, .placement_disabled_reason)' <<<"$output"
	assert_output '{"mode":"vgpu","total_slots":3,"used_slots":1,"allocatable_slots":0,"quarantined_slots":0,"drained_slots":0,"suspect_slots":0,"cards":[{"address":"0000:e3:00.0","vfs":3,"used":1,"quarantined":0,"drained":0}]}'
	run -0 --separate-stderr report
	[[ "$(jq -r .gpu.placement_disabled_reason <<<"$output")" == "VF health state unavailable: "?* ]]
	run -0 --separate-stderr report --format prometheus
	assert_line 'hypeman_resources_gpu_placement_disabled 1'
	assert_line 'hypeman_instances_vgpu_vf_health_store_unavailable 1'
	assert_line 'hypeman_resources_gpu_slots{kind="allocatable"} 0'
	refute_output --partial hypeman_resources_gpu_profile_slots
	[ "$(sha "$DATA/gpu/vf-health.json")" = "$h" ]
	rm "$DATA/gpu/vf-health.json"
	echo '{"version":1,"claims":[{"vf_address":"0000:e3:00.4"}]}' >"$DATA/gpu/vf-claims.json"
	run -0 --separate-stderr report
	[ "$(jq .gpu.allocatable_slots <<<"$output")" -eq 0 ]
	[ "$(jq 'has("placement_disabled_reason")' <<<"$(jq .gpu <<<"$output")")" = true ]
}

@test "a host without VFs reports the keys a host with VFs has: counts 0, lists empty, never {}" {
	upstream_host
	run -0 --separate-stderr report
	keys=$(jq -c '.gpu | keys_unsorted' <<<"$output")
	rm -rf "$SYSFS/sys/bus/pci/devices"/*
	mk_card "$SYSFS" $E3
	run -0 --separate-stderr report
	[ "$(jq -c '.gpu | keys_unsorted' <<<"$output")" = "$keys" ]
	assert_output '{"gpu":{"mode":"vgpu","total_slots":0,"used_slots":0,"allocatable_slots":0,"quarantined_slots":0,"drained_slots":0,"suspect_slots":0,"profiles":[],"cards":[],"systemic_failure_suspected":false}}'
	run -0 --separate-stderr report --format prometheus
	assert_line 'hypeman_resources_gpu_slots{kind="total"} 0'
}

@test "allocatable_slots equals the number of vfpick claims that succeed, on random hosts" {
	for seed in 11 23 37 41 59 67; do
		rm -rf "$SYSFS" "$DATA"
		mkdir -p "$SYSFS/sys/bus/pci/devices" "$DATA"
		random_host "$seed"
		rep=$(report 2>/dev/null)
		alloc=$(jq '.gpu.allocatable_slots // 0' <<<"$rep")
		avail=$(jq "[.gpu.profiles[]? | select(.name == \"$P12\") | .available][0] // 0" <<<"$rep")
		n=0
		while pick --profile "$P12" --claim "new-$n" >/dev/null 2>&1; do
			n=$((n + 1))
			[ "$n" -le 40 ] || break
		done
		echo "seed $seed: allocatable $alloc available $avail claims $n"
		[ "$n" -eq "$alloc" ]
		[ "$n" -eq "$avail" ]
		[ "$(report 2>/dev/null | jq '.gpu.allocatable_slots // 0')" -eq 0 ]
	done
}

@test "the Prometheus output passes promtool, has no duplicate series and no timestamps" {
	need_tool promtool
	upstream_host
	mk_vf "$SYSFS" $E3 0000:e3:00.7 0 '1170:NVIDIA "odd\ name-2Q'
	claim 0000:e3:00.6 i-1
	run -0 --separate-stderr report --format prometheus
	printf '%s\n' "$output" >"$T/r.prom"
	run -0 "$VFS_TOOLS/promtool" check metrics <"$T/r.prom"
	[ -z "$(dup_series "$T/r.prom")" ]
	grep -v '^#' "$T/r.prom" | grep -qvE '^[a-z_]+(\{[^}]*\})? [0-9]+$' && false
	[ "$(grep -c '^# TYPE' "$T/r.prom")" -eq "$(grep '^# TYPE' "$T/r.prom" | sort -u | wc -l)" ]
	grep -qF 'hypeman_resources_gpu_profile_slots{profile="NVIDIA \"odd\\ name-2Q",kind="available"} 1' "$T/r.prom"
	grep -qx 'hypeman_instances_vgpu_quarantined_vfs 1' "$T/r.prom"
	grep -qx 'hypeman_resources_gpu_slots{kind="used"} 2' "$T/r.prom"
}

@test "node_exporter's textfile collector reads the --output file without a scrape error" {
	need_tool prometheus-node-exporter
	upstream_host
	run -0 --separate-stderr report --format prometheus --output "$T/tf/vfsentinel-resources.prom"
	[ -z "$output" ]
	[ "$(stat -c %a "$T/tf/vfsentinel-resources.prom")" = 644 ]
	[ "$(ls -A "$T/tf")" = vfsentinel-resources.prom ]
	[ "$(tail -c1 "$T/tf/vfsentinel-resources.prom" | od -An -c | tr -d ' ')" = '\n' ]
	run -0 ne_scrape "$T/tf"
	assert_line 'node_textfile_scrape_error 0'
	assert_line 'hypeman_resources_gpu_slots{kind="allocatable"} 1'
	assert_line 'hypeman_resources_gpu_profile_slots{kind="available",profile="NVIDIA L40S-12Q"} 1'
	assert_line 'hypeman_instances_vgpu_vf_health_store_unavailable 0'
}

@test "--output replaces the file atomically and keeps it when the write fails" {
	upstream_host
	report --output "$T/r.json"
	[ "$(jq .gpu.used_slots "$T/r.json")" -eq 1 ]
	old=$(sha "$T/r.json")
	claim 0000:e3:00.6 i-1
	run -74 --separate-stderr faulty FAIL_rename=1 FAIL_MATCH=r.json \
	    resources-report --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --output "$T/r.json"
	[[ "$stderr" == *'cannot write the report'* ]]
	[ "$(sha "$T/r.json")" = "$old" ]
	[ -z "$(compgen -G "$T/r.json.tmp*")" ]
	run -74 --separate-stderr faulty FAIL_fsync=1 FAIL_MATCH=r.json \
	    resources-report --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --output "$T/r.json"
	[ "$(sha "$T/r.json")" = "$old" ]
	run -0 --separate-stderr report --output "$T/r.json"
	[ "$(jq .gpu.used_slots "$T/r.json")" -eq 2 ]
}

@test "a write error on stdout exits 74" {
	upstream_host
	run -74 --separate-stderr bash -c 'resources-report --sysfs-root "$SYSFS" --data-dir "$DATA" >/dev/full'
	run -74 --separate-stderr bash -c 'resources-report --sysfs-root "$SYSFS" --data-dir "$DATA" --format prometheus >/dev/full'
}

@test "a busy store lock times out with 75" {
	upstream_host
	lock_hold "$DATA/gpu/lock"
	# A shared reader waits for the exclusive writer.
	run -75 --separate-stderr report --lock-timeout 1
	lock_release
}

@test "an unreadable VF is skipped with a warning" {
	upstream_host
	rm "$(vfdir 0000:e3:00.6)/nvidia/current_vgpu_type"
	run -0 --separate-stderr report
	[ "$(jq .gpu.total_slots <<<"$output")" -eq 2 ]
	[[ "$stderr" == *'"level":"warn"'*'skipping unreadable VFs'* ]]
}

@test "the runit service refreshes the textfile in metrics.textfile_dir" {
	need_tool runsv
	upstream_host
	cp -R "$VFS_ROOT/sv/vfsentinel-resources" "$T/svc"
	printf 'data_dir = %s\nsysfs_root = %s\nmetrics.textfile_dir = %s # here\n' \
	    "$DATA" "$SYSFS" "$T/tf" >"$T/svc.conf"
	echo "$T/svc.conf" >"$T/svc/env/VFSENTINEL_CONF"
	echo "$VFS_BIN:/usr/bin:/bin" >"$T/svc/env/PATH"
	echo 1 >"$T/svc/env/INTERVAL"
	# Without LeakSanitizer's exit check under a sanitizer, as
	# runit_start says why (sv's TERM and CONT can deadlock it).
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:detect_leaks=0} \
	    setsid runsv "$T/svc" </dev/null >/dev/null 2>&1 3>&- &
	wait_for test -s "$T/tf/vfsentinel-resources.prom"
	grep -qx 'hypeman_resources_gpu_slots{kind="allocatable"} 1' "$T/tf/vfsentinel-resources.prom"
	claim 0000:e3:00.6 i-1
	wait_for grep -qx 'hypeman_resources_gpu_slots{kind="allocatable"} 0' "$T/tf/vfsentinel-resources.prom"
	sv -w 3 force-shutdown "$T/svc" >/dev/null 2>&1 || true
	[ -e "$T/svc/log/main/current" ]
	[ ! -e "$T/tf/vfsentinel-resources.prom.tmp" ]
}

@test "SIGTERM while waiting for the lock: the report is still written, exit 0" {
	upstream_host
	lock_hold "$DATA/gpu/lock"
	resources-report --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --format prometheus --output "$T/tf/r.prom" 2>"$T/err" 3>&- &
	p=$!
	wait_long has_open "$p" "$DATA/gpu/lock"
	kill -TERM "$p"
	lock_release
	rc=0
	wait "$p" || rc=$?
	[ "$rc" -eq 0 ]
	grep -qx 'hypeman_resources_gpu_slots{kind="total"} 3' "$T/tf/r.prom"
}
