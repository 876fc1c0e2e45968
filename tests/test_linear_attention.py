"""linear_attention and its gradient against the float64 reference (ms_ops.reference.linear_attention):
both layouts, causal and not, awkward sizes (S not a multiple of the 64-row chunk, D = 1, D = 64,
D = 80, Dv != D), three dtypes, GRAPH (through a Cell) and PYNATIVE mode with ms.grad; dynamic S,
determinism, the LinearAttention Cell, and the errors."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

import ms_ops
from ms_ops.reference.linear_attention import linear_attention, linear_attention_grad
from tests.utils import Call, VjpLoss, assert_close, representable, rounding, to_ms, to_np


def to_layout(x, layout):
    """[B, N, S, D] <-> BSND (its own inverse); BNSD unchanged."""
    return x if layout == "BNSD" else x.transpose(0, 2, 1, 3)






def run(q, k, v, dout, layout, dtype, mode, **kwargs):
    """(out, dq, dk, dv) as float64 BNSD arrays."""
    args = [to_ms(to_layout(a, layout), dtype) for a in (q, k, v)]
    w = ms.Tensor(to_layout(dout, layout).astype(np.float32))
    attention = Call(ms_ops.linear_attention, input_layout=layout, **kwargs)
    out = attention(*args)
    if mode == "pynative":
        grads = ms.grad(lambda a, b, c: VjpLoss(attention)(a, b, c, w), grad_position=(0, 1, 2))(*args)
    else:
        grads = ms.grad(VjpLoss(attention), grad_position=(0, 1, 2))(*args, w)
    return tuple(to_layout(to_np(t), layout) for t in (out, *grads))


def naive_worst(ref, *candidates):
    """Per output, the naive result farther from the reference (see ms_ops.reference.linear_attention)."""
    return tuple(max(forms, key=lambda f, r=r: np.max(np.abs(f - r), initial=0.0))
                 for r, *forms in zip(ref, *candidates))


def check(b, n, s, d, dv, layout, dtype, mode, causal, scale=1.0):
    q, k = (representable((b, n, s, d), dtype, scale) for _ in range(2))
    v = representable((b, n, s, dv), dtype)
    dout = representable((b, n, s, dv), "fp32")
    got = run(q, k, v, dout, layout, dtype, mode, causal=causal)
    rnd = rounding(dtype)
    # The gradient the kernel sees is dout in the output dtype (the Loss casts the output up).
    dout_t = rnd(dout)
    ref = (linear_attention(q, k, v, causal),) + linear_attention_grad(q, k, v, dout_t, causal)
    naive = naive_worst(ref, *((linear_attention(q, k, v, causal, rnd=rnd, scores=scores),)
                               + linear_attention_grad(q, k, v, dout_t, causal, rnd=rnd, scores=scores)
                               for scores in ((False, True) if not causal else (True,))))
    for name, g, r, nv in zip(("attention_out", "dq", "dk", "dv"), got, ref, naive):
        assert_close(name, g, r, nv, dtype)
    return got


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("layout", ["BNSD", "BSND"])
def test_layouts(mode, layout, causal):
    check(2, 3, 70, 32, 24, layout, "fp32", mode, causal)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("b,n,s,d,dv", [(1, 2, 65, 1, 3), (1, 1, 130, 64, 64), (2, 1, 129, 80, 48),
                                        (1, 1, 1, 5, 7), (1, 2, 200, 16, 1)])
def test_sizes(b, n, s, d, dv, causal):
    check(b, n, s, d, dv, "BNSD", "fp32", "pynative", causal)


@pytest.mark.full
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("b,n,s,d,dv", [(2, 3, 1025, 111, 59), (1, 2, 97, 59, 111), (3, 1, 1, 128, 128)])
def test_sizes_full(b, n, s, d, dv, dtype, causal):
    check(b, n, s, d, dv, "BSND", dtype, "pynative", causal, scale=0.5)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_half_dtypes(mode, dtype, causal):
    check(1, 2, 100, 64, 40, "BSND", dtype, mode, causal, scale=0.5)


def test_causal_prefix():
    """Causal rows see only the past: changing the last key/value rows leaves earlier outputs as
    they were, bit for bit."""
    q, k, v = (representable((1, 2, 150, 16), "fp32") for _ in range(3))
    attention = Call(ms_ops.linear_attention, causal=True)
    first = to_np(attention(*(to_ms(a, "fp32") for a in (q, k, v))))
    k[:, :, 140:], v[:, :, 140:] = 5.0, -3.0
    second = to_np(attention(*(to_ms(a, "fp32") for a in (q, k, v))))
    assert np.array_equal(first[:, :, :140], second[:, :, :140])
    assert not np.allclose(first[:, :, 140:], second[:, :, 140:])


@pytest.mark.parametrize("causal", [False, True])
def test_dynamic_seq_graph(causal):
    ms.set_context(mode=ms.GRAPH_MODE)
    b, n, d = 1, 2, 16
    attention = Call(ms_ops.linear_attention, causal=causal, input_layout="BSND")
    attention.set_inputs(*(ms.Tensor(shape=[b, None, n, d], dtype=ms.float32) for _ in range(3)))
    for s in (17, 90):
        q, k, v = (representable((b, n, s, d), "fp32") for _ in range(3))
        out = attention(*(ms.Tensor(to_layout(a, "BSND").astype(np.float32)) for a in (q, k, v)))
        ref = linear_attention(q, k, v, causal)
        naive = linear_attention(q, k, v, causal, rnd=rounding("fp32"))
        assert_close("attention_out", to_layout(to_np(out), "BSND"), ref, naive, "fp32")


def test_deterministic():
    q, k, v, dout = (representable((2, 3, 150, 32), "fp32") for _ in range(4))
    first = run(q, k, v, dout, "BNSD", "fp32", "pynative", causal=True)
    second = run(q, k, v, dout, "BNSD", "fp32", "pynative", causal=True)
    for a, b in zip(first, second):
        assert np.array_equal(a, b)


def _dense(cell, x):
    w = cell.weight.asnumpy().astype(np.float64)
    return x @ w.T + cell.bias.asnumpy().astype(np.float64)


class SumOf(nn.Cell):
    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def construct(self, x):
        return self.layer(x).sum()


def cell_reference(layer, x, causal):
    """float64 (out, d sum(out) / dx) of a LinearAttention layer, from its weights."""
    b, s, h = x.shape
    n = layer.num_heads

    def heads(t):
        return t.reshape(b, s, n, h // n).transpose(0, 2, 1, 3)

    def flat(t):
        return t.transpose(0, 2, 1, 3).reshape(b, s, h)

    projs = (layer.q_proj, layer.k_proj, layer.v_proj)
    q, k, v = (heads(_dense(p, x)) for p in projs)
    out = _dense(layer.o_proj, flat(linear_attention(q, k, v, causal)))
    # d sum(out) / d attention = the column sums of the output projection, at every position.
    w_o = layer.o_proj.weight.asnumpy().astype(np.float64)
    dout = heads(np.broadcast_to(w_o.sum(axis=0), (b, s, h)))
    grads = linear_attention_grad(q, k, v, dout, causal)
    dx = sum(flat(g) @ p.weight.asnumpy().astype(np.float64) for g, p in zip(grads, projs))
    return out, dx


def assert_cell(layer, x, out, dx, causal):
    ref, ref_dx = cell_reference(layer, x, causal)
    for name, got, want in (("out", to_np(out), ref), ("dx", to_np(dx), ref_dx)):
        assert np.max(np.abs(got - want)) < 1e-4 * max(1.0, np.max(np.abs(want))), name


def test_cell(mode):
    layer = ms_ops.nn.LinearAttention(32, 4, causal=True)
    assert "num_heads=4" in repr(layer) and "causal=True" in repr(layer)
    x = representable((2, 37, 32), "fp32")
    xt = ms.Tensor(x.astype(np.float32))
    assert_cell(layer, x, layer(xt), ms.grad(SumOf(layer), grad_position=0)(xt), True)


def test_cell_dynamic_seq_graph():
    ms.set_context(mode=ms.GRAPH_MODE)
    layer = ms_ops.nn.LinearAttention(32, 2)
    loss = SumOf(layer)
    for cell in (layer, loss):
        cell.set_inputs(ms.Tensor(shape=[2, None, 32], dtype=ms.float32))
    grad = ms.grad(loss, grad_position=0)
    for s in (17, 70):
        x = representable((2, s, 32), "fp32")
        xt = ms.Tensor(x.astype(np.float32))
        assert_cell(layer, x, layer(xt), grad(xt), False)


def _qkv(shape_q=(1, 2, 8, 4), shape_k=None, shape_v=None, dtype=ms.float32):
    shape_k = shape_k or shape_q
    shape_v = shape_v or shape_q
    return tuple(ms.Tensor(np.ones(s), dtype) for s in (shape_q, shape_k, shape_v))


@pytest.mark.parametrize("shapes,kwargs,error,match", [
    (((1, 2, 8, 4), (1, 2, 8, 5)), {}, ValueError, "'key' must have query's shape"),
    (((1, 2, 8, 4), None, (1, 2, 9, 4)), {}, ValueError, "'value' must match"),
    (((2, 8, 4),), {}, ValueError, "'query' must be 4-D"),
    (((1, 2, 8, 600),), {}, ValueError, "'query' head dim must be 1..512"),
    (((1, 2, 8, 4),), {"input_layout": "BSH"}, ValueError, "'input_layout'"),
    (((1, 2, 8, 4),), {"eps": 0.0}, ValueError, "'eps' must be > 0"),
    (((1, 2, 8, 4),), {"eps": "x"}, TypeError, "'eps' must be a float"),
    (((1, 2, 8, 4),), {"causal": 1}, TypeError, "'causal' must be a bool"),
])
def test_bad_arguments(shapes, kwargs, error, match):
    q, k, v = _qkv(*shapes)
    with pytest.raises(error, match=rf"linear_attention: {match}"):
        ms_ops.linear_attention(q, k, v, **kwargs)


def test_bad_dtypes():
    q, k, v = _qkv()
    with pytest.raises(TypeError, match="linear_attention: 'key' must have the dtype of 'query'"):
        ms_ops.linear_attention(q, k.astype(ms.float16), v)
    with pytest.raises(TypeError, match="linear_attention: 'query' must have dtype"):
        ms_ops.linear_attention(*(t.astype(ms.int32) for t in (q, k, v)))
    with pytest.raises(TypeError, match="linear_attention: 'value' must be a Tensor"):
        ms_ops.linear_attention(q, k, np.ones((1, 2, 8, 4)))


def test_bad_cell_arguments():
    with pytest.raises(ValueError, match="LinearAttention: 'num_heads'"):
        ms_ops.nn.LinearAttention(30, 4)


def test_kernel_rejects_dynamic_mismatch():
    """Shapes left open by set_inputs are checked by the kernel entry, which names the argument."""
    ms.set_context(mode=ms.GRAPH_MODE)
    attention = Call(ms_ops.linear_attention)
    attention.set_inputs(*(ms.Tensor(shape=[1, 2, None, 4], dtype=ms.float32) for _ in range(3)))
    q = ms.Tensor(np.ones((1, 2, 8, 4), np.float32))
    k = ms.Tensor(np.ones((1, 2, 9, 4), np.float32))
    with pytest.raises((RuntimeError, ValueError), match="linear_attention: 'key': must have query's shape"):
        attention(q, k, q).asnumpy()


@pytest.mark.parametrize("shape", [(1, 2, 0, 4), (0, 2, 5, 4)])
def test_empty(shape):
    q = ms.Tensor(np.ones(shape, np.float32))
    out = ms_ops.linear_attention(q, q, q, causal=True)
    grads = ms.grad(lambda a, b, c: ms_ops.linear_attention(a, b, c).sum(), grad_position=(0, 1, 2))(q, q, q)
    assert out.shape == shape and all(g.shape == shape for g in grads)
