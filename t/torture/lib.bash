# lib.bash - the parts of torture.sh (sourced; needs secs workers seed
# dir keep SHIM set).
# shellcheck disable=SC2154 # those are torture.sh's

PROFILE="NVIDIA L40S-12Q"
FAULT_FNS=(mkdir open write fsync close rename unlink)

# The sysfs builders of t/helpers.bash, without bats.
load_builders() {
	bats_require_minimum_version() { :; }
	bats_load_library() { :; }
	# shellcheck source=t/helpers.bash
	. "$VFS_ROOT/t/helpers.bash"
}

make_host() {
	local c n pf
	S=$dir/sysfs D=$dir/data G=$dir/g
	mkdir -p "$S/sys/bus/pci/devices" "$D" "$G" "$dir/proc/proc" "$dir/w"
	for c in e3 e4; do
		pf=0000:$c:00.0
		mk_card "$S" "$pf"
		for n in 1 2 3 4 5 6 7 8; do
			mk_vf "$S" "$pf" "$(printf '0000:%s:%02x.%d' $c $((n / 8 + 1)) $((n % 8)))"
		done
	done
	VFS=()
	for n in "$S"/sys/bus/pci/devices/*/nvidia; do
		n=${n%/nvidia}
		VFS+=("${n##*/}")
	done
	echo "gpu.vf_quarantine_threshold = 2" >"$dir/vfsentinel.conf"
	export VFSENTINEL_CONF=$dir/vfsentinel.conf S D G
	vfstore --data-dir "$D" init >/dev/null
}

# start_guests: four vsock-answer guests: 0 and 1 FAILED, 2 OK, 3 UNKNOWN.
start_guests() {
	local i ev
	GUEST_PIDS=()
	# The VMs' control socket: a real listener (SPEC 4.4 VMM liveness).
	socat "UNIX-LISTEN:$dir/ctl,fork" EXEC:true 2>>"$dir/guests.log" 3>&- &
	GUEST_PIDS+=($!)
	for i in 0 1 2 3; do
		case $i in
		0|1) ev='{"event":"gpu_init_failed","seq":7,"ts_usec":9,"message":"NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)"}' ;;
		2) ev='{"event":"gpu_init_ok","output":"GPU 0: NVIDIA L40S-12Q"}' ;;
		3) ev= ;;
		esac
		printf '%s\n' "$ev" >"$G/$i.events"
		vsock-answer --events - --listen "unix:$G/$i.sock" \
			--state-file "$G/$i.state" <"$G/$i.events" \
			2>>"$dir/guests.log" 3>&- &
		GUEST_PIDS+=($!)
	done
	for i in 0 1 2 3; do
		wait_for test -S "$G/$i.sock" || { echo "torture: guest $i did not start" >&2; return 1; }
	done
	wait_for test -S "$dir/ctl" || { echo "torture: no control socket" >&2; return 1; }
}

stop_guests() {
	local p
	for p in "${GUEST_PIDS[@]}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
}

# pick_fault: sets FAULT (the shim's environment, or empty) for a mutation.
pick_fault() {
	FAULT=()
	((RANDOM % 5 == 0)) || return 0
	FAULT=(env LD_PRELOAD="$PRELOAD" FAIL_MATCH=/gpu
		"FAIL_${FAULT_FNS[RANDOM % ${#FAULT_FNS[@]}]}=$((RANDOM % 3 + 1))"
		FAIL_ERRNO=$((RANDOM % 2 ? 5 : 28)))
}

# reap PID: waits for PID, killing it first at a random moment (1 in 6);
# sets RC.
reap() {
	if ((RANDOM % 6 == 0)); then
		sleep "$(printf '0.%03d' $((RANDOM % 60)))"
		kill -9 "$1" 2>/dev/null
	fi
	wait "$1"
	RC=$?
}

# log_op OP START A1 A2 A3 OUT: one line of the operation log (one
# write(2) of less than PIPE_BUF with O_APPEND, so lines never mix).
log_op() {
	local fault=-
	[ ${#FAULT[@]} -gt 0 ] && fault=${FAULT[3]}
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$WID" "$SEQ" \
		"$1" "$2" "$EPOCHREALTIME" "$RC" "$fault" "$3" "$4" "$5" "$6" \
		>>"$dir/ops.tsv"
}

# mutate OP A1 A2 A3 -- CMD...: runs one vfstore/vfpick command.
mutate() {
	local op=$1 a1=$2 a2=$3 a3=$4 start out=$W/out
	shift 5
	pick_fault
	start=$EPOCHREALTIME
	"${FAULT[@]}" "$@" >"$out" 2>>"$W/stderr" 3>&- &
	reap $!
	log_op "$op" "$start" "$a1" "$a2" "$a3" "$(head -n 1 "$out")"
}

op_report() {
	local vf=${VFS[RANDOM % ${#VFS[@]}]} id=r-$((RANDOM % 6))
	local at=k-$((RANDOM % 4)) kind=$1
	mutate "$kind" "$vf" "$id" "$at" -- vfstore --data-dir "$D" \
		"$kind" --vf "$vf" --instance "$id" --assigned-at "$at"
}

op_pick() {
	local id=p-$WID-$SEQ g=$((RANDOM % 4))
	mutate pick "$id" "$g" - -- vfpick --data-dir "$D" --sysfs-root "$S" \
		--profile "$PROFILE" --claim "$id" --vsock "unix:$G/$g.sock" \
		--control-socket "$dir/ctl" --configure
	# Only "no VF" (1) certainly left no claim behind.
	[ "$RC" = 1 ] || CLAIMED+=("$id")
}

op_release() {
	local i id
	[ ${#CLAIMED[@]} -gt 0 ] || return 0
	i=$((RANDOM % ${#CLAIMED[@]}))
	id=${CLAIMED[i]}
	mutate release "$id" - - -- vfstore --data-dir "$D" --sysfs-root "$S" \
		release --instance "$id" --deconfigure --proc-root "$dir/proc"
	if [ "$RC" = 0 ]; then
		CLAIMED[i]=${CLAIMED[-1]}
		unset 'CLAIMED[-1]'
	fi
}

op_operator() {
	local vf=${VFS[RANDOM % ${#VFS[@]}]}
	mutate "$1" "$vf" - - -- vfstore --data-dir "$D" --sysfs-root "$S" \
		"$1" --vf "$vf"
}

# op_scan: sentinel-poll --once | vfstore apply; the poll output is kept
# (tee) so the checker knows which checks the apply run saw.
op_scan() {
	local start poll=$W/poll.$SEQ out=$W/apply.$SEQ
	pick_fault
	start=$EPOCHREALTIME
	sentinel-poll --data-dir "$D" --sysfs-root "$S" --once --timeout 2 \
		2>>"$W/stderr" 3>&- | tee "$poll" |
		"${FAULT[@]}" vfstore --data-dir "$D" apply >"$out" \
		2>>"$W/stderr" 3>&- &
	reap $!
	wait
	log_op scan "$start" "$poll" "$out" - -
}

worker() {
	local r end=$1
	WID=$2 SEQ=0 W=$dir/w/$2 CLAIMED=()
	RANDOM=$((seed * 31 + WID))
	mkdir -p "$W"
	while ((EPOCHSECONDS < end)); do
		SEQ=$((SEQ + 1))
		r=$((RANDOM % 100))
		if ((r < 20)); then op_report report-failure
		elif ((r < 30)); then op_report report-success
		elif ((r < 50)); then op_pick
		elif ((r < 63)); then op_release
		elif ((r < 68)); then op_operator quarantine
		elif ((r < 78)); then op_operator clear
		else op_scan
		fi
	done
}

# sampler END: `vfstore check` all along; any unavailable moment is logged.
sampler() {
	while ((EPOCHSECONDS < $1)); do
		vfstore --data-dir "$D" check >>"$dir/samples" 2>/dev/null 3>&-
		echo "rc=$?" >>"$dir/samples"
		sleep 0.2
	done
}

torture_main() {
	local end i pids=() rc
	PRELOAD=$SHIM
	# A sanitizer build needs its runtime first in LD_PRELOAD.
	[ -n "${VFS_SAN:-}" ] && PRELOAD="$(gcc -print-file-name=libasan.so) $SHIM"
	[ -f "$SHIM" ] || { echo "torture: no $SHIM (make test-aids)" >&2; return 1; }
	load_builders
	make_host
	start_guests || return 1
	echo "torture: ${secs}s, $workers workers, seed $seed, dir $dir"
	end=$((EPOCHSECONDS + secs))
	sampler "$end" &
	pids+=($!)
	# bash reports every killed job on stderr: keep that out of the way.
	for ((i = 1; i <= workers; i++)); do
		worker "$end" "$i" 2>>"$dir/jobs.log" &
		pids+=($!)
	done
	wait "${pids[@]}"
	stop_guests
	vfstore --data-dir "$D" check >"$dir/final-check" 2>&1
	echo "final_check_rc=$?" >>"$dir/final-check"
	/usr/bin/python3 "$VFS_ROOT/t/torture/check.py" "$dir" "$secs"
	rc=$?
	if [ "$rc" = 0 ] && [ "$keep" = 0 ]; then
		rm -rf "$dir"
	else
		echo "torture: kept $dir"
	fi
	return "$rc"
}
