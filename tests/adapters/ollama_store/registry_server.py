#!/usr/bin/env python3
"""A small OCI-distribution registry for the pull/push tests (no internet needed).

Serves /v2/<ns>/<model>/manifests/<tag> and /blobs/<digest> (with Range), accepts
monolithic uploads (POST .../blobs/uploads/ then PUT ?digest=) and manifest PUTs.
Test knobs: --cut-after N sends only N bytes of the first GET of each larger blob and
drops the connection; --corrupt serves blobs with one byte changed. Every request is
logged to --log as "METHOD PATH RANGE".
"""
import argparse
import hashlib
import http.server
import json
import os
import threading
import uuid
from urllib.parse import parse_qs, urlparse

MANIFEST_TYPE = "application/vnd.docker.distribution.manifest.v2+json"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--cut-after", type=int, default=0)
    ap.add_argument("--corrupt", action="store_true")
    args = ap.parse_args()
    os.makedirs(os.path.join(args.root, "blobs"), exist_ok=True)
    lock = threading.Lock()
    cut_done = set()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def note(self):
            with lock, open(args.log, "a") as f:
                f.write(f"{self.command} {self.path} {self.headers.get('Range', '-')}\n")

        def reply(self, code, body=b"", headers=None):
            self.send_response(code)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def error(self, code, name, message):
            self.reply(code, json.dumps({"errors": [{"code": name, "message": message}]}).encode(),
                       {"Content-Type": "application/json"})

        def parts(self):
            p = urlparse(self.path).path.strip("/").split("/")
            return p if len(p) >= 5 and p[0] == "v2" else None

        def blob_file(self, digest):
            return os.path.join(args.root, "blobs", digest.replace(":", "-"))

        def manifest_file(self, p):
            return os.path.join(args.root, "manifests", p[1], p[2], p[4])

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            self.note()
            p = self.parts()
            if not p:
                return self.error(404, "NAME_UNKNOWN", "not found")
            if p[3] == "manifests":
                f = self.manifest_file(p)
                if not os.path.exists(f):
                    return self.error(404, "MANIFEST_UNKNOWN", "manifest unknown")
                with open(f, "rb") as fh:
                    return self.reply(200, fh.read(), {"Content-Type": MANIFEST_TYPE})
            if p[3] == "blobs" and len(p) == 5:
                f = self.blob_file(p[4])
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
                        and p[4] not in cut_done):
                    cut_done.add(p[4])
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
            return self.error(404, "NAME_UNKNOWN", "not found")

        def read_body(self):
            n = int(self.headers.get("Content-Length", "0"))
            return self.rfile.read(n) if n else b""

        def do_POST(self):
            self.note()
            p = self.parts()
            self.read_body()
            if p and p[3] == "blobs" and p[4] == "uploads":
                loc = f"/v2/{p[1]}/{p[2]}/blobs/uploads/{uuid.uuid4().hex}"
                return self.reply(202, b"", {"Location": loc})
            return self.error(404, "NAME_UNKNOWN", "not found")

        def do_PUT(self):
            self.note()
            p = self.parts()
            body = self.read_body()
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
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
