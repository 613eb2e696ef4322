#!/usr/bin/env bats
# Metrics textfiles (SPEC.md 4.2 apply --metrics-file, 4.5 --output, 5):
# node_exporter's textfile collector reads them with no lock, so with two
# writers at once every version a reader sees must be whole, and what a
# killed writer left behind is removed by the next writer.
# t/lib/textfile-race.c is the racing writer and the reader.

load helpers
load lib/placement

setup() {
	vfs_setup
	TF=$T/tf
	F=$TF/vfsentinel-test.prom
	mkdir -p "$TF" "$T/seen"
	PIDS=
}

teardown() {
	kill_pids
}

# need_tools: promtool and node_exporter, from tools/deps.sh (make deps).
need_tools() {
	need_tool promtool prometheus-node-exporter
}

# version NAME SAMPLES: a valid exposition with SAMPLES series.
version() {
	local i
	printf '# HELP vfs_test_writer Which writer wrote this version.\n'
	printf '# TYPE vfs_test_writer gauge\n'
	for ((i = 0; i < $2; i++)); do
		printf 'vfs_test_writer{writer="%s",n="%d"} %d\n' "$1" "$i" "$i"
	done
}

# start_reader: the reader in the background, keeping every distinct
# content of $F in $T/seen.
start_reader() {
	textfile-race read "$F" "$T/seen" "$T/stop" >"$T/reads" 3>&- &
	READER=$!
	PIDS="$PIDS $READER"
}

# stop_reader: ends the reader and prints its counts; checks that it
# read, and that the file never vanished once it existed.
stop_reader() {
	touch "$T/stop"
	wait "$READER"
	cat "$T/reads" >&2
	read -r _ reads _ _ _ gone _ distinct <"$T/reads"
	[ "$reads" -ge 100 ]
	[ "$gone" -eq 0 ]
	[ "$distinct" -ge 1 ]
}

# check_seen EXPECTED...: every version seen is one of EXPECTED (byte
# for byte) and passes promtool; all of them at once pass a real
# node_exporter scrape of a directory holding each as a .prom file.
check_seen() {
	local v e ok bad=0 n=0
	mkdir -p "$T/ne"
	for v in "$T"/seen/v-*; do
		ok=
		for e in "$@"; do
			cmp -s "$v" "$e" && ok=1
		done
		if [ -z "$ok" ] || ! "$VFS_TOOLS/promtool" check metrics <"$v" \
		    >/dev/null 2>&1; then
			echo "# bad read ($(wc -c <"$v") bytes): $(head -c 120 "$v" | od -c | head -3)" >&2
			bad=$((bad + 1))
		fi
		n=$((n + 1))
		cp "$v" "$T/ne/$n.prom"
	done
	[ "$bad" -eq 0 ]
	[ "$n" -le "$#" ]
}

@test "two writers of different versions at once: no failed write, every read whole" {
	need_tools
	version a 3 >"$T/a"
	version b 400 >"$T/b"
	start_reader
	textfile-race write "$F" "$T/a" 3 >"$T/wa" 3>&- &
	wa=$!
	textfile-race write "$F" "$T/b" 3 >"$T/wb" 3>&- &
	wb=$!
	PIDS="$PIDS $wa $wb"
	rc=0
	wait "$wa" || rc=$?
	wait "$wb" || rc=$?
	cat "$T/wa" "$T/wb" >&2
	stop_reader
	check_seen "$T/a" "$T/b"
	assert_equal "$rc" 0
	[ "$(ls -A "$TF")" = vfsentinel-test.prom ]
	[ "$(stat -c %a "$F")" = 644 ]
}

@test "two resources-report --output loops at once: node_exporter reads every version" {
	need_tools
	mk_card "$SYSFS" 0000:e3:00.0
	mk_vf "$SYSFS" 0000:e3:00.0 0000:e3:00.4
	mk_vf "$SYSFS" 0000:e3:00.0 0000:e3:00.5 1160
	resources-report --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --format prometheus >"$T/expected"
	start_reader
	for w in 1 2; do
		(
			end=$((SECONDS + 4))
			while [ "$SECONDS" -lt "$end" ]; do
				resources-report --sysfs-root "$SYSFS" \
				    --data-dir "$DATA" --format prometheus \
				    --output "$F" || exit 1
			done
		) 2>"$T/w$w.err" 3>&- &
		eval "w$w=\$!"
		PIDS="$PIDS $!"
	done
	rc=0
	wait "$w1" || rc=$?
	wait "$w2" || rc=$?
	stop_reader
	cat "$T"/w?.err >&2
	assert_equal "$rc" 0
	check_seen "$T/expected"
	run -0 ne_scrape "$T/ne"
	assert_line 'node_textfile_scrape_error 0'
	[ "$(ls -A "$TF")" = vfsentinel-test.prom ]
}

@test "the next writer removes what a killed writer left, never a live writer's file" {
	version a 3 >"$T/a"
	printf 'half a vers' >"$F.tmp.Ab12Cd"
	printf 'old style' >"$F.tmp"
	printf 'not ours' >"$F.tmpfoo"
	printf 'not ours' >"$TF/other.prom.tmp.Zz99Yy"
	printf 'live' >"$F.tmp.Live00"
	# A live writer holds its temporary file locked until its rename.
	(
		exec 9>>"$F.tmp.Live00"
		flock -x 9
		: >"$T/held"
		exec sleep 30
	) 3>&- &
	holder=$!
	PIDS="$PIDS $holder"
	wait_for test -e "$T/held"
	run -0 textfile-race write "$F" "$T/a" 0
	run -0 cat "$F"
	assert_output "$(cat "$T/a")"
	run -0 ls -A "$TF"
	assert_output "other.prom.tmp.Zz99Yy
vfsentinel-test.prom
vfsentinel-test.prom.tmp.Live00
vfsentinel-test.prom.tmpfoo"
	kill "$holder"
	wait "$holder" || true
	run -0 resources-report --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --format prometheus --output "$F"
	[ ! -e "$F.tmp.Live00" ]
}

@test "a killed writer's leftover is gone after the next resources-report and apply" {
	printf 'half' >"$F.tmp.Kill01"
	run -0 resources-report --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --format prometheus --output "$F"
	[ ! -e "$F.tmp.Kill01" ]
	printf 'half' >"$F.tmp.Kill02"
	run -0 --separate-stderr vfstore --data-dir "$DATA" apply \
	    --metrics-file "$F" </dev/null
	[ ! -e "$F.tmp.Kill02" ]
	[ "$(ls -A "$TF")" = vfsentinel-test.prom ]
}

@test "a failed textfile write keeps the old file and leaves no temporary file" {
	run -0 resources-report --sysfs-root "$SYSFS" --data-dir "$DATA" \
	    --format prometheus --output "$F"
	old=$(sha "$F")
	mk_card "$SYSFS" 0000:e3:00.0
	mk_vf "$SYSFS" 0000:e3:00.0 0000:e3:00.4
	for f in FAIL_write FAIL_fsync FAIL_rename; do
		echo "# $f" >&2
		run -74 --separate-stderr env LD_PRELOAD="$(fault_env)" \
		    "$f=1" FAIL_MATCH=vfsentinel-test resources-report \
		    --sysfs-root "$SYSFS" --data-dir "$DATA" \
		    --format prometheus --output "$F"
		[ "$(sha "$F")" = "$old" ]
		[ "$(ls -A "$TF")" = vfsentinel-test.prom ]
	done
}
