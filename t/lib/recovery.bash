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
	PIDS=
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
# the stand-ins, short timeouts and any extra lines. The textfile
# directory is $T/tf: vfrecover writes its textfile there once a test
# makes it (never into the machine's node_exporter directory).
recovery_conf() {
	{
		echo "data_dir = $DATA"
		echo "sysfs_root = $SYSFS"
		echo "metrics.textfile_dir = $T/tf"
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

# drained VF...: 0 if DATA_DIR/gpu/vf-drain.json drains every VF.
drained() {
	jq -e '[.drains[].vf_address] as $d |
	    all($ARGS.positional[]; IN($d[]))' \
	    "$DATA/gpu/vf-drain.json" --args "$@" >/dev/null
}

# nvidia_holder PID COMM: a fake process holding /dev/nvidia0 open.
nvidia_holder() {
	mkdir -p "$T/proc/$1/fd"
	ln -sfn /dev/nvidia0 "$T/proc/$1/fd/3"
	echo "$2" >"$T/proc/$1/comm"
}

# The steps in their order (SPEC 4.6).
STEPS=(preflight drain idle quiesce disable enable restore verify clear)

# crash_conf: the configuration of the kill -9 tests. The stand-in DCGM
# keeps its state in $T/dcgm (quiesce writes stopped, restore running),
# a verify command runs, and each command lasts $STEP_SLEEP seconds
# (unset: no time), so that a kill can land while one runs. The step and
# settle timeouts are long: these tests kill runs, they do not time
# steps out (3 s failed a finished run with exit 1 under ASan on a
# loaded machine).
crash_conf() {
	echo running >"$T/dcgm"
	recovery_conf \
	    "recovery.quiesce_command = echo quiesce \$VFSENTINEL_CARD >>$CALLS; echo stopped >$T/dcgm; sleep \${STEP_SLEEP:-0}" \
	    "recovery.restore_command = sleep \${STEP_SLEEP:-0}; echo restore \$VFSENTINEL_CARD >>$CALLS; echo running >$T/dcgm" \
	    "recovery.verify_command = echo verify \$VFSENTINEL_VF >>$CALLS; sleep \${STEP_SLEEP:-0}" \
	    "recovery.step_timeout = 30" "recovery.settle_timeout = 30"
}

# orphans_left: 0 while a process started by a killed run (its
# environment has RUN_TAG=$T) still runs: the stand-in commands are in
# their own process group and outlive vfrecover.
orphans_left() {
	grep -qsxz "RUN_TAG=$T" /proc/[0-9]*/environ
}

# journal_has STEP STATUS...: 0 if $JOURNAL exists and holds STEP with
# one of the STATUSes.
journal_has() {
	[ -e "$JOURNAL" ] || return 1
	jq -e --arg s "$1" '[.steps[] | select(.step == $s) | .status] |
	    any(IN($ARGS.positional[]))' --args "${@:2}" <"$JOURNAL" >/dev/null
}

# landed_step: the step a killed run from the start was in: the first
# one the journal has not done (no journal: preflight).
landed_step() {
	if [ ! -e "$JOURNAL" ]; then
		echo preflight
		return 0
	fi
	jq -r '[.steps[] | select(.status == "done" or .status == "skipped")
	    | .step] as $d | [$ARGS.positional[] | select(IN($d[]) | not)] |
	    .[0] // "none"' --args "${STEPS[@]}" <"$JOURNAL"
}

# wait_journal STEP PID: returns once the journal says STEP is done, or
# PID has gone. Polls in bash (no process per look), every 5 ms.
wait_journal() {
	local j
	while kill -0 "$2" 2>/dev/null; do
		j=
		{ read -r -d '' j <"$JOURNAL"; } 2>/dev/null || true
		[[ $j != *"\"step\":\"$1\",\"status\":\"done\""* ]] || return 0
		nap 0.005
	done
}

# How long (ms) each step lasts under crash_run's slow-down, about: the
# span of its random moment.
declare -gA STEP_MS=([preflight]=40 [drain]=30 [idle]=30 [quiesce]=60
    [disable]=60 [enable]=60 [restore]=60 [verify]=60 [clear]=30)

# crash_run STEP|any: vfrecover --card $PF, slowed down (4 ms before each
# open under DATA/gpu, 50 ms in each command), killed with SIGKILL at a
# random moment of STEP (once the step before is done in the journal),
# or within 400 ms of its start (any). Sets RC to its exit status (137:
# killed) and returns once its orphaned commands have finished.
crash_run() {
	local pid i=0 ms=400 k pause
	RUN_TAG=$T STEP_SLEEP=0.05 SRIOV_DELAY=0.025 LD_PRELOAD=$(fault_env) \
	    DELAY_open=0.004 DELAY_MATCH=$DATA/gpu/ \
	    vfrecover --proc-root "$T" --card "$PF" >/dev/null 2>&1 &
	pid=$!
	if [ "$1" != any ]; then
		ms=${STEP_MS[$1]}
		while [ "${STEPS[i]}" != "$1" ]; do
			i=$((i + 1))
		done
	fi
	if [ "$i" -gt 0 ]; then
		wait_journal "${STEPS[i - 1]}" "$pid"
	fi
	# No process between the step's start and the kill: a fork costs
	# more than the short steps (idle) last on a loaded machine.
	printf -v pause '0.%03d' $((RANDOM % ms))
	nap "$pause"
	kill -KILL "$pid" 2>/dev/null || true
	RC=0
	wait "$pid" 2>/dev/null || RC=$?
	for ((k = 0; k < 100; k++)); do
		orphans_left || return 0
		nap 0.05
	done
	echo "# orphans of the killed run still run" >&2
	return 1
}
