"""Tests of the CPU twin of the AscendC API (aicore/twin/): the kernels of tests/twin/twin_cases.cpp
check values against numpy, and that every rule the twin enforces fires with a message naming
kernel, block and call, after which the library keeps working."""
import ctypes
import os
import re
import threading
import time

import numpy as np
import pytest
from twin_cases import P, bf16_rne, build_cases

UB_BYTES = 192 * 1024  # ms_ops::twin::kUbBytes

V, I, F, U = ctypes.c_void_p, ctypes.c_int, ctypes.c_float, ctypes.c_uint32
SIGNATURES = {
    "twin_workspace": [U, V],
    "twin_vec_f32": [I, I, V, V, V, U, F],
    "twin_vec_f16": [I, I, V, V, V, U, F],
    "twin_reduce_f32": [V, V, V, U],
    "twin_reduce_f16": [V, V, V, U],
    "twin_cast_from_f32": [I, I, V, V, U],
    "twin_cast_to_f32": [I, I, V, V, U],
    "twin_cast_u8_to_f16": [I, V, V, U],
    "twin_cmp_select": [I, V, V, F, V, V, V, V, U],
    "twin_copy_pad": [V, V, V, U, U, U, U, U, U, I, F, U, I],
    "twin_strided_copy": [V, V, U, U, U, U],
    "twin_block_ids": [V, U],
    "twin_violation": [I, V, V],
    "twin_race": [I, V, V],
    "twin_gm_check": [I, V, V],
    "twin_gm_mixed": [I, V],
    "twin_matmul_shared": [I, I, V, V, V, I, U],
    "twin_spans_overlap": [V, V],
    "twin_matmul_atomic_f16": [V, V, V, I],
    "twin_matmul": [I, I, I, I, I, V, V, V, V, I, I, I, U, U, I],
    "twin_matmul_org_kc": [V, V, V, I, I, I, I, I],
    "twin_matmul_local": [I, V, V, V, V, I, ctypes.c_float],
    "twin_tiling": [ctypes.c_uint64, V, V],
    "twin_tiling_default": [V, V],
    "twin_sync_sum": [I, V, V, U, U, U],
    "twin_sync_soft": [V, V, V, U, U, U, ctypes.c_int32],
    "twin_sync_fail": [I, V, U, U, U, U],
    "twin_sync_plain": [U],
}

# RoundMode values
NONE, RINT, FLOOR, CEIL, ROUND, TRUNC, ODD = range(7)



@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_cases(tmp_path_factory.mktemp("twin_cases"), "twin_cases", SIGNATURES)


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    monkeypatch.setenv("MS_OPS_TWIN_STRICT", "1")



def block_ids_ok(lib, blocks=5):
    out = np.full(8 * blocks, -1, np.int32)
    assert lib.twin_block_ids(P(out), blocks) == 0
    rows = out.reshape(blocks, 8)
    return np.array_equal(rows[:, 0], np.arange(blocks)) and np.all(rows[:, 1:] == blocks)


# ---- launch ----

def test_multi_block_launch(lib):
    assert block_ids_ok(lib, 7)
    assert block_ids_ok(lib, 1)


def test_tiling_struct_and_key(lib):
    tiling = np.zeros(2, np.int32)
    tiling[0] = 42
    tiling[1:] = np.float32([2.5]).view(np.int32)
    for key, expect in [(7, [1.0, 0.0]), (8, [0.0, 1.0])]:
        out = np.zeros(5, np.float32)
        assert lib.twin_tiling(key, P(tiling), P(out)) == 0
        assert list(out) == [42.0, 2.5, *expect, 1.0]


def test_tiling_default_and_nested_copy(lib):
    # NestedTiling {int64 id; {int32 n; float scale} inner}: 16 bytes, no padding.
    tiling = np.zeros(1, dtype=[("id", "<i8"), ("n", "<i4"), ("scale", "<f4")])
    tiling[0] = (7, -3, 1.5)
    out = np.zeros(6, np.float32)
    assert lib.twin_tiling_default(P(tiling), P(out)) == 0
    assert list(out) == [7.0, -3.0, 1.5, 7.0, -1.5, -4.5]


# ---- vector ops ----

BINARY = [np.add, np.subtract, np.multiply, np.divide, np.maximum, np.minimum]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_binary_ops(lib, dtype):
    rng = np.random.default_rng(0)
    n = 999
    x = rng.standard_normal(n).astype(dtype)
    y = (rng.random(n) + 0.5).astype(dtype)
    fn = lib.twin_vec_f32 if dtype == np.float32 else lib.twin_vec_f16
    for op, ref in enumerate(BINARY):
        z = np.zeros(n, dtype)
        assert fn(0, op, P(x), P(y), P(z), n, 0.0) == 0
        np.testing.assert_array_equal(z, ref(x, y).astype(dtype), err_msg=ref.__name__)


def ulp_error(got, ref64, dtype):
    ref = ref64.astype(dtype)
    return np.abs(got.astype(np.float64) - ref64) / np.spacing(np.abs(ref)).astype(np.float64)


def test_unary_ops_f32(lib):
    rng = np.random.default_rng(1)
    n = 12000
    x = rng.uniform(-103.0, 88.7, n).astype(np.float32)
    x[:12] = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 88.72, 89.0, -87.5, -100.0, 1e-30]
    z = np.zeros(n, np.float32)
    assert lib.twin_vec_f32(1, 0, P(x), P(x), P(z), n, 0.0) == 0
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64))
    finite = (ref < np.finfo(np.float32).max) & (ref > np.finfo(np.float32).tiny)
    assert ulp_error(z[finite], ref[finite], np.float32).max() <= 2.0
    assert z[4] == np.inf and z[5] == 0.0 and np.isnan(z[6]) and z[8] == np.inf
    sub = ref <= np.finfo(np.float32).tiny
    np.testing.assert_allclose(z[sub], ref[sub], rtol=0, atol=2 * 1.4e-45)

    pos = np.abs(np.nan_to_num(x, posinf=1.0, neginf=1.0)) + np.float32(1e-3)
    assert lib.twin_vec_f32(1, 1, P(pos), P(pos), P(z), n, 0.0) == 0
    assert ulp_error(z, np.log(pos.astype(np.float64)), np.float32).max() <= 1.0
    xf = np.nan_to_num(x, nan=-2.0)  # what Relu does with NaN is the hardware's business
    for op, ref in [(2, np.abs(xf)), (3, np.maximum(xf, 0)), (4, np.sqrt(pos))]:
        src = pos if op == 4 else xf
        assert lib.twin_vec_f32(1, op, P(src), P(src), P(z), n, 0.0) == 0
        np.testing.assert_array_equal(z, ref.astype(np.float32))


def test_exp_of_masked_scores_mixed_with_visible_ones(lib):
    # Every vector holds masked scores (flash attention's -3.4e38, -inf, anything <= -104, whose
    # exponential is +0) beside ordinary ones, and some vectors a result in the subnormal range:
    # the twin takes the masked lanes as +0 without computing them, which must change no result.
    rng = np.random.default_rng(11)
    n = 4096
    x = rng.uniform(-30.0, 30.0, n).astype(np.float32)
    masked = np.float32([-3.40282347e38, -np.inf, -104.0, -1e30, -150.0])
    x[::3] = masked[np.arange(x[::3].size) % masked.size]
    x[1000:1016:5] = np.float32([-95.0, -103.5, -88.0, -87.5])  # subnormal results
    z = np.zeros(n, np.float32)
    assert lib.twin_vec_f32(1, 0, P(x), P(x), P(z), n, 0.0) == 0
    with np.errstate(under="ignore"):
        ref = np.exp(x.astype(np.float64))
    low = x <= -104.0
    assert (z[low] == 0.0).all() and not np.signbit(z[low]).any()
    normal = ~low & (ref > np.finfo(np.float32).tiny)
    assert ulp_error(z[normal], ref[normal], np.float32).max() <= 2.0
    sub = ~low & ~normal
    assert sub.sum() == 4 and (z[sub] > 0).all()
    np.testing.assert_allclose(z[sub], ref[sub], rtol=0, atol=2 * 1.4e-45)


def test_unary_ops_f16(lib):
    rng = np.random.default_rng(2)
    n = 1000
    x = rng.uniform(-8, 8, n).astype(np.float16)
    z = np.zeros(n, np.float16)
    assert lib.twin_vec_f16(1, 0, P(x), P(x), P(z), n, 0.0) == 0
    assert ulp_error(z, np.exp(x.astype(np.float64)), np.float16).max() <= 0.51
    assert lib.twin_vec_f16(1, 3, P(x), P(x), P(z), n, 0.0) == 0
    np.testing.assert_array_equal(z, np.maximum(x, 0))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_scalar_ops_and_duplicate(lib, dtype):
    rng = np.random.default_rng(3)
    n = 517
    x = rng.standard_normal(n).astype(dtype)
    s = 0.75
    fn = lib.twin_vec_f32 if dtype == np.float32 else lib.twin_vec_f16
    k = dtype(s)
    for op, ref in enumerate([x + k, x * k, np.maximum(x, k), np.minimum(x, k), np.full(n, k)]):
        z = np.zeros(n, dtype)
        assert fn(2, op, P(x), P(x), P(z), n, s) == 0
        np.testing.assert_array_equal(z, ref.astype(dtype))


# ---- reductions ----

def test_reduce_f32(lib):
    rng = np.random.default_rng(4)
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    x[[10, 500]] = 9.0  # ties: the first index wins
    x[[700, 999]] = -9.0
    vals, idx = np.zeros(3, np.float32), np.zeros(2, np.uint32)
    assert lib.twin_reduce_f32(P(x), P(vals), P(idx), n) == 0
    assert vals[0] == 9.0 and vals[1] == -9.0 and list(idx) == [10, 700]
    np.testing.assert_allclose(vals[2], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-4)


def test_reduce_f16(lib):
    rng = np.random.default_rng(5)
    n = 300
    x = rng.uniform(-1, 1, n).astype(np.float16)
    x[123] = 4.0
    x[7] = -4.0
    vals, idx = np.zeros(3, np.float16), np.zeros(2, np.uint32)
    assert lib.twin_reduce_f16(P(x), P(vals), P(idx), n) == 0
    assert vals[0] == 4.0 and vals[1] == -4.0 and list(idx) == [123, 7]
    np.testing.assert_allclose(float(vals[2]), x.astype(np.float64).sum(), rtol=2e-3, atol=2e-2)


# ---- Compare / Select ----

@pytest.mark.parametrize("mode,ref", list(enumerate([np.less, np.greater, np.equal, np.less_equal,
                                                     np.greater_equal, np.not_equal])))
def test_compare_select(lib, mode, ref):
    rng = np.random.default_rng(6)
    n = 128
    a = rng.integers(-3, 4, n).astype(np.float32)
    b = rng.integers(-3, 4, n).astype(np.float32)
    s = 1.0
    mask, smask = np.zeros(n // 8, np.uint8), np.zeros(n // 8, np.uint8)
    sel, ssel = np.zeros(n, np.float32), np.zeros(n, np.float32)
    assert lib.twin_cmp_select(mode, P(a), P(b), s, P(mask), P(sel), P(smask), P(ssel), n) == 0
    cond, scond = ref(a, b), ref(a, np.float32(s))
    np.testing.assert_array_equal(mask, np.packbits(cond, bitorder="little"))
    np.testing.assert_array_equal(smask, np.packbits(scond, bitorder="little"))
    np.testing.assert_array_equal(sel, np.where(cond, a, b))
    np.testing.assert_array_equal(ssel, np.where(scond, a, np.float32(s)))


# ---- Cast ----

def cast_from_f32(lib, dst, mode, x, out_dtype):
    out = np.zeros(x.size, out_dtype)
    assert lib.twin_cast_from_f32(dst, mode, P(x), P(out), x.size) == 0
    return out


def f32_bits(u):
    return np.asarray(u, np.uint32).view(np.float32)


def cast_inputs():
    rng = np.random.default_rng(7)
    x = np.concatenate([
        rng.standard_normal(2000).astype(np.float32) * np.float32(100),
        rng.standard_normal(500).astype(np.float32) * np.float32(1e-6),  # fp16 subnormals
        # exactly halfway between neighbouring fp16 values: even neighbour wins
        np.float32([1 + 2 ** -11, 1 + 3 * 2 ** -11, -(1 + 2 ** -11), 2048 + 1, 2048 + 3, 65520, 65519, 2 ** -25]),
        np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, 65504, 1e6, -1e6]),
        f32_bits([0x3F808000, 0x3F818000, 0x3F80FFFF, 0xBF808000, 0x7F7FFFFF, 0x7FC00001, 0x7F800001]),
    ])
    return x.astype(np.float32)


def test_cast_f32_to_f16_and_bf16_nearest_even(lib):
    x = cast_inputs()
    for mode in (NONE, RINT):
        h = cast_from_f32(lib, 0, mode, x, np.float16)
        with np.errstate(over="ignore"):
            ref = x.astype(np.float16)
        np.testing.assert_array_equal(h.view(np.uint16)[~np.isnan(x)], ref.view(np.uint16)[~np.isnan(x)])
        assert np.isnan(h[np.isnan(x)]).all()
        b = cast_from_f32(lib, 1, mode, x, np.uint16)
        np.testing.assert_array_equal(b, bf16_rne(x))
    # spot checks of the halfway cases against hand-computed results
    b = cast_from_f32(lib, 1, RINT, f32_bits([0x3F808000, 0x3F818000, 0x7F800001]), np.uint16)
    assert b[0] == 0x3F80 and b[1] == 0x3F82 and (b[2] & 0x7F80) == 0x7F80 and (b[2] & 0x7F) != 0
    h = cast_from_f32(lib, 0, RINT, np.float32([1 + 2 ** -11, 1 + 3 * 2 ** -11]), np.float16)
    assert list(h) == [1.0, 1 + 2 ** -9]


def test_cast_f32_to_bf16_with_f32_subnormals(lib):
    # Whole 16-element vectors of normal numbers, and vectors holding a float32 subnormal (which a
    # hardware conversion would flush to zero): every element rounds to nearest even.
    rng = np.random.default_rng(8)
    x = (rng.standard_normal(96) * 10).astype(np.float32)
    x[[3, 20, 37, 38, 90]] = f32_bits([0x00000001, 0x00418000, 0x807FFFFF, 0x00018000, 0x80000001])
    x[48:64] = f32_bits([0x3F808000 + i * 0x10000 for i in range(16)])  # halfway cases
    for mode in (NONE, RINT):
        np.testing.assert_array_equal(cast_from_f32(lib, 1, mode, x, np.uint16), bf16_rne(x))
    assert cast_from_f32(lib, 1, RINT, x, np.uint16)[20] == 0x0042  # halfway, odd: up


def directed_f16(x, mode):
    with np.errstate(over="ignore"):
        h = x.astype(np.float16)
    back = h.astype(np.float32)
    with np.errstate(over="ignore"):
        lo = np.where(back > x, np.nextafter(h, np.float16(-np.inf)), h)
        hi = np.where(back < x, np.nextafter(h, np.float16(np.inf)), h)
    if mode == FLOOR:
        return lo
    if mode == CEIL:
        return hi
    if mode == TRUNC:
        return np.where(x > 0, lo, hi)
    if mode == ROUND:
        mid = (lo.astype(np.float64) + hi.astype(np.float64)) / 2
        return np.where((lo != hi) & (x.astype(np.float64) == mid), np.where(x > 0, hi, lo), h)
    odd = (lo.view(np.uint16) & 1) == 1
    return np.where(lo == hi, h, np.where(odd, lo, hi))


@pytest.mark.parametrize("mode", [FLOOR, CEIL, TRUNC, ROUND, ODD])
def test_cast_f32_to_f16_directed(lib, mode):
    x = cast_inputs()
    x = x[~np.isnan(x)]
    h = cast_from_f32(lib, 0, mode, x, np.float16)
    np.testing.assert_array_equal(h.view(np.uint16), directed_f16(x, mode).view(np.uint16))


def test_cast_f32_to_int32_modes(lib):
    x = np.float32([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.7, -2.7, 0.49999997, 3.0, -3.0, 1e10, -1e10, np.nan,
                    2147483520.0, -2147483648.0])
    sat = lambda r: np.where(np.isnan(r), 0, np.clip(r, -2 ** 31, 2 ** 31 - 1)).astype(np.int64)
    away = np.sign(x.astype(np.float64)) * np.floor(np.abs(x.astype(np.float64)) + 0.5)
    refs = {NONE: np.rint(x), RINT: np.rint(x), FLOOR: np.floor(x), CEIL: np.ceil(x), TRUNC: np.trunc(x), ROUND: away}
    for mode, ref in refs.items():
        out = cast_from_f32(lib, 2, mode, x, np.int32)
        np.testing.assert_array_equal(out, sat(ref.astype(np.float64)), err_msg=f"mode {mode}")
    out = cast_from_f32(lib, 3, FLOOR, np.float32([-1.5, 2.5, 7.0]), np.float32)
    assert list(out) == [-2.0, 2.0, 7.0]


def test_cast_to_f32(lib, capfd):
    rng = np.random.default_rng(8)
    h = rng.standard_normal(777).astype(np.float16)
    out = np.zeros(h.size, np.float32)
    assert lib.twin_cast_to_f32(0, NONE, P(h), P(out), h.size) == 0
    np.testing.assert_array_equal(out, h.astype(np.float32))
    b = rng.integers(0, 2 ** 16, 777).astype(np.uint16)
    b[(b & 0x7F80) == 0x7F80] = 0x3F80  # no NaN payloads: compare bit patterns exactly
    assert lib.twin_cast_to_f32(1, NONE, P(b), P(out), b.size) == 0
    np.testing.assert_array_equal(out.view(np.uint32), b.astype(np.uint32) << 16)
    i = np.array([0, 1, -7, 2 ** 24 + 1, 2 ** 31 - 1, -2 ** 31] + [3] * 10, np.int32)
    out = np.zeros(i.size, np.float32)
    assert lib.twin_cast_to_f32(2, RINT, P(i), P(out), i.size) == 0
    np.testing.assert_array_equal(out, i.astype(np.float32))
    # a widening is exact: asking it to round is refused
    assert lib.twin_cast_to_f32(0, RINT, P(h), P(out), 16) == 1
    assert "ms_ops twin_cast: block 0: Cast: round mode 1 is not supported" in capfd.readouterr().err


def test_cast_u8_to_half(lib, capfd):
    u = np.arange(300).astype(np.uint8)
    out = np.zeros(u.size, np.float16)
    assert lib.twin_cast_u8_to_f16(NONE, P(u), P(out), u.size) == 0
    np.testing.assert_array_equal(out, u.astype(np.float16))
    assert lib.twin_cast_u8_to_f16(RINT, P(u), P(out), 16) == 1
    assert "Cast: round mode 1 is not supported for uint8 -> half" in capfd.readouterr().err


# ---- DataCopyPad / strided DataCopy ----

def run_copy_pad(lib, rows, cols, ld, out_ld, left, right, is_pad, pad, gap, old_api=0):
    rng = np.random.default_rng(9)
    x = rng.standard_normal(rows * ld).astype(np.float32)
    out = np.full(rows * out_ld, -1.0, np.float32)
    pitch = (-(-(left + cols + right) * 4 // 32) * 32 + gap * 32) // 4
    img = np.zeros(rows * pitch, np.float32)
    assert lib.twin_copy_pad(P(x), P(out), P(img), rows, cols, ld, out_ld, left, right, is_pad, pad, gap, old_api) == 0
    return x.reshape(rows, ld), out, img.reshape(rows, pitch)


@pytest.mark.parametrize("old_api", [0, 1])
def test_copy_pad_unaligned_rows_and_strides(lib, old_api):
    rows, cols, ld, out_ld = 5, 13, 20, 17
    x, out, img = run_copy_pad(lib, rows, cols, ld, out_ld, 0, 0, 0, 0.0, 1, old_api)
    np.testing.assert_array_equal(img[:, :cols], x[:, :cols])
    np.testing.assert_array_equal(img[:, cols:16], np.repeat(x[:, :1], 16 - cols, axis=1))  # first-element dummy
    assert (img[:, 16:] == 7.0).all()  # the UB gap is left alone
    out_rows = out.reshape(rows, out_ld)
    np.testing.assert_array_equal(out_rows[:, :cols], x[:, :cols])
    assert (out_rows[:, cols:] == -1.0).all()  # GM gaps untouched


def test_copy_pad_padding_values(lib):
    x, out, img = run_copy_pad(lib, 3, 13, 13, 13, 0, 3, 1, -5.0, 0)
    np.testing.assert_array_equal(img[:, :13], x)
    assert (img[:, 13:16] == -5.0).all()
    np.testing.assert_array_equal(out, x.ravel())
    x, _, img = run_copy_pad(lib, 3, 13, 16, 13, 2, 1, 1, 3.5, 2, old_api=1)
    assert (img[:, :2] == 3.5).all() and (img[:, 15] == 3.5).all() and (img[:, 16:] == 7.0).all()
    np.testing.assert_array_equal(img[:, 2:15], x[:, :13])


def test_strided_copy(lib):
    rows, cols, ld, out_ld = 4, 16, 24, 32
    x = np.arange(rows * ld, dtype=np.float32)
    out = np.full(rows * out_ld, -1.0, np.float32)
    assert lib.twin_strided_copy(P(x), P(out), rows, cols, ld, out_ld) == 0
    o = out.reshape(rows, out_ld)
    np.testing.assert_array_equal(o[:, :cols], x.reshape(rows, ld)[:, :cols])
    assert (o[:, cols:] == -1.0).all()


# ---- violations ----

VIOLATIONS = [
    (0, "DataCopy: UB address 524 is not 32-byte aligned"),
    (1, "DataCopy: count 10 x 4 bytes = 40 bytes is not a multiple of 32 bytes (strict mode)"),
    (2, f"InitBuffer: request of 1 x {UB_BYTES} bytes"),
    (3, "FreeTensor: buffer is not allocated (double FreeTensor)"),
    (4, "DeQue: queue is empty"),
    (5, "AllocTensor: all 2 buffers of the queue are allocated"),
    (6, "DataCopy: out-of-bounds GM access: elements up to 16 of a 8-element GM buffer"),
    (7, "EnQue: queue of depth 1 is full"),
    (8, "LocalTensor::GetValue: UB access out of range: elements up to 65 of a 64-element UB buffer"),
    (9, "Add: UB address"),
    (10, "Compare: count 48 x 4 bytes = 192 bytes is not a multiple of 256 bytes (strict mode)"),
    (11, "Matmul::IterateAll: out-of-bounds GM access: elements up to 16 of a 8-element GM buffer"),
    (12, "DataCopyPad: blockCount 4096 exceeds 4095"),
    (13, "Duplicate: use after FreeTensor: UB bytes [0, 32) (TQue<VECIN> buffer 0 at UB offset 0, byte 0)"),
    (15, "Adds: the destination (UB offset 544, 64 bytes) partially overlaps a source (UB offset 512, 64 bytes)"),
    (16, "Matmul::IterateAll: Matmul used after the scope of its REGIST_MATMUL_OBJ ended"),
]


def test_tensor_still_allocated_at_kernel_end_is_a_note(lib, capfd):
    """The NPU needs no FreeTensor before a kernel ends (shipped kernels end holding one): the
    launch succeeds, in strict mode too, with a note on stderr."""
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    assert lib.twin_violation(14, P(x), P(out)) == 0
    assert ("ms_ops twin_violation: block 1: kernel end: warning: 1 tensor(s) still allocated (AllocTensor without "
            "FreeTensor); harmless at a kernel's end on the NPU") in capfd.readouterr().err
    assert block_ids_ok(lib)


@pytest.mark.parametrize("which,message", VIOLATIONS)
def test_violation_is_reported_and_recovers(lib, capfd, which, message):
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    assert lib.twin_violation(which, P(x), P(out)) == 1
    err = capfd.readouterr().err
    assert f"ms_ops twin_violation: block 1: {message}" in err
    assert err.count("ms_ops twin_violation") == 1
    assert (out == 0).all()
    if which == 2:
        assert f"exceeds the {UB_BYTES}-byte UB" in err
    assert block_ids_ok(lib)


# ---- pipe races (twin_race in tests/twin/twin_cases.cpp) ----

TBUF_A = "UB bytes [0, 32) (TBuf at UB offset 0, byte 0)"
RAW_A = f"Adds: pipe race (read-after-write): Adds on V reads {TBUF_A} that DataCopy on MTE2 wrote, " \
    "and nothing orders MTE2 before V (EnQue/DeQue of a queue between those pipes, " \
    "SetFlag/WaitFlag<HardEvent::MTE2_V> or PipeBarrier<PIPE_ALL>) (strict mode)"
RACES = [
    (0, RAW_A),
    (4, f"DataCopy: pipe race (write-after-read): DataCopy on MTE2 writes {TBUF_A} that Adds on V read, "
        "and nothing orders V before MTE2"),
    (7, f"DataCopy: pipe race (write-after-write): DataCopy on MTE2 writes {TBUF_A} that Duplicate on V wrote, "
        "and nothing orders V before MTE2"),
    (9, f"LocalTensor::GetValue: pipe race (read-after-write): LocalTensor::GetValue on S reads {TBUF_A} that "
        "DataCopy on MTE2 wrote, and nothing orders MTE2 before S"),
    (10, RAW_A),  # PipeBarrier<PIPE_V> orders V with itself only
    (11, "DataCopy: pipe race (read-after-write): DataCopy on MTE3 reads UB bytes [64, 96) (TQue<VECIN> at UB "
         "offset 64, byte 0) that DataCopy on MTE2 wrote, and nothing orders MTE2 before MTE3"),
    (12, RAW_A),  # the SetFlag comes before the copy it should order
    (13, "DataCopy: pipe race (read-after-write): DataCopy on MTE3 reads UB bytes [32, 64) (TBuf at UB offset 0, "
         "byte 32) that Adds on V wrote, and nothing orders V before MTE3"),
    (14, "WaitFlag: WaitFlag<HardEvent::MTE2_V>(2) with no SetFlag<HardEvent::MTE2_V>(2) before it: the NPU "
         "would wait forever"),
]


@pytest.mark.parametrize("which,message", RACES)
def test_pipe_race_is_reported(lib, capfd, which, message):
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    assert lib.twin_race(which, P(x), P(out)) == 1
    err = capfd.readouterr().err
    assert f"ms_ops twin_race: block 0: {message}" in err
    assert block_ids_ok(lib)


# 1 SetFlag/WaitFlag<MTE2_V>, 2 EnQue/DeQue of a VECIN queue, 3 PipeBarrier<PIPE_ALL>,
# 5 SetFlag/WaitFlag<V_MTE2> before the overwrite, 6 FreeTensor/AllocTensor of a VECIN queue between
# rounds, 8 PipeBarrier<PIPE_ALL> between two writers.
@pytest.mark.parametrize("which", [1, 2, 3, 5, 6, 8])
def test_ordered_pipes_pass(lib, capfd, which):
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    assert lib.twin_race(which, P(x), P(out)) == 0
    np.testing.assert_array_equal(out, x + 1)
    assert "ms_ops" not in capfd.readouterr().err


def test_auto_sync_orders_the_scalar_unit_only(lib, capfd, monkeypatch):
    """MS_OPS_TWIN_AUTO_SYNC=1 (CANN's --cce-auto-sync): the compiler orders S with MTE2, MTE3 and V,
    so GetValue right after an MTE2 copy passes; V after MTE2 still needs the kernel's own order."""
    monkeypatch.setenv("MS_OPS_TWIN_AUTO_SYNC", "1")
    x = np.arange(1, 9, dtype=np.float32)
    out = np.zeros(8, np.float32)
    assert lib.twin_race(9, P(x), P(out)) == 0  # out[0] = x[0] through GetValue / SetValue
    assert out[0] == 1
    assert "ms_ops" not in capfd.readouterr().err
    assert lib.twin_race(0, P(x), P(out)) == 1
    assert f"ms_ops twin_race: block 0: {RAW_A}" in capfd.readouterr().err


def test_pipe_race_warns_once_when_not_strict(lib, capfd, monkeypatch):
    """Without strict mode the race tracking runs only on request (MS_OPS_TWIN_RACES=1), and a race
    is then a warning, once per kernel and call."""
    monkeypatch.setenv("MS_OPS_TWIN_STRICT", "0")
    monkeypatch.setenv("MS_OPS_TWIN_RACES", "1")
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    assert lib.twin_race(0, P(x), P(out)) == 0
    np.testing.assert_array_equal(out, x + 1)  # the twin's program order hides the race
    err = capfd.readouterr().err
    assert "ms_ops twin_race: block 0: Adds: warning: pipe race (read-after-write)" in err
    assert "on the NPU the result depends on the pipes' timing" in err
    assert lib.twin_race(0, P(x), P(out)) == 0
    assert "warning" not in capfd.readouterr().err


def test_no_race_tracking_unless_strict_or_asked(lib, capfd, monkeypatch):
    """A run that is not checking kernels (neither strict mode nor MS_OPS_TWIN_RACES=1) skips the
    tracking, so even a racing kernel runs silently, with the twin's program-order result."""
    monkeypatch.setenv("MS_OPS_TWIN_STRICT", "0")
    monkeypatch.delenv("MS_OPS_TWIN_RACES", raising=False)
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    assert lib.twin_race(0, P(x), P(out)) == 0
    np.testing.assert_array_equal(out, x + 1)
    assert "ms_ops" not in capfd.readouterr().err
    monkeypatch.setenv("MS_OPS_TWIN_STRICT", "1")
    assert lib.twin_race(0, P(x), P(out)) == 1


def test_count_rounds_down_when_not_strict(lib, capfd, monkeypatch):
    monkeypatch.setenv("MS_OPS_TWIN_STRICT", "0")
    x = np.arange(1, 17, dtype=np.float32)
    out = np.full(16, -1.0, np.float32)
    assert lib.twin_violation(1, P(x), P(out)) == 0
    np.testing.assert_array_equal(out, np.concatenate([x[:8], np.zeros(8, np.float32)]))
    err = capfd.readouterr().err
    assert "ms_ops twin_violation: block 1: DataCopy: warning: count 10 x 4 bytes" in err
    assert lib.twin_violation(1, P(x), P(out)) == 0  # warned once per kernel and call
    assert "warning" not in capfd.readouterr().err
    # memory-corrupting violations stay errors without strict mode
    assert lib.twin_violation(6, P(x), P(out)) == 1


# ---- global memory, flags at kernel end, reduce scratch, level-0 overlap (twin_gm_check) ----

def gm_check(lib, which):
    x = np.arange(1, 17, dtype=np.float32)
    out = np.zeros(16, np.float32)
    return lib.twin_gm_check(which, P(x), P(out)), x, out


GM_RACE_TAIL = ("in the same launch, not both with a store atomic, and nothing orders one before the other (a "
                "SyncAll, or CrossCoreSetFlag / CrossCoreWaitFlag between their cores): on the NPU the block that "
                "writes last wins")


def test_gm_writes_of_two_blocks_race(lib, capfd):
    x = np.arange(1, 17, dtype=np.float32)
    out = np.zeros(16, np.float32)
    assert lib.twin_gm_check(0, P(x), P(out)) == 1
    err = capfd.readouterr().err
    base = out.ctypes.data
    assert (f"ms_ops twin_gm_check: block 1: DataCopy: GM race between blocks: DataCopy of block 0 and DataCopy "
            f"of block 1 both write GM bytes [{base:#x}, {base + 32:#x}) (byte 0 of the GM buffer at {base:#x}) "
            + GM_RACE_TAIL) in err
    assert block_ids_ok(lib)


def test_gm_plain_and_atomic_write_race(lib, capfd):
    rc, _, out = gm_check(lib, 5)
    assert rc == 1
    assert "block 1: DataCopy: GM race between blocks: DataCopy of block 0 and DataCopy (atomic) of block 1" in \
        capfd.readouterr().err


# 1 disjoint rows, 2 both atomic, 3 a SyncAll between the writers, 4 one block rewriting its bytes
@pytest.mark.parametrize("which,first,second", [(1, 1, 1), (2, 2, 0), (3, 1, 0), (4, 1, 0)])
def test_gm_writes_that_do_not_race(lib, capfd, which, first, second):
    rc, x, out = gm_check(lib, which)
    assert rc == 0
    np.testing.assert_array_equal(out[:8], first * x[:8])
    np.testing.assert_array_equal(out[8:], second * x[:8])
    assert "ms_ops" not in capfd.readouterr().err


def test_gm_read_after_mte3_write_needs_a_flag(lib, capfd):
    rc, x, out = gm_check(lib, 6)
    assert rc == 1
    err = capfd.readouterr().err
    base = out.ctypes.data
    assert (f"ms_ops twin_gm_check: block 0: DataCopy: GM race (read-after-write): DataCopy on MTE2 reads GM byte "
            f"{base:#x} that DataCopy on MTE3 wrote, and nothing orders MTE3 before MTE2 "
            "(SetFlag/WaitFlag<HardEvent::MTE3_MTE2> or PipeBarrier<PIPE_ALL>)") in err
    rc, x, out = gm_check(lib, 7)
    assert rc == 0
    np.testing.assert_array_equal(out[:8], x[:8])
    assert "ms_ops" not in capfd.readouterr().err


def test_set_flag_pending_at_kernel_end(lib, capfd):
    rc, _, _ = gm_check(lib, 8)
    assert rc == 1
    assert ("ms_ops twin_gm_check: block 1: kernel end: SetFlag<HardEvent::V_MTE3>(3) was never consumed by a "
            "WaitFlag<HardEvent::V_MTE3>(3) (1 pending)") in capfd.readouterr().err


def test_reduce_scratch_minimum(lib, capfd):
    rc, x, out = gm_check(lib, 9)  # 16 floats with calIndex need 8 + 8 scratch floats
    assert rc == 0
    assert out[0] == 8.0 and out[1:2].view(np.uint32)[0] == 7
    rc, _, _ = gm_check(lib, 10)
    assert rc == 1
    # Both blocks break the rule; whichever reports first under load is the launch's error.
    assert re.search(r"ms_ops twin_gm_check: block [01]: ReduceMax: sharedTmpBuffer holds 8 elements, below the "
                     r"documented minimum of 16 for count 16 with calIndex", capfd.readouterr().err)


def test_level0_partial_overlap(lib, capfd):
    rc, _, _ = gm_check(lib, 11)
    assert rc == 1
    assert ("ms_ops twin_gm_check: block 1: Adds: the destination (UB offset 32, 64 bytes) partially overlaps a "
            "source (UB offset 0, 64 bytes)") in capfd.readouterr().err


# 0 the AIC and AIV 0 with nothing between; 2 both AIVs after the AIC's flag; 4 AIV 1 before the
# flags that order AIV 0's store before the AIC's flag to it.
@pytest.mark.parametrize("which,first,second", [(0, "AIC 0", "block 0"), (2, "block 0", "block 1"),
                                                (4, "block 0", "block 1")])
def test_gm_writes_of_mixed_cores_race(lib, capfd, which, first, second):
    out = np.zeros(8, np.float32)
    assert lib.twin_gm_mixed(which, P(out)) == 1
    base = out.ctypes.data
    assert (f"ms_ops twin_gm_mixed: {second}: GlobalTensor::SetValue: GM race between blocks: GlobalTensor::SetValue "
            f"of {first} and GlobalTensor::SetValue of {second} both write GM bytes [{base:#x}, {base + 4:#x}) "
            f"(byte 0 of the GM buffer at {base:#x}) " + GM_RACE_TAIL) in capfd.readouterr().err


# 1 the AIC's flag orders its store before AIV 0's; 3 AIV 0's store reaches AIV 1 through the
# AIC's wait and flag; 5 SyncAll<false> between the AIC's store and AIV 0's. Value: the last store.
@pytest.mark.parametrize("which,last", [(1, 10.0), (3, 11.0), (5, 10.0)])
def test_gm_writes_of_mixed_cores_ordered_by_flags(lib, capfd, which, last):
    out = np.zeros(8, np.float32)
    assert lib.twin_gm_mixed(which, P(out)) == 0
    assert out[0] == last
    assert "ms_ops" not in capfd.readouterr().err


# ---- Matmul ----

def shared_product(n):
    rng = np.random.default_rng(n)
    a, b = (rng.integers(-2, 3, (n, n)).astype(np.float32) for _ in range(2))  # every sum exact in fp32
    return a, b, a.astype(np.float64) @ b


@pytest.mark.parametrize("mode", [0, 1])
def test_matmul_gm_writes_of_two_blocks_race(lib, capfd, mode):
    n = 32
    a, b, _ = shared_product(n)
    c = np.zeros((n, n), np.float32)
    assert lib.twin_matmul_shared(0, mode, P(a), P(b), P(c), n, 2) == 1
    call = ["Matmul::IterateAll", "Matmul::GetTensorC"][mode]
    base = c.ctypes.data
    # GetTensorC's 16 x 16 tiles of a block merge into the whole of C, as IterateAll writes it.
    assert (f"ms_ops twin_matmul_shared: block 1: {call}: GM race between blocks: {call} of block 0 and {call} of "
            f"block 1 both write GM bytes [{base:#x}, {base + n * n * 4:#x}) ") in capfd.readouterr().err


@pytest.mark.parametrize("mode", [0, 1])
def test_matmul_atomic_adds_of_concurrent_blocks_are_exact(lib, capfd, mode):
    """enAtomic 1 from 16 blocks on concurrent threads into one C: no update is lost."""
    n, blocks = 64, 16
    a, b, ab = shared_product(n)
    c = np.ones((n, n), np.float32)
    assert lib.twin_matmul_shared(1, mode, P(a), P(b), P(c), n, blocks) == 0
    np.testing.assert_array_equal(c, 1 + blocks * ab)
    assert "ms_ops" not in capfd.readouterr().err


def test_atomic_spans_overlap_exactly_when_they_share_a_byte(lib):
    """The spans store atomics hold (rows of bytes, pitch apart): a false 'disjoint' would lose
    updates, a false 'overlap' would serialize blocks adding into other columns of the same rows."""
    rng = np.random.default_rng(0)

    def span():
        rows = int(rng.integers(0, 5))
        return np.array([rng.integers(0, 64), rows, rng.integers(0, 9), rng.integers(0, 24)], np.uint64)

    def covered(s):
        at, rows, nbytes, pitch = (int(v) for v in s)
        return {at + r * pitch + i for r in range(rows) for i in range(nbytes)}

    seen = set()
    for _ in range(3000):
        a, b = span(), span()
        want = bool(covered(a) & covered(b))
        assert lib.twin_spans_overlap(P(a), P(b)) == want, (a, b)
        seen.add(want)
    assert seen == {True, False}
    # Two column halves of the same 4 rows (pitch 64 bytes): disjoint; a one-byte shift: not.
    left, right = np.array([0, 4, 32, 64], np.uint64), np.array([32, 4, 32, 64], np.uint64)
    assert lib.twin_spans_overlap(P(left), P(right)) == 0
    assert lib.twin_spans_overlap(P(left), P(right - np.array([1, 0, 0, 0], np.uint64))) == 1


def test_matmul_atomic_into_fp16_adds_in_fp16(lib, capfd):
    """enAtomic 1 into an fp16 C: CANN's Matmul sets SetAtomicAdd<DstT>, so FIXPIPE first converts
    the fp32 product to fp16 and the atomic then adds two fp16 values (two roundings). A product of
    1 + 2^-11 (a tie, rounded to 1) added to 1 + 2^-10 gives 2 (another tie, to even); one rounding
    of the exact sum would give 2 + 2^-9."""
    n = 16
    a = np.zeros((n, n), np.float16)
    a[:, 0], a[:, 1] = 1, 2.0 ** -11
    b = np.zeros((n, n), np.float16)
    b[0, :] = b[1, :] = 1
    c0 = np.float16(1 + 2.0 ** -10)
    c = np.full((n, n), c0, np.float16)
    assert lib.twin_matmul_atomic_f16(P(a), P(b), P(c), n) == 0
    product = np.float32(1 + 2.0 ** -11)
    two_roundings = c0 + np.float16(product)
    assert two_roundings == 2 and np.float16(np.float32(c0) + product) == 2 + 2.0 ** -9
    np.testing.assert_array_equal(c, np.full((n, n), two_roundings, np.float16))
    assert "ms_ops" not in capfd.readouterr().err


def matmul_case(lib, dtype, M, N, K, trans_b=0, mode=0, bias=0, atomic=0, blocks=3, blocks_n=1, coop=0,
                trans_a=0):
    rng = np.random.default_rng(M * 7 + N * 3 + K)
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    bv = rng.standard_normal(N).astype(np.float32)
    c0 = rng.standard_normal((M, N)).astype(np.float32)
    c = c0.copy() if atomic else np.full((M, N), np.nan, np.float32)
    a_stored = np.ascontiguousarray(a.T) if trans_a else a
    b_stored = np.ascontiguousarray(b.T) if trans_b else b
    rc = lib.twin_matmul(0 if dtype == np.float32 else 1, trans_b + 2 * trans_a, mode, bias, atomic, P(a_stored),
                         P(b_stored), P(bv), P(c), M, N, K, blocks, blocks_n, coop)
    assert rc == 0
    ref = a.astype(np.float64) @ b.astype(np.float64)
    if bias:
        ref += bv
    if atomic:
        ref = [None, ref + c0, np.maximum(ref, c0), np.minimum(ref, c0)][atomic]
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_matmul(lib, dtype, trans_b, mode):
    matmul_case(lib, dtype, 97, 150, 123, trans_b=trans_b, mode=mode, bias=1)
    matmul_case(lib, dtype, 97, 59, 123, trans_b=trans_b, mode=mode)
    # K = 600: fp16 operands are widened in three K panels (256, 256, 88), summed by sgemm
    for trans_a in (0, 1):
        matmul_case(lib, dtype, 45, 70, 600, trans_b=trans_b, mode=mode, trans_a=trans_a)
        matmul_case(lib, dtype, 45, 70, 600, trans_b=trans_b, mode=mode, trans_a=trans_a, bias=1,
                    atomic=int(mode != 2), blocks=2, blocks_n=2)  # mode 2 places tiles itself


@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("atomic", [2, 3])
def test_matmul_atomic_max_and_min(lib, mode, atomic):
    """enAtomic 2 / 3: C = max / min(C, A * B (+ bias)) elementwise, by the store atomic."""
    matmul_case(lib, np.float32, 97, 59, 123, mode=mode, atomic=atomic, bias=1, blocks=2, blocks_n=3)
    matmul_case(lib, np.float16, 64, 130, 31, mode=mode, atomic=atomic, blocks=1)


@pytest.mark.parametrize("mode", [0, 1])
def test_matmul_org_kc_sets_the_row_stride_of_c(lib, mode):
    """SetOrgShape(M, N, Ka, Kb, orgKc): C's rows are orgKc apart, B's stay N apart; the columns
    past N between C's rows are left alone."""
    M, N, K, ldc = 45, 70, 33, 101
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c0 = rng.standard_normal((M, ldc)).astype(np.float32)
    c = c0.copy()
    assert lib.twin_matmul_org_kc(P(a), P(b), P(c), M, N, K, ldc, mode) == 0
    np.testing.assert_allclose(c[:, :N], c0[:, :N] + a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(c[:, N:], c0[:, N:])


def test_matmul_operands_and_result_in_ub(lib):
    """A, B and bias from VECOUT LocalTensors, C by IterateAll into a VECIN one (with the settings
    and the asynchronous IterateAll + WaitIterateAll a CANN kernel uses), then a scalar A."""
    n = 24
    rng = np.random.default_rng(11)
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    bias = rng.standard_normal(n).astype(np.float32)
    c = np.full((n, n), np.nan, np.float32)
    assert lib.twin_matmul_local(0, P(a), P(b), P(bias), P(c), n, 0.0) == 0
    np.testing.assert_allclose(c, a.astype(np.float64) @ b + bias, rtol=1e-5, atol=1e-5)
    c[:] = np.nan
    assert lib.twin_matmul_local(1, P(a), P(b), P(bias), P(c), n, -1.5) == 0
    np.testing.assert_allclose(c, np.broadcast_to(-1.5 * b.astype(np.float64).sum(0), (n, n)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode,message", [
    (2, "SetTensorA: a LocalTensor operand needs its MatmulType at VECIN, VECOUT, VECCALC or TSCM"),
    (3, "Matmul::IterateAll: UB access out of range: elements up to 576 of a 552-element UB buffer"),
    (4, "Matmul::IterateAll: only ND operands are modelled by the twin"),
])
def test_matmul_local_rules(lib, capfd, mode, message):
    n = 24
    a, b, c = (np.ones((n, n), np.float32) for _ in range(3))
    assert lib.twin_matmul_local(mode, P(a), P(b), P(a), P(c), n, 0.0) == 1
    assert f"ms_ops twin_matmul_local: block 0: {message}" in capfd.readouterr().err


@pytest.mark.parametrize("mode", [0, 1])
def test_matmul_atomic_accumulates(lib, mode):
    matmul_case(lib, np.float32, 97, 59, 123, mode=mode, atomic=1, bias=1, blocks=2)
    matmul_case(lib, np.float16, 64, 130, 31, mode=mode, atomic=1, blocks=1)
    # IterateAll without bias into fp32 C: sgemm accumulates in place; blocks_n 3 gives each block
    # a C whose row stride (N) is larger than its width.
    for trans_b in (0, 1):
        matmul_case(lib, np.float32, 97, 59, 123, trans_b=trans_b, mode=mode, atomic=1, blocks=2, blocks_n=3)
        matmul_case(lib, np.float32, 97, 59, 123, trans_b=trans_b, mode=mode, atomic=1, bias=1, blocks=2, blocks_n=3)


# ---- SyncAll / LaunchCooperative ----

def bounded(fn, *args, timeout=20.0):
    """fn(*args) on a thread (ctypes releases the GIL): a launch that hangs fails the test."""
    result = []
    t = threading.Thread(target=lambda: result.append(fn(*args)), daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), f"{fn.__name__} did not return within {timeout} s"
    return result[0]


def sync_sum(lib, aiv_only, blocks, active, rounds):
    slots = np.full(active, -1, np.int32)
    sums = np.full((rounds, blocks), -1, np.int32)
    rc = bounded(lib.twin_sync_sum, aiv_only, P(slots), P(sums), blocks, active, rounds)
    return rc, sums


@pytest.mark.parametrize("aiv_only,blocks,active", [(1, 48, 48), (0, 24, 24), (1, 24, 17)])
def test_sync_all_between_blocks(lib, aiv_only, blocks, active):
    rounds = 6
    rc, sums = sync_sum(lib, aiv_only, blocks, active, rounds)
    assert rc == 0
    r = np.arange(rounds)[:, None]
    expect = np.broadcast_to(np.arange(active).sum() * rounds + active * r, (rounds, active))
    np.testing.assert_array_equal(sums[:, :active], expect)
    assert (sums[:, active:] == -1).all()


@pytest.mark.parametrize("aiv_only,blocks,cores", [(1, 49, "48 vector cores"), (0, 25, "24 AIC + AIV groups")])
def test_sync_all_more_blocks_than_cores(lib, capfd, aiv_only, blocks, cores):
    rc, _ = sync_sum(lib, aiv_only, blocks, blocks, 1)
    assert rc == 1
    err = capfd.readouterr().err
    what = re.escape(f"SyncAll: blockDim {blocks} exceeds the {cores} of Atlas A2")
    assert re.search(rf"ms_ops twin_sync_sum: block \d+: {what}", err)
    assert err.count("ms_ops twin_sync_sum") == 1


@pytest.mark.parametrize("kind,message", [
    (0, "GlobalTensor::GetValue: out-of-bounds GM access: elements up to 25 of a 24-element GM buffer"),
    (1, "exception: kernel bug"),
])
def test_sync_all_failed_block_releases_the_others(lib, capfd, kind, message):
    blocks, bad, fail_at, rounds = 24, 13, 2, 50
    done = np.full(blocks, -1, np.int32)
    start = time.monotonic()
    assert bounded(lib.twin_sync_fail, kind, P(done), blocks, bad, fail_at, rounds) == 1
    assert time.monotonic() - start < 5.0
    err = capfd.readouterr().err
    assert f"ms_ops twin_sync_fail: block {bad}: {message}" in err
    assert err.count("ms_ops twin_sync_fail") == 1  # the first error only, not "another block failed"
    # every block passed the SyncAlls before the failure and stopped at the next one
    np.testing.assert_array_equal(done, np.full(blocks, fail_at, np.int32))
    rc, sums = sync_sum(lib, 1, blocks, blocks, 2)
    assert rc == 0 and (sums == np.arange(blocks).sum() * 2 + blocks * np.arange(2)[:, None]).all()


def test_sync_all_keeps_each_blocks_ub(lib):
    blocks = 24
    bad = np.full(blocks, -1, np.int32)
    assert bounded(lib.twin_sync_keeps_ub, P(bad), blocks, 4096, 5) == 0
    np.testing.assert_array_equal(bad, np.zeros(blocks, np.int32))


@pytest.mark.parametrize("flag_ints,ub_ints,used,message", [
    (8 * 6, 8 * 6, 0, None),
    (8 * 6, 8 * 6, 6, None),
    (8 * 5, 8 * 6, 0, "SyncAll: gmWorkspace holds 40 int32, below the 48 (32 bytes per block)"),
    (8 * 6, 8 * 5, 0, "SyncAll: ubWorkspace holds 40 int32, below the 48 (32 bytes per block)"),
    (8 * 6, 8 * 6, 4, "SyncAll: usedCores 4 of 6: a SyncAll of part of the cores is not modelled"),
    (8 * 6, 8 * 6, 7, "SyncAll: usedCores 7 is outside [0, 6]"),
])
def test_software_sync_all(lib, capfd, flag_ints, ub_ints, used, message):
    blocks = 6
    slots, sums = np.zeros(blocks, np.int32), np.full(blocks, -1, np.int32)
    flags = np.zeros(flag_ints, np.int32)
    rc = bounded(lib.twin_sync_soft, P(slots), P(sums), P(flags), flag_ints, blocks, ub_ints, used)
    if message is None:
        assert rc == 0
        np.testing.assert_array_equal(sums, np.full(blocks, blocks * (blocks + 1) // 2, np.int32))
    else:
        assert rc == 1
        assert message in capfd.readouterr().err


def test_sync_all_needs_cooperative_launch(lib, capfd):
    assert lib.twin_sync_plain(3) == 1
    err = capfd.readouterr().err
    assert re.search(r"ms_ops twin_sync_plain: block \d: SyncAll: the blocks of Launch do not all run at once; "
                     r"a kernel that calls SyncAll needs ms_ops::twin::LaunchCooperative "
                     r"\(on the NPU: blockDim must not exceed the 48 vector cores\)", err)
    assert err.count("ms_ops twin_sync_plain") == 1
    assert lib.twin_sync_plain(1) == 0


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def peak_rss_mb(fn):
    """How far fn() takes the resident memory above what it was when fn started (VmHWM reset)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    start = rss_mb()
    fn()
    with open("/proc/self/status") as f:
        hwm_kib = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    return hwm_kib / 1024 - start


def test_cooperative_matmul_frees_thread_state(lib):
    # 48 fibers per launch, each with its UB arena and stack, all calling sgemm.
    for mode in (0, 1):
        matmul_case(lib, np.float16, 97, 59, 123, mode=mode, atomic=1, blocks=16, blocks_n=3, coop=1)
    before = rss_mb()
    for _ in range(15):
        matmul_case(lib, np.float32, 97, 59, 123, atomic=1, blocks=16, blocks_n=3, coop=1)
    assert rss_mb() - before < 40  # a leak keeps 48 x (UB arena + scratch) > 9 MB per launch


def test_cooperative_matmul_scratch_is_bounded(lib):
    # 16 blocks of an fp16 1024 x 1024 x 4096 product, all live at once. Widening whole operands per
    # block would hold 16 x (256 + 256) x 4096 fp32 = 128 MiB; the twin's cube units (two per core)
    # bound the products running at once and widen K in panels of 256.
    m, n, k = 1024, 1024, 4096
    rng = np.random.default_rng(5)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    bias = np.zeros(n, np.float32)
    c = np.full((m, n), np.nan, np.float32)

    def launch():
        assert lib.twin_matmul(1, 0, 0, 0, 0, P(a), P(b), P(bias), P(c), m, n, k, 4, 4, 1) == 0

    assert peak_rss_mb(launch) < 40
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-2)


def test_workspace_starts_stale_on_every_launch(lib):
    # The spare mapping a launch leaves behind comes back to the next one refilled with 0xFF, whether
    # the next asks for less (its pages past that returned to the OS) or more (a fresh mapping) or
    # for the larger size again (the trimmed pages touched anew).
    stale = np.zeros(1, np.uint32)
    for size in (200_003, 70_001, 200_003, 300_007):
        assert lib.twin_workspace(size, P(stale)) == 0
        assert stale[0] == 0, f"{stale[0]} of {size} workspace bytes were not 0xFF"
