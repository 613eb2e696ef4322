#!/usr/bin/env bats
# packages.bats - the Debian packages (make check-deb, SPEC 5 last item):
# lintian, then both packages installed on this machine (as root), the
# files where the man pages and operations.md say, the services started
# from the installed service directories under a private runsvdir, an
# upgrade over the same version keeping an edited configuration; the
# runit lifecycle on this machine (runit not PID 1: a runsvdir over the
# installed services): an upgrade to a rebuild one version higher
# (VFS_DEB_UPGRADE_DIR) restarts them, remove stops them and deletes
# their textfiles and run-time files; and a purge that removes every
# file the packages installed and what the services made, keeping the
# store and the user. t/deb/systemd.bats does the same under systemd.
#
# It changes the machine (dpkg -i, a system user): it runs only from
# make check-deb (VFS_DEB_DIR names the built packages), never in make
# check, and purges what it installed at the end, also when a test fails.

load ../helpers
load ../lib/runit

HOST_PROGS=(resources-report sentinel-poll vfpick vfrecover vfstore)
GUEST_PROGS=(gpu-probe kmsg-watch vsock-answer)
HOST_SV=(vfsentinel-sentinel vfsentinel-resources vfsentinel-reconcile
	vfsentinel-verify)
GUEST_SV=(vfsentinel-answer vfsentinel-kmsg vfsentinel-probe)

# debs: the two package files, into the array DEBS.
debs() {
	DEBS=("$VFS_DEB_DIR"/vfsentinel_*.deb "$VFS_DEB_DIR"/vfsentinel-guest_*.deb)
}

setup_file() {
	[ -n "${VFS_DEB_DIR:-}" ] || skip "run through make check-deb"
	[ "$(id -u)" = 0 ] || skip "installs packages: needs root"
	if dpkg-query -W vfsentinel vfsentinel-guest >/dev/null 2>&1; then
		echo "vfsentinel packages are installed already" >&3
		return 1
	fi
	debs
	DEBIAN_FRONTEND=noninteractive dpkg -i "${DEBS[@]}" \
	    >"$BATS_FILE_TMPDIR/install.log" 2>&1
}

teardown_file() {
	if [ -s "$BATS_FILE_TMPDIR/runsvdir.pid" ]; then
		kill -HUP "$(cat "$BATS_FILE_TMPDIR/runsvdir.pid")" 2>/dev/null ||
			true
	fi
	dpkg --purge vfsentinel vfsentinel-guest >/dev/null 2>&1 || true
	rm -rf "$CHANNELS"/domain-999999-vfsentinel-test-*
	if [ -s "$BATS_FILE_TMPDIR/channels-made" ]; then
		rm -rf "$(cat "$BATS_FILE_TMPDIR/channels-made")"
	fi
}

# libvirt's channel directory, where the hook gives the store's owner
# each domain's org.vfsentinel.0 socket (libvirt.md).
CHANNELS=/var/lib/libvirt/qemu/channel/target

# channel_socket NAME USER...: a socket NAME under a test domain's
# directory of $CHANNELS, mode 0775 as QEMU binds it, with an rw- ACL
# entry for each USER; the test's domain directories (and whatever of
# $CHANNELS did not exist) go in teardown_file.
channel_socket() {
	local d=$CHANNELS/domain-999999-vfsentinel-test-$1 top=$CHANNELS u
	if [ ! -d "$CHANNELS" ]; then
		while [ ! -d "${top%/*}" ]; do top=${top%/*}; done
		echo "$top" >"$BATS_FILE_TMPDIR/channels-made"
		mkdir -p "$CHANNELS"
	fi
	mkdir -p "$d"
	python3 -c 'import socket, sys
socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$d/org.vfsentinel.0"
	chmod 0775 "$d/org.vfsentinel.0"
	for u in "${@:2}"; do
		setfacl -m "u:$u:rw" "$d/org.vfsentinel.0"
	done
}

setup() {
	vfs_setup
	# The installed services source the installed sv-lib.sh.
	unset VFSENTINEL_SV_LIB
	runit_setup
}

teardown() {
	runit_teardown
}

@test "lintian: no error and no warning on either package" {
	need_tool lintian
	debs
	run -0 lintian --fail-on error,warning "${DEBS[@]}"
	refute_output --regexp '^[EW]: '
}

@test "installed: programs in /usr/bin, man pages, docs, conffile, services in /etc/sv" {
	local p s
	for p in "${HOST_PROGS[@]}" "${GUEST_PROGS[@]}"; do
		[ -x "/usr/bin/$p" ]
		run -0 man -w "$p"
		assert_output "/usr/share/man/man1/$p.1.gz"
	done
	# The paths the man pages and operations.md give.
	for p in operations.md install.md libvirt.md detection.md metrics.md \
	    recovery.md troubleshooting.md security.md store.md placement.md \
	    alerts.yml; do
		[ -f "/usr/share/doc/vfsentinel/$p" ]
	done
	[ -f /usr/share/doc/vfsentinel-guest/guest.md ]
	# shellcheck disable=SC2016 # a dpkg-query format, not shell
	run -0 dpkg-query -W -f='${Conffiles}' vfsentinel
	assert_output --partial /etc/vfsentinel/vfsentinel.conf
	for s in "${HOST_SV[@]}" "${GUEST_SV[@]}"; do
		[ -x "/etc/sv/$s/run" ]
		[ -x "/etc/sv/$s/log/run" ]
	done
	# The host programs are in the host package only, the guest's in the
	# guest package only.
	run -0 dpkg -L vfsentinel-guest
	refute_output --partial /usr/bin/vfstore
	run -0 dpkg -L vfsentinel
	refute_output --partial /usr/bin/vsock-answer
}

@test "vfstore --version runs from /usr/bin and says the package's version" {
	local v
	v=$(dpkg-query -W -f='${Version}' vfsentinel)
	run -0 /usr/bin/vfstore --version
	assert_output "vfstore (vfsentinel) $v"
	run -0 /usr/bin/vsock-answer --version
	assert_output "vsock-answer (vfsentinel) $v"
}

@test "postinst: the vfsentinel system user, and vfstore init gave it the data directory" {
	run -0 getent passwd vfsentinel
	local uid
	uid=$(cut -d: -f3 <<<"$output")
	[ "$uid" -lt 1000 ]
	run -0 stat -c %U /var/lib/vfsentinel/gpu
	assert_output vfsentinel
	run -0 /usr/bin/vfstore -c /etc/vfsentinel/vfsentinel.conf check
	run -0 jq -r .status <<<"$output"
	assert_output ok
}

# host_conf: a configuration for the test's fake host (and its data dir).
host_conf() {
	mk_host "$SYSFS" 1 2
	mkdir -p "$T/prom"
	cat >"$T/host.conf" <<-EOF2
	data_dir = $DATA
	sysfs_root = $SYSFS
	metrics.textfile_dir = $T/prom
	sentinel.interval = 1
	EOF2
}

@test "host services start from the installed service directories under a private runsvdir" {
	local s
	host_conf
	RUNIT_SRC=/etc/sv runit_copy "${HOST_SV[@]}"
	for s in "${HOST_SV[@]}"; do
		runit_env "$s" VFSENTINEL_CONF "$T/host.conf"
		runit_env "$s" PATH /usr/bin:/bin:/usr/sbin:/sbin
	done
	runit_start
	for s in "${HOST_SV[@]}"; do
		runit_wait_stat "$s" run 100
	done
	wait_long test -s "$T/prom/vfsentinel-resources.prom"
	run -0 grep -c '^hypeman_resources_gpu_slots{kind="total"} 2$' \
	    "$T/prom/vfsentinel-resources.prom"
	# Still up a moment later: none of them is crash-looping.
	sleep 2
	for s in "${HOST_SV[@]}"; do
		assert_equal "$(runit_stat "$s")" run
	done
}

@test "guest services start from the installed service directories; vsock-answer answers" {
	local s
	RUNIT_SRC=/etc/sv runit_copy "${GUEST_SV[@]}"
	mkdir -p "$T/run"
	for s in "${GUEST_SV[@]}"; do
		runit_env "$s" PATH /usr/bin:/bin:/usr/sbin:/sbin
		runit_env "$s" VFSENTINEL_EVENTS "$T/run/events"
	done
	runit_env vfsentinel-answer VFSENTINEL_LISTEN "unix:$T/answer.sock"
	runit_env vfsentinel-answer VFSENTINEL_STATE_FILE "$T/run/state.json"
	runit_env vfsentinel-kmsg VFSENTINEL_SYSFS_ROOT "$SYSFS"
	runit_start
	runit_wait_stat vfsentinel-answer run 100
	wait_long test -S "$T/answer.sock"
	run -0 socat -t 2 - "UNIX-CONNECT:$T/answer.sock" \
	    <<<'{"method":"GetGPUInitStatus"}'
	assert_output '{"state":"UNKNOWN"}'
	# kmsg-watch finds no NVIDIA function in the empty sysfs and settles:
	# its service stays down instead of respawning.
	wait_long grep -q 'GPU init watch not needed' \
	    /var/log/runit/vfsentinel-kmsg/current
	runit_wait_stat vfsentinel-kmsg down 100
}

@test "reinstalling the same version keeps an edited /etc/vfsentinel/vfsentinel.conf" {
	local conf=/etc/vfsentinel/vfsentinel.conf
	printf '\n# local edit\nsentinel.interval = 7\n' >>"$conf"
	run -0 env DEBIAN_FRONTEND=noninteractive dpkg -i "$VFS_DEB_DIR"/vfsentinel_*.deb
	run -0 tail -1 "$conf"
	assert_output 'sentinel.interval = 7'
	[ ! -e "$conf.dpkg-new" ]
	[ ! -e "$conf.dpkg-dist" ]
	run -0 /usr/bin/vfstore -c "$conf" config
	run -0 jq '."sentinel.interval"' <<<"$output"
	assert_output 7
}

@test "runit services log with svlogd to /var/log/runit/NAME, not under /etc/sv" {
	local s
	for s in "${HOST_SV[@]}" "${GUEST_SV[@]}"; do
		run -0 grep -F "svlogd -tt '/var/log/runit/$s'" "/etc/sv/$s/log/run"
		[ -d "/var/log/runit/$s" ]
	done
}

@test "a service that cannot drop to vfsentinel stays root and says why at warn, once" {
	host_conf
	RUNIT_SRC=/etc/sv runit_copy vfsentinel-resources
	runit_env vfsentinel-resources VFSENTINEL_CONF "$T/host.conf"
	runit_env vfsentinel-resources PATH /usr/bin:/bin:/usr/sbin:/sbin
	runit_env vfsentinel-resources INTERVAL 1
	# The test's textfile directory is root's 0755: vfsentinel may not
	# write it.
	runit_env vfsentinel-resources VFSENTINEL_USER vfsentinel
	runit_start
	runit_wait_stat vfsentinel-resources run 100
	wait_long test -s "$T/prom/vfsentinel-resources.prom"
	# Three reports later, still one line.
	local n=0
	while [ "$n" -lt 3 ]; do
		n=$((n + 1))
		rm -f "$T/prom/vfsentinel-resources.prom"
		wait_long test -s "$T/prom/vfsentinel-resources.prom"
	done
	run -0 grep -c -F "may not write the textfile directory $T/prom" \
	    /var/log/runit/vfsentinel-resources/current
	assert_output 1
	run -0 grep -F "$T/prom" /var/log/runit/vfsentinel-resources/current
	run -0 jq -r '.level + " " + .prog + " " + .msg' <<<"${output#* }"
	assert_output "warn vfsentinel-resources running as root: cannot drop to the service user"
	[ "$(stat -c %U "$T/prom/vfsentinel-resources.prom")" = root ]
}

@test "a configuration error takes a runit service down with one error line; no restart" {
	local s
	host_conf
	printf 'sentinel.interval = 1\nno.such_key = 1\n' >"$T/bad.conf"
	RUNIT_SRC=/etc/sv runit_copy vfsentinel-resources vfsentinel-answer
	for s in vfsentinel-resources vfsentinel-answer; do
		runit_env "$s" VFSENTINEL_CONF "$T/bad.conf"
		runit_env "$s" PATH /usr/bin:/bin:/usr/sbin:/sbin
	done
	mkdir -p "$T/run"
	runit_env vfsentinel-answer VFSENTINEL_EVENTS "$T/run/events"
	runit_env vfsentinel-answer VFSENTINEL_LISTEN "unix:$T/answer.sock"
	runit_env vfsentinel-answer VFSENTINEL_STATE_FILE "$T/run/state.json"
	runit_start
	for s in vfsentinel-resources vfsentinel-answer; do
		wait_long grep -q -F "$T/bad.conf" "/var/log/runit/$s/current"
		runit_wait_stat "$s" down 100
	done
	# Three seconds later: still down, still one line naming the file,
	# its line and the key (runsv would have restarted it three times).
	sleep 3
	for s in vfsentinel-resources vfsentinel-answer; do
		assert_equal "$(runit_stat "$s")" down
		run -0 grep -c -F "$T/bad.conf" "/var/log/runit/$s/current"
		assert_output 1
		run -0 grep -F "$T/bad.conf" "/var/log/runit/$s/current"
		assert_output --partial "$T/bad.conf:2: unknown key: no.such_key"
	done
	# Fixed and sv up: it runs again.
	cp "$T/host.conf" "$T/bad.conf"
	run -0 sv up "$RUNIT_SV/vfsentinel-resources"
	runit_wait_stat vfsentinel-resources run 100
}

@test "make deb installs only what building the packages needs (tools/deps.sh deb)" {
	# Stand-ins: nothing is installed; apt-get records what it is asked.
	mkdir -p "$T/stub" "$T/work"
	printf '#!/bin/sh\nexit 1\n' >"$T/stub/dpkg-query"
	printf '#!/bin/sh\necho "$*" >>"%s/apt.log"\n' "$T" >"$T/stub/apt-get"
	chmod +x "$T/stub/dpkg-query" "$T/stub/apt-get"
	cd "$T/work"
	run -0 env PATH="$T/stub:$PATH" sh "$BATS_TEST_DIRNAME/../../tools/deps.sh" deb
	run -0 grep '^install ' "$T/apt.log"
	assert_output --partial ' debhelper '
	assert_output --partial ' dh-runit '
	assert_output --partial ' libjansson-dev '
	local p
	for p in bats qemu-system-x86 valgrind libvirt-daemon debootstrap; do
		refute_output --partial " $p "
	done
	# No promtool, node_exporter or guest kernel download.
	run grep -c download "$T/apt.log"
	assert_output 0
	[ ! -e build-tools/promtool ]
}

@test "apt brings no second supervisor: nothing the packages depend on or recommend pulls runit-run" {
	need_tool apt-cache
	local d names
	debs
	for d in "${DEBS[@]}"; do
		names="$names $(dpkg-deb -f "$d" Pre-Depends Depends Recommends |
		    sed 's/^[A-Za-z-]*: //; s/([^)]*)//g; s/[,|]/ /g')"
	done
	# apt installs Recommends, and those of what they bring, by default.
	run -0 apt-cache depends --recurse --no-suggests --no-conflicts \
	    --no-breaks --no-replaces --no-enhances $names
	refute_line --regexp '(^|: |[|])<?runit-run>?$'
	refute_line --regexp '(^|: |[|])<?runit>?$'
}

@test "upgrade from an earlier build's layout: its statoverride on node_exporter's directory goes, an operator's stays" {
	local ne=/var/lib/prometheus/node-exporter other
	# What an earlier build's postinst left: node_exporter's directory writable by
	# the vfsentinel group.
	mkdir -p "$ne"
	dpkg-statoverride --list "$ne" >/dev/null &&
		dpkg-statoverride --remove "$ne"
	dpkg-statoverride --add --update root vfsentinel 0775 "$ne"
	run -0 env DEBIAN_FRONTEND=noninteractive dpkg -i "$VFS_DEB_DIR"/vfsentinel_*.deb
	run dpkg-statoverride --list "$ne"
	assert_failure
	run -0 stat -c '%U:%G %a' "$ne"
	assert_output "root:root 755"
	# An operator's own override of another directory is left alone.
	other=$(mktemp -d /var/tmp/vfs-other.XXXXXX)
	dpkg-statoverride --add --update root vfsentinel 0770 "$other"
	run -0 env DEBIAN_FRONTEND=noninteractive dpkg -i "$VFS_DEB_DIR"/vfsentinel_*.deb
	run -0 dpkg-statoverride --list "$other"
	dpkg-statoverride --remove "$other"
	rmdir "$other"
}

@test "node_exporter's directory stays root's; root's links there lead to vfsentinel's own textfiles" {
	local ne=/var/lib/prometheus/node-exporter p
	run -0 stat -c '%U:%G %a' "$ne"
	assert_output "root:root 755"
	run dpkg-statoverride --list "$ne"
	assert_failure
	run -0 stat -c '%U:%G %a' /var/lib/vfsentinel/metrics
	assert_output "vfsentinel:vfsentinel 755"
	for p in poller reconcile resources sentinel recovery; do
		run -0 stat -c '%U %F' "$ne/vfsentinel-$p.prom"
		assert_output "root symbolic link"
		run -0 readlink "$ne/vfsentinel-$p.prom"
		assert_output "/var/lib/vfsentinel/metrics/vfsentinel-$p.prom"
		run -0 stat -L -c '%U %F' "$ne/vfsentinel-$p.prom"
		assert_output --regexp '^vfsentinel regular (empty )?file$'
	done
}

# sponge_plant DIR: as vfsentinel, plants DIR/apt.prom -> $W/victim (a
# root file), then root writes DIR/apt.prom with sponge as the
# collectors' units do (prometheus-node-exporter-collectors).
sponge_plant() {
	echo 'root: keep' >"$W/victim"
	setpriv --reuid=vfsentinel --regid=vfsentinel --clear-groups \
	    ln -s "$W/victim" "$1/apt.prom" || true
	echo 'apt_upgrades_pending 0' | sponge "$1/apt.prom"
}

@test "sponge into node_exporter's directory follows no link the vfsentinel user planted (an earlier build's layout did)" {
	need_tool sponge
	# A directory every user can reach (the test's own may not be).
	W=$(mktemp -d /var/tmp/vfs-sponge.XXXXXX)
	chmod 0755 "$W"
	# An earlier build's layout: root:vfsentinel 0775, no sticky bit.
	mkdir -m 0775 "$W/old"
	chgrp vfsentinel "$W/old"
	sponge_plant "$W/old"
	run -0 cat "$W/victim"
	assert_output 'apt_upgrades_pending 0'
	# The installed layout: the user cannot plant, the file is root's own.
	local ne=/var/lib/prometheus/node-exporter
	rm -f "$ne/apt.prom"
	sponge_plant "$ne"
	run -0 cat "$W/victim"
	assert_output 'root: keep'
	run -0 stat -c '%U %F' "$ne/apt.prom"
	assert_output 'root regular file'
	rm -rf "$ne/apt.prom" "$W"
}

# Lifecycle under runit as an operator without runit as PID 1 runs it: a
# runsvdir over links to the installed /etc/sv/NAME (supervise in
# /run/runit/supervise/NAME), started once for the tests below, on the
# host's own configuration (this machine has no NVIDIA function: the
# sentinel waits, resources writes zeros).
LIFE_SV=(vfsentinel-sentinel vfsentinel-resources vfsentinel-reconcile
	vfsentinel-answer)

# life_pids: "NAME PID" of each service's ./run process (nothing if down).
life_pids() {
	local s p
	for s in "${LIFE_SV[@]}"; do
		p=$(sv status "/etc/sv/$s" 2>/dev/null |
			sed -n 's/^run: [^(]*(pid \([0-9]*\)).*/\1/p')
		echo "$s ${p:-}"
	done
}

# all_up: every lifecycle service runs.
all_up() {
	! life_pids | grep -q ' $'
}

# deleted_exes: the processes running a deleted vfsentinel file the
# packages installed (not a test's own build, which another test on this
# machine may be rebuilding).
deleted_exes() {
	local p
	for p in /proc/[0-9]*; do
		readlink "$p/exe" 2>/dev/null |
			grep -q '^/usr/s\?bin/.* (deleted)$' || continue
		grep -l -a -E 'vfstore|sentinel-poll|resources-report|vsock-answer|runsv' \
		    "$p/cmdline" 2>/dev/null
	done
}

# textfiles: the services' textfiles (and root's links to them) in the
# host's textfile directory and in vfsentinel's own.
textfiles() {
	ls /var/lib/prometheus/node-exporter/vfsentinel-*.prom \
	    /var/lib/vfsentinel/metrics/vfsentinel-*.prom 2>/dev/null
}

@test "runit lifecycle: the installed services under a runsvdir (not PID 1) write their textfiles" {
	local s scan=$BATS_FILE_TMPDIR/scan
	mkdir -p "$scan"
	for s in "${LIFE_SV[@]}"; do
		ln -s "/etc/sv/$s" "$scan/$s"
	done
	setsid runsvdir -P "$scan" </dev/null >/dev/null 2>&1 3>&- &
	echo $! >"$BATS_FILE_TMPDIR/runsvdir.pid"
	wait_long all_up || wait_long all_up
	wait_long test -s /var/lib/prometheus/node-exporter/vfsentinel-resources.prom
	# The services dropped to vfsentinel and write its own directory;
	# node_exporter's stays root's.
	run -0 stat -c '%U:%G %a' /var/lib/prometheus/node-exporter
	assert_output "root:root 755"
	run -0 stat -L -c %U /var/lib/prometheus/node-exporter/vfsentinel-resources.prom
	assert_output vfsentinel
	run -0 stat -c %U /var/lib/vfsentinel/metrics/vfsentinel-resources.prom
	assert_output vfsentinel
}

@test "runit lifecycle: an upgrade restarts every running service; nothing runs a deleted file" {
	[ -s "$BATS_FILE_TMPDIR/runsvdir.pid" ] || skip "no runsvdir (test above)"
	[ -n "${VFS_DEB_UPGRADE_DIR:-}" ] || skip "no upgrade packages"
	wait_long all_up
	life_pids >"$T/before"
	run -0 env DEBIAN_FRONTEND=noninteractive dpkg -i \
	    "$VFS_DEB_UPGRADE_DIR"/vfsentinel_*.deb \
	    "$VFS_DEB_UPGRADE_DIR"/vfsentinel-guest_*.deb
	wait_long all_up
	life_pids >"$T/after"
	local s old new
	for s in "${LIFE_SV[@]}"; do
		old=$(awk -v s="$s" '$1 == s { print $2 }' "$T/before")
		new=$(awk -v s="$s" '$1 == s { print $2 }' "$T/after")
		[ -n "$new" ] && [ "$new" != "$old" ] || {
			echo "$s: pid $old before the upgrade, '$new' after" >&2
			return 1
		}
	done
	run deleted_exes
	assert_output ""
	# The programs say the package's upstream version (SPEC 7.4).
	local v
	# shellcheck disable=SC2016 # a dpkg-query format, not shell
	v=$(dpkg-query -W -f='${Version}' vfsentinel)
	v=${v%-*}
	run -0 /usr/bin/vfstore --version
	assert_output "vfstore (vfsentinel) $v"
	run -0 /usr/bin/vsock-answer --version
	assert_output "vsock-answer (vfsentinel) $v"
	wait_long grep -q -F "vfsentinel_build_info{version=\"$v\"} 1" \
	    /var/lib/vfsentinel/metrics/vfsentinel-resources.prom
}

@test "runit lifecycle: remove stops the services, deletes textfiles and run-time files, keeps the store" {
	[ -s "$BATS_FILE_TMPDIR/runsvdir.pid" ] || skip "no runsvdir (test above)"
	wait_long test -s /var/lib/prometheus/node-exporter/vfsentinel-sentinel.prom
	[ -p /run/vfsentinel/events ]
	# What a vfrecover run leaves (vfrecover(1): no service writes it).
	echo 'vfsentinel_recovery_unfinished{card="0000:e3:00.0",step="idle"} 1' \
	    >/var/lib/vfsentinel/metrics/vfsentinel-recovery.prom
	# An invalid configuration (as when an operator removes a package
	# that crash-loops on it) removes them all the same.
	echo 'no.such_key = 1' >>/etc/vfsentinel/vfsentinel.conf
	run -78 vfstore -c /etc/vfsentinel/vfsentinel.conf config
	run -0 dpkg -r vfsentinel vfsentinel-guest
	run textfiles
	assert_output ""
	[ ! -e /run/vfsentinel ]
	run life_pids
	refute_output --regexp ' [0-9]+$'
	run deleted_exes
	assert_output ""
	# Still nothing a second later (no service came back to write).
	sleep 1
	run textfiles
	assert_output ""
	[ -d /var/lib/vfsentinel/gpu ]
	run -0 getent passwd vfsentinel
	# The textfile directory is root's again (the statoverride is gone).
	run dpkg-statoverride --list /var/lib/prometheus/node-exporter
	assert_failure
}

@test "dpkg --purge removes every file the packages installed" {
	local f left=
	dpkg -L vfsentinel vfsentinel-guest | sort -u >"$T/files"
	run -0 dpkg --purge vfsentinel vfsentinel-guest
	while read -r f; do
		# Directories other packages share (/usr/bin, /etc) stay.
		[ -d "$f" ] && continue
		if [ -e "$f" ] || [ -L "$f" ]; then
			left="$left $f"
		fi
	done <"$T/files"
	assert_equal "$left" ""
	[ ! -e /etc/vfsentinel/vfsentinel.conf ]
	for s in "${HOST_SV[@]}" "${GUEST_SV[@]}"; do
		[ ! -e "/etc/sv/$s" ]
		[ ! -e "/run/runit/supervise/$s" ]
		[ ! -e "/var/log/runit/$s" ]
	done
	run textfiles
	assert_output ""
	run deleted_exes
	assert_output ""
	# The store and the user stay.
	[ -d /var/lib/vfsentinel/gpu ]
	run -0 getent passwd vfsentinel
}

@test "dpkg -r takes the hook's ACL entries off the domains' channel sockets, walking libvirt's directory" {
	need_tool setfacl getfacl python3
	debs
	run -0 env DEBIAN_FRONTEND=noninteractive dpkg -i "${DEBS[@]}"
	# The hook's entry alone; beside an operator's entry for another
	# user; and a link to a socket elsewhere, which is never followed.
	# No claim names them: the walk finds them, not the ledger.
	channel_socket 1 vfsentinel
	channel_socket 2 vfsentinel nobody
	python3 -c 'import socket, sys
socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$T/elsewhere"
	setfacl -m u:vfsentinel:rw "$T/elsewhere"
	mkdir "$CHANNELS/domain-999999-vfsentinel-test-3"
	ln -s "$T/elsewhere" "$CHANNELS/domain-999999-vfsentinel-test-3/org.vfsentinel.0"
	run -0 dpkg -r vfsentinel vfsentinel-guest
	local d=$CHANNELS/domain-999999-vfsentinel-test
	run -0 getfacl -c -n -P "$d-1/org.vfsentinel.0"
	refute_line --regexp '^(user|group):[0-9]'
	refute_line --regexp '^mask:'
	run -0 getfacl -c -P "$d-2/org.vfsentinel.0"
	refute_line 'user:vfsentinel:rw-'
	assert_line 'user:nobody:rw-'
	run -0 getfacl -c "$T/elsewhere"
	assert_line 'user:vfsentinel:rw-'
	# The user and the store stay (install.md, "Upgrade and removal").
	run -0 getent passwd vfsentinel
	[ -d /var/lib/vfsentinel/gpu ]
}

@test "a first installation beside a running libvirtd with no other qemu hook says to restart it once; an upgrade or another hook does not" {
	local line="vfsentinel: restart libvirtd once for its qemu hook to take effect (running domains keep running)"
	dpkg --purge vfsentinel-openstack vfsentinel vfsentinel-guest >/dev/null 2>&1 || true
	# A process named libvirtd, as the daemon's comm reads.
	cp /bin/sleep "$T/libvirtd"
	"$T/libvirtd" 300 3>&- &
	local pid=$!
	run -0 env DEBIAN_FRONTEND=noninteractive dpkg -i "$VFS_DEB_DIR"/vfsentinel_*.deb
	assert_line "$line"
	run -0 env DEBIAN_FRONTEND=noninteractive dpkg -i "$VFS_DEB_DIR"/vfsentinel_*.deb
	refute_line "$line"
	dpkg --purge vfsentinel >/dev/null
	mkdir -p /etc/libvirt/hooks/qemu.d
	printf '#!/bin/sh\n' >/etc/libvirt/hooks/qemu.d/other-test-hook
	run -0 env DEBIAN_FRONTEND=noninteractive dpkg -i "$VFS_DEB_DIR"/vfsentinel_*.deb
	rm -f /etc/libvirt/hooks/qemu.d/other-test-hook
	refute_line "$line"
	kill "$pid"
	wait "$pid" || true
	dpkg --purge vfsentinel >/dev/null
	run -0 env DEBIAN_FRONTEND=noninteractive dpkg -i "$VFS_DEB_DIR"/vfsentinel_*.deb
	refute_line "$line"
}
