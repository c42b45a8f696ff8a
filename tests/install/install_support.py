"""Shared by the install and packaging tests: running commands, a clean environment for
installed binaries, and collecting failed checks so one run reports all of them."""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests


class Checks:
    def __init__(self, name):
        self.name = name
        self.failures = []

    def check(self, ok, what):
        print(("ok    " if ok else "FAIL  ") + what, flush=True)
        if not ok:
            self.failures.append(what)
        return ok

    def finish(self):
        if self.failures:
            print(f"{self.name}: {len(self.failures)} check(s) failed:", file=sys.stderr)
            for f in self.failures:
                print("  - " + f, file=sys.stderr)
            return 1
        print(f"{self.name}: all checks passed")
        return 0


def run(cmd, env=None, cwd=None, check=True, timeout=300, quiet=False):
    """Runs cmd, echoing it unless quiet; returns the CompletedProcess (text). check=True
    raises on failure with both output streams in the message."""
    if not quiet:
        print("$ " + " ".join(str(c) for c in cmd), flush=True)
    p = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, capture_output=True, text=True,
                       timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def clean_env(home):
    """No HOSTLM_* variables, no LD_LIBRARY_PATH, an empty HOME: what a fresh user has.
    Sanitizer options pass through so sanitizer builds report the same way."""
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    for k, v in os.environ.items():
        if k.endswith("SAN_OPTIONS"):
            env[k] = v
    return env


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def loaded_bytes(path, scratch):
    """The bytes of a file as the loader sees them: ELF files without their debug sections,
    which name the build folder as the compile directory in Debug builds but are never read
    at run time."""
    if not is_elf(path):
        return Path(path).read_bytes()
    out = Path(scratch) / "stripped"
    run(["objcopy", "--strip-debug", path, out], quiet=True)
    data = out.read_bytes()
    out.unlink()
    return data


def build_path_leaks(root, build_dir):
    """(file, snippet) for every file under root that names the build folder."""
    needles = {str(Path(build_dir)).encode(), str(Path(build_dir).resolve()).encode()}
    leaks = []
    with tempfile.TemporaryDirectory() as scratch:
        for path in sorted(Path(root).rglob("*")):
            if path.is_symlink() or not path.is_file():
                continue
            data = loaded_bytes(path, scratch)
            for needle in needles:
                at = data.find(needle)
                if at >= 0:
                    snippet = data[at:at + 80].split(b"\0")[0].decode(errors="replace")
                    leaks.append((path, snippet))
                    break
    return leaks
