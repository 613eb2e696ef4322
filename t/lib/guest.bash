# guest.bash - helpers for the guest-side producers (kmsg-watch,
# gpu-probe). Load with `load lib/guest` after `load helpers`.

# guest_bg VAR CMD...: start CMD in the background (fd 3 closed, so bats
# does not wait for it), remember its pid in VAR and in the list that
# guest_teardown kills.
guest_bg() {
	local var=$1
	shift
	"$@" 3>&- &
	printf -v "$var" '%s' "$!"
	GUEST_PIDS="${GUEST_PIDS:-} $!"
}

# guest_teardown: kill what guest_bg started (by pid), and any process
# group named in $T/*.pgid files.
guest_teardown() {
	local p f
	for p in ${GUEST_PIDS:-}; do
		kill "$p" 2>/dev/null || true
	done
	for f in "$T"/*.pgid; do
		[ -f "$f" ] && kill -KILL -- "-$(cat "$f")" 2>/dev/null
	done
	return 0
}

# nvidia_fixture: puts an NVIDIA 3D controller and a host bridge into
# $SYSFS, the minimum a guest with a passed-through VF shows.
nvidia_fixture() {
	mk_pcifn "$SYSFS" 0000:00:00.0 8086 1237 060000
	mk_pcifn "$SYSFS" 0000:00:03.0 10de 26b9 030200
}

# is_alive PID: true while PID exists and is not a zombie.
is_alive() {
	local st
	st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "$st" != Z ]
}

# ms_now: monotonic-enough wall clock in milliseconds.
ms_now() {
	local t
	t=$(date +%s%N)
	echo $((t / 1000000))
}

# fake_smi NAME: path of a fake nvidia-smi fixture script.
fake_smi() {
	echo "$VFS_ROOT/t/fixtures/nvidia-smi/$1"
}

# guest_wait PID: waits for a child started with guest_bg; sets status.
# shellcheck disable=SC2034 # status is for the calling test
guest_wait() {
	status=0
	wait "$1" || status=$?
}
