#!/bin/bash
# demo.sh - `make demo`: vfsentinel's main job on a simulated GPU host.
#
# Runs the real programs (bin/) on a fake sysfs tree with 2 NVIDIA L40S
# cards x 8 vendor-VFIO VFs, a temporary data directory and configuration,
# and simulated guests that run the real guest programs on recorded kernel
# logs and an nvidia-smi stand-in (or, for one VM, a recorded driver GPU
# list and device node), answering over Unix sockets (one VM
# behind a socat hybrid-vsock proxy, as Firecracker and Cloud Hypervisor
# expose vsock). The host runs `sentinel-poll | vfstore apply`.
#
# How the wedge is made deterministic: placement is random, so the
# simulated host declares wedged whichever VF the first claim got (as if a
# previous tenant's VMM had been SIGKILLed during driver init). To show a
# second, distinct assignment landing on that VF, the launcher replays an
# unlucky draw: it dry-runs vfpick with --seed 1, 2, ... until the pick is
# that VF and claims with the same seed. The same trick shows the VF back
# in rotation after the runbook.
#
# Where libvirt is installed (and the demo runs as root), a last step
# runs libvirt-hook as the qemu hook of a real libvirtd, started in a
# private mount namespace (tools/libvirt-ns.sh, shared with
# t/69-libvirt-real.bats) with QEMU under TCG: a domain on a quarantined
# VF is refused, one naming a free VF in vfsentinel's <metadata> is
# claimed, completed and released on virsh destroy. Elsewhere the demo
# says why it skips that step.
#
# Exit status 0 when every step showed what it should; 1 otherwise. Every
# process started here is ended on exit (trap), and the temporary
# directory is removed (set VFS_DEMO_KEEP=1 to keep it).
set -u -o pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PATH=${VFS_BIN:-$ROOT/bin}:$PATH
export PATH
PROFILE='NVIDIA L40S-12Q'
CARD_A=0000:e3:00.0
CARD_B=0000:e4:00.0
PGIDS=()
VMM_PIDS=

# shellcheck source=t/lib/demo-host.sh
. "$ROOT/t/lib/demo-host.sh"
# shellcheck source=tools/libvirt-ns.sh
. "$ROOT/tools/libvirt-ns.sh"

if [ -t 1 ]; then B=$'\e[1m' N=$'\e[0m'; else B='' N=''; fi

step() { printf '\n%s== %s%s\n' "$B" "$*" "$N"; }
say() { printf '   %s\n' "$@"; }

# cmd STRING: shows the command line, then runs it (stdout shown).
cmd() {
	printf '%s$ %s%s\n' "$B" "$1" "$N"
	eval "$1" 2>>"$D/logs/cli.log"
}

# capture VAR STRING: shows and runs the command, keeps its stdout in VAR
# and shows it compactly through jq.
capture() {
	local out rc
	printf '%s$ %s%s\n' "$B" "$2" "$N"
	out=$(eval "$2" 2>>"$D/logs/cli.log")
	rc=$?
	[ -n "$out" ] && jq -c . <<<"$out"
	printf -v "$1" '%s' "$out"
	return $rc
}

fail() {
	printf '\ndemo: FAILED: %s\n' "$*" >&2
	for f in "$D"/logs/*.log "$D"/vm-*/guest.log "$D"/lv/hook.log \
	    "$D"/lv/libvirtd.out; do
		[ -s "$f" ] || continue
		printf -- '--- %s (last lines)\n' "${f#"$D"/}" >&2
		tail -n 8 "$f" >&2
	done
	exit 1
}

cleanup() {
	local g i alive
	[ -n "${LV_HOLDER:-}" ] && lv_teardown
	for g in "${PGIDS[@]}"; do
		kill -TERM -- "-$g" 2>/dev/null
	done
	for ((i = 0; i < 20; i++)); do
		alive=0
		for g in "${PGIDS[@]}"; do
			kill -0 -- "-$g" 2>/dev/null && alive=1
		done
		[ "$alive" = 0 ] && break
		sleep 0.1
	done
	for g in "${PGIDS[@]}"; do
		kill -KILL -- "-$g" 2>/dev/null
	done
	for g in $VMM_PIDS; do
		[ "$(cat "/proc/$g/comm" 2>/dev/null)" = qemu-system-x86 ] &&
		    kill -KILL "$g" 2>/dev/null
	done
	wait 2>/dev/null
	if [ -n "${VFS_DEMO_KEEP:-}" ]; then
		echo "demo: kept $D" >&2
	else
		rm -rf "$D"
	fi
}

# spawn NAME CMD...: runs CMD in a session of its own, remembered for the
# cleanup (its process group is killed as a whole).
spawn() {
	setsid "$@" </dev/null &
	PGIDS+=("$!")
}

# wait_apply JQ_FILTER: waits (up to 15 s) for a line of vfstore apply's
# output matching the filter, and prints it.
wait_apply() {
	local i line
	for ((i = 0; i < 150; i++)); do
		line=$(jq -R -c "fromjson? // empty | select($1)" \
		    "$D/apply.out" 2>/dev/null | head -n 1)
		if [ -n "$line" ]; then
			printf '%s\n' "$line"
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# boot_vm NAME MODE TRANSPORT: starts a simulated VM (t/lib/demo-vm.sh).
boot_vm() {
	mkdir -p "$D/$1"
	spawn bash "$ROOT/t/lib/demo-vm.sh" "$D/$1" "$2" "$3"
	eval "PG_$(tr - _ <<<"$1")=$!"
	local i
	for ((i = 0; i < 50; i++)); do
		[ -S "$D/$1/qmp.sock" ] && [ -S "$D/$1/answer.sock" ] && return 0
		sleep 0.1
	done
	fail "VM $1 did not start"
}

# stop_vm NAME: the VM is shut down: its processes end, its control socket
# goes away, and the launcher releases its claim and the VF's vGPU type.
stop_vm() {
	local var g
	var=PG_$(tr - _ <<<"$1")
	g=${!var}
	kill -TERM -- "-$g" 2>/dev/null
	sleep 0.2
	kill -KILL -- "-$g" 2>/dev/null
	rm -f "$D/$1/qmp.sock" "$D/$1/vmm.vsock"
	cmd "vfstore release --instance $1 --deconfigure | jq -c ." ||
	    fail "release of $1"
}

# start_vmm NAME: a VMM for NAME with its QMP socket at DIR/NAME/qmp.sock:
# a real QEMU without a guest (no KVM needed) when qemu-system-x86_64 is
# installed, else a socat listener. Its pid goes to DIR/NAME/vmm.pid.
start_vmm() {
	local dir=$D/$1 i
	mkdir -p "$dir"
	if command -v qemu-system-x86_64 >/dev/null; then
		VMM_KIND="a real QEMU (qemu-system-x86_64 -machine none)"
		qemu-system-x86_64 -machine none -nodefaults -display none \
		    -qmp "unix:$dir/qmp.sock,server=on,wait=off" -daemonize \
		    -pidfile "$dir/vmm.pid" </dev/null >/dev/null \
		    2>>"$D/logs/vmm.log" || fail "QEMU did not start"
		VMM_PIDS="$VMM_PIDS $(cat "$dir/vmm.pid")"
	else
		VMM_KIND="a socat listener standing in for QEMU"
		spawn socat "UNIX-LISTEN:$dir/qmp.sock,fork" EXEC:cat
		echo "${PGIDS[-1]}" >"$dir/vmm.pid"
	fi
	for ((i = 0; i < 50; i++)); do
		[ -S "$dir/qmp.sock" ] && return 0
		sleep 0.1
	done
	fail "the VMM of $1 did not start"
}

# sentinel_skips NAME: shows (waiting up to 3 s) the sentinel's log line
# that it no longer polls NAME because its VMM is not alive.
sentinel_skips() {
	local i line
	for ((i = 0; i < 30; i++)); do
		line=$(jq -c --arg id "$1" 'select(.instance_id == $id and
		    (.msg | test("VMM not alive"))) | {level, msg, instance_id, vmm}' \
		    "$D/logs/sentinel.log" 2>/dev/null | head -n 1)
		[ -n "$line" ] && { printf '%s\n' "$line"; return 0; }
		sleep 0.1
	done
	say "(no such line yet)"
}

# seed_for VF: the first --seed for which a vfpick dry run picks VF.
seed_for() {
	local s
	for ((s = 1; s <= 400; s++)); do
		[ "$(vfpick --profile "$PROFILE" --seed "$s" 2>/dev/null |
		    jq -r .vf_address)" = "$1" ] && { echo "$s"; return 0; }
	done
	return 1
}

# place NAME ENDPOINT [--seed N]: claims and configures a VF for a VM.
place() {
	local name=$1 ep=$2
	shift 2
	capture PLACED "vfpick --profile '$PROFILE' --claim $name --configure \
--vsock $ep --control-socket $D/$name/qmp.sock${*:+ $*}" ||
	    fail "vfpick could not place $name"
	mkdir -p "$D/$name"
}

# suspect_step: vm-5 died before its guest said OK (SPEC.md 7.3): its VF
# is suspect, placement avoids it, a verification clears it. $REC is
# step 9's reconcile pass.
suspect_step() {
	local vf
	step "9b. Killed before its guest said OK: the VF is suspect until verified"
	vf=$(jq -r 'select(.instance_id == "vm-5") | .vf_address' <<<"$REC")
	[ "$(jq -r 'select(.instance_id == "vm-5") | .suspect' <<<"$REC")" = true ] ||
	    fail "vm-5's VF is not suspect"
	say "Reconcile found vm-5's socket refusing (unclean), within" \
	    "suspect.window of its claim and before any OK: $vf is suspect:"
	cmd "vfstore show --vf $vf | jq -c '{vf_address, suspect: .suspect.source, why}'"
	say "The next placements avoid it (suspect.placement last: a suspect" \
	    "VF only when nothing else fits):"
	cmd "for s in \$(seq 1 20); do vfpick --profile '$PROFILE' --seed \$s; done | jq -s -c --arg vf $vf '{picks: length, on_suspect: map(select(.vf_address == \$vf)) | length}'"
	say "A verification boots a guest on it (here a stand-in verify command" \
	    "that passes) and clears the suspicion:"
	{ cat "$VFSENTINEL_CONF"; echo 'recovery.verify_command = true'; } \
	    >"$D/verify.conf"
	capture VERIFIED "vfrecover -c $D/verify.conf --verify-suspects" ||
	    fail "vfrecover --verify-suspects"
	[ "$(jq -r .result <<<"$VERIFIED")" = pass ] || fail "verification"
	cmd "resources-report --vfs | jq -c --arg vf $vf 'select(.vf_address == \$vf) | {vf_address, state}'"
}

setup_host() {
	D=$(mktemp -d "${TMPDIR:-/tmp}/vfsdemo.XXXXXX") || exit 1
	trap cleanup EXIT
	trap 'exit 1' INT TERM HUP
	mkdir -p "$D/data" "$D/metrics" "$D/logs"
	demo_host "$D/host" "$CARD_A" "$CARD_B"
	cat >"$D/vfsentinel.conf" <<-EOF
	# make demo: a simulated host
	data_dir = $D/data
	sysfs_root = $D/host
	metrics.textfile_dir = $D/metrics
	gpu.vf_quarantine_threshold = 2
	sentinel.interval = 1
	sentinel.timeout = 2
	recovery.sriov_manage = $ROOT/t/lib/sriov-manage
	recovery.quiesce_command = echo "would run: systemctl stop nvidia-dcgm-exporter nvidia-dcgm nvidia-persistenced" >>$D/logs/dcgm.log
	recovery.restore_command = echo "would run: systemctl start nvidia-persistenced nvidia-dcgm nvidia-dcgm-exporter" >>$D/logs/dcgm.log
	recovery.settle_timeout = 5
	EOF
	VFSENTINEL_CONF=$D/vfsentinel.conf
	# The stand-in sriov-manage cycles the simulated host's VFs; the
	# holder checks read the simulated host's (empty) /proc.
	FAKE_SYSFS=$D/host
	mkdir -p "$D/proc"
	export VFSENTINEL_CONF FAKE_SYSFS
}

start_sentinel() {
	# shellcheck disable=SC2016 # expanded by the inner shell
	spawn bash -c 'sentinel-poll 2>>"$1/logs/sentinel.log" |
	    vfstore apply --metrics-file "$1/metrics/vfsentinel-sentinel.prom" \
	    >"$1/apply.out" 2>>"$1/logs/sentinel.log"' demo "$D"
}

# virsh ARGS...: the real virsh, against the demo's libvirtd (in its
# mount namespace), so that the commands shown read as an operator types
# them.
virsh() {
	lvsh "$@"
}

# free_vf: the VF a vfpick dry run offers now.
free_vf() {
	vfpick --profile "$PROFILE" --seed 1 2>>"$D/logs/cli.log" |
	    jq -r .vf_address
}

# libvirt_refused VF: a domain with VF as its <hostdev>, refused by the
# hook because the VF is quarantined.
libvirt_refused() {
	local xml=$D/lv/lv-1.xml
	META="<vfsentinel:vgpu xmlns:vfsentinel='https://vfsentinel.dev/xmlns/libvirt/1' profile='$PROFILE'/>" \
	    tcg_xml lv-1 6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f1 \
	    "$(hostdev_xml "$1")" \
	    >"$xml"
	say "An operator quarantines $1; a domain with it as its <hostdev> is refused:"
	cmd "vfstore quarantine --vf $1 --reason 'demo: taken out by an operator' | jq -c ." ||
	    fail "vfstore quarantine"
	cmd "virsh create $xml 2>&1" && fail "libvirt started lv-1 on quarantined $1"
	grep -q "^lv-1 prepare begin rc=1" "$D/lv/calls" ||
	    fail "the hook did not refuse lv-1"
}

# libvirt_claimed VF: a domain naming VF in vfsentinel's metadata (as a
# launcher that hot-plugs the VF after start does): claimed at prepare,
# completed at started, released on destroy.
libvirt_claimed() {
	local xml=$D/lv/lv-2.xml uuid=0c9d8e7f-6a5b-4c3d-9e2f-1a0b9c8d7e6f
	META="<vfsentinel:vgpu xmlns:vfsentinel='https://vfsentinel.dev/xmlns/libvirt/1' vf='$1' profile='$PROFILE'/>" \
	    tcg_xml lv-2 "$uuid" >"$xml"
	say "A domain naming free VF $1 in vfsentinel's <metadata> element:"
	cmd "grep vfsentinel: $xml | sed 's/^ *//'"
	cmd "virsh create $xml" || fail "libvirt did not start lv-2"
	say "The hook claimed $1 at prepare (writing the profile's type) and" \
	    "completed the claim at started: libvirt's QMP monitor, the console file:"
	cmd "vfstore claims | jq -c 'select(.instance_id == \"$uuid\") | {vf_address, instance_id, profile, type_id, control_socket, app_log}'"
	[ "$(vfstore claims | jq -r "select(.instance_id == \"$uuid\") | .control_socket")" != "" ] ||
	    fail "lv-2's claim has no control socket"
	say "Reconcile, run in libvirtd's mount namespace (lv_in: nsenter -m)" \
	    "where its sockets are, finds lv-2 alive (libvirt holds the monitor):"
	cmd "lv_in vfstore reconcile --once --grace 0 --dry-run | jq -c 'select(.instance_id == \"$uuid\") | {instance_id, liveness, released}'"
	say "virsh destroy: the hook's release end gives the VF back (type 0):"
	cmd "virsh destroy lv-2" || fail "virsh destroy lv-2"
	cmd "vfstore claims | jq -c 'select(.instance_id == \"$uuid\")' | wc -l; cat $D/host/sys/bus/pci/devices/$1/nvidia/current_vgpu_type"
	vfstore claims | grep -q "$uuid" && fail "lv-2's claim was not released"
	say "The hook's calls (domain, operation, exit code):"
	cmd "cat $D/lv/calls"
}

# log_line MSG INSTANCE: shows the sentinel log's first line with that
# message for that instance (chosen by message, not by level: the
# poller's own warn lines share the log), its fields compactly; fails
# when there is none within 5 s.
log_line() {
	local l i
	for ((i = 0; i < 50; i++)); do
		l=$(jq -R -c --arg m "$1" --arg id "$2" 'fromjson? // empty |
		    select(.msg == $m and .instance_id == $id) |
		    {level, msg, vf, instance_id, failures, threshold}' \
		    "$D/logs/sentinel.log" | head -n 1)
		[ -n "$l" ] && { echo "$l"; return 0; }
		sleep 0.1
	done
	return 1
}

# libvirt_step: step 10, where a real libvirtd can run; else says why not.
libvirt_step() {
	local why q t1
	step "10. libvirt: libvirt-hook as the qemu hook of a real libvirtd"
	if why=$(lv_missing); then
		say "Skipped: $why. With libvirt installed (make deps, as root)" \
		    "this step runs domains under a real libvirtd."
		return 0
	fi
	t1=$SECONDS
	lv_setup "$D/lv" || fail "no mount namespace for libvirtd"
	lv_hook "$(command -v libvirt-hook)"
	lv_start || fail "libvirtd did not start"
	say "libvirtd runs in a private mount namespace over $D/lv, QEMU under" \
	    "TCG, libvirt-hook as /etc/libvirt/hooks/qemu.d/vfsentinel on this host."
	q=$(free_vf)
	libvirt_refused "$q"
	libvirt_claimed "$(free_vf)"
	lv_teardown
	LV_HOLDER=
	say "(libvirt step: $((SECONDS - t1)) s)"
}

main() {
	local t0=$SECONDS seed line p
	for p in vfstore vfpick resources-report sentinel-poll kmsg-watch \
	    gpu-probe vsock-answer vfrecover libvirt-hook; do
		command -v "$p" >/dev/null || { echo "demo: $p not built (run make)" >&2; exit 1; }
	done
	setup_host

	step "1. A simulated GPU host: 2 L40S cards x 8 VFs (fake sysfs in $D/host)"
	say "Configuration: VFSENTINEL_CONF=$D/vfsentinel.conf (threshold 2, scans every 1 s)"
	say "The install step creates the state directory (nothing else does):"
	cmd "vfstore init | jq -c ." || fail "vfstore init"
	cmd "resources-report | jq -c '.gpu | {total_slots, allocatable_slots, quarantined_slots, profiles}'" ||
	    fail "resources-report"
	say "The host sentinel starts: sentinel-poll | vfstore apply --metrics-file ..."
	start_sentinel

	step "2. vm-1 is placed; its VF turns out to be wedged"
	place vm-1 "unix:$D/vm-1/answer.sock"
	WEDGED=$(jq -r .vf_address <<<"$PLACED")
	WEDGED_CARD=$(jq -r .card <<<"$PLACED")
	say "The simulated host declares $WEDGED wedged: a previous tenant's VMM" \
	    "was SIGKILLed while the guest driver was initialising it."
	boot_vm vm-1 wedged unix
	say "vm-1 boots; its kernel loops on RmInitAdapter failed. kmsg-watch events (the" \
	    "record forged from user space, facility 1, is not among them):"
	sleep 0.3
	cmd "jq -c 'select(.event == \"gpu_init_failed\") | {seq, message}' $D/vm-1/events"
	say "The sentinel polls vm-1 over its socket; vfstore apply records the failure:"
	line=$(wait_apply ".instance_id == \"vm-1\" and .outcome == \"recorded\"") ||
	    fail "no failure recorded for vm-1"
	jq -c '{check, vf_address, instance_id, outcome, failures, threshold}' <<<"$line"
	[ "$(jq -r .failures <<<"$line")" = 1 ] || fail "first failure not 1"
	say "Below the threshold: the VF stays in rotation (warn log):"
	log_line "recorded vGPU VF init failure below quarantine threshold" vm-1 ||
	    fail "no below-threshold warn line for vm-1"
	say "The tenant gives up and deletes vm-1:"
	stop_vm vm-1

	step "3. vm-2 lands on the same VF, through a hybrid-vsock proxy"
	seed=$(seed_for "$WEDGED") || fail "no seed places $WEDGED"
	say "(Replaying an unlucky random draw: vfpick --seed $seed picks $WEDGED.)"
	place vm-2 "hvsock:$D/vm-2/vmm.vsock:2222" --seed "$seed"
	[ "$(jq -r .vf_address <<<"$PLACED")" = "$WEDGED" ] ||
	    fail "vm-2 did not get $WEDGED"
	boot_vm vm-2 wedged hvsock
	say "vm-2's driver fails too: a second distinct assignment reaches the threshold:"
	line=$(wait_apply ".instance_id == \"vm-2\" and .outcome == \"quarantined\"") ||
	    fail "$WEDGED was not quarantined"
	jq -c '{check, vf_address, instance_id, outcome, failures, threshold, nvrm}' <<<"$line"
	log_line "quarantined wedged vGPU VF" vm-2 ||
	    fail "no quarantine error line for vm-2"
	cmd "vfstore show --vf $WEDGED | jq ." || fail "vfstore show"
	say "What the sentinel asks, by hand through vm-2's hybrid vsock:"
	cmd "printf 'CONNECT 2222\\n{\"method\":\"GetGPUInitStatus\"}\\n' | socat -t 2 - UNIX-CONNECT:$D/vm-2/vmm.vsock" ||
	    fail "no answer through the hybrid vsock"
	stop_vm vm-2

	step "4. Placement now avoids the VF and its card"
	say "20 dry runs (no --claim), each with another random draw:"
	cmd "for s in \$(seq 1 20); do vfpick --profile '$PROFILE' --seed \$s; done | jq -s -c 'group_by(.card) | map({card: .[0].card, picks: length})'"
	place vm-3 "unix:$D/vm-3/answer.sock"
	[ "$(jq -r .card <<<"$PLACED")" != "$WEDGED_CARD" ] ||
	    fail "vm-3 was placed on the card of the wedged VF"
	boot_vm vm-3 healthy-open unix
	say "vm-3 boots fine; its image has no nvidia-smi, so gpu-probe --method open" \
	    "opens the GPU's /dev/nvidia0, reports OK, and the sentinel sees it:"
	line=$(wait_apply ".instance_id == \"vm-3\" and .check == \"ok\"") ||
	    fail "no ok check for vm-3"
	jq -c '{check, vf_address, instance_id, cleared, rescinded}' <<<"$line"
	cmd "jq -c 'select(.event == \"gpu_init_ok\")' $D/vm-3/events"
	grep -q '"method":"open"' "$D/vm-3/events" ||
	    fail "vm-3's probe did not use --method open"

	step "5. Capacity: resources-report"
	cmd "resources-report | jq -c '.gpu | {total_slots, used_slots, allocatable_slots, quarantined_slots}'"
	cmd "resources-report | jq -c '.gpu.cards[] | {address, vfs, used, quarantined}'"

	step "6. Metrics for Prometheus (node_exporter textfile collector)"
	cmd "resources-report --format prometheus --output $D/metrics/vfsentinel-resources.prom"
	cmd "grep -hv '^#' $D/metrics/vfsentinel-sentinel.prom $D/metrics/vfsentinel-resources.prom"
	if [ -x "$ROOT/build-tools/promtool" ]; then
		say "Each file is valid for the textfile collector:"
		for f in "$D"/metrics/*.prom; do
			cmd "$ROOT/build-tools/promtool check metrics <$f && echo '${f##*/}: ok'" ||
			    fail "promtool rejects ${f##*/}"
		done
	fi

	step "7. Recovery: vfrecover cycles card $WEDGED_CARD (the runbook of share/doc/recovery.md)"
	say "First the plan: what it would run, drain, and what is busy now:"
	cmd "vfrecover --proc-root $D --card $WEDGED_CARD --dry-run | jq -c 'del(.card)'" ||
	    fail "vfrecover --dry-run"
	say "Then the cycle (a stand-in sriov-manage removes and re-creates the simulated VFs):"
	cmd "vfrecover --proc-root $D --card $WEDGED_CARD --wait 10 2>>$D/logs/vfrecover.log | jq -c ." ||
	    fail "vfrecover"
	say "The stand-in DCGM commands:"
	cmd "cat $D/logs/dcgm.log"
	cmd "vfstore show | jq -c ." || fail "vfstore show"
	cmd "jq -c '{command, outcome, user}' $D/data/gpu/audit.jsonl"
	cmd "resources-report | jq -c '.gpu | {total_slots, used_slots, allocatable_slots, quarantined_slots}'"

	step "8. Verification boot: $WEDGED is back in rotation"
	seed=$(seed_for "$WEDGED") || fail "$WEDGED is not offered again"
	say "vfpick --seed $seed offers $WEDGED again; vm-4 boots on it:"
	place vm-4 "unix:$D/vm-4/answer.sock" --seed "$seed"
	boot_vm vm-4 healthy unix
	line=$(wait_apply ".instance_id == \"vm-4\" and .check == \"ok\"") ||
	    fail "no ok check for vm-4"
	jq -c '{check, vf_address, instance_id, cleared, rescinded}' <<<"$line"
	[ "$(jq -r .vf_address <<<"$line")" = "$WEDGED" ] ||
	    fail "vm-4 is not on $WEDGED"

	step "9. A VMM killed with SIGKILL: vfstore reconcile gives its VF back"
	place vm-5 "unix:$D/vm-5/answer.sock"
	start_vmm vm-5
	say "vm-5's VMM: $VMM_KIND." \
	    "Reconcile keeps every claim whose VMM lives (--grace 0: the demo" \
	    "does not wait the 120 s launch window):"
	cmd "vfstore reconcile --grace 0 | jq -c '{instance_id, liveness, released, reason}'" ||
	    fail "reconcile"
	cmd "resources-report | jq -c '{reconcile: \"before\", used_slots: .gpu.used_slots, allocatable_slots: .gpu.allocatable_slots}'"
	say "The OOM killer SIGKILLs vm-5's VMM; its socket file stays behind:"
	cmd "kill -KILL \$(cat $D/vm-5/vmm.pid) && sleep 0.3 && ls -l $D/vm-5/qmp.sock | cut -c1-10"
	say "The sentinel stops polling vm-5 (its next scan finds the VMM gone):"
	sentinel_skips vm-5
	say "The next pass finds the socket refusing connections and no process" \
	    "holding the VF, re-checks under the store lock, deconfigures the VF" \
	    "and releases the claim (the other VMs keep theirs):"
	capture REC "vfstore reconcile --grace 0" || fail "reconcile"
	[ "$(jq -r 'select(.instance_id == "vm-5") | .released' <<<"$REC")" = true ] ||
	    fail "reconcile did not release vm-5"
	cmd "resources-report | jq -c '{reconcile: \"after\", used_slots: .gpu.used_slots, allocatable_slots: .gpu.allocatable_slots}'"
	suspect_step

	libvirt_step

	step "Done in $((SECONDS - t0)) s: wedged $WEDGED detected, quarantined, avoided, repaired; a dead VM's claim released."
}

main "$@"
