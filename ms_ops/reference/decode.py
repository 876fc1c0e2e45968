"""float64 numpy references of the decode ops (the semantics, stated plainly; test oracle only)."""
import numpy as np


def reshape_and_cache(key, value, key_cache, value_cache, slot_mapping):
    """New caches: token t's key and value at flat slot ``slot_mapping[t]`` (-1: skipped)."""
    kc, vc = np.array(key_cache, np.float64), np.array(value_cache, np.float64)
    nb, bs = kc.shape[:2]
    flat_k, flat_v = kc.reshape(nb * bs, -1), vc.reshape(nb * bs, -1)
    key, value = np.asarray(key, np.float64), np.asarray(value, np.float64)
    for t, slot in enumerate(np.asarray(slot_mapping)):
        if slot >= 0:
            flat_k[slot] = key[t].reshape(-1)
            flat_v[slot] = value[t].reshape(-1)
    return kc, vc


def copy_blocks(key_cache, value_cache, block_mapping):
    """New caches with ``cache[dst] = cache[src]`` for every (src, dst) row."""
    kc, vc = np.array(key_cache, np.float64), np.array(value_cache, np.float64)
    for src, dst in np.asarray(block_mapping).reshape(-1, 2):
        kc[dst], vc[dst] = kc[src], vc[src]
    return kc, vc


def gather_kv(cache, table, length):
    """The first ``length`` rows of one sequence, ``[length, N_kv, D]``, through its block table."""
    bs = cache.shape[1]
    pos = np.arange(length)
    return np.asarray(cache, np.float64)[np.asarray(table)[pos // bs], pos % bs]


def _exact(a):
    return a


def paged_attention(query, key_cache, value_cache, block_tables, context_lens, head_num, scale_value,
                    kv_head_num, q_seq_lens=None, alibi_slopes=None, rnd=_exact):
    """Dense softmax attention of each query token over its sequence's visible cached tokens.

    ``rnd`` is applied after every operation: the identity gives the reference, a rounding to the
    input dtype the naive computation in that precision (the tests' error scale).
    """
    q = np.asarray(query, np.float64)
    t = q.shape[0]
    d = key_cache.shape[3]
    q = q.reshape(t, head_num, d)
    ctx = np.asarray(context_lens)
    q_lens = np.ones(len(ctx), np.int64) if q_seq_lens is None else np.asarray(q_seq_lens)
    group = head_num // kv_head_num
    out = np.zeros_like(q)
    start = 0
    for b, (c, ql) in enumerate(zip(ctx, q_lens)):
        k = gather_kv(key_cache, block_tables[b], c)
        v = gather_kv(value_cache, block_tables[b], c)
        for j in range(ql):
            p = c - ql + j
            for n in range(head_num):
                if p < 0:
                    continue
                kk, vv = k[:p + 1, n // group], v[:p + 1, n // group]
                s = rnd(rnd(kk @ q[start + j, n]) * scale_value)
                if alibi_slopes is not None:
                    s = rnd(s + rnd(alibi_slopes[n] * (np.arange(p + 1) - p)))
                w = rnd(np.exp(rnd(s - s.max())))
                out[start + j, n] = rnd(rnd(w @ vv) / rnd(w.sum()))
        start += ql
    return out.reshape(np.asarray(query).shape)
