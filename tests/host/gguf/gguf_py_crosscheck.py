#!/usr/bin/env python3
"""Cross-checks hostlm's GGUF reader and writer against the `gguf` Python package.

  gguf_py_crosscheck.py write PATH   writes a file with gguf.GGUFWriter; test_gguf_python.cpp
                                     knows its contents and reads it with hostlm's reader.
  gguf_py_crosscheck.py read PATH    reads a file hostlm's writer made (see the same test)
                                     with gguf.GGUFReader and checks every key, value and
                                     tensor byte; prints OK or the mismatches, exit status 0/1.

The expected values on both sides must be kept in step with test_gguf_python.cpp.
"""
import sys

import numpy as np
import gguf
from gguf import GGUFValueType as VT
from gguf import GGMLQuantizationType as QT


def pattern(n, seed):
    """Same bytes as hostlm::test::pattern() in gguf_test_util.h."""
    s = (seed * 2654435761 + 1) & 0xFFFFFFFF
    out = bytearray(n)
    for i in range(n):
        s = (s * 1664525 + 1013904223) & 0xFFFFFFFF
        out[i] = s >> 24
    return bytes(out)


def write(path):
    w = gguf.GGUFWriter(path, arch="crosscheck")
    w.add_custom_alignment(64)
    w.add_uint8("py.u8", 200)
    w.add_int8("py.i8", -100)
    w.add_uint16("py.u16", 65000)
    w.add_int16("py.i16", -32000)
    w.add_uint32("py.u32", 4000000000)
    w.add_int32("py.i32", -2000000000)
    w.add_float32("py.f32", 0.15625)
    w.add_uint64("py.u64", 2**63 + 5)
    w.add_int64("py.i64", -(2**62))
    w.add_float64("py.f64", -1.0e-300)
    w.add_bool("py.true", True)
    w.add_bool("py.false", False)
    w.add_string("py.string", "h\u00e9llo w\u00f6rld \u2713")
    w.add_array("py.strings", ["a", "bb", "<|im_end|>"])
    w.add_array("py.ints", [1, -2, 3])
    w.add_array("py.floats", [0.5, -1.25])
    w.add_array("py.bools", [True, False, True])
    w.add_key_value("py.u8s", [1, 2, 255], VT.ARRAY, sub_type=VT.UINT8)
    w.add_key_value("py.u64s", [2**64 - 1, 0], VT.ARRAY, sub_type=VT.UINT64)
    w.add_key_value("py.f64s", [1.5, -2.5], VT.ARRAY, sub_type=VT.FLOAT64)
    w.add_array("py.nested", [[1, 2], [3], [4, 5, 6]])
    w.add_array("py.nested_strings", [["a"], ["b", "c"]])
    w.add_array("py.three_levels", [[[1.5]], [[2.5, 3.5]]])

    w.add_tensor("f32", np.arange(12, dtype=np.float32).reshape(3, 4) * 0.5 - 1)
    f16_bits = np.arange(10, dtype=np.uint16) * 3 + 0x3C00
    w.add_tensor("f16", f16_bits.view(np.float16).reshape(2, 5))
    q8 = np.frombuffer(pattern(2 * 2 * 34, 8), dtype=np.uint8).reshape(2, 68)
    w.add_tensor("q8_0", q8, raw_dtype=QT.Q8_0)  # byte shape (2, 68) = 2 rows of 64
    w.add_tensor("i32", np.array([-1, 0, 7], dtype=np.int32))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def take(parts, vtype):
    """Decodes one value from a field's parts, keeping nested arrays nested (GGUFReader's
    own contents() flattens them)."""
    if vtype == VT.STRING:
        next(parts)
        return ("STRING", bytes(next(parts)).decode("utf-8"))
    if vtype == VT.ARRAY:
        etype = VT(int(next(parts)[0]))
        n = int(next(parts)[0])
        return ("ARRAY", etype.name, [take(parts, etype) for _ in range(n)])
    return (vtype.name, next(parts)[0].item())


def f32(x):
    return float(np.float32(x))


def arr(etype, values):
    if etype == "ARRAY":
        return ("ARRAY", "ARRAY", values)
    return ("ARRAY", etype, [(etype, v) for v in values])


# What test_gguf_python.cpp's HostlmWriterIsReadByGgufPy writes, in order.
EXPECTED_KV = [
    ("general.architecture", ("STRING", "crosscheck")),
    ("cpp.u8", ("UINT8", 250)),
    ("cpp.i8", ("INT8", -7)),
    ("cpp.u16", ("UINT16", 60000)),
    ("cpp.i16", ("INT16", -30000)),
    ("cpp.u32", ("UINT32", 4000000000)),
    ("cpp.i32", ("INT32", -2000000000)),
    ("cpp.f32", ("FLOAT32", f32(0.1))),
    ("cpp.bool", ("BOOL", True)),
    ("cpp.string", ("STRING", "<|im_start|>assistant \u2713")),
    ("cpp.u64", ("UINT64", 2**64 - 1)),
    ("cpp.i64", ("INT64", -(2**63))),
    ("cpp.f64", ("FLOAT64", 0.1)),
    ("cpp.tokens", arr("STRING", ["a", "", "\u00e9"])),
    ("cpp.scores", arr("FLOAT32", [-1.0, 0.5])),
    ("cpp.types", arr("INT32", [1, 3, 6])),
    ("cpp.flags", arr("BOOL", [False, True])),
    ("cpp.u64s", arr("UINT64", [2**64 - 1])),
    ("cpp.nested", arr("ARRAY", [arr("INT32", [1, 2]), arr("INT32", []), arr("INT32", [3])])),
    ("cpp.nested_strings", arr("ARRAY", [arr("STRING", ["x"]), arr("STRING", ["y", "z"])])),
    ("general.alignment", ("UINT32", 64)),
]

# name, type, ne (ggml order), bytes, pattern seed
EXPECTED_TENSORS = [
    ("w_f32", QT.F32, [4, 3], 48, 1),
    ("w_f16", QT.F16, [8], 16, 2),
    ("w_q8_0", QT.Q8_0, [64, 2], 136, 3),
    ("w_q4_k", QT.Q4_K, [256], 144, 4),
    ("w_i32", QT.I32, [2, 2, 2], 32, 5),
]


def read(path):
    r = gguf.GGUFReader(path)
    errors = []
    fields = [(k, f) for k, f in r.fields.items() if not k.startswith("GGUF.")]
    keys = [k for k, _ in fields]
    if keys != [k for k, _ in EXPECTED_KV]:
        errors.append(f"keys {keys}")
    for (key, want), (_, field) in zip(EXPECTED_KV, fields):
        got = take(iter(field.parts[3:]), VT(int(field.parts[2][0])))
        if got != want:
            errors.append(f"{key}: got {got!r}, want {want!r}")
    if r.alignment != 64:
        errors.append(f"alignment {r.alignment}")
    if [t.name for t in r.tensors] != [t[0] for t in EXPECTED_TENSORS]:
        errors.append(f"tensors {[t.name for t in r.tensors]}")
    for t, (name, qtype, ne, nbytes, seed) in zip(r.tensors, EXPECTED_TENSORS):
        if t.tensor_type != qtype:
            errors.append(f"{name}: type {t.tensor_type!r}")
        if t.shape.tolist() != ne:
            errors.append(f"{name}: ne {t.shape.tolist()}")
        if t.n_bytes != nbytes:
            errors.append(f"{name}: {t.n_bytes} bytes")
        if t.data_offset % 64 != 0:
            errors.append(f"{name}: data offset {t.data_offset}")
        if t.data.tobytes() != pattern(nbytes, seed):
            errors.append(f"{name}: data differs")
    if errors:
        print("\n".join(errors))
        return 1
    print("OK")
    return 0


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "read"):
        print(__doc__)
        return 2
    if sys.argv[1] == "write":
        write(sys.argv[2])
        return 0
    return read(sys.argv[2])


if __name__ == "__main__":
    sys.exit(main())
