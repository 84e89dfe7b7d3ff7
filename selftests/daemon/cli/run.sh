#!/bin/bash
# The daemon's commands end to end: faultlined on a temporary socket, a
# program under faultline run that fails known implicit checks, and
# faultline stats (table, --json, --openmetrics, --prometheus), ps, sites,
# stackmaps, request and top (in a real terminal: tmux) against it.
#   run.sh FAULTLINE FAULTLINED WORKDIR JIT_NAMES JITPERF
# (JIT_NAMES: selftests/daemon/cli/jit_names.c's program; JITPERF:
# jitperf.c's.)
# Waits are for events (a file, a line, counts), up to WAIT_S: a slow
# machine only makes the test slower.  Every process started here (the
# daemon, the program, the fake daemon, tmux) is killed when it ends.
set -u

FL=$(realpath "$1")
FLD=$(realpath "$2")
W=$3
JIT_NAMES=$(realpath "$4")
JITPERF=$(realpath "$5")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
# The Debian python3, which has python3-prometheus-client (scripts/deps.sh).
PY=/usr/bin/python3
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
W=$(pwd)

pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# WAIT_S and eventually.
. "$HERE/../wait.sh"

# run NAME EXPECTED_STATUS CMD...: runs CMD (at most WAIT_S), output in NAME.out/.err
run() {
	local name=$1 want=$2 got
	shift 2
	timeout "$WAIT_S" "$@" >"$name.out" 2>"$name.err"
	got=$?
	if [ "$got" = "$want" ]; then ok; else bad "$name: exit $got, expected $want"; sed 's/^/  | /' "$name.err" | head -5; fi
}

has() {
	if grep -qF -- "$3" "$2"; then ok; else bad "$1: '$3' not in $2"; sed 's/^/  | /' "$2" | head -8; fi
}

empty() {
	if [ ! -s "$2" ]; then ok; else bad "$1: $2 is not empty"; head -3 "$2"; fi
}

# py NAME SCRIPT ARGS...: a Python check that exits 0 when it holds
py() {
	local name=$1
	shift
	if "$PY" "$@" >"$name.py.out" 2>&1; then ok; else bad "$name"; sed 's/^/  | /' "$name.py.out" | head -10; fi
}

SOCK=$W/fl.sock
export FAULTLINE_SOCKET=$SOCK
# fl_init waits for the whole handshake (10 ms by default): the kernel's
# counts checked below then cover the process, however slow the machine.
export FAULTLINE_REGISTER_WAIT_MS=300000
# tmux's server socket in the work directory, not in /tmp/tmux-UID.
TMUX_SOCK=$W/tmux.sock
DPID=
PROG_PID=
FAKE_PID=
# Every job still running (daemon, program, fake daemon) and tmux's server.
cleanup() {
	local p
	exec 7>&- 8>&- 2>/dev/null
	for p in $(jobs -p); do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	tmux -S "$TMUX_SOCK" kill-server 2>/dev/null
	# jitperf's perf map, when it was killed before removing it
	if [ -n "${JP_PROC:-}" ]; then rm -f "/tmp/perf-$JP_PROC.map"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the program: selftests/cli/sample.ll's checks and stack map, and
# shared_pc.ll's two stack maps at one address, no-PIE (PCs = link-time)
llc-14 -O2 -enable-implicit-null-checks -filetype=obj "$ROOT/selftests/cli/sample.ll" -o sample.o || exit 1
llc-14 -O2 -filetype=obj "$HERE/shared_pc.ll" -o shared_pc.o || exit 1
gcc -O2 -no-pie "$HERE/prog.c" sample.o shared_pc.o -o prog || exit 1
"$FL" faultmap --json prog >faultmap.json || exit 1
"$PY" - <<'EOF' >pcs || exit 1
import json
d = json.load(open("faultmap.json"))
for t in d["files"][0]["tables"]:
    for f in t["functions"]:
        for x in f["faults"]:
            print(f["symbol"], x["faulting_pc"], x["faulting_pc_offset"])
EOF
LOAD_PC=$(awk '$1 == "load_field" { print $2 }' pcs)
STORE_PC=$(awk '$1 == "store_field" { print $2 }' pcs)
[ -n "$LOAD_PC" ] && [ -n "$STORE_PC" ] || { echo "no sites in prog's fault map"; exit 1; }

# ---- no daemon: exit 1, the socket named
run no_daemon 1 "$FL" stats
has no_daemon no_daemon.err "faultlined is not running at $SOCK"
run no_daemon_opt 1 "$FL" ps --socket "$W/other.sock"
has no_daemon_opt no_daemon_opt.err "$W/other.sock"

# ---- replies the real daemon seldom sends (fake_daemon.py)
# fake MODE: starts the fake daemon on its own socket
fake() {
	# The log too, here: the child truncates it only when it runs, and the
	# last fake's "ready" read meanwhile let the client in before the bind.
	rm -f "$W/fake.sock" fake.log
	"$PY" "$HERE/fake_daemon.py" "$W/fake.sock" "$1" >fake.log 2>&1 &
	FAKE_PID=$!
	eventually grep -q ready fake.log || bad "fake daemon $1 not ready: $(cat fake.log)"
}
unfake() { kill "$FAKE_PID"; wait "$FAKE_PID" 2>/dev/null; FAKE_PID=; }
fake split
run split 0 "$FL" stats --json --socket "$W/fake.sock"
py split -c 'import json; d = json.load(open("split.out")); assert d["processes"][0]["faults"] == 12345, d'
run split_text 0 "$FL" sites 77 --socket "$W/fake.sock"
has split_text split_text.out "pid 77 (split), live, 1 site, 12345 faults"
run split_om 0 "$FL" stats --openmetrics --socket "$W/fake.sock"
has split_om split_om.out 'faultline_site_faults_total{pid="77",comm="split",module="/x/lib.so",function="f",faulting_pc="0x1000",kind="load"} 12345'
unfake
for mode in badjson wrongseq close eperm badmagic; do
	fake $mode
	run "fake_$mode" 1 "$FL" stats --socket "$W/fake.sock"
	empty "fake_$mode" "fake_$mode.out"
	unfake
done
has fake_badjson fake_badjson.err "the reply is not a JSON object"
has fake_wrongseq fake_wrongseq.err "a reply to another message"
has fake_close fake_close.err "closed the connection before answering"
has fake_eperm fake_eperm.err "faultline: stats: not yours"
has fake_badmagic fake_badmagic.err "bad message"
fake escape
run fake_escape 1 "$FL" stats --socket "$W/fake.sock"
has fake_escape fake_escape.err "faultline: stats: not ?[31myours"
unfake
# A document of wrong types and odd values: every command still answers,
# from what it can use, and the metrics hold one series per pid.
fake odd
run odd_stats 0 "$FL" stats --socket "$W/fake.sock"
has odd_stats odd_stats.out "$(printf '%-8s %-16s %-7s' 77 new live)"
# No KERNEL column from a kernel_faults that is not a number, no kernel
# line from a "kernel" that is not an object.
py odd_stats -c 'import sys; t = open("odd_stats.out").read(); sys.exit("KERNEL" in t or "kernel:" in t)'
run odd_ps 0 "$FL" ps --socket "$W/fake.sock"
run odd_top 0 "$FL" top --iterations 1 --socket "$W/fake.sock"
run odd_stackmaps 0 "$FL" stackmaps 77 --socket "$W/fake.sock"
has odd_stackmaps odd_stackmaps.out "#0 Direct        rsp - 9223372036854775808, size 8"
has odd_stackmaps odd_stackmaps.out "#1 Register?[2J"
run odd_om 0 "$FL" stats --openmetrics --socket "$W/fake.sock"
py odd_om <<'EOF2'
from prometheus_client.openmetrics.parser import text_string_to_metric_families
text = open("odd_om.out").read()
fams = {f.name: f for f in text_string_to_metric_families(text)}
procs = [(s.labels["pid"], s.labels["comm"], s.value) for s in fams["faultline_process_faults"].samples]
# Series of a process only for the processes of the top sites: 77's.
assert procs == [("77", "new", 2)], procs
# "78" and "not a process" both read as pid 0: one process, the later one.
execs = {s.labels["executable"]: s.value for s in fams["faultline_executable_processes"].samples}
assert execs == {"": 1, "new": 1}, execs
sites = [(s.labels["pid"], s.labels["comm"], s.value) for s in fams["faultline_site_faults"].samples]
assert sites == [("77", "new", 7)], sites
EOF2
unfake

# ---- the daemon
"$FLD" --socket "$SOCK" --state-dir "$W/state" --log-level info 2>daemon.log &
DPID=$!
eventually grep -q "listening on" daemon.log ||
	{ echo "faultlined did not start"; cat daemon.log; exit 1; }

run empty 0 "$FL" stats
has empty empty.out "No registered processes."
run empty_json 0 "$FL" stats --json
# Root: the daemon loads its eBPF program.
py empty_json -c 'import json,sys; d=json.load(open("empty_json.out")); assert d["processes"] == [] and d["bpf"] is True and d["bpf_stats"]["map_update_failures"] == 0, d'
run empty_om 0 "$FL" stats --openmetrics
has empty_om empty_om.out "# EOF"

# ---- a program that failed load_field's check 5 times and store_field's 3
mkfifo in.fifo
"$FL" run ./prog 5 3 <in.fifo >prog.out 2>prog.err &
PROG_PID=$!
exec 7>in.fifo
eventually grep -q '^ready' prog.out
PID=$(awk '/^ready/ { print $2 }' prog.out)
[ -n "$PID" ] || { echo "prog did not start"; cat prog.out prog.err; exit 1; }

# wait_faults L S: until stats --json shows them (registration is asynchronous)
wait_faults() {
	eventually has_faults "$@"
}
has_faults() {
	"$FL" stats --json --pid "$PID" >wait.json 2>/dev/null &&
		"$PY" - "$1" "$2" "$LOAD_PC" "$STORE_PC" <<'EOF' 2>/dev/null
import json, sys
l, s, lpc, spc = map(int, sys.argv[1:])
d = json.load(open("wait.json"))
got = {x["faulting_pc"]: x["faults"] for x in d["processes"][0]["sites"]}
sys.exit(0 if got == {lpc: l, spc: s} else 1)
EOF
}
wait_faults 5 3 && ok || bad "stats --json never showed 5 and 3 faults"

# ---- stats --json: the schema of docs/json.md, exact counts
run stats_json 0 "$FL" stats --json
py stats_json - "$PID" "$LOAD_PC" "$STORE_PC" <<'EOF'
import json, sys
pid, lpc, spc = map(int, sys.argv[1:])
d = json.load(open("stats_json.out"))
assert set(d) == {"schema", "version", "bpf", "bpf_stats", "processes"}, d.keys()
assert d["schema"] == 1 and isinstance(d["version"], str) and d["version"], d
assert d["bpf"] is True and d["bpf_stats"]["ring_buffer_drops"] == 0, d["bpf_stats"]
[p] = [p for p in d["processes"] if p["pid"] == pid]
for k, t in (("pid", int), ("comm", str), ("uid", int), ("exited", bool),
             ("registered_ms", int), ("modules", int), ("num_sites", int),
             ("faults", int), ("sites", list)):
    assert isinstance(p[k], t), (k, p[k])
assert p["comm"] == "prog" and p["exited"] is False and "exited_ms" not in p, p
assert p["num_sites"] == 2 and p["faults"] == 8 and p["modules"] >= 1, p
sites = {s["faulting_pc"]: s for s in p["sites"]}
assert set(sites) == {lpc, spc}, sites
assert sites[lpc]["faults"] == 5 and sites[lpc]["kind"] == "load", sites[lpc]
assert sites[spc]["faults"] == 3 and sites[spc]["kind"] == "store", sites[spc]
for s in p["sites"]:
    assert set(s) >= {"module", "function", "faulting_pc", "handler_pc", "kind",
                      "faults", "unloaded"}, s
    assert s["function"] is None or isinstance(s["function"], str), s
    assert s["unloaded"] is False and s["handler_pc"] > s["faulting_pc"], s
    # The kernel's count of each site equals dispatch's.
    assert s["kernel_faults"] == s["faults"], s
k = p["kernel"]
assert k["complete"] is True and k["fault_signals"] == 8 and k["stray_fault_signals"] == 0, k
# About every process: the counts, not the detail.
assert "signals" not in k and "page_faults" not in k, k
EOF

# ---- stats --json --pid: the kernel's view in detail
run stats_json_pid 0 "$FL" stats --json --pid "$PID"
py stats_json_pid - "$PID" <<'EOF'
import json, sys
pid = int(sys.argv[1])
d = json.load(open("stats_json_pid.out"))
[p] = d["processes"]
k = p["kernel"]
assert p["pid"] == pid and k["implicit"] == 8 and k["page_faults"] >= 8, k
assert all(sig["site"] and sig["signal"] == 11 for sig in k["signals"]), k
assert sum(sig["count"] for sig in k["signals"]) == 8, k
assert isinstance(k["stray_faults"], list) and isinstance(k["recent_signals"], list), k
EOF

# ---- the table, both orders, --pid
run stats_text 0 "$FL" stats
has stats_text stats_text.out "$(printf '%-8s %-16s %-7s' "$PID" prog live)"
has stats_text stats_text.out "$(printf '0x%-16x load' "$LOAD_PC")"
has stats_text stats_text.out "$(printf '0x%-16x store' "$STORE_PC")"
# most faults first: load_field's line comes before store_field's
[ "$(grep -n "$(printf '0x%x ' "$LOAD_PC")" stats_text.out | cut -d: -f1)" -lt \
  "$(grep -n "$(printf '0x%x ' "$STORE_PC")" stats_text.out | cut -d: -f1)" ] && ok ||
	bad "stats: sites not sorted by faults"
run stats_recent 0 "$FL" stats --sort recent
has stats_recent stats_recent.out "$PID"
run stats_pid 0 "$FL" stats --pid "$PID"
has stats_pid stats_pid.out "prog"
run stats_nopid 1 "$FL" stats --pid 999999999
has stats_nopid stats_nopid.err "no registered process 999999999"

# ---- --top and --all.  A second program fails load_field's check 3 times
# and never store_field's: stats lists only the site that failed, and
# counts the other.
mkfifo in2.fifo
"$FL" run ./prog 3 0 <in2.fifo >prog2.out 2>prog2.err &
exec 8>in2.fifo
eventually grep -q '^ready' prog2.out
PID2=$(awk '/^ready/ { print $2 }' prog2.out)
# has_total PID N: stats --json shows N faults for PID
has_total() {
	"$FL" stats --json --all --pid "$1" >wait2.json 2>/dev/null &&
		"$PY" -c 'import json, sys
sys.exit(json.load(open("wait2.json"))["processes"][0]["faults"] != int(sys.argv[1]))' "$2"
}
eventually has_total "${PID2:-0}" 3 && ok || bad "stats never showed the second program's 3 faults"
run failed_only 0 "$FL" stats --json --pid "$PID2"
py failed_only - "$LOAD_PC" <<'EOF'
import json, sys
[p] = json.load(open("failed_only.out"))["processes"]
assert [(s["faulting_pc"], s["faults"]) for s in p["sites"]] == [(int(sys.argv[1]), 3)], p["sites"]
assert p["num_sites"] == 2 and p["sites_never_failed"] == 1 and p["sites_unlisted"] == 1, p
EOF
run failed_all 0 "$FL" stats --json --all --pid "$PID2"
py failed_all <<'EOF'
import json
[p] = json.load(open("failed_all.out"))["processes"]
assert sorted(s["faults"] for s in p["sites"]) == [0, 3], p["sites"]
assert p["sites_never_failed"] == 1 and "sites_unlisted" not in p, p
EOF
run failed_text 0 "$FL" stats --pid "$PID2"
has failed_text failed_text.out "(1 site never failed: --all lists it)"
if grep -qF "$(printf '0x%-16x store' "$STORE_PC")" failed_text.out; then
	bad "stats listed a site that never failed"
else
	ok
fi
run failed_text_all 0 "$FL" stats --all --pid "$PID2"
has failed_text_all failed_text_all.out "$(printf '0x%-16x store' "$STORE_PC")"
if grep -qF "never failed" failed_text_all.out; then bad "stats --all: hint at --all"; else ok; fi
# --top 1 of the first program's two failed sites: the one that failed most.
run top1 0 "$FL" stats --json --top 1 --pid "$PID"
py top1 - "$LOAD_PC" <<'EOF'
import json, sys
[p] = json.load(open("top1.out"))["processes"]
assert [s["faulting_pc"] for s in p["sites"]] == [int(sys.argv[1])], p["sites"]
assert p["sites_unlisted"] == 1 and p["sites_never_failed"] == 0 and p["faults"] == 8, p
EOF
run top1_text 0 "$FL" stats --top 1
has top1_text top1_text.out "(1 more site that failed as often or less: --top N, or faultline sites $PID, lists more)"
run top0 2 "$FL" stats --top 0
run top_big 2 "$FL" stats --top 4097
exec 8>&-

# ---- OpenMetrics, checked by prometheus_client's parser and by hand
run om 0 "$FL" stats --openmetrics
py om - "$PID" "$LOAD_PC" "$STORE_PC" <<'EOF'
import os, re, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
pid, lpc, spc = sys.argv[1:]
text = open("om.out").read()
assert text.endswith("# EOF\n"), "no # EOF at the end"
assert text.count("# EOF") == 1
fams = {f.name: f for f in text_string_to_metric_families(text)}
assert fams["faultline_site_faults"].type == "counter"
assert fams["faultline_process_faults"].type == "counter"
assert fams["faultline_processes"].type == "gauge"
for f in fams.values():
    assert f.documentation, f.name
got = {(s.labels["pid"], s.labels["faulting_pc"]): (s.name, s.value, s.labels)
       for s in fams["faultline_site_faults"].samples}
name, v, labels = got[(pid, "0x%x" % int(lpc))]
assert name == "faultline_site_faults_total" and v == 5, got
assert set(labels) == {"pid", "comm", "module", "function", "faulting_pc", "kind"}, labels
assert labels["kind"] == "load" and labels["comm"] == "prog", labels
assert got[(pid, "0x%x" % int(spc))][1] == 3, got
# Series that do not grow with processes and sites.
one = lambda name: [s for s in fams[name].samples]
assert [s.value for s in one("faultline_up")] == [1]
[b] = one("faultline_build_info")
assert b.value == 1 and b.labels["version"] and b.labels["daemon_version"] == b.labels["version"], b
ex = {s.labels["executable"]: s.value for s in one("faultline_executable_faults")}
assert ex["prog"] == 8 + 3, ex
mod = {s.labels["module"]: s.value for s in one("faultline_module_faults")}
# The executable's own module by its path: the main programs of two are two modules.
assert mod[os.getcwd() + "/prog"] == 8 + 3 and "(main program)" not in mod, mod
assert [s.value for s in one("faultline_bpf_up")] == [1]
assert one("faultline_bpf_page_faults_counted")[0].value >= 11
assert one("faultline_bpf_map_update_failures")[0].value == 0
assert one("faultline_sites")[0].value >= 4 and one("faultline_sites_failed")[0].value == 3
# every line is a metadata line, a sample or the EOF
for line in text.splitlines():
    assert re.match(r'^(# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .*|# EOF|'
                    r'[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})? [0-9]+)$', line), line
EOF
# --top 1: one site series, and one process's
run om_top1 0 "$FL" stats --openmetrics --top 1
py om_top1 - "$PID" "$LOAD_PC" <<'EOF'
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(open("om_top1.out").read())}
sites = [(s.labels["pid"], s.labels["faulting_pc"], s.value) for s in fams["faultline_site_faults"].samples]
assert sites == [(sys.argv[1], "0x%x" % int(sys.argv[2]), 5)], sites
procs = [s.labels["pid"] for s in fams["faultline_process_faults"].samples]
assert procs == [sys.argv[1]], procs
EOF
run prom 0 "$FL" stats --prometheus
py prom - "$PID" <<'EOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
text = open("prom.out").read()
assert "# EOF" not in text
# In the 0.0.4 format the TYPE line names the sample: the counter keeps its type.
assert "# TYPE faultline_site_faults_total counter" in text, text
fams = {f.name: f for f in text_string_to_metric_families(text)}
site = fams["faultline_site_faults"]
assert site.type == "counter" and sum(s.value for s in site.samples if s.labels["pid"] == sys.argv[1]) == 8
EOF

# ---- ps, sites
run ps 0 "$FL" ps
has ps ps.out "$(printf '%-8s %-16s %-7s' "$PID" prog live)"
run ps_json 0 "$FL" ps --json
py ps_json - "$PID" <<'EOF'
import json, sys
d = json.load(open("ps_json.out"))
[p] = [p for p in d["processes"] if p["pid"] == int(sys.argv[1])]
assert "sites" not in p and p["num_sites"] == 2 and p["faults"] == 8, p
EOF
run sites 0 "$FL" sites "$PID"
has sites sites.out "pid $PID (prog), live, 2 sites, 8 faults"
has sites sites.out "$(printf '0x%x' "$LOAD_PC")"
run sites_json 0 "$FL" sites --json "$PID"
py sites_json - "$PID" <<'EOF'
import json, sys
d = json.load(open("sites_json.out"))
[p] = d["processes"]
assert p["pid"] == int(sys.argv[1]) and len(p["sites"]) == 2, p
EOF
run sites_none 1 "$FL" sites 999999999
has sites_none sites_none.err "no registered process 999999999"

# ---- stackmaps: sample.ll's record 7 (a register, -3, 8589934592, an
# alloca), shared_pc.ll's 8 and 9 (one address)
run stackmaps 0 "$FL" stackmaps "$PID"
has stackmaps stackmaps.out "3 stack map records"
has stackmaps stackmaps.out "record 7 at 0x"
has stackmaps stackmaps.out "#0 Register"
has stackmaps stackmaps.out "#1 Constant      -3, size 8"
has stackmaps stackmaps.out "#2 ConstantIndex 8589934592"
grep -Eq '#3 Direct +(rsp|rbp) [-+] [0-9]+, size 8' stackmaps.out && ok || bad "stackmaps: no Direct rsp/rbp location"
run stackmaps_id 0 "$FL" stackmaps --id 7 "$PID"
has stackmaps_id stackmaps_id.out "record 7"
has stackmaps_id stackmaps_id.out "1 stack map record"
run stackmaps_noid 1 "$FL" stackmaps --id 10 "$PID"
has stackmaps_noid stackmaps_noid.err "has no stack map record 10"
# --pc: the record at its runtime PC, which for this non-PIE program is the
# function's address in the file plus the record's offset.
"$FL" stackmap --json prog >stackmap-file.json || exit 1
# record_pc ID: the runtime PC of the record with that ID
record_pc() {
	"$PY" - "$1" <<'EOF'
import json, sys
for t in json.load(open("stackmap-file.json"))["files"][0]["tables"]:
    for r in t["records"]:
        if r["id"] == int(sys.argv[1]):
            print(hex(t["functions"][r["function"]]["address"] + r["instruction_offset"]))
            sys.exit(0)
sys.exit(1)
EOF
}
REC_PC=$(record_pc 7) && SHARED_PC=$(record_pc 8) && [ "$(record_pc 9)" = "$SHARED_PC" ] ||
	{ bad "stackmap --json prog: records 7, 8 and 9 (8 and 9 at one PC) not found"; REC_PC=0x1; SHARED_PC=0x2; }
run stackmaps_pc 0 "$FL" stackmaps --pc "$REC_PC" "$PID"
has stackmaps_pc stackmaps_pc.out "record 7 at $REC_PC (prog+$REC_PC)"
has stackmaps_pc stackmaps_pc.out "1 stack map record"
# The daemon's lookup is the process's own (fl_stackmap_record_at): the
# record at exactly that address, the first in section order of the two
# there; the whole list has both.
grep -q "record 8 at $SHARED_PC" stackmaps.out && grep -q "record 9 at $SHARED_PC" stackmaps.out &&
	ok || bad "stackmaps: records 8 and 9 not both listed at $SHARED_PC"
run stackmaps_pc_shared 0 "$FL" stackmaps --pc "$SHARED_PC" "$PID"
has stackmaps_pc_shared stackmaps_pc_shared.out "1 stack map record"
has stackmaps_pc_shared stackmaps_pc_shared.out "record 8 at $SHARED_PC"
INSIDE=$(printf '0x%x' $((REC_PC + 1)))
run stackmaps_pc_inside 1 "$FL" stackmaps --pc "$INSIDE" "$PID"
has stackmaps_pc_inside stackmaps_pc_inside.err "has no stack map record at $INSIDE"
run stackmaps_nopc 1 "$FL" stackmaps --pc 1 "$PID"
has stackmaps_nopc stackmaps_nopc.err "has no stack map record at 0x1"
run stackmaps_pc_and_id 2 "$FL" stackmaps --pc 1 --id 7 "$PID"
run stackmaps_pc_json 0 "$FL" stackmaps --json --pc "$SHARED_PC" "$PID"
py stackmaps_pc_json - "$SHARED_PC" <<'EOF'
import json, sys
[p] = json.load(open("stackmaps_pc_json.out"))["processes"]
[r] = p["records"]
assert r["id"] == 8 and r["pc"] == int(sys.argv[1], 16), r
assert [(l["kind"], l["dwarf_reg"]) for l in r["locations"]] == [("Register", 5)], r
EOF
run stackmaps_json 0 "$FL" stackmaps --json "$PID"
py stackmaps_json <<'EOF'
import json
d = json.load(open("stackmaps_json.out"))
[p] = d["processes"]
assert [r["id"] for r in p["records"]] == [7, 8, 9], p["records"]
r = p["records"][0]
assert r["pc"] > 0 and r["live_outs"] == 0, r
kinds = [l["kind"] for l in r["locations"]]
assert kinds[1:] == ["Constant", "ConstantIndex", "Direct"], kinds
assert r["locations"][2]["constant"] == 8589934592, r["locations"][2]
EOF

# ---- requests through the process's ring
run ping 0 "$FL" request "$PID" ping 42
has ping ping.out "pid $PID: ping 42: answered 42 in"
run ping_json 0 "$FL" request --json "$PID" ping 7
py ping_json - "$PID" <<'EOF'
import json, sys
d = json.load(open("ping_json.out"))
assert d == {"pid": int(sys.argv[1]), "request": "ping", "status": 0, "value": 7}, d
EOF
# A real policy: high enough that the counts below never reach it.
run heal1 0 "$FL" request "$PID" heal-threshold 500
run heal2 0 "$FL" request "$PID" heal-threshold 600/30
has heal2 heal2.out "pid $PID: heal threshold 600/30 s (was 500/0 s)"
run heal3 0 "$FL" request "$PID" unheal-after 60
has heal3 heal3.out "pid $PID: unheal after 60 s (was 0)"
run ping_none 1 "$FL" request 999999999 ping
has ping_none ping_none.err "no registered process 999999999"

# ---- more failures while it runs: the counts follow exactly
echo "fail 4 2" >&7
wait_faults 9 5 && ok || bad "stats --json never showed 9 and 5 faults"

# ---- top, not a terminal: one plain frame per interval
run top_plain 0 "$FL" top --iterations 2 --interval 0.2
[ "$(grep -c '^faultline top - ' top_plain.out)" = 2 ] && ok || bad "top: not 2 frames"
has top_plain top_plain.out "$(printf '0x%x' "$LOAD_PC")"
if grep -q $'\033' top_plain.out; then bad "top: escapes when not on a terminal"; else ok; fi

# ---- top in a real terminal (tmux): a frame, then q; then Ctrl-C
# top_tty NAME KEYS: starts top in a detached tmux session, waits for its
# frame, sends KEYS, and checks that it exited 0 and gave the screen back.
top_tty() {
	local name=$1 keys=$2
	rm -f "$name.status"
	# The pane stays (sleep) after top, to be read; kill-session ends it.
	# 80 columns: the counts must show (they come first).
	tmux -S "$TMUX_SOCK" new-session -d -s "$name" -x 80 -y 40 \
		"FAULTLINE_SOCKET=$SOCK $FL top --interval 0.3; echo \$? >$W/$name.status; exec sleep 3600"
	eventually pane_has "$name" "$name.screen" "FAULTS/S +FAULTS" \
		"^$PID +prog +[-0-9.]+ +9  " ||
		bad "$name: at 80 columns no FAULTS/S and FAULTS, or not load_field's 9 faults"
	has "$name" "$name.screen" "faultline top - "
	has "$name" "$name.screen" "q: quit"
	has "$name" "$name.screen" "$(printf '%-8s %-15s' "$PID" prog)"
	# a later frame has rates
	eventually pane_has "$name" "$name.screen2" "faultline top - .* faults, [0-9.]+/s" &&
		ok || bad "$name: no rate in the header"
	tmux -S "$TMUX_SOCK" send-keys -t "$name" $keys
	eventually test -s "$name.status"
	if [ "$(cat "$name.status" 2>/dev/null)" = 0 ]; then ok; else bad "$name: top did not exit 0 (status '$(cat "$name.status" 2>/dev/null)')"; fi
	# the alternate screen is gone: the frame is not on the terminal any more
	tmux -S "$TMUX_SOCK" capture-pane -p -t "$name" >"$name.after"
	if grep -q "faultline top - " "$name.after"; then bad "$name: the screen was not restored"; else ok; fi
	# and the terminal is back in canonical mode with echo
	tmux -S "$TMUX_SOCK" kill-session -t "$name"
}
# pane_has NAME FILE REGEX...: the pane, captured to FILE, matches every REGEX.
pane_has() {
	local name=$1 out=$2 p
	shift 2
	tmux -S "$TMUX_SOCK" capture-pane -p -t "$name" >"$out" 2>/dev/null || return 1
	for p in "$@"; do
		grep -Eq -- "$p" "$out" || return 1
	done
}

if command -v tmux >/dev/null; then
	top_tty top_q q
	top_tty top_ctrlc C-c
else
	bad "tmux is not installed (scripts/deps.sh installs it)"
fi

# ---- where a site is: module+offset and function+offset, in --json and
# in the table.  prog is linked at its link-time addresses (no PIE): its
# module offsets are its PCs.  prog-pie is loaded at a bias: its module
# offsets are the addresses its file gives (nm), its PCs those plus the
# bias.  The function offsets are the fault map's.
LOAD_OFF=$(awk '$1 == "load_field" { print $3 }' pcs)
STORE_OFF=$(awk '$1 == "store_field" { print $3 }' pcs)
run where_json 0 "$FL" stats --json --all --pid "$PID"
py where_json - "$LOAD_PC" "$LOAD_OFF" "$STORE_PC" "$STORE_OFF" <<'EOF2'
import json, sys
lpc, loff, spc, soff = map(int, sys.argv[1:])
[p] = json.load(open("where_json.out"))["processes"]
sites = {s["faulting_pc"]: s for s in p["sites"]}
for pc, fn, off in ((lpc, "load_field", loff), (spc, "store_field", soff)):
    s = sites[pc]
    assert (s["module_offset"], s["function"], s["function_offset"]) == (pc, fn, off), s
    assert "function_from" not in s, s
EOF2
run where_text 0 "$FL" stats --pid "$PID"
has where_text where_text.out "$(printf 'prog+0x%x' "$LOAD_PC")"
has where_text where_text.out "$(printf 'load_field+0x%x' "$LOAD_OFF")"
has where_text where_text.out "$(printf 'store_field+0x%x' "$STORE_OFF")"

llc-14 -O2 -enable-implicit-null-checks -relocation-model=pic -filetype=obj \
	"$ROOT/selftests/cli/sample.ll" -o sample-pic.o || exit 1
llc-14 -O2 -relocation-model=pic -filetype=obj "$HERE/shared_pc.ll" -o shared_pc-pic.o || exit 1
# -z notext: the stack map section's relocations (docs/codegen.md).
gcc -O2 -pie -fPIE -Wl,-z,notext "$HERE/prog.c" sample-pic.o shared_pc-pic.o -o prog-pie || exit 1
PIE_LOAD=$(nm prog-pie | awk '$3 == "load_field" { print $1 }')
run pie 0 "$FL" run ./prog-pie 2 1 </dev/null
PIE_PID=$(awk '/^ready/ { print $2 }' pie.out)
# pie_named: its exited process's sites are named, with their counts
pie_named() {
	"$FL" stats --json --pid "${PIE_PID:-0}" >pie.json 2>/dev/null &&
		"$PY" -c 'import json
[p] = json.load(open("pie.json"))["processes"]
assert p["exited"] and p["faults"] == 3 and all(s["function"] for s in p["sites"])' 2>/dev/null
}
eventually pie_named && ok || bad "stats never showed prog-pie's 3 named faults"
py pie_json - "0x$PIE_LOAD" "$LOAD_OFF" <<'EOF2'
import json, os, sys
sym, loff = int(sys.argv[1], 16), int(sys.argv[2])
[p] = json.load(open("pie.json"))["processes"]
[s] = [s for s in p["sites"] if s["function"] == "load_field"]
assert s["module"] == os.getcwd() + "/prog-pie" and s["function_offset"] == loff, s
# The file's address of the instruction, and a load bias of whole pages.
assert s["module_offset"] == sym + loff, (s, hex(sym))
bias = s["faulting_pc"] - s["module_offset"]
assert bias > 0 and bias % 4096 == 0, hex(bias)
EOF2
run pie_text 0 "$FL" stats --pid "${PIE_PID:-0}"
has pie_text pie_text.out "$(printf 'prog-pie+0x%x' $((0x$PIE_LOAD + LOAD_OFF)))"
has pie_text pie_text.out "$(printf 'load_field+0x%x' "$LOAD_OFF")"
run pie_sites 0 "$FL" sites "${PIE_PID:-0}"
has pie_sites pie_sites.out "$(printf 'prog-pie+0x%x' $((0x$PIE_LOAD + LOAD_OFF)))"

# ---- JIT code registered without names, which its perf map names: stats
# and sites read /tmp/perf-PID.map for a live process, as profile does
mkfifo jp.fifo
"$JITPERF" 3 <jp.fifo >jp.out 2>jp.err &
JP_PID=$!
exec 9>jp.fifo
eventually grep -q '^ready' jp.out
JP_PROC=$(awk '/^ready/ { print $2 }' jp.out)
JP_PC=$(awk '/^ready/ { print $3 }' jp.out)
has_jp() {
	"$FL" stats --json --pid "${JP_PROC:-0}" >jp.json 2>/dev/null &&
		"$PY" -c 'import json
[p] = json.load(open("jp.json"))["processes"]
assert p["faults"] == 3' 2>/dev/null
}
eventually has_jp && ok || bad "stats never showed jitperf's 3 faults"
run jp_json 0 "$FL" stats --json --pid "${JP_PROC:-0}"
py jp_json - "${JP_PC:-0}" <<'EOF2'
import json, sys
pc = int(sys.argv[1], 16)
[p] = json.load(open("jp_json.out"))["processes"]
[s] = p["sites"]
want = {"faulting_pc": pc, "module": "jitperf", "module_offset": 16, "function": "jitperf_load",
        "function_offset": 0, "function_from": "perf-map", "faults": 3}
assert all(s[k] == v for k, v in want.items()), s
EOF2
run jp_text 0 "$FL" stats --pid "${JP_PROC:-0}"
has jp_text jp_text.out "jitperf+0x10"
has jp_text jp_text.out "jitperf_load+0x0"
# The daemon's own document does not have it: the name is the CLI's reading.
run jp_metrics 0 "$FL" stats --prometheus
if grep -q 'function="jitperf_load"' jp_metrics.out; then
	bad "jp_metrics: the metrics took a perf map's name"
else
	ok
fi
exec 9>&-
wait "$JP_PID" && ok || bad "jitperf failed"
JP_PID=

# ---- the program exits: the daemon keeps its final counts
exec 7>&-
wait "$PROG_PID"
PROG_PID=
run ps_exited 0 "$FL" ps
has ps_exited ps_exited.out "$(printf '%-8s %-16s %-7s' "$PID" prog exited)"
run sites_exited 0 "$FL" sites --json "$PID"
py sites_exited - "$LOAD_PC" "$STORE_PC" <<'EOF'
import json, sys
lpc, spc = map(int, sys.argv[1:])
[p] = json.load(open("sites_exited.out"))["processes"]
assert p["exited"] is True and p["exited_ms"] >= p["registered_ms"], p
assert {s["faulting_pc"]: s["faults"] for s in p["sites"]} == {lpc: 9, spc: 5}, p
EOF
run ping_exited 1 "$FL" request "$PID" ping

# ---- JIT code: its sites named by the functions the program registered
# (JIT code has no symbol table: without them, "function" is null)
mkfifo jit.fifo
"$JIT_NAMES" 4 2 <jit.fifo >jit.out 2>jit.err &
JIT_PID=$!
exec 8>jit.fifo
eventually grep -q '^ready' jit.out
JPID=$(awk '/^ready/ { print $2 }' jit.out)
[ -n "$JPID" ] || { echo "jit-names did not start"; cat jit.out jit.err; exit 1; }
# Until stats --json shows both sites named (the names come asynchronously).
jit_named() {
	"$FL" stats --json --pid "$JPID" >jit.json 2>/dev/null &&
		"$PY" - <<'EOF' 2>/dev/null
import json, sys
[p] = json.load(open("jit.json"))["processes"]
got = sorted((s["kind"], s["function"], s["faults"]) for s in p["sites"])
sys.exit(0 if got == [("load", "jit_price_of", 4), ("store", "jit_set_price", 2)] else 1)
EOF
}
if eventually jit_named; then
	ok
else
	bad "stats --json never named the JIT sites jit_price_of (4 faults) and jit_set_price (2)"
	"$PY" -m json.tool jit.json | cat - jit.err | sed 's/^/  | /' | head -40
fi
run jit_text 0 "$FL" stats --pid "$JPID"
has jit_text jit_text.out "jit_price_of+0x"
has jit_text jit_text.out "jit_set_price+0x"
# Where in its function and its code: the registered start is the function's.
py jit_where <<'EOF'
import json
[p] = json.load(open("jit.json"))["processes"]
for s in p["sites"]:
    assert isinstance(s["function_offset"], int) and isinstance(s["module_offset"], int), s
    assert s["module_offset"] >= s["function_offset"], s
EOF
exec 8>&-
if wait "$JIT_PID"; then ok; else bad "jit-names: exit $? ($(cat jit.out jit.err))"; fi
JIT_PID=

# ---- the daemon stops
kill "$DPID" && wait "$DPID" 2>/dev/null
DPID=
run gone 1 "$FL" stats
has gone gone.err "faultlined is not running at $SOCK"

# ---- started again on its state directory: the exited prog-pie's record
# gives its sites' module and function offsets as before
"$FLD" --socket "$SOCK" --state-dir "$W/state" --log-level info 2>daemon2.log &
DPID=$!
eventually grep -q "listening on" daemon2.log ||
	{ echo "faultlined did not start again"; cat daemon2.log; exit 1; }
run restored 0 "$FL" stats --json --pid "${PIE_PID:-0}"
py restored <<'EOF2'
import json
keys = ("faulting_pc", "module", "module_offset", "function", "function_offset", "faults")
def sites(f):
    [p] = json.load(open(f))["processes"]
    return sorted(tuple(s[k] for k in keys) for s in p["sites"])
before, after = sites("pie.json"), sites("restored.out")
assert before == after and all(s[2] is not None and s[4] is not None for s in after), (before, after)
EOF2
kill "$DPID" && wait "$DPID" 2>/dev/null
DPID=

# ---- one address format: every JSON document above gives addresses as
# integers (docs/json.md), never as "0x..." strings
py hex_strings <<'EOF'
import glob, json, re
hexa = re.compile(r"^0x[0-9a-fA-F]+$")
def walk(v, where):
    if isinstance(v, dict):
        for k, x in v.items():
            yield from walk(x, where + "." + k)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from walk(x, "%s[%d]" % (where, i))
    elif isinstance(v, str) and hexa.match(v):
        yield where
docs = 0
for name in sorted(glob.glob("*.out") + glob.glob("*.json")):
    try:
        doc = json.load(open(name))
    except ValueError:
        continue
    docs += 1
    bad = list(walk(doc, name))
    assert not bad, bad[:5]
assert docs >= 10, docs
EOF
echo "daemon cli: $pass passed, $fail failed"
[ "$fail" = 0 ]
