"""flash_attention_score with a value head dim smaller than the query/key one (D_v <= D, as CANN
allows): every layout with GQA, forward and gradients against the float64 reference, both modes,
fp32 and bf16, with dropout too; attention_out takes value's head dim; the errors."""
import mindspore as ms
import numpy as np
import pytest

import ms_ops
from ms_ops.reference.attention import (dropout_keep, flash_attention_grad_pse, flash_attention_masked, varlen,
                                        visibility)
from tests.test_attention import run
from tests.utils import Call, VjpLoss, assert_close, mode_mask, representable, rounding, to_ms, to_np


def check(layout, dtype, mode, d=64, dv=40, sparse=0, keep_prob=1.0, **kwargs):
    b, n1, n2, s1, s2, scale = 2, 4, 2, 29, 140, 0.125
    q, k = representable((b, n1, s1, d), dtype), representable((b, n2, s2, d), dtype)
    v, dout = representable((b, n2, s2, dv), dtype), representable((b, n1, s1, dv), "fp32")
    got = run(q, k, v, dout, n1, layout, dtype, mode, scalar_value=scale, sparse_mode=sparse, keep_prob=keep_prob,
              **kwargs)
    assert got[0].shape == (b, n1, s1, dv) and got[3].shape == v.shape
    vis = visibility(s1, s2, sparse)
    drop = None if keep_prob == 1.0 else dropout_keep(kwargs["seed"], kwargs["offset"], (b, n1, s1, s2),
                                                      keep_prob) / keep_prob
    rnd, dout_t = rounding(dtype), rounding(dtype)(dout)
    ref = (flash_attention_masked(q, k, v, scale, vis, drop=drop),) + flash_attention_grad_pse(
        q, k, v, dout_t, scale, vis, drop=drop)[:3]
    naive = (flash_attention_masked(q, k, v, scale, vis, rnd, drop=drop),) + flash_attention_grad_pse(
        q, k, v, dout_t, scale, vis, rnd, drop=drop)[:3]
    for name, g, r, nv in zip(("attention_out", "dq", "dk", "dv"), got, ref, naive):
        assert_close(name, g, r, nv, dtype)


@pytest.mark.parametrize("layout", ["BSH", "SBH", "BSND", "BNSD"])
def test_layouts(layout):
    check(layout, "fp32", "pynative", sparse=3)


def test_modes_bf16(mode):
    check("BSH", "bf16", mode, d=128, dv=64)


def test_with_dropout(mode):
    check("BNSD", "fp32", mode, d=96, dv=33, keep_prob=0.7, seed=5, offset=8)


def test_packed():
    lens_q, lens_kv, n1, n2, d, dv, scale = [20, 0, 33], [40, 7, 25], 4, 2, 48, 24, 0.2
    cq, ckv = [int(x) for x in np.cumsum(lens_q)], [int(x) for x in np.cumsum(lens_kv)]
    q, k = representable((cq[-1], n1, d), "fp32"), representable((ckv[-1], n2, d), "fp32")
    v, dout = representable((ckv[-1], n2, dv), "fp32"), representable((cq[-1], n1, dv), "fp32")
    attention = Call(ms_ops.flash_attention_score, head_num=n1, input_layout="TND", actual_seq_qlen=cq,
                     actual_seq_kvlen=ckv, scalar_value=scale, sparse_mode=2, attn_mask=mode_mask(2))
    args = [to_ms(a, "fp32") for a in (q, k, v)]
    out = attention(*args)
    grads = ms.grad(VjpLoss(attention), grad_position=(0, 1, 2))(*args, ms.Tensor(dout.astype(np.float32)))
    got = [to_np(out)] + [to_np(g) for g in grads]
    ref = varlen(q, k, v, dout, cq, ckv, scale, sparse_mode=2)
    naive = varlen(q, k, v, dout, cq, ckv, scale, sparse_mode=2, rnd=rounding("fp32"))
    for name, g, r, nv in zip(("attention_out", "dq", "dk", "dv"), got, ref, naive):
        assert_close(name, g, r, nv, "fp32")


@pytest.mark.parametrize("layout,q,k,v,match", [
    ("BSND", (1, 8, 2, 16), (1, 8, 2, 16), (1, 8, 2, 32), "'value' head dim must not exceed key's"),
    ("BSND", (1, 8, 2, 16), (1, 8, 2, 16), (1, 9, 2, 8), "'value' must have key's shape"),
    ("BSH", (1, 8, 32), (1, 8, 32), (1, 8, 15), "'value' hidden size 15 is not a multiple"),
])
def test_errors(layout, q, k, v, match):
    t = [ms.Tensor(np.ones(s), ms.float32) for s in (q, k, v)]
    with pytest.raises(ValueError, match=f"flash_attention_score: {match}"):
        ms_ops.flash_attention_score(*t, 2, input_layout=layout)
