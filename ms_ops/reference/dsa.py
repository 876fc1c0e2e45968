"""float64 references of the DeepSeek sparse attention ops (the test oracle; never on an op path).

Layouts are handled by the callers' ``segments``: a list of (query rows, key rows) index ranges
per batch, so BSND (``b * S + i``) and TND (cumulative lengths) share one code path on
token-major arrays: query [T1, N1, D], key [T2, N2, D], weights [T1, N1].
"""
import numpy as np


def segments(layout, t1, t2, seq1=None, seq2=None, lengths_query=None, lengths_key=None):
    """Per batch ``(q0, rows, valid, k0, keys)``: the batch's query rows start at q0 (``rows`` of
    them, the first ``valid`` real) and its keys at k0 (``keys`` of them)."""
    out = []
    if layout == "TND":
        prev_q = prev_k = 0
        for cq, ck in zip(lengths_query, lengths_key):
            out.append((prev_q, cq - prev_q, cq - prev_q, prev_k, ck - prev_k))
            prev_q, prev_k = cq, ck
        return out
    batch = t1 // seq1
    for b in range(batch):
        valid = seq1 if lengths_query is None else lengths_query[b]
        keys = seq2 if lengths_key is None else lengths_key[b]
        out.append((b * seq1, seq1, valid, b * seq2, keys))
    return out


def visible(i, valid, keys, sparse_mode):
    """Keys [0, visible) that query row i of a batch sees."""
    if i >= valid:
        return 0
    if sparse_mode == 0:
        return keys
    return int(np.clip(i + 1 + keys - valid, 0, keys))


def index_scores(q, k, w, group):
    """The index scores of one query token for every key head n (over its group of query heads):
    q [N1, D], k [S, N2, D], w [N1] -> [N2, S]."""
    n2 = k.shape[1]
    s = np.einsum("ngd,snd->ngs", q.reshape(n2, group, -1), k)
    return np.einsum("ng,ngs->ns", w.reshape(n2, group), np.maximum(s, 0.0))


def lightning_indexer(q, k, w, segs, sparse_count, sparse_mode):
    """(indices int32 [T1, N2, k], values [T1, N2, k]): the top-k keys of I per query row and key
    head, ties to the lower key index, -1 / -inf past the visible keys."""
    q, k, w = (np.asarray(a, np.float64) for a in (q, k, w))
    t1, n1, _ = q.shape
    n2 = k.shape[1]
    group = n1 // n2
    idx = np.full((t1, n2, sparse_count), -1, np.int32)
    val = np.full((t1, n2, sparse_count), -np.inf)
    for q0, rows, valid, k0, keys in segs:
        for i in range(rows):
            vis = visible(i, valid, keys, sparse_mode)
            if vis == 0:
                continue
            scores = index_scores(q[q0 + i], k[k0:k0 + vis], w[q0 + i], group)
            take = min(vis, sparse_count)
            for n in range(n2):
                order = np.argsort(-scores[n], kind="stable")[:take]
                idx[q0 + i, n, :take] = order
                val[q0 + i, n, :take] = scores[n, order]
    return idx, val


def _same(a):
    return a


def _mm(a, b, r):
    """a @ b; with a rounding r other than the identity, summed term by term in its precision."""
    if r is _same:
        return a @ b
    acc = np.zeros((a.shape[0], b.shape[1]))
    for i in range(a.shape[1]):
        acc = r(acc + r(a[:, i:i + 1] * b[i:i + 1, :]))
    return acc


def lightning_indexer_grad(q, k, w, dy, indices, segs, rnd=None):
    """(dq, dk, dw) of sum(dy * values) with the selection `indices` held fixed (entries -1 skip):
    values[t, n, j] = I[t, n, indices[t, n, j]]. ``rnd`` rounds every intermediate product (the
    naive low-precision form the tests bound the kernel's error with)."""
    r = rnd or _same
    q, k, w, dy = (np.asarray(a, np.float64) for a in (q, k, w, dy))
    n1, n2 = q.shape[1], k.shape[1]
    group = n1 // n2
    dq, dk, dw = np.zeros_like(q), np.zeros_like(k), np.zeros_like(w)
    for q0, rows, _, k0, _ in segs:
        for i in range(rows):
            t = q0 + i
            for n in range(n2):
                sel = indices[t, n]
                live = sel >= 0
                keys = k0 + sel[live]
                g = dy[t, n][live]
                heads = slice(n * group, (n + 1) * group)
                s = _mm(q[t, heads], k[keys, n].T, r)              # [G, j]
                dw[t, heads] += _mm(np.maximum(s, 0.0), g[:, None], r)[:, 0]
                ds = r((s > 0) * w[t, heads, None] * g[None, :])  # [G, j]
                dq[t, heads] += _mm(ds, k[keys, n], r)
                np.add.at(dk[:, n], keys, _mm(ds.T, q[t, heads], r))
    return r(dq), r(dk), r(dw)


def _main_scores(q, k, qr, kr, t, n, keys, group, scale, r=None):
    """The main attention's scaled scores of token t's query heads in key head n's group: [G, j]."""
    r = r or _same
    heads = slice(n * group, (n + 1) * group)
    s = _mm(q[t, heads], k[keys, n].T, r)
    if qr is not None:
        s = r(s + _mm(qr[t, heads], kr[keys, n].T, r))
    return r(scale * s)


def sparse_attention_stats(q, k, indices, segs, scale, qr=None, kr=None):
    """softmax_max and softmax_sum [T1, N2, G] of the main attention over each token's selected
    keys (what the sparse attention forward outputs, token-major)."""
    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    qr = None if qr is None else np.asarray(qr, np.float64)
    kr = None if kr is None else np.asarray(kr, np.float64)
    n1, n2 = q.shape[1], k.shape[1]
    group = n1 // n2
    mx = np.zeros((q.shape[0], n2, group))
    sm = np.zeros((q.shape[0], n2, group))
    for q0, rows, _, k0, _ in segs:
        for i in range(rows):
            for n in range(n2):
                sel = indices[q0 + i, n]
                keys = k0 + sel[sel >= 0]
                if keys.size == 0:
                    continue
                s = _main_scores(q, k, qr, kr, q0 + i, n, keys, group, scale)
                mx[q0 + i, n] = s.max(axis=1)
                sm[q0 + i, n] = np.exp(s - mx[q0 + i, n][:, None]).sum(axis=1)
    return mx, sm


def sparse_lightning_indexer_kl_loss(q, k, qi, ki, w, indices, mx, sm, scale, segs, qr=None, kr=None, rnd=None):
    """(loss, d query_index, d key_index, d weights, dI) of Σ_t,n KL(p || softmax(I)) over the
    selected keys, with mx / sm token-major [T1, N2, G] and dI [T1, N2, k] (zero at -1 entries).
    ``rnd`` rounds the intermediates (the naive low-precision form)."""
    r = rnd or _same
    q, k, qi, ki, w = (np.asarray(a, np.float64) for a in (q, k, qi, ki, w))
    qr = None if qr is None else np.asarray(qr, np.float64)
    kr = None if kr is None else np.asarray(kr, np.float64)
    n1, n2 = q.shape[1], k.shape[1]
    group, igroup = n1 // n2, qi.shape[1] // n2
    loss = 0.0
    d_i = np.zeros(indices.shape)
    for q0, rows, _, k0, _ in segs:
        for i in range(rows):
            t = q0 + i
            for n in range(n2):
                live = indices[t, n] >= 0
                keys = k0 + indices[t, n][live]
                if keys.size == 0:
                    continue
                s = _main_scores(q, k, qr, kr, t, n, keys, group, scale, r)
                p = np.zeros(keys.size)
                for head in r(np.exp(s - mx[t, n][:, None]) / sm[t, n][:, None]):
                    p = r(p + head)
                p = r(p / p.sum())
                heads = slice(n * igroup, (n + 1) * igroup)
                scores = _mm(w[t, heads][None, :], np.maximum(_mm(qi[t, heads], ki[keys, n].T, r), 0.0), r)[0]
                log_s = scores - scores.max()
                log_s = r(log_s - np.log(np.exp(log_s).sum()))
                pos = p > 0
                loss += np.sum(p[pos] * (np.log(p[pos]) - log_s[pos]))
                d_i[t, n, live] = r(r(np.exp(log_s)) - p)
    dqi, dki, dw = lightning_indexer_grad(qi, ki, w, d_i, indices, segs, rnd)
    return loss, dqi, dki, dw, d_i


# ---- sparse_flash_attention (and its gradient) ----
# float64 numpy statement of sparse_flash_attention and its gradient. The test oracle; never on an
# op's path.
#
# Query row t (of its sequence: i-th query, the sequence having s1 queries and s2 keys; rows past
# s1 of a padded BSND batch see nothing) and key head n2 see the keys J(t, n2): for every entry e
# of sparse_indices[t, n2] that is not -1, keys e*block_size .. e*block_size + block_size - 1 that
# are < s2, within the band [a - pre_tokens, a + next_tokens] around a = i + s2 - s1 and, with
# sparse_mode 3, <= a.
# The G = N1/N2 query heads of n2 attend over J with score scale * (q·k + q_rope·k_rope). A row with
# no visible key outputs 0, max the lowest float32, sum 0, and gets no gradient. ``rnd`` is applied
# after every operation: the identity gives the reference, a rounding to fp16/bf16/fp32 the same math
# done naively in that precision.
SFA_LOWEST = float(np.finfo(np.float32).min)


def _sfa_exact(a):
    return a


def _sfa_matmul(a, b, rnd):
    """a @ b; naively as a float32-accumulating GEMM of rounded operands, rounded once more."""
    if rnd is _sfa_exact:
        return a @ b
    return rnd((rnd(a).astype(np.float32) @ rnd(b).astype(np.float32)).astype(np.float64))


def sparse_visible_keys(indices, i, s1, s2, block_size, sparse_mode, pre_tokens=None, next_tokens=None):
    """Sorted positions of the keys one index list selects that query i sees (None: no band)."""
    anchor = i + s2 - s1
    limit = s2 - 1 if sparse_mode == 0 else min(s2 - 1, anchor)
    first = 0
    if next_tokens is not None:
        limit = min(limit, anchor + next_tokens)
    if pre_tokens is not None:
        first = anchor - pre_tokens
    keys = [e * block_size + r for e in indices if e != -1 for r in range(block_size)]
    return np.array(sorted(p for p in keys if first <= p <= limit), dtype=np.int64)


def _sfa_packed(x, batch):
    return x if batch is None else x.reshape((-1,) + x.shape[2:])


def sparse_flash_attention(q, k, v, indices, scale, *, q_rope=None, k_rope=None, cum_q=None, cum_kv=None,
                           len_q=None, len_kv=None, block_size=1, sparse_mode=3, pre_tokens=None,
                           next_tokens=None, dout=None, rnd=None):
    """(attention_out, softmax_max, softmax_sum) of BSND ([B, S, N, D], optionally with per-batch
    ``len_q``/``len_kv``) or TND ([T, N, D], with cumulative ``cum_q``/``cum_kv``) inputs,
    statistics [B, N2, S1, G] or [N2, T1, G]; with ``dout`` also (d query, d key, d value,
    d query_rope, d key_rope) (rope ones None without rope). ``pre_tokens``/``next_tokens``: the
    band (None: none).
    """
    rnd = rnd or _sfa_exact
    batch = None if q.ndim == 3 else q.shape[0]
    if batch is not None:
        s1, s2 = q.shape[1], k.shape[1]
        seqs = [(b * s1, s1 if len_q is None else len_q[b], b * s2, s2 if len_kv is None else len_kv[b])
                for b in range(batch)]
    else:
        seqs = [((cum_q[b - 1] if b else 0), cum_q[b] - (cum_q[b - 1] if b else 0), (cum_kv[b - 1] if b else 0),
                 cum_kv[b] - (cum_kv[b - 1] if b else 0)) for b in range(len(cum_q))]
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
    for q0, s1_b, k0, s2_b in seqs:
        for t in range(q0, q0 + s1_b):
            for h in range(n2):
                keys = sparse_visible_keys(indices[t, h], t - q0, s1_b, s2_b, block_size, sparse_mode, pre_tokens,
                                           next_tokens)
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
