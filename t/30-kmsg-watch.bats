#!/usr/bin/env bats
# kmsg-watch: kernel log records in, gpu_init_failed events out.

load helpers
load lib/guest

FIX=$BATS_TEST_DIRNAME/fixtures/kmsg

setup() {
	vfs_setup
}

teardown() {
	guest_teardown
}

@test "--help prints the usage on stdout and exits 0" {
	run -0 --separate-stderr kmsg-watch --help
	assert_line --index 0 --partial "usage: kmsg-watch"
	assert_output --partial "--no-pci-check"
	[ -z "$stderr" ]
}

@test "a PCI tree that cannot be scanned exits 74 and names the sysfs root" {
	mkdir -p "$T/bad/sys/bus/pci"
	echo x >"$T/bad/sys/bus/pci/devices"
	run -74 --separate-stderr kmsg-watch --sysfs-root "$T/bad" \
	    --kmsg "$FIX/upstream.kmsg"
	[ -z "$output" ]
	run -0 jq -r 'select(.level == "error") | "\(.msg) \(.sysfs_root)"' \
	    <<<"$stderr"
	assert_output "cannot scan PCI functions $T/bad"
}

@test "--version names the program and the suite" {
	run -0 kmsg-watch --version
	assert_output "kmsg-watch (vfsentinel) 0.1.0"
}

@test "a bad option is a usage error (64) with one line and the usage" {
	run -64 --separate-stderr kmsg-watch --frobnicate
	[ -z "$output" ]
	[[ ${stderr_lines[0]} == *"--frobnicate"* ]]
	[[ ${stderr_lines[1]} == "usage: kmsg-watch"* ]]
	run -64 --separate-stderr kmsg-watch --open-retry 0
	run -64 --separate-stderr kmsg-watch extra-arg
}

@test "a configuration file that is missing is an error (78)" {
	run -78 --separate-stderr kmsg-watch -c "$T/nope.conf" --no-pci-check --kmsg "$FIX/upstream.kmsg"
	[ -z "$output" ]
	[[ $stderr == *nope.conf* ]]
}

@test "the upstream example records: only kernel-facility RmInitAdapter failures come out" {
	run -0 --separate-stderr kmsg-watch --no-pci-check --kmsg "$FIX/upstream.kmsg"
	assert_output "$(cat "$FIX/upstream.expected")"
	# Every log line is JSON with the fixed leading keys.
	echo "$stderr" | jq -e -s 'all(.[]; .ts and .level and .prog == "kmsg-watch" and .msg)'
	echo "$stderr" | jq -e -s 'map(select(.msg == "kmsg watch ended"))[0].matched == 5'
	echo "$stderr" | jq -e -s 'map(select(.msg == "watching kmsg for GPU init failures"))[0].from == "start"'
}

@test "every failure record is reported; there is no dedup" {
	for i in 1 2 3; do
		echo "3,$i,$i,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)"
	done >"$T/in"
	run -0 --separate-stderr kmsg-watch --no-pci-check --kmsg "$T/in"
	[ "${#lines[@]}" -eq 3 ]
	echo "$output" | jq -e -s 'map(.seq) == [1,2,3]'
}

@test "a last record without a newline and CRLF input still match" {
	printf '3,7,70,-;NVRM: RmInitAdapter failed! (a)\r\n3,8,80,-;NVRM: RmInitAdapter failed! (b)' >"$T/in"
	run -0 --separate-stderr kmsg-watch --no-pci-check --kmsg "$T/in"
	assert_line --index 0 '{"event":"gpu_init_failed","seq":7,"ts_usec":70,"message":"NVRM: RmInitAdapter failed! (a)"}'
	assert_line --index 1 '{"event":"gpu_init_failed","seq":8,"ts_usec":80,"message":"NVRM: RmInitAdapter failed! (b)"}'
}

@test "an over-long line is warned about and skipped, and the stream goes on" {
	{
		printf '3,1,1,-;NVRM: RmInitAdapter failed! '
		head -c 20000 /dev/zero | tr '\0' x
		echo
		echo "3,2,2,-;NVRM: RmInitAdapter failed! after"
	} >"$T/in"
	run -0 --separate-stderr kmsg-watch --no-pci-check --kmsg "$T/in"
	assert_output '{"event":"gpu_init_failed","seq":2,"ts_usec":2,"message":"NVRM: RmInitAdapter failed! after"}'
	[[ $stderr == *'"skipped an over-long kmsg line"'* ]]
}

@test "bytes that are not UTF-8 in a recording do not break the output" {
	printf '3,1,1,-;NVRM: RmInitAdapter failed! \377\376\n' >"$T/in"
	run -0 --separate-stderr kmsg-watch --no-pci-check --kmsg "$T/in"
	echo "$output" | jq -e '.message == "NVRM: RmInitAdapter failed! ??"'
}

@test "a FIFO: waits for its writer, reports records as they come, exits 0 at its end" {
	mkfifo "$T/fifo"
	guest_bg pid kmsg-watch --no-pci-check --kmsg "$T/fifo" >"$T/out" 2>"$T/err"
	sleep 0.3
	is_alive "$pid"	# no writer yet is not the end
	exec 5>"$T/fifo"
	echo "3,1,1,-;NVRM: RmInitAdapter failed! one" >&5
	wait_for grep -q '"seq":1' "$T/out"
	echo "6,2,2,-;NVRM: loading" >&5
	echo "4,3,3,-;NVRM: RmInitAdapter failed! two" >&5
	wait_for grep -q '"seq":3' "$T/out"
	exec 5>&-
	wait_for eval '! is_alive $pid'
	guest_wait "$pid"
	[ "$status" -eq 0 ]
	[ "$(wc -l <"$T/out")" -eq 2 ]
}

@test "SIGTERM while idle exits 0 with what was reported flushed" {
	mkfifo "$T/fifo"
	guest_bg pid kmsg-watch --no-pci-check --kmsg "$T/fifo" >"$T/out" 2>"$T/err"
	exec 5>"$T/fifo"
	echo "3,1,1,-;NVRM: RmInitAdapter failed! one" >&5
	wait_for grep -q '"seq":1' "$T/out"
	kill -TERM "$pid"
	guest_wait "$pid"
	exec 5>&-
	[ "$status" -eq 0 ]
	[ "$(wc -l <"$T/out")" -eq 1 ]
}

@test "a write error on stdout exits 74" {
	run -74 --separate-stderr bash -c 'kmsg-watch --no-pci-check --kmsg "$1" >/dev/full' - "$FIX/upstream.kmsg"
	[[ $stderr == *'"write stdout failed"'* ]]
}

@test "the stdout reader going away is noticed within 1 s while idle" {
	mkfifo "$T/fifo" "$T/stdout"
	(
		rc=0
		kmsg-watch --no-pci-check --kmsg "$T/fifo" >"$T/stdout" 2>"$T/err" || rc=$?
		echo $rc >"$T/rc"
	) 3>&- &
	exec 6<"$T/stdout"
	sleep 0.5
	[ ! -e "$T/rc" ]
	local start took
	start=$(ms_now)
	exec 6<&-
	wait_for test -s "$T/rc"
	took=$(($(ms_now) - start))
	echo "took ${took} ms, rc $(cat "$T/rc")"
	[ "$took" -lt 1000 ]
	[ "$(cat "$T/rc")" -eq 74 ]
	grep -q '"stdout reader gone"' "$T/err"
}

@test "a missing input is retried until it appears" {
	guest_bg pid kmsg-watch --no-pci-check --kmsg "$T/later" --open-retry 1 >"$T/out" 2>"$T/err"
	wait_for grep -q 'cannot open kmsg (retrying)' "$T/err"
	echo "3,5,5,-;NVRM: RmInitAdapter failed! late" >"$T/later.tmp"
	mv "$T/later.tmp" "$T/later"
	sleep 1.5
	wait_for eval '! is_alive $pid'
	guest_wait "$pid"
	[ "$status" -eq 0 ]
	grep -q '"seq":5' "$T/out"
}

@test "a read error reopens the input at its end, so nothing is reported twice" {
	need_tool strace
	python3 -c '
for i in range(3000):
    print("6,%d,1,-;filler record %d padding padding padding" % (i, i))
    if i % 100 == 0:
        print("3,%d,2,-;NVRM: RmInitAdapter failed! (0x22:0x65:%d)" % (i, i))
' >"$T/in"
	# LeakSanitizer cannot run under ptrace; the other tests cover leaks.
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	    run -0 --separate-stderr strace -o /dev/null -P "$T/in" -e trace=read \
	    -e inject=read:error=EIO:when=2 \
	    kmsg-watch --no-pci-check --kmsg "$T/in" --reopen-delay 0
	local err=$stderr
	# What was read before the error is reported once; what followed it
	# is skipped (the reopen seeks to the end): a strict, non-empty
	# prefix of the full run.
	local n=${#lines[@]} part=$output
	[ "$n" -gt 0 ]
	[ "$n" -lt 30 ]
	run --separate-stderr kmsg-watch --no-pci-check --kmsg "$T/in"
	echo "status $status: $stderr"
	assert_success
	[ "${#lines[@]}" -eq 30 ]
	[ "$(printf '%s\n' "${lines[@]:0:n}")" = "$part" ]
	[[ $err == *'"read kmsg failed (reopening)"'*'"Input/output error"'* ]]
	[[ $err == *'"from":"start"'*'"from":"end"'* ]]
}

@test "the real /dev/kmsg: a userspace <3> record never comes out, kernel records do" {
	[ -r /dev/kmsg ] && [ -w /dev/kmsg ] || skip "/dev/kmsg not readable and writable here"
	timeout 1 dd if=/dev/kmsg iflag=nonblock bs=8192 count=1 status=none >/dev/null 2>&1 ||
		skip "/dev/kmsg cannot be read here"
	local tag="vfs-forged-$$-$RANDOM"
	echo "<3>NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884) $tag" >/dev/kmsg
	guest_bg pid kmsg-watch --no-pci-check >"$T/out" 2>"$T/err"
	sleep 1
	kill -TERM "$pid"
	guest_wait "$pid"
	[ "$status" -eq 0 ]
	run ! grep -q "$tag" "$T/out"
	# The same ring, read independently: the kernel stored the forgery
	# with facility 1 (priority 11), and the watcher reported exactly
	# the kernel-facility failures, replayed from the start of the ring.
	python3 - "$tag" "$T/expected" <<-'EOF'
	import json, os, sys
	fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
	seen, out = False, []
	while True:
	    try:
	        r = os.read(fd, 8192).decode("utf-8", "replace")
	    except BrokenPipeError:
	        continue
	    except BlockingIOError:
	        break
	    head, _, msg = r.partition("\n")[0].partition(";")
	    f = head.split(",")
	    if sys.argv[1] in msg:
	        seen = f[0] == "11"
	    msg = msg.strip()
	    if f[0].isdigit() and int(f[0]) >> 3 == 0 and msg.startswith("NVRM:") and "RmInitAdapter failed!" in msg:
	        out.append(json.dumps({"event": "gpu_init_failed", "seq": int(f[1]), "ts_usec": int(f[2]), "message": msg}, separators=(",", ":")))
	open(sys.argv[2], "w").write("".join(l + "\n" for l in out))
	sys.exit(0 if seen else 1)
	EOF
	diff "$T/expected" "$T/out"
	run ! grep -q '"cannot open kmsg' "$T/err"
}

@test "settles (info, exit 0, no output) without an NVIDIA PCI function" {
	mk_pcifn "$SYSFS" 0000:00:00.0 8086 1237 060000
	mk_pcifn "$SYSFS" 0000:00:02.0 1af4 1000 020000
	run -0 --separate-stderr kmsg-watch --sysfs-root "$SYSFS" --kmsg "$FIX/upstream.kmsg"
	[ -z "$output" ]
	echo "$stderr" | jq -e 'select(.msg | test("no NVIDIA PCI function")) | .level == "info"'
	[ "$(echo "$stderr" | wc -l)" -eq 1 ]
}

@test "settles on a guest without a PCI bus at all" {
	rm -rf "$SYSFS/sys/bus/pci"
	run -0 --separate-stderr kmsg-watch --sysfs-root "$SYSFS" --kmsg "$FIX/upstream.kmsg"
	[ -z "$output" ]
	[[ $stderr == *"no NVIDIA PCI function"* ]]
}

@test "runs where an NVIDIA function (vendor 0x10de) is present" {
	nvidia_fixture
	run -0 --separate-stderr kmsg-watch --sysfs-root "$SYSFS" --kmsg "$FIX/upstream.kmsg"
	assert_output "$(cat "$FIX/upstream.expected")"
}

@test "the sysfs root comes from the configuration file too" {
	nvidia_fixture
	echo "sysfs_root = $SYSFS" >"$VFSENTINEL_CONF"
	run -0 --separate-stderr kmsg-watch --kmsg "$FIX/upstream.kmsg"
	[ "${#lines[@]}" -eq 5 ]
}

@test "a malformed PCI tree is a clear error (74), never a libpci exit or crash" {
	nvidia_fixture
	mkdir "$SYSFS/sys/bus/pci/devices/notabdf"
	run -74 --separate-stderr kmsg-watch --sysfs-root "$SYSFS" --kmsg "$FIX/upstream.kmsg"
	[ -z "$output" ]
	echo "$stderr" | jq -e 'select(.level == "error") | .error | test("notabdf")'
	[[ $stderr != *pcilib* ]]
	rmdir "$SYSFS/sys/bus/pci/devices/notabdf"
	rm "$SYSFS/sys/bus/pci/devices/0000:00:03.0/vendor"
	run -74 --separate-stderr kmsg-watch --sysfs-root "$SYSFS" --kmsg "$FIX/upstream.kmsg"
	echo "$stderr" | jq -e 'select(.level == "error") | .error | test("0000:00:03.0/vendor")'
}
