#!/usr/bin/env bats
# 76-placement-sync.bats - placement-sync (SPEC.md 8.4) against the real
# OpenStack Placement (python3-placement, noauth2, sqlite) in a private
# network namespace, with provider trees built as Nova's code builds
# them (t/lib/nova-tree.py): per-VF allocation and trait, per-PF
# reserved, the repairs after Nova's rewrites, fail closed, the exit
# statuses, the textfile and the inotify wake-up.
# The jq filters are in single quotes on purpose (their $names are jq's);
# bats' run sets $stderr.
# shellcheck disable=SC2016,SC2154

load helpers
load lib/placement
load lib/openstack
load lib/runit

A=0000:e3:00.0
V4=0000:e3:00.4
V5=0000:e3:00.5
V6=0000:e3:00.6
V7=0000:e3:00.7

setup_file() {
	placement_start
}

teardown_file() {
	placement_stop
}

setup() {
	sync_setup
	mk_card "$SYSFS" $A
	for v in $V4 $V5 $V6 $V7; do
		mk_vf "$SYSFS" $A "$v"
	done
}

teardown() {
	runit_teardown
	if [ -n "${SYNC_PID:-}" ]; then
		kill "$SYNC_PID" 2>/dev/null || :
		wait "$SYNC_PID" 2>/dev/null || :
	fi
}

# vf_rp VF: the per-VF provider's line of pshow.
vf_rp() {
	pshow | jq -c --arg n "${NODE}_pci_$(tr :. __ <<<"$1")" 'select(.name == $n)'
}

# candidates [QUERY]: the providers of NODE's VFs Placement offers for
# VGPU:1 (GET /allocation_candidates, what `openstack allocation
# candidate list --resource VGPU=1` asks), VF addresses sorted, one line.
candidates() {
	local names
	names=$(pshow | jq -r '[.uuid, .name] | @tsv')
	ntree request GET "/allocation_candidates?resources=VGPU:1${1:-}" |
	    jq -r '.body.allocation_requests[].allocations | keys[]' |
	    while read -r u; do
		awk -F'\t' -v u="$u" '$1 == u { print $2 }' <<<"$names"
	    done | sed -n "s/^${NODE}_pci_0000_e3_00_\(.\)$/\1/p" | sort | tr '\n' ' '
}

# pf_inv: the per-PF provider's inventory and traits.
pf_inv() {
	pshow | jq -c --arg n "${NODE}_${A^^}" 'select(.name == $n) |
	    [.inventory.CUSTOM_NVIDIA_L40S_12Q, .traits]'
}

@test "per-VF: an allocation by vfsentinel's consumer and the trait; removed when the VF comes back" {
	ntree tree "$NODE" --vf $V4 --vf $V5 --vf $V6 --vf $V7
	quarantine $V5
	drain_vf $V6
	run -0 candidates
	assert_output '4 5 6 7 '
	run -0 --separate-stderr psync --once
	assert_equal "${#lines[@]}" 5
	assert_line -n 0 "{\"vf\":\"$V5\",\"provider\":\"${NODE}_pci_0000_e3_00_5\",\"action\":\"allocate\"}"
	assert_line -n 1 "{\"vf\":\"$V5\",\"provider\":\"${NODE}_pci_0000_e3_00_5\",\"action\":\"trait\"}"
	assert_line -n 2 "{\"vf\":\"$V6\",\"provider\":\"${NODE}_pci_0000_e3_00_6\",\"action\":\"allocate\"}"
	assert_line -n 3 "{\"vf\":\"$V6\",\"provider\":\"${NODE}_pci_0000_e3_00_6\",\"action\":\"trait\"}"
	assert_line -n 4 '{"summary":true,"excluded":2,"changes":4,"errors":0}'
	run -0 vf_rp $V5
	run -0 jq -c '[.traits, .allocations, .inventory.VGPU]' <<<"$output"
	assert_output "[[\"CUSTOM_VFSENTINEL_EXCLUDED\",\"OWNER_NOVA\"],[{\"consumer\":\"$(consumer $V5)\",\"consumer_type\":\"VFSENTINEL\",\"project_id\":\"c41249e5-5147-5e26-930b-72ad0bbf918c\",\"used\":1}],{\"total\":1,\"reserved\":0,\"max_unit\":1}]"
	run -0 vf_rp $V4
	run -0 jq -c '[.traits, .allocations]' <<<"$output"
	assert_output '[["OWNER_NOVA"],[]]'
	# Placement no longer offers them.
	run -0 candidates
	assert_output '4 7 '
	# Level-triggered: the same state again changes nothing.
	run -0 --separate-stderr psync --once
	assert_output '{"summary":true,"excluded":2,"changes":0,"errors":0}'
	# V5 back in service (its record gone), V6 no longer drained.
	_store_edit "$DATA/gpu/vf-health.json" records '.records = []'
	_store_edit "$DATA/gpu/vf-drain.json" drains '.drains = []'
	run -0 --separate-stderr psync --once
	assert_line -n 0 "{\"vf\":\"$V5\",\"provider\":\"${NODE}_pci_0000_e3_00_5\",\"action\":\"deallocate\"}"
	assert_line -n 1 "{\"vf\":\"$V5\",\"provider\":\"${NODE}_pci_0000_e3_00_5\",\"action\":\"untrait\"}"
	assert_line -n 2 "{\"vf\":\"$V6\",\"provider\":\"${NODE}_pci_0000_e3_00_6\",\"action\":\"deallocate\"}"
	assert_line -n 3 "{\"vf\":\"$V6\",\"provider\":\"${NODE}_pci_0000_e3_00_6\",\"action\":\"untrait\"}"
	assert_line -n 4 '{"summary":true,"excluded":0,"changes":4,"errors":0}'
	run -0 pshow
	run -0 jq -sc 'map([.traits, .allocations]) | unique' <<<"$output"
	assert_output '[[["OWNER_NOVA"],[]]]'
}

@test "per-VF: a VF that leaves sysfs is released; one Placement has no provider of is left alone" {
	ntree tree "$NODE" --vf $V4 --vf $V5
	quarantine $V5 $V7
	run -0 --separate-stderr psync --once
	assert_line '{"summary":true,"excluded":2,"changes":2,"errors":0}'
	rm -rf "$SYSFS/sys/bus/pci/devices/$V5"
	run -0 --separate-stderr psync --once
	assert_line -n 0 "{\"vf\":\"$V5\",\"provider\":\"${NODE}_pci_0000_e3_00_5\",\"action\":\"deallocate\"}"
	assert_line -n 1 "{\"vf\":\"$V5\",\"provider\":\"${NODE}_pci_0000_e3_00_5\",\"action\":\"untrait\"}"
	run -0 vf_rp $V5
	run -0 jq -c '[.traits, .allocations]' <<<"$output"
	assert_output '[["OWNER_NOVA"],[]]'
	# Nova can now delete the provider: nothing of vfsentinel holds it.
	run -0 ntree request GET "/resource_providers?name=${NODE}_pci_0000_e3_00_5"
	run -0 ntree request DELETE "/resource_providers/$(jq -r '.body.resource_providers[0].uuid' <<<"$output")"
	assert_output --partial '"status":204'
}

@test "suspect VFs are kept out only where the effective suspect.placement is exclude" {
	ntree tree "$NODE" --vf $V4 --vf $V5
	printf '{"version":1,"suspects":[{"vf_address":"%s","instance_id":"i-4","assigned_at":"%s","ended_at":"%s","ended":"unclean","source":"libvirt-hook: reason=crashed"}]}' \
		$V4 "$(date -u -d '-60 sec' +%Y-%m-%dT%H:%M:%SZ)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$DATA/gpu/vf-suspect.json"
	run -0 resources-report --vfs
	assert_line --partial '"state":"suspect"'
	echo 'suspect.placement = last' >>"$VFSENTINEL_CONF"
	run -0 --separate-stderr psync --once
	assert_output '{"summary":true,"excluded":0,"changes":0,"errors":0}'
	sed -i 's/^suspect.placement = last/suspect.placement = exclude/' "$VFSENTINEL_CONF"
	run -0 --separate-stderr psync --once
	assert_line -n 0 "{\"vf\":\"$V4\",\"provider\":\"${NODE}_pci_0000_e3_00_4\",\"action\":\"allocate\"}"
	assert_line -n 2 '{"summary":true,"excluded":1,"changes":2,"errors":0}'
	# auto (the default): exclude while a verify command is set.
	sed -i '/^suspect.placement/d' "$VFSENTINEL_CONF"
	run -0 --separate-stderr psync --once
	assert_line -n 0 "{\"vf\":\"$V4\",\"provider\":\"${NODE}_pci_0000_e3_00_4\",\"action\":\"deallocate\"}"
	echo 'recovery.verify_command = /bin/true' >>"$VFSENTINEL_CONF"
	run -0 --separate-stderr psync --once
	assert_line -n 0 "{\"vf\":\"$V4\",\"provider\":\"${NODE}_pci_0000_e3_00_4\",\"action\":\"allocate\"}"
}

@test "per-VF: a VF an instance still holds is refused (409), counted, and allocated once it is free" {
	ntree tree "$NODE" --vf $V4 --vf $V5
	run -0 ntree instance "$NODE" "${NODE}_pci_0000_e3_00_5" 11111111-2222-3333-4444-555555555555
	claim $V5 i-5
	quarantine $V5
	run -0 --separate-stderr psync --once
	# The trait is set all the same; the allocation waits. A flavor
	# forbidding the trait avoids the VF already.
	assert_line -n 0 "{\"vf\":\"$V5\",\"provider\":\"${NODE}_pci_0000_e3_00_5\",\"action\":\"trait\"}"
	assert_line -n 1 '{"summary":true,"excluded":1,"changes":1,"errors":1}'
	ntree delete-allocation 11111111-2222-3333-4444-555555555555
	run -0 candidates '&required=!CUSTOM_VFSENTINEL_EXCLUDED'
	assert_output '4 '
	run -0 ntree instance "$NODE" "${NODE}_pci_0000_e3_00_5" 11111111-2222-3333-4444-555555555555
	[[ "$stderr" == *'"level":"warn"'*'still in use'*'"kind":"in_use"'* ]]
	run -0 grep '^vfsentinel_placement_sync_errors_total{kind="in_use"}' "$T/metrics/vfsentinel-placement.prom"
	assert_output 'vfsentinel_placement_sync_errors_total{kind="in_use"} 1'
	# Retried each cycle, counted each time.
	run -0 --separate-stderr psync --once
	assert_output '{"summary":true,"excluded":1,"changes":0,"errors":1}'
	# The instance goes: the next cycle allocates.
	ntree delete-allocation 11111111-2222-3333-4444-555555555555
	run -0 --separate-stderr psync --once
	assert_line -n 0 "{\"vf\":\"$V5\",\"provider\":\"${NODE}_pci_0000_e3_00_5\",\"action\":\"allocate\"}"
	assert_line -n 1 '{"summary":true,"excluded":1,"changes":1,"errors":0}'
}

@test "per-PF: reserved = excluded VFs no claim holds; total, max_unit and Nova's traits untouched" {
	ntree tree "$NODE" --pf $A:CUSTOM_NVIDIA_L40S_12Q:4
	quarantine $V4
	drain_vf $V5
	claim $V6 i-6
	quarantine $V6
	run -0 --separate-stderr psync --once
	assert_line -n 0 "{\"vf\":\"$A\",\"provider\":\"${NODE}_0000:E3:00.0\",\"action\":\"reserve\"}"
	assert_line -n 1 '{"summary":true,"excluded":3,"changes":1,"errors":0}'
	run -0 pf_inv
	assert_output '[{"total":4,"reserved":2,"max_unit":4},["COMPUTE_MANAGED_PCI_DEVICE"]]'
	run -0 --separate-stderr psync --once
	assert_output '{"summary":true,"excluded":3,"changes":0,"errors":0}'
	# The claim ends (the VF stays quarantined): one more reserved.
	_store_edit "$DATA/gpu/vf-claims.json" claims '.claims = []'
	run -0 --separate-stderr psync --once
	run -0 pf_inv
	assert_output '[{"total":4,"reserved":3,"max_unit":4},["COMPUTE_MANAGED_PCI_DEVICE"]]'
	# All back: reserved 0.
	_store_edit "$DATA/gpu/vf-health.json" records '.records = []'
	_store_edit "$DATA/gpu/vf-drain.json" drains '.drains = []'
	run -0 --separate-stderr psync --once
	assert_line -n 0 "{\"vf\":\"$A\",\"provider\":\"${NODE}_0000:E3:00.0\",\"action\":\"reserve\"}"
	run -0 pf_inv
	assert_output '[{"total":4,"reserved":0,"max_unit":4},["COMPUTE_MANAGED_PCI_DEVICE"]]'
}

@test "per-PF: a write that meets Nova's concurrent one (409 concurrent_update) re-reads and keeps Nova's total" {
	ntree tree "$NODE" --pf $A:CUSTOM_NVIDIA_L40S_12Q:4
	quarantine $V4 $V5
	# A proxy before Placement: just before it forwards the first
	# inventory PUT, Nova rewrites the inventory (total 3, reserved 0).
	pl_bg "$T/proxy.log" "$T/proxy.err" /usr/bin/python3 \
		"$VFS_ROOT/t/lib/pl-proxy.py" 8779 '/inventories/' \
		"$PL_HELPER" nova-inventory "$NODE" "${NODE}_${A^^}" 3
	SYNC_PID=$PL_BG
	sed -i 's/8778/8779/' "$T/placement.conf"
	wait_secs 60 grep -qs listening "$T/proxy.log"
	run -0 --separate-stderr psync --once
	assert_line -n 0 "{\"vf\":\"$A\",\"provider\":\"${NODE}_0000:E3:00.0\",\"action\":\"reserve\"}"
	run -0 grep -c ' 409 ' "$T/proxy.log"
	assert_output 1
	run -0 pf_inv
	assert_output '[{"total":3,"reserved":2,"max_unit":3},["COMPUTE_MANAGED_PCI_DEVICE"]]'
}

@test "repairs what Nova rewrites: its inventory PUT, a deleted allocation, a re-created provider, its trait set" {
	ntree tree "$NODE" --vf $V4 --vf $V5 --vf $V6 --pf 0000:e4:00.0:CUSTOM_NVIDIA_L40S_12Q:2
	mk_card "$SYSFS" 0000:e4:00.0
	mk_vf "$SYSFS" 0000:e4:00.0 0000:e4:00.4
	mk_vf "$SYSFS" 0000:e4:00.0 0000:e4:00.5
	quarantine $V4 $V5 $V6 0000:e4:00.4
	run -0 --separate-stderr psync --once
	assert_line '{"summary":true,"excluded":4,"changes":7,"errors":0}'
	# Nova's periodic update puts the PF's inventory back (reserved 0),
	# an operator deletes V4's allocation, Nova re-creates V5's provider
	# (after the allocation went) and replaces V6's traits with its own.
	ntree nova-inventory "$NODE" "${NODE}_0000:E4:00.0"
	ntree delete-allocation "$(consumer $V4)"
	ntree delete-allocation "$(consumer $V5)"
	ntree recreate "$NODE" "${NODE}_pci_0000_e3_00_5"
	ntree nova-traits "$NODE" "${NODE}_pci_0000_e3_00_6"
	run -0 pshow
	run -0 jq -sc 'map([.name[-7:], (.allocations | length), (.traits | index("CUSTOM_VFSENTINEL_EXCLUDED") != null), (.inventory[].reserved)])' <<<"$output"
	assert_output '[["E4:00.0",0,false,0],["e3_00_4",0,true,0],["e3_00_5",0,false,0],["e3_00_6",1,false,0]]'
	run -0 --separate-stderr psync --once
	assert_line -n 0 "{\"vf\":\"$V4\",\"provider\":\"${NODE}_pci_0000_e3_00_4\",\"action\":\"allocate\"}"
	assert_line -n 1 "{\"vf\":\"$V5\",\"provider\":\"${NODE}_pci_0000_e3_00_5\",\"action\":\"allocate\"}"
	assert_line -n 2 "{\"vf\":\"$V5\",\"provider\":\"${NODE}_pci_0000_e3_00_5\",\"action\":\"trait\"}"
	assert_line -n 3 "{\"vf\":\"$V6\",\"provider\":\"${NODE}_pci_0000_e3_00_6\",\"action\":\"trait\"}"
	assert_line -n 4 "{\"vf\":\"0000:e4:00.0\",\"provider\":\"${NODE}_0000:E4:00.0\",\"action\":\"reserve\"}"
	assert_line -n 5 '{"summary":true,"excluded":4,"changes":5,"errors":0}'
	run -0 pshow
	run -0 jq -sc 'map([.name[-7:], (.allocations | length), (.traits | index("CUSTOM_VFSENTINEL_EXCLUDED") != null), (.inventory[].reserved)])' <<<"$output"
	assert_output '[["E4:00.0",0,false,1],["e3_00_4",1,true,0],["e3_00_5",1,true,0],["e3_00_6",1,true,0]]'
}

@test "fails closed: with the store unavailable, exit 69 and nothing changed in Placement" {
	ntree tree "$NODE" --vf $V4 --vf $V5 --pf 0000:e3:00.0:CUSTOM_NVIDIA_L40S_12Q:4
	quarantine $V4 $V6
	run -0 --separate-stderr psync --once
	assert_line '{"summary":true,"excluded":2,"changes":3,"errors":0}'
	before=$(pshow)
	# V4 and V6 would come back, but the health store does not load.
	printf '{"version":1,"records":' >"$DATA/gpu/vf-health.json"
	run -69 --separate-stderr psync --once
	assert_output '{"summary":true,"excluded":0,"changes":0,"errors":1}'
	[[ "$stderr" == *'"level":"error"'*'unavailable'* ]]
	assert_equal "$(pshow)" "$before"
	run -0 grep '^vfsentinel_placement_sync_errors_total{kind="store"}' "$T/metrics/vfsentinel-placement.prom"
	assert_output 'vfsentinel_placement_sync_errors_total{kind="store"} 1'
	# Without any VF in sysfs, the same.
	rm -rf "$SYSFS/sys/bus/pci/devices"/*
	run -69 --separate-stderr psync --once
	assert_equal "$(pshow)" "$before"
}

@test "exit 75 when Placement is unreachable, 78 on a bad configuration, 64 on a bad option" {
	sed -i 's|^endpoint = .*|endpoint = http://127.0.0.1:9|' "$T/placement.conf"
	run -75 --separate-stderr psync --once
	assert_output '{"summary":true,"excluded":0,"changes":0,"errors":1}'
	[[ "$stderr" == *'Placement unreachable'* ]]
	run -78 --separate-stderr pl_ns placement-sync --config-file "$T/none.conf" --once
	[[ "$stderr" == *'"msg":"configuration file missing"'* ]]
	# The shipped file, all commented: no auth_type.
	run -78 --separate-stderr pl_ns placement-sync --config-file "$VFS_ROOT/etc/placement.conf" --once
	[[ "$stderr" == *'"msg":"no auth_type in [placement]'* ]]
	printf '[placement]\nauth_type = nosuch\n' >"$T/bad.conf"
	run -78 --separate-stderr pl_ns placement-sync --config-file "$T/bad.conf" --once
	[[ "$stderr" == *'"msg":"bad configuration"'* ]]
	printf '[placement]\nauth_type = admin_token\nendpoint = %s\ntoken = admin\n[vfsentinel]\ninterval = soon\n' "$PLACEMENT_URL" >"$T/bad.conf"
	run -78 --separate-stderr pl_ns placement-sync --config-file "$T/bad.conf" --once
	[[ "$stderr" == *'interval'* ]]
	printf 'nonsense here\n' >"$VFSENTINEL_CONF"
	run -78 --separate-stderr psync --once
	run -64 --separate-stderr placement-sync --bogus
	[[ "$stderr" == *'unknown argument: --bogus'*'usage:'* ]]
	run -0 placement-sync --version
	assert_output --regexp '^placement-sync \(vfsentinel\) [0-9]+\.[0-9]+\.[0-9]+$'
	# A full stdout is 74 (SPEC 2.2), after the cycle.
	printf 'data_dir = %s\nsysfs_root = %s\n' "$DATA" "$SYSFS" >"$VFSENTINEL_CONF"
	sed -i "s|^endpoint = .*|endpoint = $PLACEMENT_URL|" "$T/placement.conf"
	run -0 --separate-stderr psync --once
	run -74 --separate-stderr bash -c "$(declare -f pl_ns)"'
	    pl_ns placement-sync --config-file "$1" --once >/dev/full' _ "$T/placement.conf"
	run -74 --separate-stderr bash -c 'placement-sync --version >/dev/full'
}

@test "the textfile: excluded VFs, errors by kind, the last successful cycle" {
	ntree tree "$NODE" --vf $V4 --vf $V5
	quarantine $V4
	run -0 --separate-stderr psync --once
	run -0 grep -v '^#' "$T/metrics/vfsentinel-placement.prom"
	assert_line -n 0 'vfsentinel_placement_excluded_vfs 1'
	assert_line 'vfsentinel_placement_sync_errors_total{kind="unreachable"} 0'
	assert_line --regexp '^vfsentinel_placement_last_sync_timestamp_seconds [0-9]+\.[0-9]+$'
	ts=$(awk '$1 == "vfsentinel_placement_last_sync_timestamp_seconds" {print int($2)}' "$T/metrics/vfsentinel-placement.prom")
	(( ts >= $(date +%s) - 10 ))
	# A failed cycle keeps the last success and counts its kind.
	sed -i 's|^endpoint = .*|endpoint = http://127.0.0.1:9|' "$T/placement.conf"
	sleep 1.1
	run -75 --separate-stderr psync --once
	run -0 grep -v '^#' "$T/metrics/vfsentinel-placement.prom"
	assert_line 'vfsentinel_placement_sync_errors_total{kind="unreachable"} 1'
	assert_line --regexp "^vfsentinel_placement_last_sync_timestamp_seconds $ts\\."
	need_tool promtool
	run -0 "$VFS_TOOLS/promtool" check metrics <"$T/metrics/vfsentinel-placement.prom"
}

@test "the service: a store change reaches Placement within 2 s; an idle cycle makes 2 + E + P requests" {
	ntree tree "$NODE" --vf $V4 --vf $V5 --vf $V6 --pf 0000:e4:00.0:CUSTOM_NVIDIA_L40S_12Q:2
	mk_card "$SYSFS" 0000:e4:00.0
	mk_vf "$SYSFS" 0000:e4:00.0 0000:e4:00.4
	quarantine $V4 $V5
	pl_bg /dev/null "$T/sync.log" placement-sync --config-file "$T/placement.conf"
	SYNC_PID=$PL_BG
	wait_secs 60 grep -qs '"cycle done"' "$T/sync.log"
	# interval is 60 s: only inotify wakes it. A rewrite of the store
	# with the same content is an idle cycle: E = 2, P = 1.
	_store_edit "$DATA/gpu/vf-health.json" records '.'
	wait_secs 30 cycles_done 2
	run -0 jq -sc 'map(select(.msg == "cycle done") | [.changes, .requests]) | .[1]' "$T/sync.log"
	assert_output '[0,5]'
	# A quarantine: excluded in Placement within 2 s.
	start=$(date +%s%N)
	quarantine $V6
	wait_secs 30 allocated $V6
	ms=$((($(date +%s%N) - start) / 1000000))
	echo "quarantine to excluded: $ms ms"
	run -0 vf_rp $V6
	run -0 jq -c '.allocations | length' <<<"$output"
	assert_output 1
	# 2 s, longer on a machine loaded more than once over (load_scaled).
	((ms < $(load_scaled 2000)))
	# TERM: the cycle ends, then exit 0.
	kill -TERM "$SYNC_PID"
	rc=0
	wait "$SYNC_PID" || rc=$?
	SYNC_PID=
	assert_equal "$rc" 0
}

# cycles_done N: the service's log ($T/sync.log) has N "cycle done" lines.
cycles_done() {
	[ "$(grep -c '"cycle done"' "$T/sync.log")" -ge "$1" ]
}

# allocated VF: 0 when VF's provider holds vfsentinel's allocation.
allocated() {
	vf_rp "$1" | jq -e '.allocations | length == 1' >/dev/null
}

# kept_down NAME: runit keeps NAME down (sv down from ./finish), not
# waiting to restart it.
kept_down() {
	local st
	st=$(sv status "$RUNIT_SV/$1")
	[[ $st == down:* && $st != *'want up'* ]]
}

@test "the runit service: placement-sync as the service runs it; a configuration error keeps it down" {
	need_tool runsvdir runsv sv chpst setsid
	runit_setup
	runit_copy vfsentinel-placement
	runit_test_path vfsentinel-placement
	runit_env vfsentinel-placement VFSENTINEL_CONF "$VFSENTINEL_CONF"
	runit_env vfsentinel-placement PLACEMENT_CONF "$T/placement.conf"
	ntree tree "$NODE" --vf $V4 --vf $V5
	quarantine $V5
	# runsvdir in Placement's namespace, as runit_start does it.
	ln -sfn "$RUNIT_SV/vfsentinel-placement" "$RUNIT_SCAN/"
	pl_bg /dev/null /dev/null setsid runsvdir -P "$RUNIT_SCAN" 'log: ..........'
	# shellcheck disable=SC2034 # for runit_teardown
	RUNIT_PID=$PL_BG
	runit_wait_stat vfsentinel-placement run 100
	wait_long allocated $V5
	# Its log lines reach svlogd; a store change wakes it.
	quarantine $V4
	wait_long allocated $V4
	wait_long grep -q '"msg":"placement changed"' "$RUNIT_SV/vfsentinel-placement/log/main/current"
	# A configuration error (78): ./finish keeps it down until sv up.
	printf '[placement]\nauth_type = nosuch\n' >"$T/placement.conf"
	sv term "$RUNIT_SV/vfsentinel-placement"
	wait_long kept_down vfsentinel-placement
	run -0 grep -c '"msg":"bad configuration"' "$RUNIT_SV/vfsentinel-placement/log/main/current"
	assert_output 1
}
