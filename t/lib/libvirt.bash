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

# hostdev_xml VF: the <hostdev> element of a PCI VF (vfpick's form).
hostdev_xml() {
	local a=$1 dom bus slot fn
	dom=${a%%:*}
	bus=${a#*:}
	bus=${bus%%:*}
	slot=${a##*:}
	fn=${slot#*.}
	slot=${slot%.*}
	printf "<hostdev mode='subsystem' type='pci' managed='no'><source><address domain='0x%s' bus='0x%s' slot='0x%s' function='0x%s'/></source></hostdev>\n" \
		"$dom" "$bus" "$slot" "$fn"
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

# --- a real libvirtd (t/69-libvirt-real.bats) --------------------------
# libvirtd keeps its configuration, sockets and state at fixed paths. The
# test's daemon runs in a private mount namespace (unshare -m, private
# propagation) in which a directory of the test is bind-mounted over each
# of them, so it never sees or changes the machine's libvirt and two runs
# never collide. A holder process keeps the namespace; libvirtd, virsh
# and anything that must see /var/lib/libvirt enter it with nsenter -m.
LV_PATHS="/etc/libvirt /run/libvirt /var/lib/libvirt /var/log/libvirt /var/cache/libvirt"

# lv_setup DIR: the namespace over DIR/{etc,run,lib,log,cache}, with a
# qemu.conf for this machine (no virtlogd, QEMU as root, no security
# driver) and the test's hook in DIR/etc/hooks/qemu.d/vfsentinel. Sets
# LV (DIR) and LV_HOLDER (the holder's pid).
lv_setup() {
	local p
	LV=$1
	mkdir -p "$LV/etc/hooks/qemu.d" "$LV/run" "$LV/lib" "$LV/log" "$LV/cache"
	printf '%s\n' 'stdio_handler = "file"' 'user = "root"' \
		'group = "root"' 'security_driver = "none"' >"$LV/etc/qemu.conf"
	for p in $LV_PATHS; do
		# An empty mount point where the package made none.
		[ -d "$p" ] || mkdir -p "$p"
	done
	unshare -m --propagation private sh -c '
		lv=$1; shift
		for p; do
			case $p in
			/etc/*) d=etc ;; /run/*) d=run ;; /var/lib/*) d=lib ;;
			/var/log/*) d=log ;; *) d=cache ;;
			esac
			mount --bind "$lv/$d" "$p" || exit 1
		done
		touch "$lv/ns-ready"
		exec sleep 900' _ "$LV" /etc/libvirt /run/libvirt /var/lib/libvirt \
		/var/log/libvirt /var/cache/libvirt 3>&- &
	LV_HOLDER=$!
	export LV LV_HOLDER
	wait_long test -e "$LV/ns-ready"
}

# lv_in CMD...: CMD inside the test's libvirt namespace.
lv_in() {
	nsenter -t "$LV_HOLDER" -m -- "$@"
}

# lvsh ARGS...: virsh against the test's libvirtd.
lvsh() {
	lv_in virsh -q -c qemu:///system "$@"
}

# lv_start: starts libvirtd in the namespace and waits until it answers
# (its first start probes QEMU: seconds).
lv_start() {
	rm -f "$LV/run/libvirt-sock"
	# Root's libvirtd keeps its pid file at /run/libvirtd.pid: outside
	# the bind mounts, so it is named here.
	lv_in setsid /usr/sbin/libvirtd --pid-file /run/libvirt/libvirtd.pid \
		>>"$LV/libvirtd.out" 2>&1 3>&- &
	wait_long test -S "$LV/run/libvirt-sock" || return 1
	local i
	for ((i = 0; i < 300; i++)); do
		lvsh version >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

# lv_stop: stops libvirtd (SIGTERM; its domains keep running) and waits
# for it to be gone.
lv_stop() {
	local pid
	pid=$(cat "$LV/run/libvirtd.pid" 2>/dev/null) || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	wait_long sh -c '! kill -0 "$1" 2>/dev/null ||
		grep -q "^State:.*Z" "/proc/$1/status"' _ "$pid"
}

# lv_teardown: every QEMU the daemon started, the daemon, the holder.
lv_teardown() {
	local f
	for f in "$LV"/run/qemu/*.pid; do
		[ -e "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
	done
	lv_stop
	kill -KILL "$LV_HOLDER" 2>/dev/null || true
}

# lv_hook: installs the test's hook: a wrapper that runs the libvirt-hook
# under test on the test's fake host (VFSENTINEL_CONF), records each call
# with its exit code in $LV/calls and the hook's stderr in $LV/hook.log,
# and passes stderr on to libvirtd (virsh shows it).
lv_hook() {
	cat >"$LV/etc/hooks/qemu.d/vfsentinel" <<-EOF
	#!/bin/sh
	VFSENTINEL_CONF='$VFSENTINEL_CONF'
	export VFSENTINEL_CONF
	err=\$(mktemp '$LV/hook.XXXXXX')
	'$VFS_BIN/libvirt-hook' "\$@" 2>"\$err"
	rc=\$?
	echo "\$1 \$2 \$3 rc=\$rc" >>'$LV/calls'
	cat "\$err" >>'$LV/hook.log'
	cat "\$err" >&2
	rm -f "\$err"
	exit \$rc
	EOF
	chmod 755 "$LV/etc/hooks/qemu.d/vfsentinel"
}

# tcg_xml NAME UUID [ELEMENTS]: a TCG domain libvirt runs here: no disk,
# no NIC, a serial console to $LV/NAME.console, ELEMENTS appended to
# <devices>; vfsentinel's metadata from $META (if set).
tcg_xml() {
	cat <<-EOF
	<domain type='qemu'>
	  <name>$1</name>
	  <uuid>$2</uuid>
	  <metadata>${META:-}</metadata>
	  <memory unit='MiB'>96</memory>
	  <os><type arch='x86_64' machine='pc'>hvm</type></os>
	  <devices>
	    <serial type='file'><source path='$LV/$1.console'/></serial>
	    ${3:-}
	  </devices>
	</domain>
	EOF
}
