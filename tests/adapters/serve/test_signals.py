"""Signals of `hostlm serve`, against a running server with the tiny model:

- SIGTERM while streams run: they finish (within the grace period) or end with a final error
  chunk (past it), the chunked/SSE framing always ends properly, and the process exits 0 within
  grace + 10 s (the bound the signal thread enforces);
- a second SIGTERM during the grace period exits at once, with status 1;
- SIGHUP re-reads the settings file (--config) and re-opens the model stores and plugin folders:
  a store that appeared since is listed and served, changed settings apply or are reported as
  needing a restart, a broken file changes nothing, and loaded models stay loaded.

Waits poll the server (its log, its API) with generous timeouts: CI machines have 2 cores."""

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_fixture import HOSTLM, SOURCE, TINY, Server  # noqa: E402

GREEDY = {"temperature": 0, "seed": 1}
WAIT = 120  # seconds for anything that should take a moment
GHOST_MANIFEST = os.path.join(SOURCE, "tests", "host", "registry", "fixtures", "missing_library",
                              "hostlm_ghost.json")
_tmp = None  # module scratch folder: the tiny model converted to GGUF once, for `hostlm create`


def setUpModule():
    global _tmp
    _tmp = tempfile.mkdtemp(prefix="hostlm-signal-test-")
    subprocess.run([HOSTLM, "convert", TINY, os.path.join(_tmp, "tiny.gguf"), "--type", "f32"],
                   check=True, capture_output=True, timeout=300)
    with open(os.path.join(_tmp, "Modelfile"), "w") as f:
        f.write("FROM ./tiny.gguf\nPARAMETER temperature 0\nPARAMETER num_predict 3\n")


def tearDownModule():
    shutil.rmtree(_tmp, ignore_errors=True)


def create_model(name, store):
    """`hostlm create NAME -f Modelfile` into `store`, as a user would while the server runs."""
    env = dict(os.environ, HOSTLM_MODELS=store, OLLAMA_MODELS=os.path.join(_tmp, "no-ollama"))
    p = subprocess.run([HOSTLM, "create", name, "-f", "Modelfile"], cwd=_tmp, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr


class SmallBufferConnection(http.client.HTTPConnection):
    """A client with a tiny receive buffer: once it stops reading, the server's writes block
    almost at once, so its stream is certainly still running when the test signals."""

    def connect(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.settimeout(self.timeout)
        self.sock.connect((self.host, self.port))


def open_stream(server, path, body, small_buffer=True):
    """A streamed POST with its headers and first line read: (connection, response, first)."""
    cls = SmallBufferConnection if small_buffer else http.client.HTTPConnection
    conn = cls("127.0.0.1", server.port, timeout=300)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 200, resp.read()
    return conn, resp, resp.readline().decode()


def lines_of(first, rest):
    return [line for line in (first + rest).splitlines() if line.strip()]


def wait_for(predicate, timeout, what, server=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if server is not None and server.proc.poll() is not None:
            raise AssertionError(f"the server exited ({server.proc.returncode}) while waiting for "
                                 f"{what}:\n{server.log_text()}")
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}" +
                         (f":\n{server.log_text()}" if server else ""))


def records(server, msg):
    return [r for r in server.log_records() if r.get("msg") == msg]


def wait_record(server, msg, count=1):
    """The count-th log record with this message, once it is there."""
    return wait_for(lambda: (lambda rs: rs[count - 1] if len(rs) >= count else None)(records(server, msg)),
                    WAIT, f"log record {msg!r} #{count}", server)


def reload(server, outcome="reloaded"):
    """SIGHUP, then the log record that reports the reload."""
    done = len(records(server, "reloaded")) + len(records(server, "reload failed; settings unchanged"))
    server.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: len(records(server, "reloaded")) +
             len(records(server, "reload failed; settings unchanged")) > done,
             WAIT, "the reload's log record", server)
    return records(server, outcome)[-1]


def auth(key):
    return {"Authorization": f"Bearer {key}"}


def tag_names(server, headers=None):
    status, body = server.request("GET", "/api/tags", headers=headers)
    assert status == 200, body
    return [m["name"] for m in body["models"]]


def v1_ids(server, headers=None):
    status, body = server.request("GET", "/v1/models", headers=headers)
    assert status == 200, body
    return [m["id"] for m in body["data"]]


def chat(server, model, headers=None):
    return server.request("POST", "/api/chat", {
        "model": model, "stream": False, "messages": [{"role": "user", "content": "hi"}],
        "options": dict(GREEDY, num_predict=3)}, headers=headers)


def loaded(server, headers=None):
    status, body = server.request("GET", "/api/ps", headers=headers)
    assert status == 200, body
    return {m["name"]: m for m in body["models"]}


def start(test, *args, **kwargs):
    """A server that is killed at the end of the test if the test left it running."""
    server = Server(*args, **kwargs)

    def kill():
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()
        server.log.close()
        server.tmp.cleanup()

    test.addCleanup(kill)
    return server


class SigtermTest(unittest.TestCase):
    def test_streams_finish_within_the_grace_period_and_the_exit_is_0(self):
        grace = 120
        server = start(self, env={"HOSTLM_SHUTDOWN_GRACE": str(grace)})
        n = 3000  # a few hundred KB of stream: far more than the socket buffers hold
        streams = [
            ("/api/generate", open_stream(server, "/api/generate", {
                "model": TINY, "prompt": "hi", "raw": True, "options": dict(GREEDY, num_predict=n)})),
            ("/v1/chat/completions", open_stream(server, "/v1/chat/completions", {
                "model": TINY, "messages": [{"role": "user", "content": "hi"}], "stream": True,
                "max_tokens": n, "temperature": 0})),
        ]
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        shutting = wait_record(server, "shutting down")
        self.assertEqual(shutting["streams"], 2, "both streams run when the signal arrives")
        self.assertEqual(shutting["grace_seconds"], grace)
        # No new work is taken: the listening socket is closed or new requests get 503.
        try:
            status, _ = server.request("GET", "/api/tags", timeout=30)
            self.assertEqual(status, 503)
        except OSError:
            pass

        for path, (conn, resp, first) in streams:
            lines = lines_of(first, resp.read().decode())  # IncompleteRead if cut off
            if path == "/api/generate":
                # Greedy on the random tiny model runs to the limit; an end token would be as clean.
                last = json.loads(lines[-1])
                self.assertTrue(last["done"], lines[-1])
                self.assertIn(last["done_reason"], ("length", "stop"))
                if last["done_reason"] == "length":
                    self.assertEqual(last["eval_count"], n)
            else:
                self.assertEqual(lines[-1], "data: [DONE]")
                final = json.loads(lines[-2][len("data: "):])
                self.assertIn(final["choices"][0]["finish_reason"], ("length", "stop"), lines[-2])
            conn.close()
        code = server.proc.wait(timeout=grace + 30)
        elapsed = time.monotonic() - started
        self.assertEqual(code, 0, server.log_text())
        self.assertLess(elapsed, grace + 10)
        self.assertFalse(records(server, "stopping streams still running after the grace period"))
        self.assertTrue(records(server, "stopped"))
        server.stop()

    def test_streams_past_the_grace_period_end_with_a_final_chunk_and_the_exit_is_0(self):
        grace = 2
        server = start(self, "--ctx", "32768", env={"HOSTLM_SHUTDOWN_GRACE": str(grace)})
        endless = dict(GREEDY, num_predict=30000)
        streams = [
            ("/api/generate", open_stream(server, "/api/generate", {
                "model": TINY, "prompt": "hi", "raw": True, "options": endless}, small_buffer=False)),
            ("/v1/completions", open_stream(server, "/v1/completions", {
                "model": TINY, "prompt": "hi", "stream": True, "max_tokens": 30000, "temperature": 0},
                small_buffer=False)),
        ]
        bodies = {}

        def drain(path, resp):  # a client that keeps reading
            try:
                bodies[path] = resp.read().decode()
            except Exception as e:  # noqa: BLE001 - reported below
                bodies[path] = e

        readers = [threading.Thread(target=drain, args=(path, s[1])) for path, s in streams]
        for t in readers:
            t.start()
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        for t in readers:
            t.join(timeout=grace + 60)
        code = server.proc.wait(timeout=grace + 60)
        elapsed = time.monotonic() - started
        for path, (conn, resp, first) in streams:
            self.assertIsInstance(bodies.get(path), str, f"{path}: {bodies.get(path)!r}")
            lines = lines_of(first, bodies[path])
            if path == "/api/generate":
                self.assertEqual(json.loads(lines[-1]), {"error": "the server is shutting down"})
            else:
                last = json.loads(lines[-1][len("data: "):])
                self.assertEqual(last["error"]["type"], "unavailable_error")
            conn.close()
        self.assertEqual(code, 0, server.log_text())
        self.assertLess(elapsed, grace + 10)
        self.assertTrue(records(server, "stopping streams still running after the grace period"))
        server.stop()

    def test_a_second_sigterm_exits_at_once_with_status_1(self):
        server = start(self, env={"HOSTLM_SHUTDOWN_GRACE": "600"})
        conn, resp, _ = open_stream(server, "/api/generate", {
            "model": TINY, "prompt": "hi", "raw": True, "options": dict(GREEDY, num_predict=3000)})
        server.proc.send_signal(signal.SIGTERM)
        self.assertEqual(wait_record(server, "shutting down")["streams"], 1)
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        code = server.proc.wait(timeout=30)
        self.assertLess(time.monotonic() - started, 10, "no waiting for the 600 s grace period")
        self.assertEqual(code, 1, "an exit that abandons streams is not a clean one")
        self.assertTrue(records(server, "second signal: exiting now"))
        conn.close()
        server.stop()


class SighupTest(unittest.TestCase):
    def test_a_store_created_since_is_served_and_loaded_models_stay(self):
        server = start(self)
        # The fixture's OLLAMA_MODELS folder does not exist at start, so it is no source yet.
        ollama_store = os.path.join(server.tmp.name, "no-ollama-store")
        status, first = server.request("POST", "/api/generate", {
            "model": TINY, "prompt": "hi", "raw": True, "stream": False, "keep_alive": -1,
            "options": dict(GREEDY, num_predict=2)})
        self.assertEqual(status, 200, first)
        self.assertGreater(first.get("load_duration", 0), 0)
        self.assertIn(TINY, loaded(server))

        # The server's own store is listed afresh by every request: no signal needed.
        create_model("now", server.store)
        self.assertIn("now:latest", tag_names(server))

        create_model("later", ollama_store)
        self.assertNotIn("later:latest", tag_names(server))
        self.assertNotIn("later:latest", v1_ids(server))
        self.assertEqual(chat(server, "later")[0], 404)

        record = reload(server)
        self.assertEqual(record["changed"], [])
        self.assertNotIn("needs_restart", record)
        self.assertEqual(record["loaded"], 1)
        self.assertIn("later:latest", tag_names(server))
        self.assertIn("later:latest", v1_ids(server))
        self.assertIn("now:latest", tag_names(server))
        status, answer = chat(server, "later")
        self.assertEqual(status, 200, answer)
        self.assertTrue(answer["done"])
        self.assertEqual(answer["eval_count"], 3)

        # The model loaded before the signal is still loaded, and not loaded again.
        self.assertIn(TINY, loaded(server))
        status, again = server.request("POST", "/api/generate", {
            "model": TINY, "prompt": "hi", "raw": True, "stream": False,
            "options": dict(GREEDY, num_predict=2)})
        self.assertEqual(status, 200, again)
        self.assertEqual(again.get("load_duration", 0), 0)
        self.assertEqual(again["response"], first["response"])
        self.assertEqual(server.stop(), 0)

    def test_the_settings_file_is_read_again(self):
        tmp = tempfile.TemporaryDirectory(prefix="hostlm-sighup-")
        self.addCleanup(tmp.cleanup)
        store_a, store_b = os.path.join(tmp.name, "store-a"), os.path.join(tmp.name, "store-b")
        plugins = os.path.join(tmp.name, "plugins")
        os.makedirs(plugins)
        shutil.copy(GHOST_MANIFEST, plugins)
        config = os.path.join(tmp.name, "hostlm.env")

        def write_config(text):
            with open(config + ".new", "w") as f:
                f.write(text)
            os.replace(config + ".new", config)  # as an editor saves it

        write_config(f"# the service's settings\nHOSTLM_MODELS={store_a}\nHOSTLM_LOG_LEVEL=info\n"
                     "HOSTLM_KEEP_ALIVE=5m\n")
        create_model("alpha", store_a)
        create_model("beta", store_b)
        server = start(self, "--config", config, "--max-queue", "5", log_level=None)
        listening = wait_record(server, "listening")
        self.assertEqual(listening["store"], store_a)
        self.assertEqual(listening["config"], config)
        self.assertEqual(tag_names(server), ["alpha:latest"])
        wait_for(lambda: any(r.get("path") == "/api/tags" for r in records(server, "request")),
                 WAIT, "an info line: the level is info at start", server)

        key = "sig test key"
        write_config(f"HOSTLM_MODELS={store_b}\nHOSTLM_LOG_LEVEL=warn\nHOSTLM_KEEP_ALIVE=-1\n"
                     f'HOSTLM_API_KEY="{key}"\nHOSTLM_MAX_QUEUE=7\nHOSTLM_PLUGIN_PATH={plugins}\n'
                     "HOSTLM_HOST=127.0.0.1:1\nHOSTLM_NUM_PARALLEL=2\n")
        record = reload(server)
        self.assertEqual(sorted(record["changed"]), [
            "HOSTLM_API_KEY", "HOSTLM_KEEP_ALIVE", "HOSTLM_LOG_LEVEL", "HOSTLM_MODELS",
            "HOSTLM_PLUGIN_PATH"])
        self.assertEqual(record["overridden_by_flags"], ["HOSTLM_MAX_QUEUE (--max-queue)"])
        self.assertEqual(record["needs_restart"], ["HOSTLM_HOST", "HOSTLM_NUM_PARALLEL"])
        self.assertEqual(wait_record(server, "needs restart: these settings are read at start only")["keys"],
                         ["HOSTLM_HOST", "HOSTLM_NUM_PARALLEL"])
        self.assertEqual(record["store"], store_b)
        self.assertEqual(record["log_level"], "warn")
        self.assertEqual(record["keep_alive"], "-1")
        self.assertEqual(record["max_queue"], 5)
        self.assertTrue(record["api_key"])
        self.assertEqual(record["plugins"], listening["plugins"] + 1)
        self.assertGreaterEqual(record["plugin_problems"], 1)

        # The API key now applies (the port did not change: that needs a restart).
        self.assertEqual(server.request("GET", "/api/tags")[0], 401)
        self.assertEqual(server.request("GET", "/health")[0], 200)
        self.assertEqual(tag_names(server, auth(key)), ["beta:latest"])
        self.assertIn("beta:latest", v1_ids(server, auth(key)))
        status, answer = chat(server, "beta", auth(key))
        self.assertEqual(status, 200, answer)
        self.assertEqual(chat(server, "alpha", auth(key))[0], 404)
        # keep_alive -1 from the file: the model stays loaded for ever.
        self.assertTrue(loaded(server, auth(key))["beta:latest"]["expires_at"].startswith("2318"))

        # Level warn: a 200 leaves no line, a 401 does.
        self.assertEqual(server.request("GET", "/api/version", headers=auth(key))[0], 200)
        self.assertEqual(server.request("GET", "/api/version")[0], 401)
        after = lambda: [r for r in records(server, "request")  # noqa: E731
                         if r.get("path") == "/api/version"]
        wait_for(lambda: any(r["status"] == 401 for r in after()), WAIT, "the 401 line", server)
        self.assertEqual([r["status"] for r in after()], [401])

        # A broken file changes nothing, and says where it is broken.
        write_config(f"HOSTLM_MODELS={store_a}\nHOSTLM_KEEP_ALIVE=soon\n")
        failed = reload(server, "reload failed; settings unchanged")
        self.assertIn("HOSTLM_KEEP_ALIVE", failed["error"])
        self.assertIn(f"{config} line 2", failed["error"])
        write_config(f"HOSTLM_MODELS={store_a}\nthis is not a setting\n")
        failed = reload(server, "reload failed; settings unchanged")
        self.assertIn(f"{config}:2: expected KEY=VALUE", failed["error"])
        self.assertEqual(server.request("GET", "/api/tags")[0], 401)
        self.assertEqual(tag_names(server, auth(key)), ["beta:latest"])

        self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
