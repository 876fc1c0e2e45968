"""float64 numpy statements of the MoE routing semantics (MoeInitRoutingV2 / MoeFinalizeRoutingV2
and their V2Grad ops). The test oracle and the benchmark's spec; never on an op's path.

In the finalize functions a pair (r, k) reads slot ``j(r, k)`` of expanded_x. The index may name
a slot more than once (moe_init_routing never does; CANN's own tests do): the forward then reads
that slot for each such pair, and the gradient of the slot is the sum over those pairs, taken in
ascending pair order ``r*K + k``. A pair whose slot is -1 (dropped) or past the rows of
expanded_x contributes nothing, not even its bias, in the forward and in every gradient.

The arithmetic functions take ``rnd``, a rounding applied after every operation: the identity
gives the float64 reference, a rounding to fp16/bf16/fp32 gives the same math done naively in
that precision (the tests' yardstick for how much error a kernel may have).
"""
import numpy as np


def _exact(a):
    return a


def _active_rows(num, active_num):
    return active_num if 0 < active_num < num else num


def moe_init_routing(x, expert_idx, *, active_num=0, expert_capacity=0, expert_num=0,
                     drop_pad_mode=0, expert_tokens_count_or_cumsum_flag=0,
                     expert_tokens_before_capacity_flag=False):
    """Returns (expanded_x, expanded_row_idx, expert_tokens_count_or_cumsum,
    expert_tokens_before_capacity); outputs a mode does not produce have shape [0]."""
    x = np.asarray(x, np.float64)
    rows, k = expert_idx.shape
    flat = expert_idx.reshape(-1)
    order = np.argsort(flat, kind="stable")          # sorted position j -> flat index i
    dest = np.empty_like(order)
    dest[order] = np.arange(flat.size)               # flat index i -> sorted position j
    num_experts = expert_num if expert_num > 0 else (int(flat.max()) + 1 if flat.size else 0)
    counts = np.bincount(flat, minlength=num_experts)[:num_experts]
    empty = np.zeros((0,), np.int32)
    if drop_pad_mode == 0:
        n = _active_rows(flat.size, active_num)
        expanded_x = x[order[:n] // k]
        tokens = empty
        if expert_tokens_count_or_cumsum_flag == 1:
            tokens = np.cumsum(counts).astype(np.int32)
        elif expert_tokens_count_or_cumsum_flag == 2:
            tokens = counts.astype(np.int32)
        return expanded_x, dest.astype(np.int32), tokens, empty
    cap = expert_capacity
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = dest - start[flat]
    row_idx = np.where(rank < cap, flat * cap + rank, -1)
    expanded_x = np.zeros((expert_num, cap, x.shape[1]))
    keep = row_idx >= 0
    expanded_x.reshape(-1, x.shape[1])[row_idx[keep]] = x[np.nonzero(keep)[0] // k]
    before = counts.astype(np.int32) if expert_tokens_before_capacity_flag else empty
    return expanded_x, row_idx.astype(np.int32), empty, before


def moe_init_routing_grad(grad_expanded_x, expanded_row_idx, *, top_k, drop_pad_mode=0, active_num=0,
                          rnd=_exact):
    g = np.asarray(grad_expanded_x, np.float64)
    hidden = g.shape[-1]
    g = g.reshape(-1, hidden)
    idx = expanded_row_idx.reshape(-1, top_k)
    out = np.zeros((idx.shape[0], hidden))
    usable = (idx >= 0) & (idx < g.shape[0])
    if drop_pad_mode == 0:
        usable &= idx < _active_rows(idx.size, active_num)
    for kk in range(top_k):
        m = usable[:, kk]
        out[m] = rnd(out[m] + g[idx[m, kk]])
    return out


def _entries(expanded_row_idx, rows, k, drop_pad_mode):
    """Index of (r, k) as an [R, K] array, for the column-major (0/1) or row-major (2/3) layout."""
    if drop_pad_mode in (0, 1):
        return expanded_row_idx.reshape(k, rows).T
    return expanded_row_idx.reshape(rows, k)


def _finalize_parts(expanded_x, expanded_row_idx, scales, drop_pad_mode):
    hidden = expanded_x.shape[-1]
    flat_x = np.asarray(expanded_x, np.float64).reshape(-1, hidden)
    k = 1 if scales is None else scales.shape[1]
    rows = expanded_row_idx.size // k
    idx = _entries(expanded_row_idx, rows, k, drop_pad_mode)
    s = np.ones((rows, k)) if scales is None else np.asarray(scales, np.float64)
    used = (idx >= 0) & (idx < flat_x.shape[0])
    return flat_x, idx, s, used


def moe_finalize_routing(expanded_x, expanded_row_idx, *, x1=None, x2=None, bias=None, scales=None,
                         expert_idx=None, drop_pad_mode=0, rnd=_exact):
    flat_x, idx, s, used = _finalize_parts(expanded_x, expanded_row_idx, scales, drop_pad_mode)
    rows, k = idx.shape
    out = np.zeros((rows, flat_x.shape[1]))
    for skip in (x1, x2):
        if skip is not None:
            out = rnd(out + np.asarray(skip, np.float64))
    for kk in range(k):
        m = used[:, kk]
        term = flat_x[np.where(m, idx[:, kk], 0)]
        if bias is not None:
            term = rnd(term + np.asarray(bias, np.float64)[expert_idx[:, kk]])
        out = np.where(m[:, None], rnd(out + rnd(s[:, kk:kk + 1] * term)), out)
    return out


def _dot_rows(a, b, rnd):
    """Row-wise dot products summed left to right with rounding after every step."""
    acc = np.zeros(a.shape[0])
    for h in range(a.shape[1]):
        acc = rnd(acc + rnd(a[:, h] * b[:, h]))
    return acc


def _occurrence(idx, used):
    """For each used pair of the [R, K] index, how many used pairs before it (in r*K + k order)
    name the same slot; -1 for unused pairs."""
    flat, ok = idx.reshape(-1), used.reshape(-1)
    rank = np.full(flat.size, -1)
    seen = {}
    for p in np.nonzero(ok)[0]:
        rank[p] = seen.get(flat[p], 0)
        seen[flat[p]] = rank[p] + 1
    return rank.reshape(idx.shape)


def moe_finalize_routing_grad(grad_y, expanded_x, expanded_row_idx, *, bias=None, scales=None,
                              expert_idx=None, drop_pad_mode=0, rnd=_exact):
    """Returns dict with grad_expanded_x (shape of expanded_x), grad_scales [R, K] (or None),
    grad_bias [E, H] (or None), grad_x1 / grad_x2 (= grad_y). Without scales expanded_x only
    gives the shape: any array of that shape gives the same result."""
    dy = np.asarray(grad_y, np.float64)
    flat_x, idx, s, used = _finalize_parts(expanded_x, expanded_row_idx, scales, drop_pad_mode)
    rows, k = idx.shape
    g_ex = np.zeros_like(flat_x)
    g_s = np.zeros((rows, k))
    g_b = None if bias is None else np.zeros(np.shape(bias))
    contrib = rnd(s[:, :, None] * dy[:, None, :])                   # [R, K, H]
    occurrence = _occurrence(idx, used)
    # Repeated slots accumulate in pair order: the t-th pair naming a slot adds in round t.
    for t in range(occurrence.max(initial=-1) + 1):
        r, kk = np.nonzero(occurrence == t)
        j = idx[r, kk]
        g_ex[j] = rnd(g_ex[j] + contrib[r, kk])
    for kk in range(k):
        r = np.nonzero(used[:, kk])[0]
        term = flat_x[idx[r, kk]]
        if bias is not None:
            e = expert_idx[r, kk]
            term = rnd(term + np.asarray(bias, np.float64)[e])
            for row, ee in zip(r, e):
                g_b[ee] = rnd(g_b[ee] + contrib[row, kk])
        g_s[r, kk] = _dot_rows(term, dy[r], rnd) if len(r) else 0.0
    return {"grad_expanded_x": g_ex.reshape(np.shape(expanded_x)),
            "grad_scales": None if scales is None else g_s,
            "grad_bias": g_b, "grad_x1": dy, "grad_x2": dy}
