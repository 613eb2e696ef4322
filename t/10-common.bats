#!/usr/bin/env bats
# Conventions every program shares (SPEC.md 2.1-2.4): --help, --version,
# usage errors, configuration errors, JSON log lines.

load helpers

PROGS=${COMMON_PROGS:-"kmsg-watch gpu-probe vsock-answer sentinel-poll vfstore vfpick resources-report vfrecover libvirt-hook placement-sync"}

# Every program but libvirt-hook refuses its configuration's errors
# with 78 (SPEC 2.4); the hook refuses only the start of a domain with
# one of its VFs, and exits 0 elsewhere (8.1): t/57-hook-noharm.bats.
CONF_PROGS=$(tr ' ' '\n' <<<"$PROGS" | grep -vx libvirt-hook | tr '\n' ' ')

setup() {
	vfs_setup
}

# args PROG: the smallest argument list that gets PROG past option
# parsing to the point where it loads its configuration.
args() {
	case $1 in
	vfstore) echo check ;;
	vfpick) echo --profile=L40S-12Q ;;
	vfrecover) echo --status ;;
	libvirt-hook) echo -- vm-a prepare begin - ;;
	*) ;;
	esac
}

@test "every program prints its version as PROG (vfsentinel) X.Y.Z" {
	for p in $PROGS; do
		echo "# $p" >&2
		run -0 --separate-stderr "$p" --version
		assert_output --regexp "^$p \\(vfsentinel\\) [0-9]+\\.[0-9]+\\.[0-9]+$"
		[ -z "$stderr" ]
	done
}

@test "every program prints usage on --help to stdout and exits 0" {
	for p in $PROGS; do
		echo "# $p" >&2
		run -0 --separate-stderr "$p" --help
		assert_output --partial "$p"
		[ -z "$stderr" ]
	done
}

@test "an unknown option is a usage error: exit 64, usage on stderr, no data" {
	for p in $PROGS; do
		echo "# $p" >&2
		run -64 --separate-stderr "$p" --no-such-option
		[ -z "$output" ]
		[[ "$stderr" == *"$p"* ]]
	done
}

@test "a missing file named by -c is a configuration error (78)" {
	for p in $CONF_PROGS; do
		echo "# $p" >&2
		# shellcheck disable=SC2046
		run -78 --separate-stderr "$p" -c "$T/missing.conf" $(args "$p")
		[[ "$stderr" == *missing.conf* ]]
	done
}

@test "a missing file named by VFSENTINEL_CONF is a configuration error (78)" {
	for p in $CONF_PROGS; do
		echo "# $p" >&2
		# shellcheck disable=SC2046
		VFSENTINEL_CONF=$T/gone.conf run -78 --separate-stderr "$p" $(args "$p")
		[[ "$stderr" == *gone.conf* ]]
	done
}

@test "an unknown key, a line without = and a bad value name file and line" {
	printf '# ok\n\nbogus.key = 1\n' >"$T/a.conf"
	printf 'data_dir = /x\njust words\n' >"$T/b.conf"
	printf 'gpu.vf_quarantine_threshold = 0\n' >"$T/c.conf"
	for p in $CONF_PROGS; do
		echo "# $p" >&2
		# shellcheck disable=SC2046
		run -78 --separate-stderr "$p" -c "$T/a.conf" $(args "$p")
		[[ "$stderr" == *"a.conf:3: unknown key"* ]]
		# shellcheck disable=SC2046
		run -78 --separate-stderr "$p" -c "$T/b.conf" $(args "$p")
		[[ "$stderr" == *"b.conf:2:"* ]]
		# shellcheck disable=SC2046
		run -78 --separate-stderr "$p" -c "$T/c.conf" $(args "$p")
		[[ "$stderr" == *"c.conf:1:"* ]]
		# The key and what would be accepted.
		[[ "$stderr" == *"gpu.vf_quarantine_threshold"* ]]
		[[ "$stderr" == *"whole number from 1 to 1000000"* ]]
	done
}

@test "log lines are one JSON object each, keys ts, level, prog, msg first" {
	for p in $CONF_PROGS; do
		echo "# $p" >&2
		# shellcheck disable=SC2046
		run -78 --separate-stderr "$p" -c "$T/missing.conf" $(args "$p")
		echo "$stderr" | jq -e --arg p "$p" -c '
			(keys_unsorted[0:4] == ["ts", "level", "prog", "msg"])
			and .prog == $p and .level == "error"
			and (.ts | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$"))'
	done
}

@test "a bad --log-level is a usage error" {
	for p in $PROGS; do
		echo "# $p" >&2
		# shellcheck disable=SC2046
		run -64 --separate-stderr "$p" --log-level loud $(args "$p")
	done
}
