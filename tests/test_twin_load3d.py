"""Tests of the twin's Load3Dv2 (image to column from L1 into L0A / L0B; tests/twin/twin_load3d_cases.cpp):
matrices moved from NZ in L1 into Mmad's layouts, A as given or transposed by the instruction, B always
transposed into L0B, windows of rows and columns (mStartPt / kStartPt), and several products written by
one Fixpipe (ndNum), against numpy in half, bf16 and fp32 on sizes off the fractal grid; and a failing
case for each rule the twin enforces."""
import ctypes

import numpy as np
import pytest
from twin_cases import P, bf16_rne, build_cases

V, I, U = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32
SIGNATURES = {
    "twin_load3d_matmul": [I, U, U, U, U, U, U, U, I, I, V, V, V],
    "twin_load3d_bad": [I],
}


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_cases(tmp_path_factory.mktemp("twin_load3d_cases"), "twin_load3d_cases", SIGNATURES)


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    monkeypatch.setenv("MS_OPS_TWIN_STRICT", "1")


def operand(shape, dtype, rng):
    """(array as passed, its values as float64)."""
    x = rng.standard_normal(shape).astype(np.float32)
    if dtype == 0:
        x = x.astype(np.float16)
        return x, x.astype(np.float64)
    if dtype == 1:
        bits = bf16_rne(x)
        return bits, (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return x, x.astype(np.float64)


@pytest.mark.parametrize("dtype", [0, 1, 2])
@pytest.mark.parametrize("a_t", [0, 1])
@pytest.mark.parametrize("m,k,n,window", [(30, 40, 70, False), (16, 16, 16, False), (5, 9, 3, False),
                                          (48, 24, 40, True)])
def test_matmul_through_load3dv2(lib, dtype, a_t, m, k, n, window):
    rng = np.random.default_rng(100 * dtype + 10 * a_t + m + k + n)
    batches = 2
    a, a64 = operand((batches, m, k), dtype, rng)
    b, b64 = operand((batches, k, n), dtype, rng)
    # The window: rows from 16 of A, columns from 16 of B.
    r0, c0 = (16, 16) if window else (0, 0)
    mm, nn = m - r0, n - c0
    want = a64[:, r0:, :] @ b64[:, :, c0:]
    a_in = np.ascontiguousarray(np.swapaxes(a, 1, 2)) if a_t else a
    c = np.full((batches, mm, nn), 7, np.float32)
    assert lib.twin_load3d_matmul(dtype, m, k, n, mm, nn, r0, c0, a_t, batches, P(a_in), P(b), P(c)) == 0
    scale = np.abs(a64[:, r0:, :]) @ np.abs(b64[:, :, c0:]) + 1e-30
    assert np.max(np.abs(c - want) / scale) < 1e-5


@pytest.mark.parametrize("which,message", [
    (0, "a convolution's image to column is not modelled"),
    (1, "kStartPt 8 must be a multiple of 16"),
    (2, "out of range"),
    (3, "fMatrixCtrl must be false"),
    (4, "L1 -> L0B does not take 8-bit types"),
    (5, "repeatTime 2: Load3Dv2's repeat mode is not modelled"),
    (6, "keep IS_RESER_LOAD3D_DEFAULT_CONFIG"),
    (7, "dst is in L1, not in L0A or L0B"),
])
def test_load3d_rules(lib, capfd, which, message):
    assert lib.twin_load3d_bad(which) == 1
    err = capfd.readouterr().err
    assert "ms_ops twin_load3d_bad: block 0: " in err and message in err, err


def test_load3d_rules_pass_when_kept(lib):
    assert lib.twin_load3d_bad(-1) == 0
