#!/usr/bin/env python3
"""The serving modes of `hostlm bench` (--parallel, --format, --ttft-prefix) on the tiny model,
for a few tokens: the JSON and Markdown reports carry what they claim, constrained streams go
through the grammar, the prefix-cache run computes only the new tokens, and bad options fail
with a clear message. (The numbers themselves are for the GPU machine: tools/device.)"""

import json
import os
import pathlib
import subprocess
import sys
import unittest

SOURCE = pathlib.Path(os.environ.get("HOSTLM_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
BUILD = pathlib.Path(os.environ.get("HOSTLM_BUILD_DIR", SOURCE / "build"))
HOSTLM = BUILD / "bin" / "hostlm"
MODEL = SOURCE / "tests" / "data" / "models" / "tiny-tied-f32"
# Only one answer fits this schema, `{"a": 1}` give or take a little white space: an answer
# ends within a few tokens, so each constrained stream must go on with follow-up requests.
SHORT_SCHEMA = '{"type": "object", "properties": {"a": {"const": 1}}, "required": ["a"]}'


def bench(*args, check=True):
    run = subprocess.run([str(HOSTLM), "bench", str(MODEL), "-t", "1", *args],
                         capture_output=True, text=True, timeout=120)
    if check and run.returncode != 0:
        raise AssertionError(f"hostlm bench {' '.join(args)} failed ({run.returncode}):\n{run.stderr}")
    return run


class BenchModes(unittest.TestCase):
    def test_depth_prefix_is_prefilled_in_batches(self):
        # With no prompt test the batch is still sized for the depth prefix (up to 512 tokens,
        # llama-bench's micro-batch); before, -p 0 meant one token at a time.
        def batch(*args):
            out = json.loads(bench(*args, "-r", "1", "-o", "json").stdout)
            return sorted({r["n_batch"] for r in out})
        self.assertEqual(batch("-p", "0", "-n", "2", "-d", "100"), [100])
        self.assertEqual(batch("-p", "0", "-n", "2", "-d", "700"), [512])
        self.assertEqual(batch("-p", "24", "-n", "2", "-d", "10"), [24])
        self.assertEqual(batch("-p", "0", "-n", "2"), [1])

    def test_streams_format_and_ttft_json(self):
        out = json.loads(bench("--parallel", "1,3", "-p", "24", "-n", "48", "--format", SHORT_SCHEMA,
                               "--ttft-prefix", "96", "--ttft-new", "8", "-o", "json").stdout)
        streams = [r for r in out if r["test"] == "streams"]
        self.assertEqual([(r["n_streams"], r["format"]) for r in streams],
                         [(1, ""), (1, "schema"), (3, ""), (3, "schema")])
        for r in streams:
            n = r["n_streams"]
            self.assertEqual(r["tokens"], n * 48, r)  # every stream generates all its tokens
            self.assertGreater(r["aggregate_ts"], 0, r)
            self.assertGreater(r["ttft_mean_ms"], 0, r)
            self.assertLessEqual(r["ttft_mean_ms"], r["ttft_max_ms"], r)
            self.assertLessEqual(r["wall_s"] * 1000, 60_000, r)
            if r["format"]:
                # The grammar ended answers early: follow-ups kept every stream busy.
                self.assertGreaterEqual(r["requests"], 2 * n, r)
                self.assertGreater(r["ratio_to_unconstrained"], 0, r)
            else:
                self.assertEqual(r["requests"], n, r)  # nothing ends an unconstrained stream
                self.assertNotIn("ratio_to_unconstrained", r)
        [ttft] = [r for r in out if r["test"] == "ttft"]
        self.assertEqual(ttft["cached_tokens"], 96, ttft)
        self.assertEqual(ttft["prompt_eval_count"], 8, ttft)
        self.assertGreater(ttft["cold_prefill_ms"], 0, ttft)
        self.assertGreater(ttft["cached_ttft_ms"], 0, ttft)
        self.assertEqual(ttft["backend"], "cpu")

    def test_markdown_with_a_schema_file(self):
        schema = SOURCE / "tools" / "device" / "bench_schema.json"
        text = bench("--format", str(schema), "-p", "16", "-n", "8").stdout
        rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
        self.assertIn("t/s aggregate", rows[0])
        self.assertEqual(len(rows), 3, text)  # header, without and with the schema
        self.assertIn(str(schema), rows[2])
        self.assertRegex(rows[2], r"\| \d+\.\d{3} \|$")  # the ratio column

    def test_llama_bench_mode_unchanged(self):
        out = json.loads(bench("-p", "16", "-n", "4", "-r", "1", "-o", "json").stdout)
        self.assertEqual([r["test"] for r in out], ["pp16", "tg4"])

    def test_bad_options_fail_clearly(self):
        cases = [
            (["--format", "/nonexistent/schema.json"], "/nonexistent/schema.json"),
            (["--format", '{"type": "object", "frobnicate": 1}'], "frobnicate"),
            (["--parallel", "0"], "at least 1"),
            (["--parallel", "2", "-p", "8,16"], "one positive value"),
            (["--ttft-prefix", "64", "-d", "32"], "-d"),
            (["-b", "64"], "serving modes"),
        ]
        for args, needle in cases:
            run = bench(*args, check=False)
            self.assertEqual(run.returncode, 1, f"{args}: {run.stderr}")
            self.assertIn(needle, run.stderr, args)
            self.assertIn("hostlm:", run.stderr, args)


if __name__ == "__main__":
    if not HOSTLM.exists():
        print(f"{HOSTLM} is not built", file=sys.stderr)
        sys.exit(1)
    unittest.main()
