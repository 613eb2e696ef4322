# stock.bash - a stock Debian libvirt host as the packages run it, for
# t/94-libvirt-stock.bats and t/99-libvirt-suspect.bats (`load
# lib/stock` after `load helpers`; it loads lib/realguest): one private
# libvirtd with libvirt's defaults and virtlogd, the host package's side
# laid out in a directory any user may enter, and the sentinel service's
# own run script under a real runsvdir. The test file's setup_file,
# teardown_file and setup call stock_setup_file, stock_teardown_file and
# stock_setup. Facts: reference/real-vms.md, "A stock libvirt host".
# shellcheck shell=bash disable=SC2016 # jq's $names

load lib/realguest

VF=0000:e3:00.4
VF5=0000:e3:00.5
# shellcheck disable=SC2034 # the tests' own
WEDGED='NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)'
NS=https://vfsentinel.dev/xmlns/libvirt/1

# shellcheck source=tools/libvirt-ns.sh
. "$VFS_ROOT/tools/libvirt-ns.sh"

stock_setup_file() {
	rg_need
	need_tool runsvdir runsv
	stock_host guest
	lv_start
	stock_sentinel
}

# stock_host guest|noguest: the host up to libvirtd's start: the vfsentinel
# user, W with our programs and a fake card of two VFs, the namespace
# (stock_libvirt: Debian's guest kernel unless noguest) and our side
# (stock_ours).
stock_host() {
	local why
	need_tool libvirtd virtlogd virsh setpriv qemu-system-x86_64 unshare \
	    nsenter
	[ "$(id -u)" = 0 ] || skip "needs root (mount namespace, libvirtd)"
	why=$(lv_missing) && skip "$why"
	getent passwd vfsentinel >/dev/null || useradd --system \
	    --user-group --no-create-home --home-dir /nonexistent \
	    --shell /usr/sbin/nologin vfsentinel ||
	    skip "cannot create the vfsentinel user"
	# Everything the vfsentinel user must reach lives under W, which
	# any user may enter (the suite's own temp dirs are 0700).
	W=$(mktemp -d /tmp/vfs-stock.XXXXXX)
	chmod 755 "$W"
	echo "$W" >"$BATS_FILE_TMPDIR/w"
	mkdir -p "$W/bin" "$W/etc" "$W/data" "$W/sysfs/sys/bus/pci/devices"
	cp "$VFS_BIN"/* "$W/bin/"
	mk_card "$W/sysfs" 0000:e3:00.0
	mk_vf "$W/sysfs" 0000:e3:00.0 $VF
	mk_vf "$W/sysfs" 0000:e3:00.0 $VF5
	stock_libvirt "$W/lv" "$1"
	stock_ours
}

stock_teardown_file() {
	local end
	W=$(cat "$BATS_FILE_TMPDIR/w" 2>/dev/null) || return 0
	[ -n "${SVDIR_PID:-}" ] || SVDIR_PID=$(cat "$W/runsvdir.pid" 2>/dev/null)
	LV=$W/lv
	LV_HOLDER=$(cat "$W/holder.pid" 2>/dev/null)
	LV_LEFT=
	if [ -n "$SVDIR_PID" ]; then
		# runsvdir TERMs each runsv, which stops its service (a
		# verification ends within 10 s: SPEC 8.2) and exits.
		kill -HUP "$SVDIR_PID" 2>/dev/null
		end=$((SECONDS + 30))
		while [ "$SECONDS" -lt "$end" ] &&
		    lv_procs | grep -q '^[0-9]* runsv'; do
			sleep 0.2
		done
	fi
	if [ -n "$LV_HOLDER" ]; then
		kill "$(cat "$LV/run/virtlogd.pid" 2>/dev/null)" 2>/dev/null
		lv_teardown
	fi
	# What outlived its daemon's stop, killed: a line of the file's
	# output each (it would have held this file's run open).
	lv_left_tap >&3
	# KEEP=1 keeps W (the logs, the store) to look at after a run.
	[ -n "${KEEP:-}" ] || rm -rf "$W"
	true
}

stock_setup() {
	W=$(cat "$BATS_FILE_TMPDIR/w")
	LV=$W/lv
	LV_HOLDER=$(cat "$W/holder.pid")
	T=$BATS_TEST_TMPDIR
}

# stock_libvirt DIR [noguest]: the namespace, with libvirt-daemon-system's
# layout and defaults, and virtlogd running as Debian runs it (root);
# Debian's guest kernel and the base initramfs unless noguest.
stock_libvirt() {
	lv_setup "$1"
	echo "$LV_HOLDER" >"$W/holder.pid"
	stock_kvm
	# qemu.conf as the package ships it: every setting commented out.
	echo '# libvirt defaults (Debian ships every line commented)' \
	    >"$LV/etc/qemu.conf"
	mkdir -p "$LV/lib/qemu/channel/target" "$LV/lib/images" \
	    "$LV/log/qemu" "$LV/cache/qemu"
	chown libvirt-qemu:libvirt-qemu "$LV/lib/qemu" \
	    "$LV/lib/qemu/channel" "$LV/lib/qemu/channel/target"
	chmod 0750 "$LV/lib/qemu" "$LV/lib/qemu/channel" \
	    "$LV/lib/qemu/channel/target"
	chmod 0711 "$LV/lib/images" "$LV/cache/qemu"
	chmod 0755 "$LV" "$LV/lib" "$LV/log" "$LV/log/qemu"
	if [ "${2:-}" != noguest ]; then
		cp "$VFS_TOOLS/guest-kernel/vmlinuz" "$LV/lib/images/vmlinuz"
		sh "$VFS_ROOT/t/lib/guest-initramfs.sh" base "$W/base.gz"
	fi
	lv_detached nsenter -t "$LV_HOLDER" -m -- setsid /usr/sbin/virtlogd \
	    -p /run/libvirt/virtlogd.pid >>"$LV/virtlogd.out" 2>&1 &
	lv_wait 10 test -S "$LV/run/virtlogd-sock"
}

# stock_kvm: /dev/kvm as a Debian host has it, in the namespace only:
# 0660 root:kvm (udev's rule), libvirt-qemu in the group kvm. Where the
# node is 0600 root (a machine without udev), libvirtd's capability probe
# (run with CAP_DAC_OVERRIDE) finds KVM, the domain's user cannot open
# it, and libvirtd then discards its cache and probes QEMU again at every
# lookup: 4 s a probe, 70 s before the first domain and 60 s before each
# later one.
stock_kvm() {
	local dev
	[ -c /dev/kvm ] || return 0
	getent group kvm >/dev/null || groupadd --system kvm
	id -nG libvirt-qemu | grep -qw kvm || usermod -aG kvm libvirt-qemu
	dev=$(stat -c '%t:%T' /dev/kvm)
	mkdir -p "$LV/dev"
	# A tmpfs of the namespace's own: the node would not open through a
	# nodev mount.
	lv_in sh -c 'mount -t tmpfs -o mode=0755 vfs-kvm "$1" &&
	    mknod -m 0660 "$1/kvm" c "$((0x${2%:*}))" "$((0x${2#*:}))" &&
	    chgrp kvm "$1/kvm" && mount --bind "$1/kvm" /dev/kvm' \
	    _ "$LV/dev" "$dev"
}

# stock_ours: the host package's side: its configuration, the store made
# by `vfstore init --owner vfsentinel` (as the postinst makes it), the
# textfile directory of that user, and the hook in qemu.d. Not at the
# package's paths: a bind mount over /etc/vfsentinel would need a mount
# point on this machine, and removing one that another run's namespace
# still uses detaches that mount there (Linux 3.18 and later). So the
# hook is a two-line wrapper naming the configuration, and the service's
# env/VFSENTINEL_CONF does, as an operator's would.
stock_ours() {
	cat >"$W/etc/vfsentinel.conf" <<-EOF
	data_dir = $W/data
	sysfs_root = $W/sysfs
	metrics.textfile_dir = $W/data/metrics
	sentinel.interval = 1
	EOF
	"$W/bin/vfstore" -c "$W/etc/vfsentinel.conf" init --owner vfsentinel \
	    >/dev/null
	install -d -o vfsentinel -g vfsentinel "$W/data/metrics"
	printf '#!/bin/sh\nVFSENTINEL_CONF=%s exec %s "$@"\n' \
	    "$W/etc/vfsentinel.conf" "$W/bin/libvirt-hook" \
	    >"$LV/etc/hooks/qemu.d/vfsentinel"
	chmod 755 "$LV/etc/hooks/qemu.d/vfsentinel"
}

# stock_sentinel: the sentinel service under a real runsvdir in the
# namespace, started as root, as runit starts it, with the package's
# run script; PATH names the test's programs.
stock_sentinel() {
	mkdir -p "$W/service"
	cp -R "$VFS_ROOT/sv/vfsentinel-sentinel" "$W/sv"
	rm -rf "$W/sv/log"
	echo "$W/bin:/usr/bin:/bin" >"$W/sv/env/PATH"
	echo "$W/etc/vfsentinel.conf" >"$W/sv/env/VFSENTINEL_CONF"
	# The run scripts' shared part where vfsentinel, once dropped to,
	# reads it again.
	cp "$VFS_ROOT/sv/sv-lib.sh" "$W/sv-lib.sh"
	ln -s "$W/sv" "$W/service/vfsentinel-sentinel"
	# Under a sanitizer, the services run without LeakSanitizer's exit
	# check, as runit_start (t/lib/runit.bash) says why: a TERM landing
	# in it deadlocks the process. In check-asan's t/88 one did at
	# teardown (the verify service runs vfrecover every second), and the
	# spinning vfrecover held the file's run open until its 1200 s limit
	# (vfrecover --verify-suspects TERMed at a random moment spun in 3
	# runs of 400 with the check, none of 400 without).
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:detect_leaks=0} \
	    VFSENTINEL_SV_LIB=$W/sv-lib.sh lv_detached nsenter -t "$LV_HOLDER" \
	    -m -- setsid runsvdir -P "$W/service" >>"$W/sentinel.log" 2>&1 &
	wait_long pgrep -f "^runsvdir -P $W/service" >"$W/runsvdir.pid"
	SVDIR_PID=$(cat "$W/runsvdir.pid")
	wait_long poller_pid
}

# guest_xml NAME UUID SCRIPT DEVICES [VF]: a domain booting Debian's
# kernel with an initramfs running SCRIPT (then powering off), pinned to
# VF (default $VF) in vfsentinel's metadata, DEVICES its console and
# channel.
guest_xml() {
	sh "$VFS_ROOT/t/lib/guest-initramfs.sh" scenario "$T/$1.part.gz" \
	    "$3" "$T/kmsg.rec=/rec/kmsg"
	cat "$W/base.gz" "$T/$1.part.gz" >"$LV/lib/images/$1.gz"
	cat <<-EOF
	<domain type='qemu'>
	  <name>$1</name>
	  <uuid>$2</uuid>
	  <metadata><v:vgpu xmlns:v='$NS' vf='${5:-$VF}'/></metadata>
	  <memory unit='MiB'>256</memory>
	  <os>
	    <type arch='x86_64' machine='q35'>hvm</type>
	    <kernel>/var/lib/libvirt/images/vmlinuz</kernel>
	    <initrd>/var/lib/libvirt/images/$1.gz</initrd>
	    <cmdline>console=ttyS0 panic=-1 quiet</cmdline>
	  </os>
	  <devices>
	    $4
	  </devices>
	</domain>
	EOF
}

# vfs ARGS...: vfstore on the test's configuration (as root reads it).
vfs() {
	"$W/bin/vfstore" -c "$W/etc/vfsentinel.conf" "$@"
}

# failures: the failures the store holds for $VF (as root reads it).
failures() {
	{ vfs show --vf $VF 2>/dev/null ||
	    echo '{"failures":[]}'; } | jq -r '.failures | length'
}

failures_ge() {
	[ "$(failures)" -ge "$1" ]
}

quarantined() {
	[ "$(vfs show --vf $VF | jq -r .quarantined)" = true ]
}

# claims: the instance ids the ledger holds.
claims() {
	jq -r '.claims[].instance_id' "$W/data/gpu/vf-claims.json"
}

# svc_pid: the process runsv supervises (vfstore apply, which the run
# script became); poller_pid: its child, sentinel-poll.
svc_pid() {
	local runsv
	runsv=$(pgrep -P "$(cat "$W/runsvdir.pid")" -x runsv) &&
	    pgrep -P "$runsv" -x vfstore
}

poller_pid() {
	pgrep -P "$(svc_pid)" -x sentinel-poll
}

# caps PID: the uid and the effective capabilities of PID.
caps() {
	awk '/^Uid:/ { u = $2 } /^CapEff:/ { c = $2 } END { print u, c }' \
	    "/proc/$1/status"
}

# suspect_of VF: the source of VF's suspicion ("" when none).
suspect_of() {
	jq -r --arg vf "$1" '[.suspects[]? | select(.vf_address == $vf) |
	    .source][0] // ""' "$W/data/gpu/vf-suspect.json" 2>/dev/null
}

# ok_recorded INSTANCE: the claim of INSTANCE holds ok_at.
ok_recorded() {
	[ -n "$(jq -r --arg i "$1" '.claims[] | select(.instance_id == $i) |
	    .ok_at // ""' "$W/data/gpu/vf-claims.json")" ]
}

# released INSTANCE: the ledger no longer holds INSTANCE's claim.
released() {
	! claims | grep -qx "$1"
}

