#!/usr/bin/python3
# Hostile HTTP against faultlined's metrics listener (check-daemon-metrics):
#   fuzz_http.py PORT N [SEED]
# N inputs, each on its own connection: a valid scrape mutated (bytes
# flipped, cut, repeated), random bytes, oversized headers and URLs, bad
# methods and versions, chunked bodies with wrong sizes, pipelined requests,
# requests sent a byte at a time, connections held open past the listener's
# limit.  The answers are read with a timeout and not judged: what is
# checked is that a valid scrape still gets a whole 200 afterwards (here)
# and that the daemon still runs (run.sh).  Exits 0 when it does.
import random
import socket
import sys
import time

port, n = int(sys.argv[1]), int(sys.argv[2])
seed = int(sys.argv[3]) if len(sys.argv) > 3 else 20261126
rng = random.Random(seed)
VALID = (b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
         b"Accept: application/openmetrics-text; version=1.0.0\r\n\r\n")


def whole(got):
    """Whether got holds a whole first answer (a kept-alive connection stays open)."""
    head, sep, body = got.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                return len(body) >= int(value.strip())
            except ValueError:
                return True
    return True


def send(data, slow=False, read=True):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        if slow:
            for i in range(0, len(data), 7):
                s.sendall(data[i:i + 7])
                time.sleep(0.001)
        else:
            s.sendall(data)
        if not read:
            return b""
        s.settimeout(0.25)
        got = b""
        while len(got) < (1 << 20) and not whole(got):
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        return got
    except (socket.timeout, ConnectionError, OSError):
        return b""
    finally:
        s.close()


def mutate(data):
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(5)
        i = rng.randrange(len(b)) if b else 0
        if op == 0 and b:
            b[i] = rng.randrange(256)
        elif op == 1:
            b = b[:i]
        elif op == 2:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        elif op == 3 and b:
            j = rng.randrange(len(b))
            b[i:i] = b[min(i, j):max(i, j)] * rng.randint(1, 20)
        else:
            b[i:i] = rng.choice([b"\r\n", b"\n", b"\0", b":", b" ", b"%", b"\r\n\r\n"])
    return bytes(b)


def case(k):
    kind = k % 10
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 2048))), False
    if kind == 1:
        return b"GET /metrics HTTP/1.1\r\nX: " + b"a" * rng.choice([1000, 40000, 200000]) + b"\r\n\r\n", False
    if kind == 2:
        return b"GET /" + b"m" * rng.choice([100, 5000, 70000]) + b" HTTP/1.1\r\n\r\n", False
    if kind == 3:
        m = rng.choice([b"PUT", b"OPTIONS", b"TRACE", b"CONNECT", b"G\x00T", b"get", b""])
        v = rng.choice([b"HTTP/1.1", b"HTTP/1.0", b"HTTP/9.9", b"HTTP/0.9", b""])
        return m + b" /metrics " + v + b"\r\n\r\n", False
    if kind == 4:
        size = rng.choice([b"5", b"ffffffffffffffff", b"-1", b"zz", b"1000000"])
        return (b"GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                size + b"\r\nhello\r\n0\r\n\r\n"), False
    if kind == 5:
        return VALID * rng.randint(2, 20), False
    if kind == 6:
        return (b"GET /metrics HTTP/1.1\r\n" +
                b"".join(b"H%d: v\r\n" % i for i in range(rng.choice([10, 500, 5000]))) +
                b"\r\n"), False
    if kind == 7:
        return mutate(VALID), rng.random() < 0.05
    if kind == 8:
        return b"GET /metrics HTTP/1.1\r\nContent-Length: 100000000\r\n\r\n" + b"x" * 1000, False
    return mutate(VALID), False


answers = {}
for k in range(n):
    data, slow = case(k)
    got = send(data, slow=slow)
    status = got.split(b"\r\n", 1)[0][9:12] if got.startswith(b"HTTP/1.") else b"none"
    answers[status] = answers.get(status, 0) + 1

# More connections than the listener takes at once, held open, then gone.
held = []
for _ in range(80):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /metr")
        held.append(s)
    except OSError:
        pass
for s in held:
    s.close()

# A valid scrape still gets a whole answer.
for attempt in range(50):
    got = send(b"GET /metrics HTTP/1.0\r\n\r\n")
    if got.startswith(b"HTTP/1.") and got.split(b"\r\n", 1)[0][9:12] == b"200" and \
            b"faultline_up 1" in got:
        break
    time.sleep(0.2)
else:
    sys.exit("no valid answer after the fuzzing")
print("seed", seed, "inputs", n, "answers", dict(sorted((k.decode(errors="replace"), v)
                                                        for k, v in answers.items())),
      "held", len(held))
