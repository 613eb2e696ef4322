#!/bin/bash
# placement.sh - how long vfpick (dry run) and resources-report take on a
# large host: 8 cards x 64 VFs, 512 health records, 256 claims. Each is
# compared with the floor of starting a program and loading the same
# stores, `vfstore check` on the same data dir (or `jq . vf-health.json`
# when vfstore is not built), measured interleaved in the same run.
# Needs build/bench/placement-cputime (make test-aids).
# Prints: "figure: VALUE (ratio X against REFERENCE ...; target ...)".
set -eu

RUNS=${RUNS:-31}
W=$(mktemp -d)
[ -z "${KEEP:-}" ] || echo "bench: keeping $W" >&2
trap '[ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT
SYSFS=$W/sysfs
DATA=$W/data
DEV=$SYSFS/sys/bus/pci/devices
# A regular file: a configuration that is not one is refused (SPEC 6.3).
export VFSENTINEL_CONF=$PWD/t/bench/empty.conf

# mk_fn DIR: the identity files libpci reads for a card's name.
mk_fn() {
	mkdir -p "$1"
	printf '0x10de\n' >"$1/vendor"
	printf '0x26b9\n' >"$1/device"
	printf '0x030200\n' >"$1/class"
}

# mk_cards: 8 cards of 64 VFs, every VF offering 4 profiles.
mk_cards() {
	local c n bus pf vf d
	for ((c = 0; c < 8; c++)); do
		bus=$(printf '%02x' $((0x40 + c * 4)))
		pf=0000:$bus:00.0
		mk_fn "$DEV/$pf"
		for ((n = 0; n < 64; n++)); do
			printf -v vf '0000:%s:%02x.%d' "$bus" $((n / 8 + 1)) $((n % 8))
			d=$DEV/$vf
			mk_fn "$d"
			mkdir -p "$d/nvidia"
			ln -s "../$pf" "$d/physfn"
			echo 0 >"$d/nvidia/current_vgpu_type"
			printf '%s\n' 'ID    : vGPU Name' '1155  : NVIDIA L40S-1B' \
			    '1158  : NVIDIA L40S-4Q' '1160  : NVIDIA L40S-12Q' \
			    '1161  : NVIDIA L40S-24Q' >"$d/nvidia/creatable_vgpu_types"
			echo "$vf" >>"$W/vfs"
		done
	done
}

# mk_stores: a health record for every VF (one in eight quarantined, the
# rest one failure below the threshold) and claims on every other VF.
mk_stores() {
	mkdir -p "$DATA/gpu"
	jq -R . "$W/vfs" | jq -s --indent 2 '{version: 1, records: [
	    to_entries[] | if .key % 8 == 0 then
	    {vf_address: .value, quarantined_at: "2026-08-20T16:00:29.5Z"}
	    else {vf_address: .value, failures: [{instance_id: "i-\(.key)",
	    assigned_at: "2026-08-20T15:00:00Z",
	    reported_at: "2026-08-20T15:00:31.123456789Z"}]} end]}' \
	    >"$DATA/gpu/vf-health.json"
	jq -R . "$W/vfs" | jq -s --indent 2 '{version: 1, claims: [
	    to_entries[] | select(.key % 2 == 1) | {vf_address: .value,
	    instance_id: "vm-\(.key)", claimed_at: "2026-08-20T15:00:00Z",
	    profile: "NVIDIA L40S-12Q", type_id: "1160",
	    vsock: "vsock:\(.key + 3):2222"}]}' >"$DATA/gpu/vf-claims.json"
}

# ms CMD...: the CPU time (user + system, from wait4) of one run, in
# hundredths of a millisecond; CPU time does not grow with the load other
# jobs put on the machine. The command must succeed.
ms() {
	local us
	us=$(placement-cputime "$@") || { echo "bench: failed: $*" >&2; exit 1; }
	echo $((us / 10))
}

median() {
	sort -n | awk '{ v[NR] = $1 } END { printf "%.2f", v[int((NR + 1) / 2)] / 100 }'
}

mk_cards
mk_stores
if command -v vfstore >/dev/null 2>&1; then
	ref="vfstore check"
	ref_cmd=(vfstore --data-dir "$DATA" check)
else
	ref="jq . vf-health.json (vfstore not built)"
	ref_cmd=(jq . "$DATA/gpu/vf-health.json")
fi
pick_cmd=(vfpick --sysfs-root "$SYSFS" --data-dir "$DATA" --profile 'NVIDIA L40S-12Q')
json_cmd=(resources-report --sysfs-root "$SYSFS" --data-dir "$DATA")
prom_cmd=(resources-report --sysfs-root "$SYSFS" --data-dir "$DATA" --format prometheus)
for ((i = 0; i < 3; i++)); do	# warm the page cache
	ms "${ref_cmd[@]}" >/dev/null
	ms "${pick_cmd[@]}" >/dev/null
	ms "${json_cmd[@]}" >/dev/null
done
for ((i = 0; i < RUNS; i++)); do
	ms "${ref_cmd[@]}" >>"$W/t.ref"
	ms "${pick_cmd[@]}" >>"$W/t.pick"
	ms "${json_cmd[@]}" >>"$W/t.json"
	ms "${prom_cmd[@]}" >>"$W/t.prom"
done
r=$(median <"$W/t.ref")
for f in pick json prom; do
	v=$(median <"$W/t.$f")
	case $f in
	pick) name="vfpick dry run, median CPU time of $RUNS" ;;
	json) name="resources-report (JSON, libpci card names), median CPU time of $RUNS" ;;
	prom) name="resources-report --format prometheus, median CPU time of $RUNS" ;;
	esac
	printf '%s: %s ms (ratio %s against %s %s ms measured in the same run; target <= 3x)\n' \
	    "$name" "$v" "$(awk -v a="$v" -v b="$r" 'BEGIN { printf "%.2f", a / b }')" \
	    "$ref" "$r"
done
