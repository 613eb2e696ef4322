#!/usr/bin/env bats
# 84-console-offset: a suspicion's console evidence belongs to its
# assignment (SPEC 8.2): libvirt-hook at prepare begin records the console
# log's size and inode in the claim (console_offset, console_inode), and
# the sentinel and the release read only what follows that offset in that
# file (a rotated or new file from 0), so an append='on' log keeps no
# older OK or FAILED that counts; libvirt's end line counts only as the
# whole line libvirt writes.

load helpers
load lib/store
load lib/placement
load lib/libvirt
load lib/sentinel

setup() {
	vfs_setup
	store_setup
	hook_host
	sentinel_setup
	PIDS=""
}

teardown() {
	kill_pids
	sentinel_teardown
}

# claim_with LOG OFFSET INODE: the ledger's one claim of VF4, made now,
# with a vsock endpoint, LOG as its console and its recorded start.
claim_with() {
	put_claims "$(jq -nc --arg vf $VF4 --arg log "$1" --arg off "$2" \
	    --arg ino "$3" --arg at "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
	    '{version:1, claims:[{vf_address:$vf, instance_id:"i-1",
	      claimed_at:$at, vsock:"vsock:42", app_log:$log,
	      console_offset:$off, console_inode:$ino}]}')"
}

@test "prepare begin records an append='on' console log's size and inode; none when the log does not exist yet or is truncated at start" {
	local log
	printf 'an earlier boot\n' >"$T/con.log"
	for log in "<serial type='file'><source path='$T/con.log' append='on'/></serial>" \
	    "<serial type='pty'><log file='$T/con.log' append='on'/></serial>"; do
		domain_xml hostdev=$VF4 profile="$P12" extra="$log" >"$T/dom.xml"
		run -0 hook prepare begin
		assert_equal "$(claim_field "$UUID1" console_offset) $(claim_field "$UUID1" console_inode)" \
		    "16 $(stat -c %i "$T/con.log")"
		run -0 hook release end
	done
	# No file yet; or append off (libvirt's default), where libvirt
	# truncates the log in place when the domain starts.
	for log in "<serial type='file'><source path='$T/none.log' append='on'/></serial>" \
	    "<serial type='pty'><log file='$T/con.log'/></serial>" \
	    "<serial type='file'><source path='$T/con.log' append='off'/></serial>"; do
		domain_xml hostdev=$VF4 profile="$P12" extra="$log" >"$T/dom.xml"
		run -0 hook prepare begin
		assert_equal "$(claim_field "$UUID1" console_offset)$(claim_field "$UUID1" console_inode)" ""
		run -0 hook release end
	done
}

@test "sentinel: a FAILED marker before the claim's console offset does not count; one after it does; a new file is read from 0" {
	{ marker_failed; echo; } >"$T/con.log"
	jq -nc --arg log "$T/con.log" --arg ctl "$CTL" --arg at "$TS1" \
	    --arg off "$(stat -c %s "$T/con.log")" \
	    --arg ino "$(stat -c %i "$T/con.log")" \
	    '{vf_address:"0000:e3:00.4", instance_id:"i-1", claimed_at:$at,
	      control_socket:$ctl, app_log:$log, console_offset:$off,
	      console_inode:$ino}' >"$TARGETS"
	run -0 --separate-stderr poll_once --source log
	assert_output ''
	{ marker_failed; echo; } >>"$T/con.log"
	run -0 --separate-stderr poll_once --source log
	assert_equal "$(checks_of)" "failed 0000:e3:00.4 i-1"
	# Another file at the path (another inode): from its start.
	{ marker_failed; echo; } >"$T/new.log"
	mv "$T/new.log" "$T/con.log"
	run -0 --separate-stderr poll_once --source log
	assert_equal "$(checks_of)" "failed 0000:e3:00.4 i-1"
}

@test "release: an append='on' log's OK from an earlier assignment does not clear an unclean end" {
	{ echo 'boot 1'; marker_ok; echo; } >"$T/con.log"
	claim_with "$T/con.log" "$(stat -c %s "$T/con.log")" \
	    "$(stat -c %i "$T/con.log")"
	echo 'boot 2: killed before its OK' >>"$T/con.log"
	run -0 --separate-stderr vs release --instance i-1 --ended unclean
	run -0 jq -r '.suspect' <<<"$output"
	assert_output true
	# The same OK after the offset is this assignment's: no suspicion.
	rm -f "$DATA/gpu/vf-suspect.json"
	claim_with "$T/con.log" 0 "$(stat -c %i "$T/con.log")"
	run -0 --separate-stderr vs release --instance i-1 --ended unclean
	run -0 jq -r '.suspect' <<<"$output"
	assert_output false
}

@test "release end: libvirt's end line counts only as the whole line libvirt writes" {
	echo "libvirt.log_dir = $T/qlog" >>"$VFSENTINEL_CONF"
	mkdir -p "$QEMU_DIR/domain-7-vm-a" "$T/qlog"
	domain_xml hostdev=$VF4 profile="$P12" >"$T/dom.xml"
	run -0 hook prepare begin
	domain_xml id=7 hostdev=$VF4 profile="$P12" cid=42 >"$T/dom.xml"
	run -0 hook started begin
	# QEMU's stderr lands in the same log: a guest-controlled line that
	# quotes the marker after libvirt's own does not win.
	{
		printf '2026-12-07 10:00:00.000+0000: starting up\n'
		printf '2026-12-07 10:00:09.000+0000: shutting down, reason=destroyed\n'
		printf 'qemu: serial says: shutting down, reason=shutdown\n'
		printf '2026-12-07 10:00:09.000+0000: shutting down, reason=shutdown trailing\n'
	} >"$T/qlog/vm-a.log"
	run -0 --separate-stderr hook release end
	run -0 jq -r '.suspects[0].source' "$DATA/gpu/vf-suspect.json"
	assert_output "libvirt-hook: reason=destroyed"
}
