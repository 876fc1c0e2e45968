"""sparse_lightning_indexer_kl_loss (kernel sparse_lightning_indexer_grad_kl_loss) against the
float64 reference (ms_ops.reference.dsa): the loss and its gradients to query_index, key_index
and weights in BSND (with rope) and TND (a length-0 sequence), GQA in the main attention, both
modes; seed 000's identity dI = softmax(I) - p; central finite differences of the kernel's own
loss; bf16; determinism; zero gradients for the detached main-attention inputs; pre/next_tokens
bands (sparse and dense); the errors."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import nn, ops

import ms_ops
from ms_ops.reference import dsa as ref
from tests.dsa_cases import Problem
from tests.utils import assert_close, representable, rounding, to_ms, to_np

SCALE = 0.35


class KlLoss(nn.Cell):
    """The loss as a function of (query_index, key_index, weights), the rest fixed."""

    def __init__(self, fixed, **kwargs):
        super().__init__()
        self.q, self.k, self.idx, self.mx, self.sm = fixed
        self.kwargs = kwargs

    def construct(self, qi, ki, w):
        return ms_ops.sparse_lightning_indexer_kl_loss(self.q, self.k, qi, ki, w, self.idx, self.mx, self.sm,
                                                       SCALE, **self.kwargs)


def make(prob, n1, n2, d, ni, di, k, dtype, rope):
    """Inputs (token-major float64), the selection (from lightning_indexer) and the statistics."""
    q, kk = representable((prob.t1, n1, d), dtype), representable((prob.t2, n2, d), dtype)
    qr = representable((prob.t1, n1, 3), dtype) if rope else None
    kr = representable((prob.t2, n2, 3), dtype) if rope else None
    qi, ki = representable((prob.t1, ni, di), dtype), representable((prob.t2, n2, di), dtype)
    w = representable((prob.t1, ni), dtype)
    idx, _ = ref.lightning_indexer(qi, ki, w, prob.segs, k, 3)
    mx, sm = ref.sparse_attention_stats(q, kk, idx, prob.segs, SCALE, qr, kr)
    return dict(q=q, k=kk, qr=qr, kr=kr, qi=qi, ki=ki, w=w, idx=idx, mx=mx, sm=sm)


def run(prob, data, dtype, mode, **extra):
    """(loss, [d query_index, d key_index, d weights]) token-major, and the Cell."""
    kwargs = dict(layout=prob.layout, **extra)
    if prob.layout == "TND":
        kwargs.update(actual_seq_qlen=prob.cum_q, actual_seq_klen=prob.cum_k)
    if data["qr"] is not None:
        kwargs.update(query_rope=to_ms(prob.shaped(data["qr"]), dtype),
                      key_rope=to_ms(prob.shaped(data["kr"], False), dtype))
    fixed = (to_ms(prob.shaped(data["q"]), dtype), to_ms(prob.shaped(data["k"], False), dtype),
             ms.Tensor(prob.shaped(data["idx"])),
             ms.Tensor(prob.stats(data["mx"]).astype(np.float32)), ms.Tensor(prob.stats(data["sm"]).astype(np.float32)))
    cell = KlLoss(fixed, **kwargs)
    args = [to_ms(prob.shaped(data["qi"]), dtype), to_ms(prob.shaped(data["ki"], False), dtype),
            to_ms(prob.shaped(data["w"]), dtype)]
    loss = cell(*args)
    if mode == "pynative":
        g = ms.grad(lambda a, b, c: cell(a, b, c), grad_position=(0, 1, 2))(*args)
    else:
        g = ms.grad(cell, grad_position=(0, 1, 2))(*args)
    return float(loss.asnumpy()[0]), [prob.tok(to_np(t)) for t in g], cell, args


def reference(prob, data, rnd=None):
    return ref.sparse_lightning_indexer_kl_loss(data["q"], data["k"], data["qi"], data["ki"], data["w"], data["idx"],
                                                data["mx"], data["sm"], SCALE, prob.segs, data["qr"], data["kr"],
                                                rnd=rnd)


def check(prob, dtype, mode, rope, n1=4, n2=2, d=12, ni=6, di=10, k=8):
    data = make(prob, n1, n2, d, ni, di, k, dtype, rope)
    loss, got, cell, args = run(prob, data, dtype, mode)
    want = reference(prob, data)
    naive = reference(prob, data, rounding(dtype))
    assert_close("loss", np.array([loss]), np.array([want[0]]), np.array([naive[0]]), "fp32")
    for name, g, r, nv in zip(("d_query_index", "d_key_index", "d_weights"), got, want[1:4], naive[1:4]):
        assert_close(name, g, r, nv, dtype)
    return data, loss, got, cell, args


@pytest.mark.parametrize("layout,rope", [("BSND", True), ("TND", False)])
def test_loss_and_grads(mode, layout, rope):
    prob = Problem("BSND", (2, 11), 14) if layout == "BSND" else Problem("TND", [6, 0, 13], [9, 3, 13])
    check(prob, "fp32", mode, rope)


def test_bf16():
    check(Problem("BSND", (1, 12), 12), "bf16", "pynative", True)


def test_identity_and_finite_differences():
    """dI = softmax(I) - p: d weights is Σ_j dI_j ReLU(S_j) with dI from the reference's
    distributions; and the kernel's loss moves as its gradient says."""
    prob = Problem("BSND", (1, 9), 9)
    data, loss, got, cell, args = check(prob, "fp32", "pynative", False, n1=2, n2=1, ni=3, k=6)
    dw = np.zeros_like(data["w"])
    for t in range(prob.t1):
        sel = data["idx"][t, 0]
        keys = sel[sel >= 0]
        if keys.size == 0:
            continue
        s = data["q"][t] @ data["k"][keys, 0].T * SCALE
        p = (np.exp(s - data["mx"][t, 0][:, None]) / data["sm"][t, 0][:, None]).sum(axis=0)
        p /= p.sum()
        relu = np.maximum(data["qi"][t] @ data["ki"][keys, 0].T, 0.0)
        scores = data["w"][t] @ relu
        soft = np.exp(scores - scores.max())
        soft /= soft.sum()
        dw[t] = relu @ (soft - p)
    np.testing.assert_allclose(got[2], dw, rtol=1e-4, atol=1e-5)
    h = 1e-2
    for t, g in ((3, 0), (8, 2)):
        shifted = []
        for sign in (1, -1):
            w = data["w"].copy()
            w[t, g] += sign * h
            shifted.append(float(cell(args[0], args[1], to_ms(prob.shaped(w), "fp32")).asnumpy()[0]))
        assert abs((shifted[0] - shifted[1]) / (2 * h) - got[2][t, g]) < 2e-3 * max(1.0, abs(got[2][t, g]))


def test_deterministic_and_detached():
    prob = Problem("TND", [7, 10], [7, 12])
    data, loss, got, cell, args = check(prob, "fp32", "pynative", False)
    loss2, got2, _, _ = run(prob, data, "fp32", "pynative")
    assert loss == loss2
    for a, b in zip(got, got2):
        np.testing.assert_array_equal(a, b)
    main = ms.grad(lambda q, k: ms_ops.sparse_lightning_indexer_kl_loss(
        q, k, args[0], args[1], args[2], cell.idx, cell.mx, cell.sm, SCALE, layout="TND",
        actual_seq_qlen=prob.cum_q, actual_seq_klen=prob.cum_k), grad_position=(0, 1))(cell.q, cell.k)
    assert all(not np.any(to_np(t)) for t in main)


def _inputs(k=4):
    q, kk = ms.Tensor(np.random.randn(1, 5, 2, 8).astype(np.float32)), ms.Tensor(np.random.randn(1, 6, 1, 8).astype(np.float32))
    qi, ki = ms.Tensor(np.random.randn(1, 5, 3, 4).astype(np.float32)), ms.Tensor(np.random.randn(1, 6, 1, 4).astype(np.float32))
    w = ms.Tensor(np.random.randn(1, 5, 3).astype(np.float32))
    idx = np.tile(np.arange(k, dtype=np.int32), (1, 5, 1, 1))
    stats = ms.Tensor(np.ones((1, 1, 5, 2), np.float32))
    return [q, kk, qi, ki, w, idx, stats, stats]


def test_errors():
    op = ms_ops.sparse_lightning_indexer_kl_loss
    a = _inputs()
    with pytest.raises(ValueError, match="sparse_lightning_indexer_kl_loss: 'query_rope'"):
        op(*a[:5], ms.Tensor(a[5]), *a[6:], query_rope=a[0])
    with pytest.raises(TypeError, match="sparse_lightning_indexer_kl_loss: 'sparse_indices'"):
        op(*a[:5], ms.Tensor(a[5].astype(np.int64)), *a[6:])
    with pytest.raises(TypeError, match="sparse_lightning_indexer_kl_loss: 'key'"):
        op(a[0], a[1].astype(ms.float16), *a[2:5], ms.Tensor(a[5]), *a[6:])
    # The index tensors are named as the caller passes them.
    with pytest.raises(TypeError, match="sparse_lightning_indexer_kl_loss: 'weights' must have the dtype of "
                                        "'query_index'"):
        op(*a[:4], a[4].astype(ms.float16), ms.Tensor(a[5]), *a[6:])
    with pytest.raises(ValueError, match=r"sparse_lightning_indexer_kl_loss: 'key_index' heads \(2\) must divide "
                                         r"query_index's heads \(3\)"):
        op(*a[:3], ops.tile(a[3], (1, 1, 2, 1)), *a[4:5], ms.Tensor(a[5]), *a[6:])
    repeated = a[5].copy()
    repeated[0, 2, 0, 1] = repeated[0, 2, 0, 0]
    with pytest.raises(RuntimeError, match="sparse_lightning_indexer_kl_loss: 'sparse_indices'.*twice"):
        op(*a[:5], ms.Tensor(repeated), *a[6:]).asnumpy()
    outside = a[5].copy()
    outside[0, 1, 0, 3] = 6
    with pytest.raises(RuntimeError, match="sparse_lightning_indexer_kl_loss: 'sparse_indices'.*outside"):
        op(*a[:5], ms.Tensor(outside), *a[6:]).asnumpy()
    with pytest.raises(RuntimeError, match="sparse_lightning_indexer_kl_loss: 'softmax_max'"):
        op(*a[:5], ms.Tensor(a[5]), a[6][:, :, :4], a[7]).asnumpy()
    assert np.isfinite(op(*a[:5], ms.Tensor(a[5]), *a[6:]).asnumpy()).all()


@pytest.mark.full
def test_large():
    """Past CANN's limits: 3 key heads, 7 main query heads each, main D 72 + rope, index D 136,
    k = 300 over several hundred keys, and k = 2048 (the UB plan at its largest)."""
    check(Problem("TND", [1, 200, 0, 97], [7, 420, 2, 97]), "fp32", "pynative", True, n1=21, n2=3, d=72, ni=9,
          di=136, k=300)
    check(Problem("BSND", (1, 4), 2100), "fp32", "pynative", True, n1=2, n2=1, d=16, ni=2, di=8, k=2048)


class DenseKlLoss(nn.Cell):
    """dense_lightning_indexer_kl_loss as a function of (query_index, key_index, weights)."""

    def __init__(self, fixed, **kwargs):
        super().__init__()
        self.q, self.k, self.mx, self.sm = fixed
        self.kwargs = kwargs

    def construct(self, qi, ki, w):
        return ms_ops.dense_lightning_indexer_kl_loss(self.q, self.k, qi, ki, w, self.mx, self.sm, SCALE,
                                                      **self.kwargs)


def all_visible(prob, n2, sparse_mode):
    """The dense loss's keys as a selection: every visible key in order, -1 after."""
    width = max(keys for _, _, _, _, keys in prob.segs)
    idx = np.full((prob.t1, n2, width), -1, np.int32)
    for q0, rows, valid, _, keys in prob.segs:
        for i in range(rows):
            vis = ref.visible(i, valid, keys, sparse_mode)
            idx[q0 + i, :, :vis] = np.arange(vis)
    return idx


@pytest.mark.parametrize("mode,layout,rope,sparse_mode,band", [
    ("graph", "BSND", True, 3, None), ("pynative", "TND", False, 0, None), ("pynative", "BSND", False, 0, (2, 1)),
    ("graph", "TND", False, 3, (4, -1))])
def test_dense(mode, layout, rope, sparse_mode, band):
    """The dense warm-up loss equals the sparse loss over every visible key (GRAPH for one layout,
    PYNATIVE for the other: the sparse loss's tests cover both modes per layout), also within a
    pre/next_tokens band."""
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    prob = Problem("BSND", (2, 9), 11) if layout == "BSND" else Problem("TND", [5, 0, 12], [8, 3, 12])
    data = make(prob, 4, 2, 12, 6, 10, 4, "fp32", rope)
    data["idx"] = all_visible(prob, 2, sparse_mode)
    if band is not None:
        data["idx"] = in_band(prob, data["idx"], band[0], band[1], sparse_mode)
    data["mx"], data["sm"] = ref.sparse_attention_stats(data["q"], data["k"], data["idx"], prob.segs, SCALE,
                                                        data["qr"], data["kr"])
    kwargs = dict(layout=layout, sparse_mode=sparse_mode)
    if band is not None:
        kwargs.update(pre_tokens=band[0], next_tokens=band[1])
    if layout == "TND":
        kwargs.update(actual_seq_qlen=prob.cum_q, actual_seq_klen=prob.cum_k)
    if rope:
        kwargs.update(query_rope=to_ms(prob.shaped(data["qr"]), "fp32"),
                      key_rope=to_ms(prob.shaped(data["kr"], False), "fp32"))
    cell = DenseKlLoss((to_ms(prob.shaped(data["q"]), "fp32"), to_ms(prob.shaped(data["k"], False), "fp32"),
                        ms.Tensor(prob.stats(data["mx"]).astype(np.float32)),
                        ms.Tensor(prob.stats(data["sm"]).astype(np.float32))), **kwargs)
    args = [to_ms(prob.shaped(data["qi"]), "fp32"), to_ms(prob.shaped(data["ki"], False), "fp32"),
            to_ms(prob.shaped(data["w"]), "fp32")]
    loss = float(cell(*args).asnumpy()[0])
    if mode == "pynative":
        got = ms.grad(lambda a, b, c: cell(a, b, c), grad_position=(0, 1, 2))(*args)
    else:
        got = ms.grad(cell, grad_position=(0, 1, 2))(*args)
    want, naive = reference(prob, data), reference(prob, data, rounding("fp32"))
    assert_close("loss", np.array([loss]), np.array([want[0]]), np.array([naive[0]]), "fp32")
    for name, g, r, nv in zip(("d_query_index", "d_key_index", "d_weights"), got, want[1:4], naive[1:4]):
        assert_close(name, prob.tok(to_np(g)), r, nv, "fp32")


def test_dense_errors():
    op = ms_ops.dense_lightning_indexer_kl_loss
    q, k, qi, ki, w, _, stats, _ = _inputs()
    with pytest.raises(ValueError, match="dense_lightning_indexer_kl_loss: 'key_rope'"):
        op(q, k, qi, ki, w, stats, stats, key_rope=k)
    # A main attention with more key heads than the indexer's (multi-head, as CANN's own dense op
    # takes) is refused before any kernel runs, naming the argument.
    with pytest.raises(ValueError, match=r"dense_lightning_indexer_kl_loss: 'key' heads \(2\) must equal "
                                         r"key_index's \(1\)"):
        op(q, ops.tile(k, (1, 1, 2, 1)), qi, ki, w, stats, stats)
    bad = ms.Tensor(np.ones((1, 1, 4, 2), np.float32))
    with pytest.raises(RuntimeError, match="dense_lightning_indexer_kl_loss: 'softmax_max'"):
        op(q, k, qi, ki, w, bad, stats).asnumpy()


def test_past_2048_keys():
    """Past CANN's k = 2048: the kernels take a token's keys in runs of 2048 (two passes), the
    sparse loss with k = 2100 selected keys, the dense one over up to 2100 causal keys. The loss
    sums about 2100 float32 terms per token on the vector unit, which the naive reference (float64
    sums of rounded terms) does not model: it is held to 1e-5 relative; the gradients to the rule."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    sparse = Problem("BSND", (1, 3), 2150)
    data = make(sparse, 2, 1, 8, 2, 8, 2100, "fp32", False)
    loss, got, _, _ = run(sparse, data, "fp32", "pynative")
    compare(sparse, data, loss, got)
    dense = Problem("BSND", (1, 3), 2100)
    data = make(dense, 2, 1, 8, 2, 8, 4, "fp32", False)
    data["idx"] = all_visible(dense, 1, 3)
    data["mx"], data["sm"] = ref.sparse_attention_stats(data["q"], data["k"], data["idx"], dense.segs, SCALE)
    cell = DenseKlLoss((to_ms(dense.shaped(data["q"]), "fp32"), to_ms(dense.shaped(data["k"], False), "fp32"),
                        ms.Tensor(dense.stats(data["mx"]).astype(np.float32)),
                        ms.Tensor(dense.stats(data["sm"]).astype(np.float32))))
    args = [to_ms(dense.shaped(data["qi"]), "fp32"), to_ms(dense.shaped(data["ki"], False), "fp32"),
            to_ms(dense.shaped(data["w"]), "fp32")]
    got = ms.grad(lambda a, b, c: cell(a, b, c), grad_position=(0, 1, 2))(*args)
    compare(dense, data, float(cell(*args).asnumpy()[0]), [dense.tok(to_np(g)) for g in got])


def compare(prob, data, loss, got):
    want, naive = reference(prob, data), reference(prob, data, rounding("fp32"))
    assert abs(loss - want[0]) <= 1e-5 * abs(want[0])
    for name, g, r, nv in zip(("d_query_index", "d_key_index", "d_weights"), got, want[1:4], naive[1:4]):
        assert_close(name, g, r, nv, "fp32")


def in_band(prob, idx, pre, nxt, sparse_mode):
    """The selection with the entries outside the band (and, in sparse_mode 3, past the diagonal)
    turned into -1: what the band makes of it."""
    out = idx.copy()
    for q0, rows, valid, _, keys in prob.segs:
        for i in range(rows):
            anchor = i + keys - valid
            hi = anchor + min(nxt, 0) if sparse_mode == 3 else anchor + nxt
            sel = out[q0 + i]
            sel[(sel >= 0) & ((sel < anchor - pre) | (sel > hi) | (i >= valid))] = -1
    return out


@pytest.mark.parametrize("pre,nxt", [(3, 0), (6, -2)])
def test_band(mode, pre, nxt):
    """A band drops the selected keys outside it: the loss and gradients are those of the
    selection without them (the main attention's statistics over the band's keys)."""
    prob = Problem("BSND", (2, 10), 13)
    data = make(prob, 4, 2, 12, 6, 10, 8, "fp32", False)
    banded = dict(data, idx=in_band(prob, data["idx"], pre, nxt, 3))
    banded["mx"], banded["sm"] = ref.sparse_attention_stats(data["q"], data["k"], banded["idx"], prob.segs, SCALE)
    data["mx"], data["sm"] = banded["mx"], banded["sm"]
    loss, got, _, _ = run(prob, data, "fp32", mode, pre_tokens=pre, next_tokens=nxt)
    want, naive = reference(prob, banded), reference(prob, banded, rounding("fp32"))
    assert_close("loss", np.array([loss]), np.array([want[0]]), np.array([naive[0]]), "fp32")
    for name, g, r, nv in zip(("d_query_index", "d_key_index", "d_weights"), got, want[1:4], naive[1:4]):
        assert_close(name, g, r, nv, "fp32")
