"""ms_ops.nn.LightningIndexer and ms_ops.nn.DSAttention: outputs equal the op calls they compose
(projections written out here independently), sparse and dense warm-up modes in GRAPH and
PYNATIVE, where the gradients go (output -> main projections, indexer loss -> indexer only),
dynamic sequence length in GRAPH mode, training lowers the indexer loss, no rope, zero tokens,
argument errors."""
import math

import mindspore as ms
import numpy as np
import pytest
from mindspore import nn, ops

import ms_ops
from tests.utils import mode_mask

H, N, D, DR, DV, NI, DI, DIR, K = 32, 2, 16, 8, 16, 2, 16, 4, 8


def rope(x, positions):
    """Rotary embedding over the two halves of x's last dim, written with numpy tables."""
    dim = x.shape[-1]
    angles = np.outer(np.arange(positions), 10000.0 ** (-np.arange(0, dim, 2) / dim))
    angles = np.concatenate([angles, angles], axis=-1)[:, None, :]
    cos, sin = ms.Tensor(np.cos(angles), ms.float32), ms.Tensor(np.sin(angles), ms.float32)
    half = dim // 2
    return x * cos + ops.concat((-x[..., half:], x[..., :half]), axis=-1) * sin


def dense(x, layer):
    return ops.matmul(x, layer.weight.value().T)


def composed_indexer(indexer, x):
    b, s, _ = x.shape
    q = dense(x, indexer.wq).reshape(b, s, NI, DI)
    k = dense(x, indexer.wk).reshape(b, s, 1, DI)
    q = ops.concat((rope(q[..., :DIR], s), q[..., DIR:]), axis=-1)
    k = ops.concat((rope(k[..., :DIR], s), k[..., DIR:]), axis=-1)
    w = dense(x, indexer.weights_proj) / math.sqrt(NI * DI)
    return q, k, w


def composed(cell, x, dense_warmup, dtype=ms.float32):
    """(output, indexer_loss) of DSAttention from the ms_ops op calls, the kernels in ``dtype``."""
    b, s, _ = x.shape
    q = dense(x, cell.wq).reshape(b, s, N, D + DR)
    k, kr, v = ops.split(dense(x, cell.wkv).reshape(b, s, 1, D + DR + DV), (D, DR, DV), axis=-1)
    q, qr, kr = q[..., :D], rope(q[..., D:], s), rope(kr, s)
    qi, ki, w = composed_indexer(cell.indexer, x)
    q, k, v, qr, kr, qi, ki, w = (t.astype(dtype) for t in (q, k, v, qr, kr, qi, ki, w))
    scale = 1.0 / math.sqrt(D + DR)
    if dense_warmup:
        out, mx, sm = ms_ops.flash_attention_score(ops.concat((q, qr), -1), ops.concat((k, kr), -1), v, N,
                                                   scalar_value=scale, input_layout="BSND", sparse_mode=3,
                                                   attn_mask=mode_mask(3), return_softmax_lse=True)
        mx, sm = (t[..., 0].transpose(0, 2, 1).reshape(b, 1, s, N) for t in (mx, sm))
        loss = ms_ops.dense_lightning_indexer_kl_loss(ops.concat((q, qr), -1), ops.concat((k, kr), -1), qi, ki, w,
                                                      mx, sm, scale)
    else:
        idx, _ = ms_ops.lightning_indexer(qi, ki, w, sparse_count=K)
        out, mx, sm = ms_ops.sparse_flash_attention(q, k, v, idx, scale, query_rope=qr, key_rope=kr)
        loss = ms_ops.sparse_lightning_indexer_kl_loss(q, k, qi, ki, w, idx, mx, sm, scale, query_rope=qr,
                                                       key_rope=kr)
    return dense(out.astype(ms.float32).reshape(b, s, N * DV), cell.wo), loss


def make(dense_warmup=False, dtype=ms.float32):
    return ms_ops.nn.DSAttention(H, N, D, rope_head_dim=DR, v_head_dim=DV, index_heads=NI, index_head_dim=DI,
                                 index_rope_head_dim=DIR, sparse_count=K, dense_warmup=dense_warmup, max_seq_len=64,
                                 dtype=dtype)


def hidden(b, s):
    return ms.Tensor(np.random.randn(b, s, H).astype(np.float32))


class Part(nn.Cell):
    """DSAttention's output (summed against a fixed weight), its indexer loss, or "both" added."""

    def __init__(self, cell, which):
        super().__init__()
        self.cell, self.which = cell, which

    def construct(self, x, w):
        out, loss = self.cell(x)
        if self.which == "output":
            return (out * w).sum()
        if self.which == "loss":
            return loss.sum()
        return (out * w).sum() + loss.sum()


def test_indexer_matches_op(mode):
    indexer = ms_ops.nn.LightningIndexer(H, NI, DI, K, rope_head_dim=DIR, max_seq_len=64)
    x = hidden(2, 21)
    idx, val = indexer(x)
    ref_idx, ref_val = ms_ops.lightning_indexer(*composed_indexer(indexer, ops.stop_gradient(x)), sparse_count=K)
    assert idx.shape == (2, 21, 1, K)
    np.testing.assert_array_equal(idx.asnumpy(), ref_idx.asnumpy())
    np.testing.assert_allclose(val.asnumpy(), ref_val.asnumpy(), rtol=1e-5, atol=1e-6)
    assert (idx.asnumpy()[:, :K - 1] == -1).any() and (idx.asnumpy()[:, K:] >= 0).all()


@pytest.mark.parametrize("dense_warmup", [False, True], ids=["sparse", "dense"])
def test_matches_composed_ops(mode, dense_warmup):
    cell = make(dense_warmup)
    x = hidden(2, 19)
    out, loss = cell(x)
    ref_out, ref_loss = composed(cell, x, dense_warmup)
    assert out.shape == (2, 19, H) and loss.shape == (1,)
    np.testing.assert_allclose(out.asnumpy(), ref_out.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss.asnumpy(), ref_loss.asnumpy(), rtol=1e-5)
    assert loss.asnumpy()[0] > 0


@pytest.mark.parametrize("dtype", [ms.float16, ms.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("dense_warmup", [False, True], ids=["sparse", "dense"])
def test_half_dtypes(dense_warmup, dtype):
    """dtype runs the kernels in fp16/bf16 (the projections stay float32): the same op calls."""
    cell = make(dense_warmup, dtype)
    x = hidden(1, 15)
    out, loss = cell(x)
    ref_out, ref_loss = composed(cell, x, dense_warmup, dtype)
    assert out.dtype == ms.float32 and loss.dtype == ms.float32
    np.testing.assert_allclose(out.asnumpy(), ref_out.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss.asnumpy(), ref_loss.asnumpy(), rtol=1e-5)


@pytest.mark.parametrize("dense_warmup", [False, True], ids=["sparse", "dense"])
def test_gradients_go_where_they_should(mode, dense_warmup):
    """The output trains the main projections only, the indexer loss the indexer only; neither
    the loss nor the selection sends a gradient back to x through the indexer."""
    cell = make(dense_warmup)
    x, w = hidden(1, 17), hidden(1, 17)
    main = [p for p in cell.trainable_params() if not p.name.startswith("indexer.")]
    index = [p for p in cell.trainable_params() if p.name.startswith("indexer.")]
    assert len(main) == 3 and len(index) == 3
    params = main + index
    for which, nonzero in (("output", main), ("loss", index)):
        dx, grads = ms.grad(Part(cell, which), grad_position=0, weights=params)(x, w)
        for p, g in zip(params, grads):
            norm = float(np.abs(g.asnumpy()).max())
            if any(p is q for q in nonzero):
                assert norm > 0, f"{which}: {p.name} got no gradient"
            else:
                assert norm == 0, f"{which}: {p.name} got a gradient ({norm})"
        assert (float(np.abs(dx.asnumpy()).max()) > 0) == (which == "output")


@pytest.mark.parametrize("dense_warmup, with_grad", [(False, True), (True, False)], ids=["sparse", "dense"])
def test_dynamic_seq_graph(dense_warmup, with_grad):
    """One graph with S left open serves two lengths, equal to the static PYNATIVE run: the
    forward, and in sparse mode also the parameters' gradients of output and loss together (one
    mode only, to keep the suite's time)."""
    cell = make(dense_warmup)
    part = Part(cell, "both")
    data = [(hidden(2, s), hidden(2, s)) for s in (13, 30)]

    def run(x, w):
        grads = ms.grad(part, grad_position=None, weights=cell.trainable_params())(x, w) if with_grad else ()
        return [t.asnumpy() for t in list(cell(x)) + list(grads)]

    expected = [run(x, w) for x, w in data]
    ms.set_context(mode=ms.GRAPH_MODE)
    dyn = ms.Tensor(shape=[2, None, H], dtype=ms.float32)
    cell.set_inputs(dyn)
    part.set_inputs(dyn, dyn)
    for (x, w), want in zip(data, expected):
        for got, ref in zip(run(x, w), want):
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


class TinyModel(nn.Cell):
    def __init__(self):
        super().__init__()
        self.attention = make()
        self.head = nn.Dense(H, H)

    def construct(self, x, target):
        out, indexer_loss = self.attention(x)
        return ((self.head(out) - target) ** 2).mean() + indexer_loss.sum() / x.shape[1], indexer_loss


def test_trains_graph():
    """200 GRAPH-mode steps of a tiny model (DSAttention + a head regressing a fixed linear map of
    x, plus the indexer loss): the indexer's KL loss falls. The main projections learn slowly
    (lr 1e-4; the indexer 3e-3), so the target the indexer chases moves less than it learns."""
    ms.set_context(mode=ms.GRAPH_MODE)
    model = TinyModel()
    index = [p for p in model.trainable_params() if ".indexer." in p.name]
    main = [p for p in model.trainable_params() if ".indexer." not in p.name]
    optimizer = nn.Adam([{"params": index, "lr": 3e-3}, {"params": main, "lr": 1e-4}], learning_rate=3e-3)
    grad = ms.value_and_grad(model, None, optimizer.parameters, has_aux=True)

    def step(x, target):
        (_, indexer_loss), grads = grad(x, target)
        optimizer(grads)
        return indexer_loss

    step = ms.jit(step)
    teacher = ms.Tensor(np.random.randn(H, H).astype(np.float32) / math.sqrt(H))
    xs = [hidden(2, 24) for _ in range(4)]
    targets = [ops.matmul(x, teacher) for x in xs]
    losses = [float(step(xs[i % 4], targets[i % 4]).asnumpy()[0]) for i in range(200)]
    first, last = np.mean(losses[:20]), np.mean(losses[-20:])
    assert len(index) == 3 and last < 0.6 * first, f"indexer loss {first:.4f} -> {last:.4f}"


@pytest.mark.parametrize("kwargs, error, match", [
    ({"num_heads": 0}, ValueError, "DSAttention: 'num_heads'"),
    ({"rope_head_dim": 3}, ValueError, "DSAttention: 'rope_head_dim' must be even"),
    ({"v_head_dim": 64}, ValueError, "DSAttention: 'v_head_dim'"),
    ({"dense_warmup": 1}, TypeError, "DSAttention: 'dense_warmup'"),
    ({"dtype": ms.int32}, TypeError, "DSAttention: 'dtype'"),
    ({"sparse_count": 4096}, ValueError, "LightningIndexer: 'sparse_count'"),
    ({"index_rope_head_dim": 64}, ValueError, "LightningIndexer: 'rope_head_dim'"),
])
def test_argument_errors(kwargs, error, match):
    args = {"hidden_size": H, "num_heads": N, "head_dim": D, "rope_head_dim": DR, **kwargs}
    with pytest.raises(error, match=match):
        ms_ops.nn.DSAttention(**args)


def test_input_errors_and_repr():
    cell = make()
    with pytest.raises(ValueError, match="DSAttention: 'x' must be 3-D"):
        cell(ms.Tensor(np.zeros((4, H), np.float32)))
    with pytest.raises(ValueError, match="DSAttention: 'x' dimension 2 must equal hidden_size"):
        cell(ms.Tensor(np.zeros((1, 4, H + 1), np.float32)))
    assert "sparse_count=8" in repr(cell.indexer) and "dense_warmup=False" in repr(cell)


@pytest.mark.parametrize("dense_warmup", [False, True], ids=["sparse", "dense"])
def test_zero_tokens(dense_warmup):
    out, loss = make(dense_warmup)(ms.Tensor(np.zeros((1, 0, H), np.float32)))
    assert out.shape == (1, 0, H) and loss.asnumpy().tolist() == [0.0]


def test_without_rope():
    """rope_head_dim 0 (both parts): no rope tensors reach the kernels; the loss is the KL over
    the indexer's selection of the plain scores."""
    cell = ms_ops.nn.DSAttention(H, N, D, index_heads=NI, index_head_dim=DI, sparse_count=K, max_seq_len=64)
    x = hidden(1, 12)
    out, loss = cell(x)
    q = dense(x, cell.wq).reshape(1, 12, N, D)
    k, v = ops.split(dense(x, cell.wkv).reshape(1, 12, 1, 2 * D), D, axis=-1)
    qi = dense(x, cell.indexer.wq).reshape(1, 12, NI, DI)
    ki = dense(x, cell.indexer.wk).reshape(1, 12, 1, DI)
    w = dense(x, cell.indexer.weights_proj) / math.sqrt(NI * DI)
    idx, _ = ms_ops.lightning_indexer(qi, ki, w, sparse_count=K)
    ref, mx, sm = ms_ops.sparse_flash_attention(q, k, v, idx, 1 / math.sqrt(D))
    ref_loss = ms_ops.sparse_lightning_indexer_kl_loss(q, k, qi, ki, w, idx, mx, sm, 1 / math.sqrt(D))
    np.testing.assert_allclose(out.asnumpy(), dense(ref.reshape(1, 12, N * D), cell.wo).asnumpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(loss.asnumpy(), ref_loss.asnumpy(), rtol=1e-5)
