# ---- sparse_flash_attention (and its gradient) ----
"""float64 numpy statement of sparse_flash_attention and its gradient. The test oracle; never on an
op's path.

Query row t (of its sequence: i-th query, the sequence having s1 queries and s2 keys) and key
head n2 see the keys J(t, n2): for every entry e of sparse_indices[t, n2] that is not -1, keys
e*block_size .. e*block_size + block_size - 1 that are < s2 and, with sparse_mode 3, <= i + s2 - s1.
The G = N1/N2 query heads of n2 attend over J with score scale * (q·k + q_rope·k_rope). A row with
no visible key outputs 0, max the lowest float32, sum 0, and gets no gradient. ``rnd`` is applied
after every operation: the identity gives the reference, a rounding to fp16/bf16/fp32 the same math
done naively in that precision.
"""
import numpy as np

SFA_LOWEST = float(np.finfo(np.float32).min)


def _sfa_exact(a):
    return a


def _sfa_matmul(a, b, rnd):
    """a @ b; naively as a float32-accumulating GEMM of rounded operands, rounded once more."""
    if rnd is _sfa_exact:
        return a @ b
    return rnd((rnd(a).astype(np.float32) @ rnd(b).astype(np.float32)).astype(np.float64))


def sparse_visible_keys(indices, i, s1, s2, block_size, sparse_mode):
    """Sorted positions of the keys one index list selects that query i sees."""
    limit = s2 - 1 if sparse_mode == 0 else min(s2 - 1, i + s2 - s1)
    keys = [e * block_size + r for e in indices if e != -1 for r in range(block_size)]
    return np.array(sorted(p for p in keys if p <= limit), dtype=np.int64)


def _sfa_packed(x, batch):
    return x if batch is None else x.reshape((-1,) + x.shape[2:])


def sparse_flash_attention(q, k, v, indices, scale, *, q_rope=None, k_rope=None, cum_q=None, cum_kv=None,
                           block_size=1, sparse_mode=3, dout=None, rnd=None):
    """(attention_out, softmax_max, softmax_sum) of BSND ([B, S, N, D]) or TND ([T, N, D], with
    cumulative ``cum_q``/``cum_kv``) inputs, statistics [B, N2, S1, G] or [N2, T1, G]; with
    ``dout`` also (d query, d key, d value, d query_rope, d key_rope) (rope ones None without rope).
    """
    rnd = rnd or _sfa_exact
    batch = None if q.ndim == 3 else q.shape[0]
    if batch is not None:
        s1, s2 = q.shape[1], k.shape[1]
        cum_q, cum_kv = [s1 * (b + 1) for b in range(batch)], [s2 * (b + 1) for b in range(batch)]
    q, k, v, indices = (_sfa_packed(x, batch) for x in (q, k, v, indices))
    grads = dout is not None
    if grads:
        dout = _sfa_packed(dout, batch)
    rope = q_rope is not None
    if rope:
        q = np.concatenate([q, _sfa_packed(q_rope, batch)], axis=-1)
        k = np.concatenate([k, _sfa_packed(k_rope, batch)], axis=-1)
    t1, n1, _ = q.shape
    n2, dv = k.shape[1], v.shape[-1]
    g = n1 // n2
    out = np.zeros((t1, n1, dv))
    smax = np.full((n2, t1, g), SFA_LOWEST)
    ssum = np.zeros((n2, t1, g))
    dq, dk, dvv = np.zeros(q.shape), np.zeros(k.shape), np.zeros(v.shape)
    for b in range(len(cum_q)):
        q0, q1 = (cum_q[b - 1] if b else 0), cum_q[b]
        k0, k1 = (cum_kv[b - 1] if b else 0), cum_kv[b]
        for t in range(q0, q1):
            for h in range(n2):
                keys = sparse_visible_keys(indices[t, h], t - q0, q1 - q0, k1 - k0, block_size, sparse_mode)
                if keys.size == 0:
                    continue
                heads = slice(h * g, (h + 1) * g)
                qq, kk, vv = q[t, heads], k[k0 + keys, h], v[k0 + keys, h]
                s = rnd(_sfa_matmul(qq, kk.T, rnd) * scale)
                m = np.max(s, axis=-1, keepdims=True)
                e = rnd(np.exp(rnd(s - m)))
                total = rnd(np.sum(e, axis=-1, keepdims=True))
                p = rnd(e / total)
                o = _sfa_matmul(p, vv, rnd)
                out[t, heads] = o
                smax[h, t], ssum[h, t] = m[:, 0], total[:, 0]
                if not grads:
                    continue
                do = dout[t, heads]
                dp = _sfa_matmul(do, vv.T, rnd)
                d = rnd(np.sum(rnd(do * o), axis=-1, keepdims=True))
                ds = rnd(rnd(p * rnd(dp - d)) * scale)
                dq[t, heads] = _sfa_matmul(ds, kk, rnd)
                dk[k0 + keys, h] = rnd(dk[k0 + keys, h] + _sfa_matmul(ds.T, qq, rnd))
                dvv[k0 + keys, h] = rnd(dvv[k0 + keys, h] + _sfa_matmul(p.T, do, rnd))
    if batch is not None:
        out = out.reshape((batch, -1) + out.shape[1:])
        smax, ssum = (x.reshape(n2, batch, -1, g).transpose(1, 0, 2, 3) for x in (smax, ssum))
    result = (out, smax, ssum)
    if not grads:
        return result
    d_main = q.shape[-1] - (q_rope.shape[-1] if rope else 0)
    unpack = (lambda x: x) if batch is None else (lambda x: x.reshape((batch, -1) + x.shape[1:]))
    dq, dk, dvv = unpack(dq), unpack(dk), unpack(dvv)
    dq_rope = dq[..., d_main:] if rope else None
    dk_rope = dk[..., d_main:] if rope else None
    return result + (dq[..., :d_main], dk[..., :d_main], dvv, dq_rope, dk_rope)
