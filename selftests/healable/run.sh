#!/bin/bash
# SPDX-License-Identifier: MIT
#
#   selftests/healable/run.sh [--min PERCENT] FAULTLINE FILE...
#
# Runs `faultline healable --json` over FILEs (the corpus and the random
# corpus: selftests/healable/build.mk) and fails when fewer than PERCENT
# (default 99) of all their implicit-check sites can be healed in place, or
# when a file could not be read.  Prints the figures per kind of file
# (objects and each link mode) and every site that cannot be healed, with
# its file, function+offset, bytes and reason.
set -euo pipefail

min=99
if [ "${1:-}" = --min ]; then
	min=$2
	shift 2
fi
if [ $# -lt 2 ]; then
	echo "usage: $0 [--min PERCENT] FAULTLINE FILE..." >&2
	exit 2
fi
fl=$1
shift
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

status=0
"$fl" healable --json "$@" >"$tmp" || status=$?
if [ "$status" != 0 ]; then
	echo "check-healable: faultline healable exited with $status"
fi

python3 - "$min" "$tmp" "$status" <<'EOF'
import collections
import json
import os
import sys

minimum = float(sys.argv[1])
doc = json.load(open(sys.argv[2]))
status = int(sys.argv[3])

def group(path):
    """objects, or the link mode (all.pie-lld -> pie-lld)."""
    name = os.path.basename(path)
    if name.endswith(".o"):
        return "objects -O1..-O3" if "-O0-" not in name else "objects -O0"
    return name.split(".", 1)[1] if "." in name else name

tactics = ["B1", "B2", "T1", "T3"]
groups = collections.OrderedDict()
bad = []
unreadable = []
for f in doc["files"]:
    if not f["ok"]:
        unreadable.append(f)
        continue
    g = groups.setdefault(group(f["file"]), collections.Counter())
    g["files"] += 1
    for k in ["sites", "healable"] + tactics:
        g[k] += f["summary"][k]
    for s in f["sites"]:
        if not s["healable"]:
            bad.append((f["file"], s))

def line(label, c):
    pct = 100.0 * c["healable"] / c["sites"] if c["sites"] else 100.0
    return "  %-22s %4d files %7d sites %7d healable %7.3f%%  (%s)" % (
        label, c["files"], c["sites"], c["healable"], pct,
        ", ".join("%s %d" % (t, c[t]) for t in tactics))

total = collections.Counter()
for name in sorted(groups):
    total.update(groups[name])
print("check-healable: implicit-check sites that can be healed in place")
for name in sorted(groups):
    print(line(name, groups[name]))
print(line("all", total))
if bad:
    print("check-healable: %d sites cannot be healed in place:" % len(bad))
    for path, s in bad:
        where = "%s+0x%x" % (s["function"] or "?", s["function_offset"])
        print("  %s: %s (0x%x, %d bytes: %s): %s" % (
            path, where, s["address"], s["length"], s["bytes"], s["why"]))
for f in unreadable:
    print("check-healable: %s: %s" % (f["file"], f["error"]))
summary = doc["summary"]
pct = summary["percent"]
ok = pct >= minimum and not unreadable and status == 0 and summary["sites"] > 0
print("check-healable: %d of %d sites (%.3f%%) can be healed in place; at least %g%% needed: %s" % (
    summary["healable"], summary["sites"], pct, minimum, "pass" if ok else "FAIL"))
sys.exit(0 if ok else 1)
EOF
