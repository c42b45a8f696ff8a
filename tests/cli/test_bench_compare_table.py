#!/usr/bin/env python3
"""tools/device/bench_compare_table.py on reports written by hand: a llama-bench JSON report
in the exact form llama-bench -o json prints (fields and their order from
tools/llama-bench/llama-bench.cpp of unslothai/llama.cpp: json_printer, test::get_fields), a
`hostlm bench -o json` report, and the failures the run script meets (a llama-bench that died
after one test, a timeout, a report without the test, garbage, a malformed manifest)."""

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

SOURCE = pathlib.Path(os.environ.get("HOSTLM_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
TABLE = SOURCE / "tools" / "device" / "bench_compare_table.py"


def llama_test(n_prompt, n_gen, n_depth, avg_ts, samples_ts, avg_ns):
    """One test object as llama-bench's json_printer prints it (4-space indented fields, INT
    and FLOAT fields bare, BOOL as true/false, the rest quoted; std::to_string's 6 decimals)."""
    return f"""  {{
    "build_commit": "d32676d7",
    "build_number": 7412,
    "cpu_info": "Intel(R) Xeon(R) Platinum 8480+",
    "gpu_info": "NVIDIA H200",
    "backends": "CUDA",
    "model_filename": "/tmp/9b-q4_k_m.gguf",
    "model_type": "qwen35 9B Q4_K - Medium",
    "model_size": 5629395968,
    "model_n_params": 8953211904,
    "n_batch": 2048,
    "n_ubatch": 512,
    "n_threads": 16,
    "cpu_mask": "0x0",
    "cpu_strict": false,
    "poll": 50,
    "type_k": "f16",
    "type_v": "f16",
    "n_gpu_layers": 99,
    "n_cpu_moe": 0,
    "split_mode": "layer",
    "main_gpu": 0,
    "no_kv_offload": false,
    "flash_attn": 1,
    "devices": "auto",
    "tensor_split": "0.00",
    "tensor_buft_overrides": "none",
    "load_mode": "mmap",
    "embeddings": false,
    "no_op_offload": 0,
    "no_host": false,
    "fit_target": 1024,
    "fit_min_ctx": 4096,
    "n_prompt": {n_prompt},
    "n_gen": {n_gen},
    "n_depth": {n_depth},
    "test_time": "2026-11-30T14:02:11Z",
    "avg_ns": {avg_ns},
    "stddev_ns": 1203311,
    "avg_ts": {avg_ts:.6f},
    "stddev_ts": 1.734120,
    "samples_ns": [ {avg_ns - 1000}, {avg_ns + 1000} ],
    "samples_ts": [ {', '.join(str(s) for s in samples_ts)} ]
  }}"""


def llama_report(*tests, finished=True):
    """The whole output: '[', the tests joined by ',\\n', '\\n]' (print_footer); a run that
    exited inside a test stops after the last test it printed, the array unclosed."""
    return "[\n" + ",\n".join(tests) + ("\n]\n" if finished else "")


def hostlm_rows(depth, pp, tg, vram=None):
    rows = []
    for n_prompt, n_gen, rate in ((512, 0, pp), (0, 128, tg)):
        test = (f"pp{n_prompt}" if n_prompt else f"tg{n_gen}") + (f" @ d{depth}" if depth else "")
        row = {"model_filename": "/tmp/9b-q4_k_m.gguf", "model_type": "qwen35 Q4_K - Medium",
               "model_size": 5629395968, "model_n_params": 8953211904, "backend": "cuda",
               "n_threads": 16, "n_prompt": n_prompt, "n_gen": n_gen, "n_depth": depth,
               "test": test, "avg_ts": rate, "stddev_ts": 0.5, "samples_ts": [rate]}
        if vram is not None:
            row["device_memory_used_peak"] = vram
            row["device_memory_total"] = 150_754_820_096
        rows.append(row)
    return json.dumps(rows, indent=2) + "\n"


def table(md):
    """The data rows of the Markdown table, as lists of cells."""
    lines = [l for l in md.splitlines() if l.startswith("| ") and not l.startswith("| file ")]
    return [[c.strip() for c in l.strip("|").split("|")] for l in lines]


class BenchCompareTable(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)
        self.manifest = []

    def tearDown(self):
        self.tmp.cleanup()

    def step(self, file, engine, depth, status, report_text, vram=None, base=None):
        name = f"{file}.{engine}.d{depth}"
        (self.dir / f"{name}.json").write_text(report_text)
        vram_field = base_field = "-"
        if vram is not None:
            (self.dir / f"{name}.vram").write_text("".join(f"{v}\n" for v in vram))
            (self.dir / f"{name}.vram_base").write_text(f"{base}\n")
            vram_field, base_field = f"{name}.vram", f"{name}.vram_base"
        self.manifest.append("\t".join([file, engine, str(depth), status, f"{name}.json",
                                        vram_field, base_field]))

    def run_table(self, *args, check=True):
        path = self.dir / "steps.tsv"
        path.write_text("\n".join(self.manifest) + "\n")
        run = subprocess.run([sys.executable, str(TABLE), str(path), *args],
                             capture_output=True, text=True, timeout=60)
        if check:
            self.assertEqual(run.returncode, 0, run.stderr)
        return run

    def test_side_by_side_with_ratios_and_memory(self):
        self.step("9b-q4_k_m", "hostlm", 0, "ok", hostlm_rows(0, 9438.2, 182.4, vram=7 * 2**30),
                  vram=[1021, 7100, 7350, 7340], base=1021)
        self.step("9b-q4_k_m", "llama", 0, "ok", llama_report(
            llama_test(512, 0, 0, 7921.5, [7920.1, 7922.9], 64634000),
            llama_test(0, 128, 0, 223.0, [222.9, 223.1], 573991000)),
            vram=[1020, 6900, 7012], base=1020)
        self.step("9b-q4_k_m", "hostlm", 16384, "ok", hostlm_rows(16384, 2807.0, 156.0, vram=9 * 2**30),
                  vram=[1020, 9300], base=1020)
        self.step("9b-q4_k_m", "llama", 16384, "ok", llama_report(
            llama_test(512, 0, 16384, 3100.25, [3100.0, 3100.5], 165150000),
            llama_test(0, 128, 16384, 204.0, [203.9, 204.1], 627450000)),
            vram=[1020, 8800], base=1020)
        run = self.run_table("--json", str(self.dir / "rows.json"))
        self.assertEqual(table(run.stdout), [
            ["9b-q4_k_m", "pp512", "9,438", "7,922", "1.19", "7,168 (7,350)", "7,012"],
            ["9b-q4_k_m", "tg128", "182.4", "223.0", "0.82", "7,168 (7,350)", "7,012"],
            ["9b-q4_k_m", "pp512 @ d16384", "2,807", "3,100", "0.91", "9,216 (9,300)", "8,800"],
            ["9b-q4_k_m", "tg128 @ d16384", "156.0", "204.0", "0.76", "9,216 (9,300)", "8,800"],
        ])
        self.assertIn("llama.cpp: build 7412 (d32676d7), backends CUDA, NVIDIA H200, -ngl 99, "
                      "flash_attn 1", run.stdout)
        self.assertIn("GPU memory in use before the steps: 1,020-1,021 MiB.", run.stdout)
        rows = json.loads((self.dir / "rows.json").read_text())
        self.assertEqual(len(rows), 4)
        self.assertAlmostEqual(rows[1]["ratio"], 182.4 / 223.0)
        self.assertEqual((rows[2]["n_prompt"], rows[2]["n_gen"], rows[2]["n_depth"]), (512, 0, 16384))

    def test_failures_become_rows(self):
        # llama-bench exited in tg128 (after printing pp512); hostlm ran out of time at depth
        # 65536 and printed nothing; llama-bench at that depth says ok but lacks the tests.
        self.step("27b", "hostlm", 0, "ok", hostlm_rows(0, 3000.0, 60.0))
        self.step("27b", "llama", 0, "failed", llama_report(
            llama_test(512, 0, 0, 2500.0, [2500.0, 2500.0], 204800000), finished=False))
        self.step("27b", "hostlm", 65536, "timeout", "")
        self.step("27b", "llama", 65536, "ok", llama_report(
            llama_test(512, 0, 4096, 2000.0, [2000.0, 2000.0], 256000000)))
        run = self.run_table()
        self.assertEqual(table(run.stdout), [
            ["27b", "pp512", "3,000", "2,500", "1.20", "-", "-"],
            ["27b", "tg128", "60.0", "failed", "-", "-", "-"],
            ["27b", "pp512 @ d65536", "timeout", "missing", "-", "-", "-"],
            ["27b", "tg128 @ d65536", "timeout", "missing", "-", "-", "-"],
        ])
        self.assertIn("llama on 27b at depth 0: failed (log: 27b.llama.d0.log)", run.stdout)
        self.assertIn("hostlm on 27b at depth 65536: timeout", run.stdout)

    def test_without_llama_and_with_garbage(self):
        self.step("tiny", "hostlm", 0, "ok", "hostlm: error: something\n")
        self.step("other", "hostlm", 0, "ok", '{"avg_ts": 1}\n')
        self.step("third", "hostlm", 0, "ok", hostlm_rows(0, 5.0, 2.5))
        run = self.run_table("--n-gen", "0")  # pp only
        self.assertEqual(table(run.stdout), [
            ["tiny", "pp512", "not JSON (line 1: Expecting value)", "-", "-", "-", "-"],
            ["other", "pp512", "not a JSON array of test objects", "-", "-", "-", "-"],
            ["third", "pp512", "5.0", "-", "-", "-", "-"],
        ])

    def test_malformed_manifest_names_the_line(self):
        self.step("tiny", "hostlm", 0, "ok", hostlm_rows(0, 5.0, 2.5))
        self.manifest.append("tiny\tvllm\t0\tok\tx.json\t-\t-")
        run = self.run_table(check=False)
        self.assertEqual(run.returncode, 2)
        self.assertIn("steps.tsv:2: engine 'vllm' is not one of hostlm, llama", run.stderr)
        self.manifest[-1] = "tiny\thostlm\tdeep\tok\tx.json\t-\t-"
        run = self.run_table(check=False)
        self.assertIn("steps.tsv:2: depth 'deep' is not a non-negative integer", run.stderr)
        self.manifest[-1] = "tiny\thostlm\t0\tok"
        run = self.run_table(check=False)
        self.assertIn("steps.tsv:2: 4 tab-separated fields, expected 7", run.stderr)


if __name__ == "__main__":
    unittest.main()
