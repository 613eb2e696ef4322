#!/bin/bash
# openstack.sh - placement-sync (SPEC 8.4) against the real OpenStack
# Placement (python3-placement, noauth2, sqlite) in a private network
# namespace: one compute node with 64 per-VF providers (Nova's mdev path,
# t/lib/nova-tree.py), 8 of the VFs quarantined. Figures:
#   - quarantine to excluded: `vfstore quarantine --vf` under the running
#     service (interval 60 s: inotify wakes it) until the VF's allocation
#     is in Placement, median (worst) of ROUNDS; target <= 2 s;
#   - requests per idle cycle, from the service's "cycle done" log line;
#     target 2 + E + P = 10 (E = 8, P = 0);
#   - one cycle's time, idle and the first (16 writes), from `--once`'s
#     "cycle done" line, against the same number of plain GETs to the
#     same Placement from one Python process (urllib), in the same run.
# Needs root (unshare -n) and make deps' python3-placement.
# Prints: "figure: VALUE (ratio X against REFERENCE ...; target ...)".
set -eu
# shellcheck source=t/bench/lib.bash
. t/bench/lib.bash

ROUNDS=${ROUNDS:-10}
if [ "$(id -u)" != 0 ] || ! command -v placement-api >/dev/null ||
    ! /usr/bin/python3 -c 'import keystoneauth1, oslo_config' 2>/dev/null; then
	echo "openstack: skipped (needs root and python3-placement, python3-keystoneauth1, python3-oslo.config: make deps)"
	exit 0
fi
bench_workspace openstack
HELPER=$PWD/t/lib/nova-tree.py
SYSFS=$W/sysfs
DATA=$W/data
NODE=bench1
DEV=$SYSFS/sys/bus/pci/devices
export PLACEMENT_URL=http://127.0.0.1:8778

# Placement, in its own network namespace.
mkdir -p "$W/api"
printf '[api]\nauth_strategy = noauth2\n[placement_database]\nconnection = sqlite:///%s/placement.sqlite\nsync_on_startup = true\n' \
    "$W/api" >"$W/api/placement.conf"
placement-manage --config-file "$W/api/placement.conf" db sync >/dev/null 2>&1
OS_PLACEMENT_CONFIG_DIR=$W/api unshare -n sh -c \
    'ip link set lo up && exec placement-api --host 127.0.0.1 --port 8778' \
    >"$W/api.log" 2>&1 &
PLP=$!
PIDS="$PLP"
ns() {
	nsenter -t "$PLP" -n -- "$@"
}
for ((i = 0; i < 100; i++)); do
	ns /usr/bin/python3 "$HELPER" request GET / 2>/dev/null |
	    grep -q '"status":200' && break
	sleep 0.1
done

# The host: one card of 64 VFs (as t/helpers.bash's mk_vf makes them),
# their 64 providers as Nova's libvirt driver makes them, 8 quarantined.
PF=0000:41:00.0
mkdir -p "$DEV/$PF"
args=()
for ((n = 0; n < 64; n++)); do
	printf -v vf '0000:41:%02x.%d' $((n / 8 + 1)) $((n % 8))
	d=$DEV/$vf
	mkdir -p "$d/nvidia"
	ln -s "../$PF" "$d/physfn"
	echo 0 >"$d/nvidia/current_vgpu_type"
	printf '%s\n' 'ID    : vGPU Name' '1160  : NVIDIA L40S-12Q' \
	    >"$d/nvidia/creatable_vgpu_types"
	args+=(--vf "$vf")
	echo "$vf" >>"$W/vfs"
done
ns /usr/bin/python3 "$HELPER" tree "$NODE" "${args[@]}"
printf 'data_dir = %s\nsysfs_root = %s\nmetrics.textfile_dir = %s\n' \
    "$DATA" "$SYSFS" "$W" >"$W/vfsentinel.conf"
export VFSENTINEL_CONF=$W/vfsentinel.conf
vfstore init >/dev/null 2>&1
for vf in $(head -n 8 "$W/vfs"); do
	vfstore quarantine --vf "$vf" --reason bench >/dev/null 2>&1
done
printf '[placement]\nauth_type = admin_token\nendpoint = %s\ntoken = admin\n[vfsentinel]\ncompute_node = %s\ninterval = 60\n' \
    "$PLACEMENT_URL" "$NODE" >"$W/placement.conf"

# One cycle, the first (16 writes), then idle, each by --once.
cycle() {
	ns placement-sync --config-file "$W/placement.conf" --once \
	    2>&1 >/dev/null | jq -c 'select(.msg == "cycle done") | [.seconds, .requests, .changes]'
}
first=$(cycle)
idle=$(cycle)
# The reference: as many plain GETs as the idle cycle made, from one
# process (the best of 5 rounds).
n=$(jq '.[1]' <<<"$idle")
ref=$(ns /usr/bin/python3 - "$n" <<'EOF'
import sys, time, urllib.request
n = int(sys.argv[1])
best = None
for _ in range(5):
    t = time.monotonic()
    for _ in range(n):
        r = urllib.request.Request("http://127.0.0.1:8778/resource_providers?name=bench1")
        r.add_header("X-Auth-Token", "admin")
        r.add_header("OpenStack-API-Version", "placement 1.39")
        urllib.request.urlopen(r).read()
    d = time.monotonic() - t
    best = d if best is None or d < best else best
print("%.4f" % best)
EOF
)

# The service: requests per idle cycle and quarantine to excluded.
ns placement-sync --config-file "$W/placement.conf" 2>"$W/sync.log" &
SP=$!
PIDS="$PIDS $SP"
for ((i = 0; i < 100; i++)); do
	grep -qs '"cycle done"' "$W/sync.log" && break
	sleep 0.05
done
# An idle cycle: a store rewrite with nothing changed wakes it.
vfstore quarantine --vf "$(head -n 1 "$W/vfs")" --reason bench >/dev/null 2>&1 || :
touch "$DATA/gpu/vf-health.json"
for ((i = 0; i < 100; i++)); do
	[ "$(grep -c '"cycle done"' "$W/sync.log")" -ge 2 ] && break
	sleep 0.05
done
idle_req=$(jq -s 'map(select(.msg == "cycle done")) | .[1].requests' "$W/sync.log")

consumer() {
	/usr/bin/python3 -c 'import sys, uuid; print(uuid.uuid5(uuid.NAMESPACE_URL, "vfsentinel:%s:%s" % (sys.argv[1], sys.argv[2])))' "$NODE" "$1"
}
allocated() {	# CONSUMER: 0 if it holds an allocation
	ns /usr/bin/python3 "$HELPER" request GET "/allocations/$1" |
	    jq -e '.body.allocations | length > 0' >/dev/null
}
times=()
while IFS= read -r vf; do
	c=$(consumer "$vf")
	t0=$(date +%s%N)
	vfstore quarantine --vf "$vf" --reason bench >/dev/null 2>&1
	until allocated "$c"; do
		(( $(date +%s%N) - t0 < 10000000000 )) || break
		sleep 0.02
	done
	times+=($((($(date +%s%N) - t0) / 1000000)))
done < <(sed -n "9,$((8 + ROUNDS))p" "$W/vfs")
kill "$SP" 2>/dev/null || :

sorted=$(printf '%s\n' "${times[@]}" | sort -n)
med=$(sed -n "$(((ROUNDS + 1) / 2))p" <<<"$sorted")
worst=$(tail -n 1 <<<"$sorted")
awk -v m="$med" -v w="$worst" -v r="$ROUNDS" 'BEGIN {
	printf "quarantine to excluded in Placement, median (worst) of %d: %.2f s (%.2f s) (ratio %.2f against the target 2 s; target <= 2 s)\n", r, m / 1000, w / 1000, m / 2000 }'
echo "requests per idle cycle, 64 VFs, 8 excluded (E = 8, P = 0): $idle_req (ratio $(awk -v n="$idle_req" 'BEGIN { printf "%.2f", n / 10 }') against 2 + E + P = 10; target <= 1)"
awk -v i="$idle" -v f="$first" -v ref="$ref" 'BEGIN {
	split(substr(i, 2), a, ","); split(substr(f, 2), b, ",")
	per = ref / a[2]
	printf "one idle cycle (--once), 64 VFs, 8 excluded: %.1f ms, %d requests (ratio %.2f against %d plain GETs from one process, %.1f ms)\n", a[1] * 1000, a[2], a[1] / ref, a[2], ref * 1000
	printf "the first cycle (--once: 8 allocations, 8 traits): %.1f ms, %d requests, %d changes (ratio %.2f against %d plain GETs, %.1f ms)\n", b[1] * 1000, b[2], b[3], b[1] / (per * b[2]), b[2], per * b[2] * 1000 }'
