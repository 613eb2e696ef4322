# helpers.bash - loaded by every bats file (`load helpers`).
#
# Puts the programs under test ($VFS_BIN, default bin/) first on PATH,
# gives every test its own data dir and empty configuration, and offers
# builders for fake sysfs trees and the fault-injection shim.
# Area-specific helpers live in t/lib/*.bash (`load lib/NAME`).

bats_require_minimum_version 1.5.0

# _load_lib NAME: bats_load_library NAME, without its forks. A library's
# load.bash sources each of its files through a `$(dirname ...)`: 18
# processes for the three below, in every test of the suite. Where
# load.bash is only such lines, its files are sourced here in its order;
# anything else in it, and the library is loaded as bats does.
_load_lib() {
	local d line files=() dirs
	IFS=: read -ra dirs <<<"${BATS_LIB_PATH:-/usr/lib/bats}"
	for d in "${dirs[@]}"; do
		[ -f "$d/$1/load.bash" ] || continue
		while IFS= read -r line; do
			case $line in
			'' | '#'*) ;;
			*) [[ $line =~ ^source\ \"\$\(dirname\ \"\$\{BASH_SOURCE\[0\]\}\"\)/(src/[A-Za-z0-9_]+\.bash)\"$ ]] ||
				break
				files+=("$d/$1/${BASH_REMATCH[1]}") ;;
			esac
		done <"$d/$1/load.bash" || :
		if [ -n "$line" ] || [ ${#files[@]} -eq 0 ]; then break; fi
		for line in "${files[@]}"; do
			# shellcheck disable=SC1090 # the library's own files
			source "$line"
		done
		return 0
	done
	bats_load_library "$1"
}
_load_lib bats-support
_load_lib bats-assert
_load_lib bats-file

VFS_ROOT=${VFS_ROOT:-$(cd "$BATS_TEST_DIRNAME/.." && pwd)}
VFS_BIN=${VFS_BIN:-$VFS_ROOT/bin}
VFS_BUILD=${VFS_BUILD:-$VFS_ROOT/build}
# promtool and node_exporter, extracted by tools/deps.sh (make deps).
VFS_TOOLS=${VFS_TOOLS:-$VFS_ROOT/build-tools}
PATH="$VFS_BIN:$VFS_BUILD/t:$PATH"
# The run scripts' shared part (sv/sv-lib.sh), for the tests' copies of
# the services (installed ones find theirs: t/deb unsets this).
VFSENTINEL_SV_LIB=$VFS_ROOT/sv/sv-lib.sh
export VFS_ROOT VFS_BIN VFS_BUILD VFS_TOOLS PATH VFSENTINEL_SV_LIB

# vfs_setup: call from setup(). Exports T (the test's temp dir), DATA
# (a data dir), SYSFS (an empty sysfs root) and an empty VFSENTINEL_CONF,
# so no test ever reads /etc/vfsentinel.
vfs_setup() {
	T=$BATS_TEST_TMPDIR
	DATA=$T/data
	SYSFS=$T/sysfs
	mkdir -p "$SYSFS/sys/bus/pci/devices"
	: >"$T/vfsentinel.conf"
	VFSENTINEL_CONF=$T/vfsentinel.conf
	export T DATA SYSFS VFSENTINEL_CONF
	# As an install step does (SPEC 4.1): only vfstore init makes the
	# store's directory; a test of a missing one removes it again.
	vfstore --data-dir "$DATA" init >/dev/null 2>&1 ||
		mkdir -p "$DATA/gpu"
}

# mk_pcifn ROOT BDF VENDOR DEVICE CLASS - a PCI function libpci accepts
# (hex without 0x; CLASS six digits, e.g. 030200).
mk_pcifn() {
	mkdir -p "$1/sys/bus/pci/devices/$2"
	_pcifn_files "$1/sys/bus/pci/devices/$2" "${@:3}"
}

# _pcifn_files DIR VENDOR DEVICE CLASS: the attribute files of a PCI
# function in DIR, written by builtins alone (a fake host of 512 VFs
# is built in every test that needs one: no fork per file).
_pcifn_files() {
	local d=$1 v=$2 dv=$3 c=$4 i
	printf '0x%s\n' "$v" >"$d/vendor"
	printf '0x%s\n' "$dv" >"$d/device"
	printf '0x%s\n' "$c" >"$d/class"
	printf '0x00\n' >"$d/revision"
	echo 0 >"$d/irq"
	for i in 1 2 3 4 5 6 7 8 9 10 11 12 13; do
		echo "0x0000000000000000 0x0000000000000000 0x0000000000000000"
	done >"$d/resource"
	# The config space's first 256 bytes: the IDs and the class, built
	# from hex digits (the formats write those bytes), and zeros.
	# shellcheck disable=SC2059
	{
		printf "\\x${v#??}\\x${v%??}\\x${dv#??}\\x${dv%??}"
		printf '\0%.0s' 1 2 3 4 5
		printf "\\x${c#????}\\x${c:2:2}\\x${c%????}"
		printf '\0%.0s' {1..244}
	} >"$d/config"
}

# mk_card ROOT PF - an NVIDIA physical function (L40S, 10de:26b9).
mk_card() {
	mk_pcifn "$1" "$2" 10de 26b9 030200
}

# mk_vf ROOT PF VF [CURRENT_TYPE [TYPES...]] - a vendor-VFIO VF of card
# PF. TYPES are "ID:NAME" pairs (default: 1160:NVIDIA L40S-12Q and
# 1161:NVIDIA L40S-24Q); CURRENT_TYPE defaults to 0 (free).
mk_vf() {
	local d=$1/sys/bus/pci/devices/$3
	mkdir -p "$d/nvidia"
	ln -sfn "../$2" "$d/physfn"
	_vf_files "$@"
}

# _vf_files ROOT PF VF [CURRENT_TYPE [TYPES...]]: mk_vf's files, in a
# directory that has its nvidia/ (the physfn link is the caller's).
_vf_files() {
	local root=$1 vf=$3 cur=${4:-0} d t
	shift 3
	[ $# -gt 0 ] && shift
	d=$root/sys/bus/pci/devices/$vf
	_pcifn_files "$d" 10de 26b9 030200
	echo "$cur" >"$d/nvidia/current_vgpu_type"
	if [ $# -eq 0 ]; then
		set -- "1160:NVIDIA L40S-12Q" "1161:NVIDIA L40S-24Q"
	fi
	{
		echo "ID    : vGPU Name"
		for t in "$@"; do
			printf '%s  : %s\n' "${t%%:*}" "${t#*:}"
		done
	} >"$d/nvidia/creatable_vgpu_types"
}

# mk_host ROOT CARDS VFS - CARDS cards (0000:40:00.0, 0000:44:00.0, ...)
# with VFS free VFs each (VF n of card c is 0000:<c>:<n/8 + 1>.<n%8>).
# One mkdir and one python3 (the physfn links) for the whole tree.
mk_host() {
	local root=$1 ncards=$2 nvfs=$3 c n bus vf dirs=() vfs=()
	for ((c = 0; c < ncards; c++)); do
		printf -v bus '%02x' $((0x40 + c * 4))
		dirs+=("$root/sys/bus/pci/devices/0000:$bus:00.0")
		for ((n = 0; n < nvfs; n++)); do
			printf -v vf '0000:%s:%02x.%d' "$bus" $((n / 8 + 1)) $((n % 8))
			vfs+=("0000:$bus:00.0 $vf")
			dirs+=("$root/sys/bus/pci/devices/$vf/nvidia")
		done
	done
	[ ${#dirs[@]} -eq 0 ] || mkdir -p "${dirs[@]}"
	for ((c = 0; c < ncards; c++)); do
		printf -v bus '%02x' $((0x40 + c * 4))
		_pcifn_files "$root/sys/bus/pci/devices/0000:$bus:00.0" 10de 26b9 030200
	done
	for vf in "${vfs[@]}"; do
		_vf_files "$root" "${vf% *}" "${vf#* }"
		echo "../${vf% *} $root/sys/bus/pci/devices/${vf#* }/physfn"
	done | python3 -c 'import os, sys
for line in sys.stdin:
    os.symlink(*line.split())'
}

# fault_env: prints the LD_PRELOAD value for the fault shim (with the ASan
# runtime first in a sanitizer run). Use: LD_PRELOAD=$(fault_env) FAIL_fsync=1 prog
fault_env() {
	if [ -n "${VFS_SAN:-}" ]; then
		printf '%s %s' "$(gcc -print-file-name=libasan.so)" "$VFS_BUILD/t/faultinj.so"
	else
		printf '%s' "$VFS_BUILD/t/faultinj.so"
	fi
}

# sha FILE: content hash (to prove a file was not touched).
sha() {
	sha256sum "$1" | cut -d' ' -f1
}

# nap SECONDS: sleep(1) without starting a process (the polling loops
# below look every 50 ms): a read that times out on a pipe this shell
# holds both ends of, so no data and no end of file ever arrive.
nap() {
	[ -n "${_NAP_FD:-}" ] || exec {_NAP_FD}<> <(:)
	read -rt "$1" -u "$_NAP_FD" _ || :
}

# wait_for CMD...: retry CMD for up to 5 s (50 ms steps).
wait_for() {
	local i
	for ((i = 0; i < 100; i++)); do
		"$@" && return 0
		nap 0.05
	done
	return 1
}

# wait_secs SECONDS CMD...: retry CMD every 0.2 s until it succeeds or
# SECONDS of wall clock have passed, however long each try took (one
# last try at the end): for a service's start, a guest's boot or a
# container's unit, which a loaded machine stretches past what a count
# of tries allows. wait_for and wait_long count tries instead.
wait_secs() {
	local end=$((${EPOCHREALTIME/./} + $1 * 1000000))
	shift
	until "$@"; do
		[ "${EPOCHREALTIME/./}" -lt "$end" ] || return 1
		nap 0.2
	done
}

# wait_long CMD...: wait_for with 10 s instead of 5 (services, runit).
wait_long() {
	local i
	for ((i = 0; i < 200; i++)); do
		"$@" 2>/dev/null && return 0
		nap 0.05
	done
	return 1
}

# load_scaled MS: MS stretched by how many times over the machine is
# loaded (the 1-minute load average over the cores, at least 1): for a
# latency bound that a parallel run on a busy machine would break.
load_scaled() {
	local load
	read -r load _ </proc/loadavg
	awk -v ms="$1" -v l="$load" -v c="$(nproc)" \
	    'BEGIN { f = l / c; if (f < 1) f = 1; printf "%d\n", ms * f }'
}

# kill_pids: SIGKILL every pid in $PIDS (a test's background helpers).
kill_pids() {
	local p
	for p in $PIDS; do
		kill -KILL "$p" 2>/dev/null || true
	done
}

# lock_hold FILE [FLOCK_OPTION...]: takes flock(1) on FILE in the
# background and returns once it is held (not after a guessed sleep);
# lock_release lets it go. The holder gives up by itself after 60 s.
lock_hold() {
	local f=$1
	shift
	rm -f "$T/lock-held" "$T/lock-go"
	# shellcheck disable=SC2016 # $1, $2 and $i are the inner shell's
	flock "$@" "$f" sh -c 'touch "$1"; i=0
		while [ ! -e "$2" ] && [ $i -lt 1200 ]; do
			sleep 0.05; i=$((i + 1))
		done' _ "$T/lock-held" "$T/lock-go" 3>&- &
	LOCK_PID=$!
	wait_long test -e "$T/lock-held"
}

lock_release() {
	touch "$T/lock-go"
	wait "$LOCK_PID" 2>/dev/null || true
}

# has_open PID FILE: PID holds FILE open (a program in its lock wait:
# the store's lock polls flock with LOCK_NB on an open descriptor).
has_open() {
	local want fd
	want=$(readlink -f "$2")
	for fd in "/proc/$1/fd/"*; do
		[ "$(readlink "$fd" 2>/dev/null)" = "$want" ] && return 0
	done
	return 1
}

# ne_start DIR: starts the real node_exporter's textfile collector on
# DIR, listening on 127.0.0.1 at a port the kernel picks (so two tests
# never meet on one port), and waits until it listens. Sets NE_PID and
# NE_PORT; its log is $T/ne.log.
# shellcheck disable=SC2034 # NE_PID and NE_PORT are for the caller
ne_start() {
	"$VFS_TOOLS/prometheus-node-exporter" --web.listen-address=127.0.0.1:0 \
	    --collector.disable-defaults --collector.textfile \
	    --collector.textfile.directory="$1" >"$T/ne.log" 2>&1 3>&- &
	NE_PID=$!
	wait_long grep -q 'msg="Listening on" address=127.0.0.1:[1-9]' \
	    "$T/ne.log" || { cat "$T/ne.log" >&2; return 1; }
	NE_PORT=$(sed -n 's/.*msg="Listening on" address=127\.0\.0\.1:\([0-9]*\).*/\1/p' \
	    "$T/ne.log" | head -n 1)
}

# need_tool NAME...: skips the test ("NAME missing") unless each NAME is
# there: promtool and prometheus-node-exporter in $VFS_TOOLS, any other
# on PATH. `make check` installs them all (tools/deps.sh); call it first in
# every test, or setup(), that runs a tool the suite does not build.
need_tool() {
	local t
	for t; do
		case $t in
		promtool | prometheus-node-exporter) [ -x "$VFS_TOOLS/$t" ] ;;
		*) command -v "$t" >/dev/null ;;
		esac || skip "$t missing (make deps installs it)"
	done
}

# swap_names DIR: DIR/log and DIR/alt swap places (renameat2
# RENAME_EXCHANGE) as fast as the kernel goes, in the background
# (SWAP_PID), until killed; returns once the swapping runs. For a path
# that is a regular file at the check and a FIFO or device at the open.
swap_names() {
	python3 -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = (os.fsencode(sys.argv[1] + n) for n in ("/log", "/alt"))
libc.renameat2(-100, a, -100, b, 2)
open(sys.argv[1] + "/swapping", "w").close()
while True:
    libc.renameat2(-100, a, -100, b, 2)
' "$1" 2>/dev/null &
	# shellcheck disable=SC2034 # the test kills it
	SWAP_PID=$!
	wait_for test -e "$1/swapping"
}
