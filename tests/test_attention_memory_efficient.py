"""ms_ops.memory_efficient_attention (xformers' front end) and ms_ops.attn_bias: agreement with
flash_attention_score on the same data, masks against the float64 reference, packed sequences
against each sequence run alone, 5-D GQA, both modes with ms.grad, and the errors."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

import ms_ops
from ms_ops import attn_bias as ab
from ms_ops.reference.attention import (FAR, flash_attention, flash_attention_grad, flash_attention_grad_pse,
                                        flash_attention_masked)
from tests.utils import Call, VjpLoss, assert_close, mode_mask, representable, rounding, to_ms, to_np








def run(cell, q, k, v, dout, dtype):
    """(out, dq, dk, dv) of ``cell`` as float64 arrays in the inputs' shapes."""
    args = [to_ms(a, dtype) for a in (q, k, v)]
    w = ms.Tensor(dout.astype(np.float32))
    out = cell(*args)
    grads = ms.grad(VjpLoss(cell), grad_position=(0, 1, 2))(*args, w)
    return (to_np(out),) + tuple(to_np(g) for g in grads)


def bnsd(x):
    """[B, S, H, K] or [B, S, G, H, K] -> [B, heads, S, K]."""
    if x.ndim == 5:
        x = x.reshape(x.shape[0], x.shape[1], -1, x.shape[4])
    return x.transpose(0, 2, 1, 3)


def from_bnsd(x, shape):
    return x.transpose(0, 2, 1, 3).reshape(shape)


def reference(q, k, v, dout, scale, low, high, dtype):
    """Reference and naive (out, dq, dk, dv) in the inputs' shapes, for one mask (low, high)."""
    rnd = rounding(dtype)
    args = [bnsd(a) for a in (q, k, v)]
    d = bnsd(rnd(dout))
    shapes = [a.shape for a in (q, q, k, v)]
    ref = (flash_attention(*args, scale, low, high),) + flash_attention_grad(*args, d, scale, low, high)
    naive = (flash_attention(*args, scale, low, high, rnd),) + flash_attention_grad(*args, d, scale, low, high, rnd)
    return [from_bnsd(r, s) for r, s in zip(ref, shapes)], [from_bnsd(r, s) for r, s in zip(naive, shapes)]


def check_against(got, ref, naive, dtype):
    for name, g, r, nv in zip(("out", "dq", "dk", "dv"), got, ref, naive):
        assert_close(name, g, r, nv, dtype)


@pytest.mark.parametrize("causal", [False, True])
def test_agrees_with_flash_attention_score(mode, causal):
    """The same kernels on the same data: bitwise the MindSpore-style call's results."""
    b, m, n, hq, hk, k = 2, 33, 47, 4, 2, 64
    q, dout = representable((b, m, hq, k), "fp32"), representable((b, m, hq, k), "fp32")
    key, value = representable((b, n, hk, k), "fp32"), representable((b, n, hk, k), "fp32")
    bias = ab.LowerTriangularMask() if causal else None
    got = run(Call(ms_ops.memory_efficient_attention, attn_bias=bias), q, key, value, dout, "fp32")
    same = run(Call(ms_ops.flash_attention_score, head_num=hq, scalar_value=1 / 8, input_layout="BSND",
                    sparse_mode=2 if causal else 0, attn_mask=mode_mask(2) if causal else None),
               q, key, value, dout, "fp32")
    for a, s in zip(got, same):
        assert np.array_equal(a, s)
    check_against(got, *reference(q, key, value, dout, 1 / 8, -FAR, 0 if causal else FAR, "fp32"), "fp32")


def test_dropout_is_keep_prob():
    """p drops as flash_attention_score's keep_prob = 1 - p: after the same ms.set_seed both draw the
    same bits (forward and gradients bitwise equal)."""
    q, key, value, dout = (representable((1, 24, 2, 32), "fp32") for _ in range(4))
    ms.set_seed(21)
    got = run(Call(ms_ops.memory_efficient_attention, p=0.3), q, key, value, dout, "fp32")
    ms.set_seed(21)
    same = run(Call(ms_ops.flash_attention_score, head_num=2, scalar_value=32 ** -0.5, input_layout="BSND",
                    keep_prob=0.7), q, key, value, dout, "fp32")
    for a, s in zip(got, same):
        assert np.array_equal(a, s)
    assert not np.array_equal(got[0], run(Call(ms_ops.memory_efficient_attention, p=0.3), q, key, value, dout,
                                          "fp32")[0])


@pytest.mark.parametrize("m,n", [(40, 70), (70, 40)])
def test_lower_triangular_is_top_left(mode, m, n):
    """Query i sees keys j <= i whatever M and N (xformers' alignment), as materialize states."""
    bias = ab.LowerTriangularMask()
    dense = bias.materialize((2, m, n)).asnumpy()
    assert dense.shape == (2, m, n) and dense.dtype == np.float32
    np.testing.assert_array_equal(np.isfinite(dense[1]), np.tril(np.ones((m, n), bool)))
    assert np.all(dense[np.isfinite(dense)] == 0)
    q, dout = representable((1, m, 2, 80), "fp32"), representable((1, m, 2, 80), "fp32")
    key, value = representable((1, n, 1, 80), "fp32"), representable((1, n, 1, 80), "fp32")
    got = run(Call(ms_ops.memory_efficient_attention, attn_bias=bias, scale=0.1), q, key, value, dout, "fp32")
    check_against(got, *reference(q, key, value, dout, 0.1, -FAR, 0, "fp32"), "fp32")


@pytest.mark.parametrize("hk", [1, 3])
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_gqa_5d(mode, hk, dtype):
    """[B, M, G, H, K] queries with [B, N, G, 1 or H, K] keys: group g's heads read its keys."""
    b, m, n, g, h, k = 2, 19, 27, 2, 3, 48
    q, dout = representable((b, m, g, h, k), dtype), representable((b, m, g, h, k), "fp32")
    key, value = representable((b, n, g, hk, k), dtype), representable((b, n, g, hk, k), dtype)
    got = run(Call(ms_ops.memory_efficient_attention), q, key, value, dout, dtype)
    assert [a.shape for a in got] == [q.shape, q.shape, key.shape, value.shape]
    check_against(got, *reference(q, key, value, dout, k ** -0.5, -FAR, FAR, dtype), dtype)


def test_dynamic_seq_graph():
    """One GRAPH-mode compile with M and N left open serves two sequence lengths, with gradients."""
    ms.set_context(mode=ms.GRAPH_MODE)
    cell = Call(ms_ops.memory_efficient_attention, attn_bias=ab.LowerTriangularMask())
    loss = VjpLoss(cell)
    loss.set_inputs(*(ms.Tensor(shape=[2, None, 2, 32], dtype=ms.float32) for _ in range(4)))
    grad = ms.grad(loss, grad_position=(0, 1, 2))
    for m, n in ((13, 21), (30, 8)):
        q, dout = representable((2, m, 2, 32), "fp32"), representable((2, m, 2, 32), "fp32")
        key, value = representable((2, n, 2, 32), "fp32"), representable((2, n, 2, 32), "fp32")
        grads = grad(*(to_ms(a, "fp32") for a in (q, key, value, dout)))
        ref, naive = reference(q, key, value, dout, 32 ** -0.5, -FAR, 0, "fp32")
        for name, g, r, nv in zip(("dq", "dk", "dv"), grads, ref[1:], naive[1:]):
            assert_close(f"{name} at M={m}, N={n}", to_np(g), r, nv, "fp32")


class BiasLoss(nn.Cell):
    def __init__(self):
        super().__init__()

    def construct(self, q, k, v, bias, w):
        return (ms_ops.memory_efficient_attention(q, k, v, attn_bias=bias).astype(ms.float32) * w).sum()


@pytest.mark.parametrize("shape", ["full", "batch_1", "5d"])
def test_dense_bias(mode, shape):
    """A bias tensor is added after the scaling (xformers); with a full batch it gets its gradient
    (d logits), with a batch of 1 (broadcast) zeros."""
    b, m, n, g, h, k = 2, 21, 34, 2, 2, 32
    q_shape, kv_shape = ((b, m, g, h, k), (b, n, g, 1, k)) if shape == "5d" else ((b, m, h, k), (b, n, h, k))
    bias_shape = ((1 if shape == "batch_1" else b),) + q_shape[2:-1] + (m, n)
    q, dout = representable(q_shape, "fp32"), representable(q_shape, "fp32")
    key, value = representable(kv_shape, "fp32"), representable(kv_shape, "fp32")
    bias = representable(bias_shape, "fp32")
    args = [to_ms(a, "fp32") for a in (q, key, value, bias)]
    out = ms_ops.memory_efficient_attention(*args[:3], attn_bias=args[3])
    grads = ms.grad(BiasLoss(), grad_position=(0, 1, 2, 3))(*args, ms.Tensor(dout.astype(np.float32)))
    pse = bias.reshape(bias.shape[0], -1, m, n)
    visible = np.ones((m, n), bool)
    qb, kb, vb, db = (bnsd(a) for a in (q, key, value, dout))
    rnd = rounding("fp32")
    ref = ((flash_attention_masked(qb, kb, vb, k ** -0.5, visible, pse=pse),)
           + flash_attention_grad_pse(qb, kb, vb, db, k ** -0.5, visible, pse=pse))
    naive = ((flash_attention_masked(qb, kb, vb, k ** -0.5, visible, rnd, pse=pse),)
             + flash_attention_grad_pse(qb, kb, vb, db, k ** -0.5, visible, rnd, pse=pse))
    shapes = (q_shape, q_shape, kv_shape, kv_shape)
    for name, got, r, nv, sh in zip(("out", "dq", "dk", "dv"), (out,) + tuple(grads[:3]), ref, naive, shapes):
        assert_close(name, to_np(got), from_bnsd(r, sh), from_bnsd(nv, sh), "fp32")
    d_bias = to_np(grads[3])
    assert d_bias.shape == bias_shape
    if shape == "batch_1":
        assert np.all(d_bias == 0)
    else:
        assert_close("d attn_bias", d_bias, ref[4].reshape(bias_shape), naive[4].reshape(bias_shape), "fp32")


def test_materialized_mask_as_bias(mode):
    """A mask's materialize() given as a bias tensor (-inf entries) gives what the mask gives."""
    q, key, value = (representable((1, s, 2, 64), "fp32") for s in (30, 45, 45))
    mask = ab.LowerTriangularMask()
    args = [to_ms(a, "fp32") for a in (q, key, value)]
    by_mask = Call(ms_ops.memory_efficient_attention, attn_bias=mask)(*args)
    by_tensor = ms_ops.memory_efficient_attention(*args, attn_bias=mask.materialize((1, 2, 30, 45)))
    np.testing.assert_allclose(to_np(by_tensor), to_np(by_mask), rtol=1e-5, atol=1e-6)


def test_single_head_3d(mode):
    q, key, value, dout = (representable((2, s, 32), "fp32") for s in (9, 13, 13, 9))
    got = run(Call(ms_ops.memory_efficient_attention, attn_bias=ab.LowerTriangularMask()), q, key, value, dout, "fp32")
    ref, naive = reference(*(a[:, :, None] for a in (q, key, value, dout)), 32 ** -0.5, -FAR, 0, "fp32")
    check_against(got, [r[:, :, 0] for r in ref], [r[:, :, 0] for r in naive], "fp32")


@pytest.mark.parametrize("causal,q_len,kv_len", [(False, (5, 17, 1, 40), (5, 17, 1, 40)),
                                                  (True, (5, 17, 1, 0, 40, 3), (9, 17, 3, 2, 33, 0))])
def test_block_diagonal_packed_equals_separate(mode, causal, q_len, kv_len):
    """Packed sequences with a BlockDiagonal(Causal)Mask give, per sequence, what running that
    sequence alone (in PYNATIVE mode) gives, outputs and gradients; and both match the float64
    reference. Queries of a sequence without keys output 0; keys without queries get no gradient."""
    cls = ab.BlockDiagonalCausalMask if causal else ab.BlockDiagonalMask
    bias = cls.from_seqlens(list(q_len), None if kv_len == q_len else list(kv_len))
    h, k = 2, 64
    q, dout = representable((1, sum(q_len), h, k), "fp32"), representable((1, sum(q_len), h, k), "fp32")
    key, value = representable((1, sum(kv_len), h, k), "fp32"), representable((1, sum(kv_len), h, k), "fp32")
    packed = run(Call(ms_ops.memory_efficient_attention, attn_bias=bias), q, key, value, dout, "fp32")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    qs, ks = np.cumsum((0,) + q_len), np.cumsum((0,) + kv_len)
    alone_bias = ab.LowerTriangularMask() if causal else None
    high = 0 if causal else FAR
    # The error rule holds per output tensor: a one-key sequence's dq is 0 by cancellation
    # (dP - D with P = 1), whose rounding noise no per-sequence floor at magnitude 0 covers.
    refs, naives = [np.zeros_like(a) for a in packed], [np.zeros_like(a) for a in packed]
    for i in range(len(q_len)):
        rows, cols = slice(qs[i], qs[i + 1]), slice(ks[i], ks[i + 1])
        if q_len[i] == 0 or kv_len[i] == 0:
            for got, sl in zip(packed, (rows, rows, cols, cols)):
                assert np.all(got[:, sl] == 0)
            continue
        pieces = (q[:, rows], key[:, cols], value[:, cols], dout[:, rows])
        alone = run(Call(ms_ops.memory_efficient_attention, attn_bias=alone_bias), *pieces, "fp32")
        ref, naive = reference(*pieces, k ** -0.5, -FAR, high, "fp32")
        names = ("out", "dq", "dk", "dv")
        for j, (got, one, sl, name) in enumerate(zip(packed, alone, (rows, rows, cols, cols), names)):
            np.testing.assert_allclose(got[:, sl], one, rtol=1e-5, atol=1e-6, err_msg=f"{name} of sequence {i}")
            refs[j][:, sl], naives[j][:, sl] = ref[j], naive[j]
    for got, r, nv, name in zip(packed, refs, naives, ("out", "dq", "dk", "dv")):
        assert_close(name, got, r, nv, "fp32")


def test_block_diagonal_materialize_and_split():
    bias = ab.BlockDiagonalCausalMask.from_seqlens([2, 3], [3, 1])
    assert bias.q_seqinfo.seqstart_py == (0, 2, 5) and bias.k_seqinfo.seqlen_py == (3, 1)
    visible = np.isfinite(bias.materialize((5, 4)).asnumpy())
    np.testing.assert_array_equal(visible, [[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 0, 1], [0, 0, 0, 1], [0, 0, 0, 1]])
    full = np.isfinite(ab.BlockDiagonalMask.from_seqlens([2, 3], [3, 1]).materialize((1, 5, 4)).asnumpy()[0])
    np.testing.assert_array_equal(full, [[1, 1, 1, 0], [1, 1, 1, 0], [0, 0, 0, 1], [0, 0, 0, 1], [0, 0, 0, 1]])
    assert isinstance(ab.BlockDiagonalMask.from_seqlens([2]).make_causal(), ab.BlockDiagonalCausalMask)
    x = ms.Tensor(np.arange(10, dtype=np.float32).reshape(1, 5, 2))
    parts = bias.split(x)
    assert [p.shape for p in parts] == [(1, 2, 2), (1, 3, 2)]
    np.testing.assert_array_equal(parts[1].asnumpy(), x.asnumpy()[:, 2:])
    assert [p.shape for p in bias.split_kv(ms.Tensor(np.zeros((1, 4, 3), np.float32)))] == [(1, 3, 3), (1, 1, 3)]


def test_block_diagonal_bf16(mode):
    bias = ab.BlockDiagonalCausalMask.from_seqlens([7, 30])
    q, key, value, dout = (representable((1, 37, 2, 96), "bf16") for _ in range(4))
    packed = run(Call(ms_ops.memory_efficient_attention, attn_bias=bias), q, key, value, dout, "bf16")
    for rows in (slice(0, 7), slice(7, 37)):
        pieces = (q[:, rows], key[:, rows], value[:, rows], dout[:, rows])
        ref, naive = reference(*pieces, 96 ** -0.5, -FAR, 0, "bf16")
        check_against([g[:, rows] for g in packed], ref, naive, "bf16")


def _t(*shape, dtype=ms.float32):
    return ms.Tensor(np.ones(shape), dtype)


@pytest.mark.parametrize("args,kwargs,error,match", [
    ((_t(2, 8, 2, 16, 1, 1), _t(2, 8, 2, 16, 1, 1), _t(2, 8, 2, 16, 1, 1)), {}, ValueError, "'query' must be"),
    ((_t(2, 8, 2, 16), _t(2, 8, 32), _t(2, 8, 32)), {}, ValueError, "'key' must be 4-D"),
    ((_t(2, 8, 2, 16), _t(3, 8, 2, 16), _t(3, 8, 2, 16)), {}, ValueError, "'key' batch size"),
    ((_t(2, 8, 2, 16), _t(2, 8, 2, 8), _t(2, 8, 2, 8)), {}, ValueError, "'key' head dim"),
    ((_t(2, 8, 4, 16), _t(2, 8, 3, 16), _t(2, 8, 3, 16)), {}, ValueError, "'key' has 3 heads"),
    ((_t(2, 8, 2, 16), _t(2, 8, 2, 16), _t(2, 9, 2, 16)), {}, ValueError, "'value' dimension 1"),
    ((_t(2, 8, 2, 16), _t(2, 8, 2, 16), _t(2, 8, 2, 32)), {}, ValueError, r"'value' head dim Kv must be 1..K = 16"),
    ((_t(1, 8, 2, 3, 16), _t(1, 8, 2, 2, 16), _t(1, 8, 2, 2, 16)), {}, ValueError, "'key' must have 1 or 3"),
    ((_t(1, 8, 2, 3, 16), _t(1, 8, 4, 1, 16), _t(1, 8, 4, 1, 16)), {}, ValueError, "'key' group count"),
    ((_t(1, 8, 2, 16), _t(1, 8, 2, 16), _t(1, 8, 2, 16)), {"p": 1.0}, ValueError, "'p'"),
    ((_t(1, 8, 2, 16), _t(1, 8, 2, 16), _t(1, 8, 2, 16)), {"scale": "x"}, TypeError, "'scale'"),
    ((_t(1, 8, 2, 16), _t(1, 8, 2, 16), _t(1, 8, 2, 16, dtype=ms.float16)), {}, TypeError, "'value' must have the"),
    ((_t(2, 8, 2, 16), _t(2, 8, 2, 16), _t(2, 8, 2, 16)),
     {"attn_bias": ab.BlockDiagonalMask.from_seqlens([3, 5])}, ValueError, "'attn_bias' BlockDiagonalMask needs batch"),
    ((_t(1, 8, 2, 16), _t(1, 8, 2, 16), _t(1, 8, 2, 16)),
     {"attn_bias": ab.BlockDiagonalMask.from_seqlens([3, 4])}, ValueError, "'query' has 8 rows but 'attn_bias'"),
    ((_t(1, 8, 2, 16), _t(1, 8, 2, 16), _t(1, 8, 2, 16)),
     {"attn_bias": ab.BlockDiagonalMask.from_seqlens([3, 5], [3, 6])}, ValueError, "'key' has 8 rows"),
    ((_t(1, 8, 2, 16), _t(1, 8, 2, 16), _t(1, 8, 2, 16)), {"attn_bias": _t(8, 8)}, ValueError,
     r"'attn_bias' must have shape \[1 or 1, 2, 8, 8\]"),
    ((_t(2, 8, 2, 16), _t(2, 9, 2, 16), _t(2, 9, 2, 16)), {"attn_bias": _t(2, 2, 8, 8)}, ValueError,
     r"'attn_bias' must have shape \[2 or 1, 2, 8, 9\]"),
    ((_t(1, 8, 2, 16), _t(1, 8, 2, 16), _t(1, 8, 2, 16)), {"attn_bias": _t(1, 2, 8, 8, dtype=ms.float16)}, TypeError,
     "'attn_bias' must have the dtype of 'query'"),
    ((_t(1, 8, 2, 16), _t(1, 8, 2, 16), _t(1, 8, 2, 16)), {"attn_bias": "causal"}, TypeError, "'attn_bias' must be"),
    ((np.ones((1, 8, 2, 16)), _t(1, 8, 2, 16), _t(1, 8, 2, 16)), {}, TypeError, "'query' must be a Tensor"),
])
def test_errors(args, kwargs, error, match):
    with pytest.raises(error, match=f"memory_efficient_attention: .*{match}"):
        ms_ops.memory_efficient_attention(*args, **kwargs)
    # The process survives and the next call works.
    out = ms_ops.memory_efficient_attention(_t(1, 4, 1, 8), _t(1, 4, 1, 8), _t(1, 4, 1, 8))
    np.testing.assert_allclose(out.asnumpy(), 1.0)


@pytest.mark.parametrize("call,error,match", [
    (lambda: ab.BlockDiagonalMask.from_seqlens([3, -1]), ValueError, r"from_seqlens: 'q_seqlen' lengths must be >= 0"),
    (lambda: ab.BlockDiagonalMask.from_seqlens([]), ValueError, "'q_seqlen' must hold at least one"),
    (lambda: ab.BlockDiagonalCausalMask.from_seqlens([3, 2], [1]), ValueError, "'kv_seqlen' has 1 lengths"),
    (lambda: ab.BlockDiagonalMask.from_seqlens(3), TypeError, "'q_seqlen' must be a sequence"),
    (lambda: ab.BlockDiagonalMask.from_seqlens([2.5]), TypeError, "'q_seqlen' must hold ints"),
    (lambda: ab.BlockDiagonalMask.from_seqlens([2, 3]).split(_t(1, 4, 2)), ValueError, r"split: 'tensor'"),
    (lambda: ab.BlockDiagonalMask.from_seqlens([2, 3]).materialize((5, 6)), ValueError, r"materialize: 'shape'"),
    (lambda: ab.LowerTriangularMask().materialize((5,)), ValueError, r"materialize: 'shape'"),
])
def test_attn_bias_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
