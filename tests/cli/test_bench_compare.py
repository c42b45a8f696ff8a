#!/usr/bin/env python3
"""tools/device/run_bench_compare.sh on the CPU (no llama.cpp, no GPU): the tiny model
converted to GGUF, pp512 / tg128 at depths 0 and 64, one repetition, so the side-by-side
benchmark of the GPU machine cannot rot. The summary must hold the four rows with numeric
t/s and the raw reports must be kept; then a step that fails (a file hostlm cannot load) and
one that runs out of time (STEP_TIMEOUT) must become rows of their own, not stop the script;
and a script stopped by a signal must stop the step it is running."""

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import time

SOURCE = pathlib.Path(os.environ.get("HOSTLM_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
BUILD = pathlib.Path(os.environ.get("HOSTLM_BUILD_DIR", SOURCE / "build"))
SCRIPT = SOURCE / "tools" / "device" / "run_bench_compare.sh"
NUMBER = re.compile(r"^[0-9][0-9,]*(\.[0-9]+)?$")


def run_script(models, results, **env):
    full = dict(os.environ, BACKEND="cpu", RESULTS=str(results), **env)
    for name in ("OUT", "LLAMA_BIN", "LLAMA_ARGS"):
        full.pop(name, None)
    run = subprocess.run(["bash", str(SCRIPT), str(BUILD), *map(str, models)], env=full,
                         capture_output=True, text=True, timeout=240)
    print(run.stdout)
    print(run.stderr, file=sys.stderr)
    return run


def summary_rows(results):
    """{(file, test): cells} of summary.md's table."""
    rows = {}
    for line in (results / "summary.md").read_text().splitlines():
        if line.startswith("| ") and not line.startswith("| file "):
            cells = [c.strip() for c in line.strip("|").split("|")]
            assert len(cells) == 7, line
            rows[(cells[0], cells[1])] = cells
    return rows


def main():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        model = tmp / "tiny.gguf"
        subprocess.run([str(BUILD / "bin" / "hostlm"), "convert",
                        str(SOURCE / "tests/data/models/tiny-tied-f32"), str(model), "--type", "f32"],
                       check=True, capture_output=True, timeout=60)

        # The dry run the brief of the script names: every test measured.
        results = tmp / "dry"
        run = run_script([model], results, DEPTHS="64", REPS="1")
        assert run.returncode == 0, f"script failed with {run.returncode}"
        rows = summary_rows(results)
        expected = ["pp512", "tg128", "pp512 @ d64", "tg128 @ d64"]
        assert list(rows) == [("tiny", t) for t in expected], list(rows)
        for cells in rows.values():
            assert NUMBER.match(cells[2]) and float(cells[2].replace(",", "")) > 0, cells
            assert cells[3:] == ["-", "-", "-", "-"], cells  # no llama.cpp, no GPU
        data = json.loads((results / "summary.json").read_text())
        assert [r["test"] for r in data] == expected, data
        assert all(r["hostlm"] > 0 and r["llama"] is None for r in data), data
        raw = results / "raw"
        for depth in (0, 64):
            report = json.loads((raw / f"tiny.hostlm.d{depth}.json").read_text())
            assert {(r["n_prompt"], r["n_gen"], r["n_depth"]) for r in report} == \
                {(512, 0, depth), (0, 128, depth)}, report
            assert all(len(r["samples_ts"]) == 1 and r["backend"] == "cpu" for r in report), report

        # A file hostlm cannot load fails its step; a run far longer than STEP_TIMEOUT is
        # stopped. Both are rows; the script goes on to the end and says so (exit 3).
        broken = tmp / "broken.gguf"
        broken.write_bytes(b"GGUF\x03\x00\x00\x00 not a model")
        results = tmp / "failures"
        run = run_script([broken, model], results, DEPTHS="", REPS="100000", STEP_TIMEOUT="3")
        assert run.returncode == 3, f"expected exit 3, got {run.returncode}"
        rows = summary_rows(results)
        assert rows[("broken", "pp512")][2] == "failed", rows
        assert rows[("broken", "tg128")][2] == "failed", rows
        assert rows[("tiny", "pp512")][2] == "timeout", rows
        assert rows[("tiny", "tg128")][2] == "timeout", rows
        text = (results / "summary.md").read_text()
        assert "hostlm on broken at depth 0: failed (log: broken.hostlm.d0.log)" in text, text
        assert (results / "raw" / "broken.hostlm.d0.log").read_text().strip(), "empty log"

        # Stopping the script stops the step under way (here a llama-bench that would sleep a
        # minute): it must not go on using the GPU after its caller has given up on it.
        fake_bin = tmp / "fake-llama"
        fake_bin.mkdir()
        pid_file = tmp / "llama.pid"
        bench = fake_bin / "llama-bench"
        bench.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 60\n")
        bench.chmod(0o755)
        env = dict(os.environ, BACKEND="cpu", RESULTS=str(tmp / "stopped"), DEPTHS="", REPS="1",
                   LLAMA_BIN=str(fake_bin))
        env.pop("OUT", None)
        script = subprocess.Popen(["bash", str(SCRIPT), str(BUILD), str(model)], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(600):
            if pid_file.exists() and pid_file.read_text().strip():
                break
            time.sleep(0.1)
        assert pid_file.exists(), "the fake llama-bench never started"
        llama_pid = int(pid_file.read_text())
        script.send_signal(signal.SIGTERM)
        script.wait(timeout=20)
        for _ in range(100):
            if not pathlib.Path(f"/proc/{llama_pid}").exists():
                break
            time.sleep(0.1)
        assert not pathlib.Path(f"/proc/{llama_pid}").exists(), "llama-bench outlived the script"
        assert script.returncode == 143, script.returncode

        # Bad settings stop it before anything runs.
        run = run_script([model], tmp / "bad", DEPTHS="64,deep")
        assert run.returncode == 2 and "DEPTHS: 'deep'" in run.stderr, run.returncode
        run = run_script([tmp / "absent.gguf"], tmp / "bad")
        assert run.returncode == 2 and "absent.gguf: no such file" in run.stderr, run.returncode
    print("bench compare dry run: ok")


if __name__ == "__main__":
    main()
