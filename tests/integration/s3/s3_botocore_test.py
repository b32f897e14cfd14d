"""ferry beside botocore: the same S3 endpoints, requests and signatures.

Run by ctest as `python s3_botocore_test.py PROBE` (PROBE: s3_botocore_probe,
the ferry half). botocore comes from PyPI into the worktree's .venv.

- Endpoints: for every region x bucket x FIPS/dual-stack/us-east-1-regional
  x addressing style, ferry's resolved URL is the one botocore's client
  sends to (cases botocore refuses, e.g. FIPS in China, are left out).
- Requests: ferry's store sends each operation to a capture server on
  127.0.0.1; botocore's client builds the same operation for the same
  endpoint, keys and clock. Method, path, query, every signed header and
  the Authorization header must be equal. The only input set to match is
  botocore's payload mode: ferry does not hash bodies (UNSIGNED-PAYLOAD,
  botocore's `payload_signing_enabled = False`), and botocore's
  ListObjectsV2 `encoding-type=url` default is off (ferry does not ask for
  it). CompleteMultipartUpload's XML body differs in layout (botocore adds
  xmlns and orders ETag first), so its hash differs: for it the check is
  botocore's signer over ferry's request.
- Signatures: every request ferry sent, signed again by botocore's
  S3SigV4Auth at the same time, gives ferry's canonical request and
  Authorization.
"""
import datetime
import http.server
import subprocess
import sys
import threading
import unittest
import urllib.parse
from unittest import mock

import botocore.auth
import botocore.config
import botocore.credentials
import botocore.handlers
import botocore.session
from botocore.awsrequest import AWSRequest, AWSResponse

PROBE = None
KEY_ID = "AKIDEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
CLOCK = datetime.datetime(2026, 1, 2, 3, 4, 5)
KEY = "dir/a b+c~d.txt"

OK_REPLIES = {
    "GetObject": (206, {"Content-Range": "bytes 0-2/3", "ETag": '"e"'}, b"abc"),
    "PutObject": (200, {"ETag": '"e"'}, b""),
    "CreateMultipartUpload": (200, {}, b"<InitiateMultipartUploadResult><UploadId>U1</UploadId>"
                              b"</InitiateMultipartUploadResult>"),
    "UploadPart": (200, {"ETag": '"e1"'}, b""),
    "ListParts": (200, {}, b"<ListPartsResult><IsTruncated>false</IsTruncated></ListPartsResult>"),
    "CompleteMultipartUpload": (200, {}, b"<CompleteMultipartUploadResult><ETag>\"e-1\"</ETag>"
                                b"</CompleteMultipartUploadResult>"),
    "AbortMultipartUpload": (204, {}, b""),
    "ListObjectsV2": (200, {}, b"<ListBucketResult><IsTruncated>false</IsTruncated>"
                      b"</ListBucketResult>"),
    "HeadObject": (200, {"ETag": '"e"', "Content-Length": "3",
                         "Last-Modified": "Fri, 02 Jan 2026 03:04:05 GMT"}, b""),
    "CopyObject": (200, {}, b"<CopyObjectResult><ETag>\"c\"</ETag></CopyObjectResult>"),
}


def operation_of(method, path, query):
    q = urllib.parse.parse_qs(query, keep_blank_values=True)
    if method == "HEAD":
        return "HeadObject"
    if method == "GET":
        return "ListObjectsV2" if "list-type" in q else "ListParts" if "uploadId" in q else "GetObject"
    if method == "POST":
        return "CreateMultipartUpload" if "uploads" in q else "CompleteMultipartUpload"
    if method == "DELETE":
        return "AbortMultipartUpload"
    return "UploadPart" if "partNumber" in q else "PutObject"


class CaptureServer:
    """Records every request (method, raw path, headers, body) and answers
    it as S3 would a success."""

    def __init__(self):
        self.requests = []
        captured = self.requests

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def handle_one(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path, _, query = self.path.partition("?")
                op = operation_of(self.command, path, query)
                if op == "PutObject" and "x-amz-copy-source" in self.headers:
                    op = "CopyObject"
                captured.append({"op": op, "method": self.command, "path": path, "query": query,
                                 "headers": {k.lower(): v for k, v in self.headers.items()},
                                 "body": body})
                status, headers, reply = OK_REPLIES[op]
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                if "Content-Length" not in headers:
                    self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(reply)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_one

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def ferry_requests(style):
    server = CaptureServer()
    try:
        host = "127.0.0.1" if style == "path" else "s3.localhost"
        out = subprocess.run([PROBE, "requests", f"{host}:{server.port}", style],
                             capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise AssertionError(f"probe failed: {out.stderr}")
        return server.port, {r["op"]: r for r in server.requests}
    finally:
        server.close()


def botocore_client(endpoint_url=None, region="us-east-1", s3=None, payload_signing=False, **cfg):
    session = botocore.session.get_session()
    s3_config = {"payload_signing_enabled": payload_signing}
    s3_config.update(s3 or {})
    client = session.create_client(
        "s3", region_name=region, endpoint_url=endpoint_url, aws_access_key_id=KEY_ID,
        aws_secret_access_key=SECRET,
        config=botocore.config.Config(s3=s3_config, request_checksum_calculation="when_required",
                                      response_checksum_validation="when_required",
                                      retries={"max_attempts": 1}, **cfg))
    client.meta.events.unregister("before-parameter-build.s3.ListObjectsV2",
                                  botocore.handlers.set_list_objects_encoding_type_url)
    return client


class _Body:
    def stream(self, **kwargs):
        return iter([b""])


def botocore_sent(client, call):
    """The request botocore's client sends for `call` (never sent)."""
    sent = []

    def capture(request, **kwargs):
        sent.append(request)
        return AWSResponse(request.url, 200, {"ETag": '"e"'}, _Body())

    client.meta.events.register("before-send", capture)
    with mock.patch("botocore.auth.get_current_datetime", return_value=CLOCK):
        try:
            call()
        except Exception:  # the canned empty answer may not parse; the request is what counts
            pass
    client.meta.events.unregister("before-send", capture)
    return sent[0]


def signed_headers(authorization):
    return authorization.split("SignedHeaders=")[1].split(",")[0].split(";")


def as_str(v):
    return v.decode() if isinstance(v, bytes) else v


def shape(method, url, headers):
    """What must be equal: method, path, query (as a sorted list), the signed
    headers' values, the Authorization."""
    parts = urllib.parse.urlsplit(url)
    headers = {k.lower(): as_str(v) for k, v in headers.items()}
    auth = headers["authorization"]
    signed = {h: headers[h].strip() for h in signed_headers(auth) if h != "host"}
    return {"method": method, "host": parts.netloc, "path": parts.path,
            "query": sorted(urllib.parse.parse_qsl(parts.query, keep_blank_values=True)),
            "signed": signed, "authorization": auth.replace(", ", ",")}


BOTOCORE_CALLS = {
    "GetObject": lambda c: c.get_object(Bucket="bkt", Key=KEY, Range="bytes=0-9"),
    "PutObject": lambda c: c.put_object(Bucket="bkt", Key=KEY, Body=b"abc"),
    "CreateMultipartUpload": lambda c: c.create_multipart_upload(Bucket="bkt", Key=KEY),
    "UploadPart": lambda c: c.upload_part(Bucket="bkt", Key=KEY, UploadId="U1", PartNumber=1,
                                          Body=b"abc"),
    "ListParts": lambda c: c.list_parts(Bucket="bkt", Key=KEY, UploadId="U1", MaxParts=1000),
    "AbortMultipartUpload": lambda c: c.abort_multipart_upload(Bucket="bkt", Key=KEY,
                                                               UploadId="U1"),
    "ListObjectsV2": lambda c: c.list_objects_v2(Bucket="bkt", Prefix="dir/", Delimiter="/",
                                                 MaxKeys=1000),
    "HeadObject": lambda c: c.head_object(Bucket="bkt", Key=KEY),
    "CopyObject": lambda c: c.copy_object(Bucket="bkt", Key=KEY, CopySource="src/x y+z.bin"),
}


class SameRequestsAsBotocore(unittest.TestCase):
    def check_style(self, style):
        port, ferry = ferry_requests(style)
        self.assertEqual(len(ferry), len(BOTOCORE_CALLS) + 1, sorted(ferry))
        host = "127.0.0.1" if style == "path" else "s3.localhost"
        client = botocore_client(f"https://{host}:{port}", s3={"addressing_style": style})
        for op, call in BOTOCORE_CALLS.items():
            with self.subTest(op=op, style=style):
                theirs = botocore_sent(client, lambda: call(client))
                mine = ferry[op]
                mine_url = f"http://{mine['headers']['host']}{mine['path']}?{mine['query']}"
                got = shape(mine["method"], mine_url, mine["headers"])
                want = shape(theirs.method, theirs.url, theirs.headers)
                self.assertEqual(got, want)
        print(f"{style}: {len(BOTOCORE_CALLS)} operations sent and signed as botocore does")

    def test_path_style_requests_and_signatures_match(self):
        self.check_style("path")

    def test_virtual_hosted_requests_and_signatures_match(self):
        self.check_style("virtual")

    def test_botocores_signer_gives_ferrys_signature_for_every_request(self):
        for style in ("path", "virtual"):
            _, ferry = ferry_requests(style)
            for op, r in ferry.items():
                with self.subTest(op=op, style=style):
                    auth = r["headers"]["authorization"]
                    headers = {h: r["headers"][h] for h in signed_headers(auth)}
                    # https: botocore hashes every payload over plain http;
                    # the scheme is not signed.
                    url = f"https://{r['headers']['host']}{r['path']}"
                    if r["query"]:
                        url += "?" + r["query"]
                    request = AWSRequest(method=r["method"], url=url, headers=headers,
                                         data=r["body"])
                    request.context["client_config"] = botocore.config.Config(s3={
                        "payload_signing_enabled":
                            headers["x-amz-content-sha256"] != "UNSIGNED-PAYLOAD"})
                    signer = botocore.auth.S3SigV4Auth(
                        botocore.credentials.Credentials(KEY_ID, SECRET), "s3", "us-east-1")
                    with mock.patch("botocore.auth.get_current_datetime", return_value=CLOCK):
                        signer.add_auth(request)
                    del request.headers["Authorization"]
                    canonical = signer.canonical_request(request)
                    with mock.patch("botocore.auth.get_current_datetime", return_value=CLOCK):
                        signer.add_auth(request)
                    self.assertEqual(as_str(request.headers["Authorization"]).replace(", ", ","),
                                     auth, canonical)


class SameEndpointsAsBotocore(unittest.TestCase):
    def test_every_region_bucket_and_variant_resolves_to_botocores_url(self):
        out = subprocess.run([PROBE, "targets"], capture_output=True, text=True, check=True)
        checked = skipped = 0
        clients = {}
        for line in out.stdout.splitlines():
            region, bucket, fips, dual, regional, style, url = line.split()
            key = (region, fips, dual, regional, style)
            if key not in clients:
                clients[key] = botocore_client(
                    region=region, use_fips_endpoint=fips == "1",
                    use_dualstack_endpoint=dual == "1",
                    s3={"addressing_style": style,
                        "us_east_1_regional_endpoint": "regional" if regional == "1" else "legacy"})
            client = clients[key]
            try:
                sent = botocore_sent(client, lambda: client.head_object(Bucket=bucket, Key="a b/c"))
            except IndexError:  # botocore refused the combination before sending
                skipped += 1
                continue
            with self.subTest(case=line):
                self.assertEqual(url, sent.url)
            checked += 1
        print(f"endpoints: {checked} cases as botocore resolves them, {skipped} botocore refuses")
        self.assertGreater(checked, 300)


if __name__ == "__main__":
    PROBE = sys.argv.pop(1)
    unittest.main(verbosity=2)
