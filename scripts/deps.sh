#!/bin/sh
# Installs the Debian 12 packages faultline needs for one purpose:
#
#   scripts/deps.sh [build]   building and installing (make, make install)
#   scripts/deps.sh demo      build, and llc-14 for make demo
#   scripts/deps.sh test      build, and everything make check, make bench and
#                             make fuzz run: LLVM's tools and libraries, Check,
#                             the runtimes (OpenJDK, Node.js, Ruby, SBCL, Mono, Go,
#                             CPython's test suite), QEMU, busybox, gdb, perf
#
# The make targets call it with the purpose they need.  Idempotent: when
# everything is already installed it only asks dpkg, once, and exits 0 in
# well under a second.  Set FL_DEPS_DRY_RUN=1 to print what would be
# installed without installing it.
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
gcc-aarch64-linux-gnu
"

case "${1:-build}" in
build) PACKAGES=$BUILD ;;
demo) PACKAGES="$BUILD $DEMO" ;;
test) PACKAGES="$BUILD $DEMO $TEST" ;;
*)
	echo "usage: deps.sh [build|demo|test]" >&2
	exit 2
	;;
esac

# One dpkg-query for all: it prints "ii" for installed packages and nothing
# (or another status) for the rest.
# shellcheck disable=SC2086
installed=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' $PACKAGES 2>/dev/null |
	awk '$1 == "ii" { print $2 }')
missing=
for p in $PACKAGES; do
	case " $(echo $installed) " in
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
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "deps.sh: done"
