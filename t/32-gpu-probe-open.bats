#!/usr/bin/env bats
# gpu-probe --method open (SPEC 3.2): driver init proven by opening every
# GPU's /dev/nvidiaN, found in a fake PROC/driver/nvidia/gpus tree, in a
# child process handled like an nvidia-smi attempt; and --method auto.
# A regular file stands in for a node that opens, a directory for one that
# fails (EISDIR), the fault-injection shim for an open that hangs.

load helpers
load lib/guest
load lib/answer
load lib/runit

setup() {
	vfs_setup
	ROOT=$T/root
	DEV=$T/dev
	GPUS=$ROOT/proc/driver/nvidia/gpus
	mkdir -p "$DEV" "$T/path" "$T/st"
	export SMI_STATE=$T/st
	# gpu-probe with every open of a node delayed 1000 s by the shim,
	# which logs each delayed process to $T/delay.log.
	DELAYED=(env LD_PRELOAD="$(fault_env)" DELAY_open=1000
	    DELAY_MATCH="$DEV/nvidia" DELAY_LOG="$T/delay.log" PATH="$T/path"
	    "$VFS_BIN/gpu-probe" --method open --proc-root "$ROOT"
	    --dev-dir "$DEV")
}

teardown() {
	local p
	if [ -s "$T/delay.log" ]; then
		for p in $(awk '$1 ~ /^[0-9]+$/ { print $1 }' "$T/delay.log"); do
			kill -KILL "$p" 2>/dev/null || true
		done
	fi
	answer_stop || true
	runit_teardown
	guest_teardown
}

# mk_gpu BDF MINOR: a GPU the driver knows, with the information file the
# NVIDIA module writes (its "Device Minor:" line gives the node).
mk_gpu() {
	mkdir -p "$GPUS/$1"
	printf '%s\n' 'Model: 		 NVIDIA L40S-12Q' 'IRQ:   		 45' \
	    'GPU UUID: 	 GPU-6b2a0c1e-8a5f-4d5e-9c1a-000000000001' \
	    'Video BIOS: 	 ??.??.??.??.??' 'Bus Type: 	 PCIe' \
	    'DMA Size: 	 47 bits' 'DMA Mask: 	 0x7fffffffffff' \
	    "Bus Location: 	 $1" "Device Minor: 	 $2" \
	    'GPU Excluded:	 No' >"$GPUS/$1/information"
}

# probe ARGS...: gpu-probe on the fake trees, no nvidia-smi on PATH.
probe() {
	env PATH="$T/path" "$VFS_BIN/gpu-probe" --proc-root "$ROOT" \
	    --dev-dir "$DEV" "$@"
}

# logged MSG: the log lines of stderr with message MSG, as one JSON array.
logged() {
	jq -s -c --arg m "$1" 'map(select(.msg == $m))' <<<"$stderr"
}

# delayed_pids: the processes the shim delayed, one a line.
delayed_pids() {
	awk '$1 ~ /^[0-9]+$/ { print $1 }' "$T/delay.log"
}

@test "a node that opens: gpu_init_ok with method open, naming node and address, one attempt" {
	mk_gpu 0000:00:03.0 0
	: >"$DEV/nvidia0"
	run -0 --separate-stderr probe --method open
	assert_output "{\"event\":\"gpu_init_ok\",\"method\":\"open\",\"output\":\"opened $DEV/nvidia0 (0000:00:03.0)\"}"
	logged "GPU driver initialized" | jq -e 'length == 1 and .[0].method == "open"'
}

@test "the node is opened blocking and read-write, in a child process" {
	need_tool strace
	mk_gpu 0000:00:03.0 0
	: >"$DEV/nvidia0"
	# LeakSanitizer cannot run under ptrace; the other tests cover leaks.
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	    run -0 --separate-stderr strace -f -o "$T/trace" -e trace=execve,openat \
	    env PATH="$T/path" "$VFS_BIN/gpu-probe" --method open \
	    --proc-root "$ROOT" --dev-dir "$DEV"
	assert_output --partial '"event":"gpu_init_ok"'
	local main opens
	main=$(awk '/execve\(.*gpu-probe/ { print $1; exit }' "$T/trace")
	[ -n "$main" ]
	opens=$(grep -F "\"$DEV/nvidia0\"" "$T/trace")
	echo "$opens"
	[ "$(wc -l <<<"$opens")" -eq 1 ]
	[[ $opens == *O_RDWR* ]]
	[[ $opens != *O_NONBLOCK* ]]
	[[ $opens != "$main "* ]]
}

@test "two GPUs that open: the output lists both, in the order of their entries" {
	mk_gpu 0000:00:04.0 1
	mk_gpu 0000:00:03.0 0
	: >"$DEV/nvidia0"
	: >"$DEV/nvidia1"
	run -0 --separate-stderr probe --method open
	[ "${#lines[@]}" -eq 1 ]
	echo "$output" | jq -e --arg d "$DEV" '.output == "opened \($d)/nvidia0 (0000:00:03.0)\nopened \($d)/nvidia1 (0000:00:04.0)"'
}

@test "a node that fails to open (a directory: EISDIR) is a failed attempt, then gave up" {
	mk_gpu 0000:00:03.0 0
	mkdir "$DEV/nvidia0"
	run -0 --separate-stderr probe --method open --window 0
	[ "${#lines[@]}" -eq 2 ]
	assert_line --index 0 "{\"event\":\"gpu_probe_failed\",\"method\":\"open\",\"error\":\"open $DEV/nvidia0 (0000:00:03.0): Is a directory\"}"
	assert_line --index 1 '{"event":"gpu_probe_gave_up","method":"open"}'
	logged "GPU init probe attempt failed" | jq -e 'length == 1 and .[0].level == "warn" and .[0].method == "open"'
}

@test "two GPUs of which one fails: not ok, the error names the failing one" {
	mk_gpu 0000:00:03.0 0
	mk_gpu 0000:00:04.0 1
	: >"$DEV/nvidia0"
	mkdir "$DEV/nvidia1"
	run -0 --separate-stderr probe --method open --window 0
	refute_output --partial gpu_init_ok
	assert_line --index 0 "{\"event\":\"gpu_probe_failed\",\"method\":\"open\",\"error\":\"open $DEV/nvidia1 (0000:00:04.0): Is a directory\"}"
	assert_line --index 1 '{"event":"gpu_probe_gave_up","method":"open"}'
}

@test "a missing node is made as character device 195:N mode 0666 under umask 077; no driver answers (ENXIO)" {
	[ "$(id -u)" -eq 0 ] || skip "mknod needs root"
	if grep -qE '^195 ' /proc/devices; then
		skip "a driver owns major 195 here"
	fi
	if findmnt -n -o OPTIONS -T "$DEV" | grep -qw nodev; then
		skip "$DEV is on a nodev mount"
	fi
	mk_gpu 0000:00:05.0 3
	run -0 --separate-stderr bash -c 'umask 077 && "$@"' - \
	    env PATH="$T/path" "$VFS_BIN/gpu-probe" --method open \
	    --proc-root "$ROOT" --dev-dir "$DEV" --window 0
	assert_line --index 0 "{\"event\":\"gpu_probe_failed\",\"method\":\"open\",\"error\":\"open $DEV/nvidia3 (0000:00:05.0): No such device or address\"}"
	assert_line --index 1 '{"event":"gpu_probe_gave_up","method":"open"}'
	# stat: type, major:minor in hex, mode in octal.
	run -0 stat -c '%F %t:%T %a' "$DEV/nvidia3"
	assert_output 'character special file c3:3 666'
}

@test "a node that cannot be made is a failed attempt naming it" {
	mk_gpu 0000:00:03.0 0
	run -0 --separate-stderr env PATH="$T/path" "$VFS_BIN/gpu-probe" \
	    --method open --proc-root "$ROOT" --dev-dir "$T/nodev" --window 0
	assert_line --index 0 "{\"event\":\"gpu_probe_failed\",\"method\":\"open\",\"error\":\"create $T/nodev/nvidia0 (0000:00:03.0): No such file or directory\"}"
	assert_line --index 1 '{"event":"gpu_probe_gave_up","method":"open"}'
}

@test "no GPU known to the driver: the failure is retried until the window, then gave up" {
	mkdir -p "$GPUS"
	local start=$SECONDS n i
	run -0 --separate-stderr probe --method open --retry-interval 1 --window 2
	[ $((SECONDS - start)) -ge 2 ]
	n=${#lines[@]}
	[ "$n" -ge 3 ]
	for ((i = 0; i < n - 1; i++)); do
		assert_line --index $i '{"event":"gpu_probe_failed","method":"open","error":"no NVIDIA GPU known to the driver"}'
	done
	assert_line --index $((n - 1)) '{"event":"gpu_probe_gave_up","method":"open"}'
}

@test "no gpus directory at all (module not loaded yet) is the same failure with --method open" {
	run -0 --separate-stderr probe --method open --window 0
	assert_line --index 0 '{"event":"gpu_probe_failed","method":"open","error":"no NVIDIA GPU known to the driver"}'
	assert_line --index 1 '{"event":"gpu_probe_gave_up","method":"open"}'
}

@test "an entry without a valid Device Minor line is a failure naming its information file" {
	mkdir -p "$GPUS/0000:00:03.0" "$GPUS/0000:00:04.0"
	printf 'Model: \t\t NVIDIA L40S\n' >"$GPUS/0000:00:03.0/information"
	run -0 --separate-stderr probe --method open --window 0
	assert_line --index 0 "{\"event\":\"gpu_probe_failed\",\"method\":\"open\",\"error\":\"$GPUS/0000:00:03.0/information: no valid Device Minor line; read $GPUS/0000:00:04.0/information: No such file or directory\"}"
}

@test "a node whose open hangs is killed at the attempt timeout, reaped, retried; never two outstanding" {
	mk_gpu 0000:00:03.0 0
	: >"$DEV/nvidia0"
	local start took n p
	start=$(ms_now)
	run -0 --separate-stderr "${DELAYED[@]}" --attempt-timeout 1 --retry-interval 0 --window 3
	took=$(($(ms_now) - start))
	echo "took $took ms"
	[ "$took" -lt 8000 ]
	n=$(delayed_pids | wc -l)
	[ "$n" -ge 3 ]
	[ "${#lines[@]}" -eq $((n + 1)) ]
	[ "$(grep -c '^{"event":"gpu_probe_failed","method":"open","error":"killed after 1s"}$' <<<"$output")" -eq "$n" ]
	assert_line --index "$n" '{"event":"gpu_probe_gave_up","method":"open"}'
	# The shim logs an "overlap" when an earlier delayed process still
	# exists (a zombie too) as a new one starts: never.
	run grep -c overlap "$T/delay.log"
	assert_output 0
	for p in $(delayed_pids); do
		run ! test -e "/proc/$p"
	done
}

@test "the parent reaps each killed child before it forks the next (strace)" {
	need_tool strace
	mk_gpu 0000:00:03.0 0
	: >"$DEV/nvidia0"
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	    run -0 --separate-stderr strace -f -o "$T/trace" \
	    -e trace=execve,clone,clone3,fork,vfork,wait4,kill \
	    "${DELAYED[@]}" --attempt-timeout 1 --retry-interval 0 --window 2
	assert_output --partial '"error":"killed after 1s"'
	local main
	main=$(awk '/execve\(.*gpu-probe/ { print $1; exit }' "$T/trace")
	[ -n "$main" ]
	# In the parent: each child is killed and reaped before the next
	# fork, and the last one before the exit. A call that another
	# process interrupted in the trace ends on a "<... NAME resumed>"
	# line.
	run -0 awk -v main="$main" '
	    $1 != main { next }
	    { name = $2; sub(/\(.*/, "", name); if ($2 == "<...") name = $3 }
	    name ~ /^(clone|clone3|fork|vfork)$/ && / = [0-9]+$/ {
		if (child != "") { print "fork while " child " outstanding"; bad = 1 }
		child = $NF; forks++; next }
	    name == "kill" && /kill\(-[0-9]+, SIGKILL/ { killed[child] = 1 }
	    name == "wait4" && / = [0-9]+$/ && $NF == child {
		if (!killed[child]) { print "reaped " child " unkilled"; bad = 1 }
		child = "" }
	    END { if (child != "") { print child " never reaped"; bad = 1 }
		print forks " forks"; exit bad }' "$T/trace" ||
	    { cat "$T/trace"; false; }
	assert_output --regexp '^[2-9] forks$'
}

@test "SIGTERM during a hung open kills and reaps the child, then exits 0" {
	mk_gpu 0000:00:03.0 0
	: >"$DEV/nvidia0"
	guest_bg pid "${DELAYED[@]}" --attempt-timeout 600 >"$T/out" 2>"$T/err"
	wait_for test -s "$T/delay.log"
	local child
	child=$(delayed_pids | head -n 1)
	kill -TERM "$pid"
	guest_wait "$pid"
	[ "$status" -eq 0 ]
	run ! test -e "/proc/$child"
	[ ! -s "$T/out" ]
}

@test "auto: nvidia-smi when it is on PATH, even with a driver proc tree" {
	mk_gpu 0000:00:03.0 0
	: >"$DEV/nvidia0"
	ln -s "$(fake_smi ok)" "$T/path/nvidia-smi"
	run -0 --separate-stderr env PATH="$T/path:/usr/bin:/bin" \
	    "$VFS_BIN/gpu-probe" --proc-root "$ROOT" --dev-dir "$DEV"
	assert_output --partial '{"event":"gpu_init_ok","method":"nvidia-smi","output":"GPU 0: '
	[ "$(wc -l <"$T/st/attempts")" -eq 1 ]
}

@test "auto: open when there is no nvidia-smi but the driver lists GPUs" {
	mk_gpu 0000:00:03.0 0
	: >"$DEV/nvidia0"
	run -0 --separate-stderr probe
	assert_output "{\"event\":\"gpu_init_ok\",\"method\":\"open\",\"output\":\"opened $DEV/nvidia0 (0000:00:03.0)\"}"
	logged "GPU init probe started" | jq -e 'length == 1 and .[0].method == "open"'
}

@test "auto: open when a named nvidia-smi is not there and the driver lists GPUs" {
	mk_gpu 0000:00:03.0 0
	: >"$DEV/nvidia0"
	run -0 --separate-stderr probe --nvidia-smi "$T/nope/nvidia-smi"
	assert_output --partial '"method":"open"'
}

@test "auto: gpu_probe_disabled when there is neither nvidia-smi nor the gpus directory" {
	run -0 --separate-stderr probe
	assert_output '{"event":"gpu_probe_disabled"}'
	logged "GPU init probe disabled; driver init success cannot be reported" |
	    jq -e 'length == 1 and .[0].level == "warn" and .[0].method == "auto"'
}

@test "--method open never runs nvidia-smi; --method nvidia-smi never falls back to open" {
	mk_gpu 0000:00:03.0 0
	: >"$DEV/nvidia0"
	ln -s "$(fake_smi ok)" "$T/path/nvidia-smi"
	run -0 --separate-stderr probe --method open
	assert_output --partial '"method":"open"'
	[ ! -e "$T/st/attempts" ]
	rm "$T/path/nvidia-smi"
	run -0 --separate-stderr probe --method nvidia-smi
	assert_output '{"event":"gpu_probe_disabled"}'
}

@test "a bad --method is a usage error (64)" {
	run -64 --separate-stderr probe --method smi
	[[ ${stderr_lines[0]} == *"--method"* ]]
	[[ ${stderr_lines[1]} == "usage: gpu-probe"* ]]
	run -64 --separate-stderr probe --method
	[[ ${stderr_lines[0]} == *"--method"* ]]
	[ -z "$output" ]
}

@test "vsock-answer turns the open method's gpu_init_ok into OK" {
	answer_setup
	mkfifo "$T/ev"
	answer_start
	run -0 answer_query
	assert_output '{"state":"UNKNOWN"}'
	mk_gpu 0000:00:03.0 0
	: >"$DEV/nvidia0"
	probe --method open >"$T/ev" 2>"$T/probe.err"
	wait_for answer_state_is OK
	run -0 answer_query
	assert_output '{"state":"OK"}'
	answer_stop
}

@test "the probe service passes --method from its env (shipped: auto); open reaches OK" {
	run -0 cat "$VFS_ROOT/sv/vfsentinel-probe/env/VFSENTINEL_METHOD"
	assert_output auto
	mk_gpu 0000:00:03.0 0
	: >"$DEV/nvidia0"
	# An nvidia-smi that never succeeds: auto would pick it and never
	# reach OK; only the method from env/ makes the probe open the node.
	answer_setup
	runit_setup
	runit_copy vfsentinel-answer vfsentinel-probe
	local s
	for s in vfsentinel-answer vfsentinel-probe; do
		runit_test_path "$s"
		runit_env "$s" VFSENTINEL_CONF "$VFSENTINEL_CONF"
		runit_env "$s" VFSENTINEL_EVENTS "$T/run/events"
	done
	runit_env vfsentinel-answer VFSENTINEL_STATE_FILE "$T/run/gpu-init.json"
	runit_env vfsentinel-answer VFSENTINEL_LISTEN "unix:$SOCK"
	runit_env vfsentinel-answer VFSENTINEL_BOOT_ID_FILE "$T/boot_id"
	runit_env vfsentinel-probe VFSENTINEL_NVIDIA_SMI "$(fake_smi fail)"
	runit_env vfsentinel-probe VFSENTINEL_METHOD open
	runit_env vfsentinel-probe VFSENTINEL_ARGS \
	    "--proc-root $ROOT --dev-dir $DEV --retry-interval 1"
	runit_start
	wait_for answer_state_is OK || wait_for answer_state_is OK
	run -0 answer_query
	assert_output '{"state":"OK"}'
	runit_wait_stat vfsentinel-probe down 50
	run -0 runit_log vfsentinel-probe
	assert_output --partial '"msg":"GPU init probe started","method":"open"'
}
