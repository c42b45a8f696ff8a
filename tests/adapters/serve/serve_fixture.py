"""Starts `hostlm serve` for a test: a free port, an empty model store of its own, no
Ollama or LM Studio folders of the machine, JSON logs in a file. Waits until the server
answers (generously: CI machines are slow and sanitizer builds slower) and stops it with
SIGTERM at the end."""

import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("HOSTLM_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
TINY = os.path.join(SOURCE, "tests", "data", "models", "tiny-tied-f32")
READY_TIMEOUT = float(os.environ.get("HOSTLM_TEST_READY_TIMEOUT", "180"))


def build_dir():
    build = os.environ.get("HOSTLM_BUILD_DIR", "")
    if build.startswith("set:"):  # ctest's ENVIRONMENT_MODIFICATION form
        build = build[4:]
    if not build or not os.path.isdir(build):
        raise SystemExit("set HOSTLM_BUILD_DIR to a hostlm build folder")
    return build


HOSTLM = os.path.join(build_dir(), "bin", "hostlm")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, *args, env=None, ready=True, log_level="debug"):
        """`log_level` None: no --log-level flag (the settings file or environment decides)."""
        self.tmp = tempfile.TemporaryDirectory(prefix="hostlm-serve-test-")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.store = os.path.join(self.tmp.name, "store")
        self.log_path = os.path.join(self.tmp.name, "server.log")
        full_env = dict(os.environ)
        full_env.update({
            "HOSTLM_MODELS": self.store,
            "OLLAMA_MODELS": os.path.join(self.tmp.name, "no-ollama-store"),
            "HOSTLM_LMSTUDIO_MODELS": os.path.join(self.tmp.name, "lmstudio"),
        })
        for key in ("HOSTLM_API_KEY", "HOSTLM_HOST", "HOSTLM_NUM_PARALLEL", "HOSTLM_MAX_QUEUE"):
            full_env.pop(key, None)
        full_env.update(env or {})
        self.env = full_env
        cmd = [HOSTLM, "serve", "--host", f"127.0.0.1:{self.port}", "--log-format", "json",
               *(["--log-level", log_level] if log_level else []), *args]
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=full_env)
        if ready:
            self.wait_ready()

    def wait_ready(self):
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"hostlm serve exited with {self.proc.returncode}:\n{self.log_text()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.2)
        raise AssertionError(f"hostlm serve did not answer within {READY_TIMEOUT} s:\n{self.log_text()}")

    def log_text(self):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def log_records(self):
        records = []
        for line in self.log_text().splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                pass  # the engine's memory plan is plain text
        return records

    def stop(self, timeout=60):
        """SIGTERM, then wait; returns the exit code (kills it if it hangs)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"hostlm serve did not stop within {timeout} s:\n{self.log_text()}")
        self.log.close()
        code = self.proc.returncode
        self.tmp.cleanup()
        return code

    def request(self, method, path, body=None, headers=None, timeout=120):
        """One HTTP request; returns (status, parsed JSON or text)."""
        data = None
        hdrs = dict(headers or {})
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        text = raw.decode("utf-8", "replace")
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text
