"""The official `ollama` Python client, unchanged, against `hostlm serve` with the tiny model.

The tiny model has random weights: what it says is noise, so the checks are about shapes,
counts, determinism (same seed, same text, streamed or not), and what the server itself
decides (templates, grammars, stop strings, model defaults). Tool calls come from the
grammar that hostlm's tool_choice extension applies, since a random model never calls a
tool on its own.
"""

import http.server
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import ollama

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_fixture import HOSTLM, TINY, Server  # noqa: E402

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "enum": ["Paris", "Tokyo"]}},
            "required": ["city"],
        },
    },
}
FORCE_WEATHER = {"type": "function", "function": {"name": "get_weather"}}
NOISY = {"temperature": 1.5, "top_k": 0, "top_p": 1.0}  # random weights: explore


class OllamaClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server()
        cls.client = ollama.Client(host=cls.server.url, timeout=300)

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        assert code == 0, f"hostlm serve exited with {code}"

    def render(self, **chat):
        """The prompt the server builds for a chat request (Ollama's _debug_render_only)."""
        status, body = self.server.request(
            "POST", "/api/chat", dict(chat, model=TINY, stream=False, _debug_render_only=True))
        self.assertEqual(status, 200, body)
        return body["debug_info"]["rendered_template"]

    def test_version_and_root(self):
        status, body = self.server.request("GET", "/api/version")
        self.assertEqual(status, 200)
        self.assertRegex(body["version"], r"^\d+\.\d+\.\d+$")
        self.assertEqual(self.server.request("GET", "/"), (200, "Ollama is running"))
        self.assertEqual(self.server.request("HEAD", "/")[0], 200)

    def test_generate_streamed_equals_not_streamed(self):
        options = dict(NOISY, seed=11, num_predict=24)
        whole = self.client.generate(model=TINY, prompt="Tell me a story", raw=True, options=options)
        self.assertTrue(whole.done)
        self.assertEqual(whole.done_reason, "length")
        self.assertEqual(whole.eval_count, 24)
        self.assertGreater(whole.prompt_eval_count, 0)
        self.assertGreater(whole.total_duration, 0)
        self.assertGreater(whole.eval_duration, 0)
        self.assertTrue(whole.response)
        parts = list(self.client.generate(model=TINY, prompt="Tell me a story", raw=True,
                                          options=options, stream=True))
        self.assertTrue(parts[-1].done)
        self.assertTrue(all(not p.done for p in parts[:-1]))
        self.assertGreater(len(parts), 1)
        self.assertEqual("".join(p.response for p in parts), whole.response)
        self.assertEqual(parts[-1].eval_count, 24)

    def test_generate_templated_returns_context(self):
        r = self.client.generate(model=TINY, prompt="Hello", system="Be brief.", think=False,
                                 options=dict(NOISY, seed=2, num_predict=8))
        self.assertTrue(r.done)
        self.assertGreater(len(r.context), r.prompt_eval_count - 1)
        # The context continues a conversation: sent back, it comes first in the next prompt.
        again = self.client.generate(model=TINY, prompt="More", context=r.context,
                                     options=dict(NOISY, seed=2, num_predict=4))
        self.assertGreater(again.prompt_eval_count, len(r.context))

    def test_chat_streamed_equals_not_streamed(self):
        messages = [{"role": "system", "content": "You are a poet."},
                    {"role": "user", "content": "Write about the sea."}]
        options = dict(NOISY, seed=5, num_predict=20)
        whole = self.client.chat(model=TINY, messages=messages, options=options, think=False)
        self.assertEqual(whole.message.role, "assistant")
        self.assertEqual(whole.eval_count, 20)
        parts = list(self.client.chat(model=TINY, messages=messages, options=options,
                                      think=False, stream=True))
        self.assertTrue(parts[-1].done)
        self.assertEqual(parts[-1].done_reason, "length")
        self.assertEqual("".join(p.message.content or "" for p in parts), whole.message.content)

    def test_parallel_requests_share_the_model(self):
        """Qwen3.5 requests run side by side (Ollama runs this family one at a time)."""
        results, peak = [], [0]
        done = threading.Event()

        def watch():
            while not done.is_set():
                status, text = self.server.request("GET", "/metrics")
                for line in text.splitlines():
                    if line.startswith("hostlm_requests_running "):
                        peak[0] = max(peak[0], float(line.split()[1]))
                time.sleep(0.02)

        def one(seed):
            results.append(self.client.generate(model=TINY, prompt="Count", raw=True,
                                                options={"temperature": 1.0, "seed": seed, "num_predict": 1500}))

        watcher = threading.Thread(target=watch)
        watcher.start()
        workers = [threading.Thread(target=one, args=(s,)) for s in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(timeout=300)
        done.set()
        watcher.join()
        self.assertEqual(sorted(r.eval_count for r in results), [1500] * 4)
        self.assertGreaterEqual(peak[0], 2)

    def test_think_on_and_off(self):
        messages = [{"role": "user", "content": "Why is the sky blue?"}]
        # The prompt is the model's own template: an open <think> or an empty one.
        self.assertTrue(self.render(messages=messages, think=True).endswith("<|im_start|>assistant\n<think>\n"))
        self.assertTrue(self.render(messages=messages, think=False).endswith(
            "<|im_start|>assistant\n<think>\n\n</think>\n\n"))
        thoughts = []
        for seed in range(1, 9):
            on = self.client.chat(model=TINY, messages=messages, think=True,
                                  options=dict(NOISY, seed=seed, num_predict=16))
            thoughts.append(on.message.thinking or "")
            off = self.client.chat(model=TINY, messages=messages, think=False,
                                   options=dict(NOISY, seed=seed, num_predict=16))
            self.assertFalse(off.message.thinking, f"seed {seed}: thinking while think=False")
        # Whatever a random model writes after an open <think> is reasoning.
        self.assertTrue(any(thoughts), thoughts)

    def test_tool_call_round_trip(self):
        messages = [{"role": "user", "content": "What is the weather in Paris?"}]
        first = self.client.chat(model=TINY, messages=messages, tools=[WEATHER_TOOL],
                                 options={"tool_choice": FORCE_WEATHER, "seed": 1, "num_predict": 80})
        self.assertEqual(first.done_reason, "stop")
        calls = first.message.tool_calls
        self.assertEqual(len(calls), 1, first.message)
        self.assertEqual(calls[0].function.name, "get_weather")
        self.assertIn(calls[0].function.arguments["city"], ["Paris", "Tokyo"])
        messages.append(first.message.model_dump(exclude_none=True))
        messages.append({"role": "tool", "tool_name": "get_weather", "content": "22 degrees and sunny"})
        prompt = self.render(messages=messages, tools=[WEATHER_TOOL], think=False)
        city = calls[0].function.arguments["city"]
        self.assertIn(f"<tool_call>\n<function=get_weather>\n<parameter=city>\n{city}\n</parameter>", prompt)
        self.assertIn("<tool_response>\n22 degrees and sunny\n</tool_response>", prompt)
        second = self.client.chat(model=TINY, messages=messages, tools=[WEATHER_TOOL], think=False,
                                  options=dict(NOISY, seed=4, num_predict=12))
        self.assertTrue(second.done)
        self.assertGreater(second.prompt_eval_count, first.prompt_eval_count)

    def test_streamed_tool_call_arrives_whole(self):
        parts = list(self.client.chat(
            model=TINY, messages=[{"role": "user", "content": "Weather in Tokyo?"}],
            tools=[WEATHER_TOOL], stream=True,
            options={"tool_choice": FORCE_WEATHER, "seed": 3, "num_predict": 80}))
        calls = [c for p in parts for c in (p.message.tool_calls or [])]
        self.assertEqual(len(calls), 1)
        self.assertEqual(calls[0].function.name, "get_weather")
        self.assertTrue(parts[-1].done)

    def test_format_schema(self):
        schema = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
                  "required": ["answer"]}
        r = self.client.chat(model=TINY, messages=[{"role": "user", "content": "Yes or no?"}],
                             format=schema, options={"seed": 9, "num_predict": 400})
        self.assertEqual(r.done_reason, "stop", r.message.content)
        self.assertIn(json.loads(r.message.content)["answer"], ["yes", "no"])

    def test_stop_string_spanning_tokens(self):
        options = dict(NOISY, seed=21, num_predict=40)
        free = self.client.generate(model=TINY, prompt="Once upon", raw=True, options=options).response
        self.assertGreater(len(free), 12)
        stop = free[len(free) // 2:len(free) // 2 + 5]
        cut = self.client.generate(model=TINY, prompt="Once upon", raw=True,
                                   options=dict(options, stop=[stop]))
        self.assertEqual(cut.done_reason, "stop")
        self.assertEqual(cut.response, free[:free.index(stop)])
        streamed = "".join(p.response for p in self.client.generate(
            model=TINY, prompt="Once upon", raw=True, options=dict(options, stop=[stop]), stream=True))
        self.assertEqual(streamed, cut.response)

    def test_logprobs(self):
        r = self.client.generate(model=TINY, prompt="The", raw=True, logprobs=True, top_logprobs=3,
                                 options={"temperature": 0, "num_predict": 6})
        self.assertEqual(len(r.logprobs), 6)
        for entry in r.logprobs:
            self.assertLessEqual(entry.logprob, 0.0)
            self.assertEqual(len(entry.top_logprobs), 3)
            alts = [a.logprob for a in entry.top_logprobs]
            self.assertEqual(alts, sorted(alts, reverse=True))
            # Greedy: the token drawn is the most likely one.
            self.assertEqual(entry.token, entry.top_logprobs[0].token)
            self.assertAlmostEqual(entry.logprob, alts[0], places=5)
        self.assertEqual("".join(e.token for e in r.logprobs), r.response)
        streamed = [e for p in self.client.generate(model=TINY, prompt="The", raw=True, logprobs=True,
                                                    options={"temperature": 0, "num_predict": 6}, stream=True)
                    for e in (p.logprobs or [])]
        self.assertEqual([e.token for e in streamed], [e.token for e in r.logprobs])

    def test_unknown_options_are_ignored_and_bad_ones_refused(self):
        r = self.client.generate(model=TINY, prompt="x", raw=True,
                                 options={"num_predict": 2, "mirostat": 1, "tfs_z": 1.0,
                                          "numa": False, "penalize_newline": True, "not_an_option": 3})
        self.assertTrue(r.done)
        with self.assertRaises(ollama.ResponseError) as e:
            self.client.generate(model=TINY, prompt="x", options={"temperature": "warm"})
        self.assertEqual(e.exception.status_code, 400)

    def test_images_are_refused_clearly(self):
        with self.assertRaises(ollama.ResponseError) as e:
            self.client.chat(model=TINY, messages=[{"role": "user", "content": "what is this?",
                                                    "images": [b"\x89PNG fake"]}])
        self.assertEqual(e.exception.status_code, 400)
        self.assertIn("vision", e.exception.error)

    def test_unknown_model(self):
        with self.assertRaises(ollama.ResponseError) as e:
            self.client.chat(model="no-such-model", messages=[{"role": "user", "content": "x"}])
        self.assertEqual(e.exception.status_code, 404)
        self.assertEqual(e.exception.error, "model 'no-such-model' not found")

    def test_embed(self):
        r = self.client.embed(model=TINY, input=["the sea", "the sky"])
        self.assertEqual(len(r.embeddings), 2)
        self.assertEqual(len(r.embeddings[0]), 64)  # the tiny model's hidden size
        for v in r.embeddings:
            self.assertAlmostEqual(math.sqrt(sum(x * x for x in v)), 1.0, places=4)
        self.assertNotEqual(r.embeddings[0], r.embeddings[1])
        self.assertGreater(r.prompt_eval_count, 0)
        again = self.client.embed(model=TINY, input="the sea")
        self.assertEqual(again.embeddings[0], r.embeddings[0])  # same text, same vector
        short = self.client.embed(model=TINY, input="the sea", dimensions=8)
        self.assertEqual(len(short.embeddings[0]), 8)
        legacy = self.client.embeddings(model=TINY, prompt="the sea")
        self.assertEqual(len(legacy.embedding), 64)

    def test_ps_keep_alive_and_stop(self):
        r = self.client.generate(model=TINY, prompt="", keep_alive="10m")
        self.assertEqual(r.done_reason, "load")
        loaded = [m for m in self.client.ps().models if m.model == TINY]
        self.assertEqual(len(loaded), 1)
        self.assertEqual(loaded[0].context_length, 4096)
        self.assertGreater(loaded[0].size, 0)
        env = dict(os.environ, HOSTLM_HOST=self.server.url)
        listing = subprocess.run([HOSTLM, "ps"], capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(listing.returncode, 0, listing.stderr)
        self.assertIn(TINY, listing.stdout)
        self.assertIn("100% CPU", listing.stdout)
        stop = subprocess.run([HOSTLM, "stop", TINY], capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(stop.returncode, 0, stop.stderr)
        self.assertEqual([m for m in self.client.ps().models if m.model == TINY], [])
        again = subprocess.run([HOSTLM, "stop", TINY], capture_output=True, text=True, env=env, timeout=60)
        self.assertNotEqual(again.returncode, 0)
        # keep_alive 0: unloaded as soon as the request is answered.
        self.client.generate(model=TINY, prompt="x", raw=True, keep_alive=0, options={"num_predict": 1})
        self.assertEqual([m for m in self.client.ps().models if m.model == TINY], [])
        # A short keep_alive: unloaded by the timer once idle that long.
        self.client.generate(model=TINY, prompt="x", raw=True, keep_alive="1s", options={"num_predict": 1})
        self.assertEqual(len([m for m in self.client.ps().models if m.model == TINY]), 1)
        deadline = time.monotonic() + 30
        while [m for m in self.client.ps().models if m.model == TINY] and time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertEqual([m for m in self.client.ps().models if m.model == TINY], [])


class OllamaStoreTest(unittest.TestCase):
    """create (blobs + /api/create as `ollama create` sends it), list, show, copy, delete."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server("--max-loaded", "1")
        cls.client = ollama.Client(host=cls.server.url, timeout=300)
        cls.tmp = tempfile.TemporaryDirectory(prefix="hostlm-store-gguf-")
        cls.gguf = os.path.join(cls.tmp.name, "tiny.gguf")
        subprocess.run([HOSTLM, "convert", TINY, cls.gguf, "--type", "f32"], check=True,
                       capture_output=True, timeout=300)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()
        code = cls.server.stop()
        assert code == 0, f"hostlm serve exited with {code}"

    def test_create_list_show_chat_copy_delete(self):
        digest = self.client.create_blob(self.gguf)
        status, _ = self.server.request("HEAD", "/api/blobs/" + digest)
        self.assertEqual(status, 200)
        self.assertEqual(self.server.request("HEAD", "/api/blobs/sha256:" + "0" * 64)[0], 404)
        progress = list(self.client.create(
            model="tiny-test", files={"tiny.gguf": digest}, system="You are terse.",
            parameters={"num_predict": 6, "temperature": 1.5, "stop": ["<|im_end|>"], "think": False},
            stream=True))
        self.assertEqual(progress[-1].status, "success")
        names = [m.model for m in self.client.list().models]
        self.assertIn("tiny-test:latest", names)
        shown = self.client.show("tiny-test")
        self.assertEqual(shown.details.format, "gguf")
        self.assertIn("num_predict", shown.parameters)
        self.assertIn("FROM ", shown.modelfile)
        self.assertIn("completion", shown.capabilities)
        self.assertEqual(shown.modelinfo["general.architecture"], "qwen35")
        # The Modelfile's defaults apply: its SYSTEM is in the prompt, num_predict caps.
        status, body = self.server.request("POST", "/api/chat", {
            "model": "tiny-test", "messages": [{"role": "user", "content": "hi"}],
            "_debug_render_only": True, "stream": False})
        rendered = body["debug_info"]["rendered_template"]
        self.assertIn("<|im_start|>system\nYou are terse.<|im_end|>", rendered)
        # PARAMETER think false (hostlm's extension): no thinking unless a request asks.
        self.assertTrue(rendered.endswith("<think>\n\n</think>\n\n"), rendered)
        status, body = self.server.request("POST", "/api/chat", {
            "model": "tiny-test", "messages": [{"role": "user", "content": "hi"}], "think": True,
            "_debug_render_only": True, "stream": False})
        self.assertTrue(body["debug_info"]["rendered_template"].endswith("<think>\n"))
        r = self.client.chat(model="tiny-test", messages=[{"role": "user", "content": "hi"}],
                             options={"seed": 1})
        self.assertLessEqual(r.eval_count, 6)
        self.assertEqual(self.client.copy("tiny-test", "tiny-copy").status, "success")
        self.assertIn("tiny-copy:latest", [m.model for m in self.client.list().models])
        self.assertEqual(self.client.delete("tiny-copy").status, "success")
        self.assertNotIn("tiny-copy:latest", [m.model for m in self.client.list().models])
        with self.assertRaises(ollama.ResponseError) as e:
            self.client.delete("tiny-copy")
        self.assertEqual(e.exception.status_code, 404)
        self.assertIn("tiny-test:latest", [m.model for m in self.client.list().models])

    def test_bad_blob_and_bad_create(self):
        status, body = self.server.request("POST", "/api/blobs/sha256:" + "1" * 64, b"not those bytes")
        self.assertEqual(status, 400)
        self.assertIn("digest mismatch", body["error"])
        status, body = self.server.request("POST", "/api/blobs/md5:abc", b"x")
        self.assertEqual(status, 400)
        with self.assertRaises(ollama.ResponseError):
            list(self.client.create(model="broken", files={"x.gguf": "sha256:" + "2" * 64}, stream=True))

    def test_max_loaded_evicts_the_idle_model(self):
        digest = self.client.create_blob(self.gguf)
        self.client.create(model="tiny-other", files={"tiny.gguf": digest})
        self.client.generate(model=TINY, prompt="", keep_alive="10m")
        self.assertEqual([m.model for m in self.client.ps().models], [TINY])
        # Only one model may be loaded (--max-loaded 1): the idle one makes room.
        self.client.generate(model="tiny-other", prompt="x", options={"num_predict": 1})
        self.assertEqual([m.model for m in self.client.ps().models], ["tiny-other:latest"])

    def test_pull_from_a_registry(self):
        """A registry serving this store's own files (OCI distribution paths): pulling
        `127.0.0.1:PORT/library/tiny-pulled` through the server lands it in the store."""
        digest = self.client.create_blob(self.gguf)
        list(self.client.create(model="tiny-pulled", files={"tiny.gguf": digest}, stream=True))
        store = self.server.store
        with open(os.path.join(store, "manifests", "registry.ollama.ai", "library", "tiny-pulled",
                               "latest"), "rb") as f:
            manifest = f.read()

        class Registry(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                parts = self.path.split("/")  # /v2/library/tiny-pulled/{manifests|blobs}/{ref}
                if parts[1:4] != ["v2", "library", "tiny-pulled"]:
                    self.send_error(404)
                    return
                if len(parts) == 6 and parts[4] == "manifests" and parts[5] == "latest":
                    body, kind = manifest, "application/vnd.docker.distribution.manifest.v2+json"
                elif len(parts) == 6 and parts[4] == "blobs":
                    path = os.path.join(store, "blobs", parts[5].replace(":", "-"))
                    if not os.path.exists(path):
                        self.send_error(404)
                        return
                    with open(path, "rb") as f:
                        body, kind = f.read(), "application/octet-stream"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        registry = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Registry)
        threading.Thread(target=registry.serve_forever, daemon=True).start()
        try:
            name = f"http://127.0.0.1:{registry.server_address[1]}/library/tiny-pulled:latest"
            progress = list(self.client.pull(name, insecure=True, stream=True))
            self.assertEqual(progress[-1].status, "success")
            pulled = [m.model for m in self.client.list().models if "127.0.0.1" in m.model]
            self.assertEqual(len(pulled), 1, pulled)
            r = self.client.generate(model=pulled[0], prompt="x", raw=True, options={"num_predict": 2})
            self.assertEqual(r.eval_count, 2)
            with self.assertRaises(ollama.ResponseError):
                self.client.pull(f"http://127.0.0.1:{registry.server_address[1]}/library/absent:latest")
        finally:
            registry.shutdown()


if __name__ == "__main__":
    unittest.main(verbosity=2)
