#!/bin/sh
# guest-initramfs.sh - initramfs parts for a real Linux guest under QEMU
# (t/lib/realguest.bash; facts: the shared reference on real VMs).
#
#   guest-initramfs.sh base OUT.gz
#       the part every boot shares: busybox (static), the six modules a
#       virtio-serial port needs (from $VFS_TOOLS/guest-kernel/modules),
#       the guest programs kmsg-watch, gpu-probe and vsock-answer from
#       $VFS_BIN with every library ldd names and the loader, and an /init
#       that mounts proc, sys and devtmpfs, loads the modules, runs
#       /scenario.sh and powers off.
#   guest-initramfs.sh scenario OUT.gz SCRIPT [FILE=GUESTPATH...]
#       the part one boot adds: SCRIPT as /scenario.sh (run by /init's sh,
#       its output on the serial console) and each FILE at GUESTPATH.
#
# Both are cpio (newc) archives, gzip-compressed; the kernel unpacks
# concatenated archives in order: cat BASE SCENARIO >INITRD.
set -eu

MODULES="virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci virtio_console"
PROGS="kmsg-watch gpu-probe vsock-answer"

die() {
	echo "guest-initramfs: $*" >&2
	exit 1
}

# pack DIR OUT: DIR as a gzip-compressed newc archive at OUT.
pack() {
	(cd "$1" && find . | LC_ALL=C sort | busybox cpio -o -H newc 2>/dev/null) |
	    gzip -1 >"$2.tmp"
	mv "$2.tmp" "$2"
}

# copy_lib ROOT PATH: PATH (a library or the loader) into ROOT at the
# same path, links followed.
copy_lib() {
	mkdir -p "$1$(dirname "$2")"
	cp -L "$2" "$1$2"
}

# copy_prog ROOT PROG: PROG into ROOT/usr/bin with what ldd names.
copy_prog() {
	src=$VFS_BIN/$2
	[ -x "$src" ] || die "no $src"
	cp "$src" "$1/usr/bin/$2"
	ldd "$src" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }
	    $1 ~ /^\// { print $1 }' | while read -r lib; do
		copy_lib "$1" "$lib"
	done
}

write_init() {
	cat >"$1/init" <<EOF
#!/bin/sh
/bin/busybox mount -t proc proc /proc
/bin/busybox --install -s /bin
export PATH=/usr/bin:/bin
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /run/vfsentinel /tmp
for m in $MODULES; do
	insmod /lib/modules/\$m.ko || echo "init: insmod \$m failed"
done
echo "init: scenario"
. /scenario.sh
echo "init: done"
poweroff -f
EOF
	chmod 755 "$1/init"
}

base() {
	kdir=${VFS_TOOLS:?}/guest-kernel
	[ -d "$kdir/modules" ] || die "no $kdir/modules (make deps)"
	command -v busybox >/dev/null || die "no busybox (make deps)"
	root=$(mktemp -d)
	mkdir -p "$root/bin" "$root/usr/bin" "$root/lib/modules" "$root/proc" \
	    "$root/sys" "$root/dev" "$root/run" "$root/tmp"
	cp "$(command -v busybox)" "$root/bin/busybox"
	ln -s busybox "$root/bin/sh"
	for m in $MODULES; do
		cp "$kdir/modules/$m.ko" "$root/lib/modules/" ||
		    die "no module $m in $kdir/modules"
	done
	for p in $PROGS; do
		copy_prog "$root" "$p"
	done
	write_init "$root"
	pack "$root" "$1"
	rm -rf "$root"
}

scenario() {
	out=$1 script=$2
	shift 2
	root=$(mktemp -d)
	cp "$script" "$root/scenario.sh"
	for f in "$@"; do
		dst=$root/${f#*=}
		mkdir -p "$(dirname "$dst")"
		cp "${f%%=*}" "$dst"
	done
	pack "$root" "$out"
	rm -rf "$root"
}

case ${1:-} in
base) [ $# -eq 2 ] || die "usage: base OUT.gz"; base "$2" ;;
scenario) [ $# -ge 3 ] || die "usage: scenario OUT.gz SCRIPT [FILE=PATH...]"
	shift; scenario "$@" ;;
*) die "usage: guest-initramfs.sh base|scenario ..." ;;
esac
