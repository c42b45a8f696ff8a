#!/usr/bin/env python3
"""Instruction mix of a CUDA kernel's hottest loop, read from its SASS: for kernel work on a
machine without a GPU, where a count of instructions per iteration is the one cost that can be
checked before a device run (session 38 found a rebuilt PRMT selector this way: 637 -> 574
instructions a warp and chunk in the pipelined tile product).

The loop is the longest backward branch whose body holds a tensor-core or FMA instruction
(--must), found per kernel whose mangled name matches --kernel.

    nvcc -O3 -arch=sm_90 -std=c++17 -I host/include -I backends -cubin \\
        backends/cuda/quants/tile_pipelined.cu -o /tmp/tile.cubin
    python3 tools/sass_loop_stats.py /tmp/tile.cubin --kernel 'Q4kFormatELi8.*Li64ELi2ENS1_13No'

cuobjdump is not in every CUDA install: PyPI's nvidia-cuda-cuobjdump wheel has it
(`pip download nvidia-cuda-cuobjdump`, unzip, nvidia/cu13/bin/cuobjdump); --cuobjdump or
$CUOBJDUMP names it. A .sass text file (cuobjdump -sass output) is read as it is.
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys

INSTRUCTION = re.compile(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
BRANCH = re.compile(r"\bBRA\s+(0x[0-9a-f]+)")


def sass_text(path, cuobjdump):
    if path.endswith(".sass") or path.endswith(".txt"):
        with open(path, encoding="utf-8") as f:
            return f.read()
    tool = cuobjdump or os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    if not tool:
        sys.exit("sass_loop_stats: no cuobjdump (give --cuobjdump or $CUOBJDUMP; see --help)")
    done = subprocess.run([tool, "-sass", path], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"sass_loop_stats: {tool} -sass {path} failed: {done.stderr.strip()}")
    return done.stdout


def kernels(text):
    """(name, [(address, instruction)]) for every function of the listing."""
    name, body = None, []
    for line in text.splitlines():
        if "Function :" in line:
            if name:
                yield name, body
            name, body = line.split("Function :", 1)[1].strip(), []
            continue
        m = INSTRUCTION.match(line)
        if name and m:
            body.append((int(m.group(1), 16), m.group(2)))
    if name:
        yield name, body


def opcode(instruction):
    return re.sub(r"^@!?U?P\w+\s+", "", instruction).split()[0].split(".")[0]


def hottest_loop(body, must):
    best = None
    for address, instruction in body:
        m = BRANCH.search(instruction)
        if not m or int(m.group(1), 16) >= address:
            continue
        start = int(m.group(1), 16)
        loop = [i for a, i in body if start <= a <= address]
        if any(opcode(i) in must for i in loop) and (best is None or len(loop) > len(best[1])):
            best = (start, loop)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", help="a .cubin (disassembled with cuobjdump) or a .sass listing")
    parser.add_argument("--kernel", default=".", help="regular expression on the mangled name")
    parser.add_argument("--must", default="HMMA,HGMMA,IMMA,FFMA",
                        help="opcodes one of which the loop must hold (comma-separated)")
    parser.add_argument("--top", type=int, default=12, help="opcodes listed per kernel")
    parser.add_argument("--cuobjdump", help="path of cuobjdump")
    args = parser.parse_args()
    must = set(args.must.split(","))
    pattern = re.compile(args.kernel)
    found = 0
    for name, body in kernels(sass_text(args.input, args.cuobjdump)):
        if not pattern.search(name):
            continue
        found += 1
        loop = hottest_loop(body, must)
        if loop is None:
            print(f"{name}\n  no loop holding {args.must}")
            continue
        counts = collections.Counter(opcode(i) for i in loop[1])
        mix = ", ".join(f"{op} {n}" for op, n in counts.most_common(args.top))
        print(f"{name}\n  loop at {loop[0]:#x}: {len(loop[1])} instructions; {mix}")
    if found == 0:
        sys.exit(f"sass_loop_stats: no kernel matches {args.kernel!r}")


if __name__ == "__main__":
    main()
