#!/bin/bash
# faultlined --metrics-listen: the metrics over HTTP.
#   run.sh FAULTLINE FAULTLINED WORKDIR E2E_LOAD
# faultlined listens on 127.0.0.1 at a port of the kernel's choosing (port
# 0; its log says which), the CLI tests' program fails known checks under
# faultline run, and Python (urllib, prometheus_client's parsers) scrapes.
# Every process started here is killed when it ends.
set -u

FL=$(realpath "$1")
FLD=$(realpath "$2")
W=$3
LOADPROG=$(realpath "$4")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
PY=/usr/bin/python3
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
W=$(pwd)

pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
check() { local what=$1; shift; if "$@"; then ok; else bad "$what"; fi; }
. "$HERE/../wait.sh"

# py NAME SCRIPT ARGS...: a Python check that exits 0 when it holds
py() {
	local name=$1
	shift
	if "$PY" "$@" >"$name.py.out" 2>&1; then ok; else bad "$name"; sed 's/^/  | /' "$name.py.out" | head -10; fi
}

export FAULTLINE_SOCKET=$W/fl.sock
export FAULTLINE_REGISTER_WAIT_MS=300000
DPID=
cleanup() {
	local p
	exec 7>&- 2>/dev/null
	for p in $(jobs -p); do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the program (selftests/daemon/cli's): load_field and store_field
llc-14 -O2 -enable-implicit-null-checks -filetype=obj "$ROOT/selftests/cli/sample.ll" -o sample.o || exit 1
llc-14 -O2 -filetype=obj "$ROOT/selftests/daemon/cli/shared_pc.ll" -o shared_pc.o || exit 1
gcc -O2 -no-pie "$ROOT/selftests/daemon/cli/prog.c" sample.o shared_pc.o -o prog || exit 1

# ---- bad addresses: a usage error, before anything starts
for spec in nonsense 127.0.0.1 127.0.0.1:70000 localhost:9464 '::1:9464' '[::1]' 127.0.0.1:-1; do
	timeout 60 "$FLD" --socket "$W/x.sock" --state-dir "$W/xs" --metrics-listen "$spec" >bad.out 2>bad.err
	rc=$?
	check "--metrics-listen '$spec': exit $rc, not 2" test $rc = 2
	check "--metrics-listen '$spec': says what is wrong" grep -qF -- "metrics-listen: '$spec'" bad.err
done

# ---- the daemon
"$FLD" --socket "$FAULTLINE_SOCKET" --state-dir "$W/state" --metrics-listen 127.0.0.1:0 \
	--log-level info 2>daemon.log &
DPID=$!
eventually grep -q "listening on" daemon.log ||
	{ echo "faultlined did not start"; cat daemon.log; exit 1; }
PORT=$(sed -n 's/.*GET \/metrics served on 127\.0\.0\.1:0 (port \([0-9]*\)).*/\1/p' daemon.log)
[ -n "$PORT" ] && [ "$PORT" != 0 ] || { echo "no port in the log"; cat daemon.log; exit 1; }
URL=http://127.0.0.1:$PORT/metrics

# A second daemon on the same port: it says so and exits 1.
timeout 60 "$FLD" --socket "$W/y.sock" --state-dir "$W/ys" --metrics-listen "127.0.0.1:$PORT" >taken.out 2>taken.err
rc=$?
check "a taken port: exit $rc, not 1" test $rc = 1
check "a taken port: says it cannot listen" grep -q "metrics-listen 127.0.0.1:$PORT: cannot listen there" taken.err

mkfifo in.fifo
"$FL" run ./prog 5 3 <in.fifo >prog.out 2>prog.err &
exec 7>in.fifo
eventually grep -q '^ready' prog.out
PID=$(awk '/^ready/ { print $2 }' prog.out)
[ -n "$PID" ] || { echo "prog did not start"; cat prog.out prog.err; exit 1; }

# scrape_has N: a scrape shows N faults in the program's process
scrape_has() {
	"$PY" - "$URL" "$PID" "$1" <<'PYEOF' 2>/dev/null
import sys, urllib.request
from prometheus_client.parser import text_string_to_metric_families
url, pid, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = urllib.request.urlopen(url, timeout=60).read().decode()
fams = {f.name: f for f in text_string_to_metric_families(text)}
got = [s.value for s in fams["faultline_process_faults"].samples if s.labels["pid"] == pid]
sys.exit(0 if got == [n] else 1)
PYEOF
}
eventually scrape_has 8 && ok || bad "GET /metrics never showed the program's 8 faults"

# ---- the exposition: the series faultline stats --prometheus prints
"$FL" stats --prometheus >cli.prom || bad "faultline stats --prometheus failed"
py same - "$URL" <<'PYEOF'
import sys, urllib.request
from prometheus_client.parser import text_string_to_metric_families
r = urllib.request.urlopen(sys.argv[1], timeout=60)
assert r.status == 200, r.status
assert r.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8", r.headers["Content-Type"]
text = r.read().decode()
assert "# EOF" not in text
def samples(t):
    return sorted((s.name, tuple(sorted(s.labels.items())), s.value)
                  for f in text_string_to_metric_families(t) for s in f.samples
                  if not s.name.startswith("faultline_bpf_"))
http, cli = samples(text), samples(open("cli.prom").read())
assert http == cli, (set(http) ^ set(cli))
names = {s[0] for s in http}
for n in ("faultline_up", "faultline_build_info", "faultline_site_faults_total",
          "faultline_module_faults_total", "faultline_executable_faults_total"):
    assert n in names, n
PYEOF

py openmetrics - "$URL" "$PID" <<'PYEOF'
import sys, urllib.request
from prometheus_client.openmetrics.parser import text_string_to_metric_families
req = urllib.request.Request(sys.argv[1], headers={
    "Accept": "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"})
r = urllib.request.urlopen(req, timeout=60)
assert r.headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0"), r.headers
text = r.read().decode()
assert text.endswith("# EOF\n"), text[-40:]
fams = {f.name: f for f in text_string_to_metric_families(text)}
sites = {s.labels["function"]: s.value for s in fams["faultline_site_faults"].samples
         if s.labels["pid"] == sys.argv[2]}
assert sites == {"load_field": 5, "store_field": 3}, sites
PYEOF

py errors - "$PORT" <<'PYEOF'
import http.client, sys
def ask(method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
    c.request(method, path, body=body)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r, data
r, d = ask("POST", "/metrics", body=b"x" * 100)
assert r.status == 405 and r.getheader("Allow") == "GET, HEAD", (r.status, r.getheaders())
r, d = ask("DELETE", "/metrics")
assert r.status == 405, r.status
for path in ("/", "/metrics/", "/metricsx", "/../metrics", "/metrics?x=1#y"):
    r, d = ask("GET", path)
    # A query string is not part of the path: /metrics?x=1 is /metrics.
    want = 200 if path.startswith("/metrics?") else 404
    assert r.status == want, (path, r.status)
r, d = ask("HEAD", "/metrics")
assert r.status == 200 and d == b"", (r.status, d[:20])
PYEOF

# ---- a load: 400 scrapes, 40 at a time, while the program fails more
# checks (20 rounds of 200 and 100, 50 ms apart); every answer is whole,
# and the counts only grow.  Then 100 at once, each held open until all
# have theirs: every one is answered or refused, none hangs.
for i in $(seq 20); do echo "fail 200 100" >&7; sleep 0.05; done &
FEED=$!
py load - "$URL" "$PID" <<'PYEOF'
import sys, threading, urllib.request
from prometheus_client.parser import text_string_to_metric_families
url, pid = sys.argv[1], sys.argv[2]
seen, errors, lock = [], [], threading.Lock()
seen_by_me = {}
def scrape():
    for _ in range(10):
        try:
            mine = seen_by_me.setdefault(threading.get_ident(), [])
            text = urllib.request.urlopen(url, timeout=120).read().decode()
            fams = {f.name: f for f in text_string_to_metric_families(text)}
            v = [s.value for s in fams["faultline_process_faults"].samples if s.labels["pid"] == pid]
            assert "faultline_up" in fams and len(v) == 1, v
            with lock:
                seen.append(v[0])
            mine.append(v[0])
        except Exception as e:
            with lock:
                errors.append(repr(e))
threads = [threading.Thread(target=scrape) for _ in range(40)]
for t in threads: t.start()
for t in threads: t.join()
assert not errors, errors[:3]
assert len(seen) == 400, len(seen)
assert min(seen) >= 8 and max(seen) <= 6008, (min(seen), max(seen))
# Each scraper's answers, in its order, never go back.
for mine in seen_by_me.values():
    assert mine == sorted(mine), mine
print("scrapes", len(seen), "counts from", min(seen), "to", max(seen))

# 100 at once, each holding its connection until all have an answer or a refusal.
import socket
barrier = threading.Barrier(100)
answered, refused = [], []
def burst():
    s = None
    try:
        # A refused connect is a refusal too: every thread reaches the barrier.
        s = socket.create_connection(("127.0.0.1", int(url.split(":")[2].split("/")[0])),
                                     timeout=120)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        got = s.recv(64)
        (answered if got.startswith(b"HTTP/1.1 200") else refused).append(got[:12])
    except ConnectionError as e:
        refused.append(repr(e))
    try:
        barrier.wait(timeout=120)
    finally:
        if s:
            s.close()
threads = [threading.Thread(target=burst) for _ in range(100)]
for t in threads: t.start()
for t in threads: t.join()
assert len(answered) >= 64 and len(answered) + len(refused) == 100, (len(answered), refused[:3])
print("burst of 100:", len(answered), "answered,", len(refused), "refused")
PYEOF
wait "$FEED"
eventually test "$(grep -c '^ok' prog.out)" = 20 || bad "the program did not finish its failures"
eventually scrape_has 6008 && ok || bad "GET /metrics never showed 6008 faults"
check "faultline stats answers after the load" "$FL" stats --pid "$PID" >/dev/null

# ---- many processes: 300 of e2e-load (selftests/daemon/e2e/load.c), each
# failing its two checks a few times.  The daemon's own STATS query, each
# process's top sites and its sums by module, is then far more than one
# message; the scrape must come whole, the same as faultline stats
# --prometheus, with the faults of every process by module.
mkfifo many.fifo
"$LOADPROG" 300 0 <many.fifo >many.out 2>many.err &
MANY=$!
exec 8>many.fifo
eventually grep -q '^ready' many.out || bad "e2e-load's 300 processes never got ready"
"$FL" stats --json --top 1 >many.json || bad "faultline stats --json with 300 more processes"
check "the daemon's answer is more than a message (64 KiB)" test "$(stat -c %s many.json)" -gt 65536
"$FL" stats --prometheus >many.prom || bad "faultline stats --prometheus with 300 more processes"
py many - "$URL" <<'PYEOF'
import json, sys, urllib.request
from prometheus_client.parser import text_string_to_metric_families
text = urllib.request.urlopen(sys.argv[1], timeout=60).read().decode()
def samples(t):
    return sorted((s.name, tuple(sorted(s.labels.items())), s.value)
                  for f in text_string_to_metric_families(t) for s in f.samples
                  if not s.name.startswith("faultline_bpf_"))
http, cli = samples(text), samples(open("many.prom").read())
assert http == cli, sorted(set(http) ^ set(cli))[:5]
fams = {f.name: f for f in text_string_to_metric_families(text)}
procs = {s.labels["executable"]: s.value for s in fams["faultline_executable_processes"].samples}
assert procs.get("e2e-load", 0) >= 300, procs
# By module: the faults of every process, listed sites or not.
doc = json.load(open("many.json"))
total = sum(p["faults"] for p in doc["processes"])
by_module = sum(s.value for s in fams["faultline_module_faults"].samples)
assert by_module == total, (by_module, total)
assert len(fams["faultline_site_faults"].samples) == 10, len(fams["faultline_site_faults"].samples)
# The children's own reports: i % 5 + 1 loads and i % 3 stores each.
mine = [l.split() for l in open("many.out") if l.startswith("child ")]
assert len(mine) == 300, len(mine)
want = sum(int(c[3]) + int(c[4]) for c in mine)
got = sum(p["faults"] for p in doc["processes"] if p["comm"] == "e2e-load")
assert got == want, (got, want)
PYEOF
echo "release 1" >&8
exec 8>&-
eventually grep -q '^done' many.out || bad "e2e-load's processes did not all exit"
wait "$MANY"
MANY=

# ---- hostile HTTP: malformed, oversized, slow and half-sent requests
py fuzz "$HERE/fuzz_http.py" "$PORT" 1000
check "faultlined still runs after the fuzzing" kill -0 "$DPID"
eventually scrape_has 6008 && ok || bad "GET /metrics did not answer after the fuzzing"
check "faultline stats answers after the fuzzing" "$FL" stats --pid "$PID" >/dev/null

exec 7>&-
kill "$DPID" && wait "$DPID" 2>/dev/null
check "the daemon's log has no error" test -z "$(grep -E 'faultlined: (error|warn)' daemon.log | grep -v 'not accepting\|eBPF')"
grep -E 'faultlined: (error|warn)' daemon.log | head -5

echo "daemon metrics: $pass passed, $fail failed"
[ "$fail" = 0 ]
