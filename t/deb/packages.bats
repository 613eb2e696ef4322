#!/usr/bin/env bats
# packages.bats - the Debian packages (make check-deb, SPEC 5 last item):
# lintian, then both packages installed on this machine (as root), the
# files where the man pages and operations.md say, the services started
# from the installed service directories under a private runsvdir, an
# upgrade over the same version keeping an edited configuration, and a
# purge that removes every file the packages installed.
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
	    "$RUNIT_SV/vfsentinel-kmsg/log/main/current"
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
	done
}
