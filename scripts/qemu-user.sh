#!/bin/sh
# SPDX-License-Identifier: MIT
#
# scripts/qemu-user.sh CMD [ARG...]: runs CMD where AArch64 programs run,
# under qemu-aarch64-static (Debian's qemu-user-static), as if they were
# the machine's own: CMD itself, and every program it or they start.
#
# How: binfmt_misc hands an AArch64 ELF file to qemu-aarch64-static.  The
# registration is made in a binfmt_misc of CMD's own (a new user namespace,
# root mapped to root, and a new mount namespace, where Linux 6.7 and later
# let a user namespace mount its own binfmt_misc), so that nothing of the
# machine changes and nothing is left behind, however CMD ends.  The 'F'
# flag opens qemu-aarch64-static at registration.  The arm64 programs find
# their libraries where Debian's multiarch packages put them
# (/usr/lib/aarch64-linux-gnu, /lib/ld-linux-aarch64.so.1): no -L prefix.
#
# Under qemu-user there is no userfaultfd, bpf or perf_event_open (ENOSYS),
# no ESR record in a fault's signal frame, and DC/IC do nothing: the suites
# that need those run in the arm64 QEMU guest instead (scripts/vmtest.sh).
#
# FL_QEMU_USER=1 in CMD's environment tells a test it runs so.
#
# Where the kernel lets no user namespace have its own binfmt_misc (before
# 6.7), it says so and exits 1: registering in the machine's would change
# what every process of it runs.
set -eu

QEMU=${QEMU_AARCH64:-/usr/bin/qemu-aarch64-static}
if [ $# -eq 0 ]; then
	echo "usage: scripts/qemu-user.sh CMD [ARG...]" >&2
	exit 2
fi
if [ ! -x "$QEMU" ]; then
	echo "qemu-user.sh: $QEMU not found (scripts/deps.sh test installs qemu-user-static)" >&2
	exit 1
fi

if [ "${FL_QEMU_USER_INSIDE:-}" != 1 ]; then
	FL_QEMU_USER_INSIDE=1 exec unshare --user --map-root-user --mount --propagation private \
		sh "$0" "$@"
fi

mnt=/proc/sys/fs/binfmt_misc
if ! mount -t binfmt_misc binfmt_misc "$mnt" 2>/dev/null; then
	echo "qemu-user.sh: this kernel ($(uname -r)) gives a user namespace no binfmt_misc of" \
	     "its own (Linux 6.7 and later do): AArch64 programs cannot run here" >&2
	exit 1
fi
# An AArch64 ELF executable or shared object (ET_EXEC or ET_DYN: e_type's
# low bit masked), little-endian, 64-bit, e_machine 183.
magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
printf ':fl-qemu-aarch64:M::%s:%s:%s:F\n' "$magic" "$mask" "$QEMU" >"$mnt/register"
unset FL_QEMU_USER_INSIDE
# For the tests that must say why they do not run here.
export FL_QEMU_USER=1
exec "$@"
