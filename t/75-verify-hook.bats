#!/usr/bin/env bats
# 75-verify-hook.bats - the token handshake of SPEC.md 8.2 between
# vfrecover --verify-suspects and libvirt-hook, without libvirt: the
# verify command runs the hook as libvirtd would for the verification
# domain. Only the domain whose <vfsentinel:vgpu verify-token=...> is the
# verification claim's token takes it over (domain_uuid, the profile's
# type written, not refused as suspect) and completes it at started;
# at release end the hook neither releases it nor judges its end; every
# other domain is refused with 8.2's sentence. Also suspect.trust_ok
# and the recovery.verify_wait rule.

load helpers
load lib/placement
load lib/libvirt

setup() {
	vfs_setup
	hook_host
	PIDS=""
	CLAIMS=$DATA/gpu/vf-claims.json
	SUSPECT=$DATA/gpu/vf-suspect.json
	cat >>"$VFSENTINEL_CONF" <<-EOF
	libvirt.log_dir = $T/qlog
	recovery.step_timeout = 20
	EOF
	mkdir -p "$T/qlog"
	printf '{"version":1,"suspects":[{"vf_address":"%s","instance_id":"old","assigned_at":"2026-12-07T10:00:00Z","ended_at":"2026-12-07T10:00:09Z","ended":"unclean","source":"libvirt-hook: reason=crashed","profile":"%s"}]}' \
		$VF4 "$P12" >"$SUSPECT"
}

teardown() {
	kill_pids
}

# meta_xml TOKEN [UUID] [ID]: the verification domain as libvirt-verify
# writes it (metadata only, a vsock CID), on stdout. Plain sh: the verify
# command's shell keeps no bash functions.
meta_xml() {
	printf "<domain type='qemu'%s>\n" "${3:+ id='$3'}"
	printf '  <name>vfsentinel-verify-0000-e3-00-4</name>\n'
	printf '  <uuid>%s</uuid>\n' "${2:-$UUID2}"
	printf '  <metadata><vfsentinel:vgpu xmlns:vfsentinel="%s" vf="%s" profile="%s" verify-token="%s"/></metadata>\n' \
		"$HOOK_NS" "$VF4" "$P12" "$1"
	printf "  <devices><vsock model='virtio'><cid auto='no' address='9'/></vsock></devices>\n</domain>\n"
}

# A verify command that plays libvirtd: other domains first (refused),
# then the verification domain through prepare, started and release,
# with libvirt's log saying it was destroyed; each step's exit and
# stderr's last line into $T/steps; exit $VEXIT (default 0).
verify_command() {
	{
		echo '#!/bin/bash'
		declare -f meta_xml
	} >"$T/v.sh"
	cat >>"$T/v.sh" <<-'EOF'
	step() { # NAME TOKEN OP SUB [UUID] [ID]
		local rc=0 name=$1 tok=$2
		shift 2
		meta_xml "$tok" "${3:-}" "${4:-}" >"$T/v.xml"
		libvirt-hook vm "$1" "$2" - <"$T/v.xml" 2>"$T/v.err" || rc=$?
		echo "$name $rc $(tail -1 "$T/v.err")" >>"$T/steps"
		jq -c '.claims[]' "$CLAIMS" >>"$T/claims-$name"
		cat "$SYSFS/sys/bus/pci/devices/$VF4/nvidia/current_vgpu_type" >"$T/type-$name"
	}
	step notoken "" prepare begin
	step wrongtoken 0123456789abcdef0123456789abcdef prepare begin
	step prepare "$VFSENTINEL_VERIFY_TOKEN" prepare begin
	step other "$VFSENTINEL_VERIFY_TOKEN" prepare begin 11111111-2222-3333-4444-555555555555
	mkdir -p "$QEMU_DIR/domain-3-vfsentinel-verify"
	step started "$VFSENTINEL_VERIFY_TOKEN" started begin "" 3
	step reconnect "$VFSENTINEL_VERIFY_TOKEN" reconnect begin "" 3
	printf '2026-12-07 10:00:09.000+0000: shutting down, reason=destroyed\n' \
		>"$T/qlog/vfsentinel-verify-0000-e3-00-4.log"
	step release "$VFSENTINEL_VERIFY_TOKEN" release end "" 3
	exit "${VEXIT:-0}"
	EOF
	chmod +x "$T/v.sh"
	echo "recovery.verify_command = $T/v.sh" >>"$VFSENTINEL_CONF"
	export T CLAIMS VF4 QEMU_DIR P12 UUID2 HOOK_NS SYSFS
}

@test "verify-token: only the verification domain takes the claim over; started completes it; release end leaves it to vfrecover" {
	verify_command
	run -0 --separate-stderr vfrecover --verify-suspects
	assert_equal "$(jq -r .result <<<"$output")" pass
	tok=$(jq -r .verify_token "$T/claims-notoken")
	[[ $tok =~ ^[0-9a-f]{32}$ ]]
	refusal="vfsentinel: VF $VF4 is being verified (instance verify-$VF4); it cannot be placed until the verification ends"
	assert_equal "$(sed -n 1p "$T/steps")" "notoken 1 $refusal"
	assert_equal "$(sed -n 2p "$T/steps")" "wrongtoken 1 $refusal"
	run -0 sed -n 3p "$T/steps"
	assert_output --regexp '^prepare 0 '
	# Another domain with the same token does not take a claim taken.
	assert_equal "$(sed -n 4p "$T/steps")" "other 1 $refusal"
	run -0 sed -n 5,7p "$T/steps"
	assert_output --regexp '^started 0 '
	# A libvirtd restart meanwhile: reconnect finds the claim by its
	# domain_uuid and keeps it (no adoption, no error).
	assert_line --regexp '^reconnect 0 '
	refute_line --regexp '^reconnect 0 .*"level":"error"'
	assert_equal "$(jq -c '[.instance_id, .domain_uuid, .vsock]' "$T/claims-reconnect")" "[\"verify-$VF4\",\"$UUID2\",\"vsock:9:2222\"]"
	assert_line --regexp '^release 0 .*left the verification.s claim to vfrecover'
	# Before the takeover: no domain, no type. After: the domain's UUID,
	# the profile's type on the VF; started adds the guest endpoint.
	assert_equal "$(jq -c '[.instance_id, .domain_uuid, .profile]' "$T/claims-notoken")" "[\"verify-$VF4\",null,\"$P12\"]"
	assert_equal "$(cat "$T/type-wrongtoken")" 0
	assert_equal "$(jq -c '[.instance_id, .domain_uuid, .type_id, .verify_token]' "$T/claims-prepare")" "[\"verify-$VF4\",\"$UUID2\",\"1160\",\"$tok\"]"
	assert_equal "$(cat "$T/type-prepare")" 1160
	assert_equal "$(jq -r .vsock "$T/claims-started")" "vsock:9:2222"
	# release end kept the claim and judged nothing: no second suspicion
	# (which would have quarantined the VF).
	assert_equal "$(jq -c '[.instance_id, .domain_uuid]' "$T/claims-release")" "[\"verify-$VF4\",\"$UUID2\"]"
	run -0 jq -r 'select(.command == "suspect" or .command == "quarantine") | .command' "$DATA/gpu/audit.jsonl"
	assert_output ""
	# vfrecover released it, deconfigured the VF, cleared the suspicion.
	assert_equal "$(jq -c .claims "$CLAIMS")" '[]'
	assert_equal "$(current $VF4)" 0
	assert_equal "$(jq -c .suspects "$SUSPECT")" '[]'
}

@test "verify-token: a domain on a VF no verification holds is judged as before (suspect refused under exclude)" {
	echo "recovery.verify_command = /bin/true" >>"$VFSENTINEL_CONF"
	meta_xml 0123456789abcdef0123456789abcdef >"$T/dom.xml"
	run -1 --separate-stderr hook prepare begin
	[[ ${stderr_lines[-1]} == "vfsentinel: VF $VF4 is suspect"* ]]
}

# ended_after_ok TRUST: a domain that said OK (ok_at) and whose console
# holds the OK marker, destroyed within the window; suspect.trust_ok =
# TRUST. Prints the suspects' instance ids.
ended_after_ok() {
	rm -f "$SUSPECT"
	sed -i '/^suspect.trust_ok/d' "$VFSENTINEL_CONF"
	echo "suspect.trust_ok = $1" >>"$VFSENTINEL_CONF"
	echo "VFSENTINEL-HEALTH: OK" >"$T/console.log"
	domain_xml hostdev=$VF4 profile="$P12" console="$T/console.log" >"$T/dom.xml"
	hook prepare begin >/dev/null 2>&1
	mkdir -p "$QEMU_DIR/domain-7-vm-a"
	domain_xml id=7 hostdev=$VF4 profile="$P12" console="$T/console.log" >"$T/dom.xml"
	hook started begin >/dev/null 2>&1
	jq '.claims[0].ok_at = "2026-12-07T10:00:01Z"' "$CLAIMS" >"$T/c" && mv "$T/c" "$CLAIMS"
	printf '2026-12-07 10:00:09.000+0000: shutting down, reason=destroyed\n' >"$T/qlog/vm-a.log"
	hook release end >/dev/null 2>&1
	jq -r '.suspects[]?.instance_id' "$SUSPECT" 2>/dev/null || true
}

@test "suspect.trust_ok: true (default) trusts the assignment's OK; false suspects an unclean end all the same, with the profile" {
	rm -f "$SUSPECT"
	run -0 ended_after_ok true
	assert_output ""
	run -0 ended_after_ok false
	assert_output "$UUID1"
	assert_equal "$(jq -r '.suspects[0].profile' "$SUSPECT")" "$P12"
	# An assignment that could never prove itself is still not suspected.
	rm -f "$SUSPECT"
	domain_xml hostdev=$VF4 profile="$P12" >"$T/dom.xml"
	run -0 hook prepare begin
	run -0 hook release end
	[ ! -e "$SUSPECT" ]
}

@test "recovery.verify_wait must be less than recovery.step_timeout: 78 for vfrecover and vfstore config, skipped by the hook" {
	printf 'recovery.verify_wait = 20\n' >>"$VFSENTINEL_CONF"
	run -78 --separate-stderr vfstore config
	assert_output ""
	[[ $stderr == *"recovery.verify_wait 20 must be less than recovery.step_timeout 20"* ]]
	run -78 --separate-stderr vfrecover --verify-suspects
	domain_xml hostdev=$VF5 profile="$P12" >"$T/dom.xml"
	run -0 --separate-stderr hook prepare begin
	sed -i 's/^recovery.verify_wait = 20$/recovery.verify_wait = 19/' "$VFSENTINEL_CONF"
	run -0 --separate-stderr vfstore config
	assert_equal "$(jq -c '[."recovery.verify_wait", ."recovery.verify_libvirt_uri", ."suspect.trust_ok"]' <<<"$output")" '[19,"qemu:///system",true]'
	# Not set, the default 90 is not held against a shorter step_timeout.
	sed -i '/^recovery.verify_wait/d' "$VFSENTINEL_CONF"
	run -0 --separate-stderr vfstore config
}

# fake_virsh: a virsh on PATH that records its calls in $T/virsh.log
# and each created XML in $T/created.xml; create exits $VIRSH_RC (0),
# printing $VIRSH_ERR.
fake_virsh() {
	mkdir -p "$T/fakebin"
	cat >"$T/fakebin/virsh" <<-EOF
	#!/bin/sh
	echo "\$*" >>"$T/virsh.log"
	for a; do f=\$a; done
	case " \$* " in *" create "*) cp "\$f" "$T/created.xml"
		[ -z "\${VIRSH_ERR:-}" ] || echo "\$VIRSH_ERR" >&2
		exit "\${VIRSH_RC:-0}" ;;
	esac
	EOF
	chmod +x "$T/fakebin/virsh"
	PATH=$T/fakebin:$PATH
}

# template: a domain template with a name, a UUID, another namespace's
# metadata, an old vfsentinel element and a PCI hostdev.
template() {
	cat >"$T/tmpl.xml" <<-'EOF'
	<domain type='qemu'>
	  <name>template</name>
	  <uuid>00000000-0000-0000-0000-000000000000</uuid>
	  <metadata>
	    <nova:instance xmlns:nova="http://openstack.org/xmlns/libvirt/nova/1.1"/>
	    <v:vgpu xmlns:v='https://vfsentinel.dev/xmlns/libvirt/1' vf='0000:99:00.1'/>
	  </metadata>
	  <memory unit='MiB'>256</memory>
	  <devices>
	    <hostdev mode='subsystem' type='pci' managed='no'>
	      <source>
	        <address domain='0x0000' bus='0x99' slot='0x00' function='0x1'/>
	      </source>
	      <address type='pci' domain='0x0000' bus='0x05' slot='0x00' function='0x0'/>
	    </hostdev>
	  </devices>
	</domain>
	EOF
	cat >>"$VFSENTINEL_CONF" <<-EOF
	recovery.verify_domain_xml = $T/tmpl.xml
	recovery.verify_wait = 3
	recovery.verify_libvirt_uri = test:///x
	EOF
}

LV_VERIFY=$VFS_ROOT/integrations/libvirt/libvirt-verify

@test "libvirt-verify: the template's name, UUID, metadata and hostdev set; a pass, a fail, a timeout, each destroying the domain" {
	need_tool xmllint
	fake_virsh
	template
	echo "recovery.verify_command = $LV_VERIFY" >>"$VFSENTINEL_CONF"
	# Pass: the suspicion ends while it waits.
	(sleep 1; vfstore clear --vf $VF4 >/dev/null 2>&1) &
	run -0 --separate-stderr vfrecover --verify-suspects
	assert_equal "$(jq -c '[.result, .exit]' <<<"$output")" '["pass",0]'
	run -0 xmllint --xpath 'string(/domain/name)' "$T/created.xml"
	assert_output vfsentinel-verify-0000-e3-00-4
	run -0 xmllint --xpath 'string(/domain/uuid)' "$T/created.xml"
	[[ $output =~ ^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$ ]]
	[ "$output" != 00000000-0000-0000-0000-000000000000 ]
	run -0 xmllint --xpath "count(//*[local-name()='vgpu'])" "$T/created.xml"
	assert_output 1
	run -0 xmllint --xpath "string(//*[local-name()='vgpu']/@vf)" "$T/created.xml"
	assert_output $VF4
	run -0 xmllint --xpath "string(//*[local-name()='vgpu']/@profile)" "$T/created.xml"
	assert_output "$P12"
	run -0 xmllint --xpath "string(//*[local-name()='vgpu']/@verify-token)" "$T/created.xml"
	[[ $output =~ ^[0-9a-f]{32}$ ]]
	run -0 xmllint --xpath "count(//*[local-name()='instance'])" "$T/created.xml"
	assert_output 1
	run -0 xmllint --xpath "concat(//hostdev/source/address/@bus, ' ', //hostdev/source/address/@slot, ' ', //hostdev/source/address/@function, ' ', //hostdev/address/@bus)" "$T/created.xml"
	assert_output '0xe3 0x00 0x4 0x05'
	run -0 grep -c ' destroy vfsentinel-verify-0000-e3-00-4$' "$T/virsh.log"
	assert_output 1
	grep -q '^-q -c test:///x create ' "$T/virsh.log"
	# Fail: the VF is quarantined while it waits.
	printf '{"version":1,"suspects":[{"vf_address":"%s","instance_id":"old2","assigned_at":"2026-12-07T10:00:00Z","ended_at":"2026-12-07T10:00:09Z","ended":"unclean","source":"x"}]}' \
		$VF4 >"$SUSPECT"
	(sleep 1; vfstore quarantine --vf $VF4 >/dev/null 2>&1) &
	run -0 --separate-stderr vfrecover --verify-suspects
	assert_equal "$(jq -c '[.result, .exit]' <<<"$output")" '["fail",1]'
	vfstore clear --vf $VF4 >/dev/null 2>&1
	# Timeout: neither within recovery.verify_wait (3 s): 75, a fail.
	printf '{"version":1,"suspects":[{"vf_address":"%s","instance_id":"old3","assigned_at":"2026-12-07T10:00:00Z","ended_at":"2026-12-07T10:00:09Z","ended":"unclean","source":"x"}]}' \
		$VF4 >"$SUSPECT"
	run -0 --separate-stderr vfrecover --verify-suspects
	assert_equal "$(jq -c '[.result, .exit]' <<<"$output")" '["fail",75]'
	run -0 grep -c ' destroy vfsentinel-verify-0000-e3-00-4$' "$T/virsh.log"
	assert_output 3
	assert_equal "$(jq -c .claims "$CLAIMS")" '[]'
}

@test "libvirt-verify: 69 without a template or when virsh create fails for another reason; SIGTERM destroys and exits 75" {
	fake_virsh
	echo "recovery.verify_command = $LV_VERIFY" >>"$VFSENTINEL_CONF"
	run -1 --separate-stderr vfrecover --verify-suspects
	assert_equal "$(jq -c '[.result, .exit]' <<<"$output")" '["error",69]'
	[[ $stderr == *"no recovery.verify_domain_xml"* ]]
	# vfrecover --card's verify step (no token): nothing verified, 0.
	VFSENTINEL_VF=$VF4 VFSENTINEL_CARD=0000:e3:00.0 run -0 --separate-stderr "$LV_VERIFY"
	[[ $stderr == *"not a suspect verification"* ]]
	template
	VIRSH_RC=1 VIRSH_ERR="error: failed to connect to the hypervisor" \
		run -1 --separate-stderr vfrecover --verify-suspects
	assert_equal "$(jq -c '[.result, .exit]' <<<"$output")" '["error",69]'
	assert_equal "$(jq -r '.suspects[0].vf_address' "$SUSPECT")" $VF4
	# Stopped while it waits.
	sed -i 's/^recovery.verify_wait = 3$/recovery.verify_wait = 15/' "$VFSENTINEL_CONF"
	vfrecover --verify-suspects >"$T/out" 2>"$T/err" &
	bg=$!
	wait_for test -s "$T/created.xml"
	sleep 0.5
	kill -TERM $bg
	rc=0
	wait $bg || rc=$?
	assert_equal "$rc" 75
	assert_equal "$(jq -c '[.result]' "$T/out")" '["interrupted"]'
	# Destroyed after the refused create (in case) and after the stop.
	run -0 grep -c ' destroy vfsentinel-verify-0000-e3-00-4$' "$T/virsh.log"
	assert_output 2
	assert_equal "$(jq -r '.suspects[0].vf_address' "$SUSPECT")" $VF4
}
