#!/usr/bin/env bats
# 26-vfstore-audit.bats - audit.jsonl written by vfstore (SPEC.md 4.1):
# one line per quarantine, clear, release, edit, deconfigure, reconcile
# release and quarantine by report-failure or apply; the failures an
# operator quarantine drops; a failed audit write (the change stands, 74,
# apply's error line); rotation at 1 MiB; `vfstore history` (4.2).
# shellcheck disable=SC2154,SC2016 # bats' run sets stderr; the single
# quotes keep $1 and $DATA for the scripts that expand them.

load helpers
load lib/store

VF=0000:e3:00.4
VF5=0000:e3:00.5
CARD=0000:e3:00.0
AT1=2026-08-20T15:00:00Z
AT2=2026-08-20T16:00:00Z

setup() {
	vfs_setup
	store_setup
	AUDIT=$DATA/gpu/audit.jsonl
	mk_card "$SYSFS" $CARD
	mk_vf "$SYSFS" $CARD $VF
	mk_vf "$SYSFS" $CARD $VF5
	unset SUDO_USER
}

vsys() {
	vs --sysfs-root "$SYSFS" "$@"
}

# nlines: the number of lines in audit.jsonl (0 when missing).
nlines() {
	if [ -e "$AUDIT" ]; then wc -l <"$AUDIT"; else echo 0; fi
}

# last EXPR: jq -r EXPR on the last audit line.
last() {
	tail -n 1 "$AUDIT" | jq -r "$1"
}

@test "quarantine --vf writes one line with the SPEC fields; user is \$SUDO_USER, else the uid's name" {
	run -0 --separate-stderr vsys quarantine --vf e3:00.4 --reason "fan noise"
	assert_equal "$(nlines)" 1
	run -0 last '[.prog, .command, .vf, (.vfs | join(",")), .reason,
	    (.uid | tostring), .user, .outcome] | join(" ")'
	assert_output "vfstore quarantine $VF $VF fan noise $(id -u) $(id -un) ok"
	run -0 last .ts
	assert_output --regexp '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$'
	SUDO_USER=alice run -0 --separate-stderr vsys quarantine --vf $VF5
	assert_equal "$(nlines)" 2
	assert_equal "$(last .user)" alice
	# Not audited: show, claims, check, a report below the threshold.
	vs show >/dev/null
	vs check >/dev/null
	run -0 --separate-stderr rfail 0000:e3:00.6 i-1 $AT1
	assert_equal "$(nlines)" 2
}

@test "quarantine --card keeps the failures it drops; clear --card names the card and its VFs" {
	rfail $VF i-1 $AT1 2>/dev/null
	run -0 --separate-stderr vsys quarantine --card e3:00.0 --reason drain
	assert_equal "$(tallies $VF)" ""
	assert_equal "$(nlines)" 1
	run -0 last '[.command, .card, (.vfs | join(",")), .reason] | join(" ")'
	assert_output "quarantine $CARD $VF,$VF5 drain"
	run -0 last '.failures | map("\(.vf_address) \(.instance_id) \(.assigned_at)") | join(",")'
	assert_output "$VF i-1 $AT1"
	run -0 last '.failures[0].reported_at'
	assert_output --regexp '^[0-9]{4}-.*Z$'
	run -0 --separate-stderr vsys clear --card $CARD
	assert_equal "$(nlines)" 2
	run -0 last '[.command, .card, (.vfs | join(",")), .outcome] | join(" ")'
	assert_output "clear $CARD $VF,$VF5 ok"
}

@test "quarantine and clear take --reason, audited and logged (--vf and --card)" {
	rfail $VF i-1 $AT1 2>/dev/null
	run -0 --separate-stderr vsys clear --vf e3:00.4 --reason "false alarm"
	run -0 last '[.command, .vf, .reason] | join(" ")'
	assert_output "clear $VF false alarm"
	[[ "$stderr" == *'"reason":"false alarm"'* ]] ||
	    fail "clear does not log its reason: $stderr"
	run -0 --separate-stderr vsys quarantine --vf e3:00.4 --reason "bad fan"
	run -0 last '[.command, .vf, .reason] | join(" ")'
	assert_output "quarantine $VF bad fan"
	run -0 --separate-stderr vsys clear --card e3:00.0 --reason "fan replaced"
	run -0 last '[.command, .card, .reason] | join(" ")'
	assert_output "clear $CARD fan replaced"
	# Text rules as for every stored string (SPEC 2.3).
	run -65 --separate-stderr vsys clear --vf e3:00.4 --reason $'\xff'
}

@test "report-failure reaching the threshold writes one line with the VF's failures" {
	run -0 --separate-stderr rfail $VF i-1 $AT1
	assert_equal "$(nlines)" 0
	run -0 --separate-stderr rfail $VF i-2 $AT2
	assert_output --partial '"outcome":"quarantined"'
	assert_equal "$(nlines)" 1
	run -0 last '[.command, .vf, .instance_id, (.threshold | tostring)] | join(" ")'
	assert_output "report-failure $VF i-2 2"
	run -0 last '.failures | map(.instance_id) | join(" ")'
	assert_output "i-1 i-2"
	run -0 --separate-stderr rfail $VF i-3 $AT2
	assert_equal "$(nlines)" 1
}

@test "apply: a quarantine is audited with its failures and the nvrm line; other reports are not" {
	{
		printf '{"check":"failed","vf_address":"%s","instance_id":"A","assigned_at":"%s","nvrm":"NVRM: first"}\n' $VF $AT1
		printf '{"check":"ok","vf_address":"%s","instance_id":"C","assigned_at":"%s"}\n' $VF5 $AT1
		printf '{"check":"failed","vf_address":"%s","instance_id":"B","assigned_at":"%s","nvrm":"NVRM: RmInitAdapter failed!"}\n' $VF $AT2
	} >"$T/in.jsonl"
	run -0 --separate-stderr vs apply <"$T/in.jsonl"
	assert_equal "${#lines[@]}" 3
	assert_equal "$(nlines)" 1
	run -0 last '[.prog, .command, .vf, .instance_id, .nvrm, .outcome] | join(" ")'
	assert_output "vfstore apply $VF B NVRM: RmInitAdapter failed! ok"
	run -0 last '.failures | map(.instance_id) | join(" ")'
	assert_output "A B"
}

@test "release, deconfigure and edit write one line each" {
	put_claims '{"version":1,"claims":[{"vf_address":"0000:e3:00.4","instance_id":"i-1","claimed_at":"2026-08-20T16:00:00Z"}]}'
	mkdir -p "$T/proc"
	run -0 --separate-stderr vsys release --instance i-1 --proc-root "$T"
	assert_equal "$(nlines)" 1
	run -0 last '[.command, .vf, .instance_id, (.deconfigured | tostring)] | join(" ")'
	assert_output "release $VF i-1 false"
	# Releasing an instance without a claim changes nothing: no line.
	run -0 --separate-stderr vsys release --instance i-1
	assert_equal "$(nlines)" 1
	echo 1160 >"$SYSFS/sys/bus/pci/devices/$VF/nvidia/current_vgpu_type"
	run -0 --separate-stderr vsys deconfigure --vf E3:00.4 --proc-root "$T"
	assert_equal "$(nlines)" 2
	run -0 last '[.command, .vf] | join(" ")'
	assert_output "deconfigure $VF"
	printf '#!/bin/sh\nprintf %s >"$1"\n' "'{\"version\":1,\"claims\":[{\"vf_address\":\"0000:e3:00.5\",\"instance_id\":\"i-9\",\"claimed_at\":\"x\"}]}'" >"$T/ed"
	chmod +x "$T/ed"
	EDITOR=$T/ed run -0 --separate-stderr vs edit claims
	assert_output '{"file":"vf-claims.json","changed":true}'
	assert_equal "$(nlines)" 3
	run -0 last '[.command, .file] | join(" ")'
	assert_output "edit vf-claims.json"
}

@test "release, deconfigure and edit audit their --reason; history shows it" {
	put_claims '{"version":1,"claims":[{"vf_address":"0000:e3:00.4","instance_id":"i-1","claimed_at":"2026-08-20T16:00:00Z"}]}'
	mkdir -p "$T/proc"
	run -0 --separate-stderr vsys release --instance i-1 --reason "VM moved" --proc-root "$T"
	run -0 last '[.command, .vf, .instance_id, .reason] | join(" ")'
	assert_output "release $VF i-1 VM moved"
	echo 1160 >"$SYSFS/sys/bus/pci/devices/$VF/nvidia/current_vgpu_type"
	run -0 --separate-stderr vsys deconfigure --vf $VF --reason "launcher crashed" --proc-root "$T"
	run -0 last '[.command, .vf, .reason] | join(" ")'
	assert_output "deconfigure $VF launcher crashed"
	printf '#!/bin/sh\nprintf %s >"$1"\n' "'{\"version\":1,\"claims\":[{\"vf_address\":\"0000:e3:00.5\",\"instance_id\":\"i-9\",\"claimed_at\":\"x\"}]}'" >"$T/ed"
	chmod +x "$T/ed"
	EDITOR=$T/ed run -0 --separate-stderr vs edit claims --reason "ticket 42"
	run -0 last '[.command, .file, .reason] | join(" ")'
	assert_output "edit vf-claims.json ticket 42"
	printf '#!/bin/sh\nprintf %s >"$1"\n' "'{\"version\":1,\"records\":[{\"vf_address\":\"$VF5\",\"quarantined_at\":\"$AT1\"}]}'" >"$T/edh"
	chmod +x "$T/edh"
	EDITOR=$T/edh run -0 --separate-stderr vs edit --reason "by hand" health
	run -0 last '[.command, .file, .reason] | join(" ")'
	assert_output "edit vf-health.json by hand"
	assert_equal "$(nlines)" 4
	run -0 --separate-stderr vs history --vf $VF
	run -0 jq -r '.command + ": " + .reason' <<<"$output"
	assert_output "release: VM moved
deconfigure: launcher crashed"
	run -0 --separate-stderr vs history --limit 2
	run -0 jq -r '.command + ": " + .reason' <<<"$output"
	assert_output "edit: ticket 42
edit: by hand"
	# Text rules as for every stored string (SPEC 2.3): nothing written.
	run -65 --separate-stderr vsys release --instance i-9 --reason $'\xff'
	run -65 --separate-stderr vsys deconfigure --vf $VF --reason $'\xff'
	EDITOR=$T/ed run -65 --separate-stderr vs edit claims --reason $'\xff'
	assert_equal "$(nlines)" 4
	run -0 jq -r '.claims[].instance_id' "$CLAIMS"
	assert_output i-9
}

@test "a failed audit write leaves the change standing, logs an error and exits 74" {
	mkdir "$AUDIT"
	run -74 --separate-stderr vsys quarantine --vf $VF --reason x
	quarantined $VF
	run -0 jq -r 'select(.level == "error") | .msg' <<<"$stderr"
	assert_output "cannot write the audit log"
	run -74 --separate-stderr vsys clear --vf $VF
	run -1 vs show --vf $VF
	rfail $VF i-1 $AT1 2>/dev/null
	run -74 --separate-stderr rfail $VF i-2 $AT2
	quarantined $VF
	put_claims '{"version":1,"claims":[{"vf_address":"0000:e3:00.5","instance_id":"i-1","claimed_at":"x"}]}'
	mkdir -p "$T/proc"
	run -74 --separate-stderr vsys release --instance i-1 --proc-root "$T"
	assert_output '{"instance_id":"i-1","vf_address":"0000:e3:00.5","released":true,"deconfigured":false,"ended":"unknown","suspect":false}'
	run -0 jq -c .claims "$CLAIMS"
	assert_output '[]'
	echo 1160 >"$SYSFS/sys/bus/pci/devices/$VF5/nvidia/current_vgpu_type"
	run -74 --separate-stderr vsys deconfigure --vf $VF5 --proc-root "$T"
	assert_equal "$(cat "$SYSFS/sys/bus/pci/devices/$VF5/nvidia/current_vgpu_type")" 0
}

@test "apply: a failed audit write answers the line with an error and goes on" {
	mkdir "$AUDIT"
	{
		printf '{"check":"failed","vf_address":"%s","instance_id":"A","assigned_at":"%s"}\n' $VF $AT1
		printf '{"check":"failed","vf_address":"%s","instance_id":"B","assigned_at":"%s","nvrm":"NVRM: x"}\n' $VF $AT2
		printf '{"check":"failed","vf_address":"%s","instance_id":"C","assigned_at":"%s"}\n' $VF5 $AT1
	} >"$T/in.jsonl"
	run -0 --separate-stderr vs apply <"$T/in.jsonl"
	err=$stderr
	assert_equal "${#lines[@]}" 3
	assert_equal "$(jq -r '.outcome' <<<"${lines[0]}")" recorded
	assert_equal "$(jq -r '.outcome' <<<"${lines[2]}")" recorded
	run -0 jq -r '[.error, .instance_id, .outcome] | join(" | ")' <<<"${lines[1]}"
	assert_output --regexp '^cannot write the audit log: .* \| B \| quarantined$'
	quarantined $VF
	run -0 jq -r 'select(.level == "error" and .msg == "cannot write the audit log") | .vf' <<<"$err"
	assert_output $VF
}

@test "rotation at 1 MiB keeps one generation; history reads both, oldest first" {
	line='{"ts":"2026-08-20T15:00:00Z","prog":"vfstore","command":"clear","vfs":["0000:e3:00.7"],"outcome":"ok","pad":"'$(head -c 900 /dev/zero | tr '\0' x)'"}'
	for _ in $(seq 1200); do printf '%s\n' "$line"; done >"$AUDIT"
	assert [ "$(stat -c %s "$AUDIT")" -ge 1048576 ]
	printf '%s\n' '{"command":"gone","vf":"0000:e3:00.7"}' >"$DATA/gpu/audit.jsonl.1"
	run -0 --separate-stderr vsys quarantine --vf $VF
	assert_equal "$(nlines)" 1
	assert_equal "$(wc -l <"$DATA/gpu/audit.jsonl.1")" 1200
	run -0 --separate-stderr vs history
	assert_equal "${#lines[@]}" 1201
	assert_equal "$(jq -r .command <<<"${lines[0]}")" clear
	assert_equal "$(jq -r .command <<<"${lines[1200]}")" quarantine
	run -0 --separate-stderr vs history --vf e3:00.7 --limit 2
	assert_equal "${#lines[@]}" 2
	assert_equal "$(jq -r .command <<<"$output" | sort -u)" clear
}

@test "history --vf, --card and --limit filter the lines; bad arguments are refused" {
	run -0 --separate-stderr vs history
	assert_output ''
	vsys quarantine --vf $VF --reason one 2>/dev/null
	vsys quarantine --card $CARD --reason two 2>/dev/null
	vsys clear --vf $VF5 2>/dev/null
	run -0 --separate-stderr vs history --vf E3:00.5
	assert_equal "$(jq -r .reason <<<"$output" | tr '\n' ' ')" "two null "
	run -0 --separate-stderr vs history --card e3:00.0
	assert_equal "$(jq -r .reason <<<"$output")" two
	run -0 --separate-stderr vs history --vf $VF --limit 1
	assert_equal "$(jq -r .reason <<<"$output")" two
	run -0 --separate-stderr vs history --limit 2
	assert_equal "$(jq -r .command <<<"$output" | tr '\n' ' ')" "quarantine clear "
	run -0 --separate-stderr vs history --limit 0
	assert_output ''
	run -64 --separate-stderr vs history --vf $VF --card $CARD
	run -64 --separate-stderr vs history --limit x
	run -65 --separate-stderr vs history --vf e3:00
	run -74 --separate-stderr sh -c 'vfstore --data-dir "$DATA" history >/dev/full'
	# A missing DATA_DIR/gpu is unavailable, never an empty history.
	mv "$DATA/gpu" "$DATA/gone"
	run -69 --separate-stderr vs history
	assert_output ''
	[ ! -e "$DATA/gpu" ]
}

@test "reconcile: each released claim is one line; a failed audit write exits 74 with the release standing" {
	mkdir -p "$T/proc"
	printf '{"version":1,"claims":[{"vf_address":"%s","instance_id":"i-1","claimed_at":"%s","control_socket":"%s"}]}' \
	    $VF $AT1 "$T/nonexistent.qmp" >"$CLAIMS"
	run -0 --separate-stderr vsys reconcile --proc-root "$T"
	assert_output --partial '"released":true'
	assert_equal "$(nlines)" 1
	run -0 last '[.command, .vf, .instance_id, .liveness, .reason, (.deconfigured | tostring)] | join(" | ")'
	assert_output "reconcile | $VF | i-1 | gone | control socket does not exist | true"
	printf '{"version":1,"claims":[{"vf_address":"%s","instance_id":"i-2","claimed_at":"%s","control_socket":"%s"}]}' \
	    $VF5 $AT1 "$T/nonexistent.qmp" >"$CLAIMS"
	rm "$AUDIT"
	mkdir "$AUDIT"
	run -74 --separate-stderr vsys reconcile --proc-root "$T"
	err=$stderr
	assert_output --partial '"released":true'
	run -0 jq -c .claims "$CLAIMS"
	assert_output '[]'
	run -0 jq -r 'select(.level == "error") | .msg' <<<"$err"
	assert_output "cannot write the audit log"
}
