"""`hostlm serve` at the HTTP level: error shapes and status codes, CORS, body limits, a full
queue answered 503, a client that disconnects cancelling its generation, and SIGTERM ending
running streams cleanly with exit status 0."""

import http.client
import json
import os
import signal
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_fixture import TINY, Server  # noqa: E402

LONG = {"temperature": 1.0, "seed": 1, "num_predict": 30000}  # far longer than any test waits


def open_stream(server, path, body):
    """Starts a streamed POST; returns (connection, response) with the headers read."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    return conn, resp


def metric(server, name):
    status, text = server.request("GET", "/metrics")
    assert status == 200, text
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics:\n{text}")


def wait_until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class ErrorShapesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(env={"HOSTLM_MAX_BODY_BYTES": "4096"})

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0

    def test_ollama_errors(self):
        s = self.server
        self.assertEqual(s.request("POST", "/api/chat", b""), (400, {"error": "missing request body"}))
        self.assertEqual(s.request("POST", "/api/chat", {"messages": []}), (400, {"error": "model is required"}))
        self.assertEqual(s.request("POST", "/api/chat", {"model": "ghost", "messages": [{"role": "user", "content": "x"}]}),
                         (404, {"error": "model 'ghost' not found"}))
        status, body = s.request("POST", "/api/generate", b"{not json")
        self.assertEqual(status, 400)
        self.assertIn("invalid JSON", body["error"])
        # Deep nesting is refused before anything walks it (a walk would recurse per level).
        status, body = s.request("POST", "/api/generate", b"[" * 1000 + b"]" * 1000)
        self.assertEqual(status, 400)
        self.assertIn("nested deeper than 512 levels", body["error"])
        deep_schema = {"type": "string"}
        for _ in range(300):
            deep_schema = {"items": deep_schema}
        status, body = s.request("POST", "/api/chat", {"model": TINY, "stream": False, "messages": [
            {"role": "user", "content": "x"}], "format": deep_schema})
        self.assertEqual(status, 400)
        self.assertIn("nested deeper than 256 levels", body["error"])
        status, body = s.request("POST", "/api/chat", {"model": TINY, "stream": False, "messages": [
            {"role": "user", "content": "x"}],
            "format": {"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}}})
        self.assertEqual(status, 400)
        self.assertIn("schema", body["error"])
        status, body = s.request("GET", "/api/nothing-here")
        self.assertEqual(status, 404)
        self.assertIn("error", body)
        self.assertEqual(s.request("GET", "/api/chat")[0], 405)

    def test_openai_errors(self):
        s = self.server
        status, body = s.request("POST", "/v1/chat/completions", {"model": "ghost", "messages": [
            {"role": "user", "content": "x"}]})
        self.assertEqual(status, 404)
        self.assertEqual(set(body["error"]), {"message", "type", "param", "code"})
        self.assertEqual(body["error"]["message"], "model 'ghost' not found")
        status, body = s.request("POST", "/v1/chat/completions", {"model": TINY, "messages": []})
        self.assertEqual(status, 400)
        self.assertEqual(body["error"]["type"], "invalid_request_error")
        status, body = s.request("POST", "/v1/completions", {"model": TINY, "prompt": "x", "suffix": "y"})
        self.assertEqual(status, 400)
        self.assertIn("suffix", body["error"]["message"])

    def test_fields_of_the_wrong_type_are_400s(self):
        # Routes that read a field with nlohmann's value() answered a type error as a 500.
        s = self.server
        for path, body in [("/api/show", {"model": TINY, "verbose": "yes"}),
                           ("/api/embed", {"model": TINY, "input": "x", "truncate": "no"}),
                           ("/api/embed", [TINY]),
                           ("/api/embeddings", {"model": TINY, "prompt": 7}),
                           ("/v1/embeddings", {"model": 5, "input": "x"}),
                           ("/v1/embeddings", {"model": TINY, "input": "x", "encoding_format": 1}),
                           # token ids past int32 wrapped into the vocabulary's range
                           ("/v1/embeddings", {"model": TINY, "input": [4294967297]})]:
            status, answer = s.request("POST", path, body)
            self.assertEqual(status, 400, (path, body, answer))

    def test_body_limit(self):
        big = {"model": TINY, "prompt": "x" * 10000}
        status, body = self.server.request("POST", "/api/generate", big)
        self.assertEqual(status, 413)
        self.assertIn("too large", body["error"])
        status, body = self.server.request("POST", "/v1/completions", big)
        self.assertEqual(status, 413)
        self.assertIn("too large", body["error"]["message"])
        # Chunked bodies are held to the same limit.
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60)
        conn.putrequest("POST", "/api/generate")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.putheader("Content-Type", "application/json")
        conn.endheaders()
        payload = json.dumps(big).encode()
        for i in range(0, len(payload), 1000):
            piece = payload[i:i + 1000]
            conn.send(b"%x\r\n%s\r\n" % (len(piece), piece))
        conn.send(b"0\r\n\r\n")
        self.assertEqual(conn.getresponse().status, 413)
        conn.close()
        # The server still answers normally afterwards.
        self.assertEqual(self.server.request("GET", "/api/version")[0], 200)

    def test_cors(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60)
        conn.request("OPTIONS", "/v1/chat/completions", headers={
            "Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, authorization"})
        r = conn.getresponse()
        r.read()
        self.assertEqual(r.status, 204)
        self.assertEqual(r.getheader("Access-Control-Allow-Origin"), "http://localhost:3000")
        self.assertIn("POST", r.getheader("Access-Control-Allow-Methods"))
        conn.request("GET", "/api/tags", headers={"Origin": "http://127.0.0.1:8080"})
        r = conn.getresponse()
        r.read()
        self.assertEqual(r.getheader("Access-Control-Allow-Origin"), "http://127.0.0.1:8080")
        conn.request("GET", "/api/tags", headers={"Origin": "https://evil.example"})
        r = conn.getresponse()
        r.read()
        self.assertEqual(r.status, 403)
        conn.close()

    def test_request_log_lines(self):
        self.server.request("GET", "/api/tags")
        time.sleep(0.2)
        lines = [r for r in self.server.log_records() if r.get("msg") == "request" and r.get("path") == "/api/tags"]
        self.assertTrue(lines)
        self.assertEqual(lines[-1]["method"], "GET")
        self.assertEqual(lines[-1]["status"], 200)
        self.assertIn("ms", lines[-1])


class StreamControlTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server("--parallel", "1", "--max-queue", "1", "--ctx", "32768")

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0

    def test_disconnect_cancels_the_generation(self):
        body = json.dumps({"model": TINY, "prompt": "Go on and on", "raw": True, "options": LONG}).encode()
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=120)
        sock.sendall(b"POST /api/generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        received = b""
        while received.count(b'"done":false') < 3:
            chunk = sock.recv(4096)
            self.assertTrue(chunk, "the stream ended early")
            received += chunk
        self.assertTrue(received.startswith(b"HTTP/1.1 200"))
        self.assertEqual(metric(self.server, "hostlm_requests_running"), 1)
        sock.close()
        wait_until(lambda: metric(self.server, "hostlm_requests_running") == 0, 30,
                   "the engine to drop the request")
        wait_until(lambda: any(r.get("path") == "/api/generate" and r.get("done_reason") == "cancelled"
                               for r in self.server.log_records()), 30, "the request's log line")
        line = [r for r in self.server.log_records()
                if r.get("path") == "/api/generate" and r.get("done_reason") == "cancelled"][-1]
        self.assertLess(line["tokens"], LONG["num_predict"])
        self.assertEqual(line["model"], TINY)
        # The loaded models' engine counters reach /metrics, the step timings among them.
        self.assertGreaterEqual(metric(self.server, "hostlm_steps_total"), 3)
        self.assertGreater(metric(self.server, "hostlm_step_model_seconds_total"), 0)
        self.assertGreater(metric(self.server, "hostlm_step_host_seconds_total"), 0)

    def test_disconnect_cancels_a_non_streamed_generation(self):
        # Nothing is written until the answer is whole, so only the socket can tell.
        for path, body in (("/api/generate", {"model": TINY, "prompt": "Go on and on", "raw": True,
                                              "stream": False, "options": LONG}),
                           ("/v1/completions", {"model": TINY, "prompt": "Go on and on",
                                                "max_tokens": LONG["num_predict"]})):
            data = json.dumps(body).encode()
            sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=120)
            sock.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (path.encode(), len(data), data))
            wait_until(lambda: metric(self.server, "hostlm_requests_running") == 1, 30,
                       "the generation to start")
            sock.close()
            wait_until(lambda: metric(self.server, "hostlm_requests_running") == 0, 30,
                       "the engine to drop the request")
            wait_until(lambda: any(r.get("path") == path and r.get("done_reason") == "cancelled"
                                   for r in self.server.log_records()), 30, "the request's log line")
            line = [r for r in self.server.log_records()
                    if r.get("path") == path and r.get("done_reason") == "cancelled"][-1]
            self.assertLess(line["tokens"], LONG["num_predict"], path)

    def test_full_queue_answers_503(self):
        body = {"model": TINY, "prompt": "Go on", "raw": True, "options": LONG}
        running_conn, running = open_stream(self.server, "/api/generate", body)
        json.loads(running.readline())  # it runs: the one sequence is taken
        waiting = {}

        def wait_in_queue():
            waiting["result"] = self.server.request("POST", "/api/generate", dict(body, stream=False,
                                                                                 options=dict(LONG, num_predict=2)))

        queued = threading.Thread(target=wait_in_queue)
        queued.start()
        wait_until(lambda: metric(self.server, "hostlm_requests_queued") == 1, 30, "a queued request")
        status, error = self.server.request("POST", "/api/generate", dict(body, stream=False))
        self.assertEqual(status, 503)
        self.assertIn("busy", error["error"])
        status, error = self.server.request("POST", "/v1/completions", {"model": TINY, "prompt": "x"})
        self.assertEqual(status, 503)
        self.assertEqual(error["error"]["type"], "unavailable_error")
        running_conn.close()  # frees the sequence: the queued request runs
        queued.join(timeout=120)
        self.assertEqual(waiting["result"][0], 200)
        self.assertEqual(waiting["result"][1]["eval_count"], 2)


class ShutdownTest(unittest.TestCase):
    def test_sigterm_ends_streams_cleanly_and_exits_0(self):
        server = Server("--ctx", "32768", env={"HOSTLM_SHUTDOWN_GRACE": "1"})
        streams = []
        for path, body in (
                ("/api/generate", {"model": TINY, "prompt": "hi", "raw": True, "options": LONG}),
                ("/v1/chat/completions", {"model": TINY, "messages": [{"role": "user", "content": "hi"}],
                                          "stream": True, "max_tokens": LONG["num_predict"]})):
            conn, resp = open_stream(server, path, body)
            first = resp.readline().decode()
            streams.append((path, conn, resp, first))
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        for path, conn, resp, first in streams:
            rest = resp.read().decode()  # the chunked body must end properly, not break off
            lines = [line for line in (first + rest).splitlines() if line.strip()]
            self.assertGreater(len(lines), 1)
            if path == "/api/generate":
                self.assertEqual(json.loads(lines[-1]), {"error": "the server is shutting down"})
            else:
                last = json.loads(lines[-1][len("data: "):])
                self.assertEqual(last["error"]["type"], "unavailable_error")
            conn.close()
        code = server.proc.wait(timeout=60)
        self.assertEqual(code, 0, server.log_text())
        self.assertLess(time.monotonic() - started, 30)
        server.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
