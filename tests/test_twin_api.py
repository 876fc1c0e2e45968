"""Tests of the twin's level-0 vector API (masks, counter mode, repeats, block/repeat strides), the
per-repeat reductions, Brcb / Gather / CreateVecIndex, store atomics across blocks and the
TQueBind / TBuf extras, with the kernels of tests/twin/twin_api_cases.cpp. Values are checked
against numpy models of the documented semantics; each rule has a failing case."""
import ctypes
import math
import os
import subprocess

import numpy as np
import pytest
from twin_cases import P, build_cases, load_build_module

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
V, I, U, U64, I32 = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int32
SIGNATURES = {
    "twin_vec0_f32": [I, I, V, V, V, U, U64, U64, U64, U, V],
    "twin_vec0_f16": [I, I, V, V, V, U, U64, U64, U64, U, V],
    "twin_reduce0_f32": [I, I, V, V, U, U, U64, U64, I32, I32, I32, I32, I32, I],
    "twin_reduce0_f16": [I, I, V, V, U, U, U64, U64, I32, I32, I32, I32, I32, I],
    "twin_fill": [I, V, V, V, U, U, U, U, U],
    "twin_atomic": [I, I, I, V, V, U, U, I],
    "twin_bind": [V, V, U, I],
    "twin_reserved_ub": [U, V],
    "twin_overlap": [I, V, V],
    "twin_dump": [V, I],
    "twin_cycles": [U, V],
    "twin_int4": [I, V],
    "twin_adv": [I, V, V, U],
    "twin_utils": [I, V, V, U],
    "twin_list_tensor": [V, U, U, V],
    "twin_transdata": [I, I, V, U, V, U, I, I, I, I, I],
    "twin_transpose16": [V, V, I],
    "twin_tbuf_past_end": [I32, V],
    "twin_sort": [I, V, V, V, U, V],
    "twin_mixed": [U, U, V, V, V, I],
    "twin_crosscore_plain": [I],
    "twin_aiv_flags": [V, V, U, U, I],
    "twin_buf_pool": [V, V, U, I],
    "twin_cast_pair": [I, I, V, V, U],
    "twin_softmax": [I, V, V, V, U, U, U],
    "twin_logic_axpy": [I, I, V, V, V, U, U64, U, ctypes.c_float],
    "twin_gather_mask": [I, I, V, V, V, U, U, U, U, U, U, V],
    "twin_broadcast": [I, V, V, U, U],
    "twin_task_type": [I, V],
    "twin_shift": [I, V, V, U, I32],
}
BUF = 16384  # bytes of each UB buffer of the test kernels
ALL = (1 << 64) - 1



@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_cases(tmp_path_factory.mktemp("twin_api_cases"), "twin_api_cases", SIGNATURES)


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    monkeypatch.setenv("MS_OPS_TWIN_STRICT", "1")



# ---- the level-0 model ----

def active(kind, bits, length, lanes, repeat):
    """(repeats, on(r, e)) of a level-0 call: kind 0/2 bitwise, 1 contiguous, 3 counter mode."""
    if kind == 3:
        return -(-length // lanes), lambda r, e: r * lanes + e < length
    if kind == 1:
        return repeat, lambda r, e: e < length
    return repeat, lambda r, e: (bits[e // 64] >> (e % 64)) & 1 == 1


def at(r, e, blk, rep, per):
    return (r * rep + e // per * blk) * per + e % per


def level0_model(op, x, y, z, kind, bits, length, repeat, strides, dtype):
    per, lanes = 32 // np.dtype(dtype).itemsize, 256 // np.dtype(dtype).itemsize
    db, sb, dr, sr = strides
    reps, on = active(kind, bits, length, lanes, repeat)
    out = z.copy()
    f = np.float32
    for r in range(reps):
        for e in range(lanes):
            if not on(r, e):
                continue
            a, b = f(x[at(r, e, sb, sr, per)]), f(y[at(r, e, sb, sr, per)])
            ops = [lambda: a + b, lambda: a * f(2), lambda: f(1) / a, lambda: a if a >= 0 else a * f(0.5),
                   lambda: f(7), lambda: max(a, b), lambda: f(1) / np.sqrt(a)]
            out[at(r, e, db, dr, per)] = dtype(ops[op]())
    return out


def run_vec0(lib, dtype, op, kind, bits=(0, 0), length=0, repeat=1, strides=(1, 1, 8, 8), n=None):
    n = n or BUF // np.dtype(dtype).itemsize
    rng = np.random.default_rng(op * 10 + kind)
    x = rng.uniform(0.5, 2.0, n).astype(dtype) * np.where(rng.random(n) < 0.3, -1, 1).astype(dtype)
    if op in (2, 6):
        x = np.abs(x)
    y = rng.standard_normal(n).astype(dtype)
    z = rng.standard_normal(n).astype(dtype)
    fn = lib.twin_vec0_f32 if dtype == np.float32 else lib.twin_vec0_f16
    got = z.copy()
    s = np.array(strides, np.uint32)
    status = fn(op, kind, P(x), P(y), P(got), n, bits[0], bits[1], length, repeat, P(s))
    return status, got, (x, y, z)


VEC0 = [
    # dtype, op, kind, bits, len, repeat, strides (dstBlk, srcBlk, dstRep, srcRep)
    (np.float32, 0, 0, (0xF0F0F0F00F0F0F0F, 0), 0, 3, (1, 1, 8, 8)),
    (np.float32, 1, 1, (0, 0), 37, 2, (2, 1, 16, 8)),
    (np.float16, 0, 0, (0x8000000000000001, 0xFFFF00000000FFFF), 0, 2, (1, 2, 8, 16)),
    (np.float16, 3, 1, (0, 0), 128, 4, (1, 1, 8, 8)),
    (np.float32, 5, 2, (0x00000000FFFFFFFF, 0), 0, 2, (1, 1, 4, 8)),
    (np.float32, 2, 3, (0, 0), 150, 0, (1, 1, 8, 8)),
    (np.float16, 4, 3, (0, 0), 300, 0, (1, 1, 8, 8)),
    (np.float32, 6, 1, (0, 0), 64, 3, (1, 3, 8, 24)),
    (np.float32, 4, 0, (0x5, 0), 0, 2, (3, 1, 0, 8)),
    (np.float32, 0, 1, (0, 0), 48, 3, (1, 0, 8, 1)),
]


# Without race tracking (strict mode off) the operands' checks only look at their furthest block.
@pytest.mark.parametrize("tracked", ["1", "0"])
@pytest.mark.parametrize("dtype,op,kind,bits,length,repeat,strides", VEC0)
def test_level0_vector_ops(lib, monkeypatch, tracked, dtype, op, kind, bits, length, repeat, strides):
    monkeypatch.setenv("MS_OPS_TWIN_STRICT", tracked)
    status, got, (x, y, z) = run_vec0(lib, dtype, op, kind, bits, length, repeat, strides)
    assert status == 0
    ref = level0_model(op, x, y, z, kind, bits, length, repeat, strides, dtype)
    if op in (2, 6):
        np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=1e-6)
    else:
        np.testing.assert_array_equal(got, ref)
    assert not np.array_equal(got, z)  # the call did write something


FAILS0 = [
    (np.float32, 0, 0, (1, 1), 0, 1, (1, 1, 8, 8), "Add: mask[1] must be 0 for 32-bit operands (64 lanes a repeat)"),
    (np.float32, 1, 1, (0, 0), 65, 1, (1, 1, 8, 8), "Muls: mask 65 is outside [1, 64]"),
    (np.float16, 2, 1, (0, 0), 0, 1, (1, 1, 8, 8), "Reciprocal: mask 0 is outside [1, 128]"),
    (np.float32, 0, 1, (0, 0), 64, 200, (1, 1, 8, 8), "Add: UB access out of range"),
    (np.float32, 1, 3, (0, 0), 64 * 256, 0, (1, 1, 8, 8), "Muls: counter-mode count 16384 needs more than 255"),
]


@pytest.mark.parametrize("tracked", ["1", "0"])
@pytest.mark.parametrize("dtype,op,kind,bits,length,repeat,strides,message", FAILS0)
def test_level0_rules(lib, capfd, monkeypatch, tracked, dtype, op, kind, bits, length, repeat, strides, message):
    monkeypatch.setenv("MS_OPS_TWIN_STRICT", tracked)
    status, got, (_, _, z) = run_vec0(lib, dtype, op, kind, bits, length, repeat, strides)
    assert status == 1
    assert f"ms_ops twin_vec0: block 0: {message}" in capfd.readouterr().err
    np.testing.assert_array_equal(got, z)


# ---- per-repeat reductions ----

def reduce_model(which, x, z, bits, length, repeat, dst_rep, src_blk, src_rep, order, dtype):
    per, lanes = 32 // np.dtype(dtype).itemsize, 256 // np.dtype(dtype).itemsize
    _, on = active(0 if bits else 1, bits, length, lanes, repeat)
    out = z.copy()
    idx_view = out.view(np.uint16 if dtype == np.float16 else np.uint32)
    for r in range(repeat):
        vals = {e: np.float32(x[at(r, e, src_blk, src_rep, per)]) for e in range(lanes) if on(r, e)}
        if which <= 2:
            if which == 2:
                out[r * dst_rep] = dtype(sum(vals.values(), np.float32(0)))
                continue
            best = (max if which == 0 else min)(vals.values())
            i = min(e for e, v in vals.items() if v == best)
            base = r * dst_rep * 2
            vi, ii = (base, base + 1) if order == 0 else (base + 1, base)
            out[vi] = dtype(best)
            idx_view[ii] = i
            continue
        group, unit = (per, 8) if which <= 5 else (2, 128 // np.dtype(dtype).itemsize)
        fn = {3: max, 4: min, 5: sum, 6: sum}[which]
        for k in range(lanes // group):
            g = [vals[e] for e in range(k * group, (k + 1) * group) if e in vals]
            if g:
                out[r * dst_rep * unit + k] = dtype(fn(g) if which in (3, 4) else sum(g, np.float32(0)))
    return out


REDUCE0 = [
    # which, dtype, bits, len, repeat, dstRep, srcBlk, srcRep, order
    (0, np.float32, None, 50, 3, 1, 1, 8, 0),
    (1, np.float16, (0xFFFF0000FFFF0000, 0x0F0F), 0, 2, 2, 1, 8, 1),
    (2, np.float32, None, 64, 4, 1, 1, 8, 0),
    (2, np.float16, (ALL, 1), 0, 3, 3, 2, 16, 0),
    (3, np.float16, (0x00FF00FF00FF00FF, 0), 0, 2, 1, 1, 8, 0),
    (4, np.float32, None, 40, 2, 2, 1, 8, 0),
    (5, np.float32, None, 64, 3, 1, 1, 8, 0),
    (6, np.float16, None, 100, 2, 1, 1, 8, 0),
    (6, np.float32, (0xFFFFFFFF0000FFFF, 0), 0, 2, 1, 1, 8, 0),
]


@pytest.mark.parametrize("which,dtype,bits,length,repeat,dst_rep,src_blk,src_rep,order", REDUCE0)
def test_per_repeat_reductions(lib, which, dtype, bits, length, repeat, dst_rep, src_blk, src_rep, order):
    n = BUF // np.dtype(dtype).itemsize
    rng = np.random.default_rng(which)
    x = rng.standard_normal(n).astype(dtype)
    z = rng.standard_normal(512).astype(dtype)
    got = z.copy()
    fn = lib.twin_reduce0_f32 if dtype == np.float32 else lib.twin_reduce0_f16
    b = bits or (0, 0)
    assert fn(which, bits is not None, P(x), P(got), n, z.size, b[0], b[1], length, repeat, dst_rep, src_blk, src_rep,
              order) == 0
    ref = reduce_model(which, x, z, bits, length, repeat, dst_rep, src_blk, src_rep, order, dtype)
    if which in (2, 5, 6):
        tol = 2e-3 if dtype == np.float16 else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got.view(np.uint8), ref.view(np.uint8))
    assert not np.array_equal(got, z)


def test_reduction_repeat_rule(lib, capfd):
    x = np.zeros(BUF // 4, np.float32)
    z = np.zeros(512, np.float32)
    assert lib.twin_reduce0_f32(2, 0, P(x), P(z), x.size, z.size, 0, 0, 64, 300, 1, 1, 8, 0) == 1
    assert "ms_ops twin_reduce0: block 0: WholeReduceSum: repeatTime 300 is outside [0, 255]" in capfd.readouterr().err


# ---- Brcb, Gather, CreateVecIndex ----

def test_brcb(lib):
    x = np.arange(64, dtype=np.float32) + 1
    z = np.full(1024, -1, np.float32)
    off = np.zeros(1024, np.uint32)
    assert lib.twin_fill(0, P(x), P(off), P(z), x.size, z.size, 2, 2, 20) == 0
    ref = np.full(1024, -1, np.float32)
    for r in range(2):
        for j in range(8):
            start = (r * 20 + j * 2) * 8
            ref[start:start + 8] = x[r * 8 + j]
    np.testing.assert_array_equal(z, ref)


def test_gather_and_vec_index(lib, capfd):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(256).astype(np.float32)
    pick = rng.integers(0, 200, 64)
    off = (pick * 4).astype(np.uint32)
    z = np.zeros(64, np.float32)
    assert lib.twin_fill(1, P(x), P(off), P(z), x.size, z.size, 0, 16, 0) == 0
    np.testing.assert_array_equal(z, x[pick + 4])
    assert lib.twin_fill(2, P(x), P(off), P(z), x.size, z.size, 0, 5, 0) == 0
    np.testing.assert_array_equal(z, np.arange(5, 69, dtype=np.float32))
    off[3] = 6
    assert lib.twin_fill(1, P(x), P(off), P(z), x.size, z.size, 0, 0, 0) == 1
    assert "Gather: offset 6 of element 3 is not a multiple of the element size" in capfd.readouterr().err


# ---- store atomics ----

@pytest.mark.parametrize("dtype,op,pad", [(np.float32, 0, 0), (np.float32, 1, 1), (np.float32, 2, 0),
                                          (np.float16, 0, 1), (np.float32, 0, 2)])
def test_store_atomics_across_blocks(lib, dtype, op, pad):
    blocks, n = 16, 256
    rng = np.random.default_rng(op)
    if dtype == np.float16:
        x = rng.integers(-8, 8, blocks * n).astype(dtype)  # exact sums in any order
    else:
        x = rng.standard_normal(blocks * n).astype(dtype)
    z0 = rng.standard_normal(n).astype(dtype)
    rows = x.reshape(blocks, n).astype(np.float64)
    for _ in range(3):  # the threads interleave differently each time
        z = z0.copy()
        assert lib.twin_atomic(dtype == np.float16, op, pad, P(x), P(z), n, blocks, 0) == 0
        if op == 0:
            ref = z0.astype(np.float64) + rows.sum(0)
            np.testing.assert_allclose(z.astype(np.float64), ref, rtol=1e-5 if dtype == np.float32 else 1e-3,
                                       atol=1e-4 if dtype == np.float32 else 0.02)
        else:
            fn = np.maximum if op == 1 else np.minimum
            np.testing.assert_array_equal(z, fn(z0, fn.reduce(x.reshape(blocks, n), axis=0)))


def test_store_atomic_type_rule(lib, capfd):
    x = np.ones(256, np.float32)
    z = np.zeros(128, np.float32)
    assert lib.twin_atomic(0, 0, 0, P(x), P(z), 128, 2, 1) == 1
    assert "DataCopy: the store atomic is set for int32_t but the copy moves float" in capfd.readouterr().err
    assert (z == 0).all()


# ---- TQueBind user-position hand-overs, TBuf::AllocTensor ----

def test_que_bind_user_positions(lib, capfd):
    x = np.arange(64, dtype=np.float32)
    z = np.zeros(64, np.float32)
    assert lib.twin_bind(P(x), P(z), 64, 0) == 0
    np.testing.assert_array_equal(z, x + 1)
    assert lib.twin_bind(P(x), P(z), 64, 1) == 1
    assert "DataCopy: pipe race (read-after-write): DataCopy on MTE3 reads" in capfd.readouterr().err


# ---- advanced API, Copy, ArithProgression, ASSERT ----

def test_advanced_math(lib):
    rng = np.random.default_rng(8)
    n = 512
    x = rng.uniform(0.1, 20.0, n).astype(np.float32)
    x64 = x.astype(np.float64)
    for which, ref in [(0, np.log(x64)), (1, np.log2(x64)), (2, np.log10(x64)), (3, 1 / (1 + np.exp(-x64)))]:
        z = np.zeros(n, np.float32)
        assert lib.twin_adv(which, P(x), P(z), n) == 0
        np.testing.assert_allclose(z, ref, rtol=2e-7 if which != 3 else 1e-6, atol=1e-7)
    z = np.full(n, -1, np.float32)
    assert lib.twin_adv(4, P(x), P(z), n) == 0
    rows = n // 16
    np.testing.assert_allclose(z[:rows], x64.reshape(rows, 16)[:, :10].sum(1), rtol=1e-6)
    assert (z[rows:] == -1).all()
    assert lib.twin_adv(5, P(x), P(z), n) == 0
    np.testing.assert_array_equal(z, 2 + 0.5 * np.arange(n, dtype=np.float32))


@pytest.mark.parametrize("which", [8, 9, 10, 11, 12, 13, 15, 16, 17, 18],
                         ids=["tanh", "sign", "power", "power_scalar", "scalar_power", "floor", "erf", "atan",
                              "fused_mul_add", "mul_add_dst"])
def test_advanced_math_more(lib, which):
    """Tanh, Sign, Power (tensor^tensor, tensor^scalar with scratch, scalar^tensor over the
    tensor's size), Floor (with scratch), Erf, Atan, FusedMulAdd against float64."""
    rng = np.random.default_rng(9)
    n = 512
    x = rng.uniform(-4.0, 4.0, n).astype(np.float32)
    x[:4] = [0.0, -0.0, 3.0, -2.5]
    other = rng.uniform(-2.0, 2.0, n).astype(np.float32)
    z = other.copy()
    if which in (10, 11):
        x = np.abs(x) + np.float32(0.5)  # real powers of positive bases
    x64, o64 = x.astype(np.float64), other.astype(np.float64)
    ref = {8: lambda: np.tanh(x64), 9: lambda: np.sign(x64), 10: lambda: x64 ** o64, 11: lambda: x64 ** 1.5,
           12: lambda: 2.0 ** x64, 13: lambda: np.floor(x64), 15: lambda: np.array([math.erf(v) for v in x64]),
           16: lambda: np.arctan(x64), 17: lambda: x64 * o64 + o64,
           18: lambda: x64 * o64 + o64}[which]()
    assert lib.twin_adv(which, P(x), P(z), n) == 0
    np.testing.assert_allclose(z, ref, rtol=1e-6, atol=1e-6)


def shift_ref(x, s, left):
    """CANN's shifts: unsigned logical; signed arithmetic, the sign bit kept (left: the bit below it
    is dropped)."""
    bits = 8 * x.dtype.itemsize
    u = x.view(np.dtype(f"u{x.dtype.itemsize}")).astype(np.uint64)
    sign = np.uint64(1) << np.uint64(bits - 1)
    if left:
        body = (u << np.uint64(s)) & (sign - np.uint64(1))
        return ((u & sign) | body).astype(np.dtype(f"u{x.dtype.itemsize}")).view(x.dtype)
    return x >> s


@pytest.mark.parametrize("which,dtype,s", [(0, np.int16, 3), (1, np.int16, 3), (3, np.int32, 5), (4, np.int32, 5),
                                           (0, np.int16, 0), (4, np.int32, 31)])
def test_shift_count(lib, which, dtype, s):
    rng = np.random.default_rng(40 + which)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, 256, dtype=dtype)
    x[:3] = [-1, info.min, info.max]
    z = np.zeros_like(x)
    assert lib.twin_shift(which, P(x), P(z), x.size, s) == 0
    np.testing.assert_array_equal(z, shift_ref(x, s, left=which in (0, 3)))


def test_not_and_level0_shift(lib, capfd):
    rng = np.random.default_rng(44)
    x = rng.integers(-2 ** 15, 2 ** 15 - 1, 256, dtype=np.int16)
    z = np.zeros_like(x)
    assert lib.twin_shift(2, P(x), P(z), x.size, 0) == 0
    np.testing.assert_array_equal(z, ~x)
    x32 = rng.integers(-2 ** 31, 2 ** 31 - 1, 256, dtype=np.int32)
    z32 = np.full_like(x32, 7)
    assert lib.twin_shift(5, P(x32), P(z32), x32.size, 4) == 0
    ref = np.full_like(x32, 7).reshape(4, 64)
    ref[:2, :40] = (x32.reshape(4, 64) >> 4)[:2, :40]
    np.testing.assert_array_equal(z32.reshape(4, 64), ref)
    assert lib.twin_shift(6, P(x32), P(z32), x32.size, 4) == 1
    assert "ShiftRight: roundEn = true is not modelled by the twin" in capfd.readouterr().err
    assert lib.twin_shift(1, P(x), P(z), x.size, -1) == 1
    assert "ShiftRight: negative shift -1" in capfd.readouterr().err


def test_compares_is_compare_scalar(lib):
    rng = np.random.default_rng(10)
    n = 512
    x = rng.uniform(0.0, 2.0, n).astype(np.float32)
    z = np.zeros(n, np.float32)
    assert lib.twin_adv(14, P(x), P(z), n) == 0
    np.testing.assert_array_equal(np.unpackbits(z.view(np.uint8)[:n // 8], bitorder="little"), x > 1.0)


def test_level0_copy(lib):
    x = np.arange(512, dtype=np.float32)
    z = np.full(512, -1, np.float32)
    assert lib.twin_adv(6, P(x), P(z), 512) == 0
    ref = np.full(512, -1, np.float32)
    for r in range(2):
        for e in range(32):
            ref[(r * 16 + e // 8 * 2) * 8 + e % 8] = x[(r * 8 + e // 8) * 8 + e % 8]
    np.testing.assert_array_equal(z, ref)


def test_scalar_cast_and_trap(lib, capfd):
    x = np.full(64, 2.0009765625 + 1e-4, np.float32)  # between two halves; floor 2
    z = np.zeros(64, np.float32)
    assert lib.twin_adv(19, P(x), P(z), 64) == 0
    assert z[0] == np.float32(np.float16(x[0])) and z[1] == 2.0
    assert lib.twin_adv(20, P(x), P(z), 64) == 1
    assert "Trap: the kernel trapped" in capfd.readouterr().err


def test_kernel_assert(lib, capfd):
    x = np.zeros(64, np.float32)
    z = np.zeros(64, np.float32)
    assert lib.twin_adv(7, P(x), P(z), 64) == 1
    assert "ms_ops twin_adv: block 0: ASSERT: assertion failed: n > 1000" in capfd.readouterr().err


@pytest.mark.parametrize("which", [0, 1])
def test_cann_style_asserts_fail_the_launch(lib, capfd, which):
    x = np.zeros(64, np.float32)
    z = np.zeros(64, np.float32)
    assert lib.twin_utils(which, P(x), P(z), 64) == 1
    assert "assert: assertion failed: n > 1000 (" in capfd.readouterr().err
    assert lib.twin_utils(4, P(x), P(z), 64) == 0  # the next launch runs


def test_reduce_sum_leaves_its_result_in_acc_val(lib, monkeypatch):
    monkeypatch.setenv("MS_OPS_TWIN_STRICT", "1")
    x = np.arange(1, 41, dtype=np.float32) / 8
    z = np.full(40, -1.0, np.float32)
    assert lib.twin_utils(2, P(x), P(z), 40) == 0
    total = np.float32(x.astype(np.float64).sum())
    assert z[0] == total and z[1] == total and z[2] == total


def test_ascendc_utils_set_mask_and_sizes(lib, monkeypatch):
    monkeypatch.setenv("MS_OPS_TWIN_STRICT", "1")
    x = np.arange(64, dtype=np.float32)
    z = np.full(64, -5.0, np.float32)
    assert lib.twin_utils(3, P(x), P(z), 64) == 0
    np.testing.assert_array_equal(z[:10], x[:10] + 1)
    np.testing.assert_array_equal(z[10:], -5.0)
    z = np.zeros(64, np.float32)
    assert lib.twin_utils(4, P(x), P(z), 64) == 0
    np.testing.assert_array_equal(z[:8], [1, 0, 16, 32, 16, 2, 17, 1])


def list_descriptor(tensors, count_in_first=True):
    """The GM descriptor of a tensor list: data offset, one entry per tensor (dim | count or
    index << 32, then the shape), then the data addresses."""
    dim = tensors[0].ndim
    words = [0]
    for i, t in enumerate(tensors):
        high = len(tensors) if (i == 0 and count_in_first) else (i if i else 0)
        words += [dim | (high << 32), *t.shape]
    words[0] = 8 * len(words)
    words += [t.ctypes.data for t in tensors]
    return np.array(words, np.uint64)


@pytest.mark.parametrize("count_in_first", [True, False])
def test_list_tensor_desc(lib, count_in_first):
    rng = np.random.default_rng(3)
    tensors = [rng.integers(-8, 8, shape).astype(np.float32) for shape in [(3, 5), (1, 7), (4, 2)]]
    desc = list_descriptor(tensors, count_in_first)
    out = np.zeros(65, np.float32)
    assert lib.twin_list_tensor(P(desc), desc.nbytes, 3, P(out)) == 0
    np.testing.assert_array_equal(out[:3], [t.sum() for t in tensors])
    np.testing.assert_array_equal(out[16:19], [2, 2, 2])
    np.testing.assert_array_equal(out[32:35], [5, 7, 2])
    np.testing.assert_array_equal(out[48:51], [1, 1, 1])
    assert out[64] == 3


def test_list_tensor_desc_rules(lib, capfd):
    tensors = [np.ones((2, 3), np.float32), np.ones((4, 1), np.float32)]
    desc = list_descriptor(tensors)
    out = np.zeros(65, np.float32)
    assert lib.twin_list_tensor(P(desc), desc.nbytes, 3, P(out)) == 1
    assert "bad tensor list descriptor: it describes 2 tensors in 72 bytes, not the 3 in 72 given" in \
        capfd.readouterr().err
    bad = desc.copy()
    bad[0] = 16
    assert lib.twin_list_tensor(P(bad), 0, 0, P(out)) == 1
    assert "inside its first entry" in capfd.readouterr().err


def transdata(lib, bits, x, row_blocks, z, dst_high=0, src_high=0, repeat=1, dst_stride=0, src_stride=0, lists=(0, 1)):
    outs = []
    for lst in lists:
        out = z.copy()
        assert lib.twin_transdata(bits, lst, P(x), row_blocks, P(out), out.nbytes, dst_high, src_high, repeat,
                                  dst_stride, src_stride) == 0
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[-1])  # address arrays and tensor arrays agree
    return outs[0]


def test_trans_data_to_5hd_16_bit_is_a_16_by_16_transpose(lib):
    x = np.arange(256, dtype=np.float16).reshape(16, 16)
    z = transdata(lib, 16, x, 1, np.zeros(256, np.float16))
    np.testing.assert_array_equal(z.reshape(16, 16), x.T)


def test_trans_data_to_5hd_32_bit_splits_each_column_in_two_blocks(lib):
    x = np.arange(128, dtype=np.float32).reshape(16, 8)
    z = transdata(lib, 32, x, 1, np.zeros(128, np.float32)).reshape(16, 8)
    for k in range(16):
        np.testing.assert_array_equal(z[k], x[8 * (k % 2):8 * (k % 2) + 8, k // 2])
    # so z read as [8, 16] is the transpose (TransposeBase16M8 of CANN's pooling kernels)
    np.testing.assert_array_equal(z.reshape(8, 16), x.T)


def test_trans_data_to_5hd_8_bit_halves(lib):
    x = np.arange(512, dtype=np.int16).astype(np.int8).reshape(16, 32)
    z0 = np.full(512, -1, np.int8)
    z = transdata(lib, 8, x, 1, z0, dst_high=1, src_high=1).reshape(16, 32)
    np.testing.assert_array_equal(z[:, 16:], x[:, 16:].T)
    np.testing.assert_array_equal(z[:, :16], -1)  # the other half of each destination block is kept


def test_basic_transpose_16_by_16(lib, capfd):
    x = np.arange(256, dtype=np.float16).reshape(16, 16)
    z = np.zeros(256, np.float16)
    assert lib.twin_transpose16(P(x), P(z), 0) == 0
    np.testing.assert_array_equal(z.reshape(16, 16), x.T)
    assert lib.twin_transpose16(P(x), P(z), 1) == 1
    assert "Transpose: the destination overlaps the source" in capfd.readouterr().err


def test_trans_data_to_5hd_repeats_and_strides(lib):
    # [16, 16] floats as two repeats over 8-column blocks: the source moves 1 block, the destination 16.
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    z = transdata(lib, 32, x, 2, np.zeros(256, np.float32), repeat=2, dst_stride=16, src_stride=1)
    np.testing.assert_array_equal(z.reshape(16, 16), x.T)
    # A single repeat moves the addresses by one stride already.
    z = transdata(lib, 32, x, 2, np.zeros(256 + 8, np.float32), repeat=1, dst_stride=1, src_stride=1)
    np.testing.assert_array_equal(z[8:136].reshape(8, 16), x[:, 8:].T)
    np.testing.assert_array_equal(z[:8], 0)


# ---- Sort32 / MrgSort ----

def run_sort(lib, which, scores):
    n = scores.size
    index = np.arange(n, dtype=np.uint32) + 1000
    out = np.zeros(2 * n, np.float32)
    counts = np.zeros(4, np.uint16)
    assert lib.twin_sort(which, P(scores), P(index), P(out), n, P(counts)) == 0
    pairs = out.reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1].view(np.uint32), counts


def descending(scores, index):
    order = np.argsort(-scores, kind="stable")  # ties: the earlier element first
    return scores[order], index[order]


def test_sort32_and_merge(lib):
    rng = np.random.default_rng(9)
    scores = rng.integers(-20, 20, 128).astype(np.float32)  # many ties
    index = np.arange(128, dtype=np.uint32) + 1000
    got_s, got_i, _ = run_sort(lib, 0, scores)
    for r in range(4):
        ref_s, ref_i = descending(scores[r * 32:(r + 1) * 32], index[r * 32:(r + 1) * 32])
        np.testing.assert_array_equal(got_s[r * 32:(r + 1) * 32], ref_s)
        np.testing.assert_array_equal(got_i[r * 32:(r + 1) * 32], ref_i)
    got_s, got_i, _ = run_sort(lib, 1, scores)
    ref_s, ref_i = descending(scores, index)  # queues are in element order, so ties stay stable
    np.testing.assert_array_equal(got_s, ref_s)
    np.testing.assert_array_equal(got_i, ref_i)


def test_merge_stops_when_a_queue_is_exhausted(lib):
    scores = np.concatenate([np.arange(100, 68, -1), np.arange(31, -1, -1), np.zeros(64)]).astype(np.float32)
    got_s, _, counts = run_sort(lib, 2, scores)
    # queue 1 holds 100..69, all above queue 2: it runs out after 32 and the merge stops there
    assert list(counts) == [32, 0, 0, 0]
    np.testing.assert_array_equal(got_s[:32], scores[:32])


# ---- mixed launch, cross-core flags ----

def test_mixed_launch_with_cross_core_flags(lib):
    groups, rounds = 5, 4
    slots = np.zeros(groups, np.float32)
    out = np.zeros((rounds, groups * 2), np.float32)
    info = np.zeros((groups * 2, 3), np.int32)
    assert lib.twin_mixed(groups, rounds, P(slots), P(out), P(info), 0) == 0
    idx = np.arange(groups * 2)
    ref = (np.arange(rounds)[:, None] * 100 + idx[None, :] // 2) * 10 + idx[None, :] % 2
    np.testing.assert_array_equal(out, ref.astype(np.float32))
    np.testing.assert_array_equal(info, np.tile([groups, 2, 1], (groups * 2, 1)))


@pytest.mark.parametrize("bad,message", [
    (1, "twin_mixed: AIC 0: CrossCoreSetFlag: mode 1 synchronises the two AIVs of a group; called on the AIC"),
    (2, "twin_mixed: AIC 0: CrossCoreSetFlag: flag id 16 is outside [0, 15]"),
])
def test_cross_core_flag_rules(lib, capfd, bad, message):
    slots = np.zeros(1, np.float32)
    out = np.zeros(2, np.float32)
    info = np.zeros(6, np.int32)
    assert lib.twin_mixed(1, 1, P(slots), P(out), P(info), bad) == 1
    assert f"ms_ops {message}" in capfd.readouterr().err
    assert lib.twin_crosscore_plain(0) == 1
    assert ("CrossCoreSetFlag: mode 1 needs a mixed launch (one AIC and two AIVs per group); a launch of vector "
            "cores only has mode 0") in capfd.readouterr().err
    assert lib.twin_crosscore_plain(1) == 1
    assert "SyncAll: the blocks of Launch do not all run at once" in capfd.readouterr().err


def test_mode_0_flags_among_vector_cores(lib):
    blocks, rounds = 6, 4
    slots, sums = np.zeros(blocks, np.int32), np.full((rounds, blocks), -1, np.int32)
    assert lib.twin_aiv_flags(P(slots), P(sums), blocks, rounds, 0) == 0
    r = np.arange(rounds)[:, None]
    np.testing.assert_array_equal(sums, np.broadcast_to(np.arange(blocks).sum() * rounds + blocks * r,
                                                        (rounds, blocks)))


@pytest.mark.parametrize("bad,message", [
    (1, "block 1: CrossCoreWaitFlag: flag 3 waited for with no set of this core before it"),
    (2, "block 0: CrossCoreSetFlag: flag 3 would count 16 sets not yet waited for"),
])
def test_mode_0_flag_rules_among_vector_cores(lib, capfd, bad, message):
    slots, sums = np.zeros(4, np.int32), np.zeros((1, 4), np.int32)
    assert lib.twin_aiv_flags(P(slots), P(sums), 4, 1, bad) == 1
    assert message in capfd.readouterr().err


# ---- TBufPool ----

def test_buf_pool_stages_reuse_memory(lib, capfd):
    x = np.arange(128, dtype=np.float32)
    z = np.zeros(256, np.float32)
    assert lib.twin_buf_pool(P(x), P(z), 128, 0) == 0
    np.testing.assert_array_equal(z, np.concatenate([x + 1, x * 2]))
    assert lib.twin_buf_pool(P(x), P(z), 128, 1) == 1
    assert ("ms_ops twin_buf_pool: block 0: TBufPool::InitBuffer: request of 1 x 2080 bytes (2080 bytes, 0 already "
            "in use) exceeds the 2048-byte pool") in capfd.readouterr().err


# ---- the further Cast pairs of Atlas A2 ----

NONE, RINT, FLOOR, CEIL, ROUND, TRUNC = range(6)
ROUNDERS = {RINT: np.rint, FLOOR: np.floor, CEIL: np.ceil, TRUNC: np.trunc,
            ROUND: lambda v: np.trunc(v + np.copysign(0.5, v))}


def cast_pair(lib, pair, mode, x, out_dtype):
    z = np.zeros(x.size, out_dtype)
    status = lib.twin_cast_pair(pair, mode, P(x), P(z), x.size)
    return status, z


def test_cast_to_integers_rounds_and_saturates(lib):
    h = np.float16([-300.0, 300.0, -2.5, -1.5, 2.5, 0.5, 127.4, -128.6] * 4)
    for mode, rnd in ROUNDERS.items():
        status, z = cast_pair(lib, 0, mode, h, np.int8)
        assert status == 0
        np.testing.assert_array_equal(z, np.clip(rnd(h.astype(np.float64)), -128, 127).astype(np.int8))
    f = np.float32([1e19, -1e19, 2.5e9, -3.7, 3.7, np.nan, 0.5, -0.5] * 4)
    status, z = cast_pair(lib, 2, TRUNC, f, np.int64)
    assert status == 0
    small = np.clip(np.trunc(np.nan_to_num(f.astype(np.float64))), -1e18, 1e18).astype(np.int64)
    ref = np.where(f > 9.3e18, np.iinfo(np.int64).max, np.where(f < -9.3e18, np.iinfo(np.int64).min, small))
    np.testing.assert_array_equal(z, ref)
    i64 = np.int64([2 ** 40, -2 ** 40, 5, -5] * 8)
    status, z = cast_pair(lib, 4, NONE, i64, np.int32)
    assert status == 0
    np.testing.assert_array_equal(z, np.clip(i64, -2 ** 31, 2 ** 31 - 1).astype(np.int32))
    b = (np.float32([2.5, -2.5, 3.5, 100.75] * 8).view(np.uint32) >> 16).astype(np.uint16)
    status, z = cast_pair(lib, 5, ROUND, b, np.int32)
    assert status == 0
    np.testing.assert_array_equal(z, np.int32([3, -3, 4, 101] * 8))


def test_cast_from_integers_rounds_in_the_modes_direction(lib):
    i = np.int32([2 ** 24 + 1, -(2 ** 24 + 1), 2 ** 24 + 3, 7, 2 ** 31 - 1, -2 ** 31, 16777217, 0] * 4)
    exact = i.astype(np.float64)
    for mode in (FLOOR, CEIL, TRUNC, ROUND, RINT, NONE):
        status, z = cast_pair(lib, 1, mode, i, np.float32)
        assert status == 0
        z64 = z.astype(np.float64)
        if mode == FLOOR:
            assert (z64 <= exact).all()
        elif mode == CEIL:
            assert (z64 >= exact).all()
        elif mode == TRUNC:
            assert (np.abs(z64) <= np.abs(exact)).all()
        else:  # nearest: ties to even (RINT, NONE) or away from zero (ROUND)
            assert (np.abs(z64 - exact) <= np.spacing(np.abs(z)).astype(np.float64) / 2).all()
        assert (np.abs(z64 - exact) < np.spacing(np.abs(z)).astype(np.float64)).all()
    status, z = cast_pair(lib, 1, ROUND, np.int32([2 ** 24 + 1] * 32), np.float32)
    assert z[0] == 2 ** 24 + 2  # the tie goes away from zero
    s16 = np.int16([2049, -2049, 32767, 5] * 8)
    status, z = cast_pair(lib, 3, CEIL, s16, np.float16)
    assert status == 0
    np.testing.assert_array_equal(z, np.float16([2050, -2048, 32768, 5] * 8))


def test_cast_int32_to_half_dequantises_by_the_deq_scale(lib, capfd):
    i = np.int32([3, -7, 4097, 2 ** 15 + 3, -1, 0, 65535, 131008] * 4)  # 131008 / 2: the largest half
    status, z = cast_pair(lib, 7, NONE, i, np.float16)
    assert status == 0
    np.testing.assert_array_equal(z, (i.astype(np.float64) * 0.5).astype(np.float16))
    status, _ = cast_pair(lib, 8, NONE, i, np.float16)
    assert status == 1
    assert "DEQSCALE register, which no SetDeqScale has set" in capfd.readouterr().err
    status, _ = cast_pair(lib, 7, RINT, i, np.float16)
    assert status == 1
    assert "int32 -> half (a dequantisation)" in capfd.readouterr().err


def test_cast_round_mode_rule(lib, capfd):
    i = np.int32(np.arange(32))
    status, _ = cast_pair(lib, 6, FLOOR, i, np.int16)
    assert status == 1
    assert ("ms_ops twin_cast_pair: block 0: Cast: round mode 2 is not supported for this conversion on Atlas A2"
            in capfd.readouterr().err)


# ---- softmax family ----

def run_softmax(lib, which, x, stats, valid):
    m, k = x.shape
    z = np.full(x.shape, -7, np.float32)
    st = stats.copy()
    assert lib.twin_softmax(which, P(x), P(z), P(st), m, k, valid) == 0
    return z, st.reshape(3, m, 8)


def test_softmax_family(lib):
    rng = np.random.default_rng(10)
    m, k, valid = 4, 40, 37
    x = rng.standard_normal((m, k)).astype(np.float32) * 3
    v = x[:, :valid].astype(np.float64)
    mx = v.max(1, keepdims=True)
    e = np.exp(v - mx)
    zero = np.zeros(3 * m * 8, np.float32)
    z, st = run_softmax(lib, 0, x, zero, valid)
    np.testing.assert_allclose(z[:, :valid], e / e.sum(1, keepdims=True), rtol=2e-6, atol=1e-7)
    assert np.isnan(z[:, valid:]).all()  # padding columns are not written: stale UB (0xFF) reads as NaN
    np.testing.assert_array_equal(st[0], np.repeat(mx.astype(np.float32), 8, 1))
    np.testing.assert_allclose(st[1], np.repeat(e.sum(1, keepdims=True), 8, 1), rtol=2e-6)
    z1, _ = run_softmax(lib, 1, x, st.reshape(-1), valid)  # SimpleSoftMax with those statistics
    np.testing.assert_array_equal(z1, z)
    z2, st2 = run_softmax(lib, 2, x, zero, valid)  # FlashV2: not divided by the sum
    np.testing.assert_allclose(z2[:, :valid], e, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(st2[1][:, 0], e.sum(1), rtol=2e-6)
    # isUpdate: merge with the statistics of an earlier piece of the same rows
    prev_max = np.float32([[5.0], [-5.0], [0.0], [10.0]])
    prev_sum = np.float32([[2.0], [3.0], [1.5], [0.25]])
    stats = np.concatenate([np.repeat(prev_max, 8, 1), np.repeat(prev_sum, 8, 1), np.zeros((m, 8), np.float32)])
    z3, st3 = run_softmax(lib, 3, x, stats.reshape(-1), valid)
    new_max = np.maximum(prev_max.astype(np.float64), mx)
    exp_max = np.exp(prev_max - new_max)
    np.testing.assert_allclose(z3[:, :valid], np.exp(v - new_max), rtol=2e-6, atol=1e-7)
    np.testing.assert_array_equal(st3[0][:, 0], new_max[:, 0].astype(np.float32))
    np.testing.assert_allclose(st3[2][:, 0], exp_max[:, 0], rtol=2e-6)
    np.testing.assert_allclose(st3[1][:, 0], (prev_sum * exp_max + np.exp(v - new_max).sum(1, keepdims=True))[:, 0],
                               rtol=2e-6)


# ---- the reserved top of UB ----

USABLE_UB = 192 * 1024 - 256  # ms_ops::kAtlasA2.ubSize


def test_buffer_over_the_whole_ub_is_usable_below_the_reservation(lib, capfd):
    z = np.zeros(8, np.float32)
    assert lib.twin_reserved_ub(USABLE_UB // 4 - 8, P(z)) == 0
    np.testing.assert_array_equal(z, np.full(8, 3, np.float32))
    z[:] = 0
    assert lib.twin_reserved_ub(USABLE_UB // 4, P(z)) == 1
    assert (f"ms_ops twin_reserved_ub: block 0: Duplicate: touches UB bytes [{USABLE_UB}, {USABLE_UB + 32}) above the "
            f"usable {USABLE_UB} bytes") in capfd.readouterr().err
    assert (z == 0).all()


# ---- overlapping operands: the NPU's repeats read before they write ----

def test_widening_cast_from_the_back_of_its_destination_and_writes_behind_the_source(lib):
    """A narrow source in the back half of its wide destination (shipped kernels widen in place so)
    and a destination behind its source: no repeat writes what a later one reads."""
    x = (np.arange(256, dtype=np.float32) - 100.25) * 3.5
    z = np.zeros(256, np.float32)
    assert lib.twin_overlap(0, P(x), P(z)) == 0
    np.testing.assert_array_equal(z, x.astype(np.float16).astype(np.float32))
    assert lib.twin_overlap(2, P(x), P(z)) == 0
    np.testing.assert_array_equal(z, x + 1)


@pytest.mark.parametrize("which,message", [
    (1, "Cast: the destination (UB offset 0, 1024 bytes) overlaps a source (UB offset 0, 512 bytes) so that "
        "repeat 0 writes bytes a later repeat reads"),
    (3, "Adds: the destination (UB offset 64, 1024 bytes) overlaps a source (UB offset 32, 1024 bytes) so that "
        "repeat 0 writes bytes a later repeat reads"),
])
def test_overlap_where_a_repeat_overwrites_a_later_repeats_source_fails(lib, capfd, which, message):
    x = np.arange(256, dtype=np.float32)
    z = np.zeros(256, np.float32)
    assert lib.twin_overlap(which, P(x), P(z)) == 1
    assert f"ms_ops twin_overlap: block 0: {message}" in capfd.readouterr().err
    assert (z == 0).all()


# ---- debug output ----

def test_printf_and_dump_tensor_print_the_values(lib, capfd):
    x = np.array([1.5, -2, 3.25, 4, 5, 6, 7, 8], np.float32)
    assert lib.twin_dump(P(x), 0) == 0
    out = capfd.readouterr().out.splitlines()
    assert out[0] == "block 0 of 1: 1.500000"
    assert out[1].startswith("DumpTensor: desc=7, addr=0, data_type=float32, position=UB, dump_size=4")
    assert out[2] == "[1.500000, -2.000000, 3.250000, 4.000000]"
    assert out[3].startswith("DumpTensor: desc=9, addr=") and out[3].endswith("position=GM, dump_size=6")
    assert out[4:6] == ["[1.500000, -2.000000, 3.250000]", "[4.000000, 5.000000, 6.000000]"]


def test_system_cycle_counts_at_50_mhz(lib):
    c = np.zeros(2, np.int64)
    assert lib.twin_cycles(20000, P(c)) == 0
    assert 20000 * 50 <= c[1] - c[0] < 20000 * 50 * 5  # 20 ms slept: at least 1e6 cycles


@pytest.mark.parametrize("which,call", [(0, "LocalTensor"), (1, "GlobalTensor::SetGlobalBuffer")])
def test_int4_compiles_and_its_tensors_are_refused(lib, capfd, which, call):
    z = np.zeros(8, np.float32)
    assert lib.twin_int4(2, P(z)) == 0 and z[0] == 1
    assert lib.twin_int4(which, P(z)) == 1
    assert (f"ms_ops twin_int4: block 0: {call}: int4b_t tensors are not modelled by the twin"
            in capfd.readouterr().err)


def test_dump_tensor_past_its_tensor_fails(lib, capfd):
    assert lib.twin_dump(P(np.zeros(8, np.float32)), 1) == 1
    assert ("ms_ops twin_dump: block 0: DumpTensor: UB access out of range: elements up to 9 of a 8-element UB "
            "buffer") in capfd.readouterr().err


def test_tbuf_tensor_past_its_buffer_is_checked_where_touched(lib, capfd):
    z = np.zeros(32, np.float32)
    assert lib.twin_tbuf_past_end(32, P(z)) == 0
    np.testing.assert_array_equal(z, np.full(32, 5, np.float32))
    assert lib.twin_tbuf_past_end(40, P(z)) == 1
    assert ("ms_ops twin_tbuf_past_end: block 0: Duplicate: UB access out of range: elements up to 40 of a "
            "32-element UB buffer") in capfd.readouterr().err


# ---- KERNEL_TASK_TYPE_DEFAULT ----

def syntax_ok(tmp_path, code):
    src = tmp_path / "k.cpp"
    src.write_text(code)
    build = load_build_module()
    flags = [f for f in build.CXXFLAGS if f.startswith("-std") or f.startswith("-march")]
    cmd = ["g++", *flags, "-fsyntax-only", *(f"-I{d}" for d in build.include_dirs(ROOT)), str(src)]
    return subprocess.run(cmd, capture_output=True).returncode == 0


def test_matmul_template_parameters_and_configs(tmp_path):
    # CANN's spellings: CubeFormat at global scope, matmul:: as AscendC, MatmulImpl, configs from
    # GetNormalConfig / GetMDLConfig / GetBasicConfig / GetSpecialMDLConfig / GetIBShareNormConfig
    # and the CFG_ / MM_CFG_ constants as template arguments, up to 7 template parameters.
    code = '''#include "kernel_operator.h"
#include "lib/matmul_intf.h"
using namespace AscendC;
constexpr MatmulConfig MDL = GetMDLConfig(false, false, 0, false, false, false, true);
constexpr MatmulConfig NORM = GetNormalConfig(false, false, false, BatchMode::BATCH_LESS_THAN_L1);
using A = matmul::MatmulType<TPosition::GM, ::CubeFormat::ND, half, false, ::LayoutMode::NONE>;
using C = matmul::MatmulType<TPosition::GM, CubeFormat::ND, float>;
matmul::MatmulImpl<A, A, C, C, MDL> a;
Matmul<A, A, C, C, NORM, MatmulCallBackFunc<nullptr, nullptr, nullptr>> b;
static_assert(MDL.doMultiDataLoad && !MDL.doNorm && MDL.enUnitFlag && NORM.doNorm && CFG_NORM.doNorm, "");
constexpr MatmulConfig BB = GetBasicConfig(64, 128, 32);
constexpr MatmulConfig SMDL = GetSpecialMDLConfig(false, false, 1);
constexpr MatmulConfig IBS = GetIBShareNormConfig(false, false, false, BatchMode::BATCH_LESS_THAN_L1, true);
static_assert(BB.doBasicBlock && BB.basicM == 64 && BB.basicN == 128 && BB.basicK == 32 && !BB.doNorm, "");
static_assert(SMDL.doSpecialMDL && SMDL.doMTE2Preload == 1 && IBS.doIBShareNorm && IBS.enableDoubleCache, "");
static_assert(MM_CFG_BB.basicM == 128 && CFG_IBSHARE_NORM.doIBShareNorm && CFG_NORM.enableUBReuse, "");
Matmul<A, A, C, C, BB> c;
Matmul<A, A, C, C, CFG_IBSHARE_NORM> d;
'''
    assert syntax_ok(tmp_path, code)


STD_CODE = '''#include "kernel_operator_intf.h"
#include "ascendc/host_api/tiling/template_argument.h"
using namespace AscendC;
template <typename T>
__aicore__ inline int Pick(T x) {
  if constexpr (IsSameType<T, float>::value) return unlikely(x > 0) ? 1 : 2;
  else if constexpr (Std::is_same_v<T, half>) return 3;
  else static_assert(Std::always_false_v<T>, "no such type");
}
static_assert(!AscendC::IsSameType<float, half>::value && Std::is_base_of_v<Std::false_type, Std::is_same<int, float>>, "");
static_assert(Std::is_same_v<Std::remove_cvref_t<const int &>, int> && Std::is_tuple_v<Std::tuple<int, float>>, "");
static_assert(Std::get<1>(Std::make_tuple(1, 2.5f)) == 2.5f && Std::min(3, 4) == 3 && Std::max(3, 4) == 4, "");
static_assert(Std::tuple_size_v<Std::tuple<int, int>> == 2 && Std::is_same_v<Std::conditional_t<true, int, float>, int>, "");
static_assert(C_DT_FLOAT == 0 && C_DT_FLOAT16 == 1 && C_DT_BF16 == 27 && C_DT_INT64 == 9, "");
int Use() { return Pick(1.0f) + Pick(half(1.0f)) + (likely(true) ? 0 : 1); }
%s
'''


@pytest.mark.parametrize("extra,ok", [("", True), ("static_assert(IsSameType<float, half>::value, \"\");", False),
                                      ("int Bad() { return Pick(1); }", False)])
def test_std_helpers_and_dtype_numbers(tmp_path, extra, ok):
    # AscendC::IsSameType, AscendC::Std (type traits, tuple, min/max, always_false_v),
    # likely/unlikely and the C_DT_* numbers of tiling-key templates, as CANN kernels spell them.
    assert syntax_ok(tmp_path, STD_CODE % extra) == ok


@pytest.mark.parametrize("token,ok", [("KERNEL_TYPE_MIX_AIC_1_2", True), ("KERNEL_TYPE_AIV_ONLY", True),
                                      ("KERNEL_TYPE_MAX", False), ("KERNEL_TYPE_ANYTHING", False), ("3", False)])
def test_kernel_task_type_tokens(tmp_path, token, ok):
    code = '#include "kernel_operator.h"\nvoid k() { KERNEL_TASK_TYPE_DEFAULT(%s); }\n' % token
    assert syntax_ok(tmp_path, code) == ok


# ---- And / Or / Axpy (twin_logic_axpy) ----

def logic_axpy(lib, types, op, x, y, mask=0, repeat=0, s=0.0):
    z = np.zeros_like(y)
    assert lib.twin_logic_axpy(types, op, P(x), P(y), P(z), x.size, mask, repeat, s) == 0
    return z


@pytest.mark.parametrize("op,ref", [(0, np.bitwise_and), (1, np.bitwise_or)])
def test_and_or_count(lib, op, ref):
    rng = np.random.default_rng(30)
    x, y = (rng.integers(0, 2 ** 16, 272).astype(np.uint16) for _ in range(2))
    np.testing.assert_array_equal(logic_axpy(lib, 0, op, x, y), ref(x, y))


def test_and_level0_first_lanes(lib):
    rng = np.random.default_rng(31)
    x, y = (rng.integers(0, 2 ** 16, 512).astype(np.uint16) for _ in range(2))
    z = logic_axpy(lib, 0, 2, x, y, mask=100, repeat=3).reshape(4, 128)
    xr, yr = x.reshape(4, 128), y.reshape(4, 128)
    np.testing.assert_array_equal(z[:3, :100], xr[:3, :100] & yr[:3, :100])
    np.testing.assert_array_equal(z[:3, 100:], yr[:3, 100:])  # masked-off lanes keep the old value
    np.testing.assert_array_equal(z[3], yr[3])


@pytest.mark.parametrize("types,dst,src", [(1, np.float32, np.float32), (2, np.float16, np.float16),
                                           (3, np.float32, np.float16)])
def test_axpy_count(lib, types, dst, src):
    rng = np.random.default_rng(32)
    x = rng.standard_normal(400).astype(src)
    y = rng.standard_normal(400).astype(dst)
    s = 0.375
    z = logic_axpy(lib, types, 3, x, y, s=s)
    ref = (x.astype(np.float64) * s + y.astype(np.float64)).astype(np.float32).astype(dst)
    np.testing.assert_array_equal(z, ref)


@pytest.mark.parametrize("types,dst,src", [(1, np.float32, np.float32), (3, np.float32, np.float16)])
def test_axpy_level0(lib, types, dst, src):
    rng = np.random.default_rng(33)
    x = rng.standard_normal(256).astype(src)
    y = rng.standard_normal(256).astype(dst)
    z = logic_axpy(lib, types, 4, x, y, mask=40, repeat=2, s=-2.0).reshape(4, 64)
    # repeat r covers dst floats [64 r, 64 r + 64) and src elements [64 r, 64 r + 64) either way
    xr, yr = x.reshape(4, 64).astype(np.float64), y.reshape(4, 64)
    np.testing.assert_array_equal(z[:2, :40], (xr[:2, :40] * -2.0 + yr[:2, :40]).astype(np.float32))
    np.testing.assert_array_equal(z[:2, 40:], yr[:2, 40:])
    np.testing.assert_array_equal(z[2:], yr[2:])


# ---- GatherMask (twin_gather_mask) ----

def gather_mask_model(x, keep, repeat, per_repeat, src0_rep):
    """The kept elements of each repeat (src0 repeat stride src0_rep blocks of 8 floats), packed."""
    out = []
    for r in range(repeat):
        row = x[r * src0_rep * 8:][:per_repeat]
        out += [v for e, v in enumerate(row) if keep(r, e)]
    return np.array(out, np.float32)


def gather_mask(lib, pattern, counter, x, bits, mask, repeat, src0_rep, src1_rep):
    z = np.full(x.size, -7.0, np.float32)
    cnt = np.zeros(1, np.uint64)
    assert lib.twin_gather_mask(pattern, counter, P(x), P(bits), P(z), x.size, bits.size, mask, repeat, src0_rep,
                                src1_rep, P(cnt)) == 0
    return z, int(cnt[0])


@pytest.mark.parametrize("pattern", [1, 2, 3, 6, 7])
def test_gather_mask_builtin_normal(lib, pattern):
    x = np.arange(256, dtype=np.float32)
    z, cnt = gather_mask(lib, pattern, 0, x, np.zeros(8, np.uint32), 0, 3, 10, 0)
    keep = {1: lambda r, e: e % 2 == 0, 2: lambda r, e: e % 2 == 1, 3: lambda r, e: e % 4 == 0,
            6: lambda r, e: e % 4 == 3, 7: lambda r, e: True}[pattern]
    ref = gather_mask_model(x, keep, 3, 64, 10)
    assert cnt == ref.size
    np.testing.assert_array_equal(z[:cnt], ref)
    assert (z[cnt:] == -7.0).all()


def test_gather_mask_tensor_counter(lib):
    rng = np.random.default_rng(34)
    x = rng.standard_normal(512).astype(np.float32)
    bits = rng.integers(0, 2 ** 32, 16, dtype=np.uint64).astype(np.uint32)
    # counter mode: 70 elements a repeat, 2 repeats 16 blocks apart; pattern rows 8 words (1 block) apart
    z, cnt = gather_mask(lib, 0, 1, x, bits, 70, 2, 16, 1)
    words = bits.reshape(2, 8)
    ref = gather_mask_model(x, lambda r, e: (int(words[r, e // 32]) >> (e % 32)) & 1, 2, 70, 16)
    assert cnt == ref.size
    np.testing.assert_array_equal(z[:cnt], ref)


# ---- Broadcast (twin_broadcast) ----

def test_broadcast(lib, capfd):
    rows, cols = 6, 24
    x = np.arange(1, 25, dtype=np.float32)
    z = np.zeros(rows * cols, np.float32)
    assert lib.twin_broadcast(0, P(x), P(z), rows, cols) == 0
    np.testing.assert_array_equal(z.reshape(rows, cols), np.broadcast_to(x[:rows, None], (rows, cols)))
    assert lib.twin_broadcast(1, P(x), P(z), rows, cols) == 0
    np.testing.assert_array_equal(z.reshape(rows, cols), np.broadcast_to(x[None, :cols], (rows, cols)))
    z = np.zeros(cols, np.float32)
    assert lib.twin_broadcast(2, P(x), P(z), 1, cols) == 0
    np.testing.assert_array_equal(z, np.full(cols, x[0]))
    z = np.zeros(rows * cols, np.float32)
    assert lib.twin_broadcast(3, P(x), P(z), rows, cols) == 1
    assert ("ms_ops twin_broadcast: block 0: Broadcast: srcShape[1] = 2 does not broadcast to dstShape[1] = 24 "
            "along axis 1") in capfd.readouterr().err


@pytest.mark.parametrize("aic", [0, 1])
def test_aic_only_kernel_runs_on_cube_cores(lib, aic):
    out = np.full(2, -1, np.int32)
    assert lib.twin_task_type(aic, P(out)) == 0
    assert list(out) == [aic, aic]


# ---- level-0 Compare / Select / Cast, SoftmaxFlash, LogSoftMax, tiling-key templates, flag modes ----

U8P = ctypes.POINTER(ctypes.c_uint64)
SIGNATURES0 = {
    "twin_cmp0": [I, I, I, V, V, V, U, V, U64, U64, ctypes.c_float],
    "twin_cmp0_int32": [I, V, V, V],
    "twin_sel0": [I, I, I, V, V, V, V, U64, U64, U64, U, V, ctypes.c_float],
    "twin_sel_count0": [V, V, V, V, U],
    "twin_init_gm": [V, U, ctypes.c_float, I],
    "twin_softmax_flash_f16": [V, V, V, V, U, U, I],
    "twin_cast0": [I, I, I, V, V, U64, U64, U64, U, V],
    "twin_softmax_flash": [I, V, V, V, U, U, U],
    "twin_tpl": [U64, U64, U64, V, V, U, U8P, I],
    "twin_tpl_decode": [U64, V],
    "twin_crosscore_modes": [I, I],
}
LT, GT, EQ, LE, GE, NE = range(6)
CMP = [np.less, np.greater, np.equal, np.less_equal, np.greater_equal, np.not_equal]


@pytest.fixture(scope="module")
def lib0(tmp_path_factory):
    return build_cases(tmp_path_factory.mktemp("twin_api0_cases"), "twin_api0_cases", SIGNATURES0)


def lanes_on(kind, bits, length, lanes, repeat):
    """(repeats, on(r, e)) for kind 0 bitwise, 1 contiguous, 2 counter mode, 3 bits set beforehand."""
    if kind == 2:
        return -(-length // lanes), lambda r, e: r * lanes + e < length
    return active(1 if kind == 1 else 0, bits, length, lanes, repeat)


def cmp_inputs(dtype, seed):
    rng = np.random.default_rng(seed)
    n = BUF // np.dtype(dtype).itemsize
    x = rng.integers(-3, 4, n).astype(dtype)
    y = rng.integers(-3, 4, n).astype(dtype)
    return x, y, rng.integers(0, 256, BUF).astype(np.uint8)


@pytest.mark.parametrize("dtype,form,mode,repeat,strides", [
    (np.float32, 0, LT, 3, (1, 2, 8, 16)),
    (np.float16, 0, GE, 2, (2, 1, 16, 8)),
    (np.float32, 1, NE, 4, (1, 1, 4, 8)),
    (np.float16, 2, LE, 1, (1, 3, 8, 8)),
    (np.float32, 2, EQ, 1, (1, 1, 8, 8)),
])
def test_level0_compare(lib0, dtype, form, mode, repeat, strides):
    x, y, z = cmp_inputs(dtype, form * 10 + mode)
    per, lanes = 32 // np.dtype(dtype).itemsize, 256 // np.dtype(dtype).itemsize
    bits = (0xF0F0_0000_FFFF_0F0F, 0x0000_FFFF_0000_0001 if dtype == np.float16 else 0)
    s = np.array(strides, np.uint32)
    got = z.copy()
    status = lib0.twin_cmp0(int(dtype == np.float16), form, mode, P(x), P(y), P(got), repeat, P(s), bits[0], bits[1],
                            1.0)
    assert status == 0
    ref = z.copy()
    scalar = dtype(1.0)
    if form == 2:  # CMPMASK: masked-off lanes and bits past the repeat read 0
        out = np.zeros(128, bool)
        for e in range(lanes):
            if (bits[e // 64] >> (e % 64)) & 1:
                out[e] = CMP[mode](x[at(0, e, s[0], s[2], per)], y[at(0, e, s[1], s[3], per)])
        ref[:16] = np.packbits(out, bitorder="little")
    else:  # every lane compared (Atlas A2 ignores the mask), repeats packed end to end
        out = np.zeros(repeat * lanes, bool)
        for r in range(repeat):
            for e in range(lanes):
                b = scalar if form == 1 else y[at(r, e, s[1], s[3], per)]
                out[r * lanes + e] = CMP[mode](x[at(r, e, s[0], s[2], per)], b)
        ref[:repeat * lanes // 8] = np.packbits(out, bitorder="little")
    np.testing.assert_array_equal(got, ref)


def test_level0_compare_int32_only_eq(lib0, capfd):
    x = np.arange(BUF // 4, dtype=np.int32) % 5
    y = np.arange(BUF // 4, dtype=np.int32) % 3
    z = np.zeros(BUF, np.uint8)
    assert lib0.twin_cmp0_int32(EQ, P(x), P(y), P(z)) == 0
    np.testing.assert_array_equal(z[:8], np.packbits(x[:64] == y[:64], bitorder="little"))
    assert lib0.twin_cmp0_int32(LT, P(x), P(y), P(z)) == 1
    assert ("ms_ops twin_cmp0: block 0: Compare: int32_t operands compare only with CMPMODE::EQ on Atlas A2"
            in capfd.readouterr().err)


def run_sel0(lib0, dtype, mode, kind, bits=(0, 0), length=0, repeat=1, strides=(1, 1, 1, 8, 8, 8), scalar=-9.0):
    rng = np.random.default_rng(mode * 10 + kind)
    n = BUF // np.dtype(dtype).itemsize
    x = rng.standard_normal(n).astype(dtype)
    y = rng.standard_normal(n).astype(dtype)
    sel = rng.integers(0, 256, BUF).astype(np.uint8)
    z = rng.standard_normal(n).astype(dtype)
    got = z.copy()
    s = np.array(strides, np.uint32)
    status = lib0.twin_sel0(int(dtype == np.float16), mode, kind, P(x), P(y), P(sel), P(got), bits[0], bits[1],
                            length, repeat, P(s), scalar)
    return status, got, (x, y, sel, z)


def sel0_model(dtype, mode, kind, bits, length, repeat, strides, scalar, x, y, sel, z):
    per, lanes = 32 // np.dtype(dtype).itemsize, 256 // np.dtype(dtype).itemsize
    db, s0b, s1b, dr, s0r, s1r = strides
    reps, on = lanes_on(kind, bits, length, lanes, repeat)
    selbits = np.unpackbits(sel, bitorder="little")
    out = z.copy()
    for r in range(reps):
        for e in range(lanes):
            if not on(r, e):
                continue
            bit = selbits[e] if mode == 0 else selbits[r * lanes + e]
            other = dtype(scalar) if mode == 1 else y[at(r, e, s1b, s1r, per)]
            out[at(r, e, db, dr, per)] = x[at(r, e, s0b, s0r, per)] if bit else other
    return out


SEL0 = [
    # dtype, mode, kind, bits, len, repeat, strides (dstBlk, src0Blk, src1Blk, dstRep, src0Rep, src1Rep)
    (np.float32, 0, 0, (0xFFFF_0000_FF00_FF0F, 0), 0, 3, (1, 1, 1, 8, 8, 8)),
    (np.float16, 1, 1, (0, 0), 100, 3, (2, 1, 1, 16, 8, 8)),
    (np.float32, 2, 1, (0, 0), 64, 4, (1, 2, 1, 8, 16, 8)),
    (np.float16, 2, 0, (0x8000_0000_0000_0001, 0xFF), 0, 2, (1, 1, 3, 8, 8, 24)),
    (np.float32, 2, 2, (0, 0), 150, 0, (1, 1, 1, 8, 8, 8)),
    (np.float16, 1, 2, (0, 0), 300, 0, (1, 1, 1, 8, 8, 8)),
    (np.float32, 0, 3, (0x0F0F_0F0F_F0F0_F0F0, 0), 0, 2, (1, 1, 1, 8, 8, 8)),
    (np.float16, 1, 3, (~0 & ALL, 0xFFFF), 0, 2, (1, 1, 1, 8, 8, 8)),
]


@pytest.mark.parametrize("dtype,mode,kind,bits,length,repeat,strides", SEL0)
def test_level0_select(lib0, dtype, mode, kind, bits, length, repeat, strides):
    status, got, (x, y, sel, z) = run_sel0(lib0, dtype, mode, kind, bits, length, repeat, strides)
    assert status == 0
    np.testing.assert_array_equal(got, sel0_model(dtype, mode, kind, bits, length, repeat, strides, -9.0, x, y, sel, z))
    assert not np.array_equal(got, z)


def test_select_count_form_mode0_reuses_the_first_bits(lib0):
    rng = np.random.default_rng(5)
    n = BUF // 4
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    sel = rng.integers(0, 256, BUF).astype(np.uint8)
    z = np.zeros(n, np.float32)
    assert lib0.twin_sel_count0(P(x), P(y), P(sel), P(z), 200) == 0
    bits = np.unpackbits(sel[:8], bitorder="little").astype(bool)  # 64 lanes of float a repeat
    np.testing.assert_array_equal(z[:200], np.where(np.tile(bits, 4)[:200], x[:200], y[:200]))


@pytest.mark.parametrize("mode,kind,message", [
    (10, 0, "Select: a scalar src1 needs SELMODE::VSEL_TENSOR_SCALAR_MODE"),
    (11, 1, "Select: SELMODE::VSEL_TENSOR_SCALAR_MODE selects against a scalar src1, not a tensor"),
    (2, 3, "Select: the register form of SELMODE::VSEL_TENSOR_TENSOR_MODE reads selMask's address from CMPMASK"),
])
def test_level0_select_rules(lib0, capfd, mode, kind, message):
    status, got, (_, _, _, z) = run_sel0(lib0, np.float32, mode, kind, (ALL, 0), 64, 1)
    assert status == 1
    assert f"ms_ops twin_sel0: block 0: {message}" in capfd.readouterr().err
    np.testing.assert_array_equal(got, z)


CAST0_TYPES = {0: (np.float16, np.float32), 1: (np.float32, np.float16), 2: (np.float32, np.int32),
               3: (np.int32, np.float32), 4: (np.float16, np.int32)}


def cast_ref(v, mode, out_dtype):
    if np.issubdtype(out_dtype, np.integer):
        r = np.nan_to_num(ROUNDERS.get(mode, np.rint)(np.float64(v)))
        return out_dtype(np.clip(r, np.iinfo(out_dtype).min, np.iinfo(out_dtype).max))
    return out_dtype(v)


CAST0 = [
    # pair, round mode, kind, bits, len, repeat, strides (dstBlk, srcBlk, dstRep, srcRep)
    (0, NONE, 0, (0xF0F0_F0F0_0F0F_FFFF, 0), 0, 2, (1, 1, 8, 4)),
    (1, NONE, 1, (0, 0), 50, 3, (1, 1, 4, 8)),
    (2, FLOOR, 2, (0, 0), 150, 0, (1, 1, 8, 8)),
    (4, CEIL, 1, (0, 0), 64, 2, (2, 1, 16, 4)),
    (3, NONE, 0, (0x8000_0000_0000_00FF, 0), 0, 1, (1, 2, 8, 16)),
]


@pytest.mark.parametrize("pair,mode,kind,bits,length,repeat,strides", CAST0)
def test_level0_cast(lib0, pair, mode, kind, bits, length, repeat, strides):
    src_t, dst_t = CAST0_TYPES[pair]
    rng = np.random.default_rng(pair)
    x = (rng.standard_normal(BUF // np.dtype(src_t).itemsize) * 1000).astype(src_t)
    z = np.zeros(BUF // np.dtype(dst_t).itemsize, dst_t) + dst_t(3)
    got = z.copy()
    s = np.array(strides, np.uint32)
    assert lib0.twin_cast0(pair, mode, kind, P(x), P(got), bits[0], bits[1], length, repeat, P(s)) == 0
    lanes = 256 // max(np.dtype(src_t).itemsize, np.dtype(dst_t).itemsize)
    ps, pd = 32 // np.dtype(src_t).itemsize, 32 // np.dtype(dst_t).itemsize
    reps, on = lanes_on(kind, bits, length, lanes, repeat)
    ref = z.copy()
    for r in range(reps):
        for e in range(lanes):
            if on(r, e):
                ref[at(r, e, s[0], s[2], pd)] = cast_ref(x[at(r, e, s[1], s[3], ps)], mode, dst_t)
    np.testing.assert_array_equal(got, ref)
    assert not np.array_equal(got, z)


@pytest.mark.parametrize("pair,mode,bits,message", [
    (4, NONE, (ALL, 0), "Cast: round mode 0 is not supported for this conversion on Atlas A2"),
    (0, NONE, (ALL, 1), "Cast: mask[1] must be 0 for 32-bit operands (64 lanes a repeat)"),
])
def test_level0_cast_rules(lib0, capfd, pair, mode, bits, message):
    src_t, dst_t = CAST0_TYPES[pair]
    x = np.ones(BUF // np.dtype(src_t).itemsize, src_t)
    z = np.zeros(BUF // np.dtype(dst_t).itemsize, dst_t)
    s = np.array((1, 1, 8, 4), np.uint32)
    assert lib0.twin_cast0(pair, mode, 0, P(x), P(z), bits[0], bits[1], 0, 1, P(s)) == 1
    assert f"ms_ops twin_cast0: block 0: {message}" in capfd.readouterr().err
    assert (z == 0).all()


def run_flash(lib0, which, x, stats, valid):
    m, k = x.shape
    z = np.full((m, k), np.nan, np.float32)
    st = stats.astype(np.float32).copy()
    assert lib0.twin_softmax_flash(which, P(x), P(z), P(st), m, k, valid) == 0
    return z, st.reshape(3, m, 8)


def test_softmax_flash_and_log_softmax(lib0):
    rng = np.random.default_rng(11)
    m, k, valid = 4, 24, 21
    x = rng.standard_normal((m, k)).astype(np.float32) * 3
    v = x[:, :valid].astype(np.float64)
    mx = v.max(1, keepdims=True)
    e = np.exp(v - mx)
    zero = np.zeros(3 * m * 8, np.float32)
    z, st = run_flash(lib0, 0, x, zero, valid)
    np.testing.assert_allclose(z[:, :valid], e / e.sum(1, keepdims=True), rtol=2e-6, atol=1e-7)
    np.testing.assert_array_equal(st[0], np.repeat(mx.astype(np.float32), 8, 1))
    np.testing.assert_allclose(st[1], np.repeat(e.sum(1, keepdims=True), 8, 1), rtol=2e-6)
    assert (st[2] == 0).all()  # expMax is not written without isUpdate
    prev_max = np.float64([[5.0], [-5.0], [0.0], [10.0]])
    prev_sum = np.float64([[2.0], [3.0], [1.5], [0.25]])
    stats = np.concatenate([np.repeat(prev_max, 8, 1), np.repeat(prev_sum, 8, 1), np.zeros((m, 8))])
    z1, st1 = run_flash(lib0, 1, x, stats.reshape(-1), valid)
    new_max = np.maximum(prev_max, mx)
    scale = np.exp(prev_max - new_max)
    total = scale * prev_sum + np.exp(v - new_max).sum(1, keepdims=True)
    np.testing.assert_allclose(z1[:, :valid], np.exp(v - new_max) / total, rtol=2e-6, atol=1e-7)
    np.testing.assert_array_equal(st1[0][:, 0], new_max[:, 0].astype(np.float32))
    np.testing.assert_allclose(st1[1][:, 0], total[:, 0], rtol=2e-6)
    np.testing.assert_allclose(st1[2][:, 0], (scale * prev_sum / total)[:, 0], rtol=2e-6)
    z2, st2 = run_flash(lib0, 2, x, zero, valid)
    np.testing.assert_allclose(z2[:, :valid], np.log10(e / e.sum(1, keepdims=True)), rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(st2[1][:, 0], e.sum(1), rtol=2e-6)
    assert np.isnan(z2[:, valid:]).all()


def test_softmax_flash_half_with_float_statistics(lib0):
    rng = np.random.default_rng(12)
    m, k = 2, 32
    x = (rng.standard_normal((m, k)) * 2).astype(np.float16)
    v = x.astype(np.float64)
    prev_max, prev_sum = np.float64([[1.0], [4.0]]), np.float64([[3.0], [0.5]])
    stats = np.concatenate([np.repeat(prev_max, 8, 1), np.repeat(prev_sum, 8, 1)]).astype(np.float32)
    z, e = np.zeros((m, k), np.float16), np.zeros((m, 16), np.float16)
    assert lib0.twin_softmax_flash_f16(P(x), P(z), P(stats), P(e), m, k, 1) == 0
    new_max = np.maximum(prev_max, v.max(1, keepdims=True))
    total = np.exp(prev_max - new_max) * prev_sum + np.exp(v - new_max).sum(1, keepdims=True)
    np.testing.assert_allclose(z.astype(np.float64), np.exp(v - new_max) / total, rtol=2e-3, atol=1e-4)
    np.testing.assert_allclose(stats[m:, 0], total[:, 0], rtol=1e-6)
    np.testing.assert_array_equal(stats[:m], np.repeat(new_max, 8, 1).astype(np.float32))
    np.testing.assert_allclose(e[:, 0].astype(np.float64), (np.exp(prev_max - new_max) * prev_sum / total)[:, 0],
                               rtol=2e-3)


def test_init_global_memory(lib0):
    n = 5000  # more than one of the twin's 4096-element stores
    z = np.zeros(n + 8, np.float32)
    assert lib0.twin_init_gm(P(z), n, 2.5, 0) == 0
    np.testing.assert_array_equal(z, np.concatenate([np.full(n, 2.5, np.float32), np.zeros(8, np.float32)]))
    assert lib0.twin_init_gm(P(z), n, 2.5, 1) == 0  # under SetAtomicAdd it adds, as DataCopyPad does
    np.testing.assert_array_equal(z[:n], np.full(n, 5.0, np.float32))


# tiling key: D_T in bits 0..7, TILE_NUM's index in [1, 2, 3, 8] in bits 8..11, IS_SPLIT in bit 12
TPL_INDEX = {1: 0, 2: 1, 3: 2, 8: 3}


@pytest.mark.parametrize("dtype,tile,split", [(0, 1, 0), (0, 3, 1), (1, 2, 1), (1, 8, 1)])
def test_tiling_key_templates(lib0, dtype, tile, split):
    n = 64
    np_t = np.float16 if dtype else np.float32
    x = np.arange(n).astype(np_t) - np_t(20)
    z = np.zeros(n, np_t)
    key = ctypes.c_uint64()
    assert lib0.twin_tpl(dtype, tile, split, P(x), P(z), n, ctypes.byref(key), 1) == 0
    assert key.value == dtype | TPL_INDEX[tile] << 8 | split << 12
    np.testing.assert_array_equal(z, x * np_t(tile) + np_t(split))
    vals = np.zeros(3, np.uint64)
    assert lib0.twin_tpl_decode(key.value, P(vals)) == 0
    assert list(vals) == [dtype, tile, split]


def test_tiling_key_template_rules(lib0, capfd):
    key = ctypes.c_uint64()
    # half is selected only with IS_SPLIT 1; 5 is no declared TILE_NUM
    for args in [(1, 2, 0), (0, 5, 0)]:
        assert lib0.twin_tpl(*args, None, None, 0, ctypes.byref(key), 0) == 2
        assert key.value == ALL
    err = capfd.readouterr().err
    assert "GET_TPL_TILING_KEY: (D_T=1, TILE_NUM=2, IS_SPLIT=0) is in no ASCENDC_TPL_SEL combination" in err
    assert "GET_TPL_TILING_KEY: (D_T=0, TILE_NUM=5, IS_SPLIT=0) is in no ASCENDC_TPL_SEL combination" in err
    vals = np.zeros(3, np.uint64)
    assert lib0.twin_tpl_decode(1 | 3 << 8 | 0 << 12, P(vals)) == 1  # half, TILE_NUM 8, IS_SPLIT 0
    assert ("ms_ops twin_tpl_decode: block 0: GET_TPL_TILING_KEY: tiling key 769 is not one the declared "
            "combinations encode") in capfd.readouterr().err


def test_cross_core_flag_modes(lib0, capfd):
    assert lib0.twin_crosscore_modes(0, 2) == 0
    assert lib0.twin_crosscore_modes(2, 2) == 0
    assert lib0.twin_crosscore_modes(0, 4) == 1
    assert ("ms_ops twin_crosscore_modes: AIC 0: CrossCoreSetFlag: mode 4 (the AIC with one AIV) exists only on "
            "Ascend 950PR/950DT; Atlas A2 has modes 0, 1, 2") in capfd.readouterr().err
    assert lib0.twin_crosscore_modes(1, 2) == 1
    assert ("ms_ops twin_crosscore_modes: AIC 0: CrossCoreSetFlag: flag 0 of AIV 0 of group 0 would count 16 sets "
            "not yet waited for; the counter holds at most 15") in capfd.readouterr().err
