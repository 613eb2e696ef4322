#!/usr/bin/env bats
# 95-docs.bats - man pages, README, operations guide and the example
# configuration agree with the programs.

load helpers

PROGS="kmsg-watch gpu-probe vsock-answer sentinel-poll vfstore vfpick resources-report vfrecover libvirt-hook placement-sync"

# Keys and defaults of SPEC.md 2.4.
# Keys and defaults of SPEC.md 2.4 and 4.6 (an empty default: no value).
KEYS="data_dir=/var/lib/vfsentinel sysfs_root=/ gpu.vf_quarantine_threshold=2
sentinel.interval=5 sentinel.timeout=5 sentinel.concurrency=64
guest.vsock_port=2222 metrics.textfile_dir=/var/lib/vfsentinel/metrics
sentinel.framework_recheck=60 sentinel.console_kernel_lines=auto
sentinel.console_read_max=4194304 sentinel.privileged_dirs=
reconcile.grace=120
recovery.systemic_window=3600 recovery.systemic_fraction=0.5
recovery.quiesce_command= recovery.restore_command=
recovery.sriov_manage=/usr/lib/nvidia/sriov-manage recovery.verify_command=
recovery.step_timeout=120 recovery.settle_timeout=60
libvirt.qemu_state_dir=/var/lib/libvirt/qemu libvirt.deconfigure=true
libvirt.lock_timeout=10 libvirt.log_dir=/var/log/libvirt/qemu
suspect.window=600 suspect.on_unknown=false suspect.placement=auto
suspect.verify_interval=30 suspect.trust_ok=true
recovery.verify_domain_xml= recovery.verify_wait=90
recovery.verify_libvirt_uri=qemu:///system"

setup() {
	vfs_setup
	MAN=$VFS_ROOT/share/man/man1
}

# help_opts PROG: the long options named in PROG --help, one a line.
help_opts() {
	"$1" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u
}

# man_text PAGE: the rendered page as plain text.
man_text() {
	mandoc -Tascii "$1" | sed 's/.\x08//g'
}

@test "every program has a man page" {
	local p
	for p in $PROGS; do
		assert_file_exists "$MAN/$p.1"
	done
}

@test "every man page is clean under mandoc -Tlint -W warning" {
	need_tool mandoc
	local m n=0
	for m in "$MAN"/*.1; do
		run mandoc -Tlint -W warning "$m"
		[ "$status" -eq 0 ] || fail "$(basename "$m"): $output"
		n=$((n + 1))
	done
	[ "$n" -ge 7 ]
}

@test "every option of --help is documented in the man page" {
	need_tool mandoc
	local p o text errs=
	for p in $PROGS; do
		if [ ! -f "$MAN/$p.1" ]; then
			errs+="no $p.1; "
			continue
		fi
		text=$(man_text "$MAN/$p.1")
		for o in $(help_opts "$p"); do
			grep -qe "$o" <<<"$text" || errs+="$p.1 lacks $o; "
		done
	done
	[ -z "$errs" ] || fail "$errs"
}

@test "the SYNOPSIS names only options of the usage text" {
	need_tool mandoc
	local p o syn help errs=
	for p in $PROGS; do
		if [ ! -f "$MAN/$p.1" ]; then
			errs+="no $p.1; "
			continue
		fi
		syn=$(man_text "$MAN/$p.1" |
		    sed -n '/^SYNOPSIS/,/^DESCRIPTION/p')
		[ -n "$syn" ] || errs+="$p.1 has no SYNOPSIS; "
		help=$(help_opts "$p")
		for o in $(grep -o -- '--[a-z][a-z0-9-]*' <<<"$syn" | sort -u); do
			grep -qxe "$o" <<<"$help" ||
			    errs+="$p.1 SYNOPSIS has $o, --help does not; "
		done
	done
	[ -z "$errs" ] || fail "$errs"
}

@test "the man page names the program and its version line matches" {
	need_tool mandoc
	local p
	for p in $PROGS; do
		man_text "$MAN/$p.1" | grep -q "^NAME" || fail "$p.1: no NAME"
		run -0 "$p" --version
		assert_output "$p (vfsentinel) 0.1.0"
	done
}

@test "README names make demo and make check" {
	grep -q 'make demo' "$VFS_ROOT/README"
	grep -q 'make check' "$VFS_ROOT/README"
	grep -q 'apt-get' "$VFS_ROOT/README"
}

@test "etc/vfsentinel.conf documents every key with its default" {
	local kv v
	for kv in $KEYS; do
		v=${kv#*=}
		grep -qxF "#${kv%%=*} =${v:+ $v}" \
		    "$VFS_ROOT/etc/vfsentinel.conf" ||
		    fail "etc/vfsentinel.conf lacks '#${kv%%=*} = ${kv#*=}'"
	done
}

@test "etc/vfsentinel.conf names no key beyond SPEC 2.4" {
	local k
	for k in $(sed -n 's/^#\([a-z_.]*\) = .*/\1/p' \
	    "$VFS_ROOT/etc/vfsentinel.conf"); do
		grep -q "\(^\| \)$k=" <<<"$KEYS" || fail "unknown key $k"
	done
}

@test "the shipped configuration, uncommented, is accepted by the programs" {
	sed 's/^#\([a-z_.]* =\)/\1/' "$VFS_ROOT/etc/vfsentinel.conf" \
	    >"$T/all.conf"
	[ "$(grep -c '^[a-z_.]* =' "$T/all.conf")" -eq "$(wc -w <<<"$KEYS")" ]
	run -0 --separate-stderr vfstore -c "$T/all.conf" --data-dir "$DATA" check
	[ "$(jq -r .status <<<"$output")" = ok ]
	# And a typo in a key is refused, so the check above means something.
	sed 's/^sentinel.interval/sentinel.intreval/' "$T/all.conf" >"$T/bad.conf"
	run -78 --separate-stderr vfstore -c "$T/bad.conf" --data-dir "$DATA" check
}

@test "the operations guide covers every key, metric and runbook step" {
	local ops=$T/ops.md kv m
	# The guide is one page a task (operations.md lists them).
	cat "$VFS_ROOT"/share/doc/{operations,install,libvirt,detection,metrics,recovery,troubleshooting}.md \
	    >"$ops"
	for kv in $KEYS; do
		grep -q "\`${kv%%=*}\`" "$ops" || fail "key ${kv%%=*} undocumented"
	done
	for m in hypeman_instances_vgpu_sentinel_init_failures_total \
	    hypeman_instances_vgpu_sentinel_quarantines_total \
	    hypeman_instances_vgpu_sentinel_checks_total \
	    hypeman_instances_vgpu_quarantined_vfs \
	    hypeman_instances_vgpu_vf_health_store_unavailable \
	    hypeman_resources_gpu_slots hypeman_resources_gpu_profile_slots \
	    hypeman_resources_gpu_placement_disabled; do
		grep -q "$m" "$ops" || fail "metric $m undocumented"
	done
	grep -q 'systemctl stop nvidia-dcgm-exporter nvidia-dcgm nvidia-persistenced' "$ops"
	grep -q 'sriov-manage -d' "$ops"
	grep -q 'sriov-manage -e' "$ops"
	grep -q 'vfstore drain --card' "$ops"
	grep -q 'vfstore undrain --card' "$ops"
	grep -q 'vfstore clear --card' "$ops"
}

@test "the operations guide's metrics tables list every series the programs write, and why two prefixes" {
	local ops=$VFS_ROOT/share/doc/metrics.md m n=0
	# Every metric name in src/ (a name ending in _ is a prefix).
	for m in $(grep -rhoE '"(hypeman|vfsentinel)_[a-z_]*[a-z]"' \
	    "$VFS_ROOT/src" | tr -d '"' | sort -u); do
		n=$((n + 1))
		grep -q "^| \`$m[{\`]" "$ops" ||
		    fail "metric $m is in no metrics table row of metrics.md"
	done
	[ "$n" -ge 15 ] || fail "found only $n metric names in src/"
	grep -qi 'two prefixes' "$ops"
}

@test "operations.md and README link every page of the guide, and the packages install them" {
	local p
	for p in install libvirt detection metrics recovery troubleshooting suspects; do
		[ -f "$VFS_ROOT/share/doc/$p.md" ] || fail "no share/doc/$p.md"
		grep -q "($p.md)" "$VFS_ROOT/share/doc/operations.md" ||
		    fail "operations.md does not link $p.md"
		grep -q "share/doc/$p.md" "$VFS_ROOT/README" ||
		    fail "README does not name share/doc/$p.md"
		grep -qx "usr/share/doc/vfsentinel/$p.md" \
		    "$VFS_ROOT/debian/vfsentinel.install" ||
		    fail "debian/vfsentinel.install lacks $p.md"
	done
}

@test "the docs put systemd first: journalctl commands that skip systemd's own lines" {
	local f
	for f in "$VFS_ROOT"/share/doc/*.md "$VFS_ROOT/README"; do
		# A unit's journal holds systemd's lines too: a bare
		# journalctl -u ... | jq stops at the first of them.
		if grep -n 'journalctl -u [^|]*| *jq' "$f" |
		    grep -v -e '_TRANSPORT=stdout' -e 'fromjson?'; then
			fail "${f##*/}: a journalctl | jq that meets systemd's lines"
		fi
	done
	# The troubleshooting page names systemctl before sv in each section.
	run -0 awk '/^## / { s = $0; sys[s] = 0; sv[s] = 0 }
	    /systemctl|journalctl/ && !sv[s] { sys[s] = 1 }
	    /(^| )sv (status|up|down)/ && !sys[s] { print s; exit 1 }
	    /(^| )sv (status|up|down)/ { sv[s] = 1 }' \
	    "$VFS_ROOT/share/doc/troubleshooting.md"
}

@test "the docs list the five textfiles dpkg -r removes, as the prerm does" {
	local names
	names=$(sed -n 's/^\t\tfor p in \(.*\); do$/\1/p' \
	    "$VFS_ROOT/debian/vfsentinel.prerm")
	assert_equal "$names" "poller reconcile resources sentinel recovery"
	grep -qF 'vfsentinel-{poller,reconcile,resources,sentinel,recovery}.prom' \
	    "$VFS_ROOT/share/doc/install.md"
	for p in $names; do
		grep -q "^| \`vfsentinel-$p.prom\` |" "$VFS_ROOT/share/doc/metrics.md" ||
		    fail "metrics.md's textfile table lacks vfsentinel-$p.prom"
	done
}

@test "metrics.md names the minimum Grafana version of the dashboard's schemaVersion" {
	local v
	v=$(jq .schemaVersion "$VFS_ROOT/integrations/grafana/vfsentinel.json")
	# The Grafana that first writes that schemaVersion (its
	# DashboardMigrator.ts): 38 from 10.0, 39 from 10.3.
	case $v in
	38) v=10.0 ;; 39) v=10.3 ;;
	*) fail "unknown schemaVersion $v" ;;
	esac
	grep -q "Grafana $v or later" "$VFS_ROOT/share/doc/metrics.md"
}

@test "every link between the doc pages lands on an existing heading of the page it names" {
	run -0 python3 "$VFS_ROOT/t/lib/doc-links.py" "$VFS_ROOT"
	assert_output ''
	# The checker finds each kind of broken reference.
	mkdir -p "$T/r/share/doc"
	cp "$VFS_ROOT"/share/doc/*.md "$VFS_ROOT/share/doc/alerts.yml" \
	    "$T/r/share/doc/"
	printf '%s\n' '# README' 'See [the seal](share/doc/store.md#the-sael),' \
	    'and store.md, "The' 'sael".' >"$T/r/README"
	sed -i 's|troubleshooting.md#rpc-errors|troubleshooting.md#rpc-error|' \
	    "$T/r/share/doc/alerts.yml"
	run -1 python3 "$VFS_ROOT/t/lib/doc-links.py" "$T/r"
	assert_line 'README:2: share/doc/store.md#the-sael: no heading #the-sael in share/doc/store.md'
	assert_line 'README:3: store.md, "The sael": no such heading'
	assert_line --regexp '^share/doc/alerts.yml:[0-9]+: troubleshooting.md#rpc-error: no heading #rpc-error in share/doc/troubleshooting.md$'
	[ "${#lines[@]}" -eq 3 ]
}

@test "every alert of alerts.yml is in metrics.md's table and troubleshooting.md's, with its runbook" {
	local a sev url link row n=0 doc=$VFS_ROOT/share/doc
	run -0 awk '/^ *- alert: / { a = $3 } /^ *severity: / { s = $2 }
	    /^ *runbook_url: / { u = $2; gsub(/"/, "", u)
		sub(/.*\/share\/doc\//, "", u); print a, s, u }' "$doc/alerts.yml"
	[ "${#lines[@]}" -ge 17 ] || fail "found only ${#lines[@]} alerts"
	[ "${#lines[@]}" -eq "$(grep -c '^ *- alert: ' "$doc/alerts.yml")" ] ||
	    fail "an alert without a severity or runbook_url"
	for a in "${lines[@]}"; do
		read -r a sev url <<<"$a"
		n=$((n + 1))
		grep -q "^| \`$a\` | $sev |" "$doc/metrics.md" ||
		    fail "$a is in no row of metrics.md's alert table"
		# troubleshooting.md's table leads where the runbook_url does.
		link="($url)"
		[[ $url != troubleshooting.md#* ]] || link="(#${url#*#})"
		row=$(grep "^| \`$a\` | $sev |" "$doc/troubleshooting.md") ||
		    fail "$a is in no row of troubleshooting.md's table"
		[[ $row == *"$link"* ]] ||
		    fail "troubleshooting.md's $a row does not lead to $url"
	done
}

@test "operations.md's exit codes include every code of the man pages' EXIT STATUS" {
	local m c codes para
	codes=$(for m in "$MAN"/*.1; do
		awk '/^\.Sh EXIT STATUS/ { f = 1; next } /^\.Sh/ { f = 0 }
		    f && /^\.It [0-9]+/ { print $2 }' "$m"
	done | sort -un)
	[ "$(wc -w <<<"$codes")" -ge 8 ] || fail "found only: $codes"
	para=$(awk -v RS= '/Exit codes follow sysexits/' \
	    "$VFS_ROOT/share/doc/operations.md" | tr '\n' ' ')
	[ -n "$para" ] || fail "operations.md has no exit code list"
	for c in $codes; do
		[[ $para =~ [^0-9]$c\  ]] || fail "operations.md's exit codes lack $c"
	done
}

@test "after a configuration change the docs restart every unit, and no unit is said to crash-loop" {
	local f
	for f in "$VFS_ROOT"/share/doc/*.md "$VFS_ROOT/README"; do
		# A list of units goes stale as units are added: one left
		# out keeps the old configuration (or stays failed). One
		# unit alone is for a file only it reads (placement.conf).
		if tr '\n' ' ' <"$f" |
		    grep -o -E 'systemctl restart( +vfsentinel-[a-z]+){2,}'; then
			fail "${f##*/}: restarts a list of units; systemctl restart 'vfsentinel-*'"
		fi
	done
	grep -q "systemctl restart 'vfsentinel-\*'" "$VFS_ROOT/share/doc/troubleshooting.md"
	# A configuration error (78) leaves a unit failed and a runit
	# service down (RestartPreventExitStatus=78, the run scripts' sv
	# down): nothing restarts it every second.
	run grep -n -i -e 'crash-loop' -e 'restarts them every second' \
	    "$VFS_ROOT/share/doc/operations.md"
	assert_output ''
	grep -q 'RestartPreventExitStatus=78' "$VFS_ROOT/share/doc/operations.md"
}

@test "the docs show the version debian/changelog builds, and never call it an older one" {
	local v f
	v=$(sed -n '1s/^vfsentinel (\([^)]*\)).*/\1/p' "$VFS_ROOT/debian/changelog")
	[ -n "$v" ]
	run -0 sed -n 's|.*apt install \./vfsentinel\(-guest\)\{0,1\}_\([^_]*\)_.*|\2|p' \
	    "$VFS_ROOT/share/doc/install.md"
	[ "${#lines[@]}" -ge 2 ]
	for f in "${lines[@]}"; do
		[ "$f" = "$v" ] || fail "install.md shows $f; debian/changelog builds $v"
	done
	# "Version V instead made ...", "V's layout": the packages built now
	# are V, so an earlier layout is not named by it.
	run grep -nE "(${v//./\\.}'s|[Vv]ersion ${v//./\\.}|${v//./\\.} (made|left|wrote|instead))" \
	    "$VFS_ROOT"/share/doc/*.md "$VFS_ROOT/README" "$VFS_ROOT"/debian/*.post* \
	    "$VFS_ROOT"/debian/*.pre* "$VFS_ROOT"/t/deb/*.bats
	assert_output ''
}

@test "the threat model is security.md's alone; the other pages link to it" {
	local f
	for f in "$VFS_ROOT"/share/doc/*.md; do
		[ "${f##*/}" = security.md ] && continue
		if grep -n -i '^#.*threat model' "$f"; then
			fail "${f##*/} has a threat model section: security.md's alone"
		fi
	done
	grep -q -i '^# .*threat model' "$VFS_ROOT/share/doc/security.md"
	for f in operations guest; do
		grep -q '](security.md' "$VFS_ROOT/share/doc/$f.md" ||
		    fail "$f.md does not link security.md"
	done
}
