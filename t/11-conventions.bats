#!/usr/bin/env bats
# Conventions every program shares, second round (SPEC.md 2.1, 2.2): -h is
# --help, one message for a bad option, exit 74 (never 141) on a closed or
# full stdout on every path, and SIGTERM stops a program whose launcher
# blocked or ignored it. t/lib/launch.c starts programs that way.

load helpers
load lib/store
load lib/sentinel
load lib/guest

PROGS="kmsg-watch gpu-probe vsock-answer sentinel-poll vfstore vfpick resources-report vfrecover"
P12='NVIDIA L40S-12Q'
# SIGTERM's bit in /proc/PID/status masks (signal 15).
TERM_BIT=$((1 << 14))

setup() {
	vfs_setup
	store_setup
	sentinel_setup
	ST=$T/st
	mkdir -p "$ST" "$T/path"
	export SMI_STATE=$ST
	ln -sf "$(fake_smi ok)" "$T/path/nvidia-smi"
	SMI_PATH=$T/path:$PATH
	KMSG=$VFS_ROOT/t/fixtures/kmsg/upstream.kmsg
	jq -nc '{check: "unknown", vf_address: "0000:e3:00.4",
	    instance_id: "i-1", assigned_at: "2026-08-20T15:00:00Z"}' >"$T/in.jsonl"
	export SMI_PATH KMSG
	PIDS=
}

teardown() {
	kill_pids
	guest_teardown
	sentinel_teardown
}

# closed CMD...: CMD with a stdout pipe whose reader is already gone.
closed() {
	launch -p "$@"
}

# full CMD...: CMD with stdout on /dev/full.
full() {
	"$@" >/dev/full
}

# outpath NAME WRAPPER: runs the program of one stdout path under WRAPPER
# (closed or full). INSTANCE names the claim of vfpick-claim.
outpath() {
	local w=$2
	case $1 in
	kmsg-watch) $w kmsg-watch --no-pci-check --kmsg "$KMSG" ;;
	gpu-probe) $w env PATH="$SMI_PATH" gpu-probe ;;
	sentinel-poll) $w sentinel-poll --sysfs-root "$SYSFS" \
	    --data-dir "$DATA" --targets "$TARGETS" --once ;;
	vfstore-check) $w vfstore --data-dir "$DATA" check ;;
	vfstore-show) $w vfstore --data-dir "$DATA" show ;;
	vfstore-claims) $w vfstore --data-dir "$DATA" claims ;;
	vfstore-report) $w vfstore --data-dir "$DATA" report-failure --vf 0000:e3:00.5 \
	    --instance "i-$w" --assigned-at 2026-08-20T15:00:00Z ;;
	vfstore-apply) $w vfstore --data-dir "$DATA" apply <"$T/in.jsonl" ;;
	vfpick) $w vfpick --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --profile "$P12" ;;
	vfpick-claim) $w vfpick --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --profile "$P12" --claim "$INSTANCE" --configure ;;
	resources-json) $w resources-report --sysfs-root "$SYSFS" \
	    --data-dir "$DATA" ;;
	resources-prom) $w resources-report --sysfs-root "$SYSFS" \
	    --data-dir "$DATA" --format prometheus ;;
	*) echo "no output path $1" >&2; return 2 ;;
	esac
}

@test "-h is --help in every program: usage on stdout, exit 0" {
	for p in $PROGS; do
		echo "# $p" >&2
		run -0 --separate-stderr "$p" -h
		assert_line --index 0 --partial "usage: $p"
		[ -z "$stderr" ]
		help=$output
		run -0 --separate-stderr "$p" --help
		assert_equal "$output" "$help"
	done
}

@test "--help says what each option does; a usage error shows only the synopsis" {
	local p o help errs=
	for p in $PROGS; do
		run -0 --separate-stderr "$p" --help
		help=$output
		# Each long option on a line of its own: the option (after
		# "-c, " for a short one), its value's name, then two blanks
		# and words, or words on the next line, indented.
		for o in $(grep -o -- '--[a-z][a-z0-9-]*' <<<"$help" | sort -u); do
			grep -qE -- "^ +(-[a-zA-Z], )?$o( [^ ]+)?  +[a-zA-Z(]" \
			    <<<"$help" ||
			    grep -A1 -E -- "^ +(-[a-zA-Z], )?$o( [^ ]+)?\$" \
			    <<<"$help" | sed -n 2p | grep -qE '^ {8,}[a-zA-Z(]' ||
			    errs+="$p --help: $o has no description; "
		done
		run -64 --separate-stderr "$p" --bogus
		assert_equal "${stderr_lines[-1]}" \
		    "Run '$p --help' to see what each option does."
		[ "${#stderr_lines[@]}" -lt "$(wc -l <<<"$help")" ] ||
		    errs+="$p: the usage error prints the whole help; "
	done
	[ -z "$errs" ] || fail "$errs"
}

@test "a bad option is one message in every program: the option, then the usage, exit 64" {
	for p in $PROGS; do
		for a in --bogus -Z --config -c; do
			echo "# $p $a" >&2
			run -64 --separate-stderr "$p" "$a"
			assert_output ''
			assert_equal "${stderr_lines[0]}" \
			    "$p: unknown option or missing argument: $a"
			[[ "${stderr_lines[1]}" == "usage: $p "* ]]
		done
	done
	run -64 --separate-stderr vfstore check --bogus
	assert_equal "${stderr_lines[0]}" \
	    "vfstore: unknown option or missing argument: --bogus"
	run -64 --separate-stderr vfstore show --vf
	assert_equal "${stderr_lines[0]}" \
	    "vfstore: unknown option or missing argument: --vf"
	run -64 --separate-stderr vfpick --profile "$P12" -xZ
	assert_equal "${stderr_lines[0]}" \
	    "vfpick: unknown option or missing argument: -x"
}

@test "every usage error names the bad argument: an extra operand, or a command's option another command has" {
	for p in $PROGS; do
		[ "$p" = vfstore ] && continue
		echo "# $p stray" >&2
		run -64 --separate-stderr "$p" stray
		assert_equal "${stderr_lines[0]}" "$p: unexpected argument: stray"
	done
	run -64 --separate-stderr vfstore check stray
	assert_equal "${stderr_lines[0]}" \
	    "vfstore: check: unexpected argument: stray"
	run -64 --separate-stderr vfstore clear --vf 0000:e3:00.4 --force
	assert_equal "${stderr_lines[0]}" \
	    "vfstore: clear: unknown option or missing argument: --force"
	run -64 --separate-stderr vfstore show --limit 3
	assert_equal "${stderr_lines[0]}" \
	    "vfstore: show: unknown option or missing argument: --limit"
}

@test "--help, -h and --version exit 74 on a closed pipe and on /dev/full" {
	for p in $PROGS; do
		for a in --help -h --version; do
			echo "# $p $a" >&2
			run -74 --separate-stderr closed "$p" "$a"
			[[ "$stderr" == *'"write stdout failed"'* ]]
			run -74 --separate-stderr full "$p" "$a"
			[[ "$stderr" == *'"write stdout failed"'* ]]
		done
	done
}

@test "every data path exits 74 on a closed pipe and on /dev/full" {
	put_health @upstream.json
	mk_vf "$SYSFS" 0000:e3:00.0 0000:e3:00.3
	put_claims '{"version":1,"claims":[{"vf_address":"0000:e3:00.7","instance_id":"i-7","claimed_at":"2026-08-20T15:00:00Z","profile":"NVIDIA L40S-12Q","type_id":"1160"}]}'
	guests g1=unknown
	target 0000:e3:00.4 i-1 "$TS1" "unix:$G/g1" >"$TARGETS"
	for o in kmsg-watch gpu-probe sentinel-poll vfstore-check \
	    vfstore-show vfstore-claims vfstore-report vfstore-apply vfpick \
	    resources-json resources-prom; do
		for w in closed full; do
			echo "# $o $w" >&2
			run -74 --separate-stderr outpath "$o" "$w"
			[[ "$stderr" == *'stdout'* ]]
		done
	done
}

@test "vfpick --claim --configure on a closed or full stdout: 74, claim and sysfs write kept" {
	for w in closed full; do
		INSTANCE=i-$w
		run -74 --separate-stderr outpath vfpick-claim "$w"
		[[ "$stderr" == *'"write stdout failed"'* ]]
		run -0 jq -r --arg id "$INSTANCE" \
		    '.claims[] | select(.instance_id == $id) | .vf_address' "$CLAIMS"
		vf=$output
		[[ "$vf" == 0000:e3:00.[4-7] ]]
		run -0 cat "$SYSFS/sys/bus/pci/devices/$vf/nvidia/current_vgpu_type"
		assert_output 1160
	done
	run -0 jq '.claims | length' "$CLAIMS"
	assert_output 2
}

# started_as PID PROG: PID has exec'd into PROG (launch is gone).
started_as() {
	[ "$(readlink "/proc/$1/exe")" = "$(command -v "$2")" ]
}

# term_open PID: SIGTERM is neither blocked nor ignored in PID.
term_open() {
	local blk ign
	blk=$(awk '$1 == "SigBlk:" { print $2 }' "/proc/$1/status") || return 1
	ign=$(awk '$1 == "SigIgn:" { print $2 }' "/proc/$1/status") || return 1
	[ -n "$blk" ] && [ -n "$ign" ] || return 1
	[ $((0x$blk & TERM_BIT)) -eq 0 ] && [ $((0x$ign & TERM_BIT)) -eq 0 ]
}

# stops_on_term PID: SIGTERM ends PID with exit 0 within 3 s.
stops_on_term() {
	local pid=$1 i rc=0
	kill -TERM "$pid"
	for ((i = 0; i < 60; i++)); do
		is_alive "$pid" || break
		sleep 0.05
	done
	if is_alive "$pid"; then
		kill -KILL "$pid"
		wait "$pid" || true
		echo "# still running 3 s after SIGTERM" >&2
		return 1
	fi
	wait "$pid" || rc=$?
	[ "$rc" -eq 0 ] || { echo "# exit $rc" >&2; return 1; }
}

# blocked CMD...: CMD started as launchers that block SIGTERM/INT/HUP
# and ignore SIGTERM do it, in the background; its pid in BPID. (<&0:
# bash gives a background command without its own stdin /dev/null; fd 8
# is hold_lock's, which a child must not inherit.)
blocked() {
	launch -b TERM -b INT -b HUP -i TERM "$@" <&0 3>&- 8>&- &
	BPID=$!
	PIDS="$PIDS $BPID"
}

@test "long-running programs started with SIGTERM blocked and ignored stop on SIGTERM with 0" {
	mkfifo "$T/kmsg" "$T/ev" "$T/in"
	exec 5<>"$T/kmsg" 6<>"$T/in"
	echo boot-1 >"$T/boot_id"

	blocked kmsg-watch --no-pci-check --kmsg "$T/kmsg" >"$T/k.out" 2>"$T/k.err"
	echo "3,1,1,-;NVRM: RmInitAdapter failed! one" >&5
	wait_for grep -q '"seq":1' "$T/k.out"
	stops_on_term "$BPID"

	ln -sf "$(fake_smi fail)" "$T/path/nvidia-smi"
	blocked env PATH="$SMI_PATH" gpu-probe --retry-interval 600 \
	    >"$T/g.out" 2>"$T/g.err"
	wait_for test -s "$ST/attempts"
	wait_for grep -q gpu_probe_failed "$T/g.out"
	stops_on_term "$BPID"

	blocked vsock-answer --events "$T/ev" --listen "unix:$T/s" \
	    --state-file "$T/state.json" --boot-id-file "$T/boot_id" 2>"$T/a.err"
	wait_for grep -q '"msg":"listening"' "$T/a.err"
	stops_on_term "$BPID"

	blocked sentinel-poll --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --targets "$TARGETS" --interval 1 >"$T/p.out" 2>"$T/p.err"
	wait_for grep -q '"msg":"vGPU sentinel started"' "$T/p.err"
	stops_on_term "$BPID"

	blocked vfstore --data-dir "$DATA" apply --metrics-file "$T/m.prom" \
	    <"$T/in" >"$T/v.out" 2>"$T/v.err"
	wait_for test -s "$T/m.prom"
	stops_on_term "$BPID"
	exec 5>&- 6>&-
}

@test "one-shot programs started with SIGTERM blocked and ignored unblock it at once" {
	hold_lock
	blocked vfpick --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --lock-timeout 60 --profile "$P12" >"$T/f.out" 2>"$T/f.err"
	pick=$BPID
	blocked resources-report --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --lock-timeout 60 >"$T/r.out" 2>"$T/r.err"
	report=$BPID
	blocked vfstore --data-dir "$DATA" --lock-timeout 60 check \
	    >"$T/c.out" 2>"$T/c.err"
	check=$BPID
	for p in "vfpick $pick" "resources-report $report" "vfstore $check"; do
		set -- $p
		echo "# $1" >&2
		wait_for started_as "$2" "$1"
		wait_for term_open "$2"
	done
	release_lock
	for p in $pick $report $check; do
		rc=0
		wait "$p" || rc=$?
		assert_equal "$rc" 0
	done
}
