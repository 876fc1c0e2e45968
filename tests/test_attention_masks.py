"""flash_attention_score with attn_mask tensors (bool/uint8, 1 = masked out) and every sparse_mode
of the batch layouts (0-6, with prefix for 5 and 6) against the float64 reference, forward and
gradient, GRAPH and PYNATIVE, three dtypes; fully masked rows output 0 with zero gradient; the
errors for mask shapes, dtypes and prefix."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

import ms_ops
from ms_ops.reference.attention import flash_attention_grad_masked, flash_attention_masked, visibility
from tests.test_attention import from_layout, to_layout
from tests.utils import assert_close, representable, rounding, to_ms, to_np

BIG = 2147483647


class Masked(nn.Cell):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def construct(self, q, k, v, mask):
        return ms_ops.flash_attention_score(q, k, v, attn_mask=mask, **self.kwargs)


class Loss(nn.Cell):
    def __init__(self, attention):
        super().__init__()
        self.attention = attention

    def construct(self, q, k, v, mask, w):
        return (self.attention(q, k, v, mask).astype(ms.float32) * w).sum()


def check(b, n1, n2, s1, s2, d, mask, layout, dtype, mode, sparse=0, pre=BIG, nxt=BIG, prefix=None, scale=0.15):
    """mask: numpy bool array (1 = masked out) in the shape given to the op, or None (then, as in
    CANN, sparse_mode, pre/next and prefix take no effect: the reference sees every key)."""
    q = representable((b, n1, s1, d), dtype)
    k = representable((b, n2, s2, d), dtype)
    v = representable((b, n2, s2, d), dtype)
    dout = representable((b, n1, s1, d), "fp32")
    attention = Masked(head_num=n1, input_layout=layout, scalar_value=scale, sparse_mode=sparse, pre_tokens=pre,
                       next_tokens=nxt, prefix=prefix)
    args = [to_ms(to_layout(a, layout), dtype) for a in (q, k, v)]
    m = None if mask is None else ms.Tensor(mask.astype(np.uint8 if mask.dtype == np.uint8 else bool))
    w = ms.Tensor(to_layout(dout, layout).astype(np.float32))
    out = attention(*args, m)
    if mode == "pynative":
        grads = ms.grad(lambda x, y, z: Loss(attention)(x, y, z, m, w), grad_position=(0, 1, 2))(*args)
    else:
        grads = ms.grad(Loss(attention), grad_position=(0, 1, 2))(*args, m, w)
    got = (from_layout(to_np(out), layout, n1),) + tuple(from_layout(to_np(g), layout, n)
                                                        for g, n in zip(grads, (n1, n2, n2)))
    full = None if mask is None or sparse not in (0, 1, 5) else np.broadcast_to(
        mask.astype(bool).reshape((1, 1) + mask.shape if mask.ndim == 2 else mask.shape), (b, 1 if mask.ndim == 2
                                                                                          else mask.shape[1], s1, s2))
    vis = np.stack([visibility(s1, s2, sparse, pre, nxt, 0 if prefix is None else prefix[i],
                               None if full is None else full[i]) * np.ones((1, s1, s2), bool) for i in range(b)])
    if mask is None:
        vis = np.ones((b, 1, s1, s2), bool)
    rnd, dout_t = rounding(dtype), rounding(dtype)(dout)
    ref = (flash_attention_masked(q, k, v, scale, vis),) + flash_attention_grad_masked(q, k, v, dout_t, scale, vis)
    naive = (flash_attention_masked(q, k, v, scale, vis, rnd),) + flash_attention_grad_masked(q, k, v, dout_t, scale,
                                                                                              vis, rnd)
    for name, g, r, nv in zip(("attention_out", "dq", "dk", "dv"), got, ref, naive):
        assert_close(name, g, r, nv, dtype)
    return got, vis


def random_mask(shape, rate, seed=3):
    return np.random.default_rng(seed).random(shape) < rate


@pytest.mark.parametrize("shape", ["BN", "B1", "11", "SS"])
def test_full_mask_shapes(mode, shape):
    b, n1, s1, s2 = 2, 4, 37, 150
    dims = {"BN": (b, n1, s1, s2), "B1": (b, 1, s1, s2), "11": (1, 1, s1, s2), "SS": (s1, s2)}[shape]
    mask = random_mask(dims, 0.5)
    if shape == "BN":
        mask = mask.astype(np.uint8)
    # Row 5 of every head fully masked: it outputs 0 and gets no gradient.
    mask[..., 5, :] = 1
    got, _ = check(b, n1, 2, s1, s2, 64, mask, "BSH", "fp32", mode, sparse=1 if shape == "B1" else 0)
    assert np.all(got[0][:, :, 5] == 0) and np.all(got[1][:, :, 5] == 0)


def test_mask_with_band():
    mask = random_mask((1, 2, 90, 75), 0.3)
    check(1, 2, 1, 90, 75, 80, mask, "BNSD", "fp32", "pynative", sparse=0, pre=10, nxt=5)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_mask_half_dtypes(mode, dtype):
    check(1, 2, 2, 45, 130, 128, random_mask((45, 130), 0.4), "BSND", dtype, mode, sparse=1)


@pytest.mark.parametrize("sparse,s1,s2,pre,nxt", [(2, 70, 150, 0, 0), (3, 150, 70, 0, 0), (4, 60, 90, 7, 3),
                                                  (4, 90, 60, 0, 20)])
def test_compressed_modes(mode, sparse, s1, s2, pre, nxt):
    # As in CANN, the compressed mask's contents do not matter: the mode defines the keys.
    mask = np.triu(np.ones((2048, 2048), bool), 1)
    check(1, 2, 1, s1, s2, 64, mask, "SBH", "fp32", mode, sparse=sparse, pre=pre, nxt=nxt)


def test_prefix_mode5_mask(mode):
    b, s1, s2 = 2, 40, 70
    prefix = [45, 3]
    # Mode 5's mask states the same keys as the mode (right-down causal plus the prefix) but for
    # a few extra masked keys: both must apply.
    mask = np.stack([~visibility(s1, s2, 5, prefix=p) for p in prefix])[:, None]
    mask[:, :, 7, 1] = True
    check(b, 2, 2, s1, s2, 48, mask, "BNSD", "fp32", mode, sparse=5, prefix=prefix)


def test_prefix_mode6_compressed(mode):
    mask = np.zeros((3072, 2048), bool)
    check(3, 2, 1, 33, 20, 32, mask, "BSND", "fp32", mode, sparse=6, prefix=[0, 20, 9])


def test_prefix_mode_without_mask_is_full_attention():
    check(2, 2, 2, 20, 50, 64, None, "BSH", "bf16", "pynative", sparse=5, prefix=[31, 50])


def _qkv():
    return tuple(ms.Tensor(np.ones((2, 8, 64)), ms.float32) for _ in range(3))


@pytest.mark.parametrize("kwargs,error,match", [
    ({"attn_mask": np.zeros((2, 2, 8, 9), np.uint8)}, ValueError, "'attn_mask' shape .* does not fit sparse_mode 0"),
    ({"attn_mask": np.zeros((1, 2, 8, 8), np.uint8)}, ValueError, "'attn_mask' shape .* does not fit sparse_mode 0"),
    ({"attn_mask": np.zeros((8, 8), np.uint8), "sparse_mode": 5, "prefix": [1, 1]}, ValueError,
     "'attn_mask' shape .* does not fit sparse_mode 5"),
    ({"attn_mask": np.zeros((8, 8), np.uint8), "sparse_mode": 3}, ValueError,
     r"'attn_mask' must be the compressed \(2048, 2048\) mask for sparse_mode 3"),
    ({"attn_mask": np.zeros((2048, 2048), np.uint8), "sparse_mode": 6, "prefix": [1, 1]}, ValueError,
     r"'attn_mask' must be the compressed \(3072, 2048\)"),
    ({"attn_mask": np.zeros((8, 8), np.float32)}, TypeError, "'attn_mask' must be bool or uint8"),
    ({"attn_mask": np.zeros((2, 1, 8, 8), np.uint8), "sparse_mode": 5}, ValueError,
     "'prefix' is required by sparse_mode 5"),
    ({"attn_mask": np.zeros((2, 1, 8, 8), np.uint8), "sparse_mode": 5, "prefix": [1]}, ValueError,
     r"'prefix' must have one entry per batch \(2\)"),
    ({"attn_mask": np.zeros((3072, 2048), np.uint8), "sparse_mode": 6, "prefix": [1, 9]}, ValueError,
     r"'prefix' entries must be in \[0, S2=8\]"),
    ({"prefix": [1, 1]}, ValueError, "'prefix' is only used by sparse_mode 5 and 6"),
])
def test_bad_masks(kwargs, error, match):
    if "attn_mask" in kwargs:
        kwargs["attn_mask"] = ms.Tensor(kwargs["attn_mask"])
    with pytest.raises(error, match=rf"flash_attention_score: {match}"):
        ms_ops.flash_attention_score(*_qkv(), 2, **kwargs)
