#!/usr/bin/env python3
"""Installs this build with DESTDIR into a temporary prefix, moves the installed tree to
another folder and runs it from there in a clean environment. The registry must find the
installed plugins and the backend factory the installed CUDA library through where the moved
libhostlm sits, no installed file may name the build folder, and a tiny model must generate
the same tokens as the build tree's hostlm."""
import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from install_support import Checks, build_path_leaks, clean_env, run

PREFIX = "/opt/hostlm"


def expected_files(a, source):
    files = ["bin/hostlm", f"{a.libdir}/libhostlm.so", "include/hostlm.h",
             f"{a.plugin_subdir}/libhostlm_qwen35.so", f"{a.manifest_subdir}/qwen35.json",
             "share/doc/hostlm/README.md", "lib/systemd/system/hostlm.service",
             "etc/default/hostlm"]
    files += [f"include/hostlm/{h.name}" for h in sorted((source / "host/include/hostlm").glob("*.h"))]
    comfy = source / "adapters/comfyui"
    if comfy.is_dir():
        files += ["share/hostlm/comfyui/" + str(p.relative_to(comfy)) for p in sorted(comfy.rglob("*"))
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]
    if (Path(a.build) / "lib/libhostlm_cuda.so").exists():
        files.append(f"{a.libdir}/libhostlm_cuda.so")
    return files


def main():
    p = argparse.ArgumentParser()
    for opt in ("--build", "--source", "--cmake", "--version", "--libdir", "--plugin-subdir",
                "--manifest-subdir"):
        p.add_argument(opt, required=True)
    a = p.parse_args()
    source, build = Path(a.source), Path(a.build)
    model = source / "tests/data/models/tiny-tied-f32"
    c = Checks("Install.RelocatedTree")
    tmp = Path(tempfile.mkdtemp(prefix="hostlm-relocate-"))
    try:
        stage = tmp / "stage"
        env = dict(os.environ, DESTDIR=str(stage))
        run([a.cmake, "--install", build, "--prefix", PREFIX], env=env)
        installed = stage / PREFIX.lstrip("/")
        for rel in expected_files(a, source):
            c.check((installed / rel).is_file(), f"installed {rel}")
        leaks = build_path_leaks(stage, build)
        c.check(not leaks, "no installed file names the build folder " + str(build) +
                "".join(f"\n        {f}: {s}" for f, s in leaks))

        # Move the tree: nothing may still depend on where it was installed or built.
        moved = tmp / "elsewhere" / "hostlm-moved"
        moved.parent.mkdir()
        shutil.move(str(installed), str(moved))
        shutil.rmtree(stage)
        home = tmp / "home"
        home.mkdir()
        env = clean_env(home)
        hostlm = moved / "bin/hostlm"

        ldd = run(["ldd", hostlm], env=env, cwd=tmp).stdout
        line = next((l for l in ldd.splitlines() if "libhostlm.so =>" in l), "")
        loaded = line.split("=>")[-1].split("(")[0].strip()
        c.check(bool(loaded) and os.path.realpath(loaded) == str(moved / a.libdir / "libhostlm.so"),
                f"the moved hostlm loads the moved libhostlm.so ({line.strip()})")

        plugins = json.loads(run([hostlm, "plugins", "--json"], env=env, cwd=tmp).stdout)
        c.check(plugins["search_path"] == [str(moved / a.manifest_subdir)],
                f"search path is the moved manifest folder only: {plugins['search_path']}")
        qwen = [q for q in plugins["plugins"] if q["name"] == "qwen35"]
        c.check(len(qwen) == 1, "qwen35 plugin listed once")
        if qwen:
            c.check(qwen[0]["manifest"] == str(moved / a.manifest_subdir / "qwen35.json"),
                    f"qwen35 manifest from the moved tree: {qwen[0]['manifest']}")
            c.check(qwen[0]["library"] == str(moved / a.plugin_subdir / "libhostlm_qwen35.so"),
                    f"qwen35 library from the moved tree: {qwen[0]['library']}")
        c.check(plugins["problems"] == [], f"no registry problems: {plugins['problems']}")

        # Same greedy tokens as the build tree's own hostlm on the CPU.
        args = ["run", model, "--tokens", "1,2,3", "-n", "8", "--temp", "0", "--backend", "cpu"]
        got = run([hostlm] + args, env=env, cwd=tmp).stdout.strip()
        want = run([build / "bin/hostlm"] + args, cwd=tmp).stdout.strip()
        c.check(got == want and len(got.split(",")) == 8,
                f"moved `hostlm run --tokens` gives the build tree's tokens ({got} vs {want})")
        auto = run([hostlm, "run", model, "--tokens", "1,2,3", "-n", "4", "--temp", "0"],
                   env=env, cwd=tmp, check=False)
        c.check(auto.returncode == 0 and len(auto.stdout.strip().split(",")) == 4,
                f"moved `hostlm run` with the default backend works: {auto.stdout}{auto.stderr}")

        no_model = run([hostlm, "run", "--tokens", "1,2,3"], env=env, cwd=tmp, check=False)
        c.check(no_model.returncode == 1 and "no MODEL given" in no_model.stderr,
                f"installed hostlm has no built-in source-tree model: {no_model.stderr.strip()}")

        flag = run([hostlm, "--version"], env=env, cwd=tmp).stdout
        sub = run([hostlm, "version"], env=env, cwd=tmp).stdout
        c.check(flag == sub, "`hostlm --version` prints what `hostlm version` prints")
        c.check(flag.startswith(f"hostlm {a.version} (commit "), f"version line: {flag.splitlines()[0]}")
        cuda = json.loads(run([hostlm, "version", "--json"], env=env, cwd=tmp).stdout)["backends"]["cuda"]
        if (build / "lib/libhostlm_cuda.so").exists():
            c.check(cuda == "available" or "could not be loaded" not in cuda,
                    f"the moved tree's CUDA library is found (absent GPU or driver is fine): {cuda}")
        else:
            c.check(cuda.startswith("unavailable") and "built without nvcc" in cuda,
                    f"no CUDA library in this build, reported as such: {cuda}")
    except Exception as e:  # a command failed: report it as a failed check
        c.check(False, str(e))
    code = c.finish()
    if code == 0:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"kept {tmp} for inspection", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
