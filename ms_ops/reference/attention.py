"""float64 numpy statement of flash_attention_score (CANN FlashAttentionScore) and its gradient.
The test oracle; never on an op's path.

Tensors are taken in BNSD ([B, N, S, D]); key j is visible to query i when
i + low <= j <= i + high (``visible_offsets``), or, in general, where a boolean visibility
array broadcastable to [B, N1, S1, S2] is true (``visibility``: sparse modes, prefix, attn_mask);
packed sequences (TND) go through ``varlen``. A query row with no visible key outputs 0 and
gets no gradient. ``rnd`` is applied after every operation: the identity gives the reference, a
rounding to fp16/bf16/fp32 the same math done naively in that precision. Dropout enters as
``drop``, the multiplier Z / keep_prob (broadcastable to [B, N1, S1, S2]) of the probabilities in
P V, with Z from ``dropout_keep`` (the kernels' generator) or a user mask (``unpack_drop_mask``).
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
    """a @ b; naively (any rounding but the identity) as a float32-accumulating product of the
    rounded operands, rounded once more, which is what a fp16/bf16/fp32 matmul does. The float32
    sum is the textbook one, each product rounded and added in k order, not numpy's BLAS: its
    kernels differ between CPUs (blocking, fused multiply-adds), and with them the error bound."""
    if rnd is _exact:
        return a @ b
    a, b = rnd(a).astype(np.float32), rnd(b).astype(np.float32)
    acc = np.zeros(np.broadcast_shapes(a.shape[:-1] + (1,), b.shape[:-2] + (1, b.shape[-1])), np.float32)
    for j in range(a.shape[-1]):
        acc += a[..., j:j + 1] * b[..., j:j + 1, :]
    return rnd(acc.astype(np.float64))


def _rowsum(a, rnd):
    """Sum over the last axis (keeping it); naively accumulated in float32: a running sum in
    order (np.cumsum's), not np.sum's pairwise one."""
    if rnd is _exact:
        return np.sum(a, axis=-1, keepdims=True)
    if a.shape[-1] == 0:
        return np.zeros(a.shape[:-1] + (1,))
    return rnd(np.cumsum(a.astype(np.float32), axis=-1)[..., -1:].astype(np.float64))


def _mask(s1, s2, low, high):
    i = np.arange(s1)[:, None]
    j = np.arange(s2)[None, :]
    return (j >= i + low) & (j <= i + high)


def _probs(q, k, scale, mask, rnd, pse=None, pse_first=False):
    """Softmax rows of the visible logits: scale * QKᵀ, with ``pse`` (broadcastable to
    [B, N1, S1, S2]) added before (``pse_first``, pse_type 1) or after the scaling."""
    group = q.shape[1] // k.shape[1]
    kk = np.repeat(k, group, axis=1)
    s = _matmul(q, kk.transpose(0, 1, 3, 2), rnd)
    if pse is not None and pse_first:
        s = rnd(s + pse)
    s = rnd(s * scale)
    if pse is not None and not pse_first:
        s = rnd(s + pse)
    s = np.where(mask, s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = rnd(np.exp(rnd(s - m)))
    z = _rowsum(e, rnd)
    p = rnd(e / np.where(z > 0, z, 1.0))
    return p, group


def visibility(s1, s2, sparse_mode, pre_tokens=FAR, next_tokens=FAR, prefix=0, attn_mask=None):
    """[S1, S2] (or attn_mask's broadcast shape) booleans: key j visible to query i in one sequence.
    Modes 7 and 8 are resolved per sequence by ``varlen``; attn_mask (1 = masked out) applies in
    modes 0, 1 and 5 (the others' compressed masks carry no information)."""
    corner = s2 - s1
    low, high = {0: (-pre_tokens, next_tokens), 1: (-FAR, FAR), 2: (-FAR, 0), 3: (-FAR, corner),
                 4: (corner - pre_tokens, corner + next_tokens), 5: (-FAR, corner), 6: (-FAR, corner)}[sparse_mode]
    vis = _mask(s1, s2, max(low, -FAR), min(high, FAR))
    if sparse_mode in (5, 6):
        vis = vis | (np.arange(s2)[None, :] < prefix)
    if attn_mask is not None and sparse_mode in (0, 1, 5):
        vis = vis & ~np.asarray(attn_mask, dtype=bool)
    return vis


def flash_attention(q, k, v, scale, low, high, rnd=_exact):
    """attention_out [B, N1, S1, D]."""
    return flash_attention_masked(q, k, v, scale, _mask(q.shape[2], k.shape[2], low, high), rnd)


def alibi(slopes, s, sqrt=False):
    """The bias pse_type 2 (3 with ``sqrt``) generates: -slope * |i - j| (or its square root),
    [B or 1, N1, S, S] from slopes [N1] or [B, N1]."""
    slopes = np.asarray(slopes, dtype=np.float64).reshape((1,) * (2 - np.ndim(slopes)) + np.shape(slopes))
    dist = np.abs(np.arange(s)[:, None] - np.arange(s)[None, :]).astype(np.float64)
    return -slopes[..., None, None] * (np.sqrt(dist) if sqrt else dist)


def flash_attention_masked(q, k, v, scale, mask, rnd=_exact, pse=None, pse_first=False, drop=None):
    """attention_out [B, N1, S1, D] with ``mask`` (true = visible) broadcastable to [B, N1, S1, S2],
    an optional bias ``pse`` (see ``_probs``) and dropout multiplier ``drop``."""
    p, group = _probs(q, k, scale, mask, rnd, pse, pse_first)
    if drop is not None:
        p = rnd(p * drop)
    return _matmul(p, np.repeat(v, group, axis=1), rnd)


def flash_attention_grad(q, k, v, dout, scale, low, high, rnd=_exact):
    """(dq, dk, dv), each in its input's BNSD shape."""
    return flash_attention_grad_masked(q, k, v, dout, scale, _mask(q.shape[2], k.shape[2], low, high), rnd)


def flash_attention_grad_masked(q, k, v, dout, scale, mask, rnd=_exact, pse=None, pse_first=False):
    """(dq, dk, dv) of ``flash_attention_masked``, each in its input's BNSD shape."""
    return flash_attention_grad_pse(q, k, v, dout, scale, mask, rnd, pse, pse_first)[:3]


def flash_attention_grad_pse(q, k, v, dout, scale, mask, rnd=_exact, pse=None, pse_first=False, drop=None):
    """(dq, dk, dv, d pse) of ``flash_attention_masked``; d pse [B, N1, S1, S2] (the full form's)."""
    p, group = _probs(q, k, scale, mask, rnd, pse, pse_first)
    kk, vv = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    pd = p if drop is None else rnd(p * drop)
    out = _matmul(pd, vv, rnd)
    dv = _matmul(pd.transpose(0, 1, 3, 2), dout, rnd)
    dp = _matmul(dout, vv.transpose(0, 1, 3, 2), rnd)
    if drop is not None:
        dp = rnd(dp * drop)
    d = _rowsum(rnd(dout * out), rnd)
    ds = rnd(p * rnd(dp - d))
    dq = rnd(_matmul(ds, kk, rnd) * scale)
    dk = rnd(_matmul(ds.transpose(0, 1, 3, 2), q, rnd) * scale)

    def fold(g):
        b, n1, s, dim = g.shape
        return g.reshape(b, n1 // group, group, s, dim).sum(axis=2)

    return dq, fold(dk), fold(dv), rnd(ds * scale) if pse_first else ds


def varlen(q, k, v, dout, cum_q, cum_kv, scale, sparse_mode=0, pre_tokens=FAR, next_tokens=FAR, prefix=None,
           rnd=_exact):
    """(out, dq, dk, dv) of packed sequences: q [T1, N1, D], dout [T1, N1, Dv], k [T2, N2, D],
    v [T2, N2, Dv], sequence b being rows [cum[b-1], cum[b]). Every sequence alone, with its own
    sparse mode (7: mode 3 but the last sequence with queries and keys a mode-4 band; 8: mode 2 but
    the first one a mode-4 band)."""
    starts_q, starts_kv = [0] + list(cum_q[:-1]), [0] + list(cum_kv[:-1])
    live = [b for b in range(len(cum_q)) if cum_q[b] > starts_q[b] and cum_kv[b] > starts_kv[b]]
    band = (live[-1] if sparse_mode == 7 else live[0]) if live and sparse_mode in (7, 8) else -1
    out, dq = np.zeros(q.shape[:-1] + v.shape[-1:]), np.zeros(q.shape)
    dk, dv = np.zeros(k.shape), np.zeros(v.shape)
    for b in range(len(cum_q)):
        rq, rk = slice(starts_q[b], cum_q[b]), slice(starts_kv[b], cum_kv[b])
        s1, s2 = cum_q[b] - starts_q[b], cum_kv[b] - starts_kv[b]
        if s1 == 0 or s2 == 0:
            continue
        mode = {7: 4 if b == band else 3, 8: 4 if b == band else 2}.get(sparse_mode, sparse_mode)
        vis = visibility(s1, s2, mode, pre_tokens, next_tokens, 0 if prefix is None else prefix[b])
        qb, kb, vb, gb = (a[None].transpose(0, 2, 1, 3) for a in (q[rq], k[rk], v[rk], dout[rq]))
        out[rq] = flash_attention_masked(qb, kb, vb, scale, vis, rnd)[0].transpose(1, 0, 2)
        grads = flash_attention_grad_masked(qb, kb, vb, gb, scale, vis, rnd)
        for full, g, r in ((dq, grads[0], rq), (dk, grads[1], rk), (dv, grads[2], rk)):
            full[r] = g[0].transpose(1, 0, 2)
    return out, dq, dk, dv


_U32 = np.uint64(0xFFFFFFFF)


def philox4x32_10(counter, key):
    """Philox-4x32-10 (Salmon et al., SC'11): uint32 counters [..., 4] under the key (k0, k1) into
    four uint32 draws each, [..., 4]."""
    c = [np.asarray(counter, np.uint64)[..., i] for i in range(4)]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for _ in range(10):
        p0, p1 = np.uint64(0xD2511F53) * c[0], np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & _U32, (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & _U32]
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & _U32, (k1 + np.uint64(0xBB67AE85)) & _U32
    return np.stack(c, axis=-1).astype(np.uint32)


def dropout_keep(seed, offset, shape, keep_prob):
    """[B, N1, S1, S2] booleans (true = keep) the kernels draw for (seed, offset): element index
    e = ((b * N1 + n1) * S1 + i) * S2 + j (TND: S1, S2 the longest sequence's lengths, i and j within
    the sequence) takes draw e % 4 of Philox with counter (e // 4, offset) and key seed, kept when
    below keep_prob (as float32) * 2^32."""
    n = int(np.prod(shape))
    blocks = np.arange((n + 3) // 4, dtype=np.uint64)
    seed, offset = np.uint64(seed), np.uint64(offset)
    counter = np.stack([blocks & _U32, blocks >> np.uint64(32), np.full_like(blocks, offset & _U32),
                        np.full_like(blocks, offset >> np.uint64(32))], axis=-1)
    draws = philox4x32_10(counter, (seed & _U32, seed >> np.uint64(32))).reshape(-1)[:n]
    threshold = int(float(np.float32(keep_prob)) * 2.0 ** 32)
    return (draws.astype(np.uint64) < threshold).reshape(shape)


def pack_drop_mask(keep):
    """MindSpore's drop_mask [B, N1, S1, S2 // 8] uint8 of keep bits [B, N1, S1, S2]: key j is bit
    j % 8 of byte j // 8, least significant first, 1 = keep."""
    return np.packbits(np.asarray(keep, bool), axis=-1, bitorder="little")


def unpack_drop_mask(mask):
    """The keep bits [B, N1, S1, S2] of a drop_mask."""
    return np.unpackbits(np.asarray(mask, np.uint8), axis=-1, bitorder="little").astype(bool)
