# realguest.bash - a real Linux guest under QEMU TCG (`load lib/realguest`
# after `load helpers` and `load lib/sentinel`): Debian's kernel
# (build-tools/guest-kernel, fetched by tools/deps.sh), an initramfs of
# the guest programs (t/lib/guest-initramfs.sh), a serial console logged
# to a file and a virtio-serial port whose host side is a Unix socket.
# Facts: the shared reference on real VMs. A boot takes 8-15 s, more on a
# busy machine: every wait for a guest allows RG_BOOT_S (90) seconds.

RG_BOOT_S=${RG_BOOT_S:-90}

# rg_need: skips the test, naming what is missing, where the kernel or
# QEMU could not be fetched or installed.
rg_need() {
	need_tool qemu-system-x86_64 busybox socat
	[ -s "$VFS_TOOLS/guest-kernel/vmlinuz" ] ||
	    skip "guest kernel missing: $VFS_TOOLS/guest-kernel (make deps fetches Debian's linux-image-amd64)"
}

# rg_base: the initramfs part every boot shares, built once per file.
rg_base() {
	local base=$BATS_FILE_TMPDIR/guest-base.gz
	[ -s "$base" ] || sh "$VFS_ROOT/t/lib/guest-initramfs.sh" base "$base"
	echo "$base"
}

# rg_boot NAME SCRIPT [FILE=GUESTPATH...]: boots a guest whose /init runs
# SCRIPT (its output on the console). Its console is $G/NAME.console, the
# host side of its port org.vfsentinel.0 is $G/NAME.vs, its QMP socket
# (the VMM's control socket) $G/NAME.qmp, its pid in $G/NAME.pid.
rg_boot() {
	local name=$1 script=$2 base
	shift 2
	base=$(rg_base)
	sh "$VFS_ROOT/t/lib/guest-initramfs.sh" scenario "$T/$name.part.gz" \
	    "$script" "$@"
	cat "$base" "$T/$name.part.gz" >"$T/$name.initrd.gz"
	qemu-system-x86_64 -machine q35 -accel tcg -m 256 -display none \
	    -no-reboot -nic none -daemonize -pidfile "$G/$name.pid" \
	    -kernel "$VFS_TOOLS/guest-kernel/vmlinuz" \
	    -initrd "$T/$name.initrd.gz" \
	    -append 'console=ttyS0 panic=-1 quiet' \
	    -serial "file:$G/$name.console" \
	    -qmp "unix:$G/$name.qmp,server=on,wait=off" \
	    -device virtio-serial-pci \
	    -chardev "socket,id=ch0,path=$G/$name.vs,server=on,wait=off" \
	    -device virtserialport,chardev=ch0,name=org.vfsentinel.0 \
	    </dev/null >/dev/null 2>>"$T/qemu.log" 3>&-
	QEMU_PIDS="$QEMU_PIDS $(cat "$G/$name.pid")"
	echo "$name started $(date +%s.%N)" >>"$T/boots"
}

# rg_console_has NAME TEXT: the console of NAME holds TEXT.
rg_console_has() {
	grep -qF -- "$2" "$G/$1.console" 2>/dev/null
}

# rg_wait_console NAME TEXT: waits (RG_BOOT_S at most) for TEXT on the
# console of NAME.
rg_wait_console() {
	wait_secs "$RG_BOOT_S" rg_console_has "$1" "$2"
}

# rg_stop NAME: ends the guest's QEMU (SIGKILL) and waits for it.
rg_stop() {
	local pid
	pid=$(cat "$G/$1.pid")
	kill -KILL "$pid" 2>/dev/null || true
	wait_secs 10 rg_gone "$pid"
}

rg_gone() {
	! kill -0 "$1" 2>/dev/null
}

# rg_send NAME LINE: the host connects to NAME's port, sends LINE and
# leaves.
rg_send() {
	printf '%s\n' "$2" | socat -t 1 - "UNIX-CONNECT:$G/$1.vs" >/dev/null
}

# rg_pipeline NAME DATA [ARGS...]: the host's real sentinel-poll |
# vfstore apply over $TARGETS (re-read each scan), every second, with
# VFSENTINEL_CONF as it is now. Check lines in $T/NAME.checks, apply
# answers in $T/NAME.apply, logs in $T/NAME.err.
rg_pipeline() {
	local name=$1 data=$2 spid
	shift 2
	: >"$T/$name.checks"
	sentinel-poll --sysfs-root "$SYSFS" --data-dir "$data" \
	    --targets "$TARGETS" --interval 1 --log-level debug "$@" \
	    >"$T/$name.checks" 2>>"$T/$name.err" 3>&- &
	spid=$!
	bg_track "$spid"
	tail -n +1 -f --pid="$spid" "$T/$name.checks" 2>/dev/null |
	    vfstore --data-dir "$data" apply >"$T/$name.apply" \
	    2>>"$T/$name.err" 3>&- &
	bg_track $!
}

# rg_checks NAME CHECK: how many check lines CHECK pipeline NAME wrote.
rg_checks() {
	jq -r .check "$T/$1.checks" 2>/dev/null | grep -cx -- "$2"
}

# rg_checks_ge NAME CHECK N
rg_checks_ge() {
	[ "$(rg_checks "$1" "$2")" -ge "$3" ]
}

# rg_scans NAME: the scans pipeline NAME finished.
rg_scans() {
	grep -c '"msg":"scan finished"' "$T/$1.err" 2>/dev/null
}

# rg_scans_ge NAME N
rg_scans_ge() {
	[ "$(rg_scans "$1")" -ge "$2" ]
}

# rg_quarantined DATA VF: the store in DATA has VF quarantined.
rg_quarantined() {
	[ "$(vfstore --data-dir "$1" show --vf "$2" | jq -r .quarantined)" = true ]
}

# rg_failures DATA VF: how many failures the store in DATA holds for VF
# (0 for a VF it has no record of).
rg_failures() {
	{ vfstore --data-dir "$1" show --vf "$2" 2>/dev/null ||
	    echo '{"failures":[]}'; } | jq -r '.failures | length'
}

# rg_assign NAME INSTANCE AT [ENDPOINT]: $TARGETS names one assignment
# of VF 0000:e3:00.4 to guest NAME: its console log, its QMP socket as
# the control socket and, with ENDPOINT, an agent endpoint.
rg_assign() {
	target 0000:e3:00.4 "$2" "$3" "${4:-}" "$G/$1.qmp" \
	    "$G/$1.console" >"$TARGETS"
}
