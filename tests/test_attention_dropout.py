"""flash_attention_score with dropout (keep_prob < 1): the user's drop_mask and the kernels' own
Philox keep bits (explicit seed/offset, or ms_ops' generator that ms.set_seed seeds), forward and every
gradient against the float64 reference given the same bits, GRAPH and PYNATIVE, three dtypes;
keep-rate statistics, a finite-difference check, reproducibility, fresh bits per call (also in a
compiled train step) and the errors."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

import ms_ops
from ms_ops.reference.attention import (dropout_keep, flash_attention_grad_pse, flash_attention_masked,
                                        pack_drop_mask, philox4x32_10, unpack_drop_mask, visibility)
from tests.test_attention import from_layout, to_layout
from tests.utils import Call, VjpLoss, assert_close, mode_mask, representable, rounding, to_ms, to_np, with_mode_mask


class Dropped(nn.Cell):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def construct(self, q, k, v, drop_mask):
        return ms_ops.flash_attention_score(q, k, v, drop_mask=drop_mask, **self.kwargs)


class MaskLoss(nn.Cell):
    def __init__(self, attention):
        super().__init__()
        self.attention = attention

    def construct(self, q, k, v, drop_mask, w):
        return (self.attention(q, k, v, drop_mask).astype(ms.float32) * w).sum()


def run(q, k, v, dout, n1, layout, dtype, mode, drop_mask=None, **kwargs):
    """(out, dq, dk, dv) as float64 [B, N, S, D] arrays."""
    n2 = k.shape[1]
    args = [to_ms(to_layout(a, layout), dtype) for a in (q, k, v)]
    w = ms.Tensor(to_layout(dout, layout).astype(np.float32))
    kwargs = with_mode_mask(kwargs, q.shape[2], k.shape[2])
    if drop_mask is None:
        attention, extra = Call(ms_ops.flash_attention_score, head_num=n1, input_layout=layout, **kwargs), ()
        loss = VjpLoss(attention)
    else:
        attention = Dropped(head_num=n1, input_layout=layout, **kwargs)
        loss, extra = MaskLoss(attention), (ms.Tensor(drop_mask),)
    out = attention(*args, *extra)
    if mode == "pynative":
        grads = ms.grad(lambda a, b, c: loss(a, b, c, *extra, w), grad_position=(0, 1, 2))(*args)
    else:
        grads = ms.grad(loss, grad_position=(0, 1, 2))(*args, *extra, w)
    return (from_layout(to_np(out), layout, n1),) + tuple(
        from_layout(to_np(g), layout, n) for g, n in zip(grads, (n1, n2, n2)))


def check(b, n1, n2, s1, s2, d, layout, dtype, mode, keep_prob, keep, scale=0.15, sparse=0, pre=2147483647,
          nxt=2147483647, **kwargs):
    """Runs the op and compares with the reference dropping with the keep bits ``keep``."""
    q, k, v = (representable(shape, dtype) for shape in ((b, n1, s1, d), (b, n2, s2, d), (b, n2, s2, d)))
    dout = representable((b, n1, s1, d), "fp32")
    got = run(q, k, v, dout, n1, layout, dtype, mode, keep_prob=keep_prob, scalar_value=scale, sparse_mode=sparse,
              pre_tokens=pre, next_tokens=nxt, **kwargs)
    vis = visibility(s1, s2, sparse, pre, nxt)
    drop = keep / keep_prob
    rnd, dout_t = rounding(dtype), rounding(dtype)(dout)
    ref = (flash_attention_masked(q, k, v, scale, vis, drop=drop),) + flash_attention_grad_pse(
        q, k, v, dout_t, scale, vis, drop=drop)[:3]
    naive = (flash_attention_masked(q, k, v, scale, vis, rnd, drop=drop),) + flash_attention_grad_pse(
        q, k, v, dout_t, scale, vis, rnd, drop=drop)[:3]
    for name, g, r, nv in zip(("attention_out", "dq", "dk", "dv"), got, ref, naive):
        assert_close(name, g, r, nv, dtype)
    return got


def test_philox_known_answers():
    """Random123's known-answer vectors of Philox-4x32-10 (the reference the kernels are held to)."""
    cases = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
             ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
             ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
              (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]
    for counter, key, want in cases:
        assert tuple(int(x) for x in philox4x32_10(np.array(counter, np.uint32), key)) == want


@pytest.mark.parametrize("layout,sparse,pre,nxt", [("BSH", 0, 2147483647, 2147483647), ("BNSD", 0, 30, 7),
                                                   pytest.param("SBH", 3, 0, 0, marks=pytest.mark.full)])
def test_generated_bits_fp32(mode, layout, sparse, pre, nxt):
    """The kernels' bits are the reference's Philox bits, forward and backward (GQA, two key tiles,
    rows starting mid-tile in the band)."""
    b, n1, n2, s1, s2, seed, offset = 2, 4, 2, 37, 150, 123456789012, 77
    keep = dropout_keep(seed, offset, (b, n1, s1, s2), 0.8)
    check(b, n1, n2, s1, s2, 64, layout, "fp32", mode, 0.8, keep, sparse=sparse, pre=pre, nxt=nxt, seed=seed,
          offset=offset)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_generated_bits_half(mode, dtype):
    keep = dropout_keep(5, 9, (1, 2, 45, 130), 0.6)
    check(1, 2, 1, 45, 130, 80, "BSND", dtype, mode, 0.6, keep, sparse=2, seed=5, offset=9)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_drop_mask(mode, dtype):
    """A user drop_mask (MindSpore's bit layout, 1 = keep), read from mid-byte starts in the band."""
    b, n1, s1, s2 = 2, 2, 33, 136
    keep = np.random.rand(b, n1, s1, s2) < 0.7
    mask = pack_drop_mask(keep)
    assert np.array_equal(unpack_drop_mask(mask), keep)
    check(b, n1, n1, s1, s2, 48, "BSH", dtype, mode, 0.7, keep, pre=21, nxt=13, drop_mask=mask)


def test_packed_generated_bits():
    """TND: sequence b's element (i, j) draws at [b, n1, i, j] of [B, N1, max S1, max S2]."""
    lens_q, lens_kv, n1, d, scale, kp, seed = [20, 0, 33], [40, 7, 25], 2, 32, 0.2, 0.75, 31
    cq, ckv = [int(x) for x in np.cumsum(lens_q)], [int(x) for x in np.cumsum(lens_kv)]
    q = representable((sum(lens_q), n1, d), "fp32")
    k, v = (representable((sum(lens_kv), n1, d), "fp32") for _ in range(2))
    dout = representable((sum(lens_q), n1, d), "fp32")
    keep = dropout_keep(seed, 0, (3, n1, max(lens_q), max(lens_kv)), kp)
    attention = Call(ms_ops.flash_attention_score, head_num=n1, input_layout="TND", actual_seq_qlen=cq,
                     actual_seq_kvlen=ckv, scalar_value=scale, sparse_mode=3, attn_mask=mode_mask(3), keep_prob=kp,
                     seed=seed, offset=0)
    args = [to_ms(a, "fp32") for a in (q, k, v)]
    out = attention(*args)
    grads = ms.grad(VjpLoss(attention), grad_position=(0, 1, 2))(*args, ms.Tensor(dout.astype(np.float32)))
    got = [to_np(out)] + [to_np(g) for g in grads]
    starts_q, starts_kv = [0] + cq[:-1], [0] + ckv[:-1]
    for bi in (0, 2):
        rq, rk = slice(starts_q[bi], cq[bi]), slice(starts_kv[bi], ckv[bi])
        s1, s2 = lens_q[bi], lens_kv[bi]
        qb, kb, vb, gb = (a[None].transpose(0, 2, 1, 3) for a in (q[rq], k[rk], v[rk], dout[rq]))
        vis, drop = visibility(s1, s2, 3), keep[bi:bi + 1, :, :s1, :s2] / kp
        ref = (flash_attention_masked(qb, kb, vb, scale, vis, drop=drop),) + flash_attention_grad_pse(
            qb, kb, vb, gb, scale, vis, drop=drop)[:3]
        naive = (flash_attention_masked(qb, kb, vb, scale, vis, rounding("fp32"), drop=drop),) + \
            flash_attention_grad_pse(qb, kb, vb, gb, scale, vis, rounding("fp32"), drop=drop)[:3]
        for name, g, r, nv, rows in zip(("attention_out", "dq", "dk", "dv"), got, ref, naive, (rq, rq, rk, rk)):
            assert_close(name, g[rows], r[0].transpose(1, 0, 2), nv[0].transpose(1, 0, 2), "fp32")


def _recovered_bits(keep_prob, s1=64, s2=128, **kwargs):
    """The keep bits of [1, 2, s1, s2] read back from the output: with Q = 0 every visible
    probability is 1 / s2, and V = the identity puts key j's in column j."""
    q = ms.Tensor(np.zeros((1, 2, s1, s2), np.float32))
    v = ms.Tensor(np.tile(np.eye(s2, dtype=np.float32), (1, 2, 1, 1)))
    out = ms_ops.flash_attention_score(q, v, v, 2, input_layout="BNSD", keep_prob=keep_prob, **kwargs)
    scaled = to_np(out) * s2 * keep_prob
    bits = np.rint(scaled)
    np.testing.assert_allclose(scaled, bits, atol=1e-4)
    return bits.astype(bool)


def test_keep_rate_and_bits():
    """The fraction kept is keep_prob (5 sigma over 16384 draws) and the bits are the reference's."""
    for kp in (0.3, 0.9):
        bits = _recovered_bits(kp, seed=2024, offset=3)
        assert abs(bits.mean() - kp) < 5 * np.sqrt(kp * (1 - kp) / bits.size)
        assert np.array_equal(bits, dropout_keep(2024, 3, bits.shape, kp))


def test_seeds_and_default_generator():
    """Same (seed, offset): same bits; another offset or seed: other bits. Default: a fresh pair per
    call; ms.set_seed restarts the sequence."""
    first = _recovered_bits(0.5, seed=7, offset=1)
    assert np.array_equal(first, _recovered_bits(0.5, seed=7, offset=1))
    assert not np.array_equal(first, _recovered_bits(0.5, seed=7, offset=2))
    assert not np.array_equal(first, _recovered_bits(0.5, seed=8, offset=1))
    ms.set_seed(11)
    calls = [_recovered_bits(0.5) for _ in range(2)]
    assert not np.array_equal(calls[0], calls[1])
    assert all(np.array_equal(bits, dropout_keep(11, offset, bits.shape, 0.5)) for offset, bits in enumerate(calls))
    ms.set_seed(12)
    assert not np.array_equal(calls[0], _recovered_bits(0.5))
    ms.set_seed(11)
    assert all(np.array_equal(a, _recovered_bits(0.5)) for a in calls)


class TrainStep(nn.Cell):
    """One compiled step: the loss <out, w> and its gradient with respect to the query."""

    def __init__(self):
        super().__init__()
        attention = Call(ms_ops.flash_attention_score, head_num=2, input_layout="BNSD", keep_prob=0.5, scalar_value=0.3)
        self.step = ms.value_and_grad(VjpLoss(attention), grad_position=0)

    def construct(self, q, k, v, w):
        return self.step(q, k, v, w)


def test_graph_train_step_fresh_bits():
    """A jitted step called twice drops differently (the generator's state advances inside the
    graph: seed s, offsets 0, 1, ... after ms.set_seed(s)); each step's backward uses its own
    forward's bits; ms.set_seed and a new compilation replay the sequence."""
    ms.set_context(mode=ms.GRAPH_MODE)
    shape = (1, 2, 24, 32)
    q, k, v, w = (representable(shape, "fp32") for _ in range(4))
    args = [to_ms(a, "fp32") for a in (q, k, v, w)]
    ms.set_seed(3)
    step = TrainStep()
    runs = [[to_np(t) for t in step(*args)] for _ in range(2)]
    assert runs[0][0] != runs[1][0] and not np.array_equal(runs[0][1], runs[1][1])
    ms.set_seed(4)
    assert to_np(TrainStep()(*args)[0]) != runs[0][0]
    ms.set_seed(3)
    assert all(np.array_equal(a, b) for a, b in zip(runs[0], [to_np(t) for t in TrainStep()(*args)]))
    vis = visibility(24, 24, 0)
    for offset, (loss, dq) in enumerate(runs):
        drop = dropout_keep(3, offset, (1, 2, 24, 24), 0.5) / 0.5
        ref = np.sum(flash_attention_masked(q, k, v, 0.3, vis, drop=drop) * w)
        np.testing.assert_allclose(loss, ref, rtol=1e-4)
        dq_ref = flash_attention_grad_pse(q, k, v, w, 0.3, vis, drop=drop)[0]
        dq_naive = flash_attention_grad_pse(q, k, v, w, 0.3, vis, rounding("fp32"), drop=drop)[0]
        assert_close("dq", dq, dq_ref, dq_naive, "fp32")


def test_finite_differences():
    """ms.grad agrees with central differences of the fp32 op at a fixed seed (the loss is a smooth
    function of q, k, v once the bits are fixed)."""
    b, n, s1, s2, d = 1, 1, 9, 16, 8
    q, k, v = (np.random.randn(b, n, s, d) for s in (s1, s2, s2))
    w = np.random.randn(b, n, s1, d)
    attention = Call(ms_ops.flash_attention_score, head_num=n, input_layout="BNSD", keep_prob=0.6, scalar_value=0.4,
                     seed=99, offset=5)
    loss = VjpLoss(attention)

    def value(a, bb, c):
        return float(loss(*(ms.Tensor(x.astype(np.float32)) for x in (a, bb, c, w))).asnumpy())

    grads = [to_np(g) for g in ms.grad(loss, grad_position=(0, 1, 2))(
        *(ms.Tensor(x.astype(np.float32)) for x in (q, k, v, w)))]
    rng = np.random.default_rng(0)
    eps = 1e-2
    for which, (x, g) in enumerate(zip((q, k, v), grads)):
        for _ in range(4):
            idx = tuple(rng.integers(0, m) for m in x.shape)
            plus, minus = x.copy(), x.copy()
            plus[idx] += eps
            minus[idx] -= eps
            args_p = [plus if i == which else a for i, a in enumerate((q, k, v))]
            args_m = [minus if i == which else a for i, a in enumerate((q, k, v))]
            fd = (value(*args_p) - value(*args_m)) / (2 * eps)
            assert abs(fd - g[idx]) <= 2e-3 + 1e-2 * abs(fd), (which, idx, fd, g[idx])


@pytest.mark.parametrize("kwargs,error,match", [
    ({"keep_prob": 0.0}, ValueError, r"'keep_prob' must be in \(0, 1\]"),
    ({"keep_prob": 1.5}, ValueError, r"'keep_prob' must be in \(0, 1\]"),
    ({"keep_prob": "0.5"}, TypeError, "'keep_prob' must be a float"),
    ({"keep_prob": 0.5, "seed": -1}, TypeError, "'seed' must be an int"),
    ({"keep_prob": 0.5, "drop_mask": np.zeros((1, 2, 8, 1), np.int32)}, TypeError, "'drop_mask' must be uint8"),
    ({"keep_prob": 0.5, "drop_mask": np.zeros((1, 2, 8, 2), np.uint8)}, ValueError, r"'drop_mask' must be \[B, N1"),
    ({"keep_prob": 0.5, "drop_mask": np.zeros((1, 2, 8, 1), np.uint8), "seed": 1}, ValueError,
     "'seed'/'offset' .*not both"),
])
def test_errors(kwargs, error, match):
    q = ms.Tensor(np.ones((1, 8, 64)), ms.float32)
    kwargs = {n: ms.Tensor(x) if isinstance(x, np.ndarray) else x for n, x in kwargs.items()}
    with pytest.raises(error, match=rf"flash_attention_score: {match}"):
        ms_ops.flash_attention_score(q, q, q, 2, **kwargs)
    # The process survives and the next call works.
    assert ms_ops.flash_attention_score(q, q, q, 2).shape == (1, 8, 64)


def test_errors_layout():
    q = ms.Tensor(np.ones((12, 2, 16)), ms.float32)
    with pytest.raises(ValueError, match="flash_attention_score: 'drop_mask' needs the longest key sequence S2 a "
                                         "multiple of 8"):
        ms_ops.flash_attention_score(q, q, q, 2, input_layout="TND", actual_seq_qlen=[12], actual_seq_kvlen=[12],
                                     keep_prob=0.5, drop_mask=ms.Tensor(np.zeros((1, 2, 12, 1), np.uint8)))
    q = ms.Tensor(np.ones((1, 12, 32)), ms.float32)
    with pytest.raises(ValueError, match="flash_attention_score: 'drop_mask' needs S2 a multiple of 8"):
        ms_ops.flash_attention_score(q, q, q, 2, keep_prob=0.5, drop_mask=ms.Tensor(np.zeros((1, 2, 12, 1), np.uint8)))
