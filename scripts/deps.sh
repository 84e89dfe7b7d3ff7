#!/bin/sh
# Installs every Debian 12 package faultline needs to build, test and run.
# Idempotent: when everything is already installed it only asks dpkg, once,
# and exits 0 in well under a second.  Set FL_DEPS_DRY_RUN=1 to print what
# would be installed without installing it.
set -eu

PACKAGES="
gcc make pkg-config
clang-14 llvm-14 llvm-14-dev lld-14 libclang-rt-14-dev
libelf-dev zlib1g-dev
check libjson-c-dev
libbpf-dev bpftool liburing-dev
binutils
openjdk-17-jdk-headless nodejs python3
python3-prometheus-client tmux
busybox-static qemu-system-x86 cpio libc6-dev
"

# One dpkg-query for all: it prints "ii" for installed packages and nothing
# (or another status) for the rest.
installed=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' $PACKAGES 2>/dev/null |
	awk '$1 == "ii" { print $2 }')
missing=
for p in $PACKAGES; do
	case " $(echo $installed) " in
	*" $p "*) ;;
	*) missing="$missing $p" ;;
	esac
done
missing=$(echo $missing)

[ -z "$missing" ] && exit 0

echo "deps.sh: installing$missing"
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
