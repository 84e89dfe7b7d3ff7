#!/bin/sh
# Runs COMMAND as it would run on a fresh machine: in a private mount
# namespace where tracefs and debugfs are not mounted, whatever this
# machine has mounted (a developer's machine usually has both, a fresh
# Debian 12 machine or a container has neither).  The tests of the eBPF
# program, the daemon and faultline profile run this way, so that nothing
# they load can come to depend on tracefs unseen.
#
#   scripts/fresh-ns.sh COMMAND [ARG...]
#
# Needs root (CAP_SYS_ADMIN) for unshare -m.  The mounts outside are not
# touched: the namespace's copies are private, so unmounting them there
# does not propagate.
set -eu

if [ "${FL_FRESH_NS:-}" != 1 ]; then
	FL_FRESH_NS=1 exec unshare --mount --propagation private -- "$0" "$@"
fi

# debugfs first: /sys/kernel/debug/tracing is tracefs mounted inside it.
for m in /sys/kernel/debug/tracing /sys/kernel/debug /sys/kernel/tracing; do
	while mountpoint -q "$m" 2>/dev/null; do
		umount -l "$m"
	done
done
if awk '$3 == "tracefs" || $3 == "debugfs" { found = 1 } END { exit !found }' /proc/self/mounts; then
	echo "fresh-ns: tracefs or debugfs still mounted in the private namespace:" >&2
	awk '$3 == "tracefs" || $3 == "debugfs"' /proc/self/mounts >&2
	exit 1
fi
echo "fresh-ns: tracefs and debugfs not mounted (private mount namespace)"
exec "$@"
