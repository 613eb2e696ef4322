#!/usr/bin/env bats
# systemd.bats - the packages under a real systemd as PID 1 (make
# check-deb, SPEC 6.7): a minimal Debian system with
# prometheus-node-exporter (t/deb/systemd-rootfs.sh, cached in
# build-tools/) boots in systemd-nspawn; the freshly built packages are
# installed inside it and checked: every unit running as its user, a
# killed process of a unit leaving exactly one instance, a promtool-valid
# textfile, exactly one supervisor when runit runs too, an upgrade that
# restarts every unit, the placement unit of vfsentinel-openstack against
# the real OpenStack Placement, and a purge that leaves no unit, process
# or textfile but keeps the store and the user.
#
# The tests share one container and run in order. It needs root,
# systemd-nspawn and the cached rootfs (make check-deb makes both);
# VFS_DEB_DIR and VFS_DEB_UPGRADE_DIR name the packages and their
# higher-version rebuild.

VFS_ROOT=${VFS_ROOT:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}
load ../helpers
load ../lib/openstack
# The installed services source the installed sv-lib.sh: a runsvdir
# started in the container must not inherit the tree's path.
unset VFSENTINEL_SV_LIB

HOST_UNITS=(vfsentinel-sentinel vfsentinel-resources vfsentinel-reconcile
	vfsentinel-verify)
GUEST_UNITS=(vfsentinel-answer vfsentinel-kmsg vfsentinel-probe)
# The units that keep running here: kmsg-watch and gpu-probe find no
# NVIDIA function in the container and settle (exit 0, unit inactive).
RUNNING=(vfsentinel-sentinel vfsentinel-resources vfsentinel-reconcile
	vfsentinel-verify vfsentinel-answer)
PROM=/var/lib/prometheus/node-exporter

setup_file() {
	[ -n "${VFS_DEB_DIR:-}" ] || skip "run through make check-deb"
	[ "$(id -u)" = 0 ] || skip "boots a container: needs root"
	command -v systemd-nspawn >/dev/null ||
		skip "systemd-nspawn missing (tools/deps.sh deb installs it)"
	local tar=$VFS_TOOLS/systemd-rootfs.tar.zst
	[ -s "$tar" ] ||
		skip "no cached rootfs (make check-deb runs t/deb/systemd-rootfs.sh)"
	date +%s >"$BATS_FILE_TMPDIR/start"
	CT_ROOT=$BATS_FILE_TMPDIR/root
	mkdir -m 0755 "$CT_ROOT"
	zstd -dc "$tar" | tar -xf - -C "$CT_ROOT"
	chmod 0755 "$CT_ROOT"
	mkdir -p "$CT_ROOT/var/tmp/debs" "$CT_ROOT/var/tmp/up"
	cp "$VFS_DEB_DIR"/vfsentinel_*.deb "$VFS_DEB_DIR"/vfsentinel-guest_*.deb \
	    "$CT_ROOT/var/tmp/debs/"
	cp "$VFS_DEB_UPGRADE_DIR"/vfsentinel_*.deb \
	    "$VFS_DEB_UPGRADE_DIR"/vfsentinel-guest_*.deb "$CT_ROOT/var/tmp/up/"
	# vfsentinel-openstack, installed after the upgrade (its version is
	# the upgraded host package's).
	mkdir -p "$CT_ROOT/var/tmp/openstack"
	cp "$VFS_DEB_UPGRADE_DIR"/vfsentinel-openstack_*.deb \
	    "$CT_ROOT/var/tmp/openstack/"
	# Its own cgroup: the container's init.scope must not collide with
	# another container's (real-vms.md).
	CT_CG=/sys/fs/cgroup/unified/vfs-systemd-bats-$$
	[ -d /sys/fs/cgroup/unified ] || CT_CG=
	[ -z "$CT_CG" ] || mkdir "$CT_CG"
	CT_NAME=vfs-bats-$$
	export CT_ROOT CT_CG CT_NAME
	# shellcheck disable=SC2016 # $1 and $$ are the inner shell's
	setsid sh -c '[ -z "$1" ] || echo $$ >"$1/cgroup.procs"
	    SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 exec systemd-nspawn -D "$2" \
	    -b --register=no --keep-unit --private-network --console=pipe \
	    -M "$3"' sh "$CT_CG" "$CT_ROOT" "$CT_NAME" \
	    </dev/null >"$BATS_FILE_TMPDIR/nspawn.log" 2>&1 3>&- &
	NSPAWN_PID=$!
	export NSPAWN_PID
	local i
	for ((i = 0; i < 300; i++)); do
		CT_PID=$(pgrep -P "$NSPAWN_PID" -x systemd) && break
		sleep 0.1
	done
	[ -n "$CT_PID" ] || { cat "$BATS_FILE_TMPDIR/nspawn.log" >&3; return 1; }
	export CT_PID
	for ((i = 0; i < 300; i++)); do
		case $(ct systemctl is-system-running 2>/dev/null) in
		running | degraded) break ;;
		esac
		sleep 0.1
	done
	# The guest package first, as on a guest image: it makes the
	# vfsentinel user that vsock-answer drops to by itself.
	ct env DEBIAN_FRONTEND=noninteractive sh -c 'dpkg -i \
	    /var/tmp/debs/vfsentinel-guest_*.deb &&
	    dpkg -i /var/tmp/debs/vfsentinel_*.deb' \
	    >"$BATS_FILE_TMPDIR/install.log" 2>&1 ||
		{ cat "$BATS_FILE_TMPDIR/install.log" >&3; return 1; }
}

teardown_file() {
	placement_down
	[ -n "${NSPAWN_PID:-}" ] || return 0
	ct systemctl poweroff >/dev/null 2>&1 || true
	local i
	for ((i = 0; i < 100; i++)); do
		kill -0 "$NSPAWN_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$NSPAWN_PID" 2>/dev/null || true
	wait "$NSPAWN_PID" 2>/dev/null || true
	[ -z "${CT_CG:-}" ] || rmdir "$CT_CG" 2>/dev/null || true
	echo "# systemd.bats: $(($(date +%s) - $(cat "$BATS_FILE_TMPDIR/start"))) s" \
	    "from restoring the rootfs to poweroff" >&3
}

setup() {
	vfs_setup
}

# ct CMD...: runs CMD inside the container (all its namespaces).
ct() {
	nsenter -t "$CT_PID" -a "$@"
}

# prop UNIT PROPERTY: the unit's property value.
prop() {
	ct systemctl show -P "$2" "$1.service"
}

# procs UNIT: the pids in the unit's cgroup, one a line, sorted.
procs() {
	ct cat "/sys/fs/cgroup$(prop "$1" ControlGroup)/cgroup.procs" |
		sort -n
}

# comms UNIT: the unit's processes' names, sorted (resources-report, a
# short-lived child of the resources loop, left out).
comms() {
	local p
	for p in $(procs "$1"); do
		ct cat "/proc/$p/comm" 2>/dev/null
	done | grep -vx resources-report | sort
}

active() {
	[ "$(prop "$1" ActiveState)" = active ]
}

# in_state UNIT STATE: the unit's ActiveState is STATE (read anew at
# each call: wait_secs polls it).
in_state() {
	[ "$(prop "$1" ActiveState)" = "$2" ]
}

# one_new_instance UNIT "OLDPIDS" "COMMS": UNIT is active, none of OLDPIDS
# is still in its cgroup or alive, and its processes are again COMMS.
one_new_instance() {
	local p
	active "$1" || return 1
	for p in $2; do
		ct kill -0 "$p" 2>/dev/null && return 1
	done
	[ "$(comms "$1" | tr '\n' ' ')" = "$3" ]
}

@test "every unit is enabled and runs as its user; kmsg and probe settle" {
	local u user
	for u in "${HOST_UNITS[@]}" "${GUEST_UNITS[@]}"; do
		run -0 ct systemctl is-enabled "$u.service"
	done
	for u in "${RUNNING[@]}"; do
		wait_secs 30 active "$u"
	done
	for u in "${RUNNING[@]}"; do
		case $u in
		vfsentinel-reconcile | vfsentinel-verify) user=root ;;
		*) user=vfsentinel ;;
		esac
		wait_secs 30 active "$u" ||
			ct journalctl -u "$u" -n 20 --no-pager >&2
		run -0 ct ps -o user= -p "$(prop "$u" MainPID)"
		assert_output "$user"
	done
	# The settled guest units exited 0 and are not failed.
	for u in vfsentinel-kmsg vfsentinel-probe; do
		wait_secs 30 in_state "$u" inactive
		assert_equal "$(prop "$u" Result)" success
		assert_equal "$(prop "$u" ExecMainStatus)" 0
	done
	# The drop needed nothing but the packages (the guest's made the
	# user vsock-answer drops to): node_exporter's stock textfile
	# directory stays root's 0755, and nothing said it stayed root.
	run -0 ct stat -c '%U:%G %a' "$PROM"
	assert_output "root:root 755"
	run ct journalctl -q --no-pager -u 'vfsentinel-*'
	refute_output --partial 'running as root'
}

# caps PID: the uid and effective capability set of PID in the container.
# shellcheck disable=SC2016 # awk's $2
caps() {
	ct awk '/^Uid:/ { u = $2 } /^CapEff:/ { c = $2 } END { print u, c }' \
	    "/proc/$1/status"
}

@test "the sentinel unit: sentinel-poll's opener alone holds CAP_DAC_READ_SEARCH; the parser and vfstore apply nothing" {
	local apply poller opener uid f
	wait_secs 30 active vfsentinel-sentinel
	uid=$(ct id -u vfsentinel)
	apply=$(prop vfsentinel-sentinel MainPID)
	run -0 ct cat "/proc/$apply/comm"
	assert_output vfstore
	wait_secs 30 ct pgrep -P "$apply" -x sentinel-poll
	poller=$(ct pgrep -P "$apply" -x sentinel-poll)
	wait_secs 30 ct pgrep -P "$poller" -x sentinel-opener
	opener=$(ct pgrep -P "$poller" -x sentinel-opener)
	# CAP_DAC_READ_SEARCH is bit 2: the opener's alone (SPEC 8.3); the
	# poller, which parses the guests' bytes, holds nothing.
	run -0 caps "$opener"
	assert_output "$uid 0000000000000004"
	run -0 caps "$poller"
	assert_output "$uid 0000000000000000"
	run -0 ct awk '$1 == "NoNewPrivs:" { print $2 }' "/proc/$poller/status"
	assert_output 1
	run -0 caps "$apply"
	assert_output "$uid 0000000000000000"
	# What the capability could read besides is hidden from the unit:
	# an inaccessible node (mode 0) over each secret.
	for f in /etc/shadow /etc/ssh; do
		ct test -e "$f" || continue
		run -0 ct nsenter -t "$poller" -m stat -c %a "$f"
		assert_output 0
	done
}

@test "the textfiles are written by vfsentinel and promtool-valid; node_exporter serves them" {
	need_tool promtool
	local f
	wait_secs 30 ct test -s "$PROM/vfsentinel-resources.prom"
	wait_secs 60 ct test -s "$PROM/vfsentinel-reconcile.prom"
	for f in resources reconcile; do
		run -0 ct stat -L -c %U "$PROM/vfsentinel-$f.prom"
		[ "$f" = reconcile ] || assert_output vfsentinel
		ct cat "$PROM/vfsentinel-$f.prom" >"$T/$f.prom"
		run -0 "$VFS_TOOLS/promtool" check metrics <"$T/$f.prom"
	done
	run -0 grep -c '^hypeman_resources_gpu_slots{' "$T/resources.prom"
}

# scrape: node_exporter's page, from Debian's prometheus-node-exporter
# running in the container (bash's /dev/tcp: no curl there).
scrape() {
	# shellcheck disable=SC2016 # the container's bash expands it
	ct bash -c 'exec 3<>/dev/tcp/127.0.0.1/9100 &&
	    printf "GET /metrics HTTP/1.0\r\n\r\n" >&3 && cat <&3'
}

# has_series: node_exporter's page has the resources textfile's series.
has_series() {
	scrape | grep -q '^hypeman_resources_gpu_slots{'
}

@test "Debian's node_exporter serves the vfsentinel series through root's links, no scrape error" {
	wait_secs 60 has_series ||
		fail "no vfsentinel series: $(scrape 2>&1 | grep -i textfile)"
	scrape >"$T/page"
	run -0 grep -c '^vfsentinel_build_info{' "$T/page"
	run -0 grep -x 'node_textfile_scrape_error 0' "$T/page"
	run -0 grep -F "file=\"$PROM/vfsentinel-resources.prom\"" "$T/page"
	run -0 ct stat -c '%U %F' "$PROM/vfsentinel-resources.prom"
	assert_output 'root symbolic link'
}

@test "a configuration error leaves the unit failed, the error in systemctl status; no restart" {
	local conf=/etc/vfsentinel/vfsentinel.conf u
	ct cp "$conf" /var/tmp/conf.orig
	ct sh -c "echo 'no.such_key = 1' >>$conf"
	local n
	n=$(ct grep -c '' "$conf")
	for u in vfsentinel-resources vfsentinel-answer; do
		run -0 ct systemctl restart "$u.service"
	done
	for u in vfsentinel-resources vfsentinel-answer; do
		wait_secs 30 in_state "$u" failed ||
			fail "$u: $(ct systemctl status "$u" --no-pager 2>&1)"
		assert_equal "$(prop "$u" ExecMainStatus)" 78
	done
	sleep 3
	for u in vfsentinel-resources vfsentinel-answer; do
		assert_equal "$(prop "$u" ActiveState)" failed
		run ct systemctl status "$u.service" --no-pager -n 20
		assert_output --partial "$conf:$n: unknown key: no.such_key"
		run -0 ct systemctl --failed --no-legend --plain
		assert_output --partial "$u.service"
	done
	# The journal command of operations.md works as printed: systemd's
	# own lines about the failure are not in it, the error is.
	run -0 ct sh -c 'journalctl -u vfsentinel-resources -o cat \
	    _TRANSPORT=stdout | jq -c .'
	assert_output --partial "$conf:$n: unknown key: no.such_key"
	run -0 ct journalctl -u vfsentinel-resources -o cat
	assert_output --partial 'Failed with result'
	# Fixed: a start runs it again; other exits still restart (below).
	ct cp /var/tmp/conf.orig "$conf"
	for u in vfsentinel-resources vfsentinel-answer; do
		run -0 ct systemctl restart "$u.service"
		wait_secs 30 active "$u"
	done
}

@test "the units run without runit installed (no chpst, no sv on the host)" {
	local u
	ct mv /usr/bin/chpst /usr/bin/chpst.off
	ct mv /usr/bin/sv /usr/bin/sv.off
	for u in "${RUNNING[@]}"; do
		ct systemctl restart "$u.service"
	done
	local ok=1
	for u in "${RUNNING[@]}"; do
		if ! wait_secs 30 active "$u" ||
		    ! sleep 1 || ! active "$u"; then
			ok=
			ct journalctl -u "$u" -n 10 --no-pager >&2
		fi
	done
	run ct ps -o user= -p "$(prop vfsentinel-answer MainPID)"
	ct mv /usr/bin/chpst.off /usr/bin/chpst
	ct mv /usr/bin/sv.off /usr/bin/sv
	[ -n "$ok" ]
	assert_output vfsentinel
}

@test "systemctl kill -s KILL of each process of a unit leaves exactly one instance" {
	local u p old want
	for u in "${RUNNING[@]}"; do
		wait_secs 30 active "$u"
		want=$(comms "$u" | tr '\n' ' ')
		[ -n "$want" ]
		for p in $(procs "$u"); do
			[ "$(ct cat "/proc/$p/comm" 2>/dev/null)" = resources-report ] &&
				continue
			old=$(procs "$u" | tr '\n' ' ')
			ct kill -KILL "$p" 2>/dev/null || continue
			wait_secs 30 one_new_instance "$u" "$old" "$want" || {
				echo "$u after kill -9 of $p: $(comms "$u" | tr '\n' ' ')," \
				    "wanted $want" >&2
				return 1
			}
		done
		old=$(procs "$u" | tr '\n' ' ')
		run -0 ct systemctl kill -s KILL "$u.service"
		wait_secs 30 one_new_instance "$u" "$old" "$want"
	done
}

# runit_down NAME: runit's instance of NAME is down, and runsv has taken
# the run script's own sv down. A run that exits within a second leaves
# runsv asleep for that second with the status "down, want up" and the
# script's "d" unread; an sv up sent then is dropped by sv (the status
# already wants up), and the "d" read after it keeps the service down.
runit_down() {
	local s
	s=$(ct sv status "/etc/sv/$1") || return
	[[ $s == down:* && $s != *"want up"* ]]
}

# count_procs PATTERN: how many processes' command lines match PATTERN.
count_procs() {
	ct pgrep -c -f "$1" || true
}

# no_procs PATTERN: no process's command line matches PATTERN.
no_procs() {
	[ "$(count_procs "$1")" = 0 ]
}

# svc_state NAME: what runit and systemd say of service NAME, and the
# end of its runit log (for a failure's message).
svc_state() {
	ct sh -c 'sv status "/etc/sv/$1"; systemctl is-enabled "$1.service"
	    systemctl is-active "$1.service"; tail -n 5 "/var/log/runit/$1/current"
	    ps -eo pid,ppid,stat,args' - "$1" 2>&1
}

# one_loop SERVICE: exactly one process named run has the service
# directory as its working directory (the service's loop). A fork of the
# loop (the child before it execs resources-report) is one more for a
# moment, so callers poll it: two supervisors would make it two for good.
one_loop() {
	# shellcheck disable=SC2016 # the container's shell expands it
	[ "$(ct sh -c 'for p in $(pgrep -x run); do
	    readlink /proc/$p/cwd; done | grep -c "/$1\$"' - "$1")" = 1 ]
}

@test "exactly one supervisor: runit defers to the enabled units, and takes over a disabled one" {
	local u
	# A runsvdir over /etc/service, where runit-helper enabled the
	# services (as runit-systemd or an operator would run it).
	ct sh -c 'setsid runsvdir -P /etc/service </dev/null >/dev/null 2>&1 &'
	# The log line first, then down: runsv says down for a moment before
	# it starts ./run, and a run that logged has still to send its own
	# sv down; an sv up sent before that one lands is undone by it
	# (runit_down waits for runsv to have read it).
	for u in "${HOST_UNITS[@]}" vfsentinel-answer; do
		wait_secs 30 ct grep -q 'systemd runs this service; runit keeps it down' \
		    "/var/log/runit/$u/current"
		wait_secs 30 runit_down "$u"
	done
	run -0 count_procs '^vfstore apply'
	assert_output 1
	# Switching one service to runit: disable the unit, sv up.
	run -0 ct systemctl disable --now vfsentinel-resources.service
	run -0 ct sv up /etc/sv/vfsentinel-resources
	wait_secs 30 ct sh -c 'sv status /etc/sv/vfsentinel-resources | grep -q "^run:"' ||
	    fail "runit does not run it: $(svc_state vfsentinel-resources)"
	# Starting the unit by hand now leaves it inactive: runit runs it.
	run -0 ct systemctl start vfsentinel-resources.service
	assert_equal "$(prop vfsentinel-resources ActiveState)" inactive
	# One resources loop (bash, named after its script, in the service
	# directory) in the system.
	wait_secs 10 one_loop vfsentinel-resources
	# And back.
	run -0 ct sv down /etc/sv/vfsentinel-resources
	wait_secs 30 runit_down vfsentinel-resources
	run -0 ct systemctl enable --now vfsentinel-resources.service
	wait_secs 30 active vfsentinel-resources
}

@test "an upgrade restarts every running unit; no process runs a deleted file" {
	local u p
	declare -A main
	for u in "${RUNNING[@]}"; do
		wait_secs 30 active "$u"
		main[$u]=$(prop "$u" MainPID)
	done
	run -0 ct env DEBIAN_FRONTEND=noninteractive \
	    sh -c 'dpkg -i /var/tmp/up/*.deb'
	# shellcheck disable=SC2016 # a dpkg-query format, not shell
	run -0 ct dpkg-query -W -f '${Version}' vfsentinel
	[[ $output == *+* ]]
	for u in "${RUNNING[@]}"; do
		wait_secs 30 active "$u"
		[ "$(prop "$u" MainPID)" != "${main[$u]}" ]
		for p in $(procs "$u"); do
			run ct readlink "/proc/$p/exe"
			refute_output --partial '(deleted)'
		done
	done
}

# The real OpenStack Placement (python3-placement's placement-api, sqlite,
# noauth2) started on this machine inside the container's network
# namespace (t/lib/openstack.bash's placement_db), so that the
# container's 127.0.0.1:8778 is Placement; its pid in DIR/pid. ctree runs
# t/lib/nova-tree.py there (Nova's provider trees).
placement_up() {
	local d=$BATS_FILE_TMPDIR/placement
	placement_db "$d"
	OS_PLACEMENT_CONFIG_DIR=$d nsenter -t "$CT_PID" -n \
	    placement-api --host 127.0.0.1 --port 8778 \
	    </dev/null >"$d/api.log" 2>&1 3>&- &
	echo $! >"$d/pid"
	wait_secs 60 placement_answers ||
		fail "Placement did not start: $(tail -n 20 "$d/api.log")"
}

placement_answers() {
	ctree request GET / | grep -q '"status":200'
}

placement_down() {
	[ -s "$BATS_FILE_TMPDIR/placement/pid" ] || return 0
	kill "$(cat "$BATS_FILE_TMPDIR/placement/pid")" 2>/dev/null || :
	rm -f "$BATS_FILE_TMPDIR/placement/pid"
}

ctree() {
	nsenter -t "$CT_PID" -n /usr/bin/python3 "$PL_HELPER" "$@"
}

# allocated NODE VF: the VF's provider holds vfsentinel's allocation.
allocated() {
	ctree show "$1" | jq -se --arg n "${1}_pci_$(tr :. __ <<<"$2")" \
	    'any(.[]; .name == $n and (.allocations | length) == 1)' >/dev/null
}

# excluded_served N: node_exporter serves placement-sync's gauge at N.
excluded_served() {
	scrape | grep -qx "vfsentinel_placement_excluded_vfs $1"
}

# as_vfsentinel CMD...: CMD in the container as the service user.
as_vfsentinel() {
	ct setpriv --reuid=vfsentinel --regid=vfsentinel --clear-groups "$@"
}

@test "the placement unit (vfsentinel-openstack): as vfsentinel, no capability, with the real Placement; a store change reaches it; a configuration error leaves it failed; purge removes it" {
	need_tool placement-api placement-manage jq
	local node=ct-node vf4=0000:e3:00.4 vf5=0000:e3:00.5 pid
	local conf=/etc/vfsentinel/placement.conf pl=vfsentinel-placement
	run -0 ct env DEBIAN_FRONTEND=noninteractive \
	    sh -c 'dpkg -i /var/tmp/openstack/vfsentinel-openstack_*.deb'
	# Neither enabled nor started by the package.
	assert_equal "$(ct systemctl is-enabled $pl.service 2>&1)" disabled
	assert_equal "$(prop $pl ActiveState)" inactive
	placement_up
	run -0 ctree tree "$node" --vf $vf4 --vf $vf5
	# The card (a fake sysfs tree, the one fake: the NVIDIA driver),
	# named by the service's env/VFSENTINEL_CONF; the store, the lock and
	# the textfile directory are the package's.
	mk_card "$CT_ROOT/srv/vfs" 0000:e3:00.0
	mk_vf "$CT_ROOT/srv/vfs" 0000:e3:00.0 $vf4
	mk_vf "$CT_ROOT/srv/vfs" 0000:e3:00.0 $vf5
	chmod -R a+rX "$CT_ROOT/srv/vfs"
	echo 'sysfs_root = /srv/vfs' >"$CT_ROOT/srv/vfs/vfsentinel.conf"
	echo /srv/vfs/vfsentinel.conf >"$CT_ROOT/etc/sv/$pl/env/VFSENTINEL_CONF"
	# placement.conf as an operator writes it (cat > keeps root:vfsentinel 0640).
	ct sh -c "printf '[placement]\nauth_type = admin_token\nendpoint = http://127.0.0.1:8778\ntoken = admin\n[vfsentinel]\ncompute_node = $node\n' >$conf"
	run -0 ct stat -c '%U:%G %a' "$conf"
	assert_output 'root:vfsentinel 640'
	run -0 as_vfsentinel vfstore -c /srv/vfs/vfsentinel.conf quarantine --vf $vf5
	run -0 ct systemctl enable --now $pl.service
	wait_secs 60 allocated "$node" $vf5 ||
		fail "not excluded in Placement: $(ct journalctl -u $pl -n 20 --no-pager 2>&1)"
	run allocated "$node" $vf4
	assert_failure
	# As the unit runs it: the service user, no capability, no new
	# privileges; one placement-sync, the unit's main process.
	active $pl
	pid=$(prop $pl MainPID)
	run -0 ct ps -o user:20=,comm= -p "$pid"
	assert_output --regexp '^vfsentinel +placement-sync$'
	run -0 ct grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs):' "/proc/$pid/status"
	assert_line --regexp '^CapEff:[[:space:]]+0+$'
	assert_line --regexp '^CapBnd:[[:space:]]+0+$'
	assert_line --regexp '^NoNewPrivs:[[:space:]]+1$'
	# Its textfile, through root's link, served by node_exporter.
	wait_secs 30 excluded_served 1 ||
		fail "$(scrape | grep -i 'placement\|textfile')"
	run -0 ct stat -L -c %U "$PROM/$pl.prom"
	assert_output vfsentinel
	# A store change wakes it (inotify inside the unit's sandbox).
	run -0 as_vfsentinel vfstore -c /srv/vfs/vfsentinel.conf quarantine --vf $vf4
	wait_secs 30 allocated "$node" $vf4 ||
		fail "store change not applied: $(ctree show "$node" 2>&1; ct journalctl -u $pl -n 20 --no-pager 2>&1)"
	wait_secs 30 excluded_served 2
	# A configuration error: exit 78, the unit failed, not restarted.
	ct sh -c "printf '[placement]\nauth_type = nosuch\n' >$conf"
	run -0 ct systemctl restart $pl.service
	wait_secs 30 in_state $pl failed ||
		fail "$(ct systemctl status $pl --no-pager 2>&1)"
	assert_equal "$(prop $pl ExecMainStatus)" 78
	sleep 3
	assert_equal "$(prop $pl ActiveState)" failed
	run -0 ct journalctl -u $pl -o cat --no-pager
	assert_output --partial 'bad configuration'
	# Purge: no unit, no process, no textfile link; the store stays.
	placement_down
	run -0 ct dpkg --purge vfsentinel-openstack
	run ct systemctl list-unit-files --no-legend $pl.service
	assert_output ""
	run ct test -e /etc/sv/$pl
	assert_failure
	run ct test -e "$PROM/$pl.prom"
	assert_failure
	run -0 count_procs placement-sync
	assert_output 0
	run -0 ct test -s /var/lib/vfsentinel/gpu/vf-health.json
}

@test "purge leaves no unit, no process, no textfile; the store and the user stay" {
	local u
	# The runsvdir the supervisor test started goes as runit's own stop
	# does it: HUP, a TERM to each runsv, which stops its service.
	ct sh -c 'pkill -HUP -x runsvdir; true'
	wait_secs 10 no_procs '^runsv '
	# (vfsentinel-openstack is purged by the test before; named here too
	# so that its failure does not fail this one: dpkg ignores it then.)
	run -0 ct dpkg --purge vfsentinel-openstack vfsentinel vfsentinel-guest
	for u in "${HOST_UNITS[@]}" "${GUEST_UNITS[@]}"; do
		run ct systemctl list-unit-files --no-legend "$u.service"
		assert_output ""
		run ct test -e "/etc/sv/$u"
		assert_failure
	done
	local ours='sentinel-poll|vfstore|resources-report|vsock-answer|kmsg-watch|gpu-probe|placement-sync'
	wait_secs 10 no_procs "$ours" ||
		fail "left after purge: $(ct pgrep -a -f "$ours")"
	run ct sh -c "ls $PROM | grep vfsentinel"
	assert_output ""
	run -0 ct stat -c '%U:%G %a' "$PROM"
	assert_output "root:root 755"
	run ct test -e /run/vfsentinel/events
	assert_failure
	run -0 ct test -d /var/lib/vfsentinel/gpu
	run -0 ct getent passwd vfsentinel
}
