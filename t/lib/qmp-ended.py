#!/usr/bin/env python3
"""qmp-ended.py - how a QEMU ended, as a launcher holding its QMP socket
tells it (SPEC.md 7.3; share/doc/suspects.md, the launcher's recipe).

  qmp-ended.py SOCKET        connect, negotiate, wait for the end; print
                             clean or unclean
  qmp-ended.py --events FILE classify recorded QMP lines the same way

A SHUTDOWN event with "guest": true is a guest's own shutdown (clean);
with "guest": false (SIGTERM: "reason": "host-signal") the host ended it
(unclean); the socket closing without a SHUTDOWN is a SIGKILL (unclean).
The launcher then runs: vfstore release --instance ID --ended WORD.
"""
import json
import socket
import sys


def classify(lines):
    for line in lines:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("event") == "SHUTDOWN":
            guest = msg.get("data", {}).get("guest")
            return "clean" if guest is True else "unclean"
    return "unclean"


def lines_of(sock):
    buf = b""
    while True:
        data = sock.recv(4096)
        if not data:
            return
        buf += data
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield line.decode("utf-8", "replace")


def main():
    if sys.argv[1] == "--events":
        with open(sys.argv[2], encoding="utf-8") as f:
            print(classify(f))
        return
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(sys.argv[1])
    sock.sendall(b'{"execute":"qmp_capabilities"}\n')
    print("connected", file=sys.stderr, flush=True)
    print(classify(lines_of(sock)), flush=True)


main()
