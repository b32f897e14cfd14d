#!/usr/bin/env python3
"""A TCP proxy in front of an iRODS server that counts the API requests
passing through it (by API number), so a benchmark can say how many iRODS
calls a front end made: iRODS frames are a 4-byte length, a MsgHeader_PI
XML header naming the type and API number (intInfo), then msgLen + errorLen
+ bsLen bytes.

    irods_call_counter.py UPSTREAM_PORT PORT_FILE COUNTS_FILE

Listens on 127.0.0.1 (a free port, written to PORT_FILE); on SIGUSR1 or
SIGTERM writes {"api": count, ...} to COUNTS_FILE (SIGTERM then exits).
"""
import json
import re
import signal
import socket
import sys
import threading
from collections import Counter

counts = Counter()
lock = threading.Lock()


def recv_exact(sock, n):
    out = bytearray()
    while len(out) < n:
        b = sock.recv(min(n - len(out), 1 << 20))
        if not b:
            raise ConnectionError
        out += b
    return bytes(out)


def field(header, name):
    m = re.search(rb"<%s>(-?\d+)</%s>" % (name.encode(), name.encode()), header)
    return int(m.group(1)) if m else 0


def client_to_server(src, dst):
    try:
        while True:
            hlen = recv_exact(src, 4)
            header = recv_exact(src, int.from_bytes(hlen, "big"))
            body = field(header, "msgLen") + field(header, "errorLen") + field(header, "bsLen")
            if b"RODS_API_REQ" in header:
                with lock:
                    counts[str(field(header, "intInfo"))] += 1
            dst.sendall(hlen + header)
            while body:
                b = src.recv(min(body, 1 << 20))
                if not b:
                    raise ConnectionError
                dst.sendall(b)
                body -= len(b)
    except (ConnectionError, OSError):
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def server_to_client(src, dst):
    try:
        while True:
            b = src.recv(1 << 20)
            if not b:
                break
            dst.sendall(b)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main():
    upstream, port_file, counts_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]

    def dump(*_):
        with lock:
            with open(counts_file, "w") as f:
                json.dump(dict(counts), f)

    def stop(*_):
        dump()
        sys.exit(0)

    signal.signal(signal.SIGUSR1, dump)
    signal.signal(signal.SIGTERM, stop)
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(128)
    with open(port_file, "w") as f:
        f.write(f"{lsock.getsockname()[1]}\n")
    while True:
        c, _ = lsock.accept()
        u = socket.create_connection(("127.0.0.1", upstream))
        for s in (c, u):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=client_to_server, args=(c, u), daemon=True).start()
        threading.Thread(target=server_to_client, args=(u, c), daemon=True).start()


if __name__ == "__main__":
    main()
