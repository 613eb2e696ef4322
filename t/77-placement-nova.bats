#!/usr/bin/env bats
# 77-placement-nova.bats - placement-sync with Nova's own code (SPEC.md
# 8.4): t/nova/test_placement_sync.py runs python3-nova's functional
# bases (API, conductor, scheduler, compute with the libvirt driver on
# fake libvirt, resource tracker, report client) against Placement's own
# code, and placement-sync's cycle (its file, imported) against both.
# Per-VF (mdev) path: Nova never places an instance on an excluded VF,
# through its periodic update, its provider-cache refresh and a restart.
# Per-PF (PCI) path with Debian 12's Nova 26: what the PCI tracker does
# with an excluded VF and what the hook's refusal costs the host
# (fleet.md, "Measured with Nova's own code").

load helpers

setup() {
	T=$BATS_TEST_TMPDIR
	/usr/bin/python3 -c 'import nova, testtools, fixtures, wsgi_intercept, requests_mock, ddt, libvirt, placement' 2>/dev/null ||
		skip "python3-nova or its test packages missing (make deps installs them)"
	[ -f "$VFS_ROOT/build-tools/nova-common/api-paste.ini" ] ||
		skip "nova-common's api-paste.ini missing (make deps unpacks it)"
}

# nova_test CLASS: the class of t/nova/test_placement_sync.py, output in
# $T/CLASS.log; on failure the log's last 60 lines (the traceback) go to
# stdout, which bats prints under the failing test.
nova_test() {
	if (cd "$VFS_ROOT/t/nova" && VFS_ROOT=$VFS_ROOT \
		/usr/bin/python3 -m testtools.run "test_placement_sync.$1") \
		>"$T/$1.log" 2>&1; then
		return 0
	fi
	tail -n 60 "$T/$1.log"
	return 1
}

@test "per-VF path: Nova never places an instance on an excluded VF; its periodic, cache refresh and restart undo nothing" {
	nova_test VFPath
	run -0 tail -n 1 "$T/VFPath.log"
	assert_output OK
}

@test "per-PF path, Nova 26: every build the PCI tracker gives the excluded VF is refused; out of device_spec it heals" {
	nova_test PFPath
	run -0 grep '^MEASURED' "$T/PFPath.log"
	echo "$output"
	assert_line --regexp '^MEASURED pf_path builds=12 outcomes=(ERROR,){11}ERROR picks=(excluded,){11}excluded failed_builds=12 weigher=-12000000 service=enabled$'
	assert_line 'MEASURED pf_path after_device_spec=ACTIVE picked=good failed_builds=0'
	run -0 tail -n 1 "$T/PFPath.log"
	assert_output OK
}
