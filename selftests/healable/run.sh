#!/bin/bash
# SPDX-License-Identifier: MIT
#
#   selftests/healable/run.sh [--min PERCENT] FAULTLINE FILE...
#
# Runs `faultline healable --json` over FILEs (the corpus, the random and
# the dense corpus: selftests/healable/build.mk) and fails when a site
# cannot be healed for want of room (every site can be healed in place or
# by relocating its function, unless the function cannot move for a reason
# of its own: a computed jump, code that reads itself, exception tables,
# no extent, an entry that cannot take a jump, a copy too large, an
# instruction that cannot move; or the site has no base register), when
# fewer than PERCENT (default 99) of all the sites can be healed, or when
# a file could not be read.  Prints the figures per kind of file (objects
# and each link mode) by tactic, and every site that cannot be healed,
# with its file, function+offset, bytes and reason.
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

tactics = ["B1", "B2", "T1", "T2", "T3", "REL"]
# A site may stay implicit for these reasons only: its function cannot move.
excused = {"undecoded", "no_base_register", "branch", "no_extent", "computed_jump",
           "reads_own_code", "exception_tables", "entry", "too_large", "unmovable",
           "stack_map_records"}
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
    return "  %-24s %4d files %7d sites %7d healable %7.3f%%  (%s)" % (
        label, c["files"], c["sites"], c["healable"], pct,
        ", ".join("%s %d" % (t, c[t]) for t in tactics))

total = collections.Counter()
for name in sorted(groups):
    total.update(groups[name])
print("check-healable: implicit-check sites that can be healed, by tactic")
for name in sorted(groups):
    print(line(name, groups[name]))
print(line("all", total))
unexcused = [b for b in bad if b[1]["reason"] not in excused]
if bad:
    print("check-healable: %d sites cannot be healed, %d of them for want of room:" % (
        len(bad), len(unexcused)))
    for path, s in bad:
        where = "%s+0x%x" % (s["function"] or "?", s["function_offset"])
        print("  %s: %s (0x%x, %d bytes: %s): %s [%s]%s" % (
            path, where, s["address"], s["length"], s["bytes"], s["why"], s["reason"],
            "" if s["reason"] in excused else "  <- not a reason of its function"))
reasons = collections.Counter(s["reason"] for _, s in bad)
for r, n in sorted(reasons.items()):
    print("  by reason: %-20s %d" % (r, n))
for f in unreadable:
    print("check-healable: %s: %s" % (f["file"], f["error"]))
summary = doc["summary"]
pct = summary["percent"]
ok = (pct >= minimum and not unreadable and status == 0 and summary["sites"] > 0
      and not unexcused)
print("check-healable: %d of %d sites (%.3f%%) can be healed (%s); at least %g%% needed, "
      "none unhealable for want of room (%d): %s" % (
          summary["healable"], summary["sites"], pct,
          ", ".join("%s %.2f%%" % (t, summary["percent_by_tactic"][t]) for t in tactics),
          minimum, len(unexcused), "pass" if ok else "FAIL"))
sys.exit(0 if ok else 1)
EOF
