#!/usr/bin/env bats
# 83-opener-service: the privilege split under runit, as the package runs
# it (SPEC 8.3): the service's own run script (sv/vfsentinel-sentinel/run)
# under a real runsvdir, started as root, drops to the service user with
# CAP_DAC_READ_SEARCH; inside sentinel-poll the parser ends with CapEff 0
# and no_new_privs, its opener with CapEff 0000000000000004, vfstore
# apply with nothing; the opener reads a claim's root-only console log
# below sentinel.privileged_dirs, and the failure reaches the store.
# t/deb/systemd.bats checks the same under the systemd unit.

load helpers
load lib/runit
load lib/sentinel

setup() {
	vfs_setup
	id nobody >/dev/null || skip "no user nobody"
	need_tool setpriv socat
	runit_world vfs-open
}

teardown() {
	runit_teardown
	[ -z "${CTL_PID:-}" ] || kill "$CTL_PID" 2>/dev/null || true
	rm -rf "$R"
}

status_field() {
	awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"
}

@test "runit: the parser holds no capability, its opener CAP_DAC_READ_SEARCH alone, and reads a root-only console log below a privileged dir" {
	local apply poller opener uid
	uid=$(id -u nobody)
	mk_card "$R/sysfs" 0000:e3:00.0
	mk_vf "$R/sysfs" 0000:e3:00.0 0000:e3:00.4
	mkdir -p "$R/prom" "$R/g"
	# libvirt's log directory: root's 0700, a console log root 0600.
	mkdir -m 0700 "$R/qlog"
	{ marker_failed; echo; } >"$R/qlog/vm-a-console.log"
	chmod 0600 "$R/qlog/vm-a-console.log"
	cat >"$R/vfsentinel.conf" <<-EOF
	data_dir = $R/data
	sysfs_root = $R/sysfs
	metrics.textfile_dir = $R/prom
	libvirt.log_dir = $R/qlog
	sentinel.interval = 1
	EOF
	export VFSENTINEL_CONF=$R/vfsentinel.conf
	vfstore init --owner nobody >/dev/null 2>&1
	chown nobody "$R/prom"
	socat "UNIX-LISTEN:$R/g/ctl,fork" EXEC:true 3>&- &
	CTL_PID=$!
	wait_for test -S "$R/g/ctl"
	# The claim as libvirt-hook makes it for a domain with a logged
	# console.
	jq -nc --arg ctl "$R/g/ctl" --arg log "$R/qlog/vm-a-console.log" \
	    --arg at "$TS1" '{version:1, claims:[{vf_address:"0000:e3:00.4",
	    instance_id:"i-1", claimed_at:$at, control_socket:$ctl,
	    app_log:$log}]}' >"$R/data/gpu/vf-claims.json"
	runit_copy vfsentinel-sentinel
	runit_test_path vfsentinel-sentinel
	runit_env vfsentinel-sentinel VFSENTINEL_CONF "$R/vfsentinel.conf"
	runit_env vfsentinel-sentinel VFSENTINEL_USER nobody
	runit_start
	runit_wait_stat vfsentinel-sentinel run
	wait_for grep -q '"instance_id": "i-1"' "$R/data/gpu/vf-health.json" ||
	    wait_for grep -q '"instance_id": "i-1"' "$R/data/gpu/vf-health.json"
	apply=$(runit_pid vfsentinel-sentinel)
	poller=$(pgrep -P "$apply" -x sentinel-poll)
	opener=$(pgrep -P "$poller" -x sentinel-opener)
	assert_equal "$(status_field "$apply" Uid) $(status_field "$apply" CapEff)" \
	    "$uid 0000000000000000"
	assert_equal "$(status_field "$poller" Uid) $(status_field "$poller" CapEff) $(status_field "$poller" NoNewPrivs)" \
	    "$uid 0000000000000000 1"
	assert_equal "$(status_field "$opener" Uid) $(status_field "$opener" CapEff) $(status_field "$opener" CapAmb)" \
	    "$uid 0000000000000004 0000000000000000"
}
