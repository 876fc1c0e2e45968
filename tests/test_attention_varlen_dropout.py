"""flash_attention_score with a drop_mask and TND (ms_ops' form: per sequence, padded to the longest
sequence as attn_mask): forward and gradients against the float64 reference given the same bits,
both modes; the kernels' own bits written out as such a mask give bitwise the same results; the
errors."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

import ms_ops
from ms_ops.reference.attention import dropout_keep, flash_attention_grad_pse, flash_attention_masked, pack_drop_mask, \
    visibility
from tests.utils import Call, VjpLoss, assert_close, mode_mask, representable, rounding, to_ms, to_np, with_mode_mask

LENS_Q, LENS_KV, N1, N2, D = [20, 0, 33, 5], [40, 7, 25, 0], 4, 2, 32
CQ, CKV = [int(x) for x in np.cumsum(LENS_Q)], [int(x) for x in np.cumsum(LENS_KV)]


class MaskLoss(nn.Cell):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def construct(self, q, k, v, drop_mask, w):
        out = ms_ops.flash_attention_score(q, k, v, N1, drop_mask=drop_mask, **self.kwargs)
        return (out.astype(ms.float32) * w).sum()


def data(dtype):
    q = representable((CQ[-1], N1, D), dtype)
    k, v = (representable((CKV[-1], N2, D), dtype) for _ in range(2))
    return q, k, v, representable((CQ[-1], N1, D), "fp32")


def run_mask(q, k, v, dout, mask, dtype, **kwargs):
    """(out, dq, dk, dv) as float64 TND arrays, the keep bits from ``mask``."""
    kwargs = with_mode_mask(dict(kwargs, input_layout="TND", actual_seq_qlen=CQ, actual_seq_kvlen=CKV))
    args = [to_ms(a, dtype) for a in (q, k, v)] + [ms.Tensor(mask)]
    w = ms.Tensor(dout.astype(np.float32))
    out = ms_ops.flash_attention_score(*args[:3], N1, drop_mask=args[3], **kwargs)
    grads = ms.grad(MaskLoss(**kwargs), grad_position=(0, 1, 2))(*args, w)
    return [to_np(out)] + [to_np(g) for g in grads]


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_against_reference(mode, dtype):
    kp, scale = 0.6, 0.2
    q, k, v, dout = data(dtype)
    keep = np.random.rand(len(LENS_Q), N1, max(LENS_Q), max(LENS_KV)) < kp
    got = run_mask(q, k, v, dout, pack_drop_mask(keep), dtype, keep_prob=kp, scalar_value=scale, sparse_mode=3)
    dout_t = rounding(dtype)(dout)
    starts_q, starts_kv = [0] + CQ[:-1], [0] + CKV[:-1]
    for b, (s1, s2) in enumerate(zip(LENS_Q, LENS_KV)):
        rq, rk = slice(starts_q[b], CQ[b]), slice(starts_kv[b], CKV[b])
        if s1 == 0 or s2 == 0:
            # No visible key: zero rows and zero gradients.
            for g, rows in zip(got, (rq, rq, rk, rk)):
                assert np.all(g[rows] == 0)
            continue
        qb, kb, vb, gb = (a[None].transpose(0, 2, 1, 3) for a in (q[rq], k[rk], v[rk], dout_t[rq]))
        vis, drop = visibility(s1, s2, 3), keep[b:b + 1, :, :s1, :s2] / kp
        results = []
        for rnd in (None, rounding(dtype)):
            for_rnd = {} if rnd is None else {"rnd": rnd}
            results.append((flash_attention_masked(qb, kb, vb, scale, vis, drop=drop, **for_rnd),)
                           + flash_attention_grad_pse(qb, kb, vb, gb, scale, vis, drop=drop, **for_rnd)[:3])
        for name, g, r, nv, rows in zip(("attention_out", "dq", "dk", "dv"), got, *results, (rq, rq, rk, rk)):
            assert_close(f"{name} of sequence {b}", g[rows], r[0].transpose(1, 0, 2), nv[0].transpose(1, 0, 2),
                         dtype)


def test_generated_bits_as_mask():
    """The bits the kernels draw for (seed, offset), given back as a TND drop_mask, reproduce the
    generated run exactly: the mask's element (b, n1, i, j) is the generator's."""
    kp, seed, offset = 0.7, 5, 3
    q, k, v, dout = data("fp32")
    keep = dropout_keep(seed, offset, (len(LENS_Q), N1, max(LENS_Q), max(LENS_KV)), kp)
    by_mask = run_mask(q, k, v, dout, pack_drop_mask(keep), "fp32", keep_prob=kp, sparse_mode=2)
    attention = Call(ms_ops.flash_attention_score, head_num=N1, input_layout="TND", actual_seq_qlen=CQ,
                     actual_seq_kvlen=CKV, keep_prob=kp, sparse_mode=2, attn_mask=mode_mask(2), seed=seed,
                     offset=offset)
    args = [to_ms(a, "fp32") for a in (q, k, v)]
    grads = ms.grad(VjpLoss(attention), grad_position=(0, 1, 2))(*args, ms.Tensor(dout.astype(np.float32)))
    for name, a, b in zip(("attention_out", "dq", "dk", "dv"), by_mask, [attention(*args)] + list(grads)):
        assert np.array_equal(a, to_np(b)), name


@pytest.mark.parametrize("lens_kv,shape,match", [
    ([12], (1, 2, 12, 1), "'drop_mask' needs the longest key sequence S2 a multiple of 8"),
    ([8, 16], (2, 2, 12, 1), r"'drop_mask' must be \[B, N1, S1, S2 // 8\] per sequence, .* = \(2, 2, 7, 2\)"),
])
def test_errors(lens_kv, shape, match):
    lens_q = [12] if len(lens_kv) == 1 else [5, 7]
    q = ms.Tensor(np.ones((12, 2, 16)), ms.float32)
    k = ms.Tensor(np.ones((sum(lens_kv), 2, 16)), ms.float32)
    cq, ckv = [int(x) for x in np.cumsum(lens_q)], [int(x) for x in np.cumsum(lens_kv)]
    with pytest.raises(ValueError, match=f"flash_attention_score: {match}"):
        ms_ops.flash_attention_score(q, k, k, 2, input_layout="TND", actual_seq_qlen=cq, actual_seq_kvlen=ckv,
                                     keep_prob=0.5, drop_mask=ms.Tensor(np.zeros(shape, np.uint8)))
    # The process survives and the next call works.
    out = ms_ops.flash_attention_score(q, k, k, 2, input_layout="TND", actual_seq_qlen=cq, actual_seq_kvlen=ckv)
    np.testing.assert_allclose(out.asnumpy(), 1.0)
