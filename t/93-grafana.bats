#!/usr/bin/env bats
# 93-grafana.bats - the Grafana dashboard integrations/grafana/vfsentinel.json
# (SPEC 6.7): importable as is and by provisioning, and every panel's
# PromQL answers its question on series the real programs wrote.
#
# setup_file runs the programs on two fake hosts over a short story and
# keeps each host's metrics textfiles at three moments (snapshots):
#   h1:9100  s0 (0-4m): one failure recorded on e3:00.5; a live claim
#            s1 (5-9m): a second assignment of e3:00.5 fails: quarantined;
#                       an operator quarantines 44:01.1; reconcile releases
#                       the claim of a killed VM on e3:00.6; vfrecover on
#                       card e3:00.0 fails at disable: the card stays
#                       drained, its recovery unfinished
#            s2 (10-14m): vfrecover resumes, cycles card e3:00.0 and
#                       clears e3:00.5
#   h2:9100  s0 (0-14m): a quiet host with one claim and one drained VF,
#            whose sentinel died after its first scan
# t/lib/prom2series.py turns the snapshots into promtool input series
# (instance and job labels added; a timestamp gauge becomes its
# snapshot's first minute). Each test then takes every panel query from
# the dashboard with jq, replaces the template variables, and checks the
# values listed in EXPECT below with `promtool test rules`.
# The jq programs are in single quotes on purpose (their $names are jq's).
# shellcheck disable=SC2016

load helpers
load lib/recovery

DASH=$VFS_ROOT/integrations/grafana/vfsentinel.json
PROV=$VFS_ROOT/integrations/grafana/provisioning.yml
H1=h1:9100
H2=h2:9100

# The expected values: PANEL TITLE|REFID|HOST|EVAL TIME|LABELS VALUE, one
# sample a line; the lines of one panel, host and time are its whole
# answer (promtool fails on a missing or an extra series). HOST replaces
# $host (.* is Grafana's "All"); $job is .* ; $__rate_interval 5m and
# $__range 15m (the whole story; $__range_s 900). Title "$job" or
# "$host" is a template variable's query. Every panel query has at least
# one non-empty answer.
EXPECT='
$job|-|.*|4m|{job="node"} 1
Fleet slots by profile and state|A|.*|4m|{profile="NVIDIA L40S-12Q"} 4
Fleet slots by profile and state|A|.*|4m|{profile="NVIDIA L40S-24Q"} 4
Fleet slots by profile and state|B|.*|9m|{state="drained"} 3
Fleet slots by profile and state|B|.*|9m|{state="quarantined"} 2
Fleet slots by profile and state|B|.*|9m|{state="suspect"} 0
OpenStack Placement sync|A|.*|9m|{instance="h1:9100"} 240
OpenStack Placement sync|A|.*|9m|{instance="h2:9100"} 540
OpenStack Placement sync|B|.*|9m|{instance="h1:9100"} 4
OpenStack Placement sync|B|.*|9m|{instance="h2:9100"} 1
OpenStack Placement sync|B|h2:9100|9m|{instance="h2:9100"} 1
OpenStack Placement sync|C|.*|9m|{instance="h1:9100",kind="conflict"} 0
OpenStack Placement sync|C|.*|9m|{instance="h1:9100",kind="http"} 0
OpenStack Placement sync|C|.*|9m|{instance="h1:9100",kind="in_use"} 0
OpenStack Placement sync|C|.*|9m|{instance="h1:9100",kind="store"} 0
OpenStack Placement sync|C|.*|9m|{instance="h1:9100",kind="unreachable"} 1
OpenStack Placement sync|C|.*|9m|{instance="h2:9100",kind="conflict"} 0
OpenStack Placement sync|C|.*|9m|{instance="h2:9100",kind="http"} 0
OpenStack Placement sync|C|.*|9m|{instance="h2:9100",kind="in_use"} 0
OpenStack Placement sync|C|.*|9m|{instance="h2:9100",kind="store"} 0
OpenStack Placement sync|C|.*|9m|{instance="h2:9100",kind="unreachable"} 0
$host|-|.*|4m|{instance="h1:9100"} 1
$host|-|.*|4m|{instance="h2:9100"} 1
Quarantined VFs|A|.*|4m|{instance="h1:9100"} 0
Quarantined VFs|A|.*|4m|{instance="h2:9100"} 0
Quarantined VFs|A|.*|9m|{instance="h1:9100"} 2
Quarantined VFs|A|.*|9m|{instance="h2:9100"} 0
Quarantined VFs|A|.*|14m|{instance="h1:9100"} 1
Quarantined VFs|A|.*|14m|{instance="h2:9100"} 0
Quarantined VFs|A|h2:9100|9m|{instance="h2:9100"} 0
Suspect VFs and verifications|A|.*|4m|{instance="h1:9100"} 0
Suspect VFs and verifications|A|.*|4m|{instance="h2:9100"} 0
Suspect VFs and verifications|B|.*|4m|{instance="h1:9100",result="pass"} 0
Suspect VFs and verifications|B|.*|4m|{instance="h1:9100",result="fail"} 0
Suspect VFs and verifications|B|.*|4m|{instance="h1:9100",result="error"} 0
Suspect VFs and verifications|B|.*|4m|{instance="h1:9100",result="interrupted"} 0
Suspect VFs and verifications|B|.*|4m|{instance="h2:9100",result="pass"} 0
Suspect VFs and verifications|B|.*|4m|{instance="h2:9100",result="fail"} 0
Suspect VFs and verifications|B|.*|4m|{instance="h2:9100",result="error"} 0
Suspect VFs and verifications|B|.*|4m|{instance="h2:9100",result="interrupted"} 0
Last sentinel scan age|A|.*|14m|{instance="h1:9100"} 240
Last sentinel scan age|A|.*|14m|{instance="h2:9100"} 840
Health store and systemic failures|A|.*|9m|{instance="h1:9100"} 0
Health store and systemic failures|A|.*|9m|{instance="h2:9100"} 0
Health store and systemic failures|B|.*|9m|{instance="h1:9100"} 0
Health store and systemic failures|B|.*|9m|{instance="h2:9100"} 0
Recoveries|A|.*|9m|{instance="h1:9100"} 0
Recoveries|A|.*|9m|{instance="h2:9100"} 0
Recoveries|A|.*|14m|{instance="h1:9100"} 1
Recoveries|A|.*|14m|{instance="h2:9100"} 0
Recoveries|B|.*|9m|{instance="h1:9100"} 1
Recoveries|B|.*|9m|{instance="h2:9100"} 0
Recoveries|B|.*|14m|{instance="h1:9100"} 0
Recoveries|B|.*|14m|{instance="h2:9100"} 0
Slots per host|A|.*|4m|{instance="h1:9100",kind="allocatable"} 4
Slots per host|A|.*|4m|{instance="h1:9100",kind="used"} 1
Slots per host|A|.*|4m|{instance="h1:9100",kind="quarantined"} 0
Slots per host|A|.*|4m|{instance="h1:9100",kind="drained"} 0
Slots per host|A|.*|4m|{instance="h2:9100",kind="allocatable"} 0
Slots per host|A|.*|4m|{instance="h2:9100",kind="used"} 1
Slots per host|A|.*|4m|{instance="h2:9100",kind="quarantined"} 0
Slots per host|A|.*|4m|{instance="h2:9100",kind="drained"} 1
Slots per host|A|h1:9100|9m|{instance="h1:9100",kind="allocatable"} 0
Slots per host|A|h1:9100|9m|{instance="h1:9100",kind="used"} 1
Slots per host|A|h1:9100|9m|{instance="h1:9100",kind="quarantined"} 2
Slots per host|A|h1:9100|9m|{instance="h1:9100",kind="drained"} 2
Slots per host|A|h1:9100|14m|{instance="h1:9100",kind="allocatable"} 3
Slots per host|A|h1:9100|14m|{instance="h1:9100",kind="used"} 1
Slots per host|A|h1:9100|14m|{instance="h1:9100",kind="quarantined"} 1
Slots per host|A|h1:9100|14m|{instance="h1:9100",kind="drained"} 0
Fleet slots|A|.*|9m|{kind="total"} 7
Fleet slots|A|.*|9m|{kind="allocatable"} 0
Fleet slots|A|.*|9m|{kind="used"} 2
Fleet slots|A|.*|9m|{kind="quarantined"} 2
Fleet slots|A|.*|9m|{kind="drained"} 3
Quarantined VFs and why|A|.*|9m|{card="0000:e3:00.0",instance="h1:9100",vf="0000:e3:00.5"} 2
Quarantined VFs and why|A|.*|9m|{card="0000:44:00.0",instance="h1:9100",vf="0000:44:01.1"} 0
Quarantined VFs and why|A|.*|14m|{card="0000:44:00.0",instance="h1:9100",vf="0000:44:01.1"} 0
Failures per VF|A|.*|4m|{card="0000:e3:00.0",instance="h1:9100",vf="0000:e3:00.5"} 1
Failures per VF|A|.*|9m|{card="0000:e3:00.0",instance="h1:9100",vf="0000:e3:00.5"} 2
Sentinel checks by result|A|h1:9100|9m|{instance="h1:9100",result="ok"} 0.006666666666666667
Sentinel checks by result|A|h1:9100|9m|{instance="h1:9100",result="failed"} 0.0033333333333333335
Sentinel checks by result|A|h1:9100|9m|{instance="h1:9100",result="unknown"} 0
Sentinel checks by result|A|h1:9100|9m|{instance="h1:9100",result="rpc_error"} 0.0033333333333333335
Sentinel checks by result|A|h1:9100|9m|{instance="h1:9100",result="unsupported_agent"} 0
Sentinel checks by result|A|h1:9100|9m|{instance="h1:9100",result="list_error"} 0
Sentinel checks by result|A|h2:9100|14m|{instance="h2:9100",result="ok"} 0
Sentinel checks by result|A|h2:9100|14m|{instance="h2:9100",result="failed"} 0
Sentinel checks by result|A|h2:9100|14m|{instance="h2:9100",result="unknown"} 0
Sentinel checks by result|A|h2:9100|14m|{instance="h2:9100",result="rpc_error"} 0
Sentinel checks by result|A|h2:9100|14m|{instance="h2:9100",result="unsupported_agent"} 0
Sentinel checks by result|A|h2:9100|14m|{instance="h2:9100",result="list_error"} 0
Failures recorded and VFs quarantined|A|.*|9m|{instance="h1:9100"} 1
Failures recorded and VFs quarantined|A|.*|9m|{instance="h2:9100"} 0
Failures recorded and VFs quarantined|B|.*|9m|{instance="h1:9100"} 1
Failures recorded and VFs quarantined|B|.*|9m|{instance="h2:9100"} 0
Failures recorded and VFs quarantined|B|.*|14m|{instance="h1:9100"} 0
Failures recorded and VFs quarantined|B|.*|14m|{instance="h2:9100"} 0
VFs in use with no claim|A|.*|9m|{instance="h1:9100"} 0
VFs in use with no claim|A|.*|9m|{instance="h2:9100"} 0
Reconcile: claims released|A|.*|9m|{instance="h1:9100"} 1
Reconcile: claims released|A|.*|9m|{instance="h2:9100"} 0
Reconcile: claims released|A|.*|14m|{instance="h1:9100"} 0
Reconcile: claims released|A|.*|14m|{instance="h2:9100"} 0
Reconcile: claims released|B|.*|9m|{instance="h1:9100"} 0
Reconcile: claims released|B|.*|9m|{instance="h2:9100"} 0
Claims not checked, by reason|A|.*|4m|{instance="h1:9100",reason="no_source"} 1
Claims not checked, by reason|A|.*|4m|{instance="h1:9100",reason="permission"} 0
Claims not checked, by reason|A|.*|4m|{instance="h1:9100",reason="vmm_not_alive"} 0
Claims not checked, by reason|A|.*|4m|{instance="h1:9100",reason="vmm_uncertain"} 0
Claims not checked, by reason|A|.*|4m|{instance="h1:9100",reason="console_unreadable"} 0
Claims not checked, by reason|A|.*|4m|{instance="h2:9100",reason="no_source"} 1
Claims not checked, by reason|A|.*|4m|{instance="h2:9100",reason="permission"} 0
Claims not checked, by reason|A|.*|4m|{instance="h2:9100",reason="vmm_not_alive"} 0
Claims not checked, by reason|A|.*|4m|{instance="h2:9100",reason="vmm_uncertain"} 0
Claims not checked, by reason|A|.*|4m|{instance="h2:9100",reason="console_unreadable"} 0
VFs per card by state|A|h1:9100|14m|{card="0000:e3:00.0",instance="h1:9100",state="free"} 3
VFs per card by state|A|h1:9100|14m|{card="0000:e3:00.0",instance="h1:9100",state="claimed"} 0
VFs per card by state|A|h1:9100|14m|{card="0000:e3:00.0",instance="h1:9100",state="dirty"} 0
VFs per card by state|A|h1:9100|14m|{card="0000:e3:00.0",instance="h1:9100",state="quarantined"} 0
VFs per card by state|A|h1:9100|14m|{card="0000:e3:00.0",instance="h1:9100",state="drained"} 0
VFs per card by state|A|h1:9100|14m|{card="0000:e3:00.0",instance="h1:9100",state="suspect"} 0
VFs per card by state|A|h1:9100|14m|{card="0000:44:00.0",instance="h1:9100",state="free"} 0
VFs per card by state|A|h1:9100|14m|{card="0000:44:00.0",instance="h1:9100",state="claimed"} 1
VFs per card by state|A|h1:9100|14m|{card="0000:44:00.0",instance="h1:9100",state="dirty"} 0
VFs per card by state|A|h1:9100|14m|{card="0000:44:00.0",instance="h1:9100",state="quarantined"} 1
VFs per card by state|A|h1:9100|14m|{card="0000:44:00.0",instance="h1:9100",state="drained"} 0
VFs per card by state|A|h1:9100|14m|{card="0000:44:00.0",instance="h1:9100",state="suspect"} 0
VFs per card by state|A|h2:9100|9m|{card="0000:40:00.0",instance="h2:9100",state="free"} 0
VFs per card by state|A|h2:9100|9m|{card="0000:40:00.0",instance="h2:9100",state="claimed"} 1
VFs per card by state|A|h2:9100|9m|{card="0000:40:00.0",instance="h2:9100",state="dirty"} 0
VFs per card by state|A|h2:9100|9m|{card="0000:40:00.0",instance="h2:9100",state="quarantined"} 0
VFs per card by state|A|h2:9100|9m|{card="0000:40:00.0",instance="h2:9100",state="drained"} 1
VFs per card by state|A|h2:9100|9m|{card="0000:40:00.0",instance="h2:9100",state="suspect"} 0
'

# --- the fake fleet (setup_file) -------------------------------------------

# host_env NAME: a host of its own under the file's temp dir: sets T,
# DATA, SYSFS, TF (its textfile directory) and VFSENTINEL_CONF, as
# vfs_setup does for a test. Its /proc is $T/proc, empty: no process
# holds a VF or a GPU (and no pass scans the machine's real /proc).
host_env() {
	T=$BATS_FILE_TMPDIR/$1
	DATA=$T/data
	SYSFS=$T/sysfs
	TF=$T/tf
	mkdir -p "$SYSFS/sys/bus/pci/devices" "$TF" "$T/snap" "$T/proc"
	: >"$T/vfsentinel.conf"
	VFSENTINEL_CONF=$T/vfsentinel.conf
	export T DATA SYSFS TF VFSENTINEL_CONF
	vfstore --data-dir "$DATA" init >/dev/null 2>&1
	# placement-sync's: the host's store, Placement unreachable.
	printf 'data_dir = %s\nsysfs_root = %s\nmetrics.textfile_dir = %s\n' \
	    "$DATA" "$SYSFS" "$TF" >"$T/sync.conf"
	printf '[placement]\nauth_type = admin_token\nendpoint = http://127.0.0.1:9\ntoken = admin\n' \
	    >"$T/placement.conf"
}

# o ARGS...: PROG with the host's data dir and sysfs tree (o vfstore ...).
o() {
	"$1" --data-dir "$DATA" --sysfs-root "$SYSFS" "${@:2}"
}

# claim_line VF ID CLAIMED_AT [CONTROL_SOCKET]: a claims-ledger entry
# added under the store lock, as vfpick writes it.
claim_line() {
	flock "$DATA/gpu/lock" bash -c '
		f=$1/gpu/vf-claims.json; shift
		[ -e "$f" ] || echo "{\"version\":1,\"claims\":[]}" >"$f"
		jq --arg vf "$1" --arg id "$2" --arg at "$3" --arg ctl "${4-}" \
		    ".claims += [{vf_address: \$vf, instance_id: \$id,
		    claimed_at: \$at, profile: \"NVIDIA L40S-12Q\",
		    type_id: \"1160\"} + if \$ctl == \"\" then {} else
		    {control_socket: \$ctl} end]" "$f" >"$f.new" &&
		    mv "$f.new" "$f"
	' _ "$DATA" "$@"
}

# check RESULT VF ID ASSIGNED_AT: a check line as sentinel-poll writes it
# (a failed one with the guest's NVRM line, an rpc_error with its error).
check() {
	local extra=
	case $1 in
	failed) extra=',"nvrm":"NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)"' ;;
	rpc_error) extra=',"error":"timeout"' ;;
	esac
	printf '{"check":"%s","vf_address":"%s","instance_id":"%s","assigned_at":"%s"%s}\n' \
	    "$1" "$2" "$3" "$4" "$extra"
}

# has FILE LINE...: every LINE is a whole line of FILE.
has() {
	local l
	for l in "${@:2}"; do
		grep -qxF -- "$l" "$1" 2>/dev/null || return 1
	done
}

# counts OK FAILED UNKNOWN RPC: the sentinel textfile's check counters.
counts() {
	local c=hypeman_instances_vgpu_sentinel_checks_total
	wait_long has "$TF/vfsentinel-sentinel.prom" "$c{result=\"ok\"} $1" \
	    "$c{result=\"failed\"} $2" "$c{result=\"unknown\"} $3" \
	    "$c{result=\"rpc_error\"} $4"
}

# scan_and_snap N: a sentinel-poll scan, a resources-report and a
# placement-sync cycle (Placement unreachable: 75, as on a host whose
# sync fails), then the host's textfiles, with their times, as
# snapshot N.
scan_and_snap() {
	o sentinel-poll --once --proc-root "$T" \
	    --metrics-file "$TF/vfsentinel-poller.prom" \
	    </dev/null >/dev/null 2>>"$T/err" 7>&-
	o resources-report --format prometheus \
	    --output "$TF/vfsentinel-resources.prom" 2>>"$T/err"
	if placement-sync -c "$T/sync.conf" --config-file "$T/placement.conf" \
	    --once >/dev/null 2>/dev/null 7>&-; then
		return 1
	fi
	mkdir -p "$T/snap/$1"
	cp -p "$TF"/*.prom "$T/snap/$1/"
}

# host1: the busy host. vfstore apply and vfstore reconcile run as the
# services run them, one process each for the whole story, so that their
# counters carry on from snapshot to snapshot. vfrecover writes its
# textfile into $TF, the metrics.textfile_dir of recovery_conf.
host1() {
	local old=2026-08-20T15:00:00Z rc=0
	host_env h1
	recovery_setup
	mk_sriov_card 0000:44:00.0 0000:44:01.0 0000:44:01.1
	claim_line 0000:44:01.0 i-4 "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	mkfifo "$T/checks"
	# (Not through o: $! must be the program's pid, not a subshell's.)
	vfstore --data-dir "$DATA" apply \
	    --metrics-file "$TF/vfsentinel-sentinel.prom" \
	    <"$T/checks" >"$T/apply" 2>>"$T/err" 3>&- &
	APPLY=$!
	exec 7>"$T/checks"
	# A grace of an hour: the live claim is never judged, however slow
	# the machine; the killed VM's claim is months old.
	vfstore --data-dir "$DATA" --sysfs-root "$SYSFS" reconcile --interval 1 \
	    --grace 3600 --proc-root "$T" \
	    --metrics-file "$TF/vfsentinel-reconcile.prom" \
	    >"$T/reconcile" 2>>"$T/err" 3>&- 7>&- &
	RECONCILE=$!
	echo "$APPLY $RECONCILE" >"$BATS_FILE_TMPDIR/pids"
	# s0: the first failed assignment of e3:00.5.
	{
		check failed "$VF5" i-1 $old
		check ok 0000:44:01.0 i-4 $old
		check ok 0000:44:01.0 i-4 $old
		check unknown 0000:44:01.0 i-4 $old
	} >&7
	counts 2 1 1 0
	wait_long has "$TF/vfsentinel-reconcile.prom" \
	    'vfsentinel_claims_released_total 0'
	scan_and_snap s0
	# s1: the second one quarantines it; an operator quarantines
	# 44:01.1; the VMM of i-3 on e3:00.6 was killed (its control socket
	# is gone).
	{
		check failed "$VF5" i-2 2026-08-20T16:00:00Z
		check ok 0000:44:01.0 i-4 $old
		check ok 0000:44:01.0 i-4 $old
		check rpc_error 0000:44:01.0 i-4 $old
	} >&7
	counts 4 2 1 1
	o vfstore quarantine --vf 0000:44:01.1 >/dev/null 2>>"$T/err"
	echo 1160 >"$DEV/$VF6/nvidia/current_vgpu_type"
	claim_line "$VF6" i-3 $old "$T/i-3.qmp"
	wait_long has "$TF/vfsentinel-reconcile.prom" \
	    'vfsentinel_claims_released_total 1'
	# The card of e3:00.5 is cycled; the GPU cannot be unbound.
	SRIOV_MODE=unbindlock vfrecover --proc-root "$T" --card "$PF" \
	    >"$T/recover" 2>>"$T/err" 7>&- || rc=$?
	[ "$rc" = 1 ]
	grep -qxF '{"card":"0000:e3:00.0","result":"failed","step":"disable"}' \
	    "$T/recover"
	scan_and_snap s1
	# s2: vfrecover resumes, cycles the card and clears e3:00.5.
	vfrecover --proc-root "$T" --card "$PF" >"$T/recover" 2>>"$T/err" 7>&-
	grep -qxF '{"card":"0000:e3:00.0","result":"recovered"}' "$T/recover"
	{
		check ok 0000:44:01.0 i-4 $old
		check ok 0000:44:01.0 i-4 $old
	} >&7
	counts 6 2 1 1
	scan_and_snap s2
	exec 7>&-
	kill -TERM "$RECONCILE"
	wait "$APPLY" "$RECONCILE"
}

# host2: a quiet host, one claim, its other VF drained, every service
# run once: its sentinel died after that scan, so its poller textfile
# only ages.
host2() {
	host_env h2
	mk_host "$SYSFS" 1 2
	claim_line 0000:40:01.0 i-20 "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	o vfstore drain --vf 0000:40:01.1 --reason "fan noise" >/dev/null \
	    2>>"$T/err"
	{
		check ok 0000:40:01.0 i-20 2026-08-20T15:00:00Z
		check ok 0000:40:01.0 i-20 2026-08-20T15:00:00Z
	} >"$T/checks"
	o vfstore apply --metrics-file "$TF/vfsentinel-sentinel.prom" \
	    <"$T/checks" >/dev/null 2>>"$T/err"
	o vfstore reconcile --grace 3600 --proc-root "$T" \
	    --metrics-file "$TF/vfsentinel-reconcile.prom" >/dev/null 2>>"$T/err"
	scan_and_snap s0
}

# series: the input series of both hosts, $BATS_FILE_TMPDIR/series.json.
series() {
	local f=$BATS_FILE_TMPDIR
	python3 "$VFS_ROOT/t/lib/prom2series.py" \
	    --labels "instance=$H1,job=node" \
	    "$f/h1/snap/s0:5" "$f/h1/snap/s1:5" "$f/h1/snap/s2:5" \
	    --labels "instance=$H2,job=node" "$f/h2/snap/s0:15" >"$f/series.json"
}

setup_file() {
	host1
	host2
	# Without python3 the tests that need the series skip.
	if command -v python3 >/dev/null; then
		series
	fi
}

# teardown_file: the story's vfstore apply and reconcile, should
# setup_file have failed half-way.
teardown_file() {
	local p
	for p in $(cat "$BATS_FILE_TMPDIR/pids" 2>/dev/null); do
		kill -KILL "$p" 2>/dev/null || true
	done
}

setup() {
	vfs_setup
}

# --- from the dashboard to promtool -----------------------------------------

# queries DASHBOARD: "TITLE|REFID<TAB>EXPR" of every panel target (rows'
# panels too) and of the template variables (label_values(M, L) is
# group by (L) (M), what Grafana asks Prometheus), one a line, newlines
# of an expression as spaces.
queries() {
	jq -r '
	    ([.panels[] | ., (.panels[]?)] | map(select(.targets))[] |
	     .title as $t | .targets[] | [$t + "|" + .refId, .expr]),
	    (.templating.list[] | select(.type == "query") | .name as $n |
	     (.query | if type == "object" then .query else . end) |
	     (capture("^label_values\\((?<m>.*), *(?<l>[a-z_]+)\\)$") //
	      error("variable \($n): not label_values(M, L)")) |
	     ["$" + $n + "|-", "group by (" + .l + ") (" + .m + ")"])
	    | map(gsub("\n"; " ")) | @tsv' "$1"
}

# expect_keys: "TITLE|REFID" of every line of EXPECT, one each.
expect_keys() {
	printf '%s\n' "$EXPECT" | awk -F'|' 'NF { print $1 "|" $2 }' | sort -u
}

# promtool_file DASHBOARD: the promtool unit test file (JSON) that checks
# DASHBOARD's queries against EXPECT on the fleet's series.
promtool_file() {
	queries "$1" >"$T/queries" || return 1
	printf '%s\n' "$EXPECT" | jq -R -s --rawfile q "$T/queries" \
	    --slurpfile s "$BATS_FILE_TMPDIR/series.json" '
	    ($q | split("\n") | map(select(length > 0) | split("\t") |
	     {(.[0]): .[1]}) | add) as $exprs |
	    [split("\n")[] | select(length > 0) | split("|") |
	     {key: (.[0] + "|" + .[1]), host: .[2], at: .[3],
	      sample: (.[4:] | join("|"))}] |
	    group_by([.key, .host, .at]) |
	    map(.[0] as $g |
	        ($exprs[$g.key] // error("no query \($g.key)")) as $e |
	        {expr: ($e | gsub("\\$host"; $g.host) | gsub("\\$job"; ".*") |
	                gsub("\\$__rate_interval"; "5m") |
	                gsub("\\$__range_s"; "900") |
	                gsub("\\$__range"; "15m")),
	         eval_time: $g.at,
	         exp_samples: map(.sample | capture("^(?<l>.*) (?<v>[^ ]+)$") |
	                          {labels: .l, value: (.v | tonumber)})}) |
	    if any(.[]; .expr | test("\\$")) then
	        error("a template variable is left in a query") else . end |
	    {rule_files: [], evaluation_interval: "1m",
	     tests: [{interval: "1m", input_series: $s[0],
	              promql_expr_test: .}]}'
}

@test "the dashboard is one JSON object Grafana imports as is: variables, datasource refs, unique ids" {
	run -0 jq -e 'type == "object" and .id == null and .uid == "vfsentinel"
	    and (.title | length > 0) and (.schemaVersion | type == "number")
	    and (.panels | length >= 10)' "$DASH"
	# No import-time input: the data source is a template variable, which
	# the UI import and file provisioning both resolve.
	run -0 jq -c '[(.__inputs // [] | length),
	    (.templating.list[] | select(.type == "datasource") |
	     [.name, .query])]' "$DASH"
	assert_output '[0,["datasource","prometheus"]]'
	run -0 jq -r '.templating.list[] | select(.type == "query") |
	    [.name, .includeAll, .multi, .allValue, .definition] | @tsv' "$DASH"
	assert_output "$(printf '%s\t%s\t%s\t%s\t%s\n' \
	    job true true '.*' 'label_values(vfsentinel_build_info, job)' \
	    host true true '.*' 'label_values(vfsentinel_build_info{job=~"$job"}, instance)')"
	# Every panel and target names the variable data source; ids and
	# titles are unique.
	run -0 jq -r '[.panels[] | ., (.panels[]?)] as $p |
	    ($p | map(select(.targets)) | map(.datasource, .targets[].datasource)
	     | unique | map(tojson)[]),
	    ($p | length == ($p | map(.id) | unique | length)),
	    ($p | length == ($p | map(.title) | unique | length))' "$DASH"
	assert_output '{"type":"prometheus","uid":"${datasource}"}
true
true'
}

@test "the provisioning example loads the directory the packages install the dashboard into" {
	run -0 sed -n 's/^ *path: //p' "$PROV"
	assert_output /usr/share/vfsentinel/grafana
	run -0 grep -c '^ *type: file$' "$PROV"
	assert_output 1
	grep -qx "usr/share/vfsentinel/grafana/vfsentinel.json" \
	    "$VFS_ROOT/debian/vfsentinel.install"
	grep -q -- '-t .*(PREFIX)/share/vfsentinel/grafana/ integrations/grafana/\*$' \
	    "$VFS_ROOT/Makefile"
}

@test "every series a panel selects is filtered by the job and host variables" {
	run -0 jq -r '[.panels[] | ., (.panels[]?)] | map(select(.targets))[] |
	    .title as $t | .targets[].expr |
	    [scan("(?:hypeman|vfsentinel)_[a-z_]+(?:\\{[^}]*\\})?")][] |
	    select(test("\\{job=~\"\\$job\",instance=~\"\\$host\"[,}]") | not) |
	    "\($t): \(.)"' "$DASH"
	assert_output ''
	# The check finds an unfiltered selector.
	run -0 jq -r '[.panels[] | ., (.panels[]?)] | map(select(.targets))[] |
	    .targets[].expr | sub(",instance=~\"\\$host\""; "") |
	    [scan("(?:hypeman|vfsentinel)_[a-z_]+(?:\\{[^}]*\\})?")][] |
	    select(test("\\{job=~\"\\$job\",instance=~\"\\$host\"[,}]") | not)' \
	    "$DASH"
	refute_output ''
}

@test "every panel query and template variable has expected values here, and only those" {
	run -0 queries "$DASH"
	assert_equal "$(cut -f1 <<<"$output" | sort -u)" "$(expect_keys)"
	# Every panel has a query (a panel without one answers nothing).
	run -0 jq -r '[.panels[] | ., (.panels[]?)][] |
	    select(.type != "row" and ((.targets // []) | length) == 0) | .title' \
	    "$DASH"
	assert_output ''
}

@test "every metric the dashboard names is one the programs write" {
	local name
	cat "$BATS_FILE_TMPDIR"/h[12]/snap/*/*.prom >"$T/all.prom"
	for name in $(grep -oE '(hypeman|vfsentinel)_[a-z_]+' "$DASH" | sort -u); do
		grep -q "^$name[{ ]" "$T/all.prom" || fail "no program writes $name"
	done
}

@test "the state table shows every state resources-report writes per card" {
	local written shown
	written=$(cat "$BATS_FILE_TMPDIR"/h[12]/snap/*/vfsentinel-resources.prom |
	    sed -n 's/^vfsentinel_card_vfs{.*state="\([a-z_]*\)".*/\1/p' | sort -u)
	[ "$(wc -w <<<"$written")" -ge 6 ] || fail "states written: $written"
	shown=$(jq -r '.panels[] | select(.title == "VFs per card by state") |
	    .targets[].expr | capture("state=~\\\"(?<s>[a-z_|]+)\\\"").s' "$DASH" |
	    tr '|' '\n' | sort -u)
	assert_equal "$shown" "$written"
	run -0 jq -r '.panels[] | select(.title == "VFs per card by state") |
	    .description' "$DASH"
	for s in $written; do
		assert_output --partial "$s"
	done
}

@test "every panel answers as expected on the series the programs wrote (promtool test rules)" {
	need_tool promtool python3
	promtool_file "$DASH" >"$T/grafana.json"
	run -0 "$VFS_TOOLS/promtool" test rules "$T/grafana.json"
	refute_output --partial FAILED
	# Every line of EXPECT was asked.
	assert_equal "$(jq '[.tests[].promql_expr_test[].exp_samples[]] | length' \
	    "$T/grafana.json")" "$(printf '%s\n' "$EXPECT" | grep -c '|')"
}

@test "a query naming a series, a label or a label value the programs do not write fails the check" {
	local bad
	need_tool promtool python3
	for bad in 's/vfsentinel_vf_failures{/vfsentinel_vf_failure{/' \
	    's/(instance, result)/(instance, outcome)/' \
	    's/kind=~\\"allocatable|/kind=~\\"free|/' \
	    's/vfsentinel_recovery_unfinished{/vfsentinel_recovery_in_progress{/' \
	    's/(hypeman_instances_vgpu_quarantined_vfs{job=~\\"$job\\",instance=/(hypeman_instances_vgpu_quarantined_vfs{job=~\\"$job\\",host=/'; do
		sed "$bad" "$DASH" >"$T/bad.json"
		run ! cmp -s "$DASH" "$T/bad.json"
		promtool_file "$T/bad.json" >"$T/bad-test.json"
		run ! "$VFS_TOOLS/promtool" test rules "$T/bad-test.json"
		assert_output --partial FAILED
	done
}

@test "prom2series refuses a timestamp gauge that is not a recent time" {
	need_tool python3
	# (A recent one becomes its snapshot's first minute: the last scan
	# ages of EXPECT check that.)
	mkdir -p "$T/s"
	echo 'vfsentinel_sentinel_last_scan_timestamp_seconds 1000' >"$T/s/a.prom"
	run -1 python3 "$VFS_ROOT/t/lib/prom2series.py" "$T/s:1"
	assert_output --partial 'is not a time just before the file was written'
}
