"""float64 numpy statement of flash_attention_score (CANN FlashAttentionScore without pse,
dropout, mask tensors or prefix) and its gradient. The test oracle; never on an op's path.

Tensors are taken in BNSD ([B, N, S, D]); key j is visible to query i when
i + low <= j <= i + high (``visible_offsets``). A query row with no visible key outputs 0 and
gets no gradient. ``rnd`` is applied after every operation: the identity gives the reference, a
rounding to fp16/bf16/fp32 the same math done naively in that precision.
"""
import numpy as np

FAR = 1 << 40


def _exact(a):
    return a


def visible_offsets(s1, s2, pre_tokens, next_tokens, sparse_mode):
    """(low, high): key j is visible to query i iff i + low <= j <= i + high."""
    if sparse_mode == 0:
        return -min(pre_tokens, FAR), min(next_tokens, FAR)
    return -FAR, 0 if sparse_mode == 2 else s2 - s1


def _mask(s1, s2, low, high):
    i = np.arange(s1)[:, None]
    j = np.arange(s2)[None, :]
    return (j >= i + low) & (j <= i + high)


def _probs(q, k, scale, mask, rnd):
    group = q.shape[1] // k.shape[1]
    kk = np.repeat(k, group, axis=1)
    s = rnd(rnd(q @ kk.transpose(0, 1, 3, 2)) * scale)
    s = np.where(mask, s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = rnd(np.exp(rnd(s - m)))
    z = np.sum(e, axis=-1, keepdims=True)
    p = rnd(e / np.where(z > 0, z, 1.0))
    return p, group


def flash_attention(q, k, v, scale, low, high, rnd=_exact):
    """attention_out [B, N1, S1, D]."""
    mask = _mask(q.shape[2], k.shape[2], low, high)
    p, group = _probs(q, k, scale, mask, rnd)
    return rnd(p @ np.repeat(v, group, axis=1))


def flash_attention_grad(q, k, v, dout, scale, low, high, rnd=_exact):
    """(dq, dk, dv), each in its input's BNSD shape."""
    mask = _mask(q.shape[2], k.shape[2], low, high)
    p, group = _probs(q, k, scale, mask, rnd)
    kk, vv = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    out = rnd(p @ vv)
    dv = rnd(p.transpose(0, 1, 3, 2) @ dout)
    dp = rnd(dout @ vv.transpose(0, 1, 3, 2))
    d = rnd(np.sum(rnd(dout * out), axis=-1, keepdims=True))
    ds = rnd(p * rnd(dp - d))
    dq = rnd(rnd(ds @ kk) * scale)
    dk = rnd(rnd(ds.transpose(0, 1, 3, 2) @ q) * scale)

    def fold(g):
        b, n1, s, dim = g.shape
        return g.reshape(b, n1 // group, group, s, dim).sum(axis=2)

    return dq, fold(dk), fold(dv)
