#!/usr/bin/env bats
# 57-hook-noharm.bats - libvirt-hook's first rule (SPEC.md 8.1) on a fake
# host: vfsentinel's own trouble (its configuration, store, lock, a crash)
# may refuse the start of a domain with one of its VFs, and nothing else.
# Every phase but prepare begin exits 0 whatever happens. The same faults
# under a real libvirtd: t/89-libvirt-noharm.bats.

load helpers
load lib/placement
load lib/libvirt

PHASES=("prepare begin" "started begin" "release end" "reconnect begin")
NIC=0000:00:1f.6

setup() {
	vfs_setup
	hook_host
	PIDS=""
}

teardown() {
	kill_pids
}

# nic_xml: a domain with a PCI hostdev that is no VF of vfsentinel's.
nic_xml() {
	domain_xml uuid=$UUID2 name=vm-nic hostdev=$NIC
}

@test "a domain with neither vfsentinel metadata nor a PCI hostdev: 0 in every phase, nothing else read" {
	echo "libvirt.lock_timeout = soon" >>"$VFSENTINEL_CONF"
	mkdir -p "$DATA/gpu"
	echo '{broken' >"$DATA/gpu/vf-health.json"
	domain_xml >"$T/dom.xml"
	for op in "${PHASES[@]}"; do
		# shellcheck disable=SC2086 # two words
		ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0 run -0 \
			--separate-stderr strace -f -e trace=%file -o "$T/trace" \
			libvirt-hook vm-a $op - <"$T/dom.xml"
		assert_equal "$stderr" ""
		run -1 grep -E "$VFSENTINEL_CONF|$DATA|$SYSFS|/sys/" "$T/trace"
	done
}

@test "a typo in a key the hook does not read is a warn line: every domain starts; vfstore config names what it stops" {
	echo "sentinel.intreval = 5" >>"$VFSENTINEL_CONF"
	domain_xml hostdev=$VF4 profile="$P12" >"$T/dom.xml"
	run -0 --separate-stderr hook prepare begin
	assert_equal "$(claim_field $UUID1 vf_address)" $VF4
	assert_equal "$(jq -r 'select(.level == "warn") | .error' <<<"$stderr" | head -1)" \
		"$VFSENTINEL_CONF:$(wc -l <"$VFSENTINEL_CONF"): unknown key: sentinel.intreval"
	run -0 --separate-stderr hook release end
	# The programs that load the file refuse it, and say which stop.
	run -78 --separate-stderr vfstore config
	assert_equal "$(jq -r .stops <<<"${stderr_lines[-1]}")" \
		"sentinel-poll, vfstore, vfpick, resources-report, vfrecover"
}

@test "a bad value of a key the hook reads: prepare of a VF domain is refused with the sentence of 8.1, every other domain and phase is 0" {
	echo "libvirt.lock_timeout = soon" >>"$VFSENTINEL_CONF"
	line=$(wc -l <"$VFSENTINEL_CONF")
	want="vfsentinel: cannot load $VFSENTINEL_CONF:$line: invalid value (expected a whole number from 0 to 3600): libvirt.lock_timeout; starts of domains with vGPU VFs are refused until it is fixed (check it with vfstore config)"
	# A metadata domain: refused.
	domain_xml meta_vf=$VF4 profile="$P12" >"$T/dom.xml"
	run -1 --separate-stderr hook prepare begin
	assert_equal "${stderr_lines[-1]}" "$want"
	# A <hostdev> domain: its VF is found under SYSFS_ROOT / (the file
	# cannot say another); here the test's tree, by --sysfs-root.
	domain_xml hostdev=$VF4 >"$T/hd.xml"
	run -1 --separate-stderr libvirt-hook --sysfs-root "$SYSFS" -- vm-a prepare begin - <"$T/hd.xml"
	assert_equal "${stderr_lines[-1]}" "$want"
	# A PCI hostdev that is no VF of this host: it starts.
	nic_xml >"$T/nic.xml"
	run -0 --separate-stderr libvirt-hook --sysfs-root "$SYSFS" -- vm-nic prepare begin - <"$T/nic.xml"
	refute_output --partial "vfsentinel:"
	for op in "${PHASES[@]:1}"; do
		# shellcheck disable=SC2086 # two words
		run -0 --separate-stderr hook $op
		assert_equal "$(jq -r .level <<<"${stderr_lines[-1]}")" error
		assert_equal "$(jq -r .msg <<<"${stderr_lines[-1]}")" "cannot load the configuration; left to vfstore reconcile"
	done
	assert_file_not_exists "$DATA/gpu/vf-claims.json"
	run -78 --separate-stderr vfstore config
	assert_equal "$(jq -r .stops <<<"${stderr_lines[-1]}")" \
		"sentinel-poll, vfstore, vfpick, resources-report, vfrecover, libvirt-hook (the start of domains with vGPU VFs)"
}

@test "a crash in the phase's work: prepare is refused as an internal error, every other phase exits 0" {
	domain_xml hostdev=$VF4 profile="$P12" >"$T/dom.xml"
	run -0 hook prepare begin
	sum=$(sha "$DATA/gpu/vf-claims.json")
	for op in "${PHASES[@]}"; do
		# shellcheck disable=SC2086 # two words
		# (ASan's own SEGV handler off: the child dies of the signal.)
		run --separate-stderr env LD_PRELOAD="$(fault_env)" \
			CRASH_MATCH=vf-claims.json \
			ASAN_OPTIONS="${ASAN_OPTIONS:-}:handle_segv=0" \
			libvirt-hook vm-b $op - <"$T/dom.xml"
		if [ "$op" = "prepare begin" ]; then
			assert_equal "$status" 1
			assert_equal "${stderr_lines[-1]}" "vfsentinel: internal error in libvirt-hook; see journalctl -t libvirt-hook"
		else
			assert_equal "$status" 0
			assert_equal "$(jq -r .msg <<<"${stderr_lines[-1]}")" "the phase's work died; left to vfstore reconcile"
			assert_equal "$(jq -r .signal <<<"${stderr_lines[-1]}")" 11
		fi
	done
	assert_equal "$(sha "$DATA/gpu/vf-claims.json")" "$sum"
}

@test "an unavailable store or a held lock: only prepare refuses" {
	domain_xml hostdev=$VF4 profile="$P12" >"$T/dom.xml"
	run -0 hook prepare begin
	lock_hold "$DATA/gpu/lock" -x
	for op in "${PHASES[@]:1}"; do
		# shellcheck disable=SC2086 # two words
		run -0 --separate-stderr hook $op
		assert_equal "$(jq -r .level <<<"${stderr_lines[-1]}")" error
	done
	lock_release
	echo '{broken' >"$DATA/gpu/vf-claims.json"
	for op in "${PHASES[@]}"; do
		# shellcheck disable=SC2086 # two words
		run --separate-stderr hook $op
		if [ "$op" = "prepare begin" ]; then
			assert_equal "$status" 1
			assert_regex "${stderr_lines[-1]}" "^vfsentinel: the VF health state is unavailable"
		else
			assert_equal "$status" 0
		fi
	done
	assert_equal "$(cat "$DATA/gpu/vf-claims.json")" '{broken'
}

@test "its lines at warn and above reach syslog, ident libvirt-hook; none when no socket exists" {
	command -v unshare >/dev/null || skip "unshare (util-linux) not installed"
	[ "$(id -u)" = 0 ] || skip "needs root for a private /dev/log"
	echo "sentinel.intreval = 5" >>"$VFSENTINEL_CONF"
	quarantine $VF4
	domain_xml hostdev=$VF4 profile="$P12" >"$T/dom.xml"
	# With no /dev/log (this test's namespace has none): nothing fails.
	run -1 --separate-stderr unshare -m sh -c 'mount -t tmpfs none /dev &&
		exec "$0" vm-a prepare begin - <"$1"' "$(command -v libvirt-hook)" "$T/dom.xml"
	assert_regex "${stderr_lines[-1]}" "^vfsentinel: VF $VF4 is quarantined"
	# With one: each warn and error line, and the refusal's sentence.
	run -1 --separate-stderr unshare -m sh -c '
		mkdir "$2/dev" && mount --rbind /dev "$2/dev" &&
		mount -t tmpfs none /dev && touch /dev/null &&
		mount --bind "$2/dev/null" /dev/null &&
		{ socat -u UNIX-RECV:/dev/log,mode=666 "OPEN:$2/syslog,creat,append" & } &&
		pid=$! &&
		for i in 1 2 3 4 5 6 7 8 9 10; do [ -S /dev/log ] && break; sleep 0.1; done &&
		"$0" vm-a prepare begin - <"$1"; rc=$?; sleep 0.3; kill $pid; exit $rc' \
		"$(command -v libvirt-hook)" "$T/dom.xml" "$T"
	run -0 cat "$T/syslog"
	assert_output --regexp '<28>.*libvirt-hook\[[0-9]+\]: \{.*"level":"warn".*unknown key: sentinel.intreval'
	assert_output --regexp '<27>.*libvirt-hook\[[0-9]+\]: vfsentinel: VF 0000:e3:00.4 is quarantined'
}
