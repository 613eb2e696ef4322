#!/usr/bin/env bats
# gpu-probe: runs `nvidia-smi -L` until it succeeds, bounded per attempt
# and overall; fake nvidia-smi scripts stand in for the driver.

load helpers
load lib/guest

setup() {
	vfs_setup
	ST=$T/st
	mkdir -p "$ST" "$T/path"
	export SMI_STATE=$ST
}

teardown() {
	local f
	# Whatever a failed test left behind: fake nvidia-smi and children.
	for f in "$ST"/*.pid; do
		[ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
	done
	guest_teardown
}

# on_path NAME: a PATH whose only nvidia-smi is fixture NAME (plus the
# programs under test and the basic tools).
on_path() {
	ln -sf "$(fake_smi "$1")" "$T/path/nvidia-smi"
	echo "$T/path:$VFS_BIN:/usr/bin:/bin"
}

@test "--help prints the usage on stdout and exits 0" {
	run -0 --separate-stderr gpu-probe --help
	assert_line --index 0 --partial "usage: gpu-probe"
	assert_output --partial "--attempt-timeout S"
	assert_output --partial "[--method auto|nvidia-smi|open]"
	assert_output --partial "[--proc-root DIR] [--dev-dir DIR]"
	[ -z "$stderr" ]
}

@test "--version names the program and the suite" {
	run -0 gpu-probe --version
	assert_output "gpu-probe (vfsentinel) 0.1.0"
}

@test "bad options and values are usage errors (64)" {
	run -64 --separate-stderr gpu-probe --bogus
	[[ ${stderr_lines[0]} == *"--bogus"* ]]
	[[ ${stderr_lines[1]} == "usage: gpu-probe"* ]]
	run -64 --separate-stderr gpu-probe --attempt-timeout 0
	run -64 --separate-stderr gpu-probe --window 1.5
	run -64 --separate-stderr gpu-probe --retry-interval -1
}

@test "a configuration file that is missing is an error (78)" {
	PATH=$(on_path ok) run -78 --separate-stderr gpu-probe -c "$T/nope.conf"
	[ -z "$output" ]
	[ ! -e "$ST/attempts" ]
}

@test "a driver that answers: gpu_init_ok with the output, one attempt, stdin /dev/null" {
	PATH=$(on_path ok) run -0 --separate-stderr gpu-probe
	assert_output '{"event":"gpu_init_ok","method":"nvidia-smi","output":"GPU 0: NVIDIA L40S-12Q (UUID: GPU-6b2a0c1e-8a5f-4d5e-9c1a-000000000001)"}'
	[ "$(cat "$ST/args")" = "-L" ]
	[ "$(cat "$ST/stdin")" = /dev/null ]
	[ "$(wc -l <"$ST/attempts")" -eq 1 ]
	echo "$stderr" | jq -e 'select(.msg == "GPU driver initialized") | .level == "info"'
}

@test "--nvidia-smi names the program instead of PATH" {
	run -0 --separate-stderr env PATH="$T/path" "$VFS_BIN/gpu-probe" --nvidia-smi "$(fake_smi ok)"
	[[ $output == '{"event":"gpu_init_ok","method":"nvidia-smi",'* ]]
}

@test "no nvidia-smi: warns that the probe is disabled, emits gpu_probe_disabled, exits 0" {
	# --proc-root: no driver GPU list either, whatever this machine has
	# (auto would then open the device nodes: t/32-gpu-probe-open.bats).
	run -0 --separate-stderr env PATH="$T/path" "$VFS_BIN/gpu-probe" \
	    --proc-root "$T"
	assert_output '{"event":"gpu_probe_disabled"}'
	echo "$stderr" | jq -e 'select(.level == "warn") | .msg == "GPU init probe disabled; driver init success cannot be reported"'
	run -0 --separate-stderr gpu-probe --nvidia-smi "$T/nope/nvidia-smi" \
	    --proc-root "$T"
	assert_output '{"event":"gpu_probe_disabled"}'
	run -0 --separate-stderr gpu-probe --method nvidia-smi \
	    --nvidia-smi "$T/nope/nvidia-smi"
	assert_output '{"event":"gpu_probe_disabled"}'
}

@test "a failing driver: every attempt reported with status and output, then gave up after the window" {
	local start=$SECONDS
	PATH=$(on_path fail) run -0 --separate-stderr gpu-probe --retry-interval 1 --window 2
	[ $((SECONDS - start)) -ge 2 ]
	local n=${#lines[@]}
	[ "$n" -ge 3 ]
	assert_line --index $((n - 1)) '{"event":"gpu_probe_gave_up","method":"nvidia-smi"}'
	local i
	for ((i = 0; i < n - 1; i++)); do
		assert_line --index $i '{"event":"gpu_probe_failed","method":"nvidia-smi","error":"exit status 9: NVIDIA-SMI has failed because it couldn'"'"'t communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."}'
	done
	[ "$(wc -l <"$ST/attempts")" -eq $((n - 1)) ]
	[ "$(echo "$stderr" | grep -c '"GPU init probe attempt failed"')" -eq $((n - 1)) ]
}

@test "an attempt killed by a signal, or that cannot be executed, is a failed attempt" {
	PATH=$(on_path crash) run -0 --separate-stderr gpu-probe --window 0
	assert_line --index 0 '{"event":"gpu_probe_failed","method":"nvidia-smi","error":"killed by signal 11: partial output"}'
	PATH=$(on_path badinterp) run -0 --separate-stderr gpu-probe --window 0
	[[ ${lines[0]} == '{"event":"gpu_probe_failed","method":"nvidia-smi","error":"exit status 127: exec '*'No such file or directory"}' ]]
	assert_line --index 1 '{"event":"gpu_probe_gave_up","method":"nvidia-smi"}'
}

@test "the window is checked after an attempt: --window 0 makes exactly one" {
	PATH=$(on_path fail) run -0 --separate-stderr gpu-probe --window 0
	[ "${#lines[@]}" -eq 2 ]
	[[ ${lines[0]} == '{"event":"gpu_probe_failed","method":"nvidia-smi","error":"exit status 9: '* ]]
	assert_line --index 1 '{"event":"gpu_probe_gave_up","method":"nvidia-smi"}'
}

@test "a hung attempt is killed with its whole process group, reaped, and retried" {
	local start=$(ms_now)
	SMI_OK_FROM=2 PATH=$(on_path hang) run -0 --separate-stderr \
	    gpu-probe --attempt-timeout 1 --retry-interval 0
	local took=$(($(ms_now) - start))
	assert_line --index 0 '{"event":"gpu_probe_failed","method":"nvidia-smi","error":"killed after 1s"}'
	assert_line --index 1 --partial '{"event":"gpu_init_ok","method":"nvidia-smi","output":"GPU 0: '
	[ "${#lines[@]}" -eq 2 ]
	[ "$(cat "$ST/count")" -eq 2 ]
	# Killed after 1 s, not after the 1000 s the fake would sleep.
	[ "$took" -lt 5000 ]
	# The hung nvidia-smi and the child it spawned are both gone.
	run ! is_alive "$(cat "$ST/smi.1.pid")"
	run ! is_alive "$(cat "$ST/child.1.pid")"
	[ ! -e "$ST/overlap" ]
}

@test "never two nvidia-smi alive at once, over several timed-out attempts" {
	PATH=$(on_path hang) run -0 --separate-stderr \
	    gpu-probe --attempt-timeout 1 --retry-interval 0 --window 3
	[ "$(cat "$ST/count")" -ge 3 ]
	[ ! -e "$ST/overlap" ]
	[ "$(echo "$output" | grep -c '"killed after 1s"')" -eq "$(cat "$ST/count")" ]
	assert_line --index $(($(cat "$ST/count"))) '{"event":"gpu_probe_gave_up","method":"nvidia-smi"}'
	local f
	for f in "$ST"/*.pid; do
		run ! is_alive "$(cat "$f")"
	done
}

@test "output far over 64 KiB is drained without blocking; 64 KiB is kept" {
	SMI_STATUS=0 PATH=$(on_path flood) run -0 --separate-stderr timeout 20 gpu-probe --attempt-timeout 15
	echo "$output" | jq -e '.event == "gpu_init_ok" and (.output | length) == 65536'
	echo "$output" | jq -e '.output | test("^a+$")'
	PATH=$(on_path flood) run -0 --separate-stderr timeout 20 gpu-probe --attempt-timeout 15 --window 0
	echo "${lines[0]}" | jq -e '.event == "gpu_probe_failed" and (.error | startswith("exit status 3: aaa")) and (.error | length) == 65536 + 15'
}

@test "SIGTERM during a hung attempt kills and reaps it, then exits 0" {
	guest_bg pid env PATH="$(on_path hang)" gpu-probe --attempt-timeout 600 >"$T/out" 2>"$T/err"
	wait_for test -s "$ST/child.1.pid"
	kill -TERM "$pid"
	guest_wait "$pid"
	[ "$status" -eq 0 ]
	run ! is_alive "$(cat "$ST/smi.1.pid")"
	run ! is_alive "$(cat "$ST/child.1.pid")"
	[ ! -s "$T/out" ]
}

@test "a write error on stdout exits 74" {
	run -74 --separate-stderr bash -c 'PATH=$1 gpu-probe >/dev/full' - "$(on_path ok)"
	[[ $stderr == *'"write stdout failed"'* ]]
}

@test "the stdout reader going away during the retry wait is noticed within 1 s" {
	mkfifo "$T/stdout"
	(
		rc=0
		PATH=$(on_path fail) gpu-probe --retry-interval 600 >"$T/stdout" 2>"$T/err" || rc=$?
		echo $rc >"$T/rc"
	) 3>&- &
	exec 6<"$T/stdout"
	read -r line <&6
	[[ $line == '{"event":"gpu_probe_failed","method":"nvidia-smi",'* ]]
	sleep 0.3
	local start took
	start=$(ms_now)
	exec 6<&-
	wait_for test -s "$T/rc"
	took=$(($(ms_now) - start))
	echo "took $took ms"
	[ "$took" -lt 1000 ]
	[ "$(cat "$T/rc")" -eq 74 ]
}
