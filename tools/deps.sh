#!/bin/sh
# deps.sh [deb|check-deb] - install what vfsentinel needs (Debian):
#   (none)     building and testing it (make check, make demo)
#   deb        building its packages only (make deb): the compiler, the
#              libraries, debhelper, dh-runit, lintian; no test tool, no
#              promtool, no guest kernel
#   check-deb  both, and what checking the packages needs (make
#              check-deb)
# As root it runs apt-get for the missing packages; otherwise it prints the
# exact command. For the tests it also fetches promtool and node_exporter
# (for validating the Prometheus output and alert rules) and Debian's guest
# kernel by extracting Debian's packages into build-tools/ (kept by make
# clean), without installing their services.
set -eu

mode=${1:-}
BUILD_PKGS="gcc make pkg-config libjansson-dev libpci-dev libxml2-dev"
TEST_PKGS="jq bats bats-support bats-assert bats-file socat runit mandoc strace pciutils procps psmisc python3 python3-prometheus-client clang libclang-rt-14-dev valgrind util-linux e2fsprogs qemu-system-x86 busybox-static shellcheck groff-base libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients python3-placement python3-keystoneauth1 python3-oslo.config python3-pyflakes python3-nova python3-oslotest python3-testtools python3-fixtures python3-wsgi-intercept python3-requests-mock python3-ddt python3-libvirt libxml2-utils"

# What dpkg-buildpackage and lintian need (debian/control's
# Build-Depends among them).
DEB_PKGS="build-essential dpkg-dev debhelper dh-runit lintian fakeroot pkgconf"
# debootstrap, systemd-container and zstd: t/deb/systemd.bats boots a
# Debian system with systemd as PID 1 (systemd-nspawn) from a rootfs
# cached in build-tools/ (t/deb/systemd-rootfs.sh). moreutils: sponge,
# as node_exporter's collectors write their textfiles (t/deb). acl: the
# host package depends on it (its postrm's setfacl), and t/deb reads
# the ACLs it leaves.
CHECK_DEB_PKGS="acl adduser debootstrap systemd-container zstd moreutils"
case $mode in
"") ;;
deb) TEST_PKGS="$DEB_PKGS" ;;
check-deb) TEST_PKGS="$TEST_PKGS $DEB_PKGS $CHECK_DEB_PKGS" ;;
*)
	echo "usage: deps.sh [deb|check-deb]" >&2
	exit 64
	;;
esac

missing=""
for p in $BUILD_PKGS $TEST_PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done

apt_updated=0
apt_update() {
	if [ "$apt_updated" = 0 ]; then
		apt-get update -qq
		apt_updated=1
	fi
}

if [ -n "$missing" ]; then
	cmd="DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends$missing"
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "deps: installing:$missing"
		apt_update
		eval "$cmd"
	else
		echo "deps: missing packages:$missing" >&2
		echo "deps: run as root: apt-get update && $cmd" >&2
		exit 1
	fi
fi

# make deb builds the packages: nothing below is needed.
[ "$mode" = deb ] && exit 0

# libvirtd refuses to start without a libvirt-qemu user and group, which
# only libvirt-daemon-system (not installed: it brings a default network)
# makes; t/69-libvirt-real.bats starts libvirtd by hand.
if [ "$(id -u)" = 0 ] && [ -x /usr/sbin/libvirtd ] &&
	! getent passwd libvirt-qemu >/dev/null; then
	getent group libvirt-qemu >/dev/null || groupadd -r libvirt-qemu
	useradd -r -g libvirt-qemu -d /var/lib/libvirt -s /usr/sbin/nologin \
		libvirt-qemu
	echo "deps: created the libvirt-qemu user and group"
fi

# promtool and node_exporter, extracted (not installed) into build-tools/.
tools=build-tools
mkdir -p "$tools"
fetch_deb() {	# PACKAGE BINARY
	[ -x "$tools/$2" ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "deps: $2 missing; run as root: apt-get download $1" >&2
		return 0
	fi
	apt_update
	d=$(mktemp -d)
	(cd "$d" && apt-get download -qq "$1" >/dev/null) || { rm -rf "$d"; echo "deps: cannot download $1" >&2; return 1; }
	dpkg-deb -x "$d"/"$1"_*.deb "$d/x"
	cp "$d/x/usr/bin/$2" "$tools/$2"
	rm -rf "$d"
	echo "deps: extracted $2 into $tools"
}
fetch_deb prometheus promtool
fetch_deb prometheus-node-exporter prometheus-node-exporter

# Debian's guest kernel for the real-guest tests (t/68-real-guest.bats):
# vmlinuz and the six modules a virtio-serial port needs, extracted (not
# installed) into build-tools/guest-kernel/.
fetch_kernel() {
	k=$tools/guest-kernel
	[ -s "$k/vmlinuz" ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "deps: guest kernel missing; run tools/deps.sh as root" >&2
		return 0
	fi
	apt_update
	pkg=$(apt-cache depends linux-image-amd64 |
	    sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -n 1)
	[ -n "$pkg" ] || { echo "deps: no linux-image-amd64 dependency" >&2; return 1; }
	d=$(mktemp -d)
	(cd "$d" && apt-get download -qq "$pkg" >/dev/null 2>&1) ||
	    { rm -rf "$d"; echo "deps: cannot download $pkg" >&2; return 1; }
	dpkg-deb -x "$d"/"$pkg"_*.deb "$d/x"
	rm -rf "$k.new"
	mkdir -p "$k.new/modules"
	cp "$d"/x/boot/vmlinuz-* "$k.new/vmlinuz"
	for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev \
	    virtio_pci virtio_console; do
		find "$d/x/lib/modules" -name "$m.ko*" -exec cp {} "$k.new/modules/" \;
	done
	echo "${pkg#linux-image-}" >"$k.new/version"
	rm -rf "$d" "$k"
	mv "$k.new" "$k"
	echo "deps: extracted $pkg (vmlinuz, virtio-serial modules) into $k"
}
fetch_kernel

# nova-common's api-paste.ini for the Nova test (t/77-placement-nova.bats):
# python3-nova lacks it; unpacked (not installed: nova-common would make
# the nova user and its directories) into build-tools/nova-common/.
fetch_api_paste() {
	[ -s "$tools/nova-common/api-paste.ini" ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "deps: nova-common's api-paste.ini missing; run tools/deps.sh as root" >&2
		return 0
	fi
	apt_update
	d=$(mktemp -d)
	(cd "$d" && apt-get download -qq nova-common >/dev/null 2>&1) ||
	    { rm -rf "$d"; echo "deps: cannot download nova-common" >&2; return 1; }
	dpkg-deb -x "$d"/nova-common_*.deb "$d/x"
	mkdir -p "$tools/nova-common"
	cp "$d/x/usr/share/nova-common/api-paste.ini" "$tools/nova-common/"
	rm -rf "$d"
	echo "deps: extracted nova-common's api-paste.ini into $tools/nova-common"
}
fetch_api_paste
exit 0
