#!/usr/bin/env bats
# 25-vfstore-config.bats - `vfstore config` prints the effective
# configuration, file then options, as one JSON object with every key of
# the file format, numbers as numbers (SPEC.md 2.4, 4.2).

load helpers

KEYS='data_dir sysfs_root gpu.vf_quarantine_threshold sentinel.interval
sentinel.timeout sentinel.concurrency guest.vsock_port metrics.textfile_dir
sentinel.framework_recheck sentinel.console_kernel_lines
sentinel.console_read_max sentinel.privileged_dirs reconcile.grace
recovery.systemic_window
recovery.systemic_fraction recovery.quiesce_command
recovery.restore_command recovery.sriov_manage recovery.verify_command
recovery.step_timeout recovery.settle_timeout libvirt.qemu_state_dir
libvirt.deconfigure libvirt.lock_timeout libvirt.log_dir suspect.window
suspect.verify_interval suspect.on_unknown suspect.placement
suspect.trust_ok recovery.verify_domain_xml recovery.verify_wait
recovery.verify_libvirt_uri'

setup() {
	vfs_setup
}

@test "config: the defaults, every key, numbers as numbers, one line" {
	: >"$VFSENTINEL_CONF"
	run -0 --separate-stderr vfstore config
	assert_equal "${#lines[@]}" 1
	assert_equal "$stderr" ""
	assert_output '{"data_dir":"/var/lib/vfsentinel","sysfs_root":"/","gpu.vf_quarantine_threshold":2,"sentinel.interval":5,"sentinel.timeout":5,"sentinel.concurrency":64,"guest.vsock_port":2222,"metrics.textfile_dir":"/var/lib/vfsentinel/metrics","sentinel.framework_recheck":60,"sentinel.console_kernel_lines":"auto","sentinel.console_read_max":4194304,"sentinel.privileged_dirs":"","reconcile.grace":120,"recovery.systemic_window":3600,"recovery.systemic_fraction":0.5,"recovery.quiesce_command":"","recovery.restore_command":"","recovery.sriov_manage":"/usr/lib/nvidia/sriov-manage","recovery.verify_command":"","recovery.step_timeout":120,"recovery.settle_timeout":60,"libvirt.qemu_state_dir":"/var/lib/libvirt/qemu","libvirt.deconfigure":true,"libvirt.lock_timeout":10,"libvirt.log_dir":"/var/log/libvirt/qemu","suspect.window":600,"suspect.verify_interval":30,"suspect.on_unknown":false,"suspect.placement":"auto","suspect.trust_ok":true,"recovery.verify_domain_xml":"","recovery.verify_wait":90,"recovery.verify_libvirt_uri":"qemu:///system"}'
	run -0 jq -r 'keys_unsorted | join(" ")' <<<"$output"
	assert_equal "$output" "$(echo $KEYS)"
}

@test "config -c FILE: the file's values; --data-dir overrides the file" {
	cat >"$T/new.conf" <<-EOF
	# a new configuration
	data_dir = /srv/vfs
	sysfs_root = /tmp/fake   # trailing comment
	gpu.vf_quarantine_threshold = 3
	sentinel.interval = 7
	sentinel.timeout = 9
	sentinel.concurrency = 11
	guest.vsock_port = 4000
	metrics.textfile_dir = /srv/prom
	sentinel.framework_recheck = 13
	sentinel.console_read_max = 65536
	reconcile.grace = 0
	recovery.systemic_window = 60
	recovery.systemic_fraction = 0.25
	# replaced by systemic_fraction: accepted, not listed
	recovery.systemic_cards = 4
	recovery.systemic_vfs = 5
	recovery.quiesce_command = sv stop dcgm
	recovery.restore_command =
	recovery.sriov_manage = /opt/sriov-manage
	recovery.verify_command = /opt/verify "a b"
	recovery.step_timeout = 30
	recovery.settle_timeout = 5
	libvirt.qemu_state_dir = /srv/libvirt
	libvirt.deconfigure = false
	libvirt.lock_timeout = 3
	libvirt.log_dir = /srv/qemu-logs
	suspect.window = 60
	suspect.verify_interval = 7
	suspect.on_unknown = true
	suspect.placement = exclude
	EOF
	run -0 vfstore -c "$T/new.conf" config
	assert_output '{"data_dir":"/srv/vfs","sysfs_root":"/tmp/fake","gpu.vf_quarantine_threshold":3,"sentinel.interval":7,"sentinel.timeout":9,"sentinel.concurrency":11,"guest.vsock_port":4000,"metrics.textfile_dir":"/srv/prom","sentinel.framework_recheck":13,"sentinel.console_kernel_lines":"auto","sentinel.console_read_max":65536,"sentinel.privileged_dirs":"","reconcile.grace":0,"recovery.systemic_window":60,"recovery.systemic_fraction":0.25,"recovery.quiesce_command":"sv stop dcgm","recovery.restore_command":"","recovery.sriov_manage":"/opt/sriov-manage","recovery.verify_command":"/opt/verify \"a b\"","recovery.step_timeout":30,"recovery.settle_timeout":5,"libvirt.qemu_state_dir":"/srv/libvirt","libvirt.deconfigure":false,"libvirt.lock_timeout":3,"libvirt.log_dir":"/srv/qemu-logs","suspect.window":60,"suspect.verify_interval":7,"suspect.on_unknown":true,"suspect.placement":"exclude","suspect.trust_ok":true,"recovery.verify_domain_xml":"","recovery.verify_wait":90,"recovery.verify_libvirt_uri":"qemu:///system"}'
	run -0 vfstore -c "$T/new.conf" --data-dir "$T/other" config
	run -0 jq -r '.data_dir, ."sentinel.interval"' <<<"$output"
	assert_equal "${lines[0]}" "$T/other"
	assert_equal "${lines[1]}" 7
	# VFSENTINEL_CONF names the file when -c does not.
	VFSENTINEL_CONF=$T/new.conf run -0 vfstore config
	run -0 jq -r '."metrics.textfile_dir"' <<<"$output"
	assert_output /srv/prom
}

@test "config: a bad configuration exits 78 naming file and line, prints nothing" {
	printf 'data_dir = /x\nsentinel.intervall = 5\n' >"$T/bad.conf"
	run -78 --separate-stderr vfstore -c "$T/bad.conf" config
	assert_equal "$output" ""
	assert_equal "$(jq -r .level <<<"$stderr")" error
	assert_regex "$stderr" "bad\\.conf:2"
	printf 'sentinel.interval = 0\n' >"$T/bad.conf"
	run -78 --separate-stderr vfstore -c "$T/bad.conf" config
	assert_equal "$output" ""
	printf 'recovery.systemic_fraction = 0\n' >"$T/bad.conf"
	run -78 --separate-stderr vfstore -c "$T/bad.conf" config
	assert_equal "$output" ""
	assert_regex "$stderr" 'bad\.conf:1: invalid value \(expected a fraction above 0 and at most 1, as 0\.5\): recovery\.systemic_fraction'
	run -78 --separate-stderr vfstore -c "$T/missing.conf" config
	assert_equal "$output" ""
}

@test "config: needs no data dir (it reads no store)" {
	run -0 vfstore --data-dir "$T/nowhere" config
	run -0 jq -r .data_dir <<<"$output"
	assert_output "$T/nowhere"
}

@test "config takes no options or operands of its own" {
	run -64 --separate-stderr vfstore config --vf 0000:e3:00.4
	assert_equal "$output" ""
	run -64 --separate-stderr vfstore config extra
	assert_equal "$output" ""
}

@test "the host services' run scripts stop with 78 on a bad configuration" {
	printf 'metrics.textfile_dir = %s\nsentinel.intervall = 5\n' "$T" \
	    >"$T/bad.conf"
	local s
	for s in vfsentinel-resources vfsentinel-sentinel; do
		cp -R "$VFS_ROOT/sv/$s" "$T/$s"
		mkdir -p "$T/$s/supervise"
		# A script that parsed the file itself would go on and loop.
		cd "$T/$s"
		VFSENTINEL_CONF=$T/bad.conf VFSENTINEL_USER=root \
		    run -78 timeout 5 ./run env-loaded
		assert_output --partial 'bad.conf:2'
		cd "$T"
	done
	run -0 find "$T" -name '*.prom'
	assert_output ""
}

@test "config: suspect.* keys refuse what they cannot hold (78)" {
	local bad
	for bad in 'suspect.window = 0' 'suspect.verify_interval = 0' \
	    'suspect.on_unknown = maybe' 'suspect.placement = never' \
	    'libvirt.log_dir = relative/dir'; do
		echo "$bad" >"$VFSENTINEL_CONF"
		run -78 vfstore config
	done
}
