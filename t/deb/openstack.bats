#!/usr/bin/env bats
# openstack.bats - the package vfsentinel-openstack (SPEC 8.4), from make
# check-deb: installed with vfsentinel, removed and purged, inside a
# copy of this machine that changes nothing on it (an overlay over / in
# a private mount namespace, chrooted into): placement.conf root:vfsentinel
# 0640, neither unit nor runit service enabled, the textfile and its
# link made and removed, nothing left in /etc/sv after the purge.
# The scripts are in single quotes on purpose: they run in the copy.
# shellcheck disable=SC2016

load ../helpers

setup() {
	[ -n "${VFS_DEB_DIR:-}" ] || skip "run through make check-deb"
	[ "$(id -u)" = 0 ] || skip "mounts an overlay: needs root"
	T=$BATS_TEST_TMPDIR
	mkdir -p "$T/upper" "$T/work" "$T/root"
	unshare -m true 2>/dev/null || skip "unshare -m not permitted"
}

# in_copy SCRIPT: SCRIPT (sh) as root in the copy of this machine, the
# two packages in /tmp/debs there.
in_copy() {
	unshare -m --propagation private sh -eu -c '
		t=$1 debs=$2 script=$3
		mount -t overlay overlay \
		    -o "lowerdir=/,upperdir=$t/upper,workdir=$t/work" "$t/root"
		for d in proc sys dev; do mount --rbind "/$d" "$t/root/$d"; done
		mount -t tmpfs tmpfs "$t/root/run"
		mount -t tmpfs tmpfs "$t/root/tmp"
		mkdir "$t/root/tmp/debs"
		cp "$debs"/vfsentinel_*.deb "$debs"/vfsentinel-openstack_*.deb \
		    "$t/root/tmp/debs/"
		exec chroot "$t/root" sh -eu -c "$script"
	' _ "$T" "$VFS_DEB_DIR" "$1"
}

@test "vfsentinel-openstack installs, is neither enabled nor started, and purges clean" {
	run -0 in_copy '
		DEBIAN_FRONTEND=noninteractive dpkg -i /tmp/debs/*.deb >/dev/null 2>&1
		stat -c "conf %a %U:%G" /etc/vfsentinel/placement.conf
		ls /etc/systemd/system/multi-user.target.wants | grep -c placement || :
		ls /etc/service /etc/runit/runsvdir/default 2>/dev/null | grep -c placement || :
		readlink /var/lib/prometheus/node-exporter/vfsentinel-placement.prom
		stat -c "textfile %U" /var/lib/vfsentinel/metrics/vfsentinel-placement.prom
		placement-sync --version
		rc=0; setpriv --reuid=vfsentinel --regid="$(id -g vfsentinel)" \
		    --clear-groups placement-sync --once 2>/tmp/err >/dev/null || rc=$?
		echo "once $rc $(grep -c "no auth_type" /tmp/err)"
		dpkg -r vfsentinel-openstack >/dev/null 2>&1
		ls /var/lib/prometheus/node-exporter /var/lib/vfsentinel/metrics | grep -c placement || :
		dpkg --purge vfsentinel-openstack 2>&1 | grep -c warning || :
		ls -A /etc/sv | grep -c placement || :
		test ! -e /etc/vfsentinel/placement.conf && echo purged
	'
	assert_output "conf 640 root:vfsentinel
0
0
/var/lib/vfsentinel/metrics/vfsentinel-placement.prom
textfile vfsentinel
placement-sync (vfsentinel) $(dpkg-deb -f "$VFS_DEB_DIR"/vfsentinel-openstack_*.deb Version | sed 's/-.*//')
once 78 1
0
0
0
purged"
}
