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
	 lib/pkgconfig/faultline.pc include/faultline/format.h include/faultline/discovery.h include/faultline/x86_64/deopt_regs.h include/faultline/aarch64/deopt_regs.h \
	 share/man/man1/faultline.1 share/man/man3/fl_stackmap_next.3 share/doc/faultline/json.md \
	 share/bash-completion/completions/faultline; do
	[ -e "$R/$f" ] || { echo "install: missing $f"; exit 1; }
done
# The shim's debug info is split out (a debug link to lib/.debug/): Ruby's
# crash report names every frame after the shim's with its file, as
# without faultline (with the DWARF 5 inside, Ruby 3.1 lost them).
S=$R/lib/libfaultline-preload.so
D=$R/lib/.debug/libfaultline-preload.so.debug
! readelf -S "$S" | grep -q '\.debug_info' || { echo "install: $S keeps its debug info"; exit 1; }
readelf -S "$S" | grep -q '\.gnu_debuglink' || { echo "install: $S has no debug link"; exit 1; }
readelf -S "$D" | grep -q '\.debug_info' || { echo "install: $D has no debug info"; exit 1; }
command -v ruby >/dev/null || { echo "install: ruby not found (scripts/deps.sh test installs it)"; exit 1; }
# shellcheck disable=SC2016
bt=$( (ulimit -c 0; LD_PRELOAD=$S ruby -e 'Process.kill(:SEGV, $$)') 2>&1 | sed -n '/C level backtrace/,/^$/p') || true
if ! grep -q 'libruby.*(rb_f_kill+' <<<"$bt" || grep -q '^\[0x' <<<"$bt"; then
	echo "install: Ruby's crash report under the installed shim lost frames' files:"
	sed 's/^/  | /' <<<"$bt" | head -20
	exit 1
fi
cmp -s docs/json.md "$R/share/doc/faultline/json.md" ||
	{ echo "install: share/doc/faultline/json.md is not docs/json.md"; exit 1; }
# Every page of docs/man is installed, an alias as a .so link to the page
# it names; each renders with man -l from the top of the manpath (where man
# resolves a .so link) and through MANPATH as a user reads it, with no
# error or warning.
M=$R/share/man
pages=()
for p in docs/man/*.[0-9]; do
	i=man${p##*.}/${p##*/}
	pages+=("$i")
	if [ -L "$p" ]; then
		want=".so man3/$(basename "$(readlink -f "$p")")"
		[ "$(cat "$M/$i")" = "$want" ] ||
			{ echo "install: $i is '$(head -1 "$M/$i")', not '$want'"; exit 1; }
	else
		cmp -s "$p" "$M/$i" || { echo "install: $i is not $p"; exit 1; }
	fi
done
[ "$(find "$M" -type f | wc -l)" -eq ${#pages[@]} ] ||
	{ echo "install: $(find "$M" -type f | wc -l) pages installed, not ${#pages[@]}"; exit 1; }
selftests/docs/render-man.sh "$M" "${pages[@]}" || { echo "install: a page does not render"; exit 1; }
for p in "${pages[@]}"; do
	name=${p##*/}
	# Not stopped by set -e: a page man cannot show is said below.
	err=$(MANPATH=$M MANWIDTH=80 man --warnings "${name##*.}" "${name%.*}" 2>&1 >"$W/man.out") ||
		err=${err:-man failed}
	title=$(grep -m1 -o '^[A-Z_]*([0-9])' "$W/man.out") || true
	if [ -n "$err" ] || [ -z "$title" ]; then
		echo "install: MANPATH=... man ${name##*.} ${name%.*}: ${err:-no page}"
		exit 1
	fi
done
selftests/install/completion.sh "$R" "$W/completion" || exit 1
selftests/install/unit.sh "$W/root" "$PREFIX" "$W/unit" || exit 1
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
# The exported API is exactly lib/libfaultline.map's list: the fl_ API and
# __llvm_deoptimize, the name llc-14 calls for llvm.experimental.deoptimize
# (deopt.h).  A function added to the map is expected here; one the library
# exports that the map does not name, or one the map names that the library
# does not define, fails.
sed -n '/global:/,/local:/p' lib/libfaultline.map | grep -oE '^[[:space:]]*[A-Za-z_][A-Za-z0-9_]*;' |
	tr -d ' \t;' | sort >"$W/api.expected"
nm -D --defined-only "$R/lib/libfaultline.so" | awk '$3 != "FAULTLINE_0.1" {print $3}' |
	sed 's/@@FAULTLINE_0.1$//' | sort >"$W/api.exported"
if ! diff -u "$W/api.expected" "$W/api.exported" >"$W/api.diff"; then
	echo "install: libfaultline.so's exports are not lib/libfaultline.map's (- map, + library):"
	cat "$W/api.diff"
	exit 1
fi
grep -qx fl_stack_walk "$W/api.exported" && grep -qx __llvm_deoptimize "$W/api.exported" &&
	[ "$(grep -c '^fl_' "$W/api.exported")" -eq "$(($(wc -l <"$W/api.exported") - 1))" ] ||
	{ echo "install: the exports are not the fl_ API and __llvm_deoptimize"; exit 1; }
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
echo "install: ok (headers, libraries, pkg-config, ${#pages[@]} man pages rendered, json.md, bash completion, systemd units, $(wc -l <"$W/api.exported") exports as the map lists them, deps per goal)"
