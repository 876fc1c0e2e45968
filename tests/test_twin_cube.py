"""Tests of the twin's low-level cube API (tests/twin/twin_cube_cases.cpp): a matmul that drives
the cube itself, A and B copied into L1 as NZ, loaded into L0A / L0B by fractals, multiplied by
Mmad into L0C and written out by Fixpipe, against numpy, for every type pair Atlas A2 multiplies
and for sizes that are not multiples of the fractals; the ND -> NZ layout itself; and a failing
case for each rule the twin enforces."""
import ctypes

import numpy as np
import pytest
from twin_cases import P, bf16_rne, build_cases

V, I, U = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32
SIGNATURES = {
    "twin_cube_matmul": [I, U, U, U, V, V, V, I, I, I],
    "twin_cube_nd2nz": [V, U, U, U, U, V, U],
    "twin_cube_bad": [I, V],
    "twin_cube_static": [U, U, U, V, V, V, I, I],
    "twin_cube_transposed": [I, U, U, U, V, V, V, V, I],
    "twin_ascendc_assert": [I],
}


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_cases(tmp_path_factory.mktemp("twin_cube_cases"), "twin_cube_cases", SIGNATURES)


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    monkeypatch.setenv("MS_OPS_TWIN_STRICT", "1")


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


# dtype code of twin_cube_matmul: (operand numpy type, output kind)
OPERANDS = {0: "f16", 1: "bf16", 2: "f32", 3: "i8", 4: "f16", 5: "bf16"}


def operands(code, m, k, n, rng):
    """(a, b as passed, a and b as float64 values) for the kernel's operand type."""
    kind = OPERANDS[code]
    if kind == "i8":
        a = rng.integers(-128, 128, (m, k)).astype(np.int8)
        b = rng.integers(-128, 128, (k, n)).astype(np.int8)
        return a, b, a.astype(np.float64), b.astype(np.float64)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    if kind == "f16":
        a, b = a.astype(np.float16), b.astype(np.float16)
        return a, b, a.astype(np.float64), b.astype(np.float64)
    if kind == "bf16":
        a, b = bf16_rne(a), bf16_rne(b)
        return a, b, bf16_to_f32(a).astype(np.float64), bf16_to_f32(b).astype(np.float64)
    return a, b, a.astype(np.float64), b.astype(np.float64)


@pytest.mark.parametrize("code", [0, 1, 2, 3, 4, 5])
@pytest.mark.parametrize("m,k,n", [(32, 32, 32), (20, 40, 24), (1, 7, 3), (48, 96, 80)])
@pytest.mark.parametrize("b_transposed", [0, 1])
def test_matmul_through_l1_l0_and_fixpipe(lib, code, m, k, n, b_transposed):
    if not b_transposed and OPERANDS[code] not in ("f16", "bf16"):
        pytest.skip("LoadData transposes 16-bit fractals only")
    rng = np.random.default_rng(code * 1000 + m + k + n)
    a, b, a64, b64 = operands(code, m, k, n, rng)
    want = a64 @ b64
    b_in = np.ascontiguousarray(b.T) if b_transposed else b
    out_type = {0: np.float32, 1: np.float32, 2: np.float32, 3: np.int32, 4: np.float16, 5: np.uint16}[code]
    c = np.full((m, n), 7, out_type)
    assert lib.twin_cube_matmul(code, m, k, n, P(np.ascontiguousarray(a)), P(b_in), P(c), b_transposed, 0, 0) == 0
    if code == 3:
        np.testing.assert_array_equal(c, want.astype(np.int32))
        return
    got = bf16_to_f32(c) if code == 5 else c.astype(np.float64)
    # fp32 accumulation of exact products; a half / bf16 output adds its own rounding.
    tol = {0: 1e-5, 1: 1e-5, 2: 1e-5, 4: 1e-3, 5: 8e-3}[code]
    scale = np.abs(a64) @ np.abs(b64) + 1e-30
    assert np.max(np.abs(got - want) / scale) < tol


def test_mmad_accumulates_and_fixpipe_applies_relu(lib):
    rng = np.random.default_rng(3)
    m, k, n = 20, 40, 24
    a, b, a64, b64 = operands(0, m, k, n, rng)
    c = np.zeros((m, n), np.float32)
    assert lib.twin_cube_matmul(0, m, k, n, P(a), P(b), P(c), 0, 1, 1) == 0
    want = np.maximum(2 * (a64 @ b64), 0)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    assert (c == 0).sum() > 0 and (c > 0).sum() > 0


def test_nd2nz_layout(lib):
    """rows x cols halves into L1: 16-element column blocks c0Stride rows apart, rows nStride blocks
    apart, the last block of each row zero-filled; the rest of the buffer untouched."""
    rows, cols, c0_stride, n_stride = 5, 20, 12, 2
    x = (np.arange(rows * cols) + 1).astype(np.float16).reshape(rows, cols)
    nbytes = 2048
    z = np.zeros(nbytes // 2, np.float16)
    assert lib.twin_cube_nd2nz(P(x), rows, cols, c0_stride, n_stride, P(z), nbytes) == 0
    want = np.full(nbytes // 2, -2, np.float16)
    for r in range(rows):
        for blk in range(2):
            at = (r * n_stride + blk * c0_stride) * 16
            seg = x[r, blk * 16:(blk + 1) * 16]
            want[at:at + 16] = 0
            want[at:at + len(seg)] = seg
    np.testing.assert_array_equal(z.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("which,call,message", [
    (0, "LoadData", "ifTranspose transposes 16-bit fractals only"),
    (1, "Mmad", "fm is in L1, not in L0A"),
    (2, "InitBuffer", "exceeds the 65536-byte L0A"),
    (3, "Adds", "the vector unit reaches only UB, not L1"),
    (4, "Mmad", "pipe race (read-after-write): Mmad on M reads L0A bytes [0, 32) (TQue at L0A offset 0, byte 0) "
                "that LoadData on MTE1 wrote"),
    (5, "Fixpipe", "the column-major destination is Ascend 950's"),
    (6, "LoadData", "dst is in L1, not in L0A or L0B"),
    (7, "Fixpipe", "does not convert the source's type to the destination's"),
])
def test_cube_rules(lib, capfd, which, call, message):
    c = np.zeros(256, np.float32)
    assert lib.twin_cube_bad(which, P(c)) == 1
    err = capfd.readouterr().err
    assert f"ms_ops twin_cube_bad: block 0: {call}: " in err and message in err, err


def test_cube_rules_pass_when_kept(lib, capfd):
    c = np.zeros(256, np.float32)
    assert lib.twin_cube_bad(-1, P(c)) == 0


def test_tensors_at_their_own_addresses(lib, capfd):
    """LocalTensor(pos, addr, size) without a TPipe, pipes ordered by SetFlag / WaitFlag; without the
    MTE1 -> M flag, Mmad's read of L0A races with LoadData's write."""
    rng = np.random.default_rng(5)
    m, k, n = 24, 48, 40
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    assert lib.twin_cube_static(m, k, n, P(a), P(np.ascontiguousarray(b.T)), P(c), 1, 0) == 0
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)
    # NZ: column blocks of 16 columns, each `stride` 32-byte blocks (8 floats) long, rows 16 apart.
    stride = 2 * m + 6
    nz = np.full((-(-n // 16)) * stride * 8, -7, np.float32)
    assert lib.twin_cube_static(m, k, n, P(a), P(np.ascontiguousarray(b.T)), P(nz), 1, stride) == 0
    for j in range(n):
        got = nz[(j // 16) * stride * 8 + np.arange(m) * 16 + j % 16]
        np.testing.assert_allclose(got, want[:, j], rtol=1e-5, atol=1e-4)
    assert (nz == -7).sum() == nz.size - m * n
    assert lib.twin_cube_static(m, k, n, P(a), P(np.ascontiguousarray(b.T)), P(c), 0, 0) == 1
    err = capfd.readouterr().err
    assert "Mmad: pipe race (read-after-write): Mmad on M reads L0A bytes [0, 32) (LocalTensor at L0A offset 0" in err


@pytest.mark.parametrize("dtype", [0, 1])
@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("m,k,n", [(30, 70, 40), (16, 32, 32), (5, 9, 3)])
def test_transposing_loads_and_the_bias_table(lib, dtype, mode, m, k, n):
    """LoadDataWithTranspose (int8: B [k, n]; fp32: Aᵀ and, with kDirectionAlign, k paired to 16),
    the bias through L1 into the bias table, Mmad's four ways to start C, Fixpipe into L1."""
    rng = np.random.default_rng(100 * dtype + 10 * mode + m)
    if dtype == 0:
        a = rng.integers(-9, 10, (m, k)).astype(np.int8)
        b = rng.integers(-9, 10, (k, n)).astype(np.int8)
        bias = rng.integers(-50, 50, n).astype(np.int32)
        a_in, b_in, out = a, b, np.zeros(1, np.int32)
    else:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        bias = rng.standard_normal(n).astype(np.float32)
        a_in, b_in, out = np.ascontiguousarray(a.T), np.ascontiguousarray(b.T), np.zeros(1, np.float32)
    prod = a.astype(np.float64) @ b.astype(np.float64)
    want = {0: prod + bias, 1: prod + bias, 2: prod, 3: 2 * prod}[mode]
    padded = np.zeros(-(-m * n // 8) * 8, out.dtype)
    assert lib.twin_cube_transposed(dtype, m, k, n, P(a_in), P(b_in), P(bias), P(padded), mode) == 0
    out = padded[:m * n].reshape(m, n)
    if dtype == 0:
        np.testing.assert_array_equal(out, want.astype(np.int32))
    else:
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


def test_ascendc_assert_logs_and_fails_the_launch(lib, capfd):
    assert lib.twin_ascendc_assert(1) == 0
    assert lib.twin_ascendc_assert(0) == 1
    err = capfd.readouterr().err
    assert "[ERROR] ok is 0" in err
    assert "ms_ops twin_ascendc_assert: block 0: ASCENDC_ASSERT: assertion failed: ok != 0" in err
