#!/bin/bash
# vfstore-jq-report.bash - a failure report as an operator would script it
# without vfsentinel: flock the store, read it with jq, skip a duplicate
# assignment, otherwise append and rewrite the file. The reference for
# t/bench/vfstore.sh.
#	vfstore-jq-report.bash DATA_DIR VF INSTANCE ASSIGNED_AT
set -eu
dir=$1/gpu vf=$2 id=$3 at=$4
mkdir -p "$dir"
exec 9>"$dir/lock"
flock -x 9
f=$dir/vf-health.json
[ -e "$f" ] || printf '{"version":1,"records":[]}' >"$f"
if jq -e --arg vf "$vf" --arg id "$id" --arg at "$at" \
    '.records[] | select(.vf_address == $vf) | select(.quarantined_at or
    any(.failures[]?; .instance_id == $id and .assigned_at == $at))' \
    "$f" >/dev/null; then
	echo unchanged
	exit 0
fi
jq --indent 2 --arg vf "$vf" --arg id "$id" --arg at "$at" \
    --arg now "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)" '
    .records |= ((map(select(.vf_address != $vf)) +
    [((map(select(.vf_address == $vf)) | first) // {vf_address: $vf}) |
    .failures += [{instance_id: $id, assigned_at: $at, reported_at: $now}]])
    | sort_by(.vf_address))' "$f" >"$f.tmp"
sync "$f.tmp"
mv "$f.tmp" "$f"
echo recorded
