"""ms_ops.nn.FlashAttention: outputs and gradients against the float64 reference in both modes,
its scale and mask options, dynamic sequence length in GRAPH mode (forward and gradient), and
its argument errors."""
import math

import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

import ms_ops
from ms_ops.reference.attention import (flash_attention, flash_attention_grad, flash_attention_grad_masked,
                                        flash_attention_grad_pse, flash_attention_masked, varlen, visible_offsets)
from tests.utils import assert_close, mode_mask, representable, rounding, to_ms, to_np


def to_bsh(x):
    """[B, N, S, D] -> [B, S, N*D]."""
    b, n, s, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, s, n * d)


def from_bsh(x, n):
    b, s, h = x.shape
    return x.reshape(b, s, n, h // n).transpose(0, 2, 1, 3)


class Loss(nn.Cell):
    def __init__(self, attention):
        super().__init__()
        self.attention = attention

    def construct(self, q, k, v, w):
        return (self.attention(q, k, v).astype(ms.float32) * w).sum()


def expected(q, k, v, dout, scale, offsets, dtype):
    rnd = rounding(dtype)
    d = rnd(dout)
    ref = (flash_attention(q, k, v, scale, *offsets),) + flash_attention_grad(q, k, v, d, scale, *offsets)
    naive = (flash_attention(q, k, v, scale, *offsets, rnd),) + flash_attention_grad(q, k, v, d, scale, *offsets,
                                                                                        rnd=rnd)
    return ref, naive


def run_bsh(cell, q, k, v, dout, dtype, n1, n2):
    args = [to_ms(to_bsh(a), dtype) for a in (q, k, v)]
    w = ms.Tensor(to_bsh(dout).astype(np.float32))
    out = cell(*args)
    grads = ms.grad(Loss(cell), grad_position=(0, 1, 2))(*args, w)
    return [from_bsh(to_np(t), n) for t, n in zip((out,) + tuple(grads), (n1, n1, n2, n2))]


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_bsh_gqa_default_scale(mode, dtype):
    """scale_value=None takes 1/sqrt(D); key/value with fewer heads (GQA); causal mode 3."""
    b, n1, n2, s1, s2, d = 2, 4, 2, 30, 45, 64
    q, dout = representable((b, n1, s1, d), dtype), representable((b, n1, s1, d), "fp32")
    k, v = representable((b, n2, s2, d), dtype), representable((b, n2, s2, d), dtype)
    cell = ms_ops.nn.FlashAttention(n1, scale_value=None, sparse_mode=3)
    got = run_bsh(cell, q, k, v, dout, dtype, n1, n2)
    ref, naive = expected(q, k, v, dout, 1 / math.sqrt(d), visible_offsets(s1, s2, 0, 0, 3), dtype)
    for name, g, r, nv in zip(("out", "dq", "dk", "dv"), got, ref, naive):
        assert_close(name, g, r, nv, dtype)


def test_bnsd_band(mode):
    """The default scale_value is 1.0 (MindSpore's); pre/next_tokens give a band, with the mask
    that agrees with it (as in CANN, sparse_mode 0 needs the mask for the band to act)."""
    b, n, s, d = 1, 2, 40, 32
    q, k, v, dout = (representable((b, n, s, d), "fp32", 0.3) for _ in range(4))
    cell = ms_ops.nn.FlashAttention(n, pre_tokens=5, next_tokens=2, input_layout="BNSD")
    args = [to_ms(a, "fp32") for a in (q, k, v)]
    mask = mode_mask(0, 5, 2, s, s)
    out = cell(*args, mask)
    grads = ms.grad(MaskedLoss(cell), grad_position=(0, 1, 2))(*args, mask, ms.Tensor(dout.astype(np.float32)))
    ref, naive = expected(q, k, v, dout, 1.0, visible_offsets(s, s, 5, 2, 0), "fp32")
    for name, g, r, nv in zip(("out", "dq", "dk", "dv"), (out,) + tuple(grads), ref, naive):
        assert_close(name, to_np(g), r, nv, "fp32")


class PackedLoss(nn.Cell):
    """The Cell on packed sequences: construct passes the cumulative lengths through."""

    def __init__(self, attention, cum_q, cum_kv):
        super().__init__()
        self.attention = attention
        self.cum_q = cum_q
        self.cum_kv = cum_kv

    def construct(self, q, k, v, w):
        out = self.attention(q, k, v, actual_seq_qlen=self.cum_q, actual_seq_kvlen=self.cum_kv)
        return (out.astype(ms.float32) * w).sum(), out


def test_tnd_packed_sequences(mode):
    """input_layout TND with the lengths given to construct, causal per sequence (mode 3)."""
    lens_q, lens_kv, n1, n2, d = (9, 1, 30), (12, 4, 30), 4, 1, 64
    cq, ckv = [int(c) for c in np.cumsum(lens_q)], [int(c) for c in np.cumsum(lens_kv)]
    q, dout = representable((cq[-1], n1, d), "fp32"), representable((cq[-1], n1, d), "fp32")
    k, v = representable((ckv[-1], n2, d), "fp32"), representable((ckv[-1], n2, d), "fp32")
    loss = PackedLoss(ms_ops.nn.FlashAttention(n1, scale_value=None, input_layout="TND", sparse_mode=3), cq, ckv)
    args = [to_ms(a, "fp32") for a in (q, k, v)] + [ms.Tensor(dout.astype(np.float32))]
    out = loss(*args)[1]
    grads = ms.grad(loss, grad_position=(0, 1, 2), has_aux=True)(*args)[0]
    ref = varlen(q, k, v, dout, cq, ckv, d ** -0.5, sparse_mode=3)
    naive = varlen(q, k, v, dout, cq, ckv, d ** -0.5, sparse_mode=3, rnd=rounding("fp32"))
    for name, g, r, nv in zip(("out", "dq", "dk", "dv"), (out,) + tuple(grads), ref, naive):
        assert_close(name, to_np(g), r, nv, "fp32")


class MaskedLoss(nn.Cell):
    def __init__(self, attention):
        super().__init__()
        self.attention = attention

    def construct(self, q, k, v, mask, w):
        return (self.attention(q, k, v, mask).astype(ms.float32) * w).sum()


def test_attn_mask_passes_through(mode):
    """An [S1, S2] bool attn_mask (True = masked out) given to construct reaches the kernels."""
    b, n, s1, s2, d = 1, 2, 24, 31, 32
    q, dout = representable((b, n, s1, d), "fp32"), representable((b, n, s1, d), "fp32")
    k, v = representable((b, n, s2, d), "fp32"), representable((b, n, s2, d), "fp32")
    masked = np.random.rand(s1, s2) < 0.3
    masked[:, 0] = False
    cell = ms_ops.nn.FlashAttention(n, scale_value=0.2)
    args = [to_ms(to_bsh(a), "fp32") for a in (q, k, v)]
    mask = ms.Tensor(masked)
    out = cell(*args, mask)
    grads = ms.grad(MaskedLoss(cell), grad_position=(0, 1, 2))(*args, mask, ms.Tensor(to_bsh(dout).astype(np.float32)))
    visible = ~masked
    ref = (flash_attention_masked(q, k, v, 0.2, visible),) + flash_attention_grad_masked(q, k, v, dout, 0.2, visible)
    rnd = rounding("fp32")
    naive = ((flash_attention_masked(q, k, v, 0.2, visible, rnd),)
             + flash_attention_grad_masked(q, k, v, dout, 0.2, visible, rnd))
    for name, g, r, nv in zip(("out", "dq", "dk", "dv"), (out,) + tuple(grads), ref, naive):
        assert_close(name, from_bsh(to_np(g), n), r, nv, "fp32")


class AlibiLoss(nn.Cell):
    def __init__(self, attention):
        super().__init__()
        self.attention = attention

    def construct(self, q, k, v, alibi, w):
        return (self.attention(q, k, v, alibi_mask=alibi).astype(ms.float32) * w).sum()


def test_alibi_mask(mode):
    """use_alibi_mask: the alibi_mask given to construct is real_shift with MindSpore's pse_type 1
    (added before the scaling), causal here; it gets its gradient too."""
    b, n, s, d, scale = 2, 2, 26, 32, 0.3
    q, k, v, dout = (representable((b, n, s, d), "fp32") for _ in range(4))
    slopes = np.array([0.5, 0.25])
    alibi = -slopes[None, :, None, None] * np.abs(np.arange(s)[:, None] - np.arange(s)[None, :])
    alibi = np.broadcast_to(alibi, (b, n, s, s)).copy()
    cell = ms_ops.nn.FlashAttention(n, scale_value=scale, input_layout="BNSD", sparse_mode=2, use_alibi_mask=True)
    args = [to_ms(a, "fp32") for a in (q, k, v, alibi)]
    out = cell(*args[:3], alibi_mask=args[3])
    grads = ms.grad(AlibiLoss(cell), grad_position=(0, 1, 2, 3))(*args, ms.Tensor(dout.astype(np.float32)))
    visible = np.tril(np.ones((s, s), bool))
    rnd = rounding("fp32")
    ref = ((flash_attention_masked(q, k, v, scale, visible, pse=alibi, pse_first=True),)
           + flash_attention_grad_pse(q, k, v, dout, scale, visible, pse=alibi, pse_first=True))
    naive = ((flash_attention_masked(q, k, v, scale, visible, rnd, pse=alibi, pse_first=True),)
             + flash_attention_grad_pse(q, k, v, dout, scale, visible, rnd, pse=alibi, pse_first=True))
    for name, g, r, nv in zip(("out", "dq", "dk", "dv", "d alibi_mask"), (out,) + tuple(grads), ref, naive):
        assert_close(name, to_np(g), r, nv, "fp32")


def test_alibi_mask_errors():
    x = ms.Tensor(np.ones((1, 8, 64), np.float32))
    with pytest.raises(ValueError, match="FlashAttention: 'alibi_mask' is required with use_alibi_mask=True"):
        ms_ops.nn.FlashAttention(2, use_alibi_mask=True)(x, x, x)
    with pytest.raises(ValueError, match="FlashAttention: 'alibi_mask' is given but use_alibi_mask is False"):
        ms_ops.nn.FlashAttention(2)(x, x, x, alibi_mask=ms.Tensor(np.zeros((1, 2, 8, 8), np.float32)))


def test_dynamic_seq_graph_with_grad():
    """One compiled graph (sequence length left open by set_inputs) serves two lengths, forward
    and gradient."""
    ms.set_context(mode=ms.GRAPH_MODE)
    b, n, d = 1, 2, 48
    cell = ms_ops.nn.FlashAttention(n, scale_value=None, sparse_mode=2)
    loss = Loss(cell)
    dyn = [ms.Tensor(shape=[b, None, n * d], dtype=ms.float32) for _ in range(4)]
    cell.set_inputs(*dyn[:3])
    loss.set_inputs(*dyn)
    grad = ms.grad(loss, grad_position=(0, 1, 2))
    for s1, s2 in ((17, 30), (41, 23)):
        q, dout = representable((b, n, s1, d), "fp32"), representable((b, n, s1, d), "fp32")
        k, v = representable((b, n, s2, d), "fp32"), representable((b, n, s2, d), "fp32")
        args = [ms.Tensor(to_bsh(a).astype(np.float32)) for a in (q, k, v)]
        out = cell(*args)
        grads = grad(*args, ms.Tensor(to_bsh(dout).astype(np.float32)))
        ref, naive = expected(q, k, v, dout, d ** -0.5, visible_offsets(s1, s2, 0, 0, 2), "fp32")
        for name, g, r, nv, m in zip(("out", "dq", "dk", "dv"), (out,) + tuple(grads), ref, naive, (n, n, n, n)):
            assert_close(f"{name} at S1={s1}, S2={s2}", from_bsh(to_np(g), m), r, nv, "fp32")


def test_repr_and_options():
    cell = ms_ops.nn.FlashAttention(8, keep_prob=1.0, scale_value=0.5, input_layout="BSND", sparse_mode=2)
    text = repr(cell)
    assert "head_num=8" in text and "scale_value=0.5" in text and "input_layout=BSND" in text


@pytest.mark.parametrize("kwargs,error,match", [
    ({"head_num": 0}, ValueError, "'head_num' must be >= 1"),
    ({"head_num": 2.0}, TypeError, "'head_num' must be an int"),
    ({"head_num": 2, "keep_prob": 0.0}, ValueError, r"'keep_prob' must be in \(0, 1\]"),
    ({"head_num": 2, "keep_prob": "1"}, TypeError, "'keep_prob' must be a float"),
    ({"head_num": 2, "scale_value": "x"}, TypeError, "'scale_value' must be a float or None"),
    ({"head_num": 2, "input_layout": "NSD"}, ValueError, "'input_layout' must be one of"),
    ({"head_num": 2, "sparse_mode": -1}, ValueError, "'sparse_mode' must be >= 0"),
    ({"head_num": 2, "pre_tokens": 1.5}, TypeError, "'pre_tokens' must be an int"),
    ({"head_num": 2, "use_alibi_mask": 1}, TypeError, "'use_alibi_mask' must be a bool"),
])
def test_argument_errors(kwargs, error, match):
    with pytest.raises(error, match=f"FlashAttention: {match}"):
        ms_ops.nn.FlashAttention(**kwargs)


def test_call_errors_name_the_op():
    """Bad inputs reach flash_attention_score's checks, which name it and the argument; the Cell
    keeps working."""
    cell = ms_ops.nn.FlashAttention(3)
    x = ms.Tensor(np.ones((1, 8, 64), np.float32))
    with pytest.raises(ValueError, match="flash_attention_score: 'query' hidden size 64 is not a multiple"):
        cell(x, x, x)
    good = ms_ops.nn.FlashAttention(2)
    np.testing.assert_allclose(good(x, x, x).asnumpy(), 1.0)
