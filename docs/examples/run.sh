#!/bin/bash
# check-codegen: runs docs/codegen.md as a user would, against faultline
# installed into a scratch prefix (make install PREFIX=...): the guide's
# commands in a copy of docs/examples/, their output compared with the
# guide's (check.py says how).
#   run.sh WORKDIR
#
# The environment stands for "faultline is installed": PATH finds
# faultline, pkg-config finds faultline.pc, ld.so finds libfaultline.so.
# No daemon: FAULTLINE_SOCKET names a socket that does not exist, so the
# programs register with nothing (they work the same, and a faultlined
# running on the machine sees none of them).
set -eu
cd "$(dirname "$0")/../.."
W=$(realpath -m "$1")
rm -rf "$W" && mkdir -p "$W"
make --no-print-directory -s install PREFIX="$W/prefix" >/dev/null
cp -r docs/examples "$W/examples"
export PATH="$W/prefix/bin:$PATH"
# The caller's FAULTLINE_* would change what the commands print (a summary, a log).
unset PKG_CONFIG_SYSROOT_DIR ${!FAULTLINE_@}
export PKG_CONFIG_PATH="$W/prefix/lib/pkgconfig"
export LD_LIBRARY_PATH="$W/prefix/lib"
export FAULTLINE_SOCKET="$W/no-daemon/faultlined.sock"
# ./plain dies of SIGSEGV on purpose: no core file.
ulimit -c 0
python3 docs/examples/check.py docs/codegen.md docs/examples "$W/examples"
