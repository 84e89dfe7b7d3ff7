#!/usr/bin/python3
# Compares what programs did with what faultlined counted.
#
#   check.py stats STATS_JSON DONE_FILE...   (faultline stats --json)
#   check.py state STATE_DIR DONE_FILE...    (faultlined's records, proc.N.json)
#   check.py holds STATE_DIR PID N           (the records hold N faults for PID)
#
# Each DONE_FILE holds a program's output; its line "done PID LOADS STORES
# JIT" says what it did.  For each such pid there must be exactly one
# entry, exited, whose faults by kind are exact: load = LOADS + JIT (the
# JIT modules' site is a load), store = STORES, load-store = 0.  Prints
# what differs; exits 0 when nothing does.
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
                p["modules"][-1]["sites"].append({"kind": o[2], "faults": faults})
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
        out.append({"pid": p["pid"], "exited": p["exited"], "kinds": by_kind,
                    "sites": sites, "modules": sorted(mods)})
    return out


def main():
    what, path, done = sys.argv[1], sys.argv[2], sys.argv[3:]
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
