#!/usr/bin/python3
# Compares what programs did with what faultlined counted.
#
#   check.py stats STATS_JSON DONE_FILE...   (faultline stats --json)
#   check.py state STATE_DIR DONE_FILE...    (faultlined's records, proc.N.json)
#   check.py holds STATE_DIR PID N           (the records hold N faults for PID)
#   check.py many stats|state PATH DONE_FILE...
#
# Each DONE_FILE holds a program's output; its line "done PID LOADS STORES
# JIT" says what it did.  For each such pid there must be exactly one
# entry, exited, whose faults by kind are exact: load = LOADS + JIT (the
# JIT modules' site is a load), store = STORES, load-store = 0.  Prints
# what differs; exits 0 when nothing does.
#
# many: each DONE_FILE's lines "many N" and "many-site PC FAULTS" (the
# program's many:N step) say that its module counts-many has N sites and
# faults at exactly those PCs: the pid's one entry must have them, each
# with its own count, and no other site of the module any (the state: the
# module's N sites, all of them in its record).
import glob
import json
import os
import struct
import sys

KINDS = {1: "load", 2: "load-store", 3: "store"}


def counts_file(json_name, header):
    """The faults per slot of a record's counts file (docs/state.md), when it is the record's."""
    try:
        with open(json_name[:-len(".json")] + ".counts", "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    if len(data) < 64:
        return None
    magic, version, serial, stamp, slots, size = struct.unpack_from("<IIQQII", data)
    if (magic, version, size, serial) != (0x434c4c46, 1, 32, header["serial"]) or \
            stamp != header.get("stamp") or len(data) != 64 + 32 * slots:
        return None
    return [struct.unpack_from("<Q", data, 64 + 32 * i)[0] for i in range(slots)]


def records(state_dir):
    """The records of a state directory (docs/state.md) as state.json's processes."""
    procs = []
    for name in glob.glob(os.path.join(state_dir, "proc.*.json")):
        try:
            with open(name) as f:
                lines = [json.loads(l) for l in f]
        except FileNotFoundError:
            continue  # removed with its process since the glob
        p = dict(lines[0], modules=[])
        # A live process's counts: its counts file's, for the modules not removed.
        counts = counts_file(name, lines[0])
        removed = True
        for o in lines[1:]:
            if isinstance(o, dict):
                p["modules"].append({"name": o["module"], "sites": []})
                removed = o.get("removed", True)
            else:
                # [faulting_pc, handler_pc, kind, faults, slot, populations, function]
                faults = o[3]
                if counts is not None and not removed and len(o) >= 7 and o[4] < len(counts):
                    faults = counts[o[4]]
                p["modules"][-1]["sites"].append({"faulting_pc": o[0], "kind": o[2],
                                                  "faults": faults})
        procs.append(p)
    return {"processes": procs}


def entries(what, path):
    if what == "state":
        doc = records(path)
    else:
        with open(path) as f:
            doc = json.load(f)
    out = []
    for p in doc["processes"]:
        by_kind = {"load": 0, "store": 0, "load-store": 0}
        sites = 0
        mods = set()
        if what == "stats":
            for s in p.get("sites", []):
                by_kind[s["kind"]] += s["faults"]
                sites += 1
                mods.add(s["module"])
        else:
            for m in p["modules"]:
                mods.add(m["name"])
                for s in m["sites"]:
                    by_kind[KINDS.get(s["kind"], "?")] = \
                        by_kind.get(KINDS.get(s["kind"], "?"), 0) + s["faults"]
                    sites += 1
        # The daemon's "final" (its counts are final); a record has none.
        out.append({"pid": p["pid"], "exited": p["exited"] and p.get("final", True),
                    "kinds": by_kind,
                    "sites": sites, "modules": sorted(mods)})
    return out


def many(what, path, done):
    """Prints what differs in module counts-many; returns how many entries do."""
    if what == "state":
        procs = records(path)["processes"]
    else:
        with open(path) as f:
            procs = json.load(f)["processes"]
    bad = 0
    for d in done:
        lines = [l.split() for l in open(d)]
        pid = [int(l[1]) for l in lines if l[0] == "done"]
        n = [int(l[1]) for l in lines if l[0] == "many"]
        want = {int(l[1], 16): int(l[2]) for l in lines if l[0] == "many-site"}
        if len(pid) != 1 or len(n) != 1 or not want:
            print("%s: no 'done', 'many' and 'many-site' lines" % d)
            bad += 1
            continue
        mine = [p for p in procs if p["pid"] == pid[0]]
        if len(mine) != 1:
            print("pid %d: %d entries (want 1)" % (pid[0], len(mine)))
            bad += 1
            continue
        p = mine[0]
        if what == "state":
            mods = [m for m in p["modules"] if m["name"] == "counts-many"]
            sites = [s for m in mods for s in m["sites"]]
            if len(mods) != 1 or len(sites) != n[0]:
                print("pid %d: %d counts-many modules, %d sites (want 1 of %d)" %
                      (pid[0], len(mods), len(sites), n[0]))
                bad += 1
        else:
            sites = [s for s in p.get("sites", []) if s["module"] == "counts-many"]
            if len(p.get("sites", [])) + p.get("sites_unlisted", 0) < n[0]:
                print("pid %d: %d sites in all (want %d or more)" %
                      (pid[0], len(p.get("sites", [])) + p.get("sites_unlisted", 0), n[0]))
                bad += 1
        got = {s["faulting_pc"]: s["faults"] for s in sites if s["faults"]}
        if got != want:
            print("pid %d: counts-many's faults by PC %s, want %s" %
                  (pid[0], {hex(k): v for k, v in sorted(got.items())},
                   {hex(k): v for k, v in sorted(want.items())}))
            bad += 1
    return bad


def main():
    what, path, done = sys.argv[1], sys.argv[2], sys.argv[3:]
    if what == "many":
        sys.exit(1 if many(path, done[0], done[1:]) else 0)
    if what == "holds":
        pid, want = int(done[0]), int(done[1])
        sys.exit(sum(s["faults"] for p in records(path)["processes"] if p["pid"] == pid
                     for m in p["modules"] for s in m["sites"]) != want)
    got = entries(what, path)
    bad = 0
    for d in done:
        line = [l for l in open(d) if l.startswith("done ")]
        if len(line) != 1:
            print("%s: no 'done' line" % d)
            bad += 1
            continue
        _, pid, loads, stores, jit = line[0].split()
        pid, want = int(pid), {"load": int(loads) + int(jit), "store": int(stores),
                               "load-store": 0}
        mine = [e for e in got if e["pid"] == pid]
        if len(mine) != 1:
            print("pid %d: %d entries (want 1): %s" % (pid, len(mine), mine))
            bad += 1
            continue
        e = mine[0]
        if not e["exited"] or e["kinds"] != want:
            print("pid %d: exited %s, faults %s, want %s (%d sites, modules %s)" %
                  (pid, e["exited"], e["kinds"], want, e["sites"], e["modules"]))
            bad += 1
    sys.exit(1 if bad else 0)


main()
