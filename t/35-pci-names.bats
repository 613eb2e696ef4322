#!/usr/bin/env bats
# Card names (SPEC 4.3, 8.5): a card's name is the device name lspci
# prints on the same host, the fourth field of `lspci -mm`: pci.ids
# first, then the udev hwdb where it exists (libpci's lookup). Every test
# compares with the lspci of this host, so it holds with udev installed
# and without; the last one hides the hwdb to check the host without.

load helpers

# The IDs: listed in pci.ids, listed only in newer ID lists (26b9 is
# missing from Debian 12's pci.ids but known to its udev hwdb), unlisted
# devices of a listed vendor, and unlisted vendors.
IDS="10de:26b9 10de:20b0 10de:2335 8086:1572 1af4:1041 abcd:0001 ffff:0001"

setup() {
	vfs_setup
}

# lspci_name SYSFS BDF: the fourth field of `lspci -mm` (-vmm's Device)
# for one function of a fake tree.
lspci_name() {
	lspci -A linux-sysfs -O "sysfs.path=$1/sys/bus/pci" -D -vmm -s "$2" |
	    sed -n 's/^Device:\t//p'
}

# agree: pci-name and lspci agree on every ID of $IDS.
agree() {
	local id want
	for id in $IDS; do
		rm -rf "$SYSFS"
		mk_pcifn "$SYSFS" 0000:3b:00.0 "${id%:*}" "${id#*:}" 030200
		want=$(lspci_name "$SYSFS" 0000:3b:00.0)
		[ -n "$want" ] || fail "lspci printed no name for $id"
		run -0 pci-name "$SYSFS" 0000:3b:00.0
		[[ $output == "$want" ]] ||
		    fail "$id: pci-name '$output', lspci -mm '$want'"
	done
}

@test "a card's name is lspci -mm's device name, for listed, unlisted and odd IDs" {
	need_tool lspci
	agree
}

@test "a name only the udev hwdb knows is the hwdb's name, as lspci has it" {
	need_tool lspci
	[ -e /etc/udev/hwdb.bin ] || [ -e /usr/lib/udev/hwdb.bin ] ||
	    [ -e /lib/udev/hwdb.bin ] || skip "no udev hwdb (udev missing)"
	mk_pcifn "$SYSFS" 0000:3b:00.0 10de 26b9 030200
	want=$(lspci_name "$SYSFS" 0000:3b:00.0)
	[[ $want != 'Device 26b9' ]] || skip "this host's hwdb lacks 10de:26b9"
	run -0 pci-name "$SYSFS" 0000:3b:00.0
	assert_output "$want"
}

@test "without a udev hwdb the names still agree with lspci" {
	need_tool lspci unshare
	unshare -m true 2>/dev/null || skip "unshare -m not permitted here"
	# A private mount namespace where each hwdb.bin is an empty file:
	# libudev then has no hwdb, as on a host without udev.
	run -0 unshare -m --propagation private bash -c "$(declare -f \
	    mk_pcifn _pcifn_files lspci_name)"'
		for f in /etc/udev/hwdb.bin /usr/lib/udev/hwdb.bin \
		    /lib/udev/hwdb.bin; do
			if [ -e "$f" ] && ! [ -L "$f" ]; then
				mount --bind /dev/null "$f" || exit 1
			fi
		done
		for id in $1; do
			rm -rf "$2"
			mk_pcifn "$2" 0000:3b:00.0 "${id%:*}" "${id#*:}" 030200
			want=$(lspci_name "$2" 0000:3b:00.0)
			got=$(pci-name "$2" 0000:3b:00.0) || exit 1
			echo "$id|$got|$want"
		done' _ "$IDS" "$SYSFS"
	[ "${#lines[@]}" -eq 7 ]
	local line id got want
	for line in "${lines[@]}"; do
		IFS='|' read -r id got want <<<"$line"
		[ -n "$want" ] || fail "lspci printed no name for $id"
		[[ $got == "$want" ]] || fail "$id: pci-name '$got', lspci '$want'"
	done
}

@test "a function that is not in the tree has no name" {
	mk_pcifn "$SYSFS" 0000:3b:00.0 10de 26b9 030200
	run -1 pci-name "$SYSFS" 0000:3c:00.0
}
