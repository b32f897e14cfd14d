#!/usr/bin/env python3
"""A TCP relay that records what passes: the capture hook for seed corpora.

    relay.py LISTEN_PORT TARGET_PORT OUT_DIR

Listens on 127.0.0.1:LISTEN_PORT, connects each client to
127.0.0.1:TARGET_PORT, and writes connection N's bytes to OUT_DIR/N.c2s
(client to server) and OUT_DIR/N.s2c (server to client), unchanged.
Runs until killed. Used by tests/fuzz/capture/capture-peers inside a
private network namespace, where no tcpdump is needed and no other
traffic mixes in.
"""
import os
import socket
import sys
import threading


def pump(src, dst, path):
    with open(path, "wb") as out:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            out.write(data)
            out.flush()
            try:
                dst.sendall(data)
            except OSError:
                break
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def main():
    listen_port, target_port, out_dir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    os.makedirs(out_dir, exist_ok=True)
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", listen_port))
    server.listen(64)
    n = 0
    while True:
        client, _ = server.accept()
        upstream = socket.create_connection(("127.0.0.1", target_port))
        base = os.path.join(out_dir, str(n))
        n += 1
        threading.Thread(target=pump, args=(client, upstream, base + ".c2s"), daemon=True).start()
        threading.Thread(target=pump, args=(upstream, client, base + ".s2c"), daemon=True).start()


if __name__ == "__main__":
    main()
