# Sourced by the daemon's test scripts that run the system daemon at its
# real path (bash, after hostile/harness.sh and wait.sh, with W set): the
# daemons they start, and own_run NAME WHY, which checks that
# the test runs as root (WHY: what it needs root for) in a mount namespace
# of its own (make runs it under scripts/fresh-ns.sh), and mounts a tmpfs
# (named fl-NAME-run) on /run there, so that the test neither sees nor
# touches this machine's /run/faultline.  Exits 1, said, when it cannot.
own_run() {
	if [ "$(id -u)" != 0 ]; then
		bad "not root: $2"
		exit 1
	fi
	if [ "$(readlink /proc/self/ns/mnt)" = "$(readlink /proc/1/ns/mnt)" ]; then
		bad "not in a mount namespace of its own (run it under scripts/fresh-ns.sh):" \
			"a tmpfs on /run here would hide the machine's"
		exit 1
	fi
	mount --make-rprivate / && mount -t tmpfs -o mode=755 "fl-$1-run" /run || {
		bad "cannot mount a tmpfs on /run in the test's mount namespace"
		exit 1
	}
}

# daemon NAME CMD...: starts faultlined (CMD execs it), waits until it listens.
DPIDS=()
daemon() {
	local name=$1 log=$W/$1.log
	shift
	"$@" >"$log" 2>&1 &
	PIDS+=($!)
	DPIDS+=($!)
	eventually grep -q "listening on" "$log" ||
		bad "$name: faultlined did not say it listens (log $log)"
}
stop_daemons() {
	local p
	for p in "${DPIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${DPIDS[@]}"; do wait "$p" 2>/dev/null; done
	DPIDS=()
}
