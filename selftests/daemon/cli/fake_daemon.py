#!/usr/bin/python3
# A stand-in for faultlined that answers every QUERY or REQUEST one way, to
# check how faultline takes replies the real daemon seldom sends:
#   fake_daemon.py SOCKET MODE
#   split     the document in REPLY messages of 7 bytes (MORE on all but the last)
#   badjson   a REPLY that is not JSON
#   wrongseq  a REPLY with another sequence number
#   close     closes the connection without answering
#   eperm     ERROR -EPERM "not yours"
#   badmagic  a message with a wrong magic
#   odd       a document of wrong types and odd values: a pid registered
#             twice, a site listed twice, strings for numbers, INT64_MIN
#   escape    ERROR -EPERM whose text holds a terminal escape sequence
import errno, json, os, socket, struct, sys

path, mode = sys.argv[1], sys.argv[2]
MAGIC, REPLY, ERROR = 0x504C4C46, 66, 65
DOC = {"bpf": False, "processes": [{
    "pid": 77, "comm": "split", "uid": 0, "exited": False, "registered_ms": 1,
    "modules": 1, "num_sites": 1, "faults": 12345,
    "sites": [{"module": "/x/lib.so", "function": "f", "faulting_pc": 4096,
               "handler_pc": 4100, "kind": "load", "faults": 12345, "unloaded": False}]}]}

# The newer pid 77 ("new") is the one exposed as metrics; its two sites
# with the same labels sum to 7.  Process "78" has every field mistyped.
SITE = {"module": "/x/lib.so", "function": "f", "faulting_pc": 4096, "kind": "load"}
ODD = {"bpf": "yes", "processes": [
    {"pid": 77, "comm": "old", "exited": True, "registered_ms": 1, "faults": 1,
     "num_sites": 1, "sites": [dict(SITE, faults=1)],
     "records": [{"id": 1, "pc": 4096, "module": "/x/lib.so", "stack_size": 8,
                  "live_outs": 0, "locations": [
                      {"kind": "Direct", "dwarf_reg": 7, "offset": -2**63, "size": 8},
                      {"kind": "Register\u001b[2J", "dwarf_reg": "rsp", "size": -1},
                      "not an object"]}]},
    {"pid": 77, "comm": "new", "exited": False, "registered_ms": 2, "faults": 2,
     "num_sites": 2, "sites": [dict(SITE, faults=3, kernel_faults=3),
                               dict(SITE, faults=4, kernel_faults="4")]},
    {"pid": "78", "comm": 5, "exited": "no", "registered_ms": -1, "faults": "many",
     "num_sites": None, "sites": {"module": 1}, "kernel": [1]},
    "not a process"]}


def msg(t, seq, body):
    return struct.pack("<IHHII", MAGIC, 1, t, 16 + len(body), seq) + body


def reply(seq, text, more):
    return msg(REPLY, seq, struct.pack("<II", 1 if more else 0, len(text)) + text)


s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(path)
s.listen(4)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    data = c.recv(65536)
    seq = struct.unpack_from("<I", data, 12)[0]
    text = json.dumps(ODD if mode == "odd" else DOC).encode()
    if mode == "split":
        parts = [text[i:i + 7] for i in range(0, len(text), 7)]
        for i, p in enumerate(parts):
            c.send(reply(seq, p, i < len(parts) - 1))
    elif mode == "badjson":
        c.send(reply(seq, b"{\"processes\": [", False))
    elif mode == "wrongseq":
        c.send(reply(seq + 1, text, False))
    elif mode == "eperm":
        t = b"not yours"
        c.send(msg(ERROR, seq, struct.pack("<iI", -errno.EPERM, len(t)) + t))
    elif mode == "odd":
        c.send(reply(seq, text, False))
    elif mode == "escape":
        t = b"not \x1b[31myours"
        c.send(msg(ERROR, seq, struct.pack("<iI", -errno.EPERM, len(t)) + t))
    elif mode == "badmagic":
        c.send(b"\0" * 4 + reply(seq, text, False)[4:])
    c.close()
