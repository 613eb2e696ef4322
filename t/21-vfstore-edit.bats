#!/usr/bin/env bats
# 21-vfstore-edit.bats - `vfstore edit [health|claims]`, the visudo of
# the store (SPEC.md 4.2): under the exclusive lock, a copy goes to
# $VISUAL / $EDITOR / vi, the result must pass the loader's rules, and
# only then replaces the file; concurrent writers wait and lose nothing.
# Every editor here is a script, run as the real `sh -c` would run it.

load helpers
load lib/store

VF=0000:e3:00.4
AT1=2026-08-20T15:00:00Z
Q='"quarantined_at":"2026-08-20T16:00:00Z"'

setup() {
	vfs_setup
	store_setup
	TMPDIR=$T/tmp
	mkdir -p "$TMPDIR"
	unset VISUAL
	export TMPDIR
}

# A failed test must not leave the report feeder of the last test running.
teardown() {
	touch "$T/edits-done"
}

# editor NAME BODY: an executable editor script $T/NAME (POSIX sh, set
# -e); the file to edit is "$1" (after any arguments EDITOR carries).
editor() {
	printf '#!/bin/sh\nset -e\n%s\n' "$2" >"$T/$1"
	chmod +x "$T/$1"
}

# add_quarantine VF: an editor body that adds an operator quarantine.
add_quarantine() {
	printf '%s' "jq --indent 2 '.records += [{vf_address: \"$1\", quarantined_at: \"2026-08-20T16:00:00Z\"}]' \"\$1\" >\"\$1.new\"; mv \"\$1.new\" \"\$1\""
}

# no_temp_left: the editor's copy is gone.
no_temp_left() {
	assert_equal "$(ls -A "$TMPDIR")" ""
}

@test "edit hands a copy to \$EDITOR and installs a valid result in the canonical layout" {
	rfail $VF i-1 $AT1
	cp "$HEALTH" "$T/orig"
	editor ed "cp \"\$1\" $T/seen; echo \"\$1\" >$T/path; $(add_quarantine 0000:e3:00.1)"
	EDITOR=$T/ed run -0 --separate-stderr vs edit
	assert_output '{"file":"vf-health.json","changed":true}'
	# The editor saw the file as it was, in a temporary file of its own.
	run -0 cmp "$T/seen" "$T/orig"
	run -0 cat "$T/path"
	assert_output --regexp "^$TMPDIR/vfstore-edit\.vf-health\.[A-Za-z0-9]{6}\.json\$"
	# Sorted, upstream layout (jq --indent 2, no final newline).
	run -0 jq -c '[.records[].vf_address]' "$HEALTH"
	assert_output '["0000:e3:00.1","0000:e3:00.4"]'
	assert_equal "$(jq --indent 2 . "$HEALTH")" "$(cat "$HEALTH")"
	assert_equal "$(tail -c 1 "$HEALTH")" "}"
	run -0 jq -r '.level + " " + .msg' <<<"${stderr_lines[-1]}"
	assert_output "info edited the store by hand"
	no_temp_left
	run -0 --separate-stderr vs check
	assert_output --partial '"records":2,"quarantined":1'
}

@test "edit of a missing file starts from an empty document and creates the file" {
	editor ed "jq -c . \"\$1\" >$T/seen; $(add_quarantine $VF)"
	EDITOR=$T/ed run -0 --separate-stderr vs edit health
	assert_output '{"file":"vf-health.json","changed":true}'
	assert_equal "$(cat "$T/seen")" '{"version":1,"records":[]}'
	run -0 jq -c '.records' "$HEALTH"
	assert_output "[{\"vf_address\":\"$VF\",$Q}]"
}

@test "an edit that changes nothing writes nothing" {
	EDITOR=true run -0 --separate-stderr vs edit
	assert_output '{"file":"vf-health.json","changed":false}'
	assert_not_exists "$HEALTH"
	rfail $VF i-1 $AT1
	before=$(stat -c '%i %Y %s' "$HEALTH")
	sum=$(sha "$HEALTH")
	sleep 1
	EDITOR=true run -0 --separate-stderr vs edit
	assert_output '{"file":"vf-health.json","changed":false}'
	# The same content in another layout is no change either.
	editor ed 'jq -c . "$1" >"$1.new"; mv "$1.new" "$1"'
	EDITOR=$T/ed run -0 --separate-stderr vs edit
	assert_output '{"file":"vf-health.json","changed":false}'
	assert_equal "$(stat -c '%i %Y %s' "$HEALTH")" "$before"
	assert_equal "$(sha "$HEALTH")" "$sum"
	no_temp_left
}

@test "an invalid edit is refused (65) with the loader's reason, and the file is unchanged" {
	rfail $VF i-1 $AT1
	sum=$(sha "$HEALTH")
	editor broken 'printf "{\"version\":1,\"records\":[" >"$1"'
	EDITOR=$T/broken run -65 --separate-stderr vs edit
	assert_output ''
	run -0 jq -r '.msg + ": " + .error' <<<"${stderr_lines[0]}"
	assert_output --partial 'refused the edit'
	assert_output --partial ': unmarshal VF health state:'
	editor dup "jq --indent 2 '.records += [.records[0]]' \"\$1\" >\"\$1.new\"; mv \"\$1.new\" \"\$1\""
	EDITOR=$T/dup run -65 --separate-stderr vs edit
	run -0 jq -r .error <<<"${stderr_lines[0]}"
	assert_output 'validate VF health state record 1: duplicate VF address "0000:e3:00.4"'
	editor v2 "jq '.version = 2' \"\$1\" >\"\$1.new\"; mv \"\$1.new\" \"\$1\""
	EDITOR=$T/v2 run -65 --separate-stderr vs edit
	run -0 jq -r .error <<<"${stderr_lines[0]}"
	assert_output 'validate VF health state: unsupported version 2'
	editor upper "sed -i 's/0000:e3:00.4/0000:E3:00.4/' \"\$1\""
	EDITOR=$T/upper run -65 --separate-stderr vs edit
	run -0 jq -r .error <<<"${stderr_lines[0]}"
	assert_output 'validate VF health state record 0: invalid VF address "0000:E3:00.4"'
	assert_equal "$(sha "$HEALTH")" "$sum"
	no_temp_left
}

@test "a file the loader refuses can be repaired with edit" {
	put_health '{"version":1,"records":[{"vf_address":"bogus"}]}'
	run -69 --separate-stderr vs check
	editor fix "printf '{\"version\":1,\"records\":[{\"vf_address\":\"$VF\",$Q}]}' >\"\$1\""
	EDITOR=$T/fix run -0 --separate-stderr vs edit
	assert_output '{"file":"vf-health.json","changed":true}'
	run -0 --separate-stderr vs check
	assert_output --partial '"status":"ok","records":1,"quarantined":1'
	# A backup is restored the same way, and checked first.
	printf '{"version":1,"records":[]}' >"$T/backup"
	EDITOR="cp $T/backup" run -0 --separate-stderr vs edit
	assert_output '{"file":"vf-health.json","changed":true}'
	run -0 jq -c .records "$HEALTH"
	assert_output '[]'
	echo '{"version":3}' >"$T/backup"
	EDITOR="cp $T/backup" run -65 --separate-stderr vs edit
	run -0 jq -c .records "$HEALTH"
	assert_output '[]'
}

@test "edit claims uses the ledger's rules" {
	put_claims '{"version":1,"claims":[{"vf_address":"0000:e3:00.4","instance_id":"a","claimed_at":"x"},{"vf_address":"0000:e3:00.5","instance_id":"b","claimed_at":"y"}]}'
	editor twice "jq '.claims[1].instance_id = \"a\"' \"\$1\" >\"\$1.new\"; mv \"\$1.new\" \"\$1\""
	sum=$(sha "$CLAIMS")
	EDITOR=$T/twice run -65 --separate-stderr vs edit claims
	run -0 jq -r .error <<<"${stderr_lines[0]}"
	assert_output 'validate VF claims claim 1: duplicate instance "a"'
	assert_equal "$(sha "$CLAIMS")" "$sum"
	editor drop "jq 'del(.claims[0])' \"\$1\" >\"\$1.new\"; mv \"\$1.new\" \"\$1\""
	EDITOR=$T/drop run -0 --separate-stderr vs edit claims
	assert_output '{"file":"vf-claims.json","changed":true}'
	run -0 --separate-stderr vs claims
	assert_output '{"vf_address":"0000:e3:00.5","instance_id":"b","claimed_at":"y","sentinel_sources":"none"}'
	assert_not_exists "$HEALTH"
}

@test "\$VISUAL wins over \$EDITOR, EDITOR may carry arguments, and vi is the default" {
	editor visual "$(add_quarantine 0000:e3:00.1)"
	editor args "[ \"\$1\" = --flag ] && [ \"\$2\" = 'two words' ]; shift 2; $(add_quarantine 0000:e3:00.2)"
	mkdir -p "$T/vibin"
	editor vibin/vi "$(add_quarantine 0000:e3:00.3)"
	VISUAL=$T/visual EDITOR=false run -0 --separate-stderr vs edit
	EDITOR="$T/args --flag 'two words'" run -0 --separate-stderr vs edit
	VISUAL= EDITOR= PATH="$T/vibin:$PATH" run -0 --separate-stderr vs edit
	run -0 jq -r '[.records[].vf_address] | join(" ")' "$HEALTH"
	assert_output "0000:e3:00.1 0000:e3:00.2 0000:e3:00.3"
}

@test "an editor that fails writes nothing and exits 1" {
	rfail $VF i-1 $AT1
	sum=$(sha "$HEALTH")
	editor fails "$(add_quarantine 0000:e3:00.1); exit 3"
	EDITOR=$T/fails run -1 --separate-stderr vs edit
	assert_output ''
	run -0 jq -r '.msg + " " + (.exit_status | tostring)' <<<"${stderr_lines[0]}"
	assert_output 'the editor failed; nothing written 3'
	EDITOR=$T/no-such-editor run -1 --separate-stderr vs edit
	assert_equal "$(sha "$HEALTH")" "$sum"
	no_temp_left
}

@test "usage errors, a missing data directory and a held lock" {
	run -64 --separate-stderr vs edit frobs
	assert_equal "${stderr_lines[0]}" 'vfstore: edit: unknown file "frobs" (health or claims)'
	run -64 --separate-stderr vs edit health claims
	run -64 --separate-stderr vs edit --vf $VF
	EDITOR=true run -69 --separate-stderr vfstore --data-dir "$T/nowhere" edit
	assert_output ''
	assert_not_exists "$T/nowhere"
	hold_lock
	EDITOR=true run -75 --separate-stderr vs --lock-timeout 1 edit
	release_lock
	no_temp_left
}

@test "edit takes --reason before or after the file, and logs it; a stray argument is named" {
	editor q "$(add_quarantine $VF)"
	EDITOR=$T/q run -0 --separate-stderr vs edit health --reason "fan noise"
	assert_output '{"file":"vf-health.json","changed":true}'
	run -0 jq -r '[.msg, .reason] | join(": ")' <<<"${stderr_lines[0]}"
	assert_output 'edited the store by hand: fan noise'
	EDITOR=true run -0 --separate-stderr vs edit --reason "look only" claims
	assert_output '{"file":"vf-claims.json","changed":false}'
	EDITOR=true run -0 --separate-stderr vs edit --reason x
	assert_output '{"file":"vf-health.json","changed":false}'
	run -64 --separate-stderr vs edit health --reason
	assert_equal "${stderr_lines[0]}" \
	    'vfstore: unknown option or missing argument: --reason'
	run -64 --separate-stderr vs edit health --reason x claims
	assert_equal "${stderr_lines[0]}" 'vfstore: edit: unexpected argument: claims'
	run -64 --separate-stderr vs edit claims --card e3:00.0
	assert_equal "${stderr_lines[0]}" \
	    'vfstore: edit: unknown option or missing argument: --card'
	no_temp_left
}

@test "on a terminal a refused edit offers to edit again; (q)uit leaves the file unchanged" {
	rfail $VF i-1 $AT1
	sum=$(sha "$HEALTH")
	# The first session breaks the JSON, the next one sees that broken
	# copy and repairs it.
	editor flaky "if [ ! -e $T/once ]; then : >$T/once; cp \"\$1\" $T/good; printf '\\n{\\n' >>\"\$1\"; exit 0; fi; [ \"\$(tail -n 1 \"\$1\")\" = '{' ]; cp $T/good \"\$1\"; $(add_quarantine 0000:e3:00.1)"
	printf 'x\ne\n' >"$T/answers"
	run -0 env EDITOR="$T/flaky" script -qefc \
	    "vfstore --data-dir '$DATA' edit" /dev/null <"$T/answers"
	assert_output --partial 'What now? (e)dit again, (q)uit without saving'
	assert_output --partial '{"file":"vf-health.json","changed":true}'
	run -0 jq -r '[.records[].vf_address] | join(" ")' "$HEALTH"
	assert_output "0000:e3:00.1 0000:e3:00.4"
	sum=$(sha "$HEALTH")
	rm "$T/once"
	run -65 env EDITOR="$T/flaky" script -qefc \
	    "vfstore --data-dir '$DATA' edit" /dev/null <<<q
	assert_output --partial 'What now?'
	assert_equal "$(sha "$HEALTH")" "$sum"
	no_temp_left
}

@test "a report waits for an edit in progress, and neither change is lost" {
	editor slow "touch $T/started; sleep 1; $(add_quarantine 0000:e3:00.1)"
	EDITOR=$T/slow vs edit >"$T/edit.out" 2>"$T/edit.err" 3>&- &
	ed=$!
	wait_for test -e "$T/started"
	SECONDS=0
	run -0 --separate-stderr rfail $VF i-1 $AT1
	waited=$SECONDS
	wait "$ed"
	assert_equal "$(cat "$T/edit.out")" '{"file":"vf-health.json","changed":true}'
	assert [ "$waited" -ge 1 ]
	run -0 jq -c '[.records[] | [.vf_address, (.failures | length)]]' "$HEALTH"
	assert_output '[["0000:e3:00.1",0],["0000:e3:00.4",1]]'
}

@test "20 edits against a running apply are all kept, and so is every report" {
	set_threshold 1000
	editor add "sleep 0.02; vf=\$(printf '0000:e4:%02x.%d' \$((\$(cat $T/next) / 8)) \$((\$(cat $T/next) % 8))); jq --indent 2 --arg vf \"\$vf\" '.records += [{vf_address: \$vf, quarantined_at: \"2026-08-20T16:00:00Z\"}]' \"\$1\" >\"\$1.new\"; mv \"\$1.new\" \"\$1\""
	# Reports flow from before the first edit until after the last.
	(
		i=0
		while [ $i -lt 3000 ] && { [ ! -e "$T/edits-done" ] || [ $i -lt 50 ]; }; do
			printf '{"check":"failed","vf_address":"%s","instance_id":"i-%d","assigned_at":"a-%d","nvrm":"NVRM: x"}\n' $VF $i $i
			i=$((i + 1))
			sleep 0.01
		done
		echo $i >"$T/sent"
	) | vs apply >"$T/apply.out" 2>/dev/null 3>&- &
	ap=$!
	wait_for test -s "$T/apply.out"
	for ((k = 0; k < 20; k++)); do
		echo $k >"$T/next"
		EDITOR=$T/add vs edit >>"$T/edits.out" 2>>"$T/edits.err"
	done
	touch "$T/edits-done"
	wait "$ap"
	n=$(cat "$T/sent")
	assert_equal "$(grep -c '"changed":true' "$T/edits.out")" 20
	assert_equal "$(jq '[.records[] | select(.vf_address | startswith("0000:e4:"))] | length' "$HEALTH")" 20
	assert_equal "$(grep -c '"outcome":"recorded"' "$T/apply.out")" $n
	assert_equal "$(jq --arg vf $VF '.records[] | select(.vf_address == $vf) | .failures | length' "$HEALTH")" $n
	no_temp_left
}
