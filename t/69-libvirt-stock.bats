#!/usr/bin/env bats
# 69-libvirt-stock.bats - a stock Debian libvirt host as the packages run
# it (SPEC.md 7.1; facts in reference/real-vms.md, "A stock libvirt
# host"). A real libvirtd with libvirt's default qemu.conf (QEMU as
# libvirt-qemu, dynamic ownership, virtlogd writing every log root 0600)
# over the directory layout libvirt-daemon-system's postinst makes
# (/var/lib/libvirt/qemu and channel/target 0750 libvirt-qemu), in a
# private mount namespace (tools/libvirt-ns.sh). Our side is laid out as
# the host package lays it out (in a directory of the test's: see
# stock_ours): the configuration, the store made by `vfstore init
# --owner vfsentinel`, libvirt-hook in qemu.d, and the sentinel service's
# own run script (sv/vfsentinel-sentinel/run) under a real runsv, started
# as root as runit starts it: it drops to the vfsentinel user with the
# capability the unit grants. Nothing here runs as root that runs as
# another user in production.
#
# Debian's guest kernel boots under TCG twice on one VF: first with a
# logged pty console and no agent (the kernel's own NVRM line reaches
# the store through the console log), then with the agent's
# virtio-serial channel and an unlogged console (the FAILED answer
# reaches it through the channel). The two failures quarantine the VF;
# the next start on it is refused with the hook's message. On another
# VF, how a real guest ended decides a suspicion (SPEC 7.3): a guest
# that powers itself off before its OK is none, a destroy before it is
# one, a later guest's OK ends it, a destroy after an OK is none, a kill
# -9 of QEMU before the OK is one.

load helpers
load lib/realguest

VF=0000:e3:00.4
VF5=0000:e3:00.5
WEDGED='NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)'
NS=https://vfsentinel.dev/xmlns/libvirt/1

# shellcheck source=tools/libvirt-ns.sh
. "$VFS_ROOT/tools/libvirt-ns.sh"

setup_file() {
	local why
	rg_need
	need_tool libvirtd virtlogd virsh setpriv runsvdir runsv
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
	stock_libvirt "$W/lv"
	stock_ours
	lv_start
	stock_sentinel
}

teardown_file() {
	W=$(cat "$BATS_FILE_TMPDIR/w" 2>/dev/null) || return 0
	[ -n "${SVDIR_PID:-}" ] || SVDIR_PID=$(cat "$W/runsvdir.pid" 2>/dev/null)
	LV=$W/lv
	LV_HOLDER=$(cat "$W/holder.pid" 2>/dev/null)
	if [ -n "$SVDIR_PID" ]; then
		kill -HUP "$SVDIR_PID" 2>/dev/null
		wait_long sh -c '! kill -0 "$1"' _ "$SVDIR_PID" || true
	fi
	if [ -n "$LV_HOLDER" ]; then
		kill "$(cat "$LV/run/virtlogd.pid" 2>/dev/null)" 2>/dev/null
		lv_teardown
	fi
	# KEEP=1 keeps W (the logs, the store) to look at after a run.
	[ -n "${KEEP:-}" ] || rm -rf "$W"
	true
}

setup() {
	W=$(cat "$BATS_FILE_TMPDIR/w")
	LV=$W/lv
	LV_HOLDER=$(cat "$W/holder.pid")
	T=$BATS_TEST_TMPDIR
}

# stock_libvirt DIR: the namespace, with libvirt-daemon-system's layout
# and defaults, and virtlogd running as Debian runs it (root).
stock_libvirt() {
	lv_setup "$1"
	echo "$LV_HOLDER" >"$W/holder.pid"
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
	cp "$VFS_TOOLS/guest-kernel/vmlinuz" "$LV/lib/images/vmlinuz"
	sh "$VFS_ROOT/t/lib/guest-initramfs.sh" base "$W/base.gz"
	lv_in setsid /usr/sbin/virtlogd -p /run/libvirt/virtlogd.pid \
	    >>"$LV/virtlogd.out" 2>&1 3>&- &
	lv_wait 10 test -S "$LV/run/virtlogd-sock"
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
	ln -s "$W/sv" "$W/service/vfsentinel-sentinel"
	lv_in setsid runsvdir -P "$W/service" >>"$W/sentinel.log" 2>&1 3>&- &
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

@test "stock libvirt: the console path and the agent channel each record a failure as the package runs the sentinel; two boots quarantine, the third start is refused" {
	local uid t0 t1 t2
	uid=$(id -u vfsentinel)
	printf '%s\n' "3,1042,8462102,-;$WEDGED" >"$T/kmsg.rec"
	# The pipeline runs as vfsentinel: the poller holds only
	# CAP_DAC_READ_SEARCH (bit 2), apply nothing.
	run -0 caps "$(poller_pid)"
	assert_output "$uid 0000000000000004"
	run -0 caps "$(svc_pid)"
	assert_output "$uid 0000000000000000"

	# Boot 1: no agent; the kernel's own line on a logged pty console
	# (virtlogd writes it root 0600).
	cat >"$T/console.sh" <<-EOF
	echo '<3>$WEDGED' >/dev/kmsg
	echo 'guest: written'
	sleep 600
	EOF
	guest_xml c1 11111111-2222-3333-4444-000000000001 "$T/console.sh" \
	    "<serial type='pty'><log file='/var/log/libvirt/qemu/c1-console.log' append='off'/></serial>" \
	    >"$T/c1.xml"
	t0=$SECONDS
	lvsh create "$T/c1.xml"
	run -0 stat -c '%U %a' "$LV/log/qemu/c1-console.log"
	assert_output 'root 600'
	rg_until "$RG_BOOT_S" failures_ge 1
	t1=$SECONDS
	lvsh destroy c1
	run -0 claims
	assert_output ''

	# Boot 2: the agent on libvirt's own channel socket (srwxrwxr-x
	# libvirt-qemu, in 0750 directories), no console log.
	cat >"$T/agent.sh" <<-EOF
	mkfifo /run/vfsentinel/events
	vsock-answer --listen virtio-serial:org.vfsentinel.0 \\
	    --events /run/vfsentinel/events 2>/tmp/va.log &
	kmsg-watch --no-pci-check --kmsg /rec/kmsg >/run/vfsentinel/events &
	sleep 600
	EOF
	guest_xml a1 11111111-2222-3333-4444-000000000002 "$T/agent.sh" \
	    "<serial type='pty'/><channel type='unix'><source mode='bind'/><target type='virtio' name='org.vfsentinel.0'/></channel>" \
	    >"$T/a1.xml"
	lvsh create "$T/a1.xml"
	rg_until "$RG_BOOT_S" quarantined
	t2=$SECONDS
	run -0 vfs show --vf $VF
	assert_output --partial '"quarantined":true'
	run -0 jq -r '.failures | length' <<<"$output"
	assert_output 2
	lvsh destroy a1
	run -0 claims
	assert_output ''

	# Boot 3 on the quarantined VF: refused by the hook at prepare.
	guest_xml c3 11111111-2222-3333-4444-000000000003 "$T/console.sh" \
	    "<serial type='pty'/>" >"$T/c3.xml"
	run -1 lvsh create "$T/c3.xml"
	assert_output --partial "vfsentinel: VF $VF is quarantined"
	# What the sentinel logged: no permission denied on the way.
	run -0 cat "$W/sentinel.log"
	refute_output --partial 'Permission denied'
	echo "# console path: boot to recorded failure $((t1 - t0)) s;" \
	    "agent path: boot to quarantine $((t2 - t1)) s" >&3
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

@test "stock libvirt: a real guest that powers itself off before its OK is no suspect; a destroy before its OK is, until a later guest's OK; a destroy after the OK is not; kill -9 is" {
	local logged="<serial type='pty'><log file='/var/log/libvirt/qemu/LOG' append='off'/></serial>"
	local id1=11111111-2222-3333-4444-000000000011
	local id2=11111111-2222-3333-4444-000000000012
	local id3=11111111-2222-3333-4444-000000000013
	local id4=11111111-2222-3333-4444-000000000014
	printf '%s\n' "3,1,1,-;nothing here" >"$T/kmsg.rec"
	# The guest's init powers off after its script: reason=shutdown.
	echo "echo 'guest: bye'" >"$T/bye.sh"
	guest_xml p1 $id1 "$T/bye.sh" "${logged/LOG/p1-console.log}" $VF5 \
	    >"$T/p1.xml"
	lvsh create "$T/p1.xml"
	rg_until "$RG_BOOT_S" released $id1
	run -0 grep -h 'shutting down, reason=' "$LV/log/qemu/p1.log"
	assert_output --partial 'reason=shutdown'
	assert_equal "$(suspect_of $VF5)" ""
	# Destroyed while it boots, before any OK: reason=destroyed.
	echo 'sleep 600' >"$T/sleep.sh"
	guest_xml d1 $id2 "$T/sleep.sh" "${logged/LOG/d1-console.log}" $VF5 \
	    >"$T/d1.xml"
	lvsh create "$T/d1.xml"
	lvsh destroy d1
	rg_until 30 released $id2
	assert_equal "$(suspect_of $VF5)" "libvirt-hook: reason=destroyed"
	# The next guest on it says OK on its console (as vsock-answer's
	# marker does): the sentinel reads it as vfsentinel, apply records
	# ok_at, the suspicion ends; destroyed after its OK: no suspect.
	echo "echo '2026/12/07 10:00:00 [guest-agent] HYPEMAN-GPU-INIT-OK ts=2026-12-07T10:00:00.000000001Z'; sleep 600" \
	    >"$T/ok.sh"
	guest_xml o1 $id3 "$T/ok.sh" "${logged/LOG/o1-console.log}" $VF5 \
	    >"$T/o1.xml"
	lvsh create "$T/o1.xml"
	rg_until "$RG_BOOT_S" ok_recorded $id3
	assert_equal "$(suspect_of $VF5)" ""
	lvsh destroy o1
	rg_until 30 released $id3
	assert_equal "$(suspect_of $VF5)" ""
	# kill -9 of QEMU while its guest boots: reason=crashed, suspect.
	guest_xml k1 $id4 "$T/sleep.sh" "${logged/LOG/k1-console.log}" $VF5 \
	    >"$T/k1.xml"
	lvsh create "$T/k1.xml"
	kill -KILL "$(cat "$LV/run/qemu/k1.pid")"
	rg_until 30 released $id4
	assert_equal "$(suspect_of $VF5)" "libvirt-hook: reason=crashed"
}
