# store.bash - helpers for the vfstore tests (load lib/store).

# The VF and the two claim times the store tests report on (a test file
# may set its own after the load).
# shellcheck disable=SC2034 # used by the test files
VF=0000:e3:00.4
# shellcheck disable=SC2034
AT1=2026-08-20T15:00:00Z
# shellcheck disable=SC2034
AT2=2026-08-20T16:00:00Z

# store_setup: call after vfs_setup. Sets HEALTH, CLAIMS and LOCK.
store_setup() {
	HEALTH=$DATA/gpu/vf-health.json
	CLAIMS=$DATA/gpu/vf-claims.json
	LOCK=$DATA/gpu/lock
	FIX=$VFS_ROOT/t/fixtures/store
	export HEALTH CLAIMS LOCK FIX
}

# vs ARGS...: vfstore on the test's data dir.
vs() {
	vfstore --data-dir "$DATA" "$@"
}

# put_health TEXT|@FIXTURE: installs a health file.
put_health() {
	mkdir -p "$DATA/gpu"
	case $1 in
	@*) cp "$FIX/${1#@}" "$HEALTH" ;;
	*) printf '%s' "$1" >"$HEALTH" ;;
	esac
}

# put_claims TEXT: installs a claims ledger.
put_claims() {
	mkdir -p "$DATA/gpu"
	printf '%s' "$1" >"$CLAIMS"
}

# rfail VF ID AT / rok VF ID AT: one report through the CLI.
rfail() {
	vs report-failure --vf "$1" --instance "$2" --assigned-at "$3"
}
rok() {
	vs report-success --vf "$1" --instance "$2" --assigned-at "$3"
}

# set_threshold N: writes the threshold into the test's configuration.
set_threshold() {
	echo "gpu.vf_quarantine_threshold = $1" >"$VFSENTINEL_CONF"
}

# quarantined VF: exit 0 if show says the VF is quarantined.
quarantined() {
	local out
	out=$(vs show --vf "$1" 2>/dev/null) || return 1
	[ "$(jq -r .quarantined <<<"$out")" = true ]
}

# tallies VF: the instance ids of the VF's failures, space separated.
tallies() {
	jq -r --arg vf "$1" '.records[] | select(.vf_address == $vf) |
	    [.failures[]?.instance_id] | join(" ")' "$HEALTH"
}

# hold_lock / release_lock: the test's own shell holds the store lock
# exclusively on fd 8 (no helper process to clean up).
hold_lock() {
	mkdir -p "$DATA/gpu"
	exec 8>"$LOCK"
	flock -x 8
}
release_lock() {
	exec 8>&-
}

# suspects_host: a card 0000:e3:00.0 with VFs .4 and .5 (CARD, VF4,
# VF5), an initialised store, and both VFs suspect in SUSPECT
# (vf-suspect.json: an unclean end reported by vfstore).
suspects_host() {
	local vf list=
	CARD=0000:e3:00.0
	VF4=0000:e3:00.4
	VF5=0000:e3:00.5
	mk_card "$SYSFS" $CARD
	mk_vf "$SYSFS" $CARD $VF4
	mk_vf "$SYSFS" $CARD $VF5
	vs init >/dev/null 2>&1
	SUSPECT=$DATA/gpu/vf-suspect.json
	for vf in $VF4 $VF5; do
		list="$list${list:+,}{\"vf_address\":\"$vf\",\"instance_id\":\"i-$vf\",\"assigned_at\":\"2026-12-07T10:00:00Z\",\"ended_at\":\"2026-12-07T10:00:09Z\",\"ended\":\"unclean\",\"source\":\"vfstore\"}"
	done
	printf '{"version":1,"suspects":[%s]}' "$list" >"$SUSPECT"
}
