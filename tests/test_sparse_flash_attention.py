"""sparse_flash_attention and its gradient against the float64 reference
(ms_ops.reference.dsa.sparse_flash_attention): BSND (also with per-batch lengths) and TND
(lengths 0 and 1), paged keys (PA_BSND, forward), GQA, rope parts (the MLA layout, D = 512 + 64),
sparse_block_size > 1, sparse_mode 0 and 3, pre/next_tokens bands, -1 entries anywhere in a list,
three dtypes, GRAPH and PYNATIVE; the statistics' layout; determinism; bad input."""
import re

import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

import ms_ops
from ms_ops.reference.dsa import SFA_LOWEST, sparse_flash_attention as reference
from tests.utils import assert_close, representable, rounding, to_ms, to_np

OP = "sparse_flash_attention"


class Attention(nn.Cell):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def construct(self, q, k, v, idx, qr, kr):
        return ms_ops.sparse_flash_attention(q, k, v, idx, query_rope=qr, key_rope=kr, **self.kwargs)


class Loss(nn.Cell):
    """<attention_out, w> in float32: its gradients are the vector-Jacobian products with w."""

    def __init__(self, attention):
        super().__init__()
        self.attention = attention

    def construct(self, q, k, v, idx, qr, kr, w):
        return (self.attention(q, k, v, idx, qr, kr)[0].astype(ms.float32) * w).sum()


def make_indices(rows_of, s2_of, n2, topk, block_size):
    """Per query row and key head: a random set of distinct blocks of its sequence (some beyond the
    causal limit), padded with -1 and shuffled so -1 entries sit anywhere."""
    lists = []
    for row in range(len(rows_of)):
        blocks = -(-s2_of[row] // block_size)
        per_head = []
        for _ in range(n2):
            chosen = np.random.permutation(blocks)[:np.random.randint(0, min(blocks, topk) + 1)]
            entries = np.concatenate([chosen, -np.ones(topk - chosen.size, np.int64)])
            per_head.append(np.random.permutation(entries))
        lists.append(per_head)
    return np.array(lists, dtype=np.int32).reshape(len(rows_of), n2, topk)


def run(q, k, v, idx, dtype, mode, scale, qr=None, kr=None, grad=True, **kwargs):
    """(attention_out, softmax_max, softmax_sum[, dq, dk, dv, dqr, dkr]) as float64 numpy, with the
    reference's naive rounding of dout."""
    rope = qr is not None
    args = [to_ms(a, dtype) for a in (q, k, v)] + [ms.Tensor(idx)]
    args += [to_ms(qr, dtype), to_ms(kr, dtype)] if rope else [None, None]
    attention = Attention(scale_value=scale, **kwargs)
    out = [to_np(x) for x in attention(*args)]
    if not grad:
        return out, None
    w = representable(out[0].shape, "fp32")
    positions = (0, 1, 2, 4, 5) if rope else (0, 1, 2)
    wt = ms.Tensor(w.astype(np.float32))
    if mode == "pynative":
        grads = ms.grad(lambda *a: Loss(attention)(*a, wt), grad_position=positions)(*args)
    else:
        grads = ms.grad(Loss(attention), grad_position=positions)(*args, wt)
    return out + [to_np(g) for g in grads], rounding(dtype)(w)


def check(q, k, v, idx, dtype, mode, scale=0.3, qr=None, kr=None, cum=None, block_size=1, sparse_mode=3,
          grad=True, lens=None, band=None):
    """``lens``: BSND per-batch (query, key) lengths; ``band``: (pre_tokens, next_tokens)."""
    kwargs = dict(sparse_block_size=block_size, sparse_mode=sparse_mode)
    if cum is not None:
        kwargs.update(layout_query="TND", layout_kv="TND", actual_seq_lengths_query=cum[0],
                      actual_seq_lengths_kv=cum[1])
    if lens is not None:
        kwargs.update(actual_seq_lengths_query=lens[0], actual_seq_lengths_kv=lens[1])
    if band is not None:
        kwargs.update(pre_tokens=band[0], next_tokens=band[1])
    got, w = run(q, k, v, idx, dtype, mode, scale, qr, kr, grad, **kwargs)
    ref_kw = dict(q_rope=qr, k_rope=kr, cum_q=None if cum is None else cum[0], cum_kv=None if cum is None else cum[1],
                  len_q=None if lens is None else lens[0], len_kv=None if lens is None else lens[1],
                  pre_tokens=None if band is None else band[0], next_tokens=None if band is None else band[1],
                  block_size=block_size, sparse_mode=sparse_mode, dout=w)
    ref = reference(q, k, v, idx, scale, **ref_kw)
    naive = reference(q, k, v, idx, scale, rnd=rounding(dtype), **ref_kw)
    names = ("attention_out", "softmax_max", "softmax_sum", "d_query", "d_key", "d_value", "d_query_rope", "d_key_rope")
    refs = [r for r in ref if r is not None][:len(got)]
    naives = [r for r in naive if r is not None][:len(got)]
    names = [n for n, r in zip(names, ref) if r is not None]
    seen = refs[2] > 0  # rows with a visible key; the others' statistics are exact constants
    assert np.all(got[1][~seen] == SFA_LOWEST) and np.all(got[2][~seen] == 0)
    for name, g, r, nv in zip(names, got, refs, naives):
        if name in ("softmax_max", "softmax_sum"):
            g, r, nv = g[seen], r[seen], nv[seen]
        assert_close(name, g, r, nv, dtype)
    return got


def bsnd(b, s1, s2, n1, n2, d, topk, dtype, block_size=1, dv=None, rope=0):
    q = representable((b, s1, n1, d), dtype)
    k = representable((b, s2, n2, d), dtype)
    v = representable((b, s2, n2, dv or d), dtype)
    idx = make_indices([0] * (b * s1), [s2] * (b * s1), n2, topk, block_size).reshape(b, s1, n2, topk)
    ropes = (representable((b, s1, n1, rope), dtype), representable((b, s2, n2, rope), dtype)) if rope else (None, None)
    return q, k, v, idx, ropes


def test_bsnd_gqa_causal(mode):
    q, k, v, idx, _ = bsnd(2, 37, 45, 4, 2, 64, 20, "fp32")
    out, smax, ssum, *_ = check(q, k, v, idx, "fp32", mode)
    assert smax.shape == ssum.shape == (2, 2, 37, 2)
    # Rows whose lists select nothing visible output 0 with the empty-row statistics.
    blind = ssum == 0
    assert np.all(smax[blind] == SFA_LOWEST)


def test_rope_mla_layout(mode):
    # MLA absorb: D = 512 + rope 64, a single key head (MQA), value = the key's 512 part.
    q, k, _, idx, (qr, kr) = bsnd(1, 9, 150, 4, 1, 512, 140, "fp32", rope=64)
    check(q, k, k.copy(), idx, "fp32", mode, scale=0.04, qr=qr, kr=kr)


def test_tnd_lengths_block_size(mode):
    # Sequences with no queries, no keys, and a single query and key; blocks of 4 keys past the
    # sequence's end are cut; sparse_mode 0 sees every selected key.
    lens_q, lens_kv = [13, 0, 1, 6, 20], [30, 7, 1, 0, 19]
    cq, ck = [int(x) for x in np.cumsum(lens_q)], [int(x) for x in np.cumsum(lens_kv)]
    rows_s2 = [lens_kv[b] for b in range(5) for _ in range(lens_q[b])]
    q = representable((sum(lens_q), 6, 48), "fp32")
    k = representable((sum(lens_kv), 3, 48), "fp32")
    v = representable((sum(lens_kv), 3, 40), "fp32")
    idx = make_indices(rows_s2, rows_s2, 3, 5, 4)
    sparse_mode = 3 if mode == "graph" else 0
    out, smax, ssum, dq, *_ = check(q, k, v, idx, "fp32", mode, cum=(cq, ck), block_size=4, sparse_mode=sparse_mode)
    assert smax.shape == (3, sum(lens_q), 2)
    empty = slice(14, 20)  # the queries of the sequence without keys
    assert np.all(out[empty] == 0) and np.all(dq[empty] == 0)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_low_precision(mode, dtype):
    q, k, v, idx, (qr, kr) = bsnd(1, 33, 70, 2, 1, 128, 48, dtype, rope=16)
    check(q, k, v, idx, dtype, mode, scale=0.08, qr=qr, kr=kr)


def test_deterministic():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    q, k, v, idx, _ = bsnd(1, 40, 300, 2, 1, 64, 200, "fp32")
    np.random.seed(7)
    first, _ = run(q, k, v, idx, "fp32", "pynative", 0.2)
    np.random.seed(7)
    second, _ = run(q, k, v, idx, "fp32", "pynative", 0.2)
    for a, b in zip(first, second):
        assert np.array_equal(a, b)


def small():
    q = ms.Tensor(np.ones((1, 4, 2, 8), np.float32))
    k = ms.Tensor(np.ones((1, 6, 1, 8), np.float32))
    idx = ms.Tensor(np.zeros((1, 4, 1, 2), np.int32) - 1)
    return q, k, idx


@pytest.mark.parametrize("change,error,message", [
    (dict(key="f16"), TypeError, "'key' must have the dtype of 'query'"),
    (dict(idx="i64"), TypeError, "'sparse_indices' must have dtype in"),
    (dict(query_rope=True), ValueError, "'query_rope' is given without 'key_rope'"),
    (dict(heads=3), ValueError, "'key' has 3 heads, which must divide query's 2"),
    (dict(layout_kv="TND"), ValueError, "'layout_kv' 'TND' must equal 'layout_query' 'BSND'"),
    (dict(layout_query="BNSD", layout_kv="BNSD"), ValueError, "'layout_query' must be 'BSND' or 'TND'"),
    (dict(block_table=True), ValueError, "'block_table' is required exactly with layout_kv 'PA_BSND'"),
    (dict(layout_kv="PA_BSND"), ValueError, "'block_table' is required exactly with layout_kv 'PA_BSND'"),
    (dict(block_table=True, layout_kv="PA_BSND"), ValueError, "'actual_seq_lengths_kv' is required with layout_kv"),
    (dict(sparse_mode=1), ValueError, "'sparse_mode' must be one of (0, 3)"),
    (dict(pre_tokens=1.5), TypeError, "'pre_tokens' must be an int"),
    (dict(sparse_block_size=0), ValueError, "'sparse_block_size' must be >= 1"),
    (dict(actual_seq_lengths_query=[4, 4]), ValueError,
     "'actual_seq_lengths_query' must have one length per batch (1), got 2"),
    (dict(actual_seq_lengths_kv=[7]), ValueError, "'actual_seq_lengths_kv' entries must be in [0, 6], got (7,)"),
])
def test_static_errors(change, error, message):
    q, k, idx = small()
    v = k
    kwargs = {key: val for key, val in change.items() if key not in ("key", "idx", "query_rope", "heads",
                                                                     "block_table")}
    if change.get("key") == "f16":
        k = k.astype(ms.float16)
    if change.get("idx") == "i64":
        idx = idx.astype(ms.int64)
    if "query_rope" in change:
        kwargs["query_rope"] = q
    if "heads" in change:
        k = v = ms.Tensor(np.ones((1, 6, 3, 8), np.float32))
    if "block_table" in change:
        kwargs["block_table"] = ms.Tensor(np.zeros((1, 2), np.int32))
    with pytest.raises(error, match=re.escape(f"{OP}: {message}")):
        ms_ops.sparse_flash_attention(q, k, v, idx, 0.5, **kwargs)


@pytest.mark.parametrize("values,message", [
    ([[0, 6]], "'sparse_indices': value 6 at [0, 0, 0, 1] is outside [-1, 6)"),
    ([[-2, -1]], "'sparse_indices': value -2 at [0, 0, 0, 0] is outside [-1, 6)"),
    ([[3, 3]], "'sparse_indices': value 3 at [0, 0, 0, 1] repeats an earlier entry of the same list"),
])
def test_index_errors(mode, values, message):
    q, k, idx = small()
    bad = idx.asnumpy().copy()
    bad[0, 0, 0] = values[0]
    with pytest.raises(RuntimeError, match=re.escape(f"ms_ops.{OP}: {message}")):
        ms_ops.sparse_flash_attention(q, k, k, ms.Tensor(bad), 0.5)[0].asnumpy()
    # The process survives: a good call after the refused one (every list empty: zeros).
    out = ms_ops.sparse_flash_attention(q, k, k, idx, 0.5)[0]
    assert np.all(to_np(out) == 0)


class Packed(nn.Cell):
    """TND attention whose lengths are inputs, for dynamic shapes in GRAPH mode."""

    def construct(self, q, k, v, idx, cq, ck):
        return ms_ops.sparse_flash_attention(q, k, v, idx, 0.25, layout_query="TND", layout_kv="TND",
                                             actual_seq_lengths_query=cq, actual_seq_lengths_kv=ck)


def test_dynamic_shapes_graph():
    ms.set_context(mode=ms.GRAPH_MODE)
    cell = Packed()
    dyn = [ms.Tensor(shape=[None, 4, 32], dtype=ms.float32), ms.Tensor(shape=[None, 2, 32], dtype=ms.float32),
           ms.Tensor(shape=[None, 2, 32], dtype=ms.float32), ms.Tensor(shape=[None, 2, 6], dtype=ms.int32),
           ms.Tensor(shape=[None], dtype=ms.int64), ms.Tensor(shape=[None], dtype=ms.int64)]
    cell.set_inputs(*dyn)
    for lens_q, lens_kv in (([5, 9], [7, 12]), ([1, 30, 2], [40, 3, 0])):
        cq, ck = np.cumsum(lens_q), np.cumsum(lens_kv)
        rows_s2 = [lens_kv[b] for b in range(len(lens_q)) for _ in range(lens_q[b])]
        q, k, v = (representable((int(n[-1]), h, 32), "fp32") for n, h in ((cq, 4), (ck, 2), (ck, 2)))
        idx = make_indices(rows_s2, rows_s2, 2, 6, 1)
        got = cell(*(to_ms(a, "fp32") for a in (q, k, v)), ms.Tensor(idx), ms.Tensor(cq), ms.Tensor(ck))
        ref = reference(q, k, v, idx, 0.25, cum_q=list(cq), cum_kv=list(ck))
        naive = reference(q, k, v, idx, 0.25, cum_q=list(cq), cum_kv=list(ck), rnd=rounding("fp32"))
        assert got[1].shape == (2, int(cq[-1]), 2)
        assert_close("attention_out", to_np(got[0]), ref[0], naive[0], "fp32")


def test_awkward_dims():
    # Kernel numerics (PyNative): head dims 59 / 111 (value), rope 7, group 3, 97 queries, blocks of
    # 3 keys cut at S2 = 130.
    ms.set_context(mode=ms.PYNATIVE_MODE)
    q, k, v, idx, (qr, kr) = bsnd(1, 97, 130, 3, 1, 59, 11, "fp32", block_size=3, dv=111, rope=7)
    check(q, k, v, idx, "fp32", "pynative", scale=0.1, qr=qr, kr=kr, block_size=3)


def test_wide_heads():
    # Kernel numerics (PyNative): fp32 key rows of 4400 + 96 rope elements leave the gather queue
    # one row per buffer beside the UB's other rows (fp32 rows much wider than 4500 do not fit).
    ms.set_context(mode=ms.PYNATIVE_MODE)
    q, k, v, idx, (qr, kr) = bsnd(1, 3, 5, 2, 1, 4400, 3, "fp32", dv=4400, rope=96)
    check(q, k, v, idx, "fp32", "pynative", scale=0.01, qr=qr, kr=kr)


def test_many_query_heads_per_key_head():
    # Kernel numerics (PyNative): 300 query heads share one key head: the gradient's vector pass over
    # a tile's P and dS takes its rows in chunks of at most 248 (one call's repeats), here 248 + 52.
    ms.set_context(mode=ms.PYNATIVE_MODE)
    q, k, v, idx, (qr, kr) = bsnd(1, 5, 40, 300, 1, 8, 12, "fp32", rope=4)
    check(q, k, v, idx, "fp32", "pynative", scale=0.3, qr=qr, kr=kr)


def test_mha_more_queries_than_keys(mode):
    # N1 = N2 (one query head per list); S1 > S2: in sparse_mode 3 the first S1 - S2 rows see nothing.
    # scale 0.1: at 0.3 the fp32 gradients of this small shape met the 2x-naive rule on about half
    # the seeds only, with either way of summing the key gradients (12 and 11 of 24 failed, d key
    # or d query by an ulp or two); at 0.1, 2 of 24 (measured with the earlier per-block partial sums).
    q, k, v, idx, _ = bsnd(2, 30, 12, 3, 3, 24, 9, "fp32")
    out = check(q, k, v, idx, "fp32", mode, scale=0.1)[0]
    assert np.all(out[:, :18] == 0)


def test_long_index_lists():
    # Kernel numerics (PyNative): 600 entries, read in chunks of 512, gathered over several key tiles.
    ms.set_context(mode=ms.PYNATIVE_MODE)
    q, k, v, idx, _ = bsnd(1, 9, 700, 2, 1, 16, 600, "fp32")
    check(q, k, v, idx, "fp32", "pynative", scale=0.5, sparse_mode=0)


def test_sparse_count_past_2048():
    # Kernel numerics (PyNative): k = 2100 entries (CANN caps k at 2048; ours has no cap), with
    # and without gradients.
    ms.set_context(mode=ms.PYNATIVE_MODE)
    q, k, v, idx, _ = bsnd(1, 3, 2200, 2, 1, 16, 2100, "fp32")
    check(q, k, v, idx, "fp32", "pynative", scale=0.5, sparse_mode=0)


def test_key_gradients_mqa_with_empty_lists(mode):
    # MQA with 16 query heads: each token's key gradients (16 heads summed by the cube) are added
    # by the blocks that own their key rows, a round after the token's own. Every token selects
    # all its keys except tokens 20 and 21 (nothing): they add nothing, and d query is 0 for them.
    q, k, v, _, (qr, kr) = bsnd(1, 40, 40, 16, 1, 32, 40, "fp32", rope=8)
    idx = np.stack([np.random.permutation(40) for _ in range(40)]).astype(np.int32)
    idx[20:22] = -1
    got = check(q, k, v, idx.reshape(1, 40, 1, 40), "fp32", mode, scale=0.2, qr=qr, kr=kr)
    assert np.all(got[3][0, 20:22] == 0) and np.all(got[6][0, 20:22] == 0)


def test_key_gradients_of_long_block_lists():
    # Kernel numerics (PyNative): 700 entries of 3-key blocks (2100 keys per list, read 512
    # entries at a time): tiles of 128 keys end inside a block (128 is not a multiple of 3), and
    # each row's key gradients come from 17 tiles. GQA with 2 lists per row.
    ms.set_context(mode=ms.PYNATIVE_MODE)
    q, k, v, _, _ = bsnd(1, 4, 2100, 4, 2, 16, 700, "fp32", block_size=3)
    # Every list holds all 700 blocks, shuffled, then one entry of each list becomes -1.
    idx = np.stack([np.random.permutation(700) for _ in range(8)]).astype(np.int32)
    idx[np.arange(8), np.random.randint(0, 600, 8)] = -1
    check(q, k, v, idx.reshape(1, 4, 2, 700), "fp32", "pynative", scale=0.5, block_size=3, sparse_mode=0)


@pytest.mark.full
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("layout", ["BSND", "TND"])
@pytest.mark.parametrize("block_size,sparse_mode", [(1, 3), (4, 3), (2, 0)])
def test_grid(mode, dtype, layout, block_size, sparse_mode):
    if layout == "BSND":
        q, k, v, idx, (qr, kr) = bsnd(2, 150, 300, 8, 2, 96, 40, dtype, block_size=block_size, rope=32)
        check(q, k, v, idx, dtype, mode, scale=0.1, qr=qr, kr=kr, block_size=block_size, sparse_mode=sparse_mode)
        return
    lens_q, lens_kv = [70, 0, 1, 129], [260, 5, 1, 140]
    cq, ck = [int(x) for x in np.cumsum(lens_q)], [int(x) for x in np.cumsum(lens_kv)]
    rows_s2 = [lens_kv[b] for b in range(4) for _ in range(lens_q[b])]
    q = representable((cq[-1], 8, 96), dtype)
    k = representable((ck[-1], 2, 96), dtype)
    v = representable((ck[-1], 2, 80), dtype)
    idx = make_indices(rows_s2, rows_s2, 2, 40, block_size)
    check(q, k, v, idx, dtype, mode, scale=0.1, cum=(cq, ck), block_size=block_size, sparse_mode=sparse_mode)


class Absorbed(nn.Cell):
    """MLA absorb: one tensor is both key and value (the kernels then gather it once)."""

    def construct(self, q, kv, idx, qr, kr, w):
        out = ms_ops.sparse_flash_attention(q, kv, kv, idx, 0.05, query_rope=qr, key_rope=kr)[0]
        return (out.astype(ms.float32) * w).sum()


def test_value_is_key(mode):
    q, k, _, idx, (qr, kr) = bsnd(1, 21, 140, 4, 1, 64, 130, "fp32", rope=16)
    w = representable((1, 21, 4, 64), "fp32")
    args = [to_ms(a, "fp32") for a in (q, k)] + [ms.Tensor(idx)] + [to_ms(a, "fp32") for a in (qr, kr)]
    dq, dkv, dqr, dkr = (to_np(g) for g in ms.grad(Absorbed(), grad_position=(0, 1, 3, 4))(*args, ms.Tensor(
        w.astype(np.float32))))
    kw = dict(q_rope=qr, k_rope=kr, dout=w)
    ref = reference(q, k, k, idx, 0.05, **kw)
    naive = reference(q, k, k, idx, 0.05, rnd=rounding("fp32"), **kw)
    for name, got, i in (("d_query", dq, 3), ("d_query_rope", dqr, 6), ("d_key_rope", dkr, 7)):
        assert_close(name, got, ref[i], naive[i], "fp32")
    assert_close("d_key + d_value", dkv, ref[4] + ref[5], naive[4] + naive[5], "fp32")


def bsnd_lengths(lens_q, lens_kv, s1, s2, n1, n2, d, topk, dtype, block_size=1):
    """BSND data padded to S1 / S2 whose lists select only keys below each batch's key length."""
    b = len(lens_q)
    q = representable((b, s1, n1, d), dtype)
    k = representable((b, s2, n2, d), dtype)
    v = representable((b, s2, n2, d), dtype)
    rows = [lens_kv[i] for i in range(b) for _ in range(s1)]
    idx = make_indices(rows, rows, n2, topk, block_size).reshape(b, s1, n2, topk)
    return q, k, v, idx


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_bsnd_per_batch_lengths(mode, dtype):
    # Batch 1 has no keys, batch 2 no queries; padded query rows output 0 and get no gradient,
    # padded keys none either.
    lens_q, lens_kv = [9, 4, 0], [21, 0, 13]
    q, k, v, idx = bsnd_lengths(lens_q, lens_kv, 11, 24, 4, 2, 32, 10, dtype, block_size=2)
    # The padded rows' lists are never read (CANN's input generator fills them too): entries out
    # of range and repeated there are no error.
    for b, n in enumerate(lens_q):
        idx[b, n:] = 1000
    out, smax, ssum, dq, dk, dv = check(q, k, v, idx, dtype, mode, scale=0.2, block_size=2,
                                        lens=(lens_q, lens_kv))
    assert smax.shape == (3, 2, 11, 2)
    assert np.all(out[0, 9:] == 0) and np.all(dq[0, 9:] == 0) and np.all(out[1:] == 0)
    assert np.all(dk[0, 21:] == 0) and np.all(dv[2, 13:] == 0)


def test_band(mode):
    # sparse_mode 3 with a 5-key window behind the diagonal; sparse_mode 0 with a band reaching 3
    # keys past the anchor; a band entirely past the keys.
    q, k, v, idx, _ = bsnd(1, 19, 40, 2, 1, 32, 30, "fp32", block_size=2)
    check(q, k, v, idx, "fp32", mode, scale=0.1, block_size=2, band=(5, 0))
    check(q, k, v, idx, "fp32", mode, scale=0.2, block_size=2, sparse_mode=0, band=(4, 3), grad=False)
    out = check(q, k, v, idx, "fp32", mode, scale=0.2, block_size=2, sparse_mode=0, band=(-50, 90), grad=False)[0]
    assert np.all(out == 0)


def page(k, v, lens_kv, block, rope=None):
    """Contiguous BSND key/value/key_rope -> ([blocks, block, N2, D] caches, block_table): each
    batch's blocks in shuffled slots, with a spare block nobody uses."""
    b, s2 = k.shape[:2]
    per = -(-s2 // block)
    slots = np.random.permutation(b * per + 1)
    table = slots[:b * per].reshape(b, per).astype(np.int32)
    caches = []
    for x in (k, v) + ((rope,) if rope is not None else ()):
        cache = np.zeros((b * per + 1, block) + x.shape[2:], x.dtype)
        padded = np.zeros((b, per * block) + x.shape[2:], x.dtype)
        padded[:, :s2] = x
        for i in range(b):
            for j in range(per):
                cache[table[i, j]] = padded[i, j * block:(j + 1) * block]
        caches.append(cache)
    return caches, table


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_paged_forward(mode, dtype):
    lens_q, lens_kv = [7, 5], [30, 9]
    q, k, v, idx = bsnd_lengths(lens_q, lens_kv, 7, 30, 4, 1, 32, 12, dtype)
    qr, kr = representable((2, 7, 4, 8), dtype), representable((2, 30, 1, 8), dtype)
    (kc, vc, krc), table = page(k, v, lens_kv, 8, kr)
    args = [to_ms(a, dtype) for a in (q, kc, vc)] + [ms.Tensor(idx), to_ms(qr, dtype), to_ms(krc, dtype)]
    kw = dict(block_table=ms.Tensor(table), layout_kv="PA_BSND", actual_seq_lengths_kv=lens_kv,
              actual_seq_lengths_query=lens_q)
    got = [to_np(x) for x in Attention(scale_value=0.2, **kw)(*args)]
    ref_kw = dict(q_rope=qr, k_rope=kr, len_q=lens_q, len_kv=lens_kv)
    ref = reference(q, k, v, idx, 0.2, **ref_kw)
    naive = reference(q, k, v, idx, 0.2, rnd=rounding(dtype), **ref_kw)
    for name, g, r, nv in zip(("attention_out", "softmax_max", "softmax_sum"), got, ref, naive):
        assert_close(name, g, r, nv, dtype)
    loss, wt = Loss(Attention(scale_value=0.2, **kw)), ms.Tensor(np.ones(got[0].shape, np.float32))
    with pytest.raises(ValueError, match=re.escape(f"{OP}: no gradient with 'block_table'")):
        if mode == "graph":
            ms.grad(loss, grad_position=(0,))(*args, wt)
        else:
            ms.grad(lambda *a: loss(*a, wt), grad_position=(0,))(*args)


def test_paged_packed_queries(mode):
    # TND queries with PA_BSND keys (MindSpore: layout_kv PA_BSND need not match layout_query): each
    # packed sequence's rows equal the same rows of the padded BSND call, bitwise.
    lens_q, lens_kv = [7, 0, 5], [30, 9, 17]
    q, k, v, idx = bsnd_lengths(lens_q, lens_kv, 7, 30, 4, 1, 32, 12, "fp32")
    (kc, vc), table = page(k, v, lens_kv, 8)
    kw = dict(block_table=ms.Tensor(table), layout_kv="PA_BSND", actual_seq_lengths_kv=lens_kv)
    pad = [to_np(x) for x in Attention(scale_value=0.2, actual_seq_lengths_query=lens_q, **kw)(
        to_ms(q, "fp32"), to_ms(kc, "fp32"), to_ms(vc, "fp32"), ms.Tensor(idx), None, None)]
    rows = [(b, i) for b, n in enumerate(lens_q) for i in range(n)]
    packed_q = np.stack([q[b, i] for b, i in rows])
    packed_idx = np.stack([idx[b, i] for b, i in rows])
    got = [to_np(x) for x in Attention(scale_value=0.2, layout_query="TND", actual_seq_lengths_query=[7, 7, 12],
                                       **kw)(to_ms(packed_q, "fp32"), to_ms(kc, "fp32"), to_ms(vc, "fp32"),
                                             ms.Tensor(packed_idx), None, None)]
    for t, (b, i) in enumerate(rows):
        assert np.array_equal(got[0][t], pad[0][b, i])
        assert np.array_equal(got[1][:, t], pad[1][b, :, i]) and np.array_equal(got[2][:, t], pad[2][b, :, i])


@pytest.mark.parametrize("table,lens,message", [
    ([[0, 1]], [17], "'block_table': is too short: 2 blocks of 8 keys cannot hold batch 0's 17 keys"),
    ([[0, 3]], [9], "'block_table': entry [0, 1] is 3, outside [0, 3) (key's blocks)"),
    ([[0, -1]], [8], None),
])
def test_paged_errors(table, lens, message):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    q = ms.Tensor(np.ones((1, 2, 2, 8), np.float32))
    k = ms.Tensor(np.ones((3, 8, 1, 8), np.float32))
    idx = ms.Tensor(np.zeros((1, 2, 1, 1), np.int32))
    kw = dict(block_table=ms.Tensor(np.array(table, np.int32)), layout_kv="PA_BSND", actual_seq_lengths_kv=lens)
    if message is None:
        # Entries past a sequence's blocks are never read: -1 there is fine.
        out = ms_ops.sparse_flash_attention(q, k, k, idx, 0.5, **kw)[0]
        assert np.allclose(to_np(out), 1.0)
        return
    with pytest.raises(RuntimeError, match=re.escape(f"ms_ops.{OP}: {message}")):
        ms_ops.sparse_flash_attention(q, k, k, idx, 0.5, **kw)[0].asnumpy()
