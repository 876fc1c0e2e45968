"""flash_attention_score and its gradient against the float64 reference (ms_ops.reference.attention),
in every supported layout, GQA, causal and band masks, several head dims, three dtypes, GRAPH (through
a Cell) and PYNATIVE mode; dynamic S, determinism, and the errors for what this slice does not support."""
import mindspore as ms
import numpy as np
import pytest

import ms_ops
from ms_ops.reference.attention import flash_attention, flash_attention_grad, visible_offsets
from tests.utils import Call, VjpLoss, assert_close, mode_mask, representable, rounding, to_ms, to_np, with_mode_mask


def to_layout(x, layout):
    """[B, N, S, D] -> the layout's shape."""
    b, n, s, d = x.shape
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(0, 2, 1, 3)
    if layout == "BSH":
        return x.transpose(0, 2, 1, 3).reshape(b, s, n * d)
    return x.transpose(2, 0, 1, 3).reshape(s, b, n * d)  # SBH


def from_layout(x, layout, n):
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.transpose(0, 2, 1, 3)
    if layout == "BSH":
        b, s, h = x.shape
        return x.reshape(b, s, n, h // n).transpose(0, 2, 1, 3)
    s, b, h = x.shape
    return x.reshape(s, b, n, h // n).transpose(1, 2, 0, 3)


def run(q, k, v, dout, n1, layout, dtype, mode, **kwargs):
    """(out, dq, dk, dv) as float64 [B, N, S, D] arrays."""
    n2 = k.shape[1]
    args = [to_ms(to_layout(a, layout), dtype) for a in (q, k, v)]
    w = ms.Tensor(to_layout(dout, layout).astype(np.float32))
    attention = Call(ms_ops.flash_attention_score, head_num=n1, input_layout=layout,
                     **with_mode_mask(kwargs, q.shape[2], k.shape[2]))
    if mode == "pynative":
        out = attention(*args)
        grads = ms.grad(lambda a, b, c: VjpLoss(attention)(a, b, c, w), grad_position=(0, 1, 2))(*args)
    else:
        out = attention(*args)
        grads = ms.grad(VjpLoss(attention), grad_position=(0, 1, 2))(*args, w)
    return (from_layout(to_np(out), layout, n1),) + tuple(
        from_layout(to_np(g), layout, n) for g, n in zip(grads, (n1, n2, n2)))


def check(b, n1, n2, s1, s2, d, layout, dtype, mode, scale=0.125, pre=2147483647, nxt=2147483647, sparse=0):
    q = representable((b, n1, s1, d), dtype)
    k = representable((b, n2, s2, d), dtype)
    v = representable((b, n2, s2, d), dtype)
    dout = representable((b, n1, s1, d), "fp32")
    # The gradient seen by the kernel is dout in the output dtype (the Loss casts the output up).
    got = run(q, k, v, dout, n1, layout, dtype, mode, scalar_value=scale, pre_tokens=pre, next_tokens=nxt,
              sparse_mode=sparse)
    low, high = visible_offsets(s1, s2, pre, nxt, sparse)
    rnd = rounding(dtype)
    dout_t = rnd(dout)
    ref = (flash_attention(q, k, v, scale, low, high),) + flash_attention_grad(q, k, v, dout_t, scale, low, high)
    naive = (flash_attention(q, k, v, scale, low, high, rnd),) + flash_attention_grad(q, k, v, dout_t, scale, low,
                                                                                      high, rnd)
    for name, g, r, nv in zip(("attention_out", "dq", "dk", "dv"), got, ref, naive):
        assert_close(name, g, r, nv, dtype)
    return got, (low, high)


@pytest.mark.parametrize("layout", ["BSH", "SBH", "BSND", "BNSD"])
def test_layouts_gqa(mode, layout):
    check(2, 4, 2, 33, 47, 64, layout, "fp32", mode)


@pytest.mark.parametrize("sparse,s1,s2,pre,nxt", [(2, 70, 150, 0, 0), (3, 150, 70, 0, 0), (3, 40, 90, 0, 0),
                                                  (0, 90, 75, 10, 5)])
def test_masks(mode, sparse, s1, s2, pre, nxt):
    got, (low, high) = check(1, 2, 1, s1, s2, 80, "BSH", "fp32", mode, pre=pre, nxt=nxt, sparse=sparse)
    # Rows that see no key (mode 3 with S1 > S2: the first S1 - S2 rows) output exactly 0 and get
    # no gradient.
    blind = [i for i in range(s1) if min(s2 - 1, i + high) < max(0, i + low)]
    if sparse == 3 and s1 > s2:
        assert blind == list(range(s1 - s2))
    for t in (got[0], got[1]):
        assert np.all(t[:, :, blind] == 0)


@pytest.mark.parametrize("d", [64, 80, 111, 128])
def test_head_dims(d):
    check(1, 2, 2, 37, 140, d, "BNSD", "fp32", "pynative", sparse=3)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_half_dtypes(mode, dtype):
    check(1, 4, 1, 45, 130, 128, "BSND", dtype, mode, sparse=2)


def test_half_band_bsh():
    check(2, 2, 2, 20, 30, 111, "BSH", "bf16", "pynative", pre=3, nxt=2)


def test_dynamic_seq_graph():
    ms.set_context(mode=ms.GRAPH_MODE)
    b, n, d = 1, 2, 64
    attention = Call(ms_ops.flash_attention_score, head_num=n, input_layout="BSH", scalar_value=0.2, sparse_mode=3,
                     attn_mask=mode_mask(3))
    attention.set_inputs(*(ms.Tensor(shape=[b, None, n * d], dtype=ms.float32) for _ in range(3)))
    for s1, s2 in ((17, 30), (40, 21)):
        q, k, v = (representable((b, n, s, d), "fp32") for s in (s1, s2, s2))
        out = attention(*(ms.Tensor(to_layout(a, "BSH").astype(np.float32)) for a in (q, k, v)))
        low, high = visible_offsets(s1, s2, 0, 0, 3)
        ref = flash_attention(q, k, v, 0.2, low, high)
        naive = flash_attention(q, k, v, 0.2, low, high, rounding("fp32"))
        assert_close("attention_out", from_layout(to_np(out), "BSH", n), ref, naive, "fp32")


def test_deterministic():
    q, k, v = (representable((2, 4, 150, 64), "fp32") for _ in range(3))
    dout = representable((2, 4, 150, 64), "fp32")
    first = run(q, k[:, :2], v[:, :2], dout, 4, "BNSD", "fp32", "pynative", scalar_value=0.1)
    second = run(q, k[:, :2], v[:, :2], dout, 4, "BNSD", "fp32", "pynative", scalar_value=0.1)
    for a, b in zip(first, second):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("kwargs", [dict(sparse_mode=2), dict(sparse_mode=3), dict(sparse_mode=4, pre_tokens=1),
                                    dict(pre_tokens=-2147483649, next_tokens=65536), dict(pre_tokens=2, next_tokens=-1),
                                    dict(sparse_mode=5, prefix=[3])])
def test_no_mask_is_full_attention(mode, kwargs):
    # As CANN (and its test cases with such arguments): without attn_mask, sparse_mode,
    # pre/next_tokens and prefix take no effect; every key is seen, in the output and gradients.
    q, k, v, dout = (representable((1, 2, s, 16), "fp32") for s in (12, 20, 20, 12))
    got = run(q, k, v, dout, 2, "BNSD", "fp32", mode, scalar_value=0.3, attn_mask=None, **kwargs)
    full = run(q, k, v, dout, 2, "BNSD", "fp32", mode, scalar_value=0.3)
    for a, b in zip(got, full):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("sparse,pre,nxt", [(0, -5, -5), (0, -200, 50), (0, 50, -200)])
def test_empty_band(mode, sparse, pre, nxt):
    # Bands MindSpore's docstring calls not allowed, which CANN's own test cases run: the rows
    # without a key output 0 and get no gradient.
    got, _ = check(1, 2, 2, 6, 8, 32, "BNSD", "fp32", mode, pre=pre, nxt=nxt, sparse=sparse)
    assert all(np.all(g == 0) for g in got)


def _qkv(shape_q=(1, 8, 64), shape_k=(1, 8, 64), dtype=ms.float32):
    return (ms.Tensor(np.ones(shape_q), dtype), ms.Tensor(np.ones(shape_k), dtype), ms.Tensor(np.ones(shape_k), dtype))


@pytest.mark.parametrize("arg,value", [("padding_mask", "tensor"), ("inner_precise", 3)])
def test_unsupported_arguments(arg, value):
    q, k, v = _qkv()
    if value == "tensor":
        value = ms.Tensor(np.zeros((1, 1, 8, 8)), ms.uint8)
    with pytest.raises(ValueError, match=rf"flash_attention_score: '{arg}' .*not supported yet in ms_ops"):
        ms_ops.flash_attention_score(q, k, v, 2, **{arg: value})


@pytest.mark.parametrize("shapes,kwargs,error,match", [
    (((1, 8, 64), (1, 8, 64)), {"head_num": 3}, ValueError, "not a multiple of head_num"),
    (((1, 8, 4, 16), (1, 8, 4, 16)), {"head_num": 2, "input_layout": "BSND"}, ValueError, "'head_num' is 2"),
    (((1, 8, 4, 16), (1, 8, 3, 16)), {"head_num": 4, "input_layout": "BSND"}, ValueError, "must divide"),
    (((1, 8, 4, 16), (1, 8, 4, 32)), {"head_num": 4, "input_layout": "BSND"}, ValueError, "head dim"),
    (((1, 8, 64), (2, 8, 64)), {"head_num": 2}, ValueError, "batch"),
    (((1, 8, 64), (1, 8, 64)), {"head_num": 2, "input_layout": "BNSD"}, ValueError, "must be 4-D"),
    (((1, 8, 64), (1, 8, 64)), {"head_num": 2, "input_layout": "XYZ"}, ValueError, "'input_layout'"),
    (((1, 8, 64), (1, 8, 64)), {"head_num": 2, "sparse_mode": 9}, ValueError, "'sparse_mode' must be in 0..8"),
])
def test_bad_shapes(shapes, kwargs, error, match):
    q, k, v = _qkv(*shapes)
    with pytest.raises(error, match=rf"flash_attention_score: .*{match}"):
        ms_ops.flash_attention_score(q, k, v, **kwargs)


def test_bad_dtypes():
    q, k, v = _qkv()
    with pytest.raises(TypeError, match="flash_attention_score: 'key' must have the dtype of 'query'"):
        ms_ops.flash_attention_score(q, k.astype(ms.float16), v, 2)
    with pytest.raises(TypeError, match="flash_attention_score: 'query' must have dtype"):
        ms_ops.flash_attention_score(*(t.astype(ms.int32) for t in (q, k, v)), 2)


def test_return_softmax_lse(mode):
    """return_softmax_lse=True adds the kernel's row statistics, 8 copies per row in CANN's
    [B, N1, S1, 8]: the largest scaled logit among the visible keys and the sum of exp(logit -
    max) over them; GQA, causal."""
    q, k, v = (representable(shape, "fp32") for shape in ((1, 4, 37, 32), (1, 2, 37, 32), (1, 2, 37, 32)))
    call = Call(ms_ops.flash_attention_score, head_num=4, input_layout="BNSD", scalar_value=0.3, sparse_mode=2,
                attn_mask=mode_mask(2), return_softmax_lse=True)
    out, row_max, row_sum = call(*(ms.Tensor(a.astype(np.float32)) for a in (q, k, v)))
    logits = 0.3 * np.einsum("bnid,bnjd->bnij", q, np.repeat(k, 2, 1))
    logits = np.where(np.tril(np.ones((37, 37), bool)), logits, -np.inf)
    ref_max = logits.max(-1)
    ref_sum = np.exp(logits - ref_max[..., None]).sum(-1)
    assert row_max.shape == row_sum.shape == (1, 4, 37, 8)
    np.testing.assert_allclose(to_np(row_max), np.repeat(ref_max[..., None], 8, -1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(to_np(row_sum), np.repeat(ref_sum[..., None], 8, -1), rtol=1e-5)
    low, high = visible_offsets(37, 37, 0, 0, 2)
    np.testing.assert_allclose(to_np(out), flash_attention(q, np.repeat(k, 2, 1), np.repeat(v, 2, 1), 0.3, low, high),
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError, match="flash_attention_score: 'return_softmax_lse' must be a bool"):
        ms_ops.flash_attention_score(*(ms.Tensor(a.astype(np.float32)) for a in (q, k, v)), 4,
                                     input_layout="BNSD", return_softmax_lse=1)
