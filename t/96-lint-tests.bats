#!/usr/bin/env bats
# 96-lint-tests.bats - tools/lint-tests.py (`make lint-tests`, run first
# by `make check`) finds tests that cannot fail. Each bad fixture under
# t/fixtures/lint/ marks every line it must flag ("# want: RULE") and no
# other; the clean fixtures and the tree itself must pass.

load helpers

setup() {
	vfs_setup
	cd "$VFS_ROOT"
}

lint() {
	python3 tools/lint-tests.py "$@"
}

# wants FILE: "LINE RULE" for every line of FILE marked "want: RULE".
wants() {
	grep -nE '# want: [a-z-]+$' "$1" | sed -E 's/^([0-9]+):.*# want: ([a-z-]+)$/\1 \2/'
}

# found: "LINE RULE" for every finding in $output.
found() {
	sed -nE 's/^[^:]+:([0-9]+): ([a-z-]+): .*/\1 \2/p' <<<"$output"
}

# flags_exactly FIXTURE: the linter fails on it, flagging the marked
# lines with their rules and nothing else.
flags_exactly() {
	local f=t/fixtures/lint/$1
	run -1 --separate-stderr lint "$f"
	[ -n "$(wants "$f")" ]
	assert_equal "$(found)" "$(wants "$f")"
	[[ $stderr == *", $(wants "$f" | wc -l) findings" ]]
}

@test "lint-tests: && lists, || echo, ! and unread runs in test bodies (the original faults among them)" {
	flags_exactly bad-lists.bats
	assert_line --regexp '^t/fixtures/lint/bad-lists\.bats:[0-9]+: and-list: a failure before the last && is not checked'
	assert_line --regexp '^t/fixtures/lint/bad-lists\.bats:[0-9]+: unchecked-run: nothing checks'
}

@test "lint-tests: a helper that redefines fail, assert*, refute* or run" {
	flags_exactly bad-helper.bash
	assert_line --partial "function fail() hides the bats library's fail"
}

@test "lint-tests: a *_BATS glob of the Makefile that matches no file" {
	flags_exactly bad-valgrind.mk
	assert_line --partial 'VALGRIND_BATS: "t/9[01]-*.bats" matches no file'
}

@test "lint-tests: a file it cannot parse is a finding, never a pass" {
	flags_exactly bad-parse.bats
}

@test "lint-tests: checked and deliberately ignored forms pass" {
	run -0 --separate-stderr lint t/fixtures/lint/clean.bats \
	    t/fixtures/lint/clean.mk
	assert_output ''
	[[ $stderr == 'lint-tests: 2 files, 4 tests, 0 findings' ]]
}

@test "lint-tests: the tree's tests, helpers and Makefile pass" {
	run --separate-stderr lint
	assert_output ''
	assert_success
	[[ $stderr == *', 0 findings' ]]
}

@test "lint-tests: a bad option is a usage error (2)" {
	run -2 --separate-stderr lint --bogus
	[[ $stderr == 'usage: lint-tests.py [--root DIR] [FILE...]' ]]
}

@test "need_tool: present tools let a test run; a missing one skips it, named" {
	run -0 bats --tap t/fixtures/lint/need-tool.bats
	assert_line 'ok 1 present tools run'
	assert_line 'ok 2 a missing tool skips # skip no-such-tool-lint missing (make deps installs it)'
	assert_line 'ok 3 promtool is looked for in VFS_TOOLS # skip promtool missing (make deps installs it)'
}

@test "without promtool and node_exporter their tests skip, never fail with 127" {
	VFS_TOOLS=$T/none run -0 bats --tap -f 'promtool|node_exporter' \
	    t/55-resources-report.bats t/92-alerts.bats
	refute_output --partial 'not ok'
	refute_output --partial 'command not found'
	assert_line --regexp '^ok [0-9]+ the Prometheus output passes promtool.* # skip promtool missing'
	assert_line --regexp "^ok [0-9]+ node_exporter's textfile collector .* # skip prometheus-node-exporter missing"
}

@test "no two bats files share a number, and t/durations names only files that exist" {
	run -0 bash -c 'ls t/*.bats | sed -E "s|^t/([0-9]+)-.*|\1|" | sort | uniq -d'
	assert_output ''
	run -0 awk '!/^#/ { print $2 }' t/durations
	local f
	for f in "${lines[@]}"; do
		[[ -f $f ]] || fail "t/durations names $f, which does not exist"
	done
}
