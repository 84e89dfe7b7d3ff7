#!/bin/bash
# make install into a scratch DESTDIR, then build and run a program against
# the installed headers and library through pkg-config, as a user would.
#   run.sh WORKDIR
set -eu
W=$(realpath -m "$1")
rm -rf "$W" && mkdir -p "$W"
PREFIX=/opt/faultline-test
make --no-print-directory -s install DESTDIR="$W/root" PREFIX="$PREFIX" >/dev/null
R=$W/root$PREFIX
for f in bin/faultline lib/libfaultline.so lib/libfaultline.so.0 lib/libfaultline.a \
	 lib/pkgconfig/faultline.pc include/faultline/format.h include/faultline/discovery.h \
	 share/man/man1/faultline.1 share/man/man3/fl_stackmap_next.3; do
	[ -e "$R/$f" ] || { echo "install: missing $f"; exit 1; }
done
cat >"$W/user.c" <<'C'
#include <stdio.h>
#include <faultline/faultline.h>
int main(void)
{
	static const unsigned char fm[] = { 1, 0, 0, 0, 0, 0, 0, 0 };
	struct fl_diag d;
	long n = fl_faultmap_validate(fm, sizeof(fm), 0, &d);
	long bad = fl_faultmap_validate(fm, 3, 0, &d);
	printf("%ld %ld %s\n", n, bad, d.msg);
	return n == 0 && bad < 0 ? 0 : 1;
}
C
# The .pc file names the install prefix; point pkg-config at the staged copy.
export PKG_CONFIG_SYSROOT_DIR="$W/root" PKG_CONFIG_PATH="$R/lib/pkgconfig"
gcc -Wall -Werror -o "$W/user" "$W/user.c" $(pkg-config --cflags --libs faultline)
LD_LIBRARY_PATH="$R/lib" "$W/user" >"$W/user.out"
grep -q '^0 -90 .llvm_faultmaps: table 0: header truncated' "$W/user.out" ||
	{ echo "install: unexpected output: $(cat "$W/user.out")"; exit 1; }
# Only the fl_ API is exported, and __llvm_deoptimize: the name llc-14
# calls for llvm.experimental.deoptimize (deopt.h).
if nm -D --defined-only "$R/lib/libfaultline.so" | awk '{print $3}' | grep -v '^fl_' |
	grep -v '^FAULTLINE_' | grep -v '^__llvm_deoptimize@@' | grep -q .; then
	echo "install: libfaultline.so exports more than fl_* and __llvm_deoptimize:"
	nm -D --defined-only "$R/lib/libfaultline.so" | grep -v ' fl_'
	exit 1
fi
"$R/bin/faultline" --version >/dev/null
# What each goal installs first: building and installing need only the
# build's packages, never the test suites' (OpenJDK, Node.js, QEMU, ...).
for goal in all:build install:build demo:demo check-unit:test bench:test fuzz:test; do
	got=$(make --no-print-directory -n "${goal%%:*}" 2>/dev/null | grep -o 'scripts/deps.sh [a-z]*' | sort -u)
	[ "$got" = "scripts/deps.sh ${goal#*:}" ] ||
		{ echo "install: make ${goal%%:*} runs '$got', not 'scripts/deps.sh ${goal#*:}'"; exit 1; }
done
for purpose in build demo test; do
	FL_DEPS_DRY_RUN=1 scripts/deps.sh $purpose >/dev/null ||
		{ echo "install: deps.sh $purpose failed"; exit 1; }
done
scripts/deps.sh nonsense 2>/dev/null && { echo "install: deps.sh took a bad purpose"; exit 1; }
echo "install: ok (headers, libraries, pkg-config, man pages, exports, deps per goal)"
