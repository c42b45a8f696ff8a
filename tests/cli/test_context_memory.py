#!/usr/bin/env python3
"""tools/context_memory.py against hostlm and the README: the memory plan `hostlm serve`
prints for the test256 shape at two contexts equals the one the script computes (its --check
exits 3 otherwise), the server's allocations grow with the context by the planned KV, and the
README's "Context length and memory" table is the one the script prints."""

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

SOURCE = pathlib.Path(os.environ.get("HOSTLM_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
BUILD = pathlib.Path(os.environ.get("HOSTLM_BUILD_DIR", SOURCE / "build"))
HOSTLM = BUILD / "bin" / "hostlm"
TOOLS = SOURCE / "tools"
# One malloc arena in the servers: glibc reserves 64 MiB of address space per extra arena, and
# how many the threads make depends on timing (a CI run once saw VmSize 64 MiB apart between
# the two contexts' servers, against the 18.5 MiB of KV the test measures).
os.environ["MALLOC_ARENA_MAX"] = "1"


def run(*cmd):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout


def sanitized():
    libs = subprocess.run(["ldd", str(HOSTLM)], capture_output=True, text=True).stdout
    return "libasan" in libs or "libtsan" in libs


class ContextMemory(unittest.TestCase):
    def test_hostlm_prints_the_computed_plan_and_allocates_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            model, report = pathlib.Path(tmp) / "test256.gguf", pathlib.Path(tmp) / "check.json"
            run(sys.executable, TOOLS / "make_shape_gguf.py", "test256", model, "--type", "Q4_K_M")
            out = run(sys.executable, TOOLS / "context_memory.py", "--check", model, "--ctx", "4096,65536",
                      "--hostlm", HOSTLM, "--json", report)
            self.assertIn("hostlm's printed plan equals the one computed here", out)
            rows = json.loads(report.read_text())
        self.assertEqual([r["hostlm_plan"]["kv_pages"] for r in rows], [192, 2560])
        if sanitized():
            self.skipTest("allocations: the sanitizer's allocator adds its own mappings (plan checked)")
        grow = rows[1]["process"]["loaded"]["VmSize"] - rows[0]["process"]["loaded"]["VmSize"]
        planned = rows[1]["formula_plan"]["kv"] - rows[0]["formula_plan"]["kv"]  # 18.5 MiB
        self.assertLess(abs(grow - planned), 8.5 * 2**20, f"VmSize grew {grow}, planned KV {planned}")

    def test_readme_table_is_the_scripts(self):
        table = run(sys.executable, TOOLS / "context_memory.py").strip().splitlines()
        readme = (SOURCE / "README.md").read_text(encoding="utf-8")
        section = readme[readme.index("## Context length and memory"):]
        for line in table:
            self.assertIn(line + "\n", section)


if __name__ == "__main__":
    unittest.main()
