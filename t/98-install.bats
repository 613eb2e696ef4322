#!/usr/bin/env bats
# make install / make uninstall into a DESTDIR (README "Installing"): what
# lands where, an operator's configuration and service env/ files kept
# over a reinstall, and an uninstall that removes what install copied.

load helpers

setup() {
	vfs_setup
	D=$T/stage
}

inst() {
	make -C "$VFS_ROOT" --no-print-directory -s "$@" PREFIX=/usr \
	    DESTDIR="$D" SYSCONFDIR=/etc BUILD="$VFS_BUILD" BIN="$VFS_BIN"
}

@test "make install: programs, man pages, docs, the configuration and the services" {
	local p
	run -0 inst install
	for p in "$VFS_BIN"/*; do
		[ -x "$D/usr/bin/${p##*/}" ]
	done
	[ -f "$D/usr/share/man/man1/vfstore.1" ]
	[ -f "$D/usr/share/doc/vfsentinel/operations.md" ]
	cmp "$VFS_ROOT/etc/vfsentinel.conf" "$D/etc/vfsentinel/vfsentinel.conf"
	[ -x "$D/usr/share/vfsentinel/sv/vfsentinel-reconcile/run" ]
	[ -x "$D/usr/share/vfsentinel/sv/vfsentinel-answer/log/run" ]
	# The run scripts' shared part, where each installed one looks.
	local lib
	for p in "$D"/usr/share/vfsentinel/sv/*/run; do
		lib=$(sed -n 's/^\. "${VFSENTINEL_SV_LIB:-\(.*\)}"$/\1/p' "$p")
		[ -z "$lib" ] || cmp "$VFS_ROOT/sv/sv-lib.sh" "$D$lib" ||
			fail "$p names $lib"
	done
	# A staged install leaves the user and vfstore init to the target.
	assert_output --partial "create the state directory as root"
	# placement-sync's credentials: not for every user to read.
	cmp "$VFS_ROOT/etc/placement.conf" "$D/etc/vfsentinel/placement.conf"
	run -0 stat -c %a "$D/etc/vfsentinel/placement.conf"
	assert_output 640
	# The systemd units, in systemd's unit directory under PREFIX
	# (/usr/local/lib/systemd/system is on systemd's search path too),
	# as they are in the tree: nothing enabled or started.
	for p in "$VFS_ROOT"/integrations/systemd/*.service; do
		run -0 stat -c %a "$D/usr/lib/systemd/system/${p##*/}"
		assert_output 644
		cmp "$p" "$D/usr/lib/systemd/system/${p##*/}"
	done
	run -0 find "$D" -name '*.wants'
	assert_output ''
}

@test "make install over an edited install keeps the configuration and the services' env/ files" {
	run -0 inst install
	echo 'sentinel.interval = 9' >>"$D/etc/vfsentinel/vfsentinel.conf"
	echo /opt/vfs/bin >"$D/usr/share/vfsentinel/sv/vfsentinel-sentinel/env/PATH"
	rm "$D/usr/share/vfsentinel/sv/vfsentinel-sentinel/env/VFSENTINEL_ARGS"
	echo changed >"$D/usr/share/vfsentinel/sv/vfsentinel-sentinel/run"
	run -0 inst install
	assert_output --partial "kept $D/etc/vfsentinel/vfsentinel.conf"
	assert_output --partial "kept $D/usr/share/vfsentinel/sv/vfsentinel-sentinel/env/PATH"
	run -0 tail -1 "$D/etc/vfsentinel/vfsentinel.conf"
	assert_output 'sentinel.interval = 9'
	cmp "$VFS_ROOT/etc/vfsentinel.conf" "$D/etc/vfsentinel/vfsentinel.conf.dist"
	run -0 cat "$D/usr/share/vfsentinel/sv/vfsentinel-sentinel/env/PATH"
	assert_output /opt/vfs/bin
	# A file the operator never had comes back; run itself is the new one.
	[ -e "$D/usr/share/vfsentinel/sv/vfsentinel-sentinel/env/VFSENTINEL_ARGS" ]
	cmp "$VFS_ROOT/sv/vfsentinel-sentinel/run" \
	    "$D/usr/share/vfsentinel/sv/vfsentinel-sentinel/run"
}

@test "make uninstall removes what install copied and keeps the configuration" {
	run -0 inst install
	[ -f "$D/usr/lib/systemd/system/vfsentinel-sentinel.service" ]
	# A unit of the operator's own in the same directory stays.
	echo '[Unit]' >"$D/usr/lib/systemd/system/other.service"
	run -0 inst uninstall
	run -0 find "$D" -type f
	run -0 sort <<<"$output"
	assert_output "$D/etc/vfsentinel/placement.conf
$D/etc/vfsentinel/vfsentinel.conf
$D/usr/lib/systemd/system/other.service"
	[ ! -e "$D/usr/share/vfsentinel" ]
	[ ! -e "$D/usr/share/doc/vfsentinel" ]
}
