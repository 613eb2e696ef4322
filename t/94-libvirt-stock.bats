#!/usr/bin/env bats
# 94-libvirt-stock.bats - a stock Debian libvirt host as the packages run
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
# the next start on it is refused with the hook's message. The setup is
# t/lib/stock.bash's; t/99-libvirt-suspect.bats boots on the same kind of
# host how a VM's end decides a suspicion (SPEC 7.3).

load helpers
load lib/stock

setup_file() {
	stock_setup_file
}

teardown_file() {
	stock_teardown_file
}

setup() {
	stock_setup
}

# holders PIPE: each process of the test host (lv_procs, and the
# namespace's holder) with a descriptor on PIPE, as "PID FD".
holders() {
	local pid fd
	for pid in $(lv_procs | awk '{ print $1 }') "$LV_HOLDER"; do
		for fd in /proc/"$pid"/fd/*; do
			[ "$(readlink "$fd")" != "$1" ] || echo "$pid ${fd##*/}"
		done
	done
}

@test "the test host: no daemon holds the test run's output pipe (bats' descriptors 3 and above)" {
	local pipe
	pipe=$(readlink /proc/$BASHPID/fd/3)
	[[ $pipe == pipe:* ]]
	# The host's daemons and the sentinel's service are there.
	run -0 lv_procs
	assert_line --regexp '^[0-9]+ /usr/sbin/libvirtd '
	assert_line --regexp '^[0-9]+ /usr/sbin/virtlogd '
	assert_line --regexp '^[0-9]+ runsv vfsentinel-sentinel$'
	assert_line --regexp '^[0-9]+ sentinel-poll '
	run -0 holders "$pipe"
	assert_output ""
}

@test "the test host: lv_reap names and kills what is left in the namespace" {
	# A namespace of this test's own: the file's host stays up.
	lv_setup "$T/lv"
	lv_detached nsenter -t "$LV_HOLDER" -m -- setsid sh -c \
	    'sleep 301 & exec sleep 302' </dev/null >/dev/null 2>&1 &
	wait_long pgrep -f '^sleep 30[1]$'
	wait_long pgrep -f '^sleep 30[2]$'
	LV_LEFT=
	lv_reap 0
	run -0 lv_left_tap
	assert_line --regexp '^# left at teardown, killed: [0-9]+ sleep 301$'
	assert_line --regexp '^# left at teardown, killed: [0-9]+ sleep 302$'
	assert_equal "${#lines[@]}" 2
	wait_long sh -c '! pgrep -f "^sleep 30[12]$"'
	kill -KILL "$LV_HOLDER"
	wait "$LV_HOLDER" 2>/dev/null || true
}

@test "stock libvirt: the console path and the agent channel each record a failure as the package runs the sentinel; two boots quarantine, the third start is refused" {
	local uid t0 t1 t2
	uid=$(id -u vfsentinel)
	printf '%s\n' "3,1042,8462102,-;$WEDGED" >"$T/kmsg.rec"
	# The pipeline runs as vfsentinel: the poller, which parses the
	# guests' bytes, holds nothing; its opener only CAP_DAC_READ_SEARCH
	# (bit 2, SPEC 8.3); apply nothing.
	run -0 caps "$(poller_pid)"
	assert_output "$uid 0000000000000000"
	run -0 caps "$(pgrep -P "$(poller_pid)" -x sentinel-opener)"
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
	wait_secs "$RG_BOOT_S" failures_ge 1
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
	wait_secs "$RG_BOOT_S" quarantined
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
