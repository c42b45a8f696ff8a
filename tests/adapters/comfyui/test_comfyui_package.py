"""The ComfyUI node package (adapters/comfyui) as ComfyUI sees it, in-process on the tiny model.

Run: python3 tests/adapters/comfyui/test_comfyui_package.py, with HOSTLM_BUILD_DIR set to a
build (its lib/libhostlm.so and bin/hostlm are used), or through ctest (comfyui_package).
"""

import gc
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # the emulation module only; the package itself is never on sys.path
import comfy_emulation as comfy  # noqa: E402
import store_fixture  # noqa: E402

SOURCE = os.environ.get("HOSTLM_SOURCE_DIR") or os.path.dirname(os.path.dirname(
    os.path.dirname(HERE)))
PACKAGE = os.path.join(SOURCE, "adapters", "comfyui")
TINY = os.path.join(SOURCE, "tests", "data", "models", "tiny-tied-f32")
WORKFLOW = os.path.join(HERE, "workflow_generate.json")
BUILD = store_fixture.build_dir()
os.environ.setdefault("HOSTLM_LIBRARY", os.path.join(BUILD, "lib", "libhostlm.so"))


def workflow(**generate_inputs):
    with open(WORKFLOW, encoding="utf-8") as f:
        prompt = json.load(f)
    prompt["1"]["inputs"]["path"] = TINY
    prompt["2"]["inputs"].update(generate_inputs)
    return prompt


class PackageFixture(unittest.TestCase):
    """Installs the package as a user would (a symlink in custom_nodes/) and loads it with
    ComfyUI's loader; a temporary store and model folder feed the dropdown."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="hostlm-comfy-")
        cls.store = store_fixture.make_store(os.path.join(cls.tmp, "store"), TINY, BUILD)
        cls.model_dir = os.path.join(cls.tmp, "LLM")
        os.makedirs(os.path.join(cls.model_dir, "qwen"))
        os.symlink(TINY, os.path.join(cls.model_dir, "qwen", "tiny-hf"))
        os.symlink(cls.store.gguf, os.path.join(cls.model_dir, "qwen", "tiny.gguf"))
        os.environ["HOSTLM_MODELS"] = cls.store.root
        os.environ["OLLAMA_MODELS"] = os.path.join(cls.tmp, "no-ollama-store")
        os.environ["HOSTLM_MODEL_DIRS"] = cls.model_dir
        custom_nodes = os.path.join(cls.tmp, "custom_nodes")
        os.makedirs(custom_nodes)
        cls.installed = os.path.join(custom_nodes, "hostlm.comfy")  # a '.' as users' names have
        os.symlink(PACKAGE, cls.installed)
        cls.package = load_package(cls.installed)
        cls.nodes = cls.package.NODE_CLASS_MAPPINGS

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)


_loaded = {}


def load_package(path):
    if path not in _loaded:
        saved = list(sys.path)
        sys.path[:] = [p for p in sys.path if os.path.realpath(p) not in (
            os.path.realpath(PACKAGE), os.path.dirname(os.path.realpath(PACKAGE)))]
        try:
            _loaded[path] = comfy.load_custom_node(path)
        finally:
            sys.path[:] = saved
    return _loaded[path]


class LoaderTest(PackageFixture):
    def test_registers_prefixed_nodes_with_display_names(self):
        name = self.installed.replace(".", "_x_")
        self.assertIs(sys.modules[name], self.package)
        self.assertEqual(set(self.nodes), {"HostLMLoadModel", "HostLMGenerate", "HostLMChat"})
        for node_name, cls in self.nodes.items():
            self.assertIsInstance(cls, type)
            self.assertIn(node_name, self.package.NODE_DISPLAY_NAME_MAPPINGS)

    def test_every_node_follows_the_input_spec_rules(self):
        for node_name, cls in self.nodes.items():
            self.assertEqual(comfy.check_node_class(node_name, cls), [], node_name)

    def test_object_info_is_json_the_frontend_can_read(self):
        for node_name, cls in self.nodes.items():
            info = comfy.node_info(node_name, cls, self.package.NODE_DISPLAY_NAME_MAPPINGS)
            self.assertEqual(info["category"], "hostlm")
            self.assertEqual(len(info["output_name"]), len(info["output"]))
        generate = comfy.node_info("HostLMGenerate", self.nodes["HostLMGenerate"], {})
        seed = generate["input"]["required"]["seed"][1]
        self.assertTrue(seed["control_after_generate"])
        self.assertEqual(generate["output_name"], ["text", "reasoning"])
        self.assertTrue(generate["output_node"])

    def test_dropdown_lists_store_and_folder_models_after_the_path_entry(self):
        choices = self.nodes["HostLMLoadModel"].INPUT_TYPES()["required"]["model"][0]
        self.assertEqual(choices[0], "(use the path field)")
        self.assertIn("tiny:latest", choices)
        self.assertIn("tiny-system:latest", choices)
        self.assertIn("qwen/tiny-hf", choices)
        self.assertIn("qwen/tiny.gguf", choices)  # made by the store fixture
        self.assertNotIn("broken:latest", choices)  # a manifest without weights is skipped

    def test_pyproject_has_the_registry_fields(self):
        import tomllib  # Python 3.11+

        with open(os.path.join(PACKAGE, "pyproject.toml"), "rb") as f:
            config = tomllib.load(f)
        project, comfy_tool = config["project"], config["tool"]["comfy"]
        self.assertRegex(project["name"], r"^[A-Za-z][A-Za-z0-9._-]{0,99}$")
        self.assertRegex(project["version"], r"^\d+\.\d+\.\d+$")
        self.assertTrue(project["description"])
        self.assertIn("Repository", project["urls"])
        self.assertTrue(comfy_tool["PublisherId"])
        self.assertTrue(comfy_tool["DisplayName"])


class NodeCallTest(PackageFixture):
    """Each FUNCTION called with the inputs its INPUT_TYPES declares, at their defaults."""

    def load(self, **inputs):
        values = comfy.widget_defaults(self.nodes["HostLMLoadModel"])
        values.update({"path": TINY, "backend": "cpu", "context": 1024})
        values.update(inputs)
        (model,) = self.nodes["HostLMLoadModel"]().load(**values)
        return model

    def test_load_generate_and_chat_with_their_default_inputs(self):
        model = self.load()
        for name in ("HostLMGenerate", "HostLMChat"):
            cls = self.nodes[name]
            values = comfy.widget_defaults(cls)
            values.update({"model": model, "prompt": "Hello", "max_tokens": 8,
                           "unique_id": "7"})
            out = getattr(cls(), cls.FUNCTION)(**values)
            self.assertEqual(set(out), {"ui", "result"})
            self.assertEqual(len(out["result"]), len(cls.RETURN_TYPES))
            for value, kind in zip(out["result"], cls.RETURN_TYPES):
                self.assertEqual(kind, "STRING")
                self.assertIsInstance(value, str)
            self.assertEqual(out["ui"]["text"], [out["result"][0]])

    def test_the_same_settings_share_one_loaded_model(self):
        self.assertIs(self.load(), self.load())
        self.assertIsNot(self.load(), self.load(context=2048))

    def test_store_model_loads_its_blob_and_uses_its_system_prompt(self):
        (model,) = self.nodes["HostLMLoadModel"]().load("tiny-system:latest", "", "cpu", -1, 512)
        self.assertEqual(model.spec.path, self.store.weights)
        self.assertEqual(model.spec.system, store_fixture.SYSTEM_TEXT)
        self.assertEqual(model.backend, "cpu")
        out = self.nodes["HostLMGenerate"]().generate(model, "Hi", False, 4, 0.0, 1.0, 0, 0)
        self.assertIsInstance(out["result"][0], str)
        (by_name,) = self.nodes["HostLMLoadModel"]().load("(use the path field)", "TINY",
                                                          "cpu", -1, 512)
        self.assertEqual(by_name.spec.path, self.store.weights)  # names: any case, :latest

    def test_folder_models_load_by_their_relative_name(self):
        (model,) = self.nodes["HostLMLoadModel"]().load("qwen/tiny-hf", "", "cpu", -1, 512)
        self.assertEqual(os.path.realpath(model.spec.path), os.path.realpath(TINY))
        (gguf,) = self.nodes["HostLMLoadModel"]().load("qwen/tiny.gguf", "", "cpu", -1, 512)
        self.assertTrue(gguf.loaded)

    def test_thinking_goes_to_reasoning_and_only_there(self):
        model = self.load()
        generate = self.nodes["HostLMGenerate"]()
        # Greedy on the tiny model's random weights, this prompt gives visible text.
        text, reasoning = generate.generate(model, "Hello there", True, 12, 0.0, 1.0, 0,
                                            0)["result"]
        self.assertTrue(reasoning, "thinking on: the tiny model's tokens land in the reasoning")
        self.assertNotIn("<think>", text + reasoning)
        off_text, off_reasoning = generate.generate(model, "Hello there", False, 12, 0.0, 1.0,
                                                    0, 0)["result"]
        self.assertEqual(off_reasoning, "")
        self.assertTrue(off_text)

    def test_seed_decides_a_sampled_answer(self):
        model = self.load()
        generate = self.nodes["HostLMGenerate"]()
        args = (model, "Tell me a story", False, 16, 1.0, 1.0, 0)
        a = generate.generate(*args, 1)["result"][0]
        self.assertEqual(a, generate.generate(*args, 1)["result"][0])
        others = {generate.generate(*args, seed)["result"][0] for seed in (2, 3, 4)}
        self.assertTrue(others - {a}, "three other seeds all gave the same text")

    def test_is_changed_follows_the_inputs_and_the_seed(self):
        cls = self.nodes["HostLMGenerate"]
        inputs = comfy.widget_defaults(cls)
        inputs.update({"model": None, "prompt": "a", "unique_id": "2"})
        same = cls.IS_CHANGED(**dict(inputs))
        self.assertEqual(same, cls.IS_CHANGED(**dict(inputs)))
        for key, value in (("seed", 1), ("prompt", "b"), ("temperature", 0.1),
                           ("thinking", True), ("system", "x")):
            changed = dict(inputs, **{key: value})
            self.assertNotEqual(cls.IS_CHANGED(**changed), same, key)


class ChatTest(PackageFixture):
    def setUp(self):
        (self.model,) = self.nodes["HostLMLoadModel"]().load(
            "(use the path field)", TINY, "cpu", -1, 1024)

    def chat(self, node, prompt, **kwargs):
        args = dict(model=self.model, prompt=prompt, new_conversation=False, thinking=False,
                    max_tokens=6, temperature=0.0, top_p=1.0, top_k=0, seed=0)
        args.update(kwargs)
        return node.chat(**args)["result"]

    def test_remembers_its_conversation_between_runs_until_told_to_start_over(self):
        node = self.nodes["HostLMChat"]()
        first_text, _, first = self.chat(node, "Hello")
        _, _, second = self.chat(node, "And then?", system="Be brief.")
        history = json.loads(second)
        self.assertEqual([m["role"] for m in history],
                         ["system", "user", "assistant", "user", "assistant"])
        self.assertEqual(history[0]["content"], "Be brief.")
        self.assertEqual(history[1]["content"], "Hello")
        self.assertEqual(history[2]["content"], first_text)
        self.assertEqual(json.loads(first), history[1:3])
        _, _, fresh = self.chat(node, "New topic", new_conversation=True)
        self.assertEqual([m["role"] for m in json.loads(fresh)], ["user", "assistant"])

    def test_history_input_continues_another_nodes_conversation(self):
        a, b = self.nodes["HostLMChat"](), self.nodes["HostLMChat"]()
        _, _, history = self.chat(a, "Hello")
        _, _, continued = self.chat(b, "More", history=history)
        self.assertEqual(json.loads(continued)[:2], json.loads(history))
        self.assertEqual(b.conversation, json.loads(continued))

    def test_thinking_is_kept_apart_in_the_history(self):
        node = self.nodes["HostLMChat"]()
        _, reasoning, history = self.chat(node, "Hi", thinking=True)
        self.assertEqual(json.loads(history)[-1].get("reasoning_content", ""), reasoning)


class ErrorTest(PackageFixture):
    def load(self, path, **kwargs):
        values = dict(model="(use the path field)", path=path, backend="cpu", gpu_layers=-1,
                      context=512)
        values.update(kwargs)
        return self.nodes["HostLMLoadModel"]().load(**values)[0]

    def assertFails(self, pattern, fn, *args, **kwargs):
        with self.assertRaises(RuntimeError) as caught:
            fn(*args, **kwargs)
        self.assertEqual(type(caught.exception).__name__, "HostLMError")
        self.assertRegex(str(caught.exception), pattern)
        self.assertIsNone(caught.exception.__cause__)  # no chained traceback from inside
        return str(caught.exception)

    def test_missing_model_names_what_was_searched(self):
        message = self.assertFails(r"^hostlm Load model: model 'no-such-model' not found",
                                   self.load, "no-such-model")
        self.assertIn(self.store.root, message)
        self.assertFails("choose a model", self.load, "")

    def test_a_file_that_is_no_model_says_why(self):
        bad = os.path.join(self.tmp, "bad.gguf")
        with open(bad, "w") as f:
            f.write("not a gguf")
        self.assertFails(r"^hostlm Load model: cannot load model '.*bad.gguf': .+", self.load,
                         bad)

    def test_contradicting_backend_and_gpu_layers(self):
        self.assertFails("gpu_layers 0", self.load, TINY, backend="cuda", gpu_layers=0)

    def test_gpu_layers_reach_the_library(self):
        # The C API (version 3) checks the count, as hostlm's --gpu-layers does.
        self.assertFails("gpu layers: -2", self.load, TINY, gpu_layers=-2)

    def test_cpu_moe_layers_reach_the_library(self):
        # The C API (version 4) checks the count, as hostlm's --n-cpu-moe does; on the CPU
        # backend a valid count changes nothing.
        self.assertFails("cpu moe layers: -2", self.load, TINY, cpu_moe_layers=-2)
        self.assertTrue(self.load(TINY, cpu_moe_layers=-1, context=256).describe())

    def test_state_type_reaches_the_library(self):
        # The C API (version 5) checks it, as hostlm's --state-type does.
        self.assertFails("q8_0", self.load, TINY, state_type="q8_0")
        self.assertTrue(self.load(TINY, state_type="f16", context=256).describe())

    def test_bad_generation_inputs(self):
        model = self.load(TINY, context=256)
        generate, chat = self.nodes["HostLMGenerate"](), self.nodes["HostLMChat"]()
        self.assertFails("prompt is empty", generate.generate, model, "  ", False, 4, 0.0, 1.0,
                         0, 0)
        self.assertFails("must come from a hostlm Load model", generate.generate, "x", "Hi",
                         False, 4, 0.0, 1.0, 0, 0)
        self.assertFails(r"hostlm Generate with .*: the prompt is \d+ tokens, more than the "
                         "context of 256", generate.generate, model, "word " * 400, False, 4,
                         0.0, 1.0, 0, 0)
        self.assertFails("history is not valid JSON", chat.chat, model, "Hi", False, False, 4,
                         0.0, 1.0, 0, 0, history="[{")
        self.assertFails("role must be one of", chat.chat, model, "Hi", False, False, 4, 0.0,
                         1.0, 0, 0, history='[{"role": "robot", "content": "x"}]')

    def test_unreachable_server(self):
        self.assertFails(r"cannot reach the hostlm server at http://127.0.0.1:9: ",
                         self.load, "tiny", server_url="127.0.0.1:9")

    def test_missing_library_lists_where_it_looked(self):
        code = ("import sys; sys.path.insert(0, %r); import comfy_emulation as c; "
                "p = c.load_custom_node(%r); "
                "p.NODE_CLASS_MAPPINGS['HostLMLoadModel']().load('(use the path field)', %r, "
                "'cpu', -1, 512)" % (HERE, PACKAGE, TINY))
        env = dict(os.environ, HOSTLM_LIBRARY="/nonexistent/libhostlm.so")
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=120)
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("HostLMError: hostlm Load model: libhostlm.so was not found. Set "
                      "HOSTLM_LIBRARY", run.stderr)
        self.assertIn("/nonexistent/libhostlm.so (not there)", run.stderr)


class WorkflowTest(PackageFixture):
    """The API-format workflow Load model -> Generate, as ComfyUI's /prompt runs it."""

    def test_runs_and_reruns_only_what_changed(self):
        executor = comfy.Executor(self.nodes)
        first = executor.run(workflow())
        text, reasoning = first["2"][0]
        self.assertTrue(text)
        self.assertEqual(reasoning, "")
        self.assertEqual(first["2"][1], {"text": [text]})
        self.assertEqual(executor.executed, ["1", "2"])
        model = first["1"][0][0]
        self.assertTrue(model.loaded)

        again = executor.run(workflow())  # nothing changed: all from the cache
        self.assertEqual(executor.executed, [])
        self.assertEqual(again["2"][0][0], text)

        executor.run(workflow(seed=43))  # control_after_generate moved the seed
        self.assertEqual(executor.executed, ["2"])
        self.assertIs(executor.outputs["1"][1][0], model)  # the model stayed loaded

    def test_validation_refuses_what_comfyui_refuses(self):
        executor = comfy.Executor(self.nodes)
        for change, message in ((("2", "max_tokens", 0), "smaller than min"),
                                (("1", "backend", "tpu"), "not in the list"),
                                (("2", "top_p", 1.5), "bigger than max")):
            prompt = workflow()
            node, key, value = change
            prompt[node]["inputs"][key] = value
            with self.assertRaisesRegex(comfy.WorkflowError, message):
                executor.run(prompt)


class ComfyHooksTest(unittest.TestCase):
    """With ComfyUI's modules present: progress bar, live text, Cancel, and models released
    when ComfyUI frees models. The package is loaded again under another name after the
    stand-ins are in place, as ComfyUI imports them before any custom node."""

    @classmethod
    def setUpClass(cls):
        cls.mm, cls.utils, cls.server = comfy.install_comfy_stand_ins()
        cls.tmp = tempfile.mkdtemp(prefix="hostlm-comfy-hooks-")
        path = os.path.join(cls.tmp, "hostlm")
        os.symlink(PACKAGE, path)
        cls.package = load_package(path)
        cls.nodes = cls.package.NODE_CLASS_MAPPINGS

    @classmethod
    def tearDownClass(cls):
        comfy.remove_comfy_stand_ins()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def load(self, context=1024):
        return self.nodes["HostLMLoadModel"]().load("(use the path field)", TINY, "cpu", -1,
                                                    context)[0]

    def test_progress_bar_counts_tokens_and_text_reaches_the_node(self):
        model = self.load()
        del self.utils.updates[:]
        out = self.nodes["HostLMGenerate"]().generate(model, "Hello", False, 10, 0.0, 1.0, 0,
                                                      0, unique_id="5")
        self.assertEqual(self.utils.updates[0], ("new", 10))
        ticks = self.utils.updates[1:]
        self.assertEqual([t[0] for t in ticks], list(range(1, len(ticks) + 1)))
        self.assertTrue(all(total == 10 for _, total in ticks))
        self.assertTrue(self.server.PromptServer.instance.texts)
        node_id, shown = self.server.PromptServer.instance.texts[-1]
        self.assertEqual((node_id, shown), ("5", out["result"][0]))

    def test_cancel_stops_the_generation_as_comfyui_interrupts(self):
        model = self.load()
        generate = self.nodes["HostLMGenerate"]()

        class Cancel(self.utils.ProgressBar):  # the user presses Cancel at the 3rd token
            def update_absolute(bar, value, total=None, preview=None):
                super().update_absolute(value, total, preview)
                if value == 3:
                    self.mm.interrupt_processing = True

        original = self.utils.ProgressBar
        self.utils.ProgressBar = Cancel
        del self.utils.updates[:]
        try:
            with self.assertRaises(self.mm.InterruptProcessingException):
                generate.generate(model, "Hello", False, 50, 0.0, 1.0, 0, 0)
        finally:
            self.utils.ProgressBar = original
            self.mm.interrupt_processing = False
        self.assertEqual(self.utils.updates[-1][0], 3)

    def test_unload_models_releases_and_the_next_run_loads_again(self):
        model = self.load(context=768)
        self.assertTrue(model.loaded)
        self.mm.unload_all_models()  # what POST /free {"unload_models": true} calls
        self.assertFalse(model.loaded)
        out = self.nodes["HostLMGenerate"]().generate(model, "Hi", False, 4, 0.0, 1.0, 0, 0)
        self.assertTrue(model.loaded)
        self.assertIsInstance(out["result"][0], str)

    def test_memory_pressure_releases_models_on_that_device_only(self):
        model = self.load(context=640)
        self.mm.free_bytes = 100
        try:
            self.mm.free_memory(1000, self.mm.Device("cuda"))
            self.assertTrue(model.loaded)  # a CPU model frees no GPU memory
            self.mm.free_memory(1000, self.mm.Device("cpu"))
            self.assertFalse(model.loaded)
        finally:
            self.mm.free_bytes = 1 << 40

    def test_models_stay_loaded_until_comfyui_frees_them(self):
        model = self.load(context=896)
        spec = model.spec
        del model
        gc.collect()
        kept = [h for h in self.package.nodes.registry.handles() if h.spec == spec]
        self.assertEqual(len(kept), 1)
        self.assertTrue(kept[0].loaded)


class LifetimeWithoutComfyTest(PackageFixture):
    def test_a_model_nothing_references_is_freed(self):
        registry = self.package.nodes.registry
        self.assertFalse(registry.keep_until_freed)
        model = self.nodes["HostLMLoadModel"]().load("(use the path field)", TINY, "cpu", -1,
                                                     1280)[0]
        spec = model.spec
        self.assertTrue(any(h.spec == spec for h in registry.handles()))
        del model
        gc.collect()
        self.assertFalse(any(h.spec == spec for h in registry.handles()))


class LibraryLookupTest(unittest.TestCase):
    def test_hostlm_library_wins_and_the_build_tree_is_searched(self):
        code = ("import sys, json; sys.path.insert(0, %r); import comfy_emulation as c; "
                "p = c.load_custom_node(%r); import importlib; "
                "m = sys.modules[%r + '.hostlm_capi']; "
                "print(json.dumps(m.library_candidates()))") % (HERE, PACKAGE,
                                                                PACKAGE.replace(".", "_x_"))
        env = dict(os.environ)
        env.pop("HOSTLM_LIBRARY", None)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=60, check=True).stdout
        candidates = json.loads(out)
        self.assertIn(os.path.join(SOURCE, "build", "lib", "libhostlm.so"), candidates)
        self.assertIn("/usr/local/lib/libhostlm.so", candidates)
        self.assertLess(candidates.index("/usr/local/lib/libhostlm.so"),
                        candidates.index(os.path.join(SOURCE, "build", "lib", "libhostlm.so")))
        env["HOSTLM_LIBRARY"] = "/x/libhostlm.so"
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=60, check=True).stdout
        self.assertEqual(json.loads(out), ["/x/libhostlm.so"])


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    unittest.main(verbosity=2)
