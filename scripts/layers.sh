#!/bin/bash
# SPDX-License-Identifier: MIT
#
# scripts/layers.sh OBJDIR DOC: derives the dependency graph of the code from
# the code itself, and checks it against the one DOC (docs/architecture.md)
# allows.
#
# Nodes:
#   lib/DIR                 a directory of the library (one layer), and bpf
#                           (the eBPF program's user-space loader)
#   daemon/faultlined/F.c   one file of the daemon
#   daemon/cli              the command-line tool, as a whole
#   daemon/metrics          the metrics exposition (the CLI's and the daemon's)
# Edges, A -> B ("A uses B"), from two sources:
#   - calls and data: an undefined symbol of an object of A that an object
#     of B defines (nm on OBJDIR's objects);
#   - includes: A's sources or headers include a header of B (for a daemon
#     file, the header named after the file: "session.h" is session.c's).
# Within one library directory files may use each other; every other edge is
# checked.
#
# It fails (exit 1), naming what it found, when
#   - a file outside an architecture's directory (lib/LAYER/x86_64/, ...)
#     tests a compiler's architecture macro (__x86_64__, __aarch64__, ...), or
#   - the graph has a circle (tsort finds it), or
#   - an edge is not among the allowed ones: DOC's block that follows the
#     line "<!-- check-layers: allowed edges -->", of lines "A: B C ...".
# With -v it prints every edge, with the symbol or include that made it.
set -euo pipefail

verbose=0
if [ "${1:-}" = -v ]; then
	verbose=1
	shift
fi
if [ $# -ne 2 ]; then
	echo "usage: $0 [-v] OBJDIR DOC" >&2
	exit 2
fi
objdir=$1
doc=$2
[ -d "$objdir" ] || { echo "$0: $objdir: no such directory (build first)" >&2; exit 2; }
[ -r "$doc" ] || { echo "$0: $doc: cannot read" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The node a source, header or object path belongs to.
node_of() {
	local p=${1#"$objdir"/}
	case $p in
	lib/*/*)		p=${p#lib/}; echo "lib/${p%%/*}" ;;
	lib/*)			echo "lib/${p#lib/}" | sed 's/\.[cho]$//' ;;
	bpf/*)			echo bpf ;;
	daemon/faultlined/*)	echo "daemon/faultlined/$(basename "${p%.*}").c" ;;
	daemon/cli/*)		echo daemon/cli ;;
	daemon/metrics/*)	echo daemon/metrics ;;
	*)			echo "" ;;
	esac
}

# Only the objects of sources that exist: a file moved or removed leaves its
# old object behind in a build tree.
objs=$(for d in lib daemon bpf; do
	if [ -d "$objdir/$d" ]; then find "$objdir/$d" -name "*.o"; fi
done | sort | while read -r o; do
	src=${o#"$objdir"/}
	if [ -f "${src%.o}.c" ]; then echo "$o"; fi
done)
[ -n "$objs" ] || { echo "$0: no objects under $objdir" >&2; exit 2; }

# Symbol edges.
for o in $objs; do
	n=$(node_of "$o")
	[ -n "$n" ] || continue
	# The shim's definitions are the C library's names it interposes
	# (sigaction, signal, dlopen): nothing in the tree calls the shim.
	if [ "$n" != lib/preload ]; then
		nm -P --defined-only "$o" | awk -v n="$n" '$2 ~ /^[TDBRVWGS]$/ { print $1, n }' >>"$tmp/def"
	fi
	nm -P --undefined-only "$o" | awk -v n="$n" '{ print $1, n }' >>"$tmp/undef"
done
sort -u -k1,1 "$tmp/def" >"$tmp/def.s"
sort -k1,1 "$tmp/undef" >"$tmp/undef.s"
# sym user definer -> "user definer sym"
join "$tmp/undef.s" "$tmp/def.s" | awk '$2 != $3 { print $2, $3, "calls " $1 }' >"$tmp/edges"

# Include edges.
srcs=$(find lib bpf daemon/faultlined daemon/cli daemon/metrics -name '*.[ch]' ! -name '*.bpf.c' | sort)
for s in $srcs; do
	n=$(node_of "$s")
	[ -n "$n" ] || continue
	# A daemon header with no .c of its name (types and constants only) is
	# not a node: its includes are its includers'.
	case $n in daemon/faultlined/*) [ -e "$n" ] || continue ;; esac
	{ grep -o '^#include "[^"]*"' "$s" || true; } | sed 's/^#include "//; s/"$//' | while read -r h; do
		case $n in
		daemon/faultlined/*)
			case $h in
			metrics/*) t=daemon/metrics ;;
			*/*) t=$(node_of "lib/$h") ;;
			*) t=$(node_of "daemon/faultlined/$h") ;;
			esac ;;
		daemon/cli)
			case $h in
			metrics/*) t=daemon/metrics ;;
			*/*) t=$(node_of "lib/$h") ;;
			*) t=daemon/cli ;;
			esac ;;
		*)
			case $h in
			*/*) t=$(node_of "lib/$h") ;;
			*) t=$n ;;
			esac ;;
		esac
		if [ "$t" != "$n" ]; then echo "$n $t includes $h"; fi
	done
done >>"$tmp/edges"

# The skeleton's loader is bpf's; a daemon file whose header has no .c is
# not a node of its own (a header of types and constants only).
awk '{ print $1, $2 }' "$tmp/edges" | sort -u >"$tmp/graph"
while read -r a b; do
	case $b in
	daemon/faultlined/*.c)
		[ -e "$b" ] || continue ;;
	esac
	echo "$a $b"
done <"$tmp/graph" >"$tmp/graph.f"

if [ $verbose = 1 ]; then
	sort -u "$tmp/edges" | awk '{ k = $1 " -> " $2; if (!(k in seen)) { seen[k] = 1; print k "   (" $3 " " $4 ")" } }'
fi

fail=0

# Circles.
if ! tsort "$tmp/graph.f" >/dev/null 2>"$tmp/tsort"; then
	echo "check-layers: the dependency graph has a circle:"
	sed 's/^/  /' "$tmp/tsort"
	fail=1
fi

# Allowed edges.
awk '
	/<!-- check-layers: allowed edges -->/ { on = 1; next }
	on && /^```/ { if (++fence == 2) exit; next }
	on && fence == 1 && /:/ {
		sub(/#.*/, "")
		split($0, p, ":")
		gsub(/[ \t]/, "", p[1])
		m = split(p[2], to, /[ \t]+/)
		for (i = 1; i <= m; i++)
			if (to[i] != "")
				print p[1], to[i]
	}
' "$doc" | sort -u >"$tmp/allowed"
[ -s "$tmp/allowed" ] || { echo "check-layers: $doc has no allowed-edges block" >&2; exit 2; }

while read -r a b; do
	if ! grep -qx "$a $b" "$tmp/allowed"; then
		why=$(awk -v a="$a" -v b="$b" '$1 == a && $2 == b { $1 = $2 = ""; print substr($0, 3) }' \
			"$tmp/edges" | sort -u | head -3 | paste -sd, -)
		echo "check-layers: $a -> $b is not allowed by $doc ($why)"
		fail=1
	fi
done <"$tmp/graph.f"

# One place per architecture: only a layer's ARCH directory (lib/*/x86_64/,
# lib/*/aarch64/, bpf/*/...) tells the architectures apart.
arch_tests=$(grep -rlE '__(x86_64|amd64|aarch64|arm64|i386|arm)__' lib daemon bpf include \
	--include='*.[chS]' --include='*.inc' 2>/dev/null |
	grep -vE '/(x86_64|aarch64)/' || true)
if [ -n "$arch_tests" ]; then
	echo "check-layers: these test the architecture outside an architecture's directory:"
	echo "$arch_tests" | sed 's/^/  /'
	fail=1
fi

if [ $fail = 0 ]; then
	echo "check-layers: $(wc -l <"$tmp/graph.f") edges between $(awk '{ print $1; print $2 }' \
		"$tmp/graph.f" | sort -u | wc -l) nodes, no circle, each one allowed by $doc;" \
		"the architecture is told apart only in its directories"
fi
exit $fail
