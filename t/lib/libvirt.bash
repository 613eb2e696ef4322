# libvirt.bash - helpers for the libvirt hook tests (load lib/libvirt after
# helpers and lib/placement): a fake host for libvirt-hook, domain XML as
# libvirt writes it, and the hook run as libvirtd runs it.
# The jq filters are in single quotes on purpose: their $names are jq's.
# shellcheck disable=SC2016

VF4=0000:e3:00.4
VF5=0000:e3:00.5
UUID1=0b4b2e53-1d7a-4f8b-9e3b-1234567890ab
# shellcheck disable=SC2034 # for the tests that load this file
UUID2=5d7c1f20-8e1c-4c52-a3f4-0987654321cd
HOOK_NS=https://vfsentinel.dev/xmlns/libvirt/1

# hook_host: a card with two free VFs (.4 and .5), and the hook's
# configuration pointing at the test's data dir, sysfs and a QEMU state
# dir ($QEMU_DIR) that stands in for /var/lib/libvirt/qemu.
hook_host() {
	mk_card "$SYSFS" 0000:e3:00.0
	mk_vf "$SYSFS" 0000:e3:00.0 $VF4
	mk_vf "$SYSFS" 0000:e3:00.0 $VF5
	QEMU_DIR=$T/qemu
	mkdir -p "$QEMU_DIR"
	cat >"$VFSENTINEL_CONF" <<-EOF
	data_dir = $DATA
	sysfs_root = $SYSFS
	libvirt.qemu_state_dir = $QEMU_DIR
	libvirt.lock_timeout = 2
	EOF
	export QEMU_DIR
}

# domain_xml [name=N] [uuid=U] [id=I] [hostdev=VF] [meta_vf=VF]
# [profile=P] [cid=C] [channel=PATH] [console=PATH] [extra=XML]: a domain
# XML as libvirt writes it to a hook, on stdout.
domain_xml() {
	local name=vm-a uuid=$UUID1 id="" hostdev="" meta_vf="" profile=""
	local cid="" channel="" console="" extra="" kv meta=""
	for kv; do
		case $kv in
		name=*) name=${kv#name=} ;;
		uuid=*) uuid=${kv#uuid=} ;;
		id=*) id=${kv#id=} ;;
		hostdev=*) hostdev=${kv#hostdev=} ;;
		meta_vf=*) meta_vf=${kv#meta_vf=} ;;
		profile=*) profile=${kv#profile=} ;;
		cid=*) cid=${kv#cid=} ;;
		channel=*) channel=${kv#channel=} ;;
		console=*) console=${kv#console=} ;;
		extra=*) extra=${kv#extra=} ;;
		*) return 1 ;;
		esac
	done
	if [ -n "$meta_vf$profile" ]; then
		meta="<vfsentinel:vgpu xmlns:vfsentinel=\"$HOOK_NS\""
		[ -z "$meta_vf" ] || meta="$meta vf=\"$meta_vf\""
		[ -z "$profile" ] || meta="$meta profile=\"$profile\""
		meta="$meta/>"
	fi
	printf "<domain type='qemu'%s>\n" "${id:+ id='$id'}"
	printf '  <name>%s</name>\n  <uuid>%s</uuid>\n' "$name" "$uuid"
	printf '  <metadata>%s</metadata>\n' "$meta"
	printf "  <memory unit='KiB'>131072</memory>\n  <devices>\n"
	[ -z "$hostdev" ] || hostdev_xml "$hostdev"
	[ -z "$cid" ] || printf "<vsock model='virtio'><cid auto='no' address='%s'/></vsock>\n" "$cid"
	[ -z "$channel" ] || printf "<channel type='unix'><source mode='bind' path='%s'/><target type='virtio' name='org.vfsentinel.0'/></channel>\n" "$channel"
	[ -z "$console" ] || printf "<serial type='file'><source path='%s'/></serial>\n" "$console"
	printf '%s\n  </devices>\n</domain>\n' "$extra"
}

# hook OP SUB [XML-FILE]: libvirt-hook as libvirtd runs it, the domain
# XML ($T/dom.xml unless given) on stdin.
hook() {
	libvirt-hook vm-a "$1" "$2" - <"${3:-$T/dom.xml}"
}

# claim_field INSTANCE FIELD: a field of the instance's claim ("" if none).
claim_field() {
	jq -r --arg i "$1" --arg f "$2" \
		'[.claims[] | select(.instance_id == $i) | .[$f] // ""][0] // ""' \
		"$DATA/gpu/vf-claims.json"
}

# unix_listen PATH: a Unix socket bound and listening at PATH while the
# test runs (a stand-in QMP monitor); its pid in $PIDS.
unix_listen() {
	socat "UNIX-LISTEN:$1,fork" /dev/null &
	PIDS="${PIDS:-} $!"
	wait_for test -S "$1"
}

# hostdev_xml, and for a real libvirtd (t/69-libvirt-real.bats) lv_setup,
# lv_in, lvsh, lv_start, lv_stop, lv_teardown, lv_hook and tcg_xml:
# shared with the demo (make demo), in tools/libvirt-ns.sh.
# shellcheck source=tools/libvirt-ns.sh
. "$VFS_ROOT/tools/libvirt-ns.sh"
