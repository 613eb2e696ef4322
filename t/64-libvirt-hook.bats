#!/usr/bin/env bats
# 64-libvirt-hook.bats - libvirt-hook without libvirt (SPEC.md 6.6): the
# domain XML on stdin as libvirtd writes it, a fake host; each phase, the
# refusals of prepare, and hostile XML. t/69-libvirt-real.bats runs the
# same hook under a real libvirtd.

load helpers
load lib/placement
load lib/libvirt

setup() {
	vfs_setup
	hook_host
	PIDS=""
}

teardown() {
	kill_pids
}

@test "usage: --help exits 0; a wrong argument count is 64" {
	run -0 libvirt-hook --help
	assert_output --partial "DOMAIN OPERATION SUB-OPERATION EXTRA"
	run -64 libvirt-hook vm-a prepare begin
	assert_output --partial "expected DOMAIN OPERATION SUB-OPERATION EXTRA"
}

@test "four arguments are always libvirt's operands: a domain named like an option is judged like any other" {
	quarantine $VF4
	for name in --help -h -hello --version --he -c --proc-root=/x; do
		echo "# $name" >&2
		domain_xml name="$name" hostdev=$VF4 profile="$P12" >"$T/dom.xml"
		run -1 --separate-stderr libvirt-hook "$name" prepare begin - <"$T/dom.xml"
		assert_equal "$output" ""
		assert_equal "${stderr_lines[-1]}" "vfsentinel: VF $VF4 is quarantined by an operator; pick another with vfpick --profile 'NVIDIA L40S-12Q' --claim $UUID1 --format libvirt and put the <hostdev> element it prints in the domain"
	done
	assert_file_not_exists "$DATA/gpu/vf-claims.json"
	# Any operand may look like an option; the call is still libvirt's.
	run -1 --separate-stderr libvirt-hook vm-a prepare begin --help <"$T/dom.xml"
	assert_equal "$output" ""
	run -0 --separate-stderr libvirt-hook --help --version -h - <"$T/dom.xml"
	assert_equal "$output" ""
}

@test "stdout stays empty in every phase, whatever the domain is named" {
	domain_xml name=--help id=4 hostdev=$VF4 profile="$P12" cid=9 >"$T/dom.xml"
	for op in "prepare begin" "start begin" "started begin" "migrate begin" \
		"restore begin" "reconnect begin" "stopped end" "release end" \
		"attach begin" "prepare end"; do
		# shellcheck disable=SC2086 # two words
		run -0 --separate-stderr libvirt-hook --help $op - <"$T/dom.xml"
		assert_equal "$output" ""
	done
	assert_equal "$(jq -c .claims "$DATA/gpu/vf-claims.json")" '[]'
}

@test "options come only before --; any other call is 2.1's: --help alone, a bad option 64" {
	quarantine $VF4
	domain_xml name=--help hostdev=$VF4 >"$T/dom.xml"
	run -1 --separate-stderr libvirt-hook -c "$VFSENTINEL_CONF" --lock-timeout 1 -- --help prepare begin - <"$T/dom.xml"
	assert_equal "$output" ""
	assert_equal "${stderr_lines[-1]}" "vfsentinel: VF $VF4 is quarantined by an operator; pick another with vfpick --profile NAME --claim $UUID1 --format libvirt and put the <hostdev> element it prints in the domain"
	run -0 --separate-stderr libvirt-hook -- --help release end - <"$T/dom.xml"
	assert_equal "$output" ""
	# Options without "--" before the operands: a usage error.
	run -64 --separate-stderr libvirt-hook -c "$VFSENTINEL_CONF" vm-a prepare begin - <"$T/dom.xml"
	assert_equal "$output" ""
	assert_equal "${stderr_lines[0]}" "libvirt-hook: expected DOMAIN OPERATION SUB-OPERATION EXTRA, or [OPTIONS] -- DOMAIN OPERATION SUB-OPERATION EXTRA"
	run -64 --separate-stderr libvirt-hook -c "$VFSENTINEL_CONF" -- vm-a prepare begin <"$T/dom.xml"
	assert_equal "${stderr_lines[0]}" "libvirt-hook: expected DOMAIN OPERATION SUB-OPERATION EXTRA, or [OPTIONS] -- DOMAIN OPERATION SUB-OPERATION EXTRA"
	run -0 --separate-stderr libvirt-hook --help
	assert_output --partial "-- DOMAIN OPERATION SUB-OPERATION EXTRA"
	run -0 --separate-stderr libvirt-hook --version
	assert_output --regexp "^libvirt-hook \(vfsentinel\) "
	run -64 --separate-stderr libvirt-hook --bogus vm-a prepare begin -
	assert_equal "$output" ""
	assert_equal "$(jq -c .claims "$DATA/gpu/vf-claims.json" 2>/dev/null || echo none)" none
}

@test "prepare claims the hostdev VF for the domain's UUID and writes the metadata's profile" {
	domain_xml hostdev=$VF4 profile="$P12" \
		uuid=0B4B2E53-1D7A-4F8B-9E3B-1234567890AB >"$T/dom.xml"
	run -0 --separate-stderr hook prepare begin
	assert_output ""
	assert_equal "$(claim_field $UUID1 vf_address)" $VF4
	assert_equal "$(claim_field $UUID1 profile)" "$P12"
	assert_equal "$(claim_field $UUID1 type_id)" 1160
	assert_equal "$(current $VF4)" 1160
	assert_equal "$(jq -r .msg <<<"${stderr_lines[0]}")" "claimed VF for the domain"
}

@test "prepare keeps a claim the domain already holds (same claimed_at)" {
	claim $VF4 $UUID1
	domain_xml hostdev=$VF4 profile="$P12" >"$T/dom.xml"
	sum=$(sha "$DATA/gpu/vf-claims.json")
	run -0 --separate-stderr hook prepare begin
	assert_equal "$(sha "$DATA/gpu/vf-claims.json")" "$sum"
	assert_equal "$(current $VF4)" 0
}

@test "prepare refuses a quarantined VF: exit 1, one plain last line naming VF, reason and what to do" {
	record_failures $VF4 2
	domain_xml hostdev=$VF4 profile="$P12" >"$T/dom.xml"
	run -1 --separate-stderr hook prepare begin
	assert_equal "${stderr_lines[-1]}" "vfsentinel: VF $VF4 is quarantined (2 failed assignments); pick another with vfpick --profile 'NVIDIA L40S-12Q' --claim $UUID1 --format libvirt and put the <hostdev> element it prints in the domain"
	assert_file_not_exists "$DATA/gpu/vf-claims.json"
	assert_equal "$(current $VF4)" 0
	quarantine $VF5
	domain_xml meta_vf=$VF5 >"$T/dom.xml"
	run -1 --separate-stderr hook prepare begin
	assert_equal "${stderr_lines[-1]}" "vfsentinel: VF $VF5 is quarantined by an operator; pick another VF (vfpick --profile NAME)"
}

@test "prepare refuses a VF claimed by another instance, a dirty VF, a profile it lacks, two VFs" {
	claim $VF4 other-vm
	domain_xml hostdev=$VF4 >"$T/dom.xml"
	run -1 --separate-stderr hook prepare begin
	assert_equal "${stderr_lines[-1]}" "vfsentinel: VF $VF4 is claimed by instance other-vm; pick another with vfpick --profile NAME --claim $UUID1 --format libvirt and put the <hostdev> element it prints in the domain"
	echo 1161 >"$(vfdir $VF5)/nvidia/current_vgpu_type"
	domain_xml hostdev=$VF5 >"$T/dom.xml"
	run -1 --separate-stderr hook prepare begin
	assert_equal "${stderr_lines[-1]}" "vfsentinel: VF $VF5 is configured (vGPU type 1161) without a claim; free it with vfstore deconfigure --vf $VF5 or, if a running VM holds it, record that with vfpick --adopt"
	echo 0 >"$(vfdir $VF5)/nvidia/current_vgpu_type"
	domain_xml hostdev=$VF5 profile="NVIDIA L40S-48Q" >"$T/dom.xml"
	run -1 --separate-stderr hook prepare begin
	assert_equal "${stderr_lines[-1]}" "vfsentinel: VF $VF5 does not offer profile 'NVIDIA L40S-48Q'; pick another with vfpick --profile 'NVIDIA L40S-48Q' --claim $UUID1 --format libvirt and put the <hostdev> element it prints in the domain"
	domain_xml hostdev=$VF5 meta_vf=$VF4 >"$T/dom.xml"
	run -1 --separate-stderr hook prepare begin
	assert_equal "${stderr_lines[-1]}" "vfsentinel: the domain has 2 vGPU VFs ($VF5, $VF4); vfsentinel tracks one VF per domain"
	assert_equal "$(jq -c '[.claims[].instance_id]' "$DATA/gpu/vf-claims.json")" '["other-vm"]'
}

@test "prepare fails closed: an unavailable store or a missing gpu dir refuses, nothing written" {
	echo '{"version":1,"records":' >"$DATA/gpu/vf-health.json"
	domain_xml hostdev=$VF4 profile="$P12" >"$T/dom.xml"
	run -1 --separate-stderr hook prepare begin
	assert_regex "${stderr_lines[-1]}" "^vfsentinel: the VF health state is unavailable \(.+\); fix it \(vfstore check\) and start again$"
	assert_file_not_exists "$DATA/gpu/vf-claims.json"
	assert_equal "$(current $VF4)" 0
	rm -r "$DATA/gpu"
	run -1 --separate-stderr hook prepare begin
	assert_regex "${stderr_lines[-1]}" "^vfsentinel: the VF health state is unavailable \(.*vfstore init.*\)$"
	assert_file_not_exists "$DATA/gpu"
}

@test "a lock held past libvirt.lock_timeout refuses prepare and is logged by release (exit 0, claim kept)" {
	echo "libvirt.lock_timeout = 1" >>"$VFSENTINEL_CONF"
	claim $VF4 $UUID1
	domain_xml hostdev=$VF4 >"$T/dom.xml"
	lock_hold "$DATA/gpu/lock"
	run -1 --separate-stderr hook prepare begin
	assert_equal "${stderr_lines[-1]}" "vfsentinel: gave up waiting 1 s for the store lock $DATA/gpu/lock; try again"
	run -0 --separate-stderr hook release end
	assert_equal "$(jq -r .level <<<"${stderr_lines[-1]}")" error
	assert_output --partial ""
	lock_release
	assert_equal "$(claim_field $UUID1 vf_address)" $VF4
}

@test "started completes the claim: QMP monitor socket, vsock endpoint, console log" {
	domain_xml hostdev=$VF4 profile="$P12" >"$T/dom.xml"
	run -0 hook prepare begin
	mkdir -p "$QEMU_DIR/domain-7-vm-a"
	unix_listen "$QEMU_DIR/domain-7-vm-a/monitor.sock"
	domain_xml id=7 hostdev=$VF4 profile="$P12" cid=42 \
		console="$T/console.log" >"$T/dom.xml"
	run -0 --separate-stderr hook started begin
	assert_equal "$(claim_field $UUID1 control_socket)" "$QEMU_DIR/domain-7-vm-a/monitor.sock"
	assert_equal "$(claim_field $UUID1 vsock)" vsock:42:2222
	assert_equal "$(claim_field $UUID1 app_log)" "$T/console.log"
	assert_equal "$(jq -r .msg <<<"${stderr_lines[-1]}")" "completed the claim"
	# Again: nothing changes, nothing is written.
	sum=$(sha "$DATA/gpu/vf-claims.json")
	run -0 --separate-stderr hook started begin
	assert_equal "$(sha "$DATA/gpu/vf-claims.json")" "$sum"
	assert_equal "$(jq -r .msg <<<"${stderr_lines[-1]}")" "the claim is complete"
}

@test "started warns when the domain gives the sentinel nothing to check, naming the XML to add" {
	domain_xml hostdev=$VF4 profile="$P12" >"$T/dom.xml"
	run -0 hook prepare begin
	# virt-install's default console: a pty without a log, no channel.
	domain_xml id=5 hostdev=$VF4 profile="$P12" \
		extra="<serial type='pty'><target port='0'/></serial><console type='pty'><target type='serial' port='0'/></console>" \
		>"$T/dom.xml"
	run -0 --separate-stderr hook started begin
	assert_equal "$output" ""
	run -0 jq -r 'select(.msg == "the domain gives the sentinel nothing to check") | [.level, .vf, .instance_id, .domain] | join(" ")' <<<"$stderr"
	assert_output "warn $VF4 $UUID1 vm-a"
	run -0 jq -r 'select(.level == "warn") | .fix' <<<"$stderr"
	assert_output --partial "<log file='/var/log/libvirt/qemu/vm-a-console.log' append='off'/>"
	assert_output --partial "<channel type='unix'><target type='virtio' name='org.vfsentinel.0'/></channel>"
	# A logged console, a channel or a vsock CID: no warning.
	for dev in console="$T/c.log" cid=42 channel="$T/ch.sock" \
		extra="<serial type='pty'><log file='$T/pty.log'/></serial>"; do
		domain_xml id=5 hostdev=$VF4 profile="$P12" "$dev" >"$T/dom.xml"
		rm -f "$DATA/gpu/vf-claims.json"
		claim $VF4 $UUID1
		run -0 --separate-stderr hook started begin
		run -1 grep -c 'nothing to check' <<<"$stderr"
	done
}

@test "release end releases and deconfigures the domain's VF, audited; again is exit 0" {
	domain_xml hostdev=$VF4 profile="$P12" >"$T/dom.xml"
	run -0 hook prepare begin
	assert_equal "$(current $VF4)" 1160
	run -0 --separate-stderr hook release end
	assert_equal "$(jq -c .claims "$DATA/gpu/vf-claims.json")" '[]'
	assert_equal "$(current $VF4)" 0
	run -0 jq -c '[.prog, .command, .vf, .instance_id, .deconfigured]' "$DATA/gpu/audit.jsonl"
	assert_output "[\"libvirt-hook\",\"release\",\"$VF4\",\"$UUID1\",true]"
	sum=$(sha "$DATA/gpu/vf-claims.json")
	run -0 --separate-stderr hook release end
	assert_equal "$(sha "$DATA/gpu/vf-claims.json")" "$sum"
	assert_equal "$(jq -r .msg <<<"${stderr_lines[-1]}")" "the domain holds no claim"
}

@test "libvirt.deconfigure = false releases the claim and keeps the VF's type" {
	echo "libvirt.deconfigure = false" >>"$VFSENTINEL_CONF"
	domain_xml hostdev=$VF4 profile="$P12" >"$T/dom.xml"
	run -0 hook prepare begin
	run -0 hook release end
	assert_equal "$(jq -c .claims "$DATA/gpu/vf-claims.json")" '[]'
	assert_equal "$(current $VF4)" 1160
	# SPEC 8.1: a configuration error refuses prepare of a VF domain;
	# every other phase exits 0 with an error line.
	echo "libvirt.deconfigure = yes" >>"$VFSENTINEL_CONF"
	run -1 --separate-stderr hook prepare begin
	assert_equal "${stderr_lines[-1]}" "vfsentinel: cannot load $VFSENTINEL_CONF:$(wc -l <"$VFSENTINEL_CONF"): invalid value (expected true or false): libvirt.deconfigure; starts of domains with vGPU VFs are refused until it is fixed (check it with vfstore config)"
	run -0 --separate-stderr hook release end
	assert_equal "$(jq -r .level <<<"${stderr_lines[-1]}")" error
	assert_equal "$(jq -r .error <<<"${stderr_lines[-1]}")" "$VFSENTINEL_CONF:$(wc -l <"$VFSENTINEL_CONF"): invalid value (expected true or false): libvirt.deconfigure"
}

@test "release end releases a claim only when its VF is one of the domain's: a UUID alone is not enough" {
	for deconf in false true; do
		echo "libvirt.deconfigure = $deconf" >>"$VFSENTINEL_CONF"
		# Another launcher's claim on VF5 under the same UUID.
		rm -f "$DATA/gpu/vf-claims.json"
		claim $VF5 $UUID1
		echo 1160 >"$(vfdir $VF5)/nvidia/current_vgpu_type"
		domain_xml hostdev=$VF4 >"$T/dom.xml"
		sum=$(sha "$DATA/gpu/vf-claims.json")
		run -0 --separate-stderr hook release end
		assert_equal "$output" ""
		assert_equal "$(sha "$DATA/gpu/vf-claims.json")" "$sum"
		assert_equal "$(current $VF5)" 1160
		assert_equal "$(jq -r '[.level, .msg, .claimed_vf] | join(" ")' <<<"${stderr_lines[-1]}")" \
			"warn kept the claim: its VF is not one of the domain's $VF5"
		assert_file_not_exists "$DATA/gpu/audit.jsonl"
		# The same domain naming VF5 (hostdev or metadata) releases it.
		domain_xml meta_vf=$VF5 >"$T/dom.xml"
		run -0 --separate-stderr hook release end
		assert_equal "$(jq -c .claims "$DATA/gpu/vf-claims.json")" '[]'
		rm -f "$DATA/gpu/audit.jsonl"
	done
}

@test "started completes only a claim of one of the domain's VFs: a UUID alone is not enough" {
	# Another launcher's claim on VF5 under the same UUID.
	claim $VF5 $UUID1
	mkdir -p "$QEMU_DIR/domain-7-vm-a"
	unix_listen "$QEMU_DIR/domain-7-vm-a/monitor.sock"
	domain_xml id=7 hostdev=$VF4 cid=42 console=/dev/zero >"$T/dom.xml"
	sum=$(sha "$DATA/gpu/vf-claims.json")
	run -0 --separate-stderr hook started begin
	assert_equal "$output" ""
	assert_equal "$(sha "$DATA/gpu/vf-claims.json")" "$sum"
	assert_equal "$(jq -r '[.level, .msg, .claimed_vf] | join(" ")' <<<"${stderr_lines[-1]}")" \
		"warn kept the claim as it is: its VF is not one of the domain's $VF5"
}

@test "release keeps the claim while a process holds the VF's VFIO device" {
	domain_xml hostdev=$VF4 profile="$P12" >"$T/dom.xml"
	run -0 hook prepare begin
	mkdir -p "$T/groups/87" "$T/proc/1234/fd"
	ln -s "../../../groups/87" "$(vfdir $VF4)/iommu_group"
	ln -s /dev/vfio/87 "$T/proc/1234/fd/9"
	run -0 --separate-stderr libvirt-hook --proc-root "$T" -- vm-a release end - <"$T/dom.xml"
	assert_equal "$(jq -r .msg <<<"${stderr_lines[-1]}")" "kept the claim: cannot deconfigure the VF"
	assert_equal "$(claim_field $UUID1 vf_address)" $VF4
	assert_equal "$(current $VF4)" 1160
}

@test "reconnect adopts a running domain's configured VF without a claim, and completes it" {
	echo 1160 >"$(vfdir $VF4)/nvidia/current_vgpu_type"
	mkdir -p "$QEMU_DIR/domain-3-vm-a"
	unix_listen "$QEMU_DIR/domain-3-vm-a/monitor.sock"
	domain_xml id=3 hostdev=$VF4 console="$T/c.log" >"$T/dom.xml"
	run -0 --separate-stderr hook reconnect begin
	assert_equal "$(claim_field $UUID1 vf_address)" $VF4
	assert_equal "$(claim_field $UUID1 type_id)" 1160
	assert_equal "$(claim_field $UUID1 profile)" "$P12"
	assert_equal "$(claim_field $UUID1 control_socket)" "$QEMU_DIR/domain-3-vm-a/monitor.sock"
	assert_equal "$(claim_field $UUID1 app_log)" "$T/c.log"
	# No process holds the (fake) VF's VFIO device: adopted with a warning
	# that names the type it found (an empty type_id before: the line
	# read claimlife_adopt's stack buffer after it returned).
	assert_equal "$(jq -r .level <<<"${stderr_lines[0]}")" warn
	assert_equal "$(jq -r .msg <<<"${stderr_lines[0]}")" \
	    "adopted the running domain's VF"
	assert_equal "$(jq -r .type_id <<<"${stderr_lines[0]}")" 1160
	assert_equal "$(current $VF4)" 1160
}

@test "reconnect adopts nothing that is quarantined, drained or configured otherwise (exit 0)" {
	echo 1160 >"$(vfdir $VF4)/nvidia/current_vgpu_type"
	quarantine $VF4
	domain_xml id=3 hostdev=$VF4 >"$T/dom.xml"
	run -0 --separate-stderr hook reconnect begin
	assert_equal "$(jq -r .reason <<<"${stderr_lines[-1]}")" "VF $VF4 is quarantined"
	assert_file_not_exists "$DATA/gpu/vf-claims.json"
	vfstore --data-dir "$DATA" clear --vf $VF4 >/dev/null 2>&1
	vfstore --data-dir "$DATA" --sysfs-root "$SYSFS" drain --vf $VF4 \
		--reason test >/dev/null 2>&1
	run -0 --separate-stderr hook reconnect begin
	assert_equal "$(jq -r .reason <<<"${stderr_lines[-1]}")" "VF $VF4 is drained"
	assert_file_not_exists "$DATA/gpu/vf-claims.json"
	domain_xml id=3 hostdev=$VF5 profile="$P24" >"$T/dom.xml"
	echo 1160 >"$(vfdir $VF5)/nvidia/current_vgpu_type"
	run -0 --separate-stderr hook reconnect begin
	assert_equal "$(jq -r .reason <<<"${stderr_lines[-1]}")" "VF $VF5 is configured with vGPU type 1160, not profile 'NVIDIA L40S-24Q'"
	assert_file_not_exists "$DATA/gpu/vf-claims.json"
}

@test "a domain that names its VF only in vfsentinel's metadata is claimed; an unknown one is refused" {
	domain_xml meta_vf=e3:00.5 profile="$P24" >"$T/dom.xml"
	run -0 --separate-stderr hook prepare begin
	assert_equal "$(claim_field $UUID1 vf_address)" $VF5
	assert_equal "$(current $VF5)" 1161
	domain_xml uuid=$UUID2 meta_vf=0000:e3:01.0 >"$T/dom.xml"
	run -1 --separate-stderr hook prepare begin
	assert_equal "${stderr_lines[-1]}" "vfsentinel: VF 0000:e3:01.0 named in the domain's vfsentinel metadata is not a vGPU VF of this host; fix the metadata"
}

@test "a domain without a VF of this host: exit 0 and the stores not even read" {
	echo garbage >"$DATA/gpu/vf-health.json"
	echo garbage >"$DATA/gpu/vf-claims.json"
	chmod 000 "$DATA/gpu/vf-health.json"
	# A NIC VF (not NVIDIA's vendor-VFIO: no creatable_vgpu_types).
	mk_pcifn "$SYSFS" 0000:17:00.2 8086 1889 020000
	domain_xml hostdev=0000:17:00.2 >"$T/dom.xml"
	for op in "prepare begin" "started begin" "release end" "reconnect begin"; do
		# shellcheck disable=SC2086 # two words
		# (LeakSanitizer cannot run under ptrace: off for this run.)
		ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0 run -0 \
			--separate-stderr strace -f -e trace=openat -o "$T/trace" \
			libvirt-hook vm-a $op - <"$T/dom.xml"
		assert_equal "$stderr" ""
		run -1 grep -E "$DATA/gpu" "$T/trace"
	done
	domain_xml >"$T/dom.xml"
	run -0 --separate-stderr hook prepare begin
	assert_equal "$stderr" ""
}

@test "other operations exit 0 at once, without reading the XML" {
	echo 'not xml' >"$T/dom.xml"
	for op in "start begin" "stopped end" "prepare end" "migrate begin" "restore begin"; do
		# shellcheck disable=SC2086 # two words
		run -0 --separate-stderr libvirt-hook vm-a $op - <"$T/dom.xml"
		assert_equal "$stderr" ""
	done
	# SPEC 8.1: XML that is not well-formed (libvirt never sends it)
	# is 0 in every phase, with an error line; nothing else is read.
	for op in "prepare begin" "started begin" "release end" "reconnect begin"; do
		# shellcheck disable=SC2086 # two words
		run -0 --separate-stderr hook $op
		assert_equal "$(jq -r .level <<<"${stderr_lines[-1]}")" error
		assert_equal "$(jq -r .error <<<"${stderr_lines[-1]}")" "domain XML is not well-formed"
	done
	assert_file_not_exists "$DATA/gpu/vf-claims.json"
}

@test "hostile XML: entities and external DTD are never expanded or fetched; bad addresses are refused; any size is read" {
	{
		echo '<?xml version="1.0"?><!DOCTYPE domain [<!ENTITY a "aaaaaaaaaa">'
		echo '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">'
		echo '<!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;"><!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;">'
		echo '<!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;"><!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;">]>'
		domain_xml name='&g;' hostdev=$VF4
	} >"$T/laughs.xml"
	# libvirt never writes a DOCTYPE: such XML is not libvirt's, and is
	# 0 with an error line (SPEC 8.1), its entities never expanded.
	run -0 --separate-stderr timeout 10 libvirt-hook vm-a prepare begin - <"$T/laughs.xml"
	assert_regex "$(jq -r .error <<<"${stderr_lines[-1]}")" "^domain XML (has a DOCTYPE|is not well-formed)"
	{
		echo '<?xml version="1.0"?><!DOCTYPE domain SYSTEM "http://127.0.0.1:9/x.dtd" [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
		domain_xml name='&x;' hostdev=$VF4
	} >"$T/xxe.xml"
	run -0 --separate-stderr libvirt-hook vm-a prepare begin - <"$T/xxe.xml"
	assert_equal "$(jq -r .error <<<"${stderr_lines[-1]}")" "domain XML has a DOCTYPE (libvirt never writes one)"
	refute_output --partial "root:"
	assert_file_not_exists "$DATA/gpu/vf-claims.json"
	{
		domain_xml hostdev=$VF4 | sed '$d'
		head -c 1100000 /dev/zero | tr '\0' ' '
		echo '</domain>'
	} >"$T/big.xml"
	# Parsed whatever its size (SPEC 8.1): this one is claimed.
	run -0 --separate-stderr libvirt-hook vm-a prepare begin - <"$T/big.xml"
	assert_equal "$(claim_field $UUID1 vf_address)" $VF4
	run -0 --separate-stderr libvirt-hook vm-a release end - <"$T/big.xml"
	assert_equal "$(jq -c .claims "$DATA/gpu/vf-claims.json")" '[]'
	# A <hostdev> address that is no PCI address names no VF of this
	# host: not vfsentinel's domain (SPEC 8.1), 0, nothing claimed.
	domain_xml hostdev=$VF4 | sed "s/bus='0xe3'/bus='0x1e3'/" >"$T/dom.xml"
	run -0 --separate-stderr hook prepare begin
	assert_equal "$(jq -c .claims "$DATA/gpu/vf-claims.json")" '[]'
	domain_xml hostdev=$VF4 | sed "s|slot='0x00'|slot='0;touch pwned'|" >"$T/dom.xml"
	(cd "$T" && run -0 --separate-stderr hook prepare begin)
	assert_equal "$(jq -c .claims "$DATA/gpu/vf-claims.json")" '[]'
	# With vfsentinel's metadata as well, it is refused.
	domain_xml hostdev=$VF4 profile="$P12" | sed "s/bus='0xe3'/bus='0x1e3'/" >"$T/dom.xml"
	run -1 --separate-stderr hook prepare begin
	assert_equal "${stderr_lines[-1]}" "vfsentinel: bad domain XML: <hostdev> PCI source address is invalid (domain, bus, slot, function)"
	domain_xml meta_vf='e3:00.4;id' >"$T/dom.xml"
	run -1 --separate-stderr hook prepare begin
	assert_equal "${stderr_lines[-1]}" 'vfsentinel: bad domain XML: invalid metadata VF address "e3:00.4;id" (expected DDDD:BB:DD.F or BB:DD.F, hex)'
	domain_xml hostdev=$VF4 uuid='$(touch pwned)' >"$T/dom.xml"
	run -1 --separate-stderr hook prepare begin
	assert_equal "${stderr_lines[-1]}" "vfsentinel: bad domain XML: <uuid> is not a UUID"
	domain_xml hostdev=$VF4 console='relative/log' >"$T/dom.xml"
	run -1 --separate-stderr hook prepare begin
	assert_equal "${stderr_lines[-1]}" "vfsentinel: bad domain XML: <source path=...> is not an absolute path"
	assert_equal "$(jq -c .claims "$DATA/gpu/vf-claims.json")" '[]'
	# The same bad value in a domain with no VF of vfsentinel's: 0.
	domain_xml console='relative/log' >"$T/dom.xml"
	run -0 --separate-stderr hook prepare begin
	assert_equal "$(jq -c .claims "$DATA/gpu/vf-claims.json")" '[]' 
	assert_file_not_exists "$T/pwned"
}

@test "names with shell metacharacters are data: logged as JSON, never run" {
	domain_xml name='vm`touch pwned`$(touch pwned2);|&amp;' hostdev=$VF4 \
		profile="$P12" console="$T/a b;\$(touch pwned3).log" >"$T/dom.xml"
	cd "$T"
	run -0 --separate-stderr hook prepare begin
	assert_equal "$(jq -r .domain <<<"${stderr_lines[0]}")" 'vm`touch pwned`$(touch pwned2);|&'
	run -0 --separate-stderr hook started begin
	assert_equal "$(claim_field $UUID1 app_log)" "$T/a b;\$(touch pwned3).log"
	run -0 --separate-stderr hook release end
	assert_file_not_exists "$T/pwned"
	assert_file_not_exists "$T/pwned2"
	assert_file_not_exists "$T/pwned3"
}

# as_sentinel CMD...: CMD as the sentinel's poller runs (nobody here,
# the store's owner), holding only CAP_DAC_READ_SEARCH.
as_sentinel() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		--inh-caps=-all,+dac_read_search \
		--ambient-caps=-all,+dac_read_search "$@"
}

# can_connect SOCKET: the sentinel's user may connect to SOCKET.
can_connect() {
	as_sentinel socat -u /dev/null "UNIX-CONNECT:$1" 2>/dev/null
}

@test "started opens the domain's channel socket at libvirt's place to the store's owner, and no other socket; release takes it back" {
	need_tool setpriv socat
	local dir=$QEMU_DIR/channel/target/domain-7-vm-a other=$T/other.sock
	chown nobody "$DATA/gpu"
	mkdir -p "$dir"
	unix_listen "$dir/org.vfsentinel.0"
	unix_listen "$other"
	# QEMU's mode on a stock host: srwxrwxr-x, not the user's.
	chmod 0775 "$dir/org.vfsentinel.0" "$other"
	run -1 can_connect "$dir/org.vfsentinel.0"
	domain_xml hostdev=$VF4 >"$T/dom.xml"
	run -0 hook prepare begin
	domain_xml id=7 hostdev=$VF4 channel="$dir/org.vfsentinel.0" >"$T/dom.xml"
	run -0 --separate-stderr hook started begin
	assert_equal "$output" ""
	run -0 can_connect "$dir/org.vfsentinel.0"
	run -1 can_connect "$other"
	run -0 --separate-stderr hook release end
	run -1 can_connect "$dir/org.vfsentinel.0"
	# A socket elsewhere, a link at libvirt's place, another domain's
	# directory: no grant, a warning naming what to do.
	ln -s "$other" "$dir/link.0"
	mkdir -p "$QEMU_DIR/channel/target/domain-8-vm-b"
	unix_listen "$QEMU_DIR/channel/target/domain-8-vm-b/org.vfsentinel.0"
	chmod 0775 "$QEMU_DIR/channel/target/domain-8-vm-b/org.vfsentinel.0"
	for ch in "$other" "$dir/link.0" \
		"$QEMU_DIR/channel/target/domain-8-vm-b/org.vfsentinel.0"; do
		domain_xml hostdev=$VF4 >"$T/dom.xml"
		run -0 hook prepare begin
		domain_xml id=7 hostdev=$VF4 channel="$ch" >"$T/dom.xml"
		run -0 --separate-stderr hook started begin
		run -0 jq -r 'select(.msg == "cannot give the sentinel'"'"'s user the channel socket") | [.level, .path] | join(" ")' <<<"$stderr"
		assert_output "warn $ch"
		run -0 jq -r 'select(.level == "warn") | .fix' <<<"$stderr"
		assert_output --partial "setfacl -m u:vfsentinel:rw"
		run -0 hook release end
	done
	run -1 can_connect "$other"
	run -1 can_connect "$QEMU_DIR/channel/target/domain-8-vm-b/org.vfsentinel.0"
}

# boot_and_end WORD: prepare and started (a vsock CID: the guest could
# prove itself), libvirt's log ending with "shutting down, reason=WORD"
# (none for "", no log at all for "-"), then release end.
boot_and_end() {
	domain_xml hostdev=$VF4 profile="$P12" >"$T/dom.xml"
	run -0 hook prepare begin
	mkdir -p "$QEMU_DIR/domain-7-vm-a" "$T/qlog"
	domain_xml id=7 hostdev=$VF4 profile="$P12" cid=42 >"$T/dom.xml"
	run -0 hook started begin
	rm -f "$T/qlog/vm-a.log"
	[ "$1" = - ] ||
		printf '2026-12-07 10:00:00.000+0000: starting up\n' >"$T/qlog/vm-a.log"
	if [ -n "$1" ] && [ "$1" != - ]; then
		printf '2026-12-07 10:00:09.000+0000: shutting down, reason=%s\n' "$1" \
			>>"$T/qlog/vm-a.log"
	fi
	run -0 --separate-stderr hook release end
}

@test "release end reads libvirt's log: destroyed or crashed before the guest's OK make the VF suspect" {
	echo "libvirt.log_dir = $T/qlog" >>"$VFSENTINEL_CONF"
	for word in destroyed crashed; do
		rm -f "$DATA/gpu/vf-suspect.json"
		boot_and_end $word
		run -0 jq -c '.suspects[] | [.vf_address, .instance_id, .ended, .source]' \
			"$DATA/gpu/vf-suspect.json"
		assert_output "[\"$VF4\",\"$UUID1\",\"unclean\",\"libvirt-hook: reason=$word\"]"
		run -0 jq -r 'select(.level == "warn") | .msg' <<<"$stderr"
		assert_output --partial "the VF is suspect"
	done
	run -0 jq -r 'select(.command == "suspect") | .prog' "$DATA/gpu/audit.jsonl"
	assert_line libvirt-hook
}

@test "release end: a shutdown, a save, no shutdown line or no log at all suspect nothing" {
	echo "libvirt.log_dir = $T/qlog" >>"$VFSENTINEL_CONF"
	for word in shutdown saved migrated "" -; do
		boot_and_end "$word"
		[ ! -e "$DATA/gpu/vf-suspect.json" ]
	done
}

@test "prepare refuses a suspect VF under suspect.placement exclude, naming the verification; takes it with a warning under last" {
	mkdir -p "$DATA/gpu"
	printf '{"version":1,"suspects":[{"vf_address":"%s","instance_id":"old","assigned_at":"2026-12-07T10:00:00Z","ended_at":"2026-12-07T10:00:09Z","ended":"unclean","source":"libvirt-hook: reason=crashed"}]}' \
		$VF4 >"$DATA/gpu/vf-suspect.json"
	echo 'suspect.placement = exclude' >>"$VFSENTINEL_CONF"
	domain_xml hostdev=$VF4 profile="$P12" >"$T/dom.xml"
	run -1 --separate-stderr hook prepare begin
	assert_equal "$output" ""
	[[ ${stderr_lines[-1]} == "vfsentinel: VF $VF4 is suspect"*"vfrecover --verify-suspects"* ]]
	sed -i 's/^suspect.placement = exclude$/suspect.placement = last/' "$VFSENTINEL_CONF"
	run -0 --separate-stderr hook prepare begin
	run -0 jq -r 'select(.level == "warn") | .msg' <<<"$stderr"
	assert_output --partial "suspect VF"
}
