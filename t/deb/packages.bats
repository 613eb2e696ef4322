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
HOST_SV=(vfsentinel-sentinel vfsentinel-resources vfsentinel-reconcile)
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
}

setup() {
	vfs_setup
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
	for p in operations.md security.md store.md placement.md alerts.yml; do
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

# deleted_exes: the processes (any) running a deleted vfsentinel file.
deleted_exes() {
	local p
	for p in /proc/[0-9]*; do
		readlink "$p/exe" 2>/dev/null | grep -q ' (deleted)$' || continue
		grep -l -a -E 'vfstore|sentinel-poll|resources-report|vsock-answer|runsv' \
		    "$p/cmdline" 2>/dev/null
	done
}

# textfiles: the services' textfiles in the host's textfile directory.
textfiles() {
	ls /var/lib/prometheus/node-exporter/vfsentinel-*.prom 2>/dev/null
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
	# The package gave vfsentinel the directory: the services dropped.
	run -0 stat -c '%U:%G %a' /var/lib/prometheus/node-exporter
	assert_output "root:vfsentinel 775"
	run -0 stat -c %U /var/lib/prometheus/node-exporter/vfsentinel-resources.prom
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
}

@test "runit lifecycle: remove stops the services, deletes textfiles and run-time files, keeps the store" {
	[ -s "$BATS_FILE_TMPDIR/runsvdir.pid" ] || skip "no runsvdir (test above)"
	wait_long test -s /var/lib/prometheus/node-exporter/vfsentinel-sentinel.prom
	[ -p /run/vfsentinel/events ]
	# What a vfrecover run leaves (vfrecover(1): no service writes it).
	echo 'vfsentinel_recovery_unfinished{card="0000:e3:00.0",step="idle"} 1' \
	    >/var/lib/prometheus/node-exporter/vfsentinel-recovery.prom
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
