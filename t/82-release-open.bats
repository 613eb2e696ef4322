#!/usr/bin/env bats
# 82-release-open: root's opens of a claim's paths (SPEC 8.3). The
# service user writes vf-claims.json, a domain's author its console path:
# vfstore release, vfstore reconcile and libvirt-hook's release end open
# none of them but as a regular file (no link followed, O_NONBLOCK, fstat
# before any open: a FIFO, a device or a link is refused with a warn
# naming it), and read at most the last sentinel.console_read_max bytes
# of a console or domain log, so the store lock is held for milliseconds.

load helpers
load lib/store
load lib/placement
load lib/libvirt

setup() {
	vfs_setup
	store_setup
	hook_host
	PIDS=""
	vs init >/dev/null
}

teardown() {
	[ -z "${WATCH_PID:-}" ] || kill "$WATCH_PID" 2>/dev/null || true
	[ -z "${SWAP_PID:-}" ] || kill "$SWAP_PID" 2>/dev/null || true
	kill_pids
}

# claim_with LOG: the ledger holds one claim of VF4, made now (within
# suspect.window), with a vsock endpoint (it could prove itself) and LOG
# as its console log.
claim_with() {
	put_claims "$(jq -nc --arg vf $VF4 --arg log "$1" \
	    --arg at "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
	    '{version:1, claims:[{vf_address:$vf, instance_id:"i-1",
	      claimed_at:$at, vsock:"vsock:42", app_log:$log}]}')"
}

# watch PATH...: open-watch over PATH... into $T/opens.
watch() {
	open-watch "$T/opens" "$@" &
	WATCH_PID=$!
	wait_for test -e "$T/opens.ready"
}

# fifo_swapping: $T/log is now a FIFO ($T/fifo, watched), now a regular
# file, as fast as the kernel swaps names (swap_names; SWAP_PID).
fifo_swapping() {
	mkfifo "$T/fifo"
	: >"$T/reg"
	ln "$T/fifo" "$T/log"
	ln "$T/reg" "$T/alt"
	watch "$T/fifo"
	swap_names "$T"
}

# refused_paths: the paths of the warn lines of refused logs in $stderr.
refused_paths() {
	jq -r 'select(.level == "warn" and (.msg | test("log refused"))) |
	    .path' <<<"$stderr"
}

@test "vfstore release: a FIFO, a device node or a link as the console log is refused with a warn naming it, never opened" {
	mkfifo "$T/fifo"
	mknod "$T/dev" c 1 3
	{ echo 'HYPEMAN-GPU-INIT-OK'; } >"$T/reg"
	ln -s "$T/reg" "$T/link"
	watch "$T/fifo" "$T/dev" "$T/reg"
	for log in "$T/fifo" "$T/dev" "$T/link"; do
		claim_with "$log"
		run -0 --separate-stderr vs release --instance i-1 --ended unclean
		assert_equal "$(refused_paths)" "$log"
		rm -f "$DATA/gpu/vf-suspect.json"
	done
	run -0 cat "$T/opens"
	assert_output ''
}

@test "vfstore reconcile: a FIFO as a gone claim's console log is refused with a warn, never opened" {
	mkfifo "$T/fifo"
	watch "$T/fifo"
	claim_with "$T/fifo"
	# A VMM killed with SIGKILL: its socket file stays, nobody listens.
	python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$T/ctl"
	jq --arg c "$T/ctl" '.claims[0].control_socket = $c' "$CLAIMS" >"$T/c"
	mv "$T/c" "$CLAIMS"
	run -0 --separate-stderr vs reconcile --once --grace 0
	assert_equal "$(claim_field i-1 vf_address)" ""
	assert_equal "$(refused_paths)" "$T/fifo"
	run -0 cat "$T/opens"
	assert_output ''
}

@test "libvirt-hook release end: a FIFO as the console log or a device as libvirt's log is refused with a warn naming it, never opened" {
	echo "libvirt.log_dir = $T/qlog" >>"$VFSENTINEL_CONF"
	mkdir -p "$T/qlog" "$QEMU_DIR/domain-7-vm-a"
	mkfifo "$T/fifo"
	watch "$T/fifo"
	domain_xml hostdev=$VF4 profile="$P12" >"$T/dom.xml"
	run -0 hook prepare begin
	domain_xml id=7 hostdev=$VF4 profile="$P12" cid=42 \
	    console="$T/fifo" >"$T/dom.xml"
	run -0 hook started begin
	printf '2026-12-07 10:00:09.000+0000: shutting down, reason=destroyed\n' \
	    >"$T/qlog/vm-a.log"
	run -0 --separate-stderr hook release end
	assert_equal "$(refused_paths)" "$T/fifo"
	# libvirt's own log a device: refused, the end unknown.
	rm -f "$T/qlog/vm-a.log" "$DATA/gpu/vf-suspect.json"
	mknod "$T/qlog/vm-a.log" c 1 3
	open-watch "$T/opens2" "$T/qlog/vm-a.log" &
	PIDS="$PIDS $!"
	wait_for test -e "$T/opens2.ready"
	domain_xml hostdev=$VF4 profile="$P12" >"$T/dom.xml"
	run -0 hook prepare begin
	domain_xml id=7 hostdev=$VF4 profile="$P12" cid=42 >"$T/dom.xml"
	run -0 hook started begin
	run -0 --separate-stderr hook release end
	assert_equal "$(refused_paths)" "$T/qlog/vm-a.log"
	run -0 cat "$T/opens" "$T/opens2"
	assert_output ''
}

@test "vfstore release: a console log swapped between a regular file and a FIFO is never opened as the FIFO" {
	local i
	fifo_swapping
	for i in $(seq 30); do
		claim_with "$T/log"
		vs release --instance i-1 --ended unclean >/dev/null 2>&1
		rm -f "$DATA/gpu/vf-suspect.json"
	done
	kill "$SWAP_PID"
	run -0 cat "$T/opens"
	assert_output ''
}

@test "libvirt-hook release end: a console log swapped between a regular file and a FIFO is never opened as the FIFO" {
	local i
	echo "libvirt.log_dir = $T/qlog" >>"$VFSENTINEL_CONF"
	mkdir -p "$T/qlog" "$QEMU_DIR/domain-7-vm-a"
	fifo_swapping
	printf '2026-12-07 10:00:09.000+0000: shutting down, reason=destroyed\n' \
	    >"$T/qlog/vm-a.log"
	for i in $(seq 15); do
		domain_xml hostdev=$VF4 profile="$P12" >"$T/dom.xml"
		hook prepare begin 2>/dev/null
		domain_xml id=7 hostdev=$VF4 profile="$P12" cid=42 \
		    console="$T/log" >"$T/dom.xml"
		hook started begin 2>/dev/null
		hook release end 2>/dev/null
		rm -f "$DATA/gpu/vf-suspect.json"
	done
	kill "$SWAP_PID"
	run -0 cat "$T/opens"
	assert_output ''
}

@test "vfstore release: a 200 MB one-line console log costs milliseconds and little memory; a command waiting for the lock gets it" {
	head -c 200000000 /dev/zero | tr '\0' x >"$T/big"
	claim_with "$T/big"
	/usr/bin/time -f '%e %M' -o "$T/time" vfstore --data-dir "$DATA" \
	    release --instance i-1 --ended unclean >/dev/null 2>"$T/rel.err" &
	local rel=$!
	# Another command needs the store lock meanwhile, and waits at most
	# a second for it.
	run -0 vfstore --data-dir "$DATA" --lock-timeout 1 quarantine --vf $VF5
	wait "$rel"
	read -r secs kib <"$T/time"
	echo "release: $secs s, $kib KiB" >&3
	# The last 4 MiB (sentinel.console_read_max) at most.
	[ "$kib" -lt 32768 ]
	awk -v s="$secs" 'BEGIN { exit !(s < 0.5) }'
	run -0 jq -r '.suspects[0].vf_address' "$DATA/gpu/vf-suspect.json"
	assert_output $VF4
}
