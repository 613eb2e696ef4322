#!/usr/bin/env bats
# 22-vfstore-data-dir.bats - a missing DATA_DIR/gpu is an unavailable
# store, never an empty healthy one, in every program that reads or writes
# the store; only `vfstore init` creates it (SPEC.md 4.1, 4.2). The lock
# is the store owner's, so no other local user can hold it (SPEC 7.2).

load helpers
load lib/store

VF=0000:e3:00.4
PF=0000:e3:00.0
AT=2026-08-20T15:00:00Z

setup() {
	vfs_setup
	store_setup
	mk_card "$SYSFS" $PF
	mk_vf "$SYSFS" $PF $VF 0 "1160:NVIDIA L40S-12Q"
	rm -rf "$DATA"
	NOWHERE=$T/nowhere/deeper
}

# no_dir_left DIR: the command created nothing.
no_dir_left() {
	assert [ ! -e "$1" ]
}

@test "every vfstore command fails closed (69) on a missing data directory and creates nothing" {
	local cmd
	for cmd in "report-failure --vf $VF --instance i-1 --assigned-at $AT" \
	    "report-success --vf $VF --instance i-1 --assigned-at $AT" \
	    "show" "show --vf $VF" "quarantine --vf $VF" "clear --vf $VF" \
	    "quarantine --card $PF" "clear --card $PF" "claims" \
	    "release --instance i-1" "check"; do
		# shellcheck disable=SC2086
		run --separate-stderr vfstore --data-dir "$NOWHERE" \
		    --sysfs-root "$SYSFS" $cmd
		assert_equal "$cmd: $status" "$cmd: 69"
		assert_equal "$cmd: ${stderr_lines[0]/*create it with vfstore init*/named}" "$cmd: named"
		no_dir_left "$T/nowhere"
	done
}

@test "vfstore check reports the missing directory in its output" {
	run -69 --separate-stderr vfstore --data-dir "$NOWHERE" check
	assert_output "{\"status\":\"unavailable\",\"reason\":\"VF health state directory $NOWHERE/gpu is missing; create it with vfstore init\"}"
}

@test "vfstore apply answers every report with an error and keeps going" {
	run -0 --separate-stderr vfstore --data-dir "$NOWHERE" apply <<EOF2
{"check":"failed","vf_address":"$VF","instance_id":"i-1","assigned_at":"$AT","nvrm":"NVRM: x"}
{"check":"unknown","vf_address":"$VF","instance_id":"i-1","assigned_at":"$AT"}
EOF2
	assert_equal "${#lines[@]}" 2
	run -0 jq -r .error <<<"${lines[0]}"
	assert_output "VF health state unavailable: VF health state directory $NOWHERE/gpu is missing; create it with vfstore init"
	no_dir_left "$T/nowhere"
}

@test "vfpick places nothing on a missing data directory (69), dry run and claim" {
	run -69 --separate-stderr vfpick --data-dir "$NOWHERE" \
	    --sysfs-root "$SYSFS" --profile "NVIDIA L40S-12Q" --claim nd-1
	assert_output ""
	assert_equal "$(jq -r .error <<<"${stderr_lines[0]}")" \
	    "VF health state directory $NOWHERE/gpu is missing; create it with vfstore init"
	run -69 --separate-stderr vfpick --data-dir "$NOWHERE" \
	    --sysfs-root "$SYSFS" --profile "NVIDIA L40S-12Q"
	no_dir_left "$T/nowhere"
	assert_equal "$(cat "$SYSFS/sys/bus/pci/devices/$VF/nvidia/current_vgpu_type")" 0
}

@test "resources-report shows placement disabled on a missing data directory" {
	run -0 --separate-stderr resources-report --data-dir "$NOWHERE" \
	    --sysfs-root "$SYSFS"
	run -0 jq -r '.gpu.allocatable_slots, .gpu.placement_disabled_reason' <<<"$output"
	assert_line -n 0 0
	assert_line -n 1 "VF health state unavailable: VF health state directory $NOWHERE/gpu is missing; create it with vfstore init"
	no_dir_left "$T/nowhere"
}

@test "sentinel-poll reports list_error on a missing data directory" {
	run -0 --separate-stderr sentinel-poll --data-dir "$NOWHERE" \
	    --sysfs-root "$SYSFS" --once
	run -0 jq -r .check <<<"$output"
	assert_output list_error
	no_dir_left "$T/nowhere"
}

@test "a data dir that is a regular file is unavailable (69) with the reason, in vfstore and vfpick" {
	: >"$T/file"
	run -69 --separate-stderr vfstore --data-dir "$T/file" check
	assert_output "{\"status\":\"unavailable\",\"reason\":\"VF health state directory $T/file/gpu is not a directory\"}"
	run -69 --separate-stderr vfstore --data-dir "$T/file" \
	    report-failure --vf $VF --instance i-1 --assigned-at $AT
	run -69 --separate-stderr vfpick --data-dir "$T/file" \
	    --sysfs-root "$SYSFS" --profile "NVIDIA L40S-12Q" --claim i-1
	assert_file_empty "$T/file"
}

@test "a missing file inside an existing directory is still an empty store" {
	run -0 --separate-stderr vfstore --data-dir "$NOWHERE" init
	assert_output "{\"data_dir\":\"$NOWHERE\",\"created\":true}"
	run -0 --separate-stderr vfstore --data-dir "$NOWHERE" check
	assert_output '{"status":"ok","records":0,"quarantined":0,"claims":0,"drained":0}'
	run -0 --separate-stderr vfpick --data-dir "$NOWHERE" \
	    --sysfs-root "$SYSFS" --profile "NVIDIA L40S-12Q" --claim nd-1
	run -0 jq -r .vf_address <<<"$output"
	assert_output $VF
}

@test "vfstore init creates the directory 0755 with its lock, and changes nothing the second time" {
	umask 077
	run -0 --separate-stderr vfstore --data-dir "$NOWHERE" init
	assert_output "{\"data_dir\":\"$NOWHERE\",\"created\":true}"
	assert_equal "$(stat -c %a "$NOWHERE/gpu")" 755
	assert_file_exists "$NOWHERE/gpu/lock"
	vfstore --data-dir "$NOWHERE" report-failure --vf $VF --instance i-1 \
	    --assigned-at $AT >/dev/null 2>&1
	run -0 --separate-stderr vfstore --data-dir "$NOWHERE" init
	assert_output "{\"data_dir\":\"$NOWHERE\",\"created\":false}"
	run -0 jq -r '.records[0].failures[0].instance_id' "$NOWHERE/gpu/vf-health.json"
	assert_output i-1
}

@test "vfstore init --owner gives the directory and lock to that user" {
	[ "$(id -u)" = 0 ] || skip "needs root to chown"
	id nobody >/dev/null 2>&1 || skip "no user nobody"
	run -0 --separate-stderr vfstore --data-dir "$NOWHERE" init --owner nobody
	assert_equal "$(stat -c %U "$NOWHERE/gpu")" nobody
	assert_equal "$(stat -c %U "$NOWHERE/gpu/lock")" nobody
	run -65 --separate-stderr vfstore --data-dir "$T/other" init --owner no-such-user-x
	assert [ ! -e "$T/other" ]
}

@test "vfstore init on a path that is a regular file fails (74) and leaves it" {
	echo keep >"$T/file"
	run -74 --separate-stderr vfstore --data-dir "$T/file" init
	assert_equal "$(cat "$T/file")" keep
}

# lock_mode: the mode and group a lock file must have here (SPEC 7.2):
# 0640 group vfsentinel where that group exists, else 0600.
lock_mode() {
	if getent group vfsentinel >/dev/null; then
		echo "640 vfsentinel"
	else
		echo "600 $1"
	fi
}

# nobody_place: a world-traversable directory $R with a copy of the
# programs nobody may run (the bats temp dirs are 0700).
nobody_place() {
	[ "$(id -u)" = 0 ] || skip "needs root to run as nobody"
	id nobody >/dev/null 2>&1 || skip "no user nobody"
	need_tool chpst flock
	R=$(mktemp -d /tmp/vfs-lock.XXXXXX)
	chmod 755 "$R"
	cp -R "$VFS_BIN" "$R/bin"
	chmod -R a+rX "$R/bin"
	: >"$R/vfsentinel.conf"
	chmod 644 "$R/vfsentinel.conf"
	export VFSENTINEL_CONF=$R/vfsentinel.conf
}

@test "the store lock is its owner's: another user can neither open nor flock it, and exits 77 naming it" {
	nobody_place
	vfstore --data-dir "$R/d" init >/dev/null 2>&1
	vfstore --data-dir "$R/d" report-failure --vf $VF --instance i-1 \
	    --assigned-at $AT >/dev/null 2>&1
	assert_equal "$(stat -c '%a %G' "$R/d/gpu/lock")" "$(lock_mode root)"
	assert_equal "$(stat -c %U "$R/d/gpu/lock")" root
	# uid 65534 held a 0644 lock and stopped every start at prepare.
	run chpst -u nobody sh -c 'exec 9<"$1" && flock -n 9' _ "$R/d/gpu/lock"
	assert_failure
	run -77 --separate-stderr chpst -u nobody "$R/bin/vfstore" \
	    --data-dir "$R/d" report-failure --vf $VF --instance i-2 --assigned-at $AT
	assert_equal "$output" ""
	assert_regex "$stderr" "\"error\":\"lock $R/d/gpu/lock: Permission denied\""
	run -77 --separate-stderr chpst -u nobody "$R/bin/vfstore" --data-dir "$R/d" check
	# SPEC 8.5: check says so on stdout too.
	assert_equal "$(jq -r '"\(.status) \(.reason) \(.lock)"' <<<"$output")" \
	    "unavailable lock_permission $R/d/gpu/lock"
	run -77 --separate-stderr chpst -u nobody "$R/bin/vfpick" --data-dir "$R/d" \
	    --sysfs-root "$SYSFS" --profile "NVIDIA L40S-12Q" --claim i-3
	assert_regex "$stderr" "$R/d/gpu/lock"
	rm -rf "$R"
}

@test "root's vfstore check reports what the store's owner meets: a file it cannot open, a directory it cannot write (owner_access, 69)" {
	nobody_place
	vfstore --data-dir "$R/d" init --owner nobody >/dev/null 2>&1
	vfstore --data-dir "$R/d" report-failure --vf $VF --instance i-1 \
	    --assigned-at $AT >/dev/null 2>&1
	chown nobody "$R/d/gpu/"*
	run -0 --separate-stderr vfstore --data-dir "$R/d" check
	assert_equal "$(jq -r .status <<<"$output")" ok
	# Root reads it; the sentinel's user could not record.
	chown root "$R/d/gpu/vf-health.json"
	chmod 600 "$R/d/gpu/vf-health.json"
	run -69 --separate-stderr vfstore --data-dir "$R/d" check
	assert_equal "$(jq -c '{status, reason, owner, file}' <<<"$output")" \
	    "{\"status\":\"unavailable\",\"reason\":\"owner_access\",\"owner\":\"nobody\",\"file\":\"$R/d/gpu/vf-health.json\"}"
	assert_equal "$(jq -r .error <<<"$output")" "Permission denied"
	chown nobody "$R/d/gpu/vf-health.json"
	run -0 --separate-stderr vfstore --data-dir "$R/d" check
	# A directory the owner cannot write: it could not save.
	chmod 555 "$R/d/gpu"
	run -69 --separate-stderr vfstore --data-dir "$R/d" check
	assert_equal "$(jq -r '"\(.reason) \(.file)"' <<<"$output")" \
	    "owner_access $R/d/gpu (creating a file)"
	rm -rf "$R"
}

@test "root creates the lock for the store's owner: a service user owning DATA_DIR/gpu keeps its store" {
	nobody_place
	mkdir -p "$R/d/gpu"
	chown nobody:nogroup "$R/d/gpu" 2>/dev/null || chown nobody "$R/d/gpu"
	run -0 vfstore --data-dir "$R/d" report-failure --vf $VF --instance i-1 --assigned-at $AT
	assert_equal "$(stat -c %U "$R/d/gpu/lock")" nobody
	assert_equal "$(stat -c '%a %G' "$R/d/gpu/lock")" "$(lock_mode "$(stat -c %G "$R/d/gpu")")"
	run -0 chpst -u nobody "$R/bin/vfstore" --data-dir "$R/d" report-failure \
	    --vf $VF --instance i-2 --assigned-at $AT
	rm -rf "$R"
}

@test "vfstore init tightens a wider existing lock and gives it to the store's owner" {
	[ "$(id -u)" = 0 ] || skip "needs root to chown"
	id nobody >/dev/null 2>&1 || skip "no user nobody"
	vfstore --data-dir "$NOWHERE" init >/dev/null 2>&1
	chmod 666 "$NOWHERE/gpu/lock"
	run -0 --separate-stderr vfstore --data-dir "$NOWHERE" init
	assert_equal "$(stat -c '%a %G' "$NOWHERE/gpu/lock")" "$(lock_mode root)"
	# An upgrade: the package's postinst runs init --owner on every
	# configure, over a 0644 root lock an older version made.
	chmod 644 "$NOWHERE/gpu/lock"
	run -0 --separate-stderr vfstore --data-dir "$NOWHERE" init --owner nobody
	assert_equal "$(stat -c %U "$NOWHERE/gpu/lock")" nobody
	assert_equal "$(stat -c '%a %G' "$NOWHERE/gpu/lock")" "$(lock_mode "$(id -gn nobody)")"
	# A link planted at the lock is refused, not followed.
	rm "$NOWHERE/gpu/lock"
	echo keep >"$T/victim"
	chmod 644 "$T/victim"
	ln -s "$T/victim" "$NOWHERE/gpu/lock"
	run -74 --separate-stderr vfstore --data-dir "$NOWHERE" init --owner nobody
	assert_equal "$(stat -c '%a %U' "$T/victim")" "644 root"
}
