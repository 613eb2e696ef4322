#!/bin/sh
# systemd-rootfs.sh [DIR] - the Debian system t/deb/systemd.bats boots with
# systemd as PID 1 (systemd-nspawn): debootstrap's minbase with systemd,
# dbus, what the vfsentinel packages depend on (vfsentinel-openstack's
# Python modules too, so dpkg -i works offline inside) and
# prometheus-node-exporter (the stock Debian host of SPEC
# 6.7), slimmed and packed as DIR/systemd-rootfs.tar.zst (default
# build-tools/, ignored by git and kept by make clean). Built once, about
# two minutes; later runs find the tarball and do nothing. Needs root,
# debootstrap and zstd (tools/deps.sh deb) and the machine's apt mirror.
set -eu
dir=${1:-build-tools}
out=$dir/systemd-rootfs.tar.zst
pkgs=systemd,systemd-sysv,dbus,acl,adduser,jq,runit,libjansson4,libpci3
pkgs=$pkgs,libxml2,procps,prometheus-node-exporter
# vfsentinel-openstack's own dependencies (placement-sync's unit),
# installed by apt in the new system after debootstrap: debootstrap's
# own configure pass fails on python3-cryptography.
extra="python3-keystoneauth1 python3-oslo.config"
# A tarball built from another package list (an older one, before a new
# dependency of the packages) is built again.
[ -s "$out" ] && [ "$(cat "$out.pkgs" 2>/dev/null)" = "$pkgs $extra" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v debootstrap >/dev/null; then
	echo "systemd-rootfs: needs root and debootstrap (tools/deps.sh deb)" >&2
	exit 1
fi
mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' \
    /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
mkdir -p "$dir"
root=$(mktemp -d "$dir/rootfs.XXXXXX")
chmod 0755 "$root"
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase --include="$pkgs" bookworm "$root" \
    "$mirror" >"$root.log" 2>&1 || {
	tail -20 "$root.log" >&2
	rm -f "$root.log"
	exit 1
}
# shellcheck disable=SC2086 # $extra is a list of package names
if ! DEBIAN_FRONTEND=noninteractive chroot "$root" sh -c 'apt-get -q update &&
    apt-get -q -y --no-install-recommends install "$@"' - $extra \
    >"$root.log" 2>&1; then
	tail -20 "$root.log" >&2
	rm -f "$root.log"
	exit 1
fi
rm -f "$root.log"
# Slim: what no test reads. The apt lists and cached packages go too:
# nothing is installed from the network inside.
rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* \
    "$root"/usr/share/locale/* "$root"/usr/share/info/* \
    "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
# The container's machine id is made at its first boot.
: >"$root/etc/machine-id"
tar -C "$root" -cf - . | zstd -q -T0 -o "$out.tmp"
mv "$out.tmp" "$out"
echo "$pkgs $extra" >"$out.pkgs"
echo "systemd-rootfs: $out ($(du -h "$out" | cut -f1))"
