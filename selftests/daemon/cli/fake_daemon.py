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
import errno, json, os, socket, struct, sys

path, mode = sys.argv[1], sys.argv[2]
MAGIC, REPLY, ERROR = 0x504C4C46, 66, 65
DOC = {"bpf": False, "processes": [{
    "pid": 77, "comm": "split", "uid": 0, "exited": False, "registered_ms": 1,
    "modules": 1, "num_sites": 1, "faults": 12345,
    "sites": [{"module": "/x/lib.so", "function": "f", "faulting_pc": 4096,
               "handler_pc": 4100, "kind": "load", "faults": 12345, "unloaded": False}]}]}


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
    text = json.dumps(DOC).encode()
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
    elif mode == "badmagic":
        c.send(b"\0" * 4 + reply(seq, text, False)[4:])
    c.close()
