# placement.bash - helpers for the vfpick and resources-report tests
# (load lib/placement after helpers). They write the health store and the
# claims ledger directly, with jq, under an exclusive flock on the store
# lock, as any writer must (SPEC.md 4.1).
# The jq filters and the bash -c script are in single quotes on purpose:
# their $names are jq's and the inner shell's.
# shellcheck disable=SC2016

P12='NVIDIA L40S-12Q'
# shellcheck disable=SC2034 # for the tests that load this file
P24='NVIDIA L40S-24Q'


# pick ARGS...: vfpick on the test's sysfs tree and data dir.
pick() {
	vfpick --sysfs-root "$SYSFS" --data-dir "$DATA" "$@"
}

# report ARGS...: resources-report on the test's sysfs tree and data dir.
report() {
	resources-report --sysfs-root "$SYSFS" --data-dir "$DATA" "$@"
}

# _store_edit FILE KEY JQ-FILTER [JQ ARGS...]: applies the filter to FILE
# ({"version":1,KEY:[]} when missing) under the store lock.
_store_edit() {
	local file=$1 key=$2 filter=$3
	shift 3
	mkdir -p "$DATA/gpu"
	flock "$DATA/gpu/lock" bash -c '
		f=$1 key=$2 filter=$3; shift 3
		[ -e "$f" ] || printf "{\"version\":1,\"%s\":[]}" "$key" >"$f"
		jq --indent 2 "$@" "$filter" "$f" >"$f.edit" && mv "$f.edit" "$f"
	' _ "$file" "$key" "$filter" "$@"
}

# quarantine VF...: operator-style quarantine records (no failures).
quarantine() {
	local vf
	for vf in "$@"; do
		_store_edit "$DATA/gpu/vf-health.json" records \
		    '.records = ([.records[] | select(.vf_address != $vf)] +
		    [{vf_address: $vf, quarantined_at: "2026-08-20T16:00:29.5Z"}]
		    | sort_by(.vf_address))' --arg vf "$vf"
	done
}

# drain_vf VF...: drains as vfstore drain writes them (vf-drain.json).
drain_vf() {
	local vf
	for vf in "$@"; do
		_store_edit "$DATA/gpu/vf-drain.json" drains \
		    '.drains = ([.drains[] | select(.vf_address != $vf)] +
		    [{vf_address: $vf, drained_at: "2026-08-20T16:00:30Z",
		    reason: "test"}] | sort_by(.vf_address))' --arg vf "$vf"
	done
}

# record_failures VF N: a record with N failures of distinct assignments
# and no quarantined_at (the threshold decides on load). (Never name a
# helper fail: that is bats-support's, which every assertion calls.)
record_failures() {
	_store_edit "$DATA/gpu/vf-health.json" records \
	    '.records = ([.records[] | select(.vf_address != $vf)] +
	    [{vf_address: $vf, failures: [range($n | tonumber) |
	    {instance_id: "i-old-\(.)", assigned_at: "2026-08-20T15:00:0\(.)Z",
	    reported_at: "2026-08-20T15:00:31Z"}]}] | sort_by(.vf_address))' \
	    --arg vf "$1" --arg n "$2"
}

# claim VF INSTANCE [PROFILE [TYPE_ID]]: a ledger entry as vfpick writes it.
claim() {
	_store_edit "$DATA/gpu/vf-claims.json" claims \
	    '.claims = (.claims + [{vf_address: $vf, instance_id: $id,
	    claimed_at: "2026-08-20T15:00:00Z", profile: $p, type_id: $t}]
	    | sort_by(.vf_address))' \
	    --arg vf "$1" --arg id "$2" --arg p "${3:-$P12}" --arg t "${4:-1160}"
}

# vfdir VF: the VF's sysfs directory.
vfdir() {
	printf '%s/sys/bus/pci/devices/%s' "$SYSFS" "$1"
}

# current VF: its nvidia/current_vgpu_type.
current() {
	cat "$(vfdir "$1")/nvidia/current_vgpu_type"
}

# picks N ARGS...: the VF addresses of N dry runs, one per line.
picks() {
	local n=$1 i line
	shift
	for ((i = 0; i < n; i++)); do
		line=$(pick "$@" 2>/dev/null) || continue
		# (vfpick's one compact line: its address without a jq a pick)
		[[ $line =~ \"vf_address\":\"([^\"]*)\" ]] &&
			echo "${BASH_REMATCH[1]}"
	done
}

# _http_get PORT PATH: the body of an HTTP/1.0 GET on 127.0.0.1 (bash's
# /dev/tcp, so the tests need no HTTP client).
_http_get() {
	local resp
	exec 5<>"/dev/tcp/127.0.0.1/$1" || return 1
	printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&5
	resp=$(cat <&5)
	exec 5>&-
	[[ "$resp" == "HTTP/1.0 200"* || "$resp" == "HTTP/1.1 200"* ]] || return 1
	printf '%s\n' "${resp#*$'\r\n\r\n'}"
}

# ne_scrape DIR: runs the real node_exporter textfile collector on DIR
# (127.0.0.1, a port of its own: ne_start) and prints one scrape of
# /metrics.
ne_scrape() {
	local rc=0
	ne_start "$1" || return 1
	wait_long _http_get "$NE_PORT" /metrics >"$T/ne.out" || rc=1
	kill "$NE_PID" 2>/dev/null
	wait "$NE_PID" 2>/dev/null || true
	[ "$rc" = 0 ] || { cat "$T/ne.log" >&2; return 1; }
	cat "$T/ne.out"
}

# dup_series FILE: prints every sample series (name and labels) that
# appears more than once in a Prometheus text file.
dup_series() {
	grep -v '^#' "$1" | sed 's/ [^ ]*$//' | sort | uniq -d
}

# faulty VAR=VALUE... PROG ARGS...: runs PROG under the fault-injection
# shim. The preload goes to PROG alone (through env's exec), never to
# the shell's helpers: in a sanitizer run it carries libasan, which
# would make every unsanitized helper report leaks.
faulty() {
	env LD_PRELOAD="$(fault_env)" "$@"
}
