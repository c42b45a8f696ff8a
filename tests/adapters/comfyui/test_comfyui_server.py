"""The ComfyUI node package against a running `hostlm serve` (Ollama's /api/chat).

The same API-format workflow as the in-process test, with the Load model node's server_url
set. Exits with 77 (ctest: skipped) when this build has no `hostlm serve`.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import comfy_emulation as comfy  # noqa: E402
import store_fixture  # noqa: E402

SOURCE = os.environ.get("HOSTLM_SOURCE_DIR") or os.path.dirname(os.path.dirname(
    os.path.dirname(HERE)))
PACKAGE = os.path.join(SOURCE, "adapters", "comfyui")
TINY = os.path.join(SOURCE, "tests", "data", "models", "tiny-tied-f32")
BUILD = store_fixture.build_dir()
HOSTLM = os.path.join(BUILD, "bin", "hostlm")
os.environ.setdefault("HOSTLM_LIBRARY", os.path.join(BUILD, "lib", "libhostlm.so"))
SKIPPED = 77


def server_missing_reason():
    try:
        run = subprocess.run([HOSTLM, "serve", "--help"], capture_output=True, text=True,
                             timeout=60)
    except OSError as e:
        return f"{HOSTLM} cannot run: {e}"
    # Without the subcommand CLI11 answers with the top-level help (exit 0 too).
    if run.returncode != 0 or "hostlm serve" not in run.stdout:
        return f"this build has no `hostlm serve` ({HOSTLM} serve --help shows no usage of it)"
    return None


def listening_address(log):
    """The address `hostlm serve --log-format json` says it listens on, or None yet."""
    log.seek(0)
    for line in log.read().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line not from the logger
        if record.get("msg") == "listening":
            return record.get("address")
    return None


class ServerWorkflowTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="hostlm-comfy-server-")
        cls.store = store_fixture.make_store(os.path.join(cls.tmp, "store"), TINY, BUILD)
        os.environ["HOSTLM_MODELS"] = cls.store.root
        os.environ["OLLAMA_MODELS"] = os.path.join(cls.tmp, "no-ollama-store")
        # Port 0 and the address the server logs: a port picked here and bound later could be
        # taken in between by a test running beside this one.
        env = dict(os.environ)
        env.pop("HOSTLM_HOST", None)
        cls.log = open(os.path.join(cls.tmp, "serve.log"), "w+")
        cls.server = subprocess.Popen(
            [HOSTLM, "serve", "--host", "127.0.0.1:0", "--log-format", "json"], env=env,
            stdout=cls.log, stderr=subprocess.STDOUT)
        cls.url = None
        deadline = time.monotonic() + 60
        while True:
            cls.url = cls.url or listening_address(cls.log)
            try:
                if cls.url:
                    with urllib.request.urlopen(cls.url + "/", timeout=2) as r:
                        if r.status == 200:
                            break
            except OSError:
                pass
            if cls.server.poll() is not None or time.monotonic() > deadline:
                cls.log.seek(0)
                output = cls.log.read()
                cls.tearDownClass()
                raise RuntimeError(f"hostlm serve did not come up (address {cls.url}):\n{output}")
            time.sleep(0.2)
        cls.package = comfy.load_custom_node(PACKAGE)
        cls.nodes = cls.package.NODE_CLASS_MAPPINGS

    @classmethod
    def tearDownClass(cls):
        if cls.server.poll() is None:
            cls.server.terminate()
            try:
                cls.server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                cls.server.kill()
                cls.server.wait()
        cls.log.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def workflow(self, **generate_inputs):
        with open(os.path.join(HERE, "workflow_generate.json"), encoding="utf-8") as f:
            prompt = json.load(f)
        prompt["1"]["inputs"].update({"model": "tiny:latest", "path": "",
                                      "server_url": self.url})
        prompt["2"]["inputs"].update(generate_inputs)
        return prompt

    def test_workflow_runs_on_the_server(self):
        executor = comfy.Executor(self.nodes)
        out = executor.run(self.workflow())
        model = out["1"][0][0]
        self.assertTrue(model.remote)
        text, reasoning = out["2"][0]
        self.assertTrue(text)
        self.assertEqual(reasoning, "")
        executor.run(self.workflow())
        self.assertEqual(executor.executed, [])

    def test_thinking_streams_apart_from_the_text(self):
        model = self.nodes["HostLMLoadModel"]().load("tiny:latest", "", "cpu", -1, 1024,
                                                     server_url=self.url)[0]
        text, reasoning = self.nodes["HostLMGenerate"]().generate(
            model, "Hello there", True, 12, 0.0, 1.0, 0, 0)["result"]
        self.assertTrue(reasoning)
        self.assertNotIn("<think>", text + reasoning)

    def test_same_greedy_answer_as_in_process(self):
        args = ("Hello there", False, 12, 0.0, 1.0, 0, 0)
        remote = self.nodes["HostLMLoadModel"]().load("tiny:latest", "", "cpu", -1, 1024,
                                                      server_url=self.url)[0]
        local = self.nodes["HostLMLoadModel"]().load("tiny:latest", "", "cpu", -1, 1024)[0]
        generate = self.nodes["HostLMGenerate"]()
        self.assertEqual(generate.generate(remote, *args)["result"],
                         generate.generate(local, *args)["result"])

    def test_chat_history_goes_through_the_server(self):
        model = self.nodes["HostLMLoadModel"]().load("tiny:latest", "", "cpu", -1, 1024,
                                                     server_url=self.url)[0]
        node = self.nodes["HostLMChat"]()
        args = dict(model=model, new_conversation=False, thinking=False, max_tokens=6,
                    temperature=0.0, top_p=1.0, top_k=0, seed=0)
        node.chat(prompt="Hello", **args)
        _, _, history = node.chat(prompt="And?", **args)["result"]
        self.assertEqual([m["role"] for m in json.loads(history)],
                         ["user", "assistant", "user", "assistant"])

    def test_unknown_model_is_a_readable_error(self):
        with self.assertRaisesRegex(RuntimeError, r"model 'no-such' not found on the hostlm "
                                    r"server at http://127\.0\.0\.1:\d+ \(its models: .*tiny"):
            self.nodes["HostLMLoadModel"]().load("(use the path field)", "no-such", "cpu", -1,
                                                 1024, server_url=self.url)

    def loaded_on_server(self):
        with urllib.request.urlopen(self.url + "/api/ps", timeout=10) as r:
            return [m["name"] for m in json.load(r)["models"]]

    def test_release_asks_the_server_to_unload(self):
        model = self.nodes["HostLMLoadModel"]().load("tiny:latest", "", "cpu", -1, 512,
                                                     server_url=self.url)[0]
        self.nodes["HostLMGenerate"]().generate(model, "Hi", False, 2, 0.0, 1.0, 0, 0)
        self.assertIn("tiny:latest", self.loaded_on_server())
        model.release()  # what ComfyUI freeing models does to a server model
        self.assertFalse(model.loaded)
        self.assertNotIn("tiny:latest", self.loaded_on_server())
        out = self.nodes["HostLMGenerate"]().generate(model, "Hi", False, 4, 0.0, 1.0, 0, 0)
        self.assertIsInstance(out["result"][0], str)


if __name__ == "__main__":
    reason = server_missing_reason()
    if reason:
        print(f"SKIPPED: {reason}; the server path of the ComfyUI package is not tested here")
        sys.exit(SKIPPED)
    unittest.main(verbosity=2)
