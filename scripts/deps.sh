#!/bin/sh
# Installs the Debian 12 packages faultline needs for one purpose:
#
#   scripts/deps.sh [build]   building and installing (make, make install)
#   scripts/deps.sh demo      build, and llc-14 for make demo
#   scripts/deps.sh test      build, and everything make check, make bench and
#                             make fuzz run: LLVM's tools and libraries, Check,
#                             the runtimes (OpenJDK, Node.js, Ruby, SBCL, Mono, Go,
#                             CPython's test suite), QEMU, busybox, gdb, perf,
#                             and for arm64 the cross compiler, QEMU
#                             (qemu-system-arm, qemu-user-static) and the
#                             libraries as arm64 multiarch packages (pkg:arm64;
#                             the arm64 architecture is added to dpkg first
#                             when it is not there yet)
#
# The make targets call it with the purpose they need.  Idempotent: when
# everything is already installed it only asks dpkg its architecture and
# dpkg-query, once, for every package, and exits 0 in well under a second.
# Set FL_DEPS_DRY_RUN=1 to print what would be installed (and which
# architecture added) without doing it.
set -eu

BUILD="
gcc make pkg-config binutils libc6-dev
clang-14
libelf-dev zlib1g-dev libjson-c-dev
libbpf-dev bpftool liburing-dev
libzydis-dev libunwind-dev
libmicrohttpd-dev
"
DEMO="
llvm-14
"
TEST="
llvm-14 llvm-14-dev lld-14 lld libclang-rt-14-dev
check
openjdk-17-jdk-headless nodejs python3 ruby
sbcl sbcl-source mono-runtime mono-mcs golang-go libpython3.11-testsuite
python3-prometheus-client tmux strace gdb linux-perf
man-db groff-base systemd util-linux
busybox-static qemu-system-x86 cpio
gcc-aarch64-linux-gnu qemu-system-arm qemu-user-static libcapstone-dev
"
# The arm64 builds' libraries (cross builds, and the arm64 QEMU guest's
# programs: make vmtest-aarch64), libc6-dev:arm64 for libc.a and the loader.
TEST_ARM64="
libc6-dev:arm64 libelf-dev:arm64 zlib1g-dev:arm64 libjson-c-dev:arm64
libbpf-dev:arm64 liburing-dev:arm64 libzydis-dev:arm64 libunwind-dev:arm64
libmicrohttpd-dev:arm64 libcapstone-dev:arm64 check:arm64
"

case "${1:-build}" in
build) PACKAGES=$BUILD ;;
demo) PACKAGES="$BUILD $DEMO" ;;
test) PACKAGES="$BUILD $DEMO $TEST $TEST_ARM64" ;;
*)
	echo "usage: deps.sh [build|demo|test]" >&2
	exit 2
	;;
esac

# One dpkg-query for all: it prints a line per installed instance,
# "ii NAME ARCH" for the installed ones.  A name asked for without an
# architecture is the native one's (or an "all" package); NAME:ARCH is
# that architecture's (dpkg-query knows such a name for an architecture
# dpkg has not added yet, and finds nothing).
native=$(dpkg --print-architecture)
# shellcheck disable=SC2086
installed=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Architecture}\n' $PACKAGES 2>/dev/null |
	awk -v native="$native" '$1 == "ii" {
		print $2 ":" $3
		if ($3 == native || $3 == "all") print $2 }')
installed=" $(echo $installed) "
missing=
for p in $PACKAGES; do
	case $installed in
	*" $p "*) ;;
	*)
		case " $missing " in
		*" $p "*) ;;
		*) missing="$missing $p" ;;
		esac
		;;
	esac
done
missing=$(echo $missing)

[ -z "$missing" ] && exit 0

# The foreign architectures the missing names need that dpkg lacks.
known=" $native $(dpkg --print-foreign-architectures | tr '\n' ' ')"
add_arch=
for p in $missing; do
	case $p in
	*:*)
		case "$known $add_arch " in
		*" ${p##*:} "*) ;;
		*) add_arch="$add_arch ${p##*:}" ;;
		esac
		;;
	esac
done
add_arch=$(echo $add_arch)

if [ -n "$add_arch" ]; then
	echo "deps.sh: adding the architecture: $add_arch (dpkg --add-architecture)"
fi
echo "deps.sh: installing: $missing"
if [ "${FL_DEPS_DRY_RUN:-0}" = 1 ]; then
	exit 0
fi

SUDO=
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=sudo
	else
		echo "deps.sh: not root and no sudo: install these by hand: $missing" >&2
		exit 1
	fi
fi

export DEBIAN_FRONTEND=noninteractive
# Before the one apt-get update, which then fetches the new architecture's
# lists too.
for a in $add_arch; do
	$SUDO dpkg --add-architecture "$a"
done
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "deps.sh: done"
