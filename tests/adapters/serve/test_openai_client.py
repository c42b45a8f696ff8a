"""The official `openai` Python client, unchanged, against `hostlm serve` with the tiny model.

As with the Ollama client test: the tiny model's words are noise, so the checks are shapes,
counts, determinism and what the server decides (templates, grammars, thinking switches).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import openai

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_fixture import HOSTLM, TINY, Server  # noqa: E402

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "enum": ["Paris", "Tokyo"]},
                           "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
NOISY = {"temperature": 1.5, "top_p": 1.0}


def reasoning_of(message_or_delta):
    return (message_or_delta.model_extra or {}).get("reasoning_content")


class OpenAIClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server()
        cls.client = openai.OpenAI(base_url=cls.server.url + "/v1", api_key="anything", timeout=300)

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        assert code == 0, f"hostlm serve exited with {code}"

    def chat(self, **kwargs):
        kwargs.setdefault("model", TINY)
        kwargs.setdefault("messages", [{"role": "user", "content": "Tell me about the sea."}])
        return self.client.chat.completions.create(**kwargs)

    def test_plain_chat(self):
        r = self.chat(max_tokens=12, seed=3, extra_body={"think": False, "top_k": 0}, **NOISY)
        self.assertEqual(r.object, "chat.completion")
        choice = r.choices[0]
        self.assertEqual(choice.message.role, "assistant")
        self.assertIsInstance(choice.message.content, str)
        self.assertEqual(choice.finish_reason, "length")
        self.assertEqual(r.usage.completion_tokens, 12)
        self.assertEqual(r.usage.total_tokens, r.usage.prompt_tokens + 12)
        self.assertTrue(r.id.startswith("chatcmpl-"))

    def test_streaming_chat_equals_not_streamed(self):
        args = dict(max_tokens=16, seed=8, extra_body={"think": False, "top_k": 0}, **NOISY)
        whole = self.chat(**args).choices[0].message.content
        chunks = list(self.chat(stream=True, stream_options={"include_usage": True}, **args))
        self.assertEqual(chunks[0].choices[0].delta.role, "assistant")
        self.assertEqual(len({c.id for c in chunks}), 1)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        self.assertEqual(text, whole)
        finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        self.assertEqual(finishes, ["length"])
        self.assertEqual(chunks[-1].choices, [])
        self.assertEqual(chunks[-1].usage.completion_tokens, 16)

    def test_reasoning_on_and_off(self):
        seen_reasoning = False
        for seed in range(1, 9):
            on = self.chat(max_tokens=16, seed=seed, extra_body={
                "chat_template_kwargs": {"enable_thinking": True}, "top_k": 0}, **NOISY)
            seen_reasoning = seen_reasoning or bool(reasoning_of(on.choices[0].message))
            off = self.chat(max_tokens=16, seed=seed, reasoning_effort="none", **NOISY)
            self.assertFalse(reasoning_of(off.choices[0].message), f"seed {seed}")
            off2 = self.chat(max_tokens=16, seed=seed,
                             extra_body={"chat_template_kwargs": {"enable_thinking": False}}, **NOISY)
            self.assertFalse(reasoning_of(off2.choices[0].message), f"seed {seed}")
        self.assertTrue(seen_reasoning)
        # Streamed, reasoning comes as its own delta field.
        chunks = list(self.chat(max_tokens=16, seed=2, stream=True, extra_body={"think": True, "top_k": 0},
                                **NOISY))
        streamed = "".join(reasoning_of(c.choices[0].delta) or "" for c in chunks if c.choices)
        whole = reasoning_of(self.chat(max_tokens=16, seed=2, extra_body={"think": True, "top_k": 0},
                                       **NOISY).choices[0].message) or ""
        self.assertEqual(streamed, whole)

    def test_tool_call_round_trip(self):
        messages = [{"role": "user", "content": "What's the weather in Tokyo?"}]
        r = self.chat(messages=messages, tools=[WEATHER_TOOL], tool_choice="required",
                      parallel_tool_calls=False, max_tokens=120, seed=1)
        choice = r.choices[0]
        self.assertEqual(choice.finish_reason, "tool_calls")
        self.assertEqual(len(choice.message.tool_calls), 1)
        call = choice.message.tool_calls[0]
        self.assertEqual(call.type, "function")
        self.assertEqual(call.function.name, "get_weather")
        args = json.loads(call.function.arguments)
        self.assertIn(args["city"], ["Paris", "Tokyo"])
        messages.append(choice.message.model_dump(exclude_none=True))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": "Sunny, 25 degrees"})
        follow = self.chat(messages=messages, tools=[WEATHER_TOOL], max_tokens=10, seed=2,
                           reasoning_effort="none", **NOISY)
        self.assertIn(follow.choices[0].finish_reason, ("stop", "length"))
        self.assertGreater(follow.usage.prompt_tokens, r.usage.prompt_tokens)

    def test_streamed_tool_call(self):
        chunks = list(self.chat(tools=[WEATHER_TOOL], stream=True, max_tokens=120, seed=4,
                                tool_choice={"type": "function", "function": {"name": "get_weather"}}))
        calls = {}
        for c in chunks:
            for d in (c.choices[0].delta.tool_calls or []) if c.choices else []:
                entry = calls.setdefault(d.index, {"name": "", "arguments": ""})
                entry["name"] += d.function.name or ""
                entry["arguments"] += d.function.arguments or ""
        self.assertEqual(len(calls), 1)
        self.assertEqual(calls[0]["name"], "get_weather")
        self.assertIn(json.loads(calls[0]["arguments"])["city"], ["Paris", "Tokyo"])
        self.assertEqual([c.choices[0].finish_reason for c in chunks if c.choices][-1], "tool_calls")

    def test_response_format_json_schema(self):
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
        r = self.chat(max_tokens=300, seed=5, response_format={
            "type": "json_schema", "json_schema": {"name": "verdict", "strict": True, "schema": schema}})
        self.assertEqual(r.choices[0].finish_reason, "stop", r.choices[0].message.content)
        self.assertIsInstance(json.loads(r.choices[0].message.content)["ok"], bool)

    def test_completions(self):
        r = self.client.completions.create(model=TINY, prompt="Once upon a time", max_tokens=10,
                                           seed=6, **NOISY)
        self.assertEqual(r.object, "text_completion")
        self.assertEqual(r.usage.completion_tokens, 10)
        self.assertTrue(r.choices[0].text)
        streamed = list(self.client.completions.create(model=TINY, prompt="Once upon a time",
                                                       max_tokens=10, seed=6, stream=True, **NOISY))
        self.assertEqual("".join(c.choices[0].text for c in streamed if c.choices), r.choices[0].text)
        echoed = self.client.completions.create(model=TINY, prompt="Once", max_tokens=3, echo=True)
        self.assertTrue(echoed.choices[0].text.startswith("Once"))
        with self.assertRaises(openai.BadRequestError) as e:
            self.client.completions.create(model=TINY, prompt="def f(", suffix="return x", max_tokens=3)
        self.assertIn("suffix", e.exception.message)

    def test_logprobs(self):
        r = self.chat(max_tokens=5, logprobs=True, top_logprobs=2, temperature=0,
                      extra_body={"think": False})
        content = r.choices[0].logprobs.content
        self.assertEqual(len(content), 5)
        for entry in content:
            self.assertLessEqual(entry.logprob, 0.0)
            self.assertEqual(len(entry.top_logprobs), 2)
            self.assertEqual(entry.token, entry.top_logprobs[0].token)  # greedy
            self.assertEqual(bytes(entry.bytes).decode("utf-8", "replace"), entry.token)
        legacy = self.client.completions.create(model=TINY, prompt="The", max_tokens=4, logprobs=2,
                                                temperature=0)
        lp = legacy.choices[0].logprobs
        self.assertEqual(len(lp.tokens), 4)
        self.assertEqual("".join(lp.tokens), legacy.choices[0].text)
        self.assertEqual(len(lp.top_logprobs[0]), 2)

    def test_models(self):
        self.chat(max_tokens=1)  # loads it: models named by path are listed once loaded
        ids = [m.id for m in self.client.models.list()]
        self.assertIn(TINY, ids)
        m = self.client.models.retrieve(TINY)
        self.assertEqual(m.id, TINY)
        with self.assertRaises(openai.NotFoundError) as e:
            self.client.models.retrieve("no-such-model")
        self.assertEqual(e.exception.body["code"], "model_not_found")

    def test_embeddings(self):
        r = self.client.embeddings.create(model=TINY, input=["first text", "second text"])
        self.assertEqual([d.index for d in r.data], [0, 1])
        self.assertEqual(len(r.data[0].embedding), 64)
        self.assertGreater(r.usage.prompt_tokens, 0)
        as_floats = self.client.embeddings.create(model=TINY, input="first text", encoding_format="float")
        for a, b in zip(as_floats.data[0].embedding, r.data[0].embedding):
            self.assertAlmostEqual(a, b, places=5)
        short = self.client.embeddings.create(model=TINY, input="first text", dimensions=16)
        self.assertEqual(len(short.data[0].embedding), 16)

    def test_errors(self):
        with self.assertRaises(openai.NotFoundError):
            self.chat(model="no-such-model", max_tokens=1)
        with self.assertRaises(openai.BadRequestError) as e:
            self.chat(messages=[], max_tokens=1)
        self.assertEqual(e.exception.body["type"], "invalid_request_error")
        with self.assertRaises(openai.BadRequestError):
            self.chat(max_tokens=1, n=2)
        with self.assertRaises(openai.BadRequestError):
            self.chat(max_tokens=1, messages=[{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}])


class LmStudioFolderTest(unittest.TestCase):
    """Models in LM Studio's folder (<publisher>/<repo>/<file>.gguf) are listed and served."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="hostlm-lmstudio-")
        repo = os.path.join(cls.tmp.name, "tiny-lab", "tiny-GGUF")
        os.makedirs(repo)
        gguf = os.path.join(repo, "tiny-f32.gguf")
        subprocess.run([HOSTLM, "convert", TINY, gguf, "--type", "f32"], check=True,
                       capture_output=True, timeout=300)
        shutil.copy(gguf, os.path.join(repo, "mmproj-tiny-f16.gguf"))  # a projector: skipped
        cls.server = Server(env={"HOSTLM_LMSTUDIO_MODELS": cls.tmp.name})
        cls.client = openai.OpenAI(base_url=cls.server.url + "/v1", api_key="x", timeout=300)

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        cls.tmp.cleanup()
        assert code == 0, f"hostlm serve exited with {code}"

    def test_listed_and_served(self):
        models = {m.id: m for m in self.client.models.list()}
        self.assertIn("tiny-lab/tiny-GGUF", models)
        self.assertEqual(models["tiny-lab/tiny-GGUF"].owned_by, "tiny-lab")
        self.assertFalse([i for i in models if "mmproj" in i])
        for name in ("tiny-lab/tiny-GGUF", "tiny-lab/tiny-GGUF/tiny-f32.gguf"):
            r = self.client.chat.completions.create(model=name, max_tokens=2,
                                                    messages=[{"role": "user", "content": "hi"}])
            self.assertEqual(r.usage.completion_tokens, 2)
        with self.assertRaises(openai.NotFoundError):
            self.client.chat.completions.create(model="tiny-lab/../tiny-lab/tiny-GGUF", max_tokens=1,
                                                messages=[{"role": "user", "content": "hi"}])


class OpenAIAuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server("--api-key", "sesame")

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        assert code == 0, f"hostlm serve exited with {code}"

    def test_wrong_key_is_refused_right_key_works(self):
        wrong = openai.OpenAI(base_url=self.server.url + "/v1", api_key="guess", timeout=120)
        with self.assertRaises(openai.AuthenticationError) as e:
            wrong.models.list()
        self.assertEqual(e.exception.status_code, 401)
        self.assertEqual(e.exception.body["type"], "authentication_error")
        right = openai.OpenAI(base_url=self.server.url + "/v1", api_key="sesame", timeout=120)
        r = right.chat.completions.create(model=TINY, messages=[{"role": "user", "content": "hi"}],
                                          max_tokens=2)
        self.assertEqual(r.usage.completion_tokens, 2)
        # The Ollama routes use the same key; the page at / needs none.
        self.assertEqual(self.server.request("GET", "/api/tags")[0], 401)
        self.assertEqual(self.server.request("GET", "/api/tags",
                                             headers={"Authorization": "Bearer sesame"})[0], 200)
        self.assertEqual(self.server.request("GET", "/")[0], 200)


if __name__ == "__main__":
    unittest.main(verbosity=2)
