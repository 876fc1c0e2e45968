"""flash_attention_score with input_layout TND and a full attn_mask or real_shift, per sequence
padded to the longest one (element (b, n1, i, j): query i and key j of sequence b), against the
float64 reference run sequence by sequence, forward and gradients, GRAPH and PYNATIVE; the TND
forms real_shift does not take."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

import ms_ops
from ms_ops.reference.attention import flash_attention_grad_pse, flash_attention_masked, visibility
from tests.utils import assert_close, representable, rounding, to_ms, to_np


class Packed(nn.Cell):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def construct(self, q, k, v, mask, pse):
        return ms_ops.flash_attention_score(q, k, v, attn_mask=mask, real_shift=pse, input_layout="TND", **self.kwargs)


class Loss(nn.Cell):
    def __init__(self, attention):
        super().__init__()
        self.attention = attention

    def construct(self, q, k, v, mask, pse, w):
        return (self.attention(q, k, v, mask, pse).astype(ms.float32) * w).sum()


@pytest.mark.parametrize("pse_type,mask_heads,sparse", [(1, 1, 0), (0, 2, 1)])
def test_mask_and_bias(mode, pse_type, mask_heads, sparse):
    lens_q, lens_kv, n1, n2, d, scale = [20, 0, 33, 5], [40, 7, 25, 0], 2, 1, 32, 0.2
    cq, ckv = [int(x) for x in np.cumsum(lens_q)], [int(x) for x in np.cumsum(lens_kv)]
    b, s1, s2 = len(lens_q), max(lens_q), max(lens_kv)
    q, dout = representable((cq[-1], n1, d), "fp32"), representable((cq[-1], n1, d), "fp32")
    k, v = representable((ckv[-1], n2, d), "fp32"), representable((ckv[-1], n2, d), "fp32")
    mask = np.random.rand(b, mask_heads, s1, s2) < 0.3
    pse = representable((b, n1, s1, s2), "fp32")
    attention = Packed(head_num=n1, actual_seq_qlen=cq, actual_seq_kvlen=ckv, scalar_value=scale, pse_type=pse_type,
                       sparse_mode=sparse)
    args = [to_ms(a, "fp32") for a in (q, k, v)] + [ms.Tensor(mask), to_ms(pse, "fp32")]
    w = ms.Tensor(dout.astype(np.float32))
    out = attention(*args)
    if mode == "pynative":
        grads = ms.grad(lambda *a: Loss(attention)(*a, w), grad_position=(0, 1, 2, 4))(*args)
    else:
        grads = ms.grad(Loss(attention), grad_position=(0, 1, 2, 4))(*args, w)
    got = [to_np(out)] + [to_np(g) for g in grads[:3]]
    assert np.all(to_np(grads[3]) == 0)  # real_shift is not differentiated with TND
    ref = [np.zeros(q.shape), np.zeros(q.shape), np.zeros(k.shape), np.zeros(v.shape)]
    naive = [np.zeros(q.shape), np.zeros(q.shape), np.zeros(k.shape), np.zeros(v.shape)]
    starts_q, starts_kv = [0] + cq[:-1], [0] + ckv[:-1]
    for bi in range(b):
        rq, rk = slice(starts_q[bi], cq[bi]), slice(starts_kv[bi], ckv[bi])
        l1, l2 = lens_q[bi], lens_kv[bi]
        if l1 == 0 or l2 == 0:
            continue
        vis = visibility(l1, l2, sparse) & ~mask[bi:bi + 1, :, :l1, :l2]
        bias = pse[bi:bi + 1, :, :l1, :l2]
        qb, kb, vb, gb = (a[None].transpose(0, 2, 1, 3) for a in (q[rq], k[rk], v[rk], dout[rq]))
        for rnd, into in ((None, ref), (rounding("fp32"), naive)):
            kw = {} if rnd is None else {"rnd": rnd}
            res = (flash_attention_masked(qb, kb, vb, scale, vis, pse=bias, pse_first=pse_type == 1, **kw),) + \
                flash_attention_grad_pse(qb, kb, vb, gb, scale, vis, pse=bias, pse_first=pse_type == 1, **kw)[:3]
            for full, r, rows in zip(into, res, (rq, rq, rk, rk)):
                full[rows] = r[0].transpose(1, 0, 2)
    for name, g, r, nv in zip(("attention_out", "dq", "dk", "dv"), got, ref, naive):
        assert_close(name, g, r, nv, "fp32")


def test_errors():
    q = ms.Tensor(np.ones((12, 2, 16)), ms.float32)
    lens = {"actual_seq_qlen": [5, 12], "actual_seq_kvlen": [5, 12]}
    with pytest.raises(ValueError, match="flash_attention_score: 'real_shift' slopes .*not supported with input_"):
        ms_ops.flash_attention_score(q, q, q, 2, input_layout="TND", real_shift=ms.Tensor(np.ones(2), ms.float32),
                                     pse_type=2, **lens)
    with pytest.raises(ValueError, match="flash_attention_score: 'attn_mask' shape"):
        ms_ops.flash_attention_score(q, q, q, 2, input_layout="TND", attn_mask=ms.Tensor(np.zeros((12, 12), bool)),
                                     **lens)
