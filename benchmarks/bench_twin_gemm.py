"""The twin's own fp32 GEMM (ms_ops::twin::Gemm, which Sgemm takes for products with 9 to 256 rows
of C) against OpenBLAS, single thread, warm cache, on such shapes of the kernels' cube products
(the DeepSeek sparse attention kernels: one token's 16 query heads against its selected keys;
flash attention's 256-row tiles) and, for reference, on smaller and larger ones that Sgemm leaves
to OpenBLAS.

Ours is called through tests/twin/twin_gemm_cases.cpp (built like the twin tests' libraries),
OpenBLAS through scipy-openblas32's cblas_sgemm with one thread. Each case is timed as the best of
--trials runs of enough back-to-back products to take ~--seconds, so a moment of other load on
the machine does not count. The header gives numpy's sgemm on all cores (the reference the other
benchmarks compare with, benchmarks/_harness.py SGEMM_SHAPE).

Then, where the build has the twin's bf16 GEMM (ms_ops::twin::Bgemm, behind bf16 Matmuls), the same
for bf16 operands on each instruction the machine has, AMX tiles and VDPBF16PS, on the attention
and cross-entropy tiles (--bf16-shapes), beside OpenBLAS's fp32 sgemm of the same shape.

Shape names: m x n x k, N = B transposed (stored n x k), T = A transposed (stored k x m).
"""
import argparse
import ctypes
import os
import sys
import tempfile
import time

import numpy as np
import scipy_openblas32

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
sys.path.insert(0, HERE)
from _harness import SGEMM_SHAPE  # noqa: E402
from twin_cases import bf16_rne, build_cases  # noqa: E402

SHAPES = ["16x128x576N", "16x512x128", "16x512x576N", "16x576x512", "32x256x128N", "8x1024x128",
          "128x512x128N", "128x128x512", "256x512x128N", "256x128x512", "1024x1024x1024N"]
BF16_SHAPES = ["128x128x128N", "128x512x128N", "128x128x512", "256x512x128N", "512x512x512", "1024x1024x1024N"]
V, I = ctypes.c_void_p, ctypes.c_int
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112


def parse(shape):
    flag = shape[-1] if shape[-1] in "NT" else ""
    m, n, k = (int(x) for x in shape.rstrip("NT").split("x"))
    return m, n, k, flag == "T", flag == "N"


def best_seconds(call, flops, seconds, trials):
    """Best per-call time over `trials` batches of calls lasting about `seconds` each; call(r)
    makes r calls."""
    reps = 1
    call(1)
    while True:
        t = time.perf_counter()
        call(reps)
        if time.perf_counter() - t > seconds / 4 or reps > 1 << 20:
            break
        reps *= 4
    best = float("inf")
    for _ in range(trials):
        t = time.perf_counter()
        call(reps)
        best = min(best, (time.perf_counter() - t) / reps)
    return flops / best / 1e9


def numpy_sgemm_gflops():
    m, k, n = SGEMM_SHAPE
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k), np.float32), rng.standard_normal((k, n), np.float32)
    a @ b
    t = min(_timed(lambda: a @ b) for _ in range(3))
    return 2 * m * k * n / t / 1e9


def _timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", nargs="+", default=SHAPES)
    parser.add_argument("--seconds", type=float, default=0.05, help="length of one timed batch")
    parser.add_argument("--trials", type=int, default=15, help="timed batches per case (best counts)")
    parser.add_argument("--bf16-shapes", nargs="*", default=BF16_SHAPES, help="bf16 cases (none: skip them)")
    args = parser.parse_args()

    gemm_args = [I, I, I, I, I, V, I, V, I, V, I, I, I]
    # The loaded library stays mapped after its directory is removed; nothing is left in /tmp.
    with tempfile.TemporaryDirectory(prefix="bench_twin_gemm") as build_dir:
        lib = build_cases(build_dir, "twin_gemm_cases",
                          {"twin_gemm": gemm_args, "twin_bgemm": gemm_args, "twin_bgemm_available": [],
                           "twin_bgemm_amx": [I]})
    blas = ctypes.CDLL(os.path.join(scipy_openblas32.get_lib_dir(), f"lib{scipy_openblas32.get_library()}.so"))
    blas.scipy_openblas_set_num_threads(1)
    sgemm = blas.scipy_cblas_sgemm
    sgemm.argtypes = [I, I, I, I, I, I, ctypes.c_float, V, I, V, I, ctypes.c_float, V, I]

    print(f"numpy sgemm {'x'.join(map(str, SGEMM_SHAPE))} on {os.cpu_count()} cores: "
          f"{numpy_sgemm_gflops():.0f} GFLOP/s")
    print(f"{'shape':>16s} {'ours GFLOP/s':>13s} {'OpenBLAS 1 thread':>18s} {'ratio':>6s}")
    rng = np.random.default_rng(0)
    for shape in args.shapes:
        case = Case(shape, rng)
        ours = case.gflops(lambda r: lib.twin_gemm(*case.args(case.a, case.b), 0, r), args)
        theirs = case.openblas_gflops(sgemm, args)
        print(f"{shape:>16s} {ours:13.1f} {theirs:18.1f} {ours / theirs:6.2f}", flush=True)
    if args.bf16_shapes:
        bf16_table(lib, sgemm, args)


class Case:
    """One shape's random fp32 operands and C, and the calls that time products on them."""

    def __init__(self, shape, rng):
        self.m, self.n, self.k, self.ta, self.tb = parse(shape)
        m, n, k = self.m, self.n, self.k
        self.a = rng.standard_normal((k, m) if self.ta else (m, k), dtype=np.float32)
        self.b = rng.standard_normal((n, k) if self.tb else (k, n), dtype=np.float32)
        self.c = np.zeros((m, n), np.float32)
        self.flops = 2.0 * m * n * k

    def args(self, a, b):
        """(transA, transB, m, n, k, A, lda, B, ldb, C, ldc) for operands a and b of this shape."""
        return (self.ta, self.tb, self.m, self.n, self.k, V(a.ctypes.data), a.shape[1], V(b.ctypes.data),
                b.shape[1], V(self.c.ctypes.data), self.n)

    def gflops(self, call, args):
        return best_seconds(call, self.flops, args.seconds, args.trials)

    def openblas_gflops(self, sgemm, args):
        ta, tb, m, n, k, pa, lda, pb, ldb, pc, ldc = self.args(self.a, self.b)

        def openblas(r):
            for _ in range(r):
                sgemm(ROW_MAJOR, TRANS if ta else NO_TRANS, TRANS if tb else NO_TRANS, m, n, k, 1.0, pa, lda, pb, ldb,
                      0.0, pc, ldc)

        return self.gflops(openblas, args)


def bf16_table(lib, sgemm, args):
    """The bf16 GEMM on AMX and on VDPBF16PS (each where the machine has it) and OpenBLAS's fp32
    sgemm, one thread each."""
    if not lib.twin_bgemm_available():
        print("bf16: this build has no twin bf16 GEMM (no AVX512-BF16): bf16 Matmuls widen to fp32")
        return
    before = lib.twin_bgemm_amx(-1)
    print(f"\n{'bf16 shape':>16s} {'AMX GFLOP/s':>12s} {'VDPBF16PS':>10s} {'OpenBLAS fp32':>14s}")
    rng = np.random.default_rng(1)
    for shape in args.bf16_shapes:
        case = Case(shape, rng)
        a, b = bf16_rne(case.a), bf16_rne(case.b)
        cells = []
        for want in (1, 0):  # AMX, then VDPBF16PS: the table's columns
            if lib.twin_bgemm_amx(want) != want:
                cells.append("n/a")
                continue
            cells.append(f"{case.gflops(lambda r: lib.twin_bgemm(*case.args(a, b), 0, r), args):.1f}")
        fp32 = case.openblas_gflops(sgemm, args)
        print(f"{shape:>16s} {cells[0]:>12s} {cells[1]:>10s} {fp32:14.1f}", flush=True)
    lib.twin_bgemm_amx(before)


if __name__ == "__main__":
    main()
