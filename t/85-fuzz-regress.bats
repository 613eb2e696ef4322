#!/usr/bin/env bats
# 85-fuzz-regress: every committed fuzz input (seed corpora in
# t/fuzz/corpus/NAME, past findings in t/fuzz/regress/NAME) replayed
# through the fuzz targets built with the project's compiler and
# t/fuzz/replay.c: under ASan+UBSan in `make check-asan`, under valgrind
# in `make check-valgrind` (VFS_VALGRIND=1). A replay aborts when a
# parser property fails, so each input is a regression test.

load helpers

setup() {
	vfs_setup
}

# replay NAME: runs BUILD/fuzz/fuzz-NAME over its corpus and regressions
# and checks every file was replayed.
replay() {
	local name=$1 bin=$VFS_BUILD/fuzz/fuzz-$1 dirs=() n=0 d
	for d in "$VFS_ROOT/t/fuzz/corpus/$name" "$VFS_ROOT/t/fuzz/regress/$name"; do
		if [ -d "$d" ]; then
			dirs+=("$d")
			n=$((n + $(find "$d" -maxdepth 1 -type f ! -name '.*' | wc -l)))
		fi
	done
	[ -x "$bin" ] || fail "no replay binary $bin (make test-aids)"
	[ "$n" -gt 0 ] || fail "no committed inputs for $name"
	if [ -n "${VFS_VALGRIND:-}" ]; then
		need_tool valgrind
		run -0 valgrind -q --error-exitcode=99 --leak-check=full \
			--errors-for-leak-kinds=definite,indirect "$bin" "${dirs[@]}"
	else
		run -0 "$bin" "${dirs[@]}"
	fi
	assert_output --partial "replayed $n inputs"
}

@test "every fuzz target has a replay binary and committed inputs" {
	local src name
	for src in "$VFS_ROOT"/t/fuzz/fuzz-*.c; do
		name=${src##*/fuzz-}
		name=${name%.c}
		[ -x "$VFS_BUILD/fuzz/fuzz-$name" ] || fail "missing fuzz-$name"
		[ -d "$VFS_ROOT/t/fuzz/corpus/$name" ] || fail "no corpus for $name"
	done
}

@test "replay refuses a missing input with 66 and usage with 64" {
	run -66 "$VFS_BUILD/fuzz/fuzz-hvsock" "$T/nothing-here"
	run -64 "$VFS_BUILD/fuzz/fuzz-hvsock"
}

@test "fuzz corpus replays: kmsg record parser, matcher and reader" { replay kmsg; }
@test "fuzz corpus replays: JSON-lines reader" { replay jsonl; }
@test "fuzz corpus replays: vf-health.json loader and writer" { replay health; }
@test "fuzz corpus replays: vf-claims.json loader and writer" { replay claims; }
@test "fuzz corpus replays: both writers never write what the loaders refuse" { replay dump; }
@test "fuzz corpus replays: creatable_vgpu_types" { replay vgpu-types; }
@test "fuzz corpus replays: configuration file" { replay conf; }
@test "fuzz corpus replays: vsock request parser" { replay guest-request; }
@test "fuzz corpus replays: vsock reply parser" { replay guest-reply; }
@test "fuzz corpus replays: hybrid-vsock OK line" { replay hvsock; }
@test "fuzz corpus replays: sentinel-poll's opener request protocol" { replay opener; }
@test "fuzz corpus replays: console-marker matcher" { replay marker; }
@test "fuzz corpus replays: console-log tail" { replay logtail; }
@test "fuzz corpus replays: endpoints" { replay endpoint; }
@test "fuzz corpus replays: sentinel-poll --targets lines" { replay targets; }
@test "fuzz corpus replays: guest check connection (hybrid vsock OK, reply line)" { replay guestcheck; }
@test "fuzz corpus replays: RFC 3339 timestamps" { replay timefmt; }
@test "fuzz corpus replays: vf-drain.json loader and writer" { replay drain; }
@test "fuzz corpus replays: vf-suspect.json loader and writer" { replay suspect; }
@test "fuzz corpus replays: libvirt-hook's domain XML (real libvirt dumpxml and hook stdin)" { replay domain; }

@test "finding timefmt/year-10000: a store with an unwritable timestamp is unavailable, not unsaveable" {
	mkdir -p "$DATA/gpu"
	cp "$VFS_ROOT/t/fuzz/regress/health/reported-at-year-10000" \
		"$DATA/gpu/vf-health.json"
	before=$(sha "$DATA/gpu/vf-health.json")
	run -69 --separate-stderr vfstore --data-dir "$DATA" check
	assert_output --partial '"status":"unavailable"'
	run -69 --separate-stderr vfstore --data-dir "$DATA" report-failure \
		--vf 0000:e3:00.4 --instance i-2 --assigned-at t2
	[ "$(sha "$DATA/gpu/vf-health.json")" = "$before" ]
}

@test "finding guestcheck/early-reply: a guest that answers with the VMM's OK line is heard at once" {
	need_tool socat
	mk_card "$SYSFS" 0000:e3:00.0
	mk_vf "$SYSFS" 0000:e3:00.0 0000:e3:00.4
	# A hybrid-vsock VMM whose guest speaks first: OK and the reply leave
	# in one write, and the connection then stays open.
	cat >"$T/vmm.sh" <<-'EOF2'
	#!/bin/sh
	read -r connect
	printf 'OK 1073741824\n{"state":"FAILED","failure_message":"NVRM: RmInitAdapter failed!"}\n'
	sleep 10
	EOF2
	chmod +x "$T/vmm.sh"
	socat UNIX-LISTEN:"$T/v.sock",fork EXEC:"$T/vmm.sh" 3>&- &
	local socat=$! start
	wait_for test -S "$T/v.sock"
	# The VMM's control socket: a real listener (SPEC 4.4 VMM liveness).
	socat UNIX-LISTEN:"$T/ctl",fork EXEC:true 3>&- &
	local ctl=$!
	wait_for test -S "$T/ctl"
	printf '{"vf_address":"0000:e3:00.4","instance_id":"i-1","claimed_at":"t1","vsock":"hvsock:%s:2222","control_socket":"%s"}\n' \
		"$T/v.sock" "$T/ctl" >"$T/targets"
	start=$SECONDS
	run -0 --separate-stderr sentinel-poll --sysfs-root "$SYSFS" --once \
		--timeout 4 --targets "$T/targets"
	kill "$socat" "$ctl"
	assert_output --partial '"check":"failed"'
	[ $((SECONDS - start)) -lt 4 ]
}
