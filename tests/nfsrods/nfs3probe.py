#!/usr/bin/env python3
"""A minimal NFSv3 client for the checks libnfs's tools cannot make: they
look every path up afresh, while these keep a file handle across a server
restart, read a removed object's handle, or page READDIR by hand.

    nfs3probe.py PORT resolve EXPORT [NAME...]      -> handle (hex)
    nfs3probe.py PORT getattr HANDLE                -> "file|dir SIZE FILEID"
    nfs3probe.py PORT read HANDLE OFFSET COUNT      -> the bytes, to stdout
    nfs3probe.py PORT access HANDLE MASK            -> the bits granted (decimal)
    nfs3probe.py PORT readdir HANDLE COOKIE VERF COUNT -> "verf HEX" then "COOKIE NAME" lines
    nfs3probe.py PORT write HANDLE OFFSET           <- stdin, one UNSTABLE WRITE per MiB
    nfs3probe.py PORT commit HANDLE
    nfs3probe.py PORT mkdir HANDLE NAME             -> handle (hex)
    nfs3probe.py PORT listplus HANDLE REPEATS       -> per listing: "ENTRIES WALL_MS" (READDIRPLUS, 1 MiB pages)
    nfs3probe.py PORT names HANDLE COUNT [MKDIR]    -> every name, READDIR pages of COUNT bytes
                                                       (MKDIR: made in the directory after page 1)
    nfs3probe.py PORT listplus1 HANDLE REPEATS      -> per listing: "BYTES WALL_MS", one READDIRPLUS of up
                                                       to 64 MiB, not decoded (the server's time)
    nfs3probe.py PORT garbage                       -> sends a malformed call; "closed" or "answered"

An NFS error prints "NFS3ERR N" to stderr and exits 3. Talks to 127.0.0.1, as
AUTH_UNIX uid and gid $PROBE_UID (0 by default).
"""
import os
import socket
import struct
import sys

NFS, MOUNT = 100003, 100005


class NfsError(Exception):
    def __init__(self, status):
        super().__init__(f"NFS3ERR {status}")
        self.status = status


class Xdr:
    def __init__(self, data):
        self.data, self.at = data, 0

    def u32(self):
        (v,) = struct.unpack_from(">I", self.data, self.at)
        self.at += 4
        return v

    def u64(self):
        (v,) = struct.unpack_from(">Q", self.data, self.at)
        self.at += 8
        return v

    def fixed(self, n):
        v = self.data[self.at:self.at + n]
        self.at += (n + 3) & ~3
        return v

    def opaque(self):
        return self.fixed(self.u32())

    def fattr(self):
        kind = self.u32()
        self.at += 4 * 4  # mode nlink uid gid
        size = self.u64()
        self.at += 8 + 8 + 8  # used rdev fsid
        fileid = self.u64()
        self.at += 3 * 8
        return ("dir" if kind == 2 else "file"), size, fileid

    def post_op(self):
        return self.fattr() if self.u32() else None


def pack_opaque(b):
    return struct.pack(">I", len(b)) + b + b"\0" * ((4 - len(b) % 4) % 4)


def call(sock, prog, vers, proc, args):
    xid = int.from_bytes(os.urandom(4), "big")
    uid = int(os.environ.get("PROBE_UID", "0"))
    cred = struct.pack(">I", 0) + pack_opaque(b"probe") + struct.pack(">III", uid, uid, 0)
    msg = struct.pack(">IIIIII", xid, 0, 2, prog, vers, proc) + struct.pack(">I", 1) + pack_opaque(cred)
    msg += struct.pack(">II", 0, 0) + args
    sock.sendall(struct.pack(">I", 0x80000000 | len(msg)) + msg)
    parts = []
    while True:
        (mark,) = struct.unpack(">I", recv(sock, 4))
        parts.append(recv(sock, mark & 0x7FFFFFFF))
        if mark & 0x80000000:
            break
    reply = b"".join(parts)
    x = Xdr(reply)
    assert x.u32() == xid and x.u32() == 1
    if x.u32() != 0:
        raise SystemExit("call denied")
    x.u32(); x.opaque()
    if x.u32() != 0:
        raise SystemExit("call not accepted")
    return x


def recv(sock, n):
    out = bytearray(n)
    view, got = memoryview(out), 0
    while got < n:
        k = sock.recv_into(view[got:])
        if not k:
            raise ConnectionError("closed")
        got += k
    return bytes(out)


def nfs_status(x):
    s = x.u32()
    if s:
        raise NfsError(s)


def resolve(sock, export, names):
    x = call(sock, MOUNT, 3, 1, pack_opaque(export.encode()))
    if x.u32():
        raise NfsError(2)
    fh = x.opaque()
    for name in names:
        x = call(sock, NFS, 3, 3, pack_opaque(fh) + pack_opaque(name.encode()))
        nfs_status(x)
        fh = x.opaque()
    return fh


def main(argv):
    port, cmd, args = int(argv[1]), argv[2], argv[3:]
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        if cmd == "resolve":
            print(resolve(sock, args[0], args[1:]).hex())
        elif cmd == "getattr":
            x = call(sock, NFS, 3, 1, pack_opaque(bytes.fromhex(args[0])))
            nfs_status(x)
            print(*x.fattr())
        elif cmd == "access":
            x = call(sock, NFS, 3, 4, pack_opaque(bytes.fromhex(args[0])) + struct.pack(">I", int(args[1])))
            nfs_status(x)
            x.post_op()
            print(x.u32())
        elif cmd == "read":
            x = call(sock, NFS, 3, 6, pack_opaque(bytes.fromhex(args[0])) + struct.pack(">QI", int(args[1]), int(args[2])))
            nfs_status(x)
            x.post_op()
            x.u32(); x.u32()
            sys.stdout.buffer.write(x.opaque())
        elif cmd == "readdir":
            fh, cookie, verf, count = bytes.fromhex(args[0]), int(args[1]), bytes.fromhex(args[2]), int(args[3])
            x = call(sock, NFS, 3, 16, pack_opaque(fh) + struct.pack(">Q", cookie) + verf + struct.pack(">I", count))
            nfs_status(x)
            x.post_op()
            print("verf", x.fixed(8).hex())
            while x.u32():
                x.u64()
                name = x.opaque().decode()
                print(x.u64(), name)
            print("eof" if x.u32() else "more")
        elif cmd == "write":
            fh, off = bytes.fromhex(args[0]), int(args[1])
            data = sys.stdin.buffer.read()
            for at in range(0, max(len(data), 1), 1 << 20):
                chunk = data[at:at + (1 << 20)]
                x = call(sock, NFS, 3, 7, pack_opaque(fh) + struct.pack(">QII", off + at, len(chunk), 0) + pack_opaque(chunk))
                nfs_status(x)
        elif cmd == "commit":
            x = call(sock, NFS, 3, 21, pack_opaque(bytes.fromhex(args[0])) + struct.pack(">QI", 0, 0))
            nfs_status(x)
        elif cmd == "mkdir":
            sattr = struct.pack(">IIIIII", 0, 0, 0, 0, 0, 0)
            x = call(sock, NFS, 3, 9, pack_opaque(bytes.fromhex(args[0])) + pack_opaque(args[1].encode()) + sattr)
            nfs_status(x)
            x.u32()
            print(x.opaque().hex())
        elif cmd == "listplus":
            import time
            fh = pack_opaque(bytes.fromhex(args[0]))
            for _ in range(int(args[1])):
                t0 = time.perf_counter()
                cookie, verf, n = 0, b"\0" * 8, 0
                while True:
                    x = call(sock, NFS, 3, 17, fh + struct.pack(">Q", cookie) + verf + struct.pack(">II", 65536, 1 << 20))
                    nfs_status(x)
                    x.post_op()
                    verf = x.fixed(8)
                    while x.u32():
                        x.at += 8
                        x.opaque()
                        cookie = x.u64()
                        if x.u32():
                            x.at += 84
                        if x.u32():
                            x.opaque()
                        n += 1
                    if x.u32():
                        break
                print(n, f"{(time.perf_counter() - t0) * 1000:.2f}")
        elif cmd == "names":
            fh, count = pack_opaque(bytes.fromhex(args[0])), int(args[1])
            mkdir = args[2] if len(args) > 2 else None
            cookie, verf = 0, b"\0" * 8
            while True:
                if mkdir and cookie:
                    sattr = struct.pack(">IIIIII", 0, 0, 0, 0, 0, 0)
                    nfs_status(call(sock, NFS, 3, 9, fh + pack_opaque(mkdir.encode()) + sattr))
                    mkdir = None
                x = call(sock, NFS, 3, 16, fh + struct.pack(">Q", cookie) + verf + struct.pack(">I", count))
                nfs_status(x)
                x.post_op()
                verf = x.fixed(8)
                while x.u32():
                    x.at += 8
                    name = x.opaque().decode()
                    cookie = x.u64()
                    print(name)
                if x.u32():
                    break
        elif cmd == "listplus1":
            import time
            fh = pack_opaque(bytes.fromhex(args[0]))
            for _ in range(int(args[1])):
                t0 = time.perf_counter()
                x = call(sock, NFS, 3, 17, fh + struct.pack(">Q", 0) + b"\0" * 8 + struct.pack(">II", 64 << 20, 64 << 20))
                nfs_status(x)
                if struct.unpack_from(">II", x.data, len(x.data) - 8) != (0, 1):
                    raise SystemExit("the listing did not fit one reply")
                print(len(x.data), f"{(time.perf_counter() - t0) * 1000:.2f}")
        elif cmd == "garbage":
            # A call whose credential claims 4 GiB, then a record mark claiming 2 GiB.
            sock.sendall(struct.pack(">I", 0x80000000 | 32) + struct.pack(">IIIIIIII", 7, 0, 2, NFS, 3, 1, 1, 0xFFFFFFF0))
            sock.sendall(struct.pack(">I", 0x7FFFFFFF) + b"x" * 64)
            try:
                sock.settimeout(5)
                print("closed" if not sock.recv(4096) else "answered")
            except (ConnectionError, socket.timeout):
                print("closed")
        else:
            raise SystemExit(f"unknown command {cmd}")
    except NfsError as e:
        print(e, file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
