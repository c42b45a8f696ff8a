#!/usr/bin/env python3
"""tools/make_shape_gguf.py --type on the test256 shape: a file written directly in Q4_K_M,
Q8_0 or BF16 has, tensor by tensor, the types and shapes `hostlm quantize` gives the F16 file
of the same shape for that scheme; its values are finite with about the F16 file's std and
zero mean (the F32 tensors: finite, ssm_a negative; equal to the F16 file's for BF16); and
`hostlm bench` loads and runs it.
The released shapes' tables are checked against spec section 1.1 (derived sizes, tying)."""

import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

import gguf
import numpy as np
from gguf.quants import dequantize

SOURCE = pathlib.Path(os.environ.get("HOSTLM_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
BUILD = pathlib.Path(os.environ.get("HOSTLM_BUILD_DIR", SOURCE / "build"))
HOSTLM = BUILD / "bin" / "hostlm"
SCRIPT = SOURCE / "tools" / "make_shape_gguf.py"
sys.path.insert(0, str(SCRIPT.parent))
import make_shape_gguf  # noqa: E402


def run(*cmd):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def tensors(path):
    return {t.name: t for t in gguf.GGUFReader(path).tensors}


class ShapeGguf(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = pathlib.Path(cls.tmp.name)
        cls.f16 = cls.dir / "f16.gguf"
        run(sys.executable, SCRIPT, "test256", cls.f16)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def check_scheme(self, scheme):
        direct, quantized = self.dir / f"{scheme}.gguf", self.dir / f"{scheme}-hostlm.gguf"
        run(sys.executable, SCRIPT, "test256", direct, "--type", scheme)
        run(HOSTLM, "quantize", "-q", self.f16, quantized, scheme)
        ours, theirs, f16 = tensors(direct), tensors(quantized), tensors(self.f16)
        self.assertEqual(list(ours), list(theirs))
        for name, t in ours.items():
            with self.subTest(scheme=scheme, tensor=name):
                self.assertEqual(t.tensor_type, theirs[name].tensor_type)
                self.assertEqual(list(t.shape), list(theirs[name].shape))
                self.assertEqual(t.n_bytes, theirs[name].n_bytes)
                ref = np.asarray(f16[name].data, dtype=np.float32).reshape(-1)
                if t.tensor_type == gguf.GGMLQuantizationType.F32:
                    x = np.asarray(t.data).reshape(-1)
                    self.assertTrue(np.isfinite(x).all())
                    self.assertEqual((x < 0).all(), (ref < 0).all())  # ssm_a stays negative
                    if scheme == "BF16":  # same draws as the F16 file
                        np.testing.assert_array_equal(x, ref)
                    continue
                x = dequantize(t.data, t.tensor_type).reshape(-1)
                self.assertTrue(np.isfinite(x).all())
                # A few random block scales make the std of a small tensor wander.
                tol = 0.05 if x.size >= 65536 else 0.25
                self.assertLess(abs(x.std() / ref.std() - 1), tol, f"std {x.std()} vs {ref.std()}")
                self.assertLess(abs(x.mean()), 4 * x.std() / np.sqrt(x.size) + 0.02 * x.std())
        self.assertEqual(direct.stat().st_size, quantized.stat().st_size)
        return direct

    def test_q4_k_m_types_match_hostlm_quantize_and_the_file_runs(self):
        direct = self.check_scheme("Q4_K_M")
        kinds = {t.tensor_type.name for t in tensors(direct).values()}
        self.assertEqual(kinds, {"F32", "Q4_K", "Q6_K"})  # the mixture, not one type
        out = run(HOSTLM, "bench", direct, "-p", "32", "-n", "8", "-r", "1", "-t", "1",
                  "--backend", "cpu", "-o", "json").stdout
        self.assertIn("Q4_K - Medium", out)

    def test_q8_0_and_bf16_types_match_hostlm_quantize(self):
        self.check_scheme("Q8_0")
        self.check_scheme("BF16")

    def test_released_shapes_follow_the_spec(self):
        # Spec section 1.1 / 1.3: H, F, L, Nq/Nkv, Hv, tying; CD = 2*16*128 + Hv*128.
        spec = {"0.8b": (1024, 3584, 24, 8, 2, 16, True, 6144), "2b": (2048, 6144, 24, 8, 2, 16, True, 6144),
                "4b": (2560, 9216, 32, 16, 4, 32, True, 8192), "9b": (4096, 12288, 32, 16, 4, 32, False, 8192),
                "27b": (5120, 17408, 64, 24, 4, 48, False, 10240)}
        for size, (H, F, L, nq, nkv, hv, tied, cd) in spec.items():
            s = make_shape_gguf.SIZES[size]
            self.assertEqual((s["hidden"], s["ffn"], s["layers"], s["n_head"], s["n_head_kv"], s["v_heads"],
                              not s.get("untied", False)), (H, F, L, nq, nkv, hv, tied), size)
            plan = make_shape_gguf.tensor_plan(s, np.random.default_rng(0))
            shapes = {name: shape for name, shape, _ in plan}
            self.assertEqual(shapes["blk.0.attn_qkv.weight"], (cd, H), size)
            self.assertEqual(shapes["blk.3.attn_q.weight"], (2 * nq * 256, H), size)
            self.assertEqual("output.weight" in shapes, not tied, size)
            # Every Q4_K_M type is one the script can write: no fallbacks in the released shapes.
            types = make_shape_gguf.choose_types([(n, sh) for n, sh, _ in plan], L, "Q4_K_M")
            self.assertTrue({t for t in types if t is not None} <= {gguf.GGMLQuantizationType.Q4_K,
                                                                    gguf.GGMLQuantizationType.Q6_K}, size)


if __name__ == "__main__":
    unittest.main()
