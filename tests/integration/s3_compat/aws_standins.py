#!/usr/bin/env python3
"""Local stand-ins for the AWS credential endpoints ferry asks (AWS itself is
unreachable from the tests): IMDSv2, the ECS/EKS container endpoint and STS.
They hand out the S3 peers' static key (versitygw accepts only that) with an
expiry `--expires-in` seconds ahead, so the keys work against versitygw and
expire on a schedule the test chooses. No session token unless
`--with-session-token`: versitygw refuses any (InvalidToken).

  aws_standins.py [--expires-in S] [--ecs-token T] [--web-token W] [--source-key K]
                  [--sso-token O] [--with-session-token]
  -> prints "PORT" on its first line, serves on 127.0.0.1:PORT until stdin closes.

  PUT /latest/api/token                       IMDSv2 token (needs the TTL header)
  GET /latest/meta-data/iam/security-credentials/[ROLE]   (needs the token)
  GET /ecs/creds                              container endpoint (Authorization: T)
  GET /federation/credentials                 SSO GetRoleCredentials (bearer token O)
  POST /                                      STS AssumeRole (signed by key K) and
                                              AssumeRoleWithWebIdentity (token W)
  GET /stats                                  how many credentials each handed out
"""
import argparse
import datetime
import http.server
import json
import sys
import threading
import urllib.parse

KEY_ID = "AKIDLOCAL"
SECRET = "SECRETLOCAL"
ROLE = "ferry-test-role"
IMDS_TOKEN = "imds-token-1"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--expires-in", type=float, default=3600)
    p.add_argument("--ecs-token", default="ecs-secret-token")
    p.add_argument("--web-token", default="web-identity-jwt")
    p.add_argument("--source-key", default="SOURCEKEY")
    p.add_argument("--sso-token", default="sso-access-token")
    p.add_argument("--with-session-token", action="store_true")
    args = p.parse_args()
    stats = {"imds": 0, "ecs": 0, "assume_role": 0, "web_identity": 0, "sso": 0}
    lock = threading.Lock()

    def creds(kind):
        with lock:
            stats[kind] += 1
            n = stats[kind]
        expiry = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(
            seconds=args.expires_in)
        return {"AccessKeyId": KEY_ID, "SecretAccessKey": SECRET,
                "Token": f"{kind}-session-{n}" if args.with_session_token else "",
                "Expiration": expiry.strftime("%Y-%m-%dT%H:%M:%SZ")}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def reply(self, status, body, ctype="text/plain"):
            data = body.encode() if isinstance(body, str) else body
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def body(self):
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n).decode() if n else ""

        def do_PUT(self):
            self.body()
            if self.path == "/latest/api/token" and self.headers.get(
                    "x-aws-ec2-metadata-token-ttl-seconds"):
                return self.reply(200, IMDS_TOKEN)
            self.reply(400, "bad token request")

        def do_GET(self):
            base = "/latest/meta-data/iam/security-credentials/"
            if self.path.startswith(base):
                if self.headers.get("x-aws-ec2-metadata-token") != IMDS_TOKEN:
                    return self.reply(401, "")
                if self.path == base:
                    return self.reply(200, ROLE)
                if self.path == base + ROLE:
                    c = creds("imds")
                    c.update(Code="Success", Type="AWS-HMAC")
                    return self.reply(200, json.dumps(c), "application/json")
                return self.reply(404, "")
            if self.path == "/ecs/creds":
                if self.headers.get("Authorization") != args.ecs_token:
                    return self.reply(403, json.dumps({"message": "bad authorization token"}))
                c = creds("ecs")
                c["RoleArn"] = "arn:aws:iam::000000000000:role/" + ROLE
                return self.reply(200, json.dumps(c), "application/json")
            if self.path.startswith("/federation/credentials?"):
                q = urllib.parse.parse_qs(self.path.split("?", 1)[1])
                if self.headers.get("x-amz-sso_bearer_token") != args.sso_token:
                    return self.reply(401, json.dumps({"message": "Session token not found or invalid"}))
                if not q.get("account_id") or not q.get("role_name"):
                    return self.reply(400, json.dumps({"message": "account_id and role_name"}))
                c = creds("sso")
                expiry = datetime.datetime.strptime(c["Expiration"], "%Y-%m-%dT%H:%M:%SZ")
                millis = int(expiry.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)
                return self.reply(200, json.dumps({"roleCredentials": {
                    "accessKeyId": c["AccessKeyId"], "secretAccessKey": c["SecretAccessKey"],
                    "sessionToken": c["Token"], "expiration": millis}}), "application/json")
            if self.path == "/stats":
                with lock:
                    return self.reply(200, json.dumps(stats), "application/json")
            self.reply(404, "")

        def do_POST(self):
            form = urllib.parse.parse_qs(self.body())
            action = form.get("Action", [""])[0]
            if action == "AssumeRole":
                auth = self.headers.get("Authorization", "")
                if (f"Credential={args.source_key}/" not in auth
                        or "/sts/aws4_request" not in auth):
                    return self.sts_error(403, "InvalidClientTokenId",
                                          "The security token included in the request is invalid.")
                kind = "assume_role"
            elif action == "AssumeRoleWithWebIdentity":
                if form.get("WebIdentityToken", [""])[0] != args.web_token:
                    return self.sts_error(400, "InvalidIdentityToken", "Token is not valid")
                kind = "web_identity"
            else:
                return self.sts_error(400, "InvalidAction", action)
            c = creds(kind)
            result = "AssumeRoleResult" if kind == "assume_role" else \
                "AssumeRoleWithWebIdentityResult"
            self.reply(200, f"<{result}Response><{result}><Credentials>"
                       f"<AccessKeyId>{c['AccessKeyId']}</AccessKeyId>"
                       f"<SecretAccessKey>{c['SecretAccessKey']}</SecretAccessKey>"
                       f"<SessionToken>{c['Token']}</SessionToken>"
                       f"<Expiration>{c['Expiration']}</Expiration>"
                       f"</Credentials></{result}></{result}Response>", "text/xml")

        def sts_error(self, status, code, message):
            self.reply(status, f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code>"
                       f"<Message>{message}</Message></Error></ErrorResponse>", "text/xml")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(server.server_address[1], flush=True)
    sys.stdin.read()  # the test closes our stdin when it is done
    server.shutdown()


if __name__ == "__main__":
    main()
