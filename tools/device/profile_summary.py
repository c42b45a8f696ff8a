#!/usr/bin/env python3
"""Groups Nsight Compute's raw CSV (`ncu --csv --page raw --metrics gpu__time_duration.sum,
dram__bytes_read.sum,dram__bytes_write.sum`) by kernel: launches, total and mean time, share
of all profiled time, and DRAM GB/s. Kernel names are shortened to the function and its
template arguments' first word, so one kernel's instantiations stay apart.

  python3 tools/device/profile_summary.py ncu.csv
"""
import csv
import re
import sys
from collections import defaultdict

SCALE = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6,
         "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}


def short_name(name):
    """`void ns::(anonymous namespace)::gemv_kernel<ns::K45<12>, 1, 1>(args)` -> gemv_kernel<K45<12>, 1, 1>."""
    name = re.sub(r"\(anonymous namespace\)::|[A-Za-z_]\w*::", "", name)
    name = re.sub(r"^void ", "", name)
    depth, out = 0, []
    for ch in name:  # drop the parameter list, keep template arguments
        if ch == "(" and depth == 0 and out:
            break
        depth += ch == "<"
        depth -= ch == ">"
        out.append(ch)
    return "".join(out).strip()


def main(path):
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f) if r]
    header_at = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
    header = rows[header_at]
    col = {name: header.index(name) for name in header}
    need = ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum"]
    for name in need:
        if name not in col:
            sys.exit(f"{path}: no column {name}")
    # ncu writes a row of units under the header; without one, its base units.
    units = rows[header_at + 1]
    has_units = units[col[need[0]]] in SCALE
    if not has_units:
        units = ["nsecond" if n == need[0] else "byte" for n in header]
    scale = {n: SCALE.get(units[col[n]], 1.0) for n in need}
    totals = defaultdict(lambda: [0, 0.0, 0.0])  # launches, us, bytes
    for r in rows[header_at + (2 if has_units else 1):]:
        try:
            us = float(r[col[need[0]]].replace(",", "")) * scale[need[0]]
            moved = sum(float(r[col[n]].replace(",", "")) * scale[n] for n in need[1:])
        except (ValueError, IndexError):
            continue
        t = totals[short_name(r[col["Kernel Name"]])]
        t[0] += 1
        t[1] += us
        t[2] += moved
    all_us = sum(t[1] for t in totals.values()) or 1.0
    print(f"{'kernel':60} {'launches':>8} {'total us':>10} {'mean us':>8} {'share':>6} {'GB/s':>7}")
    for name, (n, us, moved) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
        print(f"{name[:60]:60} {n:8d} {us:10.1f} {us / n:8.2f} {100 * us / all_us:5.1f}% "
              f"{moved / (us * 1e3) if us > 0 else 0:7.0f}")
    launches = sum(t[0] for t in totals.values())
    print(f"{'all':60} {launches:8d} {all_us:10.1f}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
