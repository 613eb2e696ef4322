# shellcheck shell=bash disable=SC2016 # sh -c scripts: their $1 is theirs
# libvirt-ns.sh - a real libvirtd in a private mount namespace, for the
# tests (t/69-libvirt-real.bats, through t/lib/libvirt.bash) and the
# demo (tools/demo.sh); sourced, not run. Facts behind it:
# reference/real-vms.md, its libvirt section.
#
# libvirtd keeps its configuration, sockets and state at fixed paths. This
# daemon runs in a private mount namespace (unshare -m, private
# propagation) in which a directory of the caller is bind-mounted over
# each of them, so it never sees or changes the machine's libvirt and two
# runs never collide. A holder process keeps the namespace; libvirtd,
# virsh and anything that must see /var/lib/libvirt enter it with
# nsenter -m. Needs root, libvirtd, virsh, qemu-system-x86_64 and a
# libvirt-qemu user (lv_missing says what is not there).

LV_PATHS="/etc/libvirt /run/libvirt /var/lib/libvirt /var/log/libvirt /var/cache/libvirt"

# lv_missing: prints why no libvirtd can run here (the first missing tool,
# user or privilege) and returns 0; returns 1 when nothing is missing.
lv_missing() {
	local t
	for t in libvirtd virsh qemu-system-x86_64 unshare nsenter; do
		command -v "$t" >/dev/null || { echo "$t missing"; return 0; }
	done
	[ "$(id -u)" = 0 ] || { echo "needs root (mount namespace, libvirtd)"; return 0; }
	getent passwd libvirt-qemu >/dev/null ||
		{ echo "libvirt-qemu user missing (make deps creates it)"; return 0; }
	return 1
}

# lv_wait SECONDS PROGRAM [ARGS...]: runs PROGRAM (not a shell
# function; its stderr dropped) again until it succeeds, for at most
# SECONDS (timeout(1)); non-zero then.
lv_wait() {
	local s=$1
	shift
	timeout "$s" sh -c 'until "$@" 2>/dev/null; do sleep 0.05; done' _ "$@"
}

# lv_detached CMD...: execs CMD with no descriptor of this shell above
# stderr. Run it in the background (lv_detached CMD... &), stdout and
# stderr redirected: bats keeps its output pipe on several descriptors
# (3, 4 and higher), and a daemon that held any of them would hold the
# whole test run open until it exits, however the test ended.
lv_detached() {
	local fd
	for fd in /proc/self/fd/*; do
		fd=${fd##*/}
		[ "$fd" -le 2 ] || eval "exec $fd>&-"
	done
	exec "$@"
}

# lv_procs: "PID COMMAND" of each process in the namespace (libvirtd,
# virtlogd, QEMU, and whatever was started in it with nsenter, and all
# they started), the holder excepted: the test host, however its
# processes were reparented or put in sessions of their own.
lv_procs() {
	local ns
	ns=$(ps -o mntns= -p "$LV_HOLDER" 2>/dev/null | tr -d ' ')
	[ -n "$ns" ] || return 0
	ps -e -o mntns=,pid=,args= | awk -v ns="$ns" -v h="$LV_HOLDER" \
	    '$1 == ns && $2 != h { $1 = ""; print substr($0, 2) }'
}

# lv_reap SECONDS: waits at most SECONDS for every process of the
# namespace but the holder (lv_procs) to end; kills (SIGKILL) each one
# still there then and adds it to LV_LEFT ("PID COMMAND", a line each).
# After a teardown asked its daemons to stop, what is left is worth a
# look (lv_left_tap) and must not outlive the test.
lv_reap() {
	local end=$((SECONDS + $1)) left
	while :; do
		left=$(lv_procs)
		if [ -z "$left" ] || [ "$SECONDS" -ge "$end" ]; then
			break
		fi
		sleep 0.2
	done
	[ -n "$left" ] || return 0
	echo "$left" | awk '{ print $1 }' | xargs kill -KILL 2>/dev/null
	LV_LEFT="${LV_LEFT:+$LV_LEFT
}$left"
}

# lv_left_tap: LV_LEFT as TAP comments (a test file's teardown shows
# them on fd 3).
lv_left_tap() {
	local l
	[ -n "${LV_LEFT:-}" ] || return 0
	while IFS= read -r l; do
		echo "# left at teardown, killed: $l"
	done <<<"$LV_LEFT"
}

# lv_setup DIR: the namespace over DIR/{etc,run,lib,log,cache}, with a
# qemu.conf for this machine (no virtlogd, QEMU as root, no security
# driver) and room for a hook in DIR/etc/hooks/qemu.d. Sets LV (DIR) and
# LV_HOLDER (the holder's pid).
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
	lv_detached unshare -m --propagation private sh -c '
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
		/var/log/libvirt /var/cache/libvirt </dev/null >/dev/null 2>&1 &
	LV_HOLDER=$!
	export LV LV_HOLDER
	lv_wait 10 test -e "$LV/ns-ready"
}

# lv_in CMD...: CMD inside the namespace.
lv_in() {
	nsenter -t "$LV_HOLDER" -m -- "$@"
}

# lvsh ARGS...: virsh against the namespace's libvirtd.
lvsh() {
	lv_in virsh -q -c qemu:///system "$@"
}

# lv_start: starts libvirtd in the namespace and waits until it answers
# (its first start probes QEMU: seconds).
lv_start() {
	rm -f "$LV/run/libvirt-sock"
	# Root's libvirtd keeps its pid file at /run/libvirtd.pid: outside
	# the bind mounts, so it is named here.
	lv_detached nsenter -t "$LV_HOLDER" -m -- setsid /usr/sbin/libvirtd \
		--pid-file /run/libvirt/libvirtd.pid >>"$LV/libvirtd.out" 2>&1 &
	lv_wait 10 test -S "$LV/run/libvirt-sock" &&
		lv_wait 30 nsenter -t "$LV_HOLDER" -m -- virsh -q \
		-c qemu:///system version >/dev/null
}

# lv_stop: stops libvirtd (SIGTERM; its domains keep running) and waits
# for it to be gone.
lv_stop() {
	local pid
	pid=$(cat "$LV/run/libvirtd.pid" 2>/dev/null) || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	lv_wait 10 sh -c '! kill -0 "$1" 2>/dev/null ||
		grep -q "^State:.*Z" "/proc/$1/status"' _ "$pid"
}

# lv_teardown: every QEMU the daemon started, the daemon, what is left
# in the namespace 10 s later (LV_LEFT: lv_reap), the holder.
lv_teardown() {
	local f
	for f in "$LV"/run/qemu/*.pid; do
		[ -e "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
	done
	lv_stop
	lv_reap 10
	kill -KILL "$LV_HOLDER" 2>/dev/null
	# Reaped here, where its end is expected (no "Killed" from bash).
	wait "$LV_HOLDER" 2>/dev/null || true
}

# lv_hook [HOOK]: installs the hook (default: the libvirt-hook on PATH),
# to be run on the caller's host (VFSENTINEL_CONF): a wrapper that
# records each call with its exit code in $LV/calls and the hook's
# stderr in $LV/hook.log, and passes stderr on to libvirtd (virsh shows
# it). Install it before lv_start: libvirtd finds hooks when it starts.
lv_hook() {
	local hook=${1:-$(command -v libvirt-hook)}
	cat >"$LV/etc/hooks/qemu.d/vfsentinel" <<-EOF
	#!/bin/sh
	VFSENTINEL_CONF='$VFSENTINEL_CONF'
	export VFSENTINEL_CONF
	err=\$(mktemp '$LV/hook.XXXXXX')
	'$hook' "\$@" 2>"\$err"
	rc=\$?
	echo "\$1 \$2 \$3 rc=\$rc" >>'$LV/calls'
	cat "\$err" >>'$LV/hook.log'
	cat "\$err" >&2
	rm -f "\$err"
	exit \$rc
	EOF
	chmod 755 "$LV/etc/hooks/qemu.d/vfsentinel"
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
