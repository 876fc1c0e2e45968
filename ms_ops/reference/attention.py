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


def _matmul(a, b, rnd):
    """a @ b; naively (any rounding but the identity) as a float32-accumulating GEMM of the
    rounded operands, rounded once more, which is what a fp16/bf16/fp32 matmul does."""
    if rnd is _exact:
        return a @ b
    return rnd((rnd(a).astype(np.float32) @ rnd(b).astype(np.float32)).astype(np.float64))


def _rowsum(a, rnd):
    """Sum over the last axis (keeping it); naively accumulated in float32."""
    if rnd is _exact:
        return np.sum(a, axis=-1, keepdims=True)
    return rnd(np.sum(a.astype(np.float32), axis=-1, keepdims=True).astype(np.float64))


def _mask(s1, s2, low, high):
    i = np.arange(s1)[:, None]
    j = np.arange(s2)[None, :]
    return (j >= i + low) & (j <= i + high)


def _probs(q, k, scale, mask, rnd):
    group = q.shape[1] // k.shape[1]
    kk = np.repeat(k, group, axis=1)
    s = rnd(_matmul(q, kk.transpose(0, 1, 3, 2), rnd) * scale)
    s = np.where(mask, s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = rnd(np.exp(rnd(s - m)))
    z = _rowsum(e, rnd)
    p = rnd(e / np.where(z > 0, z, 1.0))
    return p, group


def flash_attention(q, k, v, scale, low, high, rnd=_exact):
    """attention_out [B, N1, S1, D]."""
    mask = _mask(q.shape[2], k.shape[2], low, high)
    p, group = _probs(q, k, scale, mask, rnd)
    return _matmul(p, np.repeat(v, group, axis=1), rnd)


def flash_attention_grad(q, k, v, dout, scale, low, high, rnd=_exact):
    """(dq, dk, dv), each in its input's BNSD shape."""
    mask = _mask(q.shape[2], k.shape[2], low, high)
    p, group = _probs(q, k, scale, mask, rnd)
    kk, vv = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    out = _matmul(p, vv, rnd)
    dv = _matmul(p.transpose(0, 1, 3, 2), dout, rnd)
    dp = _matmul(dout, vv.transpose(0, 1, 3, 2), rnd)
    d = _rowsum(rnd(dout * out), rnd)
    ds = rnd(p * rnd(dp - d))
    dq = rnd(_matmul(ds, kk, rnd) * scale)
    dk = rnd(_matmul(ds.transpose(0, 1, 3, 2), q, rnd) * scale)

    def fold(g):
        b, n1, s, dim = g.shape
        return g.reshape(b, n1 // group, group, s, dim).sum(axis=2)

    return dq, fold(dk), fold(dv)
