# recovery.bash - helpers for the vfrecover tests (load lib/recovery).
# shellcheck shell=bash
# shellcheck disable=SC2034 # the addresses are for the test files

PF=0000:e3:00.0
VF4=0000:e3:00.4
VF5=0000:e3:00.5
VF6=0000:e3:00.6

# recovery_setup: call after vfs_setup. A card $PF with VFs .4 .5 .6 (its
# virtfn* links and sriov_numvfs, as the kernel shows them), the stand-in
# sriov-manage over it, and stand-in quiesce/restore/verify commands that
# append what they would do to $CALLS.
recovery_setup() {
	DEV=$SYSFS/sys/bus/pci/devices
	CALLS=$T/calls
	JOURNAL=$DATA/gpu/recovery/$PF.json
	AUDIT=$DATA/gpu/audit.jsonl
	FAKE_SYSFS=$SYSFS
	SRIOV_LOG=$CALLS
	export DEV CALLS JOURNAL AUDIT FAKE_SYSFS SRIOV_LOG
	: >"$CALLS"
	mk_sriov_card "$PF" "$VF4" "$VF5" "$VF6"
	mkdir -p "$T/proc"
	recovery_conf ""
}

# mk_sriov_card PF VF...: the card and its VFs, linked as virtfn0...
mk_sriov_card() {
	local pf=$1 vf i=0
	shift
	mk_card "$SYSFS" "$pf"
	for vf in "$@"; do
		mk_vf "$SYSFS" "$pf" "$vf"
		ln -s "../$vf" "$DEV/$pf/virtfn$i"
		i=$((i + 1))
	done
	echo "$i" >"$DEV/$pf/sriov_numvfs"
}

# recovery_conf [KEY = VALUE lines...]: the test's configuration, with
# the stand-ins, short timeouts and any extra lines.
recovery_conf() {
	{
		echo "data_dir = $DATA"
		echo "sysfs_root = $SYSFS"
		echo "recovery.sriov_manage = $VFS_ROOT/t/lib/sriov-manage"
		echo "recovery.quiesce_command = echo quiesce \$VFSENTINEL_CARD >>$CALLS"
		echo "recovery.restore_command = echo restore \$VFSENTINEL_CARD >>$CALLS"
		echo "recovery.step_timeout = 3"
		echo "recovery.settle_timeout = 2"
		printf '%s\n' "$@"
	} >"$VFSENTINEL_CONF"
}

# rec ARGS...: vfrecover with the fake /proc.
rec() {
	vfrecover --proc-root "$T" "$@"
}

# steps: "step:status" of each step line of $output (bats' run),
# space-separated.
# shellcheck disable=SC2154
steps() {
	jq -r 'select(.status) | "\(.step):\(.status)"' <<<"$output" | xargs
}

# quarantined VF: 0 if the store holds VF quarantined.
quarantined() {
	vfstore --data-dir "$DATA" show --vf "$1" |
	    jq -e '.quarantined == true' >/dev/null
}

# nvidia_holder PID COMM: a fake process holding /dev/nvidia0 open.
nvidia_holder() {
	mkdir -p "$T/proc/$1/fd"
	ln -sfn /dev/nvidia0 "$T/proc/$1/fd/3"
	echo "$2" >"$T/proc/$1/comm"
}
