#!/usr/bin/env bats
# Card names (SPEC 4.3: "card names for reports come from libpci"): the
# fast lookup in libpci's own pci.ids gives exactly what lspci prints.

load helpers

setup() {
	vfs_setup
}

@test "pci_device_name agrees with lspci for listed, unlisted and odd IDs" {
	need_tool lspci
	for id in "10de 26b9" "10de 20b0" "8086 1572" "1af4 1041" "abcd 0001" "ffff 0001"; do
		set -- $id
		rm -rf "$SYSFS"
		mk_pcifn "$SYSFS" 0000:3b:00.0 "$1" "$2" 030200
		run -0 pci-name "$SYSFS" 0000:3b:00.0
		want=$(lspci -A linux-sysfs -O "sysfs.path=$SYSFS/sys/bus/pci" -D \
		    -s 0000:3b:00.0 | sed 's/^[^:]*:[^:]*:[^:]*: //')
		[ -n "$want" ]
		assert_output "$want"
	done
}

@test "a function that is not in the tree has no name" {
	mk_pcifn "$SYSFS" 0000:3b:00.0 10de 26b9 030200
	run -1 pci-name "$SYSFS" 0000:3c:00.0
}
