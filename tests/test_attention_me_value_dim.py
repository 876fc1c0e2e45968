"""memory_efficient_attention with a value head dim Kv below the query/key one K (xformers allows
Kv != K; the kernels take Kv <= K): 4-D, 3-D, 5-D GQA, a causal mask, a dense bias and packed
sequences, outputs and gradients against the float64 reference in both modes."""
import mindspore as ms
import numpy as np
import pytest

import ms_ops
from ms_ops import attn_bias as ab
from ms_ops.reference.attention import flash_attention_grad_pse, flash_attention_masked, varlen
from tests.test_attention_memory_efficient import bnsd, from_bnsd, run
from tests.utils import Call, assert_close, representable, rounding


def reference(q, k, v, dout, scale, visible, dtype, pse=None):
    """Reference and naive (out, dq, dk, dv) in the inputs' shapes (out takes value's head dim)."""
    rnd = rounding(dtype)
    qb, kb, vb, db = (bnsd(a) for a in (q, k, v, rnd(dout)))
    shapes = (dout.shape, q.shape, k.shape, v.shape)
    results = []
    for r in (None, rnd):
        extra = {} if r is None else {"rnd": r}
        got = ((flash_attention_masked(qb, kb, vb, scale, visible, pse=pse, **extra),)
               + flash_attention_grad_pse(qb, kb, vb, db, scale, visible, pse=pse, **extra)[:3])
        results.append([from_bnsd(a, s) for a, s in zip(got, shapes)])
    return results


def check(got, ref, naive, dtype):
    for name, g, r, nv in zip(("out", "dq", "dk", "dv"), got, ref, naive):
        assert_close(name, g, r, nv, dtype)


@pytest.mark.parametrize("dtype,causal", [("fp32", True), ("bf16", False)])
def test_4d(mode, dtype, causal):
    b, m, n, hq, hk, k, kv = 2, 23, 37, 4, 2, 64, 24
    q, key = representable((b, m, hq, k), dtype), representable((b, n, hk, k), dtype)
    value, dout = representable((b, n, hk, kv), dtype), representable((b, m, hq, kv), "fp32")
    bias = ab.LowerTriangularMask() if causal else None
    got = run(Call(ms_ops.memory_efficient_attention, attn_bias=bias), q, key, value, dout, dtype)
    assert got[0].shape == (b, m, hq, kv)
    visible = np.tril(np.ones((m, n), bool)) if causal else np.ones((m, n), bool)
    check(got, *reference(q, key, value, dout, k ** -0.5, visible, dtype), dtype)


def test_3d_and_5d(mode):
    """One head [B, M, K] and grouped [B, M, G, H, K] queries keep their rank with Kv."""
    q, key = representable((2, 11, 32), "fp32"), representable((2, 17, 32), "fp32")
    value, dout = representable((2, 17, 8), "fp32"), representable((2, 11, 8), "fp32")
    got = run(Call(ms_ops.memory_efficient_attention, scale=0.3), q, key, value, dout, "fp32")
    assert got[0].shape == (2, 11, 8)
    ref, naive = reference(*(a[:, :, None] for a in (q, key, value, dout)), 0.3, np.ones((11, 17), bool), "fp32")
    check(got, [r[:, :, 0] for r in ref], [r[:, :, 0] for r in naive], "fp32")
    b, m, n, g, h, k, kv = 1, 13, 19, 2, 3, 48, 20
    q, key = representable((b, m, g, h, k), "fp32"), representable((b, n, g, 1, k), "fp32")
    value, dout = representable((b, n, g, 1, kv), "fp32"), representable((b, m, g, h, kv), "fp32")
    got = run(Call(ms_ops.memory_efficient_attention), q, key, value, dout, "fp32")
    assert [a.shape for a in got] == [dout.shape, q.shape, key.shape, value.shape]
    check(got, *reference(q, key, value, dout, k ** -0.5, np.ones((m, n), bool), "fp32"), "fp32")


def test_dense_bias(mode):
    b, m, n, h, k, kv = 2, 15, 26, 2, 32, 16
    q, key = representable((b, m, h, k), "fp32"), representable((b, n, h, k), "fp32")
    value, dout = representable((b, n, h, kv), "fp32"), representable((b, m, h, kv), "fp32")
    bias = representable((b, h, m, n), "fp32")
    got = run(Call(ms_ops.memory_efficient_attention, attn_bias=ms.Tensor(bias.astype(np.float32))), q, key, value, dout, "fp32")
    check(got, *reference(q, key, value, dout, k ** -0.5, np.ones((m, n), bool), "fp32", pse=bias), "fp32")


def test_block_diagonal_causal(mode):
    q_len, kv_len, h, k, kv = [9, 0, 21], [12, 5, 21], 2, 64, 40
    bias = ab.BlockDiagonalCausalMask.from_seqlens(q_len, kv_len)
    q, key = representable((1, sum(q_len), h, k), "fp32"), representable((1, sum(kv_len), h, k), "fp32")
    value, dout = representable((1, sum(kv_len), h, kv), "fp32"), representable((1, sum(q_len), h, kv), "fp32")
    got = run(Call(ms_ops.memory_efficient_attention, attn_bias=bias), q, key, value, dout, "fp32")
    cq, ckv = [int(x) for x in np.cumsum(q_len)], [int(x) for x in np.cumsum(kv_len)]
    args = (q[0], key[0], value[0], dout[0], cq, ckv, k ** -0.5)
    ref = varlen(*args, sparse_mode=2)
    naive = varlen(*args, sparse_mode=2, rnd=rounding("fp32"))
    check([g[0] for g in got], ref, naive, "fp32")
