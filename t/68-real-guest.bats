#!/usr/bin/env bats
# A real guest (SPEC 6.1, 6.2): the guest programs in Debian's own kernel
# under QEMU TCG, with a real serial console logged to a file and a real
# virtio-serial port; the host runs the real sentinel-poll | vfstore
# apply with a target that names that console and that channel. The one
# fake left is the NVIDIA driver: a recorded kmsg line, or the driver's
# line written into /dev/kmsg by the guest's init (the kernel prints it on
# the console as its printk would).

load helpers
load lib/sentinel
load lib/realguest

VF=0000:e3:00.4
WEDGED='NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)'

setup() {
	rg_need
	vfs_setup
	sentinel_setup
}

teardown() {
	sentinel_teardown
}

# agent_script FILE [KMSG_ARGS...]: a guest script that starts the agent
# (vsock-answer on the virtio-serial port, markers on the console, fed by
# kmsg-watch with KMSG_ARGS) as the guest package's services do.
agent_script() {
	local f=$1
	shift
	cat >"$f" <<EOF
mkfifo /run/vfsentinel/events
vsock-answer --listen virtio-serial:org.vfsentinel.0 \\
    --events /run/vfsentinel/events --console /dev/console \\
    --log-level debug 2>/tmp/va.log &
kmsg-watch --no-pci-check $* 2>/tmp/kw.log | tee /tmp/events \\
    >/run/vfsentinel/events &
EOF
}

@test "real guest: the agent without a GPU reports nothing through a real boot, a root-written kmsg line included; the host gets UNKNOWN over virtio-serial" {
	agent_script "$T/guest.sh"
	cat >>"$T/guest.sh" <<EOF
i=0
until grep -q 'request answered' /tmp/va.log || [ \$i -ge 300 ]; do
	sleep 0.2
	i=\$((i + 1))
done
echo '<3>$WEDGED' >/dev/kmsg
sleep 2
echo "guest: events=\$(wc -l </tmp/events)"
echo "guest: record=\$(dmesg -r | grep RmInitAdapter | cut -c1-4)"
sleep 600
EOF
	rg_assign g1 i-1 "$TS1" "virtio-serial:$G/g1.vs"
	rg_pipeline host "$DATA"
	rg_boot g1 "$T/guest.sh"
	rg_wait_console g1 'guest: record='
	# kmsg-watch read the whole real boot and the root's write: nothing.
	rg_console_has g1 'guest: events=0'
	# The kernel stored the write with facility 1 (LOG_USER): <11>.
	rg_console_has g1 'guest: record=<11>'
	local n
	n=$(rg_checks host unknown)
	wait_secs 30 rg_checks_ge host unknown $((n + 2))
	assert_equal "$(rg_checks host failed)" 0
	assert_equal "$(rg_failures "$DATA" $VF)" 0
}

@test "real guest: the agent's failure reaches the host over virtio-serial and as a console marker; two boots quarantine the VF" {
	printf '%s\n' "3,1042,8462102,-;$WEDGED" >"$T/kmsg.rec"
	agent_script "$T/guest.sh" --kmsg /rec/kmsg
	echo 'sleep 600' >>"$T/guest.sh"
	rg_pipeline host "$DATA"
	local boot at
	for boot in 1 2; do
		at=$TS1
		[ "$boot" = 1 ] || at=$TS2
		rg_assign "a$boot" "i-$boot" "$at" "virtio-serial:$G/a$boot.vs"
		rg_boot "a$boot" "$T/guest.sh" "$T/kmsg.rec=/rec/kmsg"
		rg_wait_console "a$boot" 'HYPEMAN-GPU-INIT-FAILED'
		# One failed line from the agent, one from its marker.
		wait_secs "$RG_BOOT_S" rg_checks_ge host failed $((2 * boot))
		rg_stop "a$boot"
	done
	wait_secs 30 rg_quarantined "$DATA" $VF
	assert_equal "$(rg_failures "$DATA" $VF)" 2
	assert_equal "$(jq -r 'select(.check == "failed") | .nvrm' \
	    "$T/host.checks" | sort -u)" "$WEDGED"
}

@test "real guest: without an agent the kernel's own console line quarantines in two boots with auto, never with off; an echoed command line does not count" {
	local echoed='NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x11:0x11:111)'
	cat >"$T/guest.sh" <<EOF
port=
for d in /sys/class/virtio-ports/*; do
	[ "\$(cat \$d/name)" = org.vfsentinel.0 ] && port=/dev/\${d##*/}
done
echo "+ echo '<3>$echoed' >/dev/kmsg"
echo "# printf '$echoed\\\\n'"
echo 'guest: echoed'
until read -r go <\$port; do
	sleep 0.2
done
echo '<3>$WEDGED' >/dev/kmsg
echo 'guest: written'
sleep 600
EOF
	DATA_OFF=$T/data-off
	vfstore --data-dir "$DATA_OFF" init >/dev/null
	echo 'sentinel.console_kernel_lines = off' >"$T/off.conf"
	rg_pipeline auto "$DATA"
	VFSENTINEL_CONF=$T/off.conf rg_pipeline off "$DATA_OFF"
	local boot at n
	for boot in 1 2; do
		at=$TS1
		[ "$boot" = 1 ] || at=$TS2
		rg_assign "k$boot" "i-$boot" "$at"
		rg_boot "k$boot" "$T/guest.sh"
		rg_wait_console "k$boot" 'guest: echoed'
		# Two scans see the echoed lines before the kernel's own.
		n=$(rg_scans auto)
		wait_secs 30 rg_scans_ge auto $((n + 2))
		# (A failure is written again until the store holds it:
		# count the assignments reported, not the lines.)
		assert_equal "$(jq -r 'select(.check == "failed") |
		    .instance_id' "$T/auto.checks" | sort -u | wc -l)" \
		    $((boot - 1))
		rg_send "k$boot" go
		rg_wait_console "k$boot" 'guest: written'
		wait_secs "$RG_BOOT_S" rg_checks_ge auto failed "$boot"
		n=$(rg_scans off)
		wait_secs 30 rg_scans_ge off $((n + 2))
		rg_stop "k$boot"
	done
	wait_secs 30 rg_quarantined "$DATA" $VF
	assert_equal "$(jq -r 'select(.check == "failed") | .nvrm' \
	    "$T/auto.checks" | sort -u)" "$WEDGED"
	assert_equal "$(rg_checks off failed)" 0
	assert_equal "$(rg_failures "$DATA_OFF" $VF)" 0
}
