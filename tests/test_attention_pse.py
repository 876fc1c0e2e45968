"""flash_attention_score with real_shift (pse_type 0 and 1: full, broadcast and ALiBi-compressed
tensors; 2 and 3: slopes, the bias generated in the kernel) against the float64 reference, forward
and gradients (d real_shift for the full form), GRAPH and PYNATIVE, three dtypes; the errors."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

import ms_ops
from ms_ops.reference.attention import alibi, flash_attention_grad_pse, flash_attention_masked, visibility
from tests.test_attention import from_layout, to_layout
from tests.utils import assert_close, representable, rounding, to_ms, to_np, with_mode_mask


class Shifted(nn.Cell):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def construct(self, q, k, v, pse):
        return ms_ops.flash_attention_score(q, k, v, real_shift=pse, **self.kwargs)


class Loss(nn.Cell):
    def __init__(self, attention):
        super().__init__()
        self.attention = attention

    def construct(self, q, k, v, pse, w):
        return (self.attention(q, k, v, pse).astype(ms.float32) * w).sum()


def run(q, k, v, pse, dout, n1, layout, dtype, mode, pse_dtype, **kwargs):
    """(out, dq, dk, dv, d real_shift) as float64, [B, N, S, D] for the first four."""
    attention = Shifted(head_num=n1, input_layout=layout, **with_mode_mask(kwargs, q.shape[2], k.shape[2]))
    args = [to_ms(to_layout(a, layout), dtype) for a in (q, k, v)] + [to_ms(pse, pse_dtype)]
    w = ms.Tensor(to_layout(dout, layout).astype(np.float32))
    out = attention(*args)
    if mode == "pynative":
        grads = ms.grad(lambda a, b, c, d: Loss(attention)(a, b, c, d, w), grad_position=(0, 1, 2, 3))(*args)
    else:
        grads = ms.grad(Loss(attention), grad_position=(0, 1, 2, 3))(*args, w)
    n2 = k.shape[1]
    return ((from_layout(to_np(out), layout, n1),) + tuple(from_layout(to_np(g), layout, n)
                                                           for g, n in zip(grads[:3], (n1, n2, n2)))
            + (to_np(grads[3]),))


def check(b, n1, n2, s1, s2, d, pse_shape, pse_type, dtype, mode, layout="BNSD", sparse=0, scale=0.2,
          nxt=2147483647):
    q = representable((b, n1, s1, d), dtype)
    k = representable((b, n2, s2, d), dtype)
    v = representable((b, n2, s2, d), dtype)
    dout = representable((b, n1, s1, d), "fp32")
    if pse_type >= 2:
        pse = np.linspace(0.05, 0.6, int(np.prod(pse_shape))).reshape(pse_shape)
        bias, pse_dtype = alibi(pse, s1, sqrt=pse_type == 3), "fp32"
    else:
        pse = representable(pse_shape, dtype, scale=2.0)
        bias, pse_dtype = pse, dtype
    got = run(q, k, v, pse, dout, n1, layout, dtype, mode, pse_dtype, scalar_value=scale, sparse_mode=sparse,
              next_tokens=nxt, pse_type=pse_type)
    vis = visibility(s1, s2, sparse, next_tokens=nxt)
    rnd, dout_t = rounding(dtype), rounding(dtype)(dout)
    first = pse_type == 1
    ref = (flash_attention_masked(q, k, v, scale, vis, pse=bias, pse_first=first),) + flash_attention_grad_pse(
        q, k, v, dout_t, scale, vis, pse=bias, pse_first=first)
    naive = (flash_attention_masked(q, k, v, scale, vis, rnd, bias, first),) + flash_attention_grad_pse(
        q, k, v, dout_t, scale, vis, rnd, bias, first)
    names = ("attention_out", "dq", "dk", "dv", "d real_shift")
    full = pse_type <= 1 and tuple(pse_shape) == (b, n1, s1, s2)
    for name, g, r, nv in zip(names, got, ref, naive):
        if name == "d real_shift":
            if full:
                assert_close(name, g, r, nv, dtype)
            else:
                # Broadcast, compressed and slope forms are not differentiated.
                assert g.shape == tuple(pse_shape) and np.all(g == 0)
        else:
            assert_close(name, g, r, nv, dtype)
    return got


@pytest.mark.parametrize("pse_type", [0, 1])
def test_full_pse_with_gradient(mode, pse_type):
    check(2, 4, 2, 37, 150, 64, (2, 4, 37, 150), pse_type, "fp32", mode, layout="BSH", sparse=3)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_full_pse_half(mode, dtype):
    check(1, 2, 1, 70, 45, 80, (1, 2, 70, 45), 0, dtype, mode, layout="BSND", sparse=2)


@pytest.mark.parametrize("shape", [(2, 2, 1, 50), (1, 2, 33, 50)])
def test_broadcast_pse(shape):
    check(2, 2, 2, 33, 50, 48, shape, 1, "fp32", "pynative", layout="SBH")


@pytest.mark.parametrize("pse_type,shape,dtype", [(2, (4,), "fp32"), (3, (2, 4), "fp16"), (2, (2, 4), "bf16")])
def test_alibi_slopes(mode, pse_type, shape, dtype):
    check(2, 4, 4, 90, 90, 64, shape, pse_type, dtype, mode, sparse=2)


def test_alibi_compressed():
    """The [1, N1, 1024, S2] form holds the last 1024 rows of an ALiBi bias; the rows above come
    from it by the bias depending on j - i only."""
    s, n1, d, scale = 1100, 1, 16, 0.25
    q, k, v = (representable((1, n1, s, d), "fp32") for _ in range(3))
    dout = representable((1, n1, s, d), "fp32")
    bias = alibi([0.03], s)
    got = run(q, k, v, bias[:, :, -1024:], dout, n1, "BNSD", "fp32", "pynative", "fp32", scalar_value=scale,
              sparse_mode=3, pse_type=1)
    vis = visibility(s, s, 3)
    ref = (flash_attention_masked(q, k, v, scale, vis, pse=bias, pse_first=True),) + flash_attention_grad_pse(
        q, k, v, dout, scale, vis, pse=bias, pse_first=True)[:3]
    rnd = rounding("fp32")
    naive = (flash_attention_masked(q, k, v, scale, vis, rnd, bias, True),) + flash_attention_grad_pse(
        q, k, v, dout, scale, vis, rnd, bias, True)[:3]
    for name, g, r, nv in zip(("attention_out", "dq", "dk", "dv"), got, ref, naive):
        assert_close(name, g, r, nv, "fp32")
    assert np.all(got[4] == 0)


def _qkv(dtype=ms.float32):
    return tuple(ms.Tensor(np.ones((2, 8, 64)), dtype) for _ in range(3))


@pytest.mark.parametrize("kwargs,error,match", [
    ({"real_shift": ((2, 2, 8, 7), ms.float32)}, ValueError, r"'real_shift' shape \(2, 2, 8, 7\) does not fit"),
    ({"real_shift": ((2, 2, 1024, 8), ms.float32), "sparse_mode": 2}, ValueError, "'real_shift' shape"),
    ({"real_shift": ((2, 2, 8, 8), ms.float16)}, TypeError, "'real_shift' must have query's dtype"),
    ({"pse_type": 2}, ValueError, "'real_shift' is required by pse_type 2"),
    ({"pse_type": 3, "real_shift": ((3,), ms.float32)}, ValueError, r"'real_shift' \(slopes of pse_type 3\) must be"),
    ({"pse_type": 2, "real_shift": ((2,), ms.float16)}, TypeError, r"'real_shift' \(slopes .*must be float32"),
    ({"pse_type": 4}, ValueError, "'pse_type' must be 0, 1, 2 or 3"),
    ({"pse_type": 1.0}, TypeError, "'pse_type' must be an int"),
])
def test_bad_pse(kwargs, error, match):
    if "real_shift" in kwargs:
        shape, dt = kwargs["real_shift"]
        kwargs["real_shift"] = ms.Tensor(np.zeros(shape), dt)
    with pytest.raises(error, match=rf"flash_attention_score: {match}"):
        ms_ops.flash_attention_score(*_qkv(), 2, **kwargs)


def test_pse_slopes_need_equal_lengths_and_no_tnd():
    q = ms.Tensor(np.ones((1, 8, 64)), ms.float32)
    kv = ms.Tensor(np.ones((1, 9, 64)), ms.float32)
    with pytest.raises(ValueError, match="flash_attention_score: 'real_shift' slopes .* need S1 == S2"):
        ms_ops.flash_attention_score(q, kv, kv, 2, real_shift=ms.Tensor(np.ones(2), ms.float32), pse_type=2)
    t = ms.Tensor(np.ones((8, 2, 32)), ms.float32)
    with pytest.raises(ValueError, match="flash_attention_score: 'real_shift' slopes .* not supported with input_la"):
        ms_ops.flash_attention_score(t, t, t, 2, real_shift=ms.Tensor(np.ones(2), ms.float32), pse_type=2,
                                     input_layout="TND", actual_seq_qlen=[8], actual_seq_kvlen=[8])


def test_deterministic_with_pse_and_mask():
    """Bitwise-identical gradients on rerun, d real_shift included, with a mask read by the kernel."""
    q, k, v = (representable((2, 4, 140, 32), "fp32") for _ in range(3))
    dout = representable((2, 4, 140, 32), "fp32")
    pse = representable((2, 4, 140, 140), "fp32")
    mask = ms.Tensor(np.random.default_rng(5).random((140, 140)) < 0.3)

    def once():
        return run(q, k[:, :2], v[:, :2], pse, dout, 4, "BNSD", "fp32", "pynative", "fp32", scalar_value=0.1,
                   attn_mask=mask, pse_type=0)

    for a, b in zip(once(), once()):
        assert np.array_equal(a, b)
