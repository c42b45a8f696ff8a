#!/usr/bin/env python3
"""tools/device/run_serving_compare.sh and serving_load.py on the tiny model (CPU, a few
tokens), so the side-by-side serving benchmark cannot rot: the script must finish, every
request must succeed and be counted, the summary must hold a row per stream count, and the
cached-prefix timing must give its rows, the second request of each reusing the prefix."""

import json
import os
import pathlib
import socket
import subprocess
import sys
import tempfile

SOURCE = pathlib.Path(os.environ["HOSTLM_SOURCE_DIR"])
BUILD = pathlib.Path(os.environ["HOSTLM_BUILD_DIR"])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    with tempfile.TemporaryDirectory() as results:
        env = dict(os.environ, BACKEND="cpu", STREAMS="1,3", NPROMPT="12", NGEN="4",
                   VOCAB="2000", RESULTS=results, PORT=str(free_port()), PREFIX_TTFT="40",
                   PREFIX_NEW="4")
        env.pop("OUT", None)
        run = subprocess.run(
            ["bash", str(SOURCE / "tools/device/run_serving_compare.sh"),
             str(SOURCE / "tests/data/models/tiny-tied-f32"), str(BUILD)],
            env=env, capture_output=True, text=True, timeout=240)
        print(run.stdout)
        print(run.stderr, file=sys.stderr)
        assert run.returncode == 0, f"script failed with {run.returncode}"
        rows = json.loads((pathlib.Path(results) / "hostlm.json").read_text())
        assert [r["streams"] for r in rows] == [1, 3], rows
        for r in rows:
            assert r["errors"] == 0, r
            assert 1 * r["streams"] <= r["tokens"] <= 4 * r["streams"], r
            assert r["aggregate_ts"] > 0 and r["ttft_max_ms"] >= r["ttft_mean_ms"] > 0, r
        prefix = json.loads((pathlib.Path(results) / "hostlm-prefix.json").read_text())
        assert len(prefix) == 3, prefix
        for r in prefix:
            assert (r["prefix"], r["new"]) == (40, 4) and r["cold_ms"] > 0, r
            assert r["cached_ttft_ms"] > 0, r
            # A fresh random prompt reuses nothing; the same one plus new tokens reuses all of
            # it (the engine keeps a state snapshot at the end of every prompt).
            assert r["cold_reused"] == 0 and r["reused"] == 40, r
        summary = (pathlib.Path(results) / "summary.md").read_text()
        assert "| 1 |" in summary and "| 3 |" in summary, summary
    print("serving compare dry run: ok")


if __name__ == "__main__":
    main()
