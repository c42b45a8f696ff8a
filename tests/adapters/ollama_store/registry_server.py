#!/usr/bin/env python3
"""A small OCI-distribution registry for the pull/push tests (no internet needed).

Serves /v2/<ns>/<model>/manifests/<tag> and /blobs/<digest> (with Range), accepts
monolithic uploads (POST .../blobs/uploads/ then PUT ?digest=) and manifest PUTs.
Test knobs:
  --cut-after N    sends only N bytes of the first GET of each larger blob, then drops
                   the connection
  --corrupt        serves blobs with one byte changed
  --tls DIR        serves HTTPS with a self-signed certificate for 127.0.0.1 and localhost,
                   made now; DIR/ca.pem is what clients must trust
  --auth           answers /v2/ requests without a good token with 401 and
                   `WWW-Authenticate: Bearer realm=...,service=...,scope=...`; GET /token
                   hands out tokens (pull, or pull+push when the scope asks for push)
  --realm-host H   names host H instead of 127.0.0.1 in the realm (a foreign realm)
  --redirect-blobs answers blob GETs with a 307 to /cdn/<digest> on `localhost` (another
                   host name, as registries send downloads to a CDN); /cdn needs no token
Every request is logged to --log as "METHOD PATH RANGE auth=yes|no".
"""
import argparse
import datetime
import hashlib
import http.server
import ipaddress
import json
import os
import ssl
import threading
import uuid
from urllib.parse import parse_qs, urlparse

MANIFEST_TYPE = "application/vnd.docker.distribution.manifest.v2+json"
SERVICE = "hostlm-test-registry"


def make_certificate(folder):
    """A fresh self-signed certificate (its own CA) for 127.0.0.1 and localhost."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "hostlm test registry")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
            .sign(key, hashes.SHA256()))
    os.makedirs(folder, exist_ok=True)
    cert_file, key_file = os.path.join(folder, "ca.pem"), os.path.join(folder, "key.pem")
    with open(key_file, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    with open(cert_file + ".tmp", "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    os.rename(cert_file + ".tmp", cert_file)
    return cert_file, key_file


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--cut-after", type=int, default=0)
    ap.add_argument("--corrupt", action="store_true")
    ap.add_argument("--tls")
    ap.add_argument("--auth", action="store_true")
    ap.add_argument("--realm-host", default="127.0.0.1")
    ap.add_argument("--redirect-blobs", action="store_true")
    args = ap.parse_args()
    scheme = "https" if args.tls else "http"
    tokens = {}  # token -> set of actions it allows
    os.makedirs(os.path.join(args.root, "blobs"), exist_ok=True)
    lock = threading.Lock()
    cut_done = set()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def note(self):
            auth = "yes" if self.headers.get("Authorization") else "no"
            with lock, open(args.log, "a") as f:
                f.write(f"{self.command} {self.path} {self.headers.get('Range', '-')} "
                        f"auth={auth}\n")

        def reply(self, code, body=b"", headers=None):
            self.send_response(code)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def error(self, code, name, message, headers=None):
            self.reply(code, json.dumps({"errors": [{"code": name, "message": message}]}).encode(),
                       {"Content-Type": "application/json", **(headers or {})})

        def parts(self):
            p = urlparse(self.path).path.strip("/").split("/")
            return p if len(p) >= 5 and p[0] == "v2" else None

        def blob_file(self, digest):
            return os.path.join(args.root, "blobs", digest.replace(":", "-"))

        def manifest_file(self, p):
            return os.path.join(args.root, "manifests", p[1], p[2], p[4])

        def port(self):
            return self.server.server_address[1]

        def authorized(self, p):
            """True when the request may go on; otherwise the 401 challenge is sent."""
            if not args.auth:
                return True
            action = "pull" if self.command in ("GET", "HEAD") else "push"
            given = self.headers.get("Authorization", "")
            if given.startswith("Bearer ") and action in tokens.get(given[7:], ()):
                return True
            actions = "pull" if action == "pull" else "pull,push"
            realm = f"{scheme}://{args.realm_host}:{self.port()}/token"
            challenge = (f'Bearer realm="{realm}",service="{SERVICE}",'
                         f'scope="repository:{p[1]}/{p[2]}:{actions}"')
            self.error(401, "UNAUTHORIZED", "authentication required",
                       {"WWW-Authenticate": challenge})
            return False

        def token(self):
            q = parse_qs(urlparse(self.path).query)
            if q.get("service") != [SERVICE] or not q.get("scope"):
                return self.error(400, "DENIED", "service and scope are required")
            actions = set()
            for scope in q["scope"]:
                actions |= set(scope.rsplit(":", 1)[-1].split(","))
            token = uuid.uuid4().hex
            with lock:
                tokens[token] = actions
            return self.reply(200, json.dumps({"token": token}).encode(),
                              {"Content-Type": "application/json"})

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            self.note()
            path = urlparse(self.path).path
            if path == "/token":
                return self.token()
            if path.startswith("/cdn/"):
                return self.serve_blob(path[5:])
            p = self.parts()
            if not p:
                return self.error(404, "NAME_UNKNOWN", "not found")
            if not self.authorized(p):
                return
            if p[3] == "manifests":
                f = self.manifest_file(p)
                if not os.path.exists(f):
                    return self.error(404, "MANIFEST_UNKNOWN", "manifest unknown")
                with open(f, "rb") as fh:
                    return self.reply(200, fh.read(), {"Content-Type": MANIFEST_TYPE})
            if p[3] == "blobs" and len(p) == 5:
                if args.redirect_blobs and self.command == "GET":
                    if not os.path.exists(self.blob_file(p[4])):
                        return self.error(404, "BLOB_UNKNOWN", "blob unknown")
                    where = f"{scheme}://localhost:{self.port()}/cdn/{p[4]}"
                    return self.reply(307, b"", {"Location": where})
                return self.serve_blob(p[4])
            return self.error(404, "NAME_UNKNOWN", "not found")

        def serve_blob(self, digest):
            f = self.blob_file(digest)
            if not os.path.exists(f):
                return self.error(404, "BLOB_UNKNOWN", "blob unknown")
            with open(f, "rb") as fh:
                data = fh.read()
            if args.corrupt and data:
                data = bytes([data[0] ^ 1]) + data[1:]
            start = 0
            rng = self.headers.get("Range")
            if rng and rng.startswith("bytes=") and rng.endswith("-"):
                start = int(rng[6:-1])
            body = data[start:]
            code = 206 if start else 200
            headers = {"Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
            if start:
                headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
            if (self.command == "GET" and args.cut_after and len(body) > args.cut_after
                    and digest not in cut_done):
                cut_done.add(digest)
                self.send_response(code)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[:args.cut_after])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            return self.reply(code, body, headers)

        def read_body(self):
            n = int(self.headers.get("Content-Length", "0"))
            return self.rfile.read(n) if n else b""

        def do_POST(self):
            self.note()
            p = self.parts()
            self.read_body()
            if p and not self.authorized(p):
                return
            if p and p[3] == "blobs" and p[4] == "uploads":
                loc = f"/v2/{p[1]}/{p[2]}/blobs/uploads/{uuid.uuid4().hex}"
                return self.reply(202, b"", {"Location": loc})
            return self.error(404, "NAME_UNKNOWN", "not found")

        def do_PUT(self):
            self.note()
            p = self.parts()
            body = self.read_body()
            if p and not self.authorized(p):
                return
            if p and p[3] == "manifests":
                f = self.manifest_file(p)
                os.makedirs(os.path.dirname(f), exist_ok=True)
                with open(f, "wb") as fh:
                    fh.write(body)
                return self.reply(201)
            if p and p[3] == "blobs" and len(p) == 6 and p[4] == "uploads":
                digest = parse_qs(urlparse(self.path).query).get("digest", [""])[0]
                if "sha256:" + hashlib.sha256(body).hexdigest() != digest:
                    return self.error(400, "DIGEST_INVALID", "digest does not match")
                with open(self.blob_file(digest), "wb") as fh:
                    fh.write(body)
                return self.reply(201, b"", {"Docker-Content-Digest": digest})
            return self.error(404, "NAME_UNKNOWN", "not found")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if args.tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*make_certificate(args.tls))
        server.socket = context.wrap_socket(server.socket, server_side=True)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
