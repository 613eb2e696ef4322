#!/usr/bin/env bats
# 80-privilege: least privilege (issue "Proof under fire" 4). State files
# are 0644 in 0755 directories whatever the umask; nothing follows a
# symlink planted in DATA_DIR/gpu; the services drop root to their
# dedicated user (env/VFSENTINEL_USER, default vfsentinel) where they can:
# the guest answer service whenever that user exists (no capabilities,
# no_new_privs), the host resources and sentinel services when the user
# may write their directories; otherwise they run as root.

load helpers
load lib/store
load lib/runit

setup() {
	vfs_setup
	store_setup
	mk_card "$SYSFS" 0000:e3:00.0
	mk_vf "$SYSFS" 0000:e3:00.0 0000:e3:00.4
	# Services that drop root, and the programs, where their user
	# reaches them (chpst -u nobody: exit 111, nothing starts).
	runit_world vfs-priv
}

teardown() {
	runit_teardown
	[ -z "${CTL_PID:-}" ] || kill "$CTL_PID" 2>/dev/null || true
	rm -rf "$R"
}

mode() {
	stat -c %a "$1"
}

@test "state files are created 0644 in 0755 directories even under umask 077" {
	run -0 bash -c "umask 077; vfstore --data-dir '$DATA/new' init &&
		vfstore --data-dir '$DATA/new' report-failure \
		--vf 0000:e3:00.4 --instance i-1 --assigned-at a1 &&
		vfpick --data-dir '$DATA/new' --sysfs-root '$SYSFS' \
		--profile 'NVIDIA L40S-12Q' --claim i-2"
	[ "$(mode "$DATA/new")" = 755 ]
	[ "$(mode "$DATA/new/gpu")" = 755 ]
	# The lock is the store owner's alone (SPEC 7.2): 0640 group
	# vfsentinel where that group exists, else 0600.
	[ "$(mode "$DATA/new/gpu/lock")" = "$(getent group vfsentinel >/dev/null && echo 640 || echo 600)" ]
	[ "$(mode "$DATA/new/gpu/vf-health.json")" = 644 ]
	[ "$(mode "$DATA/new/gpu/vf-claims.json")" = 644 ]
}

@test "a symlink planted at vf-health.json.tmp is replaced, never written through" {
	mkdir -p "$DATA/gpu"
	echo "precious" >"$T/victim"
	ln -s "$T/victim" "$DATA/gpu/vf-health.json.tmp"
	ln -s "$T/absent" "$DATA/gpu/vf-claims.json.tmp"
	run -0 rfail 0000:e3:00.4 i-1 a1
	run -0 vfpick --data-dir "$DATA" --sysfs-root "$SYSFS" \
		--profile "NVIDIA L40S-12Q" --claim i-2
	[ "$(cat "$T/victim")" = precious ]
	assert_file_not_exists "$T/absent"
	assert_file_not_exists "$DATA/gpu/vf-health.json.tmp"
	[ "$(tallies 0000:e3:00.4)" = i-1 ]
	[ "$(jq -r '.claims[0].instance_id' "$CLAIMS")" = i-2 ]
}

@test "a symlink planted at the lock is not followed: exit 74, nothing created" {
	rm -f "$LOCK"
	ln -s "$T/planted-lock" "$LOCK"
	run -74 --separate-stderr rfail 0000:e3:00.4 i-1 a1
	assert_file_not_exists "$T/planted-lock"
	assert_file_not_exists "$HEALTH"
}

@test "a symlinked store file is unavailable: nothing read through it, nothing written" {
	mkdir -p "$DATA/gpu"
	printf '{"version":1,"records":[]}' >"$T/elsewhere.json"
	ln -s "$T/elsewhere.json" "$HEALTH"
	before=$(sha "$T/elsewhere.json")
	run -69 --separate-stderr vs check
	assert_output --partial '"status":"unavailable"'
	run -69 --separate-stderr rfail 0000:e3:00.4 i-1 a1
	[ "$(sha "$T/elsewhere.json")" = "$before" ]
	[ -L "$HEALTH" ]
	ln -s "$T/elsewhere.json" "$CLAIMS.x"
	mv "$CLAIMS.x" "$CLAIMS"
	rm "$HEALTH"
	run -69 --separate-stderr vfpick --data-dir "$DATA" --sysfs-root "$SYSFS" \
		--profile "NVIDIA L40S-12Q" --claim i-3
	[ "$(sha "$T/elsewhere.json")" = "$before" ]
}

# answer_service USER: vfsentinel-answer under runit on a Unix socket in
# $R/run, with env/VFSENTINEL_USER=USER; sets APID when it answers.
answer_service() {
	need_tool socat
	runit_copy vfsentinel-answer
	runit_test_path vfsentinel-answer
	: >"$R/vfsentinel.conf"
	runit_env vfsentinel-answer VFSENTINEL_CONF "$R/vfsentinel.conf"
	runit_env vfsentinel-answer VFSENTINEL_USER "$1"
	runit_env vfsentinel-answer VFSENTINEL_EVENTS "$R/run/events"
	runit_env vfsentinel-answer VFSENTINEL_STATE_FILE "$R/run/gpu-init.json"
	runit_env vfsentinel-answer VFSENTINEL_LISTEN "unix:$R/run/a.sock"
	runit_start
	runit_wait_stat vfsentinel-answer run
	wait_for test -S "$R/run/a.sock"
	APID=$(runit_pid vfsentinel-answer)
}

query() {
	printf '%s\n' '{"method":"GetGPUInitStatus"}' |
		socat -t 5 - "UNIX-CONNECT:$R/run/a.sock"
}

status_field() {
	awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"
}

@test "vfsentinel-answer drops to its dedicated user: no root, no capabilities, no_new_privs" {
	id nobody >/dev/null || skip "no user nobody"
	answer_service nobody
	[ "$(status_field "$APID" Uid)" = "$(id -u nobody)" ]
	[ "$(status_field "$APID" CapEff)" = 0000000000000000 ]
	[ "$(status_field "$APID" NoNewPrivs)" = 1 ]
	run -0 query
	assert_output '{"state":"UNKNOWN"}'
	# It still does its whole job as that user: events in, state file out.
	printf '%s\n' '{"event":"gpu_init_failed","seq":1,"ts_usec":2,"message":"NVRM: RmInitAdapter failed!"}' \
		>"$R/run/events"
	wait_for test -s "$R/run/gpu-init.json"
	[ "$(stat -c %u "$R/run/gpu-init.json")" = "$(id -u nobody)" ]
	run -0 query
	assert_output --partial '"state":"FAILED"'
}

@test "vfsentinel-answer falls back to root when its user does not exist" {
	run -1 id vfs-no-such-user
	answer_service vfs-no-such-user
	[ "$(status_field "$APID" Uid)" = 0 ]
	[ "$(status_field "$APID" NoNewPrivs)" = 1 ]
	run -0 query
	assert_output '{"state":"UNKNOWN"}'
}

@test "a service user owning DATA_DIR/gpu mutates a store that root's vfstore created" {
	id nobody >/dev/null || skip "no user nobody"
	local d=$R/data
	: >"$R/vfsentinel.conf"
	export VFSENTINEL_CONF=$R/vfsentinel.conf
	run -0 vfstore --data-dir "$d" init
	run -0 vfstore --data-dir "$d" report-failure --vf 0000:e3:00.4 \
		--instance i-1 --assigned-at a1
	[ "$(stat -c %U "$d/gpu/lock")" = root ]
	# The install step gives the store to the service user, its lock
	# too (SPEC 7.2: no other user may open the lock).
	vfstore --data-dir "$d" init --owner nobody >/dev/null 2>&1
	run -0 chpst -u nobody vfstore --data-dir "$d" report-failure \
		--vf 0000:e3:00.4 --instance i-2 --assigned-at a2
	assert_output --partial '"outcome":"quarantined"'
	[ "$(stat -c %U "$d/gpu/vf-health.json")" = nobody ]
	# And root can still take over again.
	run -0 vfstore --data-dir "$d" clear --vf 0000:e3:00.4
}

# host_conf: a host under $R (traversable by the service user): sysfs with
# one card and two VFs, data dir, textfile dir, a 1 s scan interval.
host_conf() {
	mk_card "$R/sysfs" 0000:e3:00.0
	mk_vf "$R/sysfs" 0000:e3:00.0 0000:e3:00.4
	mk_vf "$R/sysfs" 0000:e3:00.0 0000:e3:00.5
	mkdir -p "$R/prom" "$R/g"
	cat >"$R/vfsentinel.conf" <<-EOF2
	data_dir = $R/data
	sysfs_root = $R/sysfs
	metrics.textfile_dir = $R/prom
	sentinel.interval = 1
	sentinel.timeout = 2
	EOF2
	export VFSENTINEL_CONF=$R/vfsentinel.conf
	# The install step, then root's operator commands create the store
	# (lock 0644, root's).
	vfstore init >/dev/null 2>&1
	vfstore quarantine --vf 0000:e3:00.5 --reason test >/dev/null 2>&1
}

# host_service NAME USER: NAME under runit with env/VFSENTINEL_USER=USER.
host_service() {
	runit_copy "$1"
	runit_test_path "$1"
	runit_env "$1" VFSENTINEL_CONF "$R/vfsentinel.conf"
	runit_env "$1" VFSENTINEL_USER "$2"
	runit_env "$1" INTERVAL 1
	runit_start
	runit_wait_stat "$1" run
}

@test "vfsentinel-resources runs as its user when that user may write the textfile dir" {
	id nobody >/dev/null || skip "no user nobody"
	host_conf
	chown nobody "$R/prom"
	vfstore init --owner nobody >/dev/null 2>&1
	host_service vfsentinel-resources nobody
	wait_for test -s "$R/prom/vfsentinel-resources.prom"
	[ "$(status_field "$(runit_pid vfsentinel-resources)" Uid)" = "$(id -u nobody)" ]
	[ "$(stat -c %U "$R/prom/vfsentinel-resources.prom")" = nobody ]
	# It read the store root's commands wrote, through the shared lock
	# that init --owner gave it (as the package's postinst does).
	run -0 grep 'hypeman_resources_gpu_slots{kind="quarantined"} 1' \
		"$R/prom/vfsentinel-resources.prom"
}

@test "vfsentinel-resources stays root when its user may not write the textfile dir" {
	id nobody >/dev/null || skip "no user nobody"
	host_conf
	host_service vfsentinel-resources nobody
	wait_for test -s "$R/prom/vfsentinel-resources.prom"
	[ "$(status_field "$(runit_pid vfsentinel-resources)" Uid)" = 0 ]
	[ "$(stat -c %U "$R/prom/vfsentinel-resources.prom")" = root ]
}

@test "vfsentinel-sentinel polls and records as its user when it owns DATA_DIR/gpu" {
	id nobody >/dev/null || skip "no user nobody"
	need_tool socat
	host_conf
	chown nobody "$R/prom" "$R/g"
	vfstore init --owner nobody >/dev/null 2>&1
	# The VM's control socket: a real listener (SPEC 4.4 VMM liveness).
	socat "UNIX-LISTEN:$R/g/ctl,fork" EXEC:true 3>&- &
	CTL_PID=$!
	wait_for test -S "$R/g/ctl"
	echo boot-a >"$R/g/a.boot"
	printf '%s\n' '{"event":"gpu_init_failed","seq":1,"ts_usec":2,"message":"NVRM: RmInitAdapter failed!"}' >"$R/g/a.ev"
	chpst -u nobody vsock-answer --events - --listen "unix:$R/g/a" \
		--state-file "$R/g/a.state" --boot-id-file "$R/g/a.boot" \
		<"$R/g/a.ev" 2>>"$R/g/a.log" 3>&- &
	GUEST=$!
	wait_for test -S "$R/g/a"
	run -0 vfpick --profile "NVIDIA L40S-12Q" --claim i-1 \
		--vsock "unix:$R/g/a" --control-socket "$R/g/ctl"
	host_service vfsentinel-sentinel nobody
	wait_for grep -q '"instance_id": "i-1"' "$R/data/gpu/vf-health.json" ||
		wait_for grep -q '"instance_id": "i-1"' "$R/data/gpu/vf-health.json"
	kill "$GUEST"
	local pid child
	pid=$(runit_pid vfsentinel-sentinel)
	[ "$(status_field "$pid" Uid)" = "$(id -u nobody)" ]
	for child in $(pgrep -P "$pid"); do
		[ "$(status_field "$child" Uid)" = "$(id -u nobody)" ]
	done
	[ "$(stat -c %U "$R/data/gpu/vf-health.json")" = nobody ]
	wait_for test -s "$R/prom/vfsentinel-sentinel.prom"
}

@test "vfsentinel-sentinel stays root when its user cannot write DATA_DIR/gpu" {
	id nobody >/dev/null || skip "no user nobody"
	host_conf
	host_service vfsentinel-sentinel nobody
	local pid
	pid=$(runit_pid vfsentinel-sentinel)
	[ "$(status_field "$pid" Uid)" = 0 ]
}
