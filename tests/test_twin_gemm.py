"""The twin's fp32 GEMM (aicore/twin/twin_gemm.cpp, behind ms_ops::twin::Sgemm for products with
few rows of C or a shallow k) and its bf16 GEMM (aicore/twin/twin_bgemm.cpp, behind bf16 Matmuls where the CPU has
AVX512-BF16): values against a float64 product for every transpose, beta and awkward shape, and
their chain semantics bitwise: an element's bits do not depend on where or how it was computed."""
import ctypes
import threading

import numpy as np
import pytest
from twin_cases import bf16_rne, build_cases

V, I = ctypes.c_void_p, ctypes.c_int
U = 2.0 ** -24  # fp32 unit roundoff


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_cases(tmp_path_factory.mktemp("twin_gemm"), "twin_gemm_cases",
                       {"twin_gemm": [I, I, I, I, I, V, I, V, I, V, I, I, I],
                        "twin_bgemm": [I, I, I, I, I, V, I, V, I, V, I, I, I], "twin_bgemm_available": [],
                        "twin_bgemm_amx": [I]})


def ptr(x):
    return V(x.ctypes.data)


def ld(x):
    """Row stride in elements of a 2-D view whose rows are contiguous."""
    assert x.dtype in (np.float32, np.uint16) and x.strides[1] == x.itemsize
    return x.strides[0] // x.itemsize


def gemm(lib, a, b, c, trans_a, trans_b, accumulate):
    """c (a view) = op(a) op(b) (+ c): a is m x k, or k x m when trans_a; b is k x n, or n x k.
    float32 a and b go to the fp32 GEMM, bf16 bit patterns (uint16) to the bf16 one."""
    m, k = a.shape[::-1] if trans_a else a.shape
    n = b.shape[0] if trans_b else b.shape[1]
    assert c.shape == (m, n) and (b.shape[1] if trans_b else b.shape[0]) == k
    fn = lib.twin_bgemm if a.dtype == np.uint16 else lib.twin_gemm
    assert fn(trans_a, trans_b, m, n, k, ptr(a), ld(a), ptr(b), ld(b), ptr(c), ld(c), accumulate, 1) == 0


def widen(x):
    """float64 values of bf16 bit patterns."""
    return (x.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


@pytest.fixture(params=["vdpbf16ps", "amx"])
def blib(lib, request):
    """The bf16 GEMM on each instruction this machine has (AMX tiles, and VDPBF16PS, which an AMX
    machine has too), chosen for the test and restored after it."""
    if not lib.twin_bgemm_available():
        pytest.skip("this build's CPU has no AVX512-BF16: bf16 Matmuls widen to fp32 and use Sgemm")
    before = lib.twin_bgemm_amx(-1)
    want = int(request.param == "amx")
    if lib.twin_bgemm_amx(want) != want:
        lib.twin_bgemm_amx(before)
        pytest.skip("this build's CPU has no AMX-BF16, or Linux does not grant this process its tiles")
    yield lib
    lib.twin_bgemm_amx(before)


def padded(rng, rows, cols, pad):
    """A rows x cols view of a wider random matrix (leading dimension cols + pad)."""
    return rng.standard_normal((rows, cols + pad), dtype=np.float32)[:, :cols]


SHAPES = [(1, 1, 1), (5, 7, 6), (6, 16, 15), (7, 17, 16), (15, 5, 17), (16, 33, 7), (17, 6, 33),
          (33, 15, 127), (127, 129, 5), (129, 1, 600), (600, 127, 17), (1, 600, 129), (31, 600, 600),
          (530, 500, 300), (70, 490, 40)]  # blocks of rows and of B's columns, B's block copied


def check_values(lib, rng, shapes, trans_a, trans_b, operand, value, extra_roundings):
    """Every shape, with and without accumulate: C within the bound of chains of k + k / 256 +
    extra_roundings roundings of partial sums bounded by |op(A)||op(B)| + |C0|, and the columns
    past C's row end untouched. operand(x) makes a stored operand from float32, value(x) its float64
    values."""
    for m, n, k in shapes:
        for accumulate in (0, 1):
            a = operand(padded(rng, *((k, m) if trans_a else (m, k)), 3))
            b = operand(padded(rng, *((n, k) if trans_b else (k, n)), 5))
            full = rng.standard_normal((m, n + 2), dtype=np.float32)
            before = full.copy()
            c = full[:, :n]
            oa, ob = value(a.T if trans_a else a), value(b.T if trans_b else b)
            c0 = c.astype(np.float64) if accumulate else 0.0
            want = oa @ ob + c0
            r = k + k // 256 + extra_roundings
            bound = r * U * (np.abs(oa) @ np.abs(ob) + np.abs(c0)) * (1 + 2 * r * U)
            gemm(lib, a, b, c, trans_a, trans_b, accumulate)
            err = np.abs(c.astype(np.float64) - want)
            assert (err <= bound).all(), (m, n, k, accumulate, float((err / np.maximum(bound, 1e-300)).max()))
            np.testing.assert_array_equal(full[:, n:], before[:, n:])


@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_values(lib, trans_a, trans_b):
    # Chains of fused multiply-adds, one per block of 256 k, each added to C.
    check_values(lib, np.random.default_rng(trans_a * 2 + trans_b), SHAPES, trans_a, trans_b,
                 lambda x: x, lambda x: x.astype(np.float64), 1)


def test_beta0_ignores_c(lib):
    """beta 0 does not read C: NaN there does not reach the result."""
    rng = np.random.default_rng(1)
    for m in (4, 40):
        a, b = padded(rng, m, 9, 0), padded(rng, 9, 20, 0)
        c = np.full((m, 20), np.nan, np.float32)
        gemm(lib, a, b, c, 0, 0, 0)
        np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def chain_variants(lib, a, b, c0, accumulate):
    """C = a b (+ c0) computed in every way the chain semantics says cannot change its bits, each
    as (name, result)."""
    m, k = a.shape
    n = b.shape[1]

    def run(trans=(0, 0)):
        c = c0.copy()
        x = np.ascontiguousarray(a.T) if trans[0] else a
        y = np.ascontiguousarray(b.T) if trans[1] else b
        gemm(lib, x, y, c, *trans, accumulate)
        return c

    out = [("stored as given", run())]
    for trans in ((0, 1), (1, 0), (1, 1)):
        out.append((f"transposes {trans}", run(trans)))
    if k > 256:
        split = c0.copy()
        k1 = 256  # a k block boundary
        gemm(lib, a[:, :k1], b[:k1], split, 0, 0, accumulate)
        gemm(lib, a[:, k1:], b[k1:], split, 0, 0, 1)
        out.append(("k split in two calls", split))
    # Blocks at an offset (rows 11..30, columns 0..6 and 7..), written into a C of their own and
    # pasted back.
    blocks = c0.copy()
    for r0, r1, c0_, c1 in ((0, 11, 0, n), (11, 31, 0, 7), (11, 31, 7, n), (31, m, 0, n)):
        part = c0[r0:r1, c0_:c1].copy()
        gemm(lib, a[r0:r1], b[:, c0_:c1], part, 0, 0, accumulate)
        blocks[r0:r1, c0_:c1] = part
    out.append(("row and column blocks", blocks))
    rows = c0.copy()
    for r in range(m):
        gemm(lib, a[r:r + 1], b, rows[r:r + 1], 0, 0, accumulate)
    out.append(("one row per call", rows))
    return out


@pytest.mark.parametrize("accumulate", [0, 1])
@pytest.mark.parametrize("k", [600, 16])
@pytest.mark.parametrize("m,n", [(45, 301), (130, 501)])
def test_chain_semantics_bitwise(lib, accumulate, k, m, n):
    # k = 600: several k blocks. k = 16: the shallow path (B not transposed, any rows) against the
    # register tiles of the transposed-B variants. Several column blocks, edge tiles in m and n;
    # 130 x 501: 32-lane panels and B's block copied (64 rows or more) and split at 480 columns,
    # against the single rows and narrow blocks of the other variants.
    rng = np.random.default_rng(7 + accumulate + k)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c0 = rng.standard_normal((m, n), dtype=np.float32)
    variants = chain_variants(lib, a, b, c0, accumulate)
    want = variants[0][1]
    for name, got in variants[1:]:
        assert np.array_equal(got.view(np.int32), want.view(np.int32)), name
    if not accumulate:
        # k = 1, beta 0: one rounding of the exact (float64) product.
        c = c0.copy()
        gemm(lib, a[:, :1], b[:1], c, 0, 0, 0)
        assert np.array_equal(c, (a[:, :1].astype(np.float64) * b[:1].astype(np.float64)).astype(np.float32))


@pytest.fixture(scope="module")
def avx2_lib(tmp_path_factory):
    """The same cases built without AVX-512 (what an AVX2 CPU runs: 8-lane vectors, the 6 x 2 row tiles)."""
    return build_cases(tmp_path_factory.mktemp("twin_gemm_avx2"), "twin_gemm_cases",
                       {"twin_gemm": [I, I, I, I, I, V, I, V, I, V, I, I, I]}, extra_flags=["-mno-avx512f"])


@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_avx2_build_gives_the_same_bits(lib, avx2_lib, trans_a, trans_b):
    # The chain semantics holds across instruction sets: the AVX2 build's register tiles and
    # fused multiply-adds give every element the bits of this machine's build (the same build where
    # the machine itself has no AVX-512), over row and column edges, k blocks and both paths.
    rng = np.random.default_rng(11 + 2 * trans_a + trans_b)
    for m, n, k in [(7, 17, 16), (33, 15, 127), (128, 512, 300), (45, 301, 600), (130, 70, 16)]:
        for accumulate in (0, 1):
            a = padded(rng, *((k, m) if trans_a else (m, k)), 3)
            b = padded(rng, *((n, k) if trans_b else (k, n)), 5)
            c0 = rng.standard_normal((m, n), dtype=np.float32)
            got, want = c0.copy(), c0.copy()
            gemm(avx2_lib, a, b, got, trans_a, trans_b, accumulate)
            gemm(lib, a, b, want, trans_a, trans_b, accumulate)
            assert np.array_equal(got.view(np.int32), want.view(np.int32)), (m, n, k, accumulate)


def test_concurrent_calls(lib):
    """Many threads at once (as a launch's blocks call it) get the bits of a lone call."""
    rng = np.random.default_rng(3)
    cases = []
    for m, n, k in ((8, 300, 290), (30, 90, 300), (50, 270, 260), (20, 40, 700)):
        a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
        alone = np.empty((m, n), np.float32)
        gemm(lib, a, b, alone, 0, 0, 0)
        cases.append((a, b, alone))
    results = {}

    def work(t):
        a, b, _ = cases[t % len(cases)]
        for i in range(20):
            c = np.empty((a.shape[0], b.shape[1]), np.float32)
            gemm(lib, a, b, c, 0, 0, 0)
            results[(t, i)] = c

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8 * 20
    for (t, _), c in results.items():
        assert np.array_equal(c, cases[t % len(cases)][2])


@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_bf16_values(blib, trans_a, trans_b):
    """Products of bf16 values are exact in fp32: the error is that of the fp32 additions, two per
    pair of k in the hardware's order."""
    check_values(blib, np.random.default_rng(10 + trans_a * 2 + trans_b),
                 SHAPES + [(8, 32, 2), (9, 33, 3), (130, 515, 257)], trans_a, trans_b, bf16_rne, widen, 2)


def test_bf16_beta0_ignores_c(blib):
    rng = np.random.default_rng(11)
    a, b = bf16_rne(padded(rng, 40, 9, 0)), bf16_rne(padded(rng, 9, 20, 0))
    c = np.full((40, 20), np.nan, np.float32)
    gemm(blib, a, b, c, 0, 0, 0)
    np.testing.assert_allclose(c, widen(a) @ widen(b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("accumulate", [0, 1])
def test_bf16_chain_semantics_bitwise(blib, accumulate):
    """Row panels of 8, column panels of 32 and packing blocks of 128 rows / 512 columns all cut
    this shape; none of it may change an element's bits."""
    rng = np.random.default_rng(12 + accumulate)
    m, n, k = 141, 545, 600
    a = bf16_rne(rng.standard_normal((m, k), dtype=np.float32))
    b = bf16_rne(rng.standard_normal((k, n), dtype=np.float32))
    c0 = rng.standard_normal((m, n), dtype=np.float32)
    variants = chain_variants(blib, a, b, c0, accumulate)
    want = variants[0][1]
    for name, got in variants[1:]:
        assert np.array_equal(got.view(np.int32), want.view(np.int32)), name
