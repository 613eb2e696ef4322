#!/usr/bin/env bats
# 92-alerts.bats - the shipped Prometheus alerting rules are valid and
# behave as their promtool unit tests (t/alerts/*.yml) say.

load helpers

setup() {
	vfs_setup
	PROMTOOL=$VFS_ROOT/build/tools/promtool
	[ -x "$PROMTOOL" ] || skip "promtool missing: run tools/deps.sh as root"
}

@test "promtool accepts share/doc/alerts.yml" {
	run -0 "$PROMTOOL" check rules "$VFS_ROOT/share/doc/alerts.yml"
	assert_output --partial "SUCCESS"
}

@test "every alert has a severity, a summary and a runbook link" {
	local names
	names=$(grep -c '^ *- alert: ' "$VFS_ROOT/share/doc/alerts.yml")
	[ "$names" -ge 10 ]
	[ "$(grep -c '^ *severity: \(critical\|warning\|info\)$' \
	    "$VFS_ROOT/share/doc/alerts.yml")" -eq "$names" ]
	[ "$(grep -c '^ *summary: ' "$VFS_ROOT/share/doc/alerts.yml")" \
	    -eq "$names" ]
	[ "$(grep -c '^ *runbook: "share/doc/operations.md#' \
	    "$VFS_ROOT/share/doc/alerts.yml")" -eq "$names" ]
}

@test "every runbook anchor is a heading of operations.md" {
	local a slugs
	# GitHub-style heading anchors: lowercase, punctuation dropped,
	# spaces to hyphens.
	slugs=$(sed -n 's/^##* //p' "$VFS_ROOT/share/doc/operations.md" |
	    tr 'A-Z' 'a-z' | sed 's/[^a-z0-9 -]//g; s/ /-/g')
	for a in $(grep -o 'operations.md#[a-z0-9-]*' \
	    "$VFS_ROOT/share/doc/alerts.yml" | sort -u); do
		grep -qx -- "${a#operations.md#}" <<<"$slugs" ||
		    fail "no heading for ${a#operations.md#} in operations.md"
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
