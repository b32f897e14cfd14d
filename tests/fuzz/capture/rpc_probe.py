#!/usr/bin/env python3
"""Asks the portmapper on 127.0.0.1:111 what ferry's NFS client asks
(GETPORT for MOUNT v3 and NFS v3 over TCP, and a program it lacks) plus a
DUMP, and writes each reply record (record mark removed) to OUT_DIR/N.reply
with the procedure in OUT_DIR/N.proc: real portmapper replies for seeds.

    rpc_probe.py OUT_DIR
"""
import os
import socket
import struct
import sys


def call(sock, xid, proc, args):
    header = struct.pack(">IIIIII", xid, 0, 2, 100000, 2, proc) + struct.pack(">IIII", 0, 0, 0, 0)
    body = header + args
    sock.sendall(struct.pack(">I", 0x80000000 | len(body)) + body)
    record = b""
    while True:
        mark = recv_exact(sock, 4)
        (word,) = struct.unpack(">I", mark)
        record += recv_exact(sock, word & 0x7FFFFFFF)
        if word & 0x80000000:
            return record


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError("portmapper closed the connection")
        data += chunk
    return data


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    queries = [
        (3, struct.pack(">IIII", 100005, 3, 6, 0)),  # GETPORT MOUNT v3 tcp
        (3, struct.pack(">IIII", 100003, 3, 6, 0)),  # GETPORT NFS v3 tcp
        (3, struct.pack(">IIII", 400123, 1, 6, 0)),  # GETPORT of nothing: port 0
        (4, b""),                                     # DUMP
        (0, b""),                                     # NULL
    ]
    with socket.create_connection(("127.0.0.1", 111)) as sock:
        for n, (proc, args) in enumerate(queries):
            reply = call(sock, 0x1000 + n, proc, args)
            with open(os.path.join(out, f"{n}.reply"), "wb") as f:
                f.write(reply)
            with open(os.path.join(out, f"{n}.proc"), "w") as f:
                f.write(str(proc))


if __name__ == "__main__":
    main()
