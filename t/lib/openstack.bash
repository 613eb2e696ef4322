# openstack.bash - the real OpenStack Placement for the placement-sync
# tests (load after helpers and lib/placement). setup_file starts one
# Placement (python3-placement's placement-api on sqlite, noauth2) inside
# a private network namespace (unshare -n, lo up): nothing else reaches
# it, and every client of the tests runs there too (pl_ns). Each test
# uses its own compute node (NODE), so the tests share the one Placement.

PL_HELPER=$VFS_ROOT/t/lib/nova-tree.py
PLACEMENT_URL=http://127.0.0.1:8778
export PLACEMENT_URL

# placement_db DIR: Placement's configuration (noauth2, its sqlite
# database in DIR) in DIR/placement.conf, and the database's schema.
placement_db() {
	mkdir -p "$1"
	printf '[api]\nauth_strategy = noauth2\n[placement_database]\nconnection = sqlite:///%s/placement.sqlite\nsync_on_startup = true\n' \
		"$1" >"$1/placement.conf"
	placement-manage --config-file "$1/placement.conf" db sync \
		>"$1/sync.log" 2>&1
}

# placement_start: in setup_file; skips the file, naming what is
# missing, where Placement cannot run.
placement_start() {
	local d=$BATS_FILE_TMPDIR/placement i
	need_tool placement-api placement-manage unshare nsenter ip
	/usr/bin/python3 -c 'import keystoneauth1, oslo_config' 2>/dev/null ||
		skip "python3-keystoneauth1 or python3-oslo.config missing (make deps installs them)"
	PL_UNSHARE=(-n)
	[ "$(id -u)" = 0 ] || PL_UNSHARE=(-r -n)
	unshare "${PL_UNSHARE[@]}" true 2>/dev/null ||
		skip "unshare ${PL_UNSHARE[*]} not permitted here"
	placement_db "$d"
	OS_PLACEMENT_CONFIG_DIR=$d unshare "${PL_UNSHARE[@]}" sh -c \
		'ip link set lo up && exec placement-api --host 127.0.0.1 --port 8778' \
		>"$d/api.log" 2>&1 3>&- &
	PL_PID=$!
	export PL_PID
	for ((i = 0; i < 100; i++)); do
		if pl_ns /usr/bin/python3 "$PL_HELPER" request GET / 2>/dev/null |
			grep -q '"status":200'; then
			return 0
		fi
		sleep 0.2
	done
	cat "$d/api.log" >&2
	false
}

placement_stop() {
	if [ -n "${PL_PID:-}" ]; then
		kill "$PL_PID" 2>/dev/null || :
		wait "$PL_PID" 2>/dev/null || :
	fi
}

# pl_ns CMD...: CMD in Placement's network namespace.
pl_ns() {
	local a=(-n)
	[ "$(id -u)" = 0 ] || a=(-U -n --preserve-credentials)
	nsenter -t "$PL_PID" "${a[@]}" -- "$@"
}

# pl_bg OUT ERR CMD...: CMD in the namespace, in the background, stdout
# to OUT and stderr to ERR; PL_BG is its pid (CMD's own: nsenter execs
# it), for kill and wait.
pl_bg() {
	local out=$1 err=$2 a=(-n)
	shift 2
	[ "$(id -u)" = 0 ] || a=(-U -n --preserve-credentials)
	nsenter -t "$PL_PID" "${a[@]}" -- "$@" >"$out" 2>"$err" 3>&- &
	# shellcheck disable=SC2034 # for the tests that load this file
	PL_BG=$!
}

# ntree ARGS...: t/lib/nova-tree.py (Nova's provider trees and rewrites).
ntree() {
	pl_ns /usr/bin/python3 "$PL_HELPER" "$@"
}

# sync_setup: the test's store and sysfs (vfs_setup), its compute node
# NODE, and the two configuration files placement-sync reads.
sync_setup() {
	vfs_setup
	NODE=node$BATS_TEST_NUMBER
	mkdir -p "$T/metrics"
	printf 'data_dir = %s\nsysfs_root = %s\nmetrics.textfile_dir = %s\n' \
		"$DATA" "$SYSFS" "$T/metrics" >"$VFSENTINEL_CONF"
	printf '[placement]\nauth_type = admin_token\nendpoint = %s\ntoken = admin\n[vfsentinel]\ncompute_node = %s\ninterval = 60\n' \
		"$PLACEMENT_URL" "$NODE" >"$T/placement.conf"
	export NODE
}

# psync ARGS...: placement-sync with the test's configuration, in the
# namespace.
psync() {
	pl_ns placement-sync --config-file "$T/placement.conf" "$@"
}

# consumer VF: the consumer uuid placement-sync allocates VF with.
consumer() {
	/usr/bin/python3 -c 'import sys, uuid; print(uuid.uuid5(uuid.NAMESPACE_URL, "vfsentinel:%s:%s" % (sys.argv[1], sys.argv[2])))' "$NODE" "$1"
}

# pshow: NODE's children as nova-tree.py show prints them.
pshow() {
	ntree show "$NODE"
}
