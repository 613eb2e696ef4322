#!/usr/bin/env bats
# 92-alerts.bats - the shipped Prometheus alerting rules are valid and
# behave as their promtool unit tests (t/alerts/*.yml) say.

load helpers
load lib/recovery

setup() {
	vfs_setup
	PROMTOOL=$VFS_TOOLS/promtool
	need_tool promtool
}

teardown() {
	[ -z "${NE_PID:-}" ] || kill "$NE_PID" 2>/dev/null || true
}

# write_textfiles DIR: the four textfiles of a small host, as the services
# write them, placement-sync's, and vfrecover's, of a recovery of another
# card that failed at quiesce (after the others: their gauges count the
# first card alone).
write_textfiles() {
	mk_host "$SYSFS" 1 2
	local o="--data-dir $DATA --sysfs-root $SYSFS"
	mkdir -p "$1"
	echo '{"check":"unknown","vf_address":"0000:40:01.0","instance_id":"i-1","assigned_at":"2026-08-20T15:00:00Z"}' >"$T/checks"
	# shellcheck disable=SC2086
	vfstore $o apply --metrics-file "$1/vfsentinel-sentinel.prom" \
	    <"$T/checks" >/dev/null 2>&1 || return 1
	# shellcheck disable=SC2086
	resources-report $o --format prometheus \
	    --output "$1/vfsentinel-resources.prom" 2>/dev/null || return 1
	# shellcheck disable=SC2086
	vfstore $o reconcile --once --proc-root "$T" \
	    --metrics-file "$1/vfsentinel-reconcile.prom" >/dev/null 2>&1 ||
	    return 1
	: >"$T/no-targets"
	# shellcheck disable=SC2086
	sentinel-poll $o --once --targets "$T/no-targets" \
	    --metrics-file "$1/vfsentinel-poller.prom" 2>/dev/null || return 1
	# placement-sync's, after one cycle with Placement unreachable (75).
	printf 'data_dir = %s\nsysfs_root = %s\nmetrics.textfile_dir = %s\n' \
	    "$DATA" "$SYSFS" "$1" >"$T/sync.conf"
	printf '[placement]\nauth_type = admin_token\nendpoint = http://127.0.0.1:9\ntoken = admin\n' \
	    >"$T/placement.conf"
	placement-sync -c "$T/sync.conf" --config-file "$T/placement.conf" \
	    --once >/dev/null 2>&1 && return 1
	grep -q '^vfsentinel_placement_sync_errors_total{kind="unreachable"} 1$' \
	    "$1/vfsentinel-placement.prom" || return 1
	DEV=$SYSFS/sys/bus/pci/devices
	mk_sriov_card 0000:e3:00.0 0000:e3:00.4
	mkdir -p "$T/proc"
	printf 'recovery.sriov_manage = %s\nrecovery.quiesce_command = false\n' \
	    "$VFS_ROOT/t/lib/sriov-manage" >"$T/recover.conf"
	# shellcheck disable=SC2086
	vfrecover -c "$T/recover.conf" $o --proc-root "$T" --card 0000:e3:00.0 \
	    --metrics-file "$1/vfsentinel-recovery.prom" >/dev/null 2>&1 &&
	    return 1
	grep -q '^vfsentinel_recovery_unfinished{card="0000:e3:00.0",step="quiesce"} 1$' \
	    "$1/vfsentinel-recovery.prom"
}

# scrape PORT: node_exporter's /metrics body (HTTP over bash's /dev/tcp).
scrape() {
	local body
	{ exec 5<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
	printf 'GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n' >&5
	body=$(cat <&5)
	exec 5<&-
	grep -q '^node_textfile_scrape_error ' <<<"$body" || return 1
	printf '%s\n' "$body" >"$T/scrape"
}

@test "promtool accepts share/doc/alerts.yml" {
	run -0 "$PROMTOOL" check rules "$VFS_ROOT/share/doc/alerts.yml"
	assert_output --partial "SUCCESS"
}

@test "every alert has a severity, a summary and an absolute runbook_url" {
	local names
	names=$(grep -c '^ *- alert: ' "$VFS_ROOT/share/doc/alerts.yml")
	[ "$names" -ge 10 ]
	[ "$(grep -c '^ *severity: \(critical\|warning\|info\)$' \
	    "$VFS_ROOT/share/doc/alerts.yml")" -eq "$names" ]
	[ "$(grep -c '^ *summary: ' "$VFS_ROOT/share/doc/alerts.yml")" \
	    -eq "$names" ]
	[ "$(grep -c '^ *runbook_url: "https://vfsentinel.example/share/doc/[a-z]*\.md#[a-z0-9-]*"$' \
	    "$VFS_ROOT/share/doc/alerts.yml")" -eq "$names" ]
	# The repo-relative form is not what Alertmanager users expect.
	[ "$(grep -c '^ *runbook:' "$VFS_ROOT/share/doc/alerts.yml")" -eq 0 ]
	# The base is documented where the operator reads about alerts.
	grep -q 'https://vfsentinel.example/share/doc/' \
	    "$VFS_ROOT/share/doc/metrics.md"
}

@test "every runbook anchor is a heading of the page it names" {
	local a page slugs
	for a in $(grep -o '/share/doc/[a-z]*\.md#[a-z0-9-]*' \
	    "$VFS_ROOT/share/doc/alerts.yml" | sort -u); do
		page=${a#/share/doc/}
		page=${page%%#*}
		[ -f "$VFS_ROOT/share/doc/$page" ] || fail "no page $page"
		# GitHub-style heading anchors: lowercase, punctuation
		# dropped, spaces to hyphens.
		slugs=$(sed -n 's/^##* //p' "$VFS_ROOT/share/doc/$page" |
		    tr 'A-Z' 'a-z' | sed 's/[^a-z0-9 -]//g; s/ /-/g')
		grep -qx -- "${a#*#}" <<<"$slugs" ||
		    fail "no heading for ${a#*#} in $page"
	done
}

@test "every alert is exercised by a promtool unit test" {
	local a
	for a in $(sed -n 's/^ *- alert: //p' "$VFS_ROOT/share/doc/alerts.yml"); do
		grep -q "alertname: $a\$" "$VFS_ROOT"/t/alerts/*.yml ||
		    fail "alert $a has no unit test"
	done
}

@test "the alert unit tests pass" {
	cd "$VFS_ROOT/t/alerts"
	run -0 "$PROMTOOL" test rules ./*.yml
	refute_output --partial FAILED
}

@test "a broken rule is caught (the checks can fail)" {
	sed 's/> 0.5$/> /' "$VFS_ROOT/share/doc/alerts.yml" >"$T/bad.yml"
	run ! "$PROMTOOL" check rules "$T/bad.yml"
}

@test "every metric and label value the alerts use is one the programs write" {
	local name
	write_textfiles "$T/tf"
	cat "$T/tf"/*.prom >"$T/all.prom"
	for name in $(grep -oE '(hypeman|vfsentinel)_[a-z_]*' "$VFS_ROOT/share/doc/alerts.yml" | sort -u); do
		grep -q "^$name[{ ]" "$T/all.prom" || fail "no program writes $name"
	done
	grep -q '^hypeman_resources_gpu_slots{kind="used"} ' "$T/all.prom"
	grep -q '^hypeman_instances_vgpu_sentinel_checks_total{result="rpc_error"} ' "$T/all.prom"
	grep -q '^hypeman_instances_vgpu_sentinel_checks_total{result="list_error"} ' "$T/all.prom"
	grep -q '^hypeman_instances_vgpu_sentinel_checks_total{result="unknown"} 1$' "$T/all.prom"
	grep -q '^vfsentinel_recovery_unfinished{card="0000:e3:00.0",step="quiesce"} 1$' "$T/all.prom"
}

@test "node_exporter serves the four textfiles together without errors" {
	need_tool prometheus-node-exporter
	write_textfiles "$T/tf"
	ne_start "$T/tf"
	wait_long scrape "$NE_PORT" || fail "no scrape: $(cat "$T/ne.log")"
	run -0 grep -E '^(node_textfile_scrape_error|hypeman_resources_gpu_slots\{kind="total"\}|hypeman_instances_vgpu_sentinel_checks_total\{result="unknown"\}|vfsentinel_sentinel_framework_present|vfsentinel_recovery_unfinished\{[^}]*\}) ' "$T/scrape"
	assert_line 'node_textfile_scrape_error 0'
	assert_line 'hypeman_resources_gpu_slots{kind="total"} 2'
	assert_line 'hypeman_instances_vgpu_sentinel_checks_total{result="unknown"} 1'
	assert_line 'vfsentinel_sentinel_framework_present 1'
	assert_line 'vfsentinel_recovery_unfinished{card="0000:e3:00.0",step="quiesce"} 1'
	# The same series in both files makes node_exporter log "collected
	# before with the same name and label values" and keep only one.
	run grep -i 'error' "$T/ne.log"
	assert_output ''
}
