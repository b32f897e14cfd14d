#!/usr/bin/env python3
"""Cuts what capture-peers recorded into seed corpora for the fuzz targets.

    split.py CAPTURE_DIR CORPUS_DIR

Writes CORPUS_DIR/<target>/<name> for the targets fed by peer bytes, each
seed in the form its target reads (see the target's header comment: a
selector byte first where the target has one). Seeds are deduplicated,
at most MAX_PER_KIND per kind and under 64 KiB each, so a corpus stays
tens of files.
"""
import glob
import hashlib
import os
import re
import struct
import sys

MAX_BYTES = 64 << 10
MAX_PER_KIND = 6


class Corpus:
    def __init__(self, root):
        self.root = root
        self.seen = set()
        self.kinds = {}

    def add(self, target, kind, data):
        if len(data) == 0 or len(data) >= MAX_BYTES:
            return
        key = (target, hashlib.sha1(data).hexdigest())
        if key in self.seen:
            return
        n = self.kinds.get((target, kind), 0)
        if n >= MAX_PER_KIND:
            return
        self.seen.add(key)
        self.kinds[(target, kind)] = n + 1
        d = os.path.join(self.root, target)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"{kind}-{n}"), "wb") as f:
            f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def pairs(d):
    for c2s in sorted(glob.glob(os.path.join(d, "*.c2s"))):
        s2c = c2s[:-4] + ".s2c"
        if os.path.exists(s2c):
            yield read(c2s), read(s2c)


# ---- ONC RPC ----------------------------------------------------------------

def rpc_records(stream):
    records, record, pos = [], b"", 0
    while pos + 4 <= len(stream):
        (word,) = struct.unpack(">I", stream[pos:pos + 4])
        n = word & 0x7FFFFFFF
        record += stream[pos + 4:pos + 4 + n]
        pos += 4 + n
        if word & 0x80000000:
            records.append(record)
            record = b""
    return records


def reply_results(record):
    """The results of an accepted SUCCESS reply, or None."""
    if len(record) < 24:
        return None
    _, mtype, stat, _flavor, vlen = struct.unpack(">IIIII", record[:20])
    off = 20 + (vlen + 3) // 4 * 4
    if mtype != 1 or stat != 0 or len(record) < off + 4:
        return None
    (accept,) = struct.unpack(">I", record[off:off + 4])
    return record[off + 4:] if accept == 0 else None


# Procedure -> the nfs3_reply_fuzz selector (its switch).
NFS_SELECTOR = {0: 0, 1: 1, 3: 2, 4: 3, 17: 4, 6: 5, 7: 6, 21: 7, 8: 8, 9: 8, 12: 9, 13: 9,
                14: 10, 18: 11, 19: 12}
NFS_NAMES = {0: "null", 1: "getattr", 3: "lookup", 4: "access", 17: "readdirplus", 6: "read",
             7: "write", 21: "commit", 8: "create", 9: "mkdir", 12: "remove", 13: "rmdir",
             14: "rename", 18: "fsstat", 19: "fsinfo"}
MOUNT_SELECTOR = {0: 0, 1: 13, 5: 14}
MOUNT_NAMES = {0: "mount-null", 1: "mnt", 5: "export"}


def split_rpc(capture, corpus):
    for sub, selector, names in (("nfs", NFS_SELECTOR, NFS_NAMES), ("mount", MOUNT_SELECTOR, MOUNT_NAMES)):
        for c2s, s2c in pairs(os.path.join(capture, sub)):
            procs = {}
            for call in rpc_records(c2s):
                if len(call) >= 24:
                    xid, _, _, _, _, proc = struct.unpack(">IIIIII", call[:24])
                    procs[xid] = proc
            corpus.add("record_marking_fuzz", f"{sub}-stream", s2c[:4096])
            for record in rpc_records(s2c):
                (xid,) = struct.unpack(">I", record[:4])
                proc = procs.get(xid)
                corpus.add("rpc_reply_fuzz", f"{sub}-{names.get(proc, proc)}", record)
                results = reply_results(record)
                if proc in selector and results is not None:
                    corpus.add("nfs3_reply_fuzz", names[proc], bytes([selector[proc]]) + results)
    for reply in sorted(glob.glob(os.path.join(capture, "portmap", "*.reply"))):
        record = read(reply)
        proc = read(reply[:-6] + ".proc").decode()
        corpus.add("rpc_reply_fuzz", f"portmap-{proc}", record)
        results = reply_results(record)
        if results is not None:
            corpus.add("portmap_fuzz", f"proc{proc}", results)


# ---- HTTP / S3 ----------------------------------------------------------------

def http_messages(stream, is_request, request_methods=None):
    """(head, body) of each message; responses to HEAD have no body."""
    out, pos = [], 0
    while pos < len(stream):
        end = stream.find(b"\r\n\r\n", pos)
        if end < 0:
            break
        head = stream[pos:end + 4]
        pos = end + 4
        lines = head.split(b"\r\n")
        fields = {}
        for line in lines[1:]:
            if b":" in line:
                k, v = line.split(b":", 1)
                fields[k.strip().lower()] = v.strip()
        body = b""
        if not is_request:
            status = int(lines[0].split(b" ")[1])
            if 100 <= status < 200:
                out.append((head, b""))
                continue
            method = request_methods[len([m for m in out if not m[0].split(b" ")[1].startswith(b"1")])] \
                if request_methods and len(out) < len(request_methods) + 10 else b"GET"
            if method == b"HEAD" or status in (204, 304):
                out.append((head, b""))
                continue
        if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
            while True:
                nl = stream.find(b"\r\n", pos)
                size = int(stream[pos:nl].split(b";")[0], 16)
                pos = nl + 2
                body += stream[pos:pos + size]
                pos += size + 2
                if size == 0:
                    pos = stream.find(b"\r\n", pos - 2) + 2 if stream[pos - 2:pos] != b"\r\n" else pos
                    break
        else:
            n = int(fields.get(b"content-length", b"0"))
            body = stream[pos:pos + n]
            pos += n
        out.append((head, body))
    return out


def s3_kind(request_head, status):
    line = request_head.split(b"\r\n")[0].decode("latin-1")
    method, target = line.split(" ")[0], line.split(" ")[1]
    path, _, query = target.partition("?")
    copy = b"\r\nx-amz-copy-source:" in request_head.lower()
    if status >= 300:
        return 2, "error"
    if method == "GET" and path == "/":
        return 1, "list-buckets"
    if method == "GET" and "list-type=2" in query:
        return 0, "list-objects-v2"
    if method == "POST" and re.search(r"(^|&)uploads(=|&|$)", query):
        return 3, "initiate-multipart"
    if method == "POST" and "uploadId=" in query:
        return 4, "complete-multipart"
    if method == "PUT" and copy:
        return 5, "copy"
    if method == "GET" and re.search(r"(^|&)uploads(=|&|$)", query):
        return 6, "list-uploads"
    if method == "GET" and "uploadId=" in query:
        return 7, "list-parts"
    return None, None


def split_s3(capture, corpus):
    for c2s, s2c in pairs(os.path.join(capture, "s3")):
        requests = http_messages(c2s, True)
        methods = [r[0].split(b" ")[0] for r in requests]
        responses = [r for r in http_messages(s2c, False, methods)]
        finals = [r for r in responses if not r[0].split(b" ")[1].startswith(b"1")]
        for (req_head, _), (head, body) in zip(requests, finals):
            status = int(head.split(b" ")[1])
            method = req_head.split(b" ")[0]
            corpus.add("http_header_fuzz", f"{method.decode().lower()}-{status}",
                       bytes([1 if method == b"HEAD" else 0]) + head)
            selector, kind = s3_kind(req_head, status)
            if selector is not None and body:
                corpus.add("s3_replies_fuzz", kind, bytes([selector]) + body)


# ---- iRODS --------------------------------------------------------------------

def irods_frames(stream):
    frames, pos = [], 0
    while pos + 4 <= len(stream):
        (hlen,) = struct.unpack(">I", stream[pos:pos + 4])
        if hlen > 4096:  # not a frame (a raw CollStat acknowledgement): stop
            break
        header = stream[pos + 4:pos + 4 + hlen]
        def num(tag):
            m = re.search(rb"<" + tag + rb">\s*(-?\d+)\s*</" + tag + rb">", header)
            return int(m.group(1)) if m else 0
        msg, err, bs = num(b"msgLen"), num(b"errorLen"), num(b"bsLen")
        start = pos + 4 + hlen
        frames.append({"frame": stream[pos:start + msg + err + bs], "header": header,
                       "msg": stream[start:start + msg], "int_info": num(b"intInfo")})
        pos = start + msg + err + bs
    return frames


def split_irods(capture, corpus):
    for c2s, s2c in pairs(os.path.join(capture, "irods")):
        requests, replies = irods_frames(c2s), irods_frames(s2c)
        for req, rep in zip(requests, replies):
            api = req["int_info"]
            corpus.add("irods_message_fuzz", f"api{api}", rep["frame"])
            corpus.add("irods_xml_fuzz", "header", rep["header"])
            if rep["msg"]:
                corpus.add("irods_xml_fuzz", f"api{api}", rep["msg"])
            if api == 702 and rep["int_info"] >= 0 and rep["msg"]:
                columns = rep["msg"].count(b"<SqlResult_PI>")
                if 1 <= columns <= 4:
                    corpus.add("irods_replies_fuzz", "genquery", bytes([(columns - 1) << 1]) + rep["msg"])
            if api == 633 and rep["msg"]:
                corpus.add("irods_replies_fuzz", "objstat", b"\x01" + rep["msg"])


def main():
    capture, corpus_dir = sys.argv[1], sys.argv[2]
    corpus = Corpus(corpus_dir)
    split_rpc(capture, corpus)
    split_s3(capture, corpus)
    split_irods(capture, corpus)
    for (target, kind), n in sorted(corpus.kinds.items()):
        print(f"{target}: {kind} x{n}")


if __name__ == "__main__":
    main()
