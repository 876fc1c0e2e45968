"""flash_attention_score with input_layout TND (packed sequences, cumulative actual_seq_qlen /
actual_seq_kvlen) and its gradient against the float64 reference (ms_ops.reference.attention.varlen):
lengths 0 and 1, unequal query/key lengths, GQA, every sparse mode per sequence, three dtypes,
GRAPH and PYNATIVE; softmax statistics in [T1, N1, 8]; the errors for bad lengths."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

import ms_ops
from ms_ops._custom import custom_op
from ms_ops.bprop.attention import make_flash_attention_score_bprop
from ms_ops.kernels.attention import FLASH_ATTENTION_SCORE
from ms_ops.reference.attention import varlen
from tests.utils import assert_close, mode_mask, representable, rounding, to_ms, to_np, with_mode_mask


class Packed(nn.Cell):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def construct(self, q, k, v):
        return ms_ops.flash_attention_score(q, k, v, input_layout="TND", **self.kwargs)


class Loss(nn.Cell):
    def __init__(self, attention):
        super().__init__()
        self.attention = attention

    def construct(self, q, k, v, w):
        return (self.attention(q, k, v).astype(ms.float32) * w).sum()


def cumulative(lengths):
    return [int(x) for x in np.cumsum(lengths)]


def check(lens_q, lens_kv, n1, n2, d, dtype, mode, scale=0.2, sparse=0, pre=2147483647, nxt=2147483647,
          prefix=None, tensors=False):
    t1, t2 = sum(lens_q), sum(lens_kv)
    q = representable((t1, n1, d), dtype)
    k = representable((t2, n2, d), dtype)
    v = representable((t2, n2, d), dtype)
    dout = representable((t1, n1, d), "fp32")
    cq, ckv = cumulative(lens_q), cumulative(lens_kv)
    seq_q, seq_kv = (ms.Tensor(np.array(c, np.int64)) for c in (cq, ckv)) if tensors else (cq, ckv)
    kwargs = dict(sparse_mode=sparse, pre_tokens=pre, next_tokens=nxt, prefix=prefix)
    attention = Packed(head_num=n1, actual_seq_qlen=seq_q, actual_seq_kvlen=seq_kv, scalar_value=scale,
                       **with_mode_mask(kwargs, max(lens_q), max(lens_kv)))
    args = [to_ms(a, dtype) for a in (q, k, v)]
    w = ms.Tensor(dout.astype(np.float32))
    out = attention(*args)
    if mode == "pynative":
        grads = ms.grad(lambda a, b, c: Loss(attention)(a, b, c, w), grad_position=(0, 1, 2))(*args)
    else:
        grads = ms.grad(Loss(attention), grad_position=(0, 1, 2))(*args, w)
    got = [to_np(out)] + [to_np(g) for g in grads]
    dout_t = rounding(dtype)(dout)
    kw = dict(sparse_mode=sparse, pre_tokens=pre, next_tokens=nxt, prefix=prefix)
    ref = varlen(q, k, v, dout_t, cq, ckv, scale, **kw)
    naive = varlen(q, k, v, dout_t, cq, ckv, scale, rnd=rounding(dtype), **kw)
    for name, g, r, nv in zip(("attention_out", "dq", "dk", "dv"), got, ref, naive):
        assert_close(name, g, r, nv, dtype)
    return got


def test_lengths_with_empty_and_single(mode):
    # Sequence 1 has no keys: its queries output 0 and get no gradient; sequence 3 has no queries:
    # its keys get no gradient; sequence 2 is a single query over a single key.
    lens_q, lens_kv = [37, 5, 1, 0, 70], [20, 0, 1, 9, 130]
    out, dq, dk, dv = check(lens_q, lens_kv, 4, 2, 64, "fp32", mode)
    blind = slice(37, 42)
    assert np.all(out[blind] == 0) and np.all(dq[blind] == 0)
    keys_unread = slice(21, 30)
    assert np.all(dk[keys_unread] == 0) and np.all(dv[keys_unread] == 0)


@pytest.mark.parametrize("sparse,pre,nxt", [(2, 0, 0), (3, 0, 0), (0, 6, 2), (4, 5, 3), (7, 4, 0), (8, 100, 3)])
def test_sparse_modes_per_sequence(mode, sparse, pre, nxt):
    # Sequences with S1 > S2 and S1 < S2, one empty in the middle; modes 7/8 pick their band
    # sequence past the empty ones.
    check([0, 30, 3, 66, 0], [4, 12, 40, 70, 0], 2, 1, 80, "fp32", mode, sparse=sparse, pre=pre, nxt=nxt)


def test_prefix_compressed_mode(mode):
    check([20, 33], [30, 33], 2, 2, 48, "fp32", mode, sparse=6, prefix=[7, 0])


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_half_dtypes(mode, dtype):
    check([45, 0, 80], [130, 10, 81], 4, 1, 128, dtype, mode, sparse=3)


@pytest.mark.parametrize("d", [96, 111])
def test_head_dims_tensor_lengths(d):
    check([17, 64, 3], [17, 70, 5], 2, 2, d, "fp32", "pynative", sparse=2, tensors=True)


def test_statistics_layout():
    """softmax_max / softmax_sum come out as [T1, N1, 8]: row max of the scaled scores and the
    sum of exp(score - max), 8 copies; 0-key rows keep the empty-row values."""
    lens_q, lens_kv, n1, d, scale = [3, 0, 4], [5, 2, 6], 2, 16, 0.3
    q = representable((sum(lens_q), n1, d), "fp32")
    k = representable((sum(lens_kv), n1, d), "fp32")
    prim = custom_op(FLASH_ATTENTION_SCORE, make_flash_attention_score_bprop, head_num=n1, scale_value=scale,
                     pre_tokens=2147483647, next_tokens=2147483647, input_layout="TND", sparse_mode=0, pse_type=1,
                     keep_prob=1.0)
    cq, ckv = cumulative(lens_q), cumulative(lens_kv)
    mx, sm, _ = prim(*(to_ms(a, "fp32") for a in (q, k, k)), ms.Tensor(np.zeros(1, np.float32)),
                     ms.Tensor(np.zeros(1, np.uint8)),
                     ms.Tensor(np.zeros(1, np.int64)), ms.Tensor(np.array(cq, np.int64)),
                     ms.Tensor(np.array(ckv, np.int64)), ms.Tensor(np.zeros(1, np.uint8)),
                     ms.Tensor(np.zeros(2, np.int64)))
    mx, sm = to_np(mx), to_np(sm)
    assert mx.shape == (7, n1, 8)
    for rows, keys in ((slice(0, 3), slice(0, 5)), (slice(3, 7), slice(7, 13))):
        s = np.einsum("tnd,snd->tns", q[rows], k[keys]) * scale
        m = s.max(axis=-1)
        np.testing.assert_allclose(mx[rows], np.repeat(m[..., None], 8, -1), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(sm[rows], np.repeat(np.exp(s - m[..., None]).sum(-1)[..., None], 8, -1),
                                   rtol=1e-5)


def _tnd(t1=8, t2=8):
    return tuple(ms.Tensor(np.ones((t, 2, 16)), ms.float32) for t in (t1, t2, t2))


@pytest.mark.parametrize("kwargs,error,match", [
    ({"actual_seq_qlen": [4, 8]}, ValueError, "'actual_seq_kvlen' is required"),
    ({"actual_seq_qlen": [4, 8], "actual_seq_kvlen": [8]}, ValueError, "'actual_seq_kvlen' must have one entry"),
    ({"actual_seq_qlen": [5, 4, 8], "actual_seq_kvlen": [2, 4, 8]}, ValueError, "'actual_seq_qlen' must be non-decr"),
    ({"actual_seq_qlen": [4, 7], "actual_seq_kvlen": [4, 8]}, ValueError, "'actual_seq_qlen' must end at .* 8"),
    ({"actual_seq_qlen": [4, 8], "actual_seq_kvlen": [-1, 8]}, ValueError, "'actual_seq_kvlen' must be non-decr"),
    ({"actual_seq_qlen": [4, 8.0], "actual_seq_kvlen": [4, 8]}, TypeError, "'actual_seq_qlen' must hold ints"),
    ({"actual_seq_qlen": [], "actual_seq_kvlen": []}, ValueError, "'actual_seq_qlen' must list at least one"),
    ({"actual_seq_qlen": [8], "actual_seq_kvlen": [8], "sparse_mode": 5, "prefix": [1]}, ValueError,
     "'sparse_mode' 5 is not defined for input_layout 'TND'"),
    ({"actual_seq_qlen": [8], "actual_seq_kvlen": [8], "sparse_mode": 6, "attn_mask": mode_mask(6)}, ValueError,
     "'prefix' is required"),
])
def test_bad_lengths(kwargs, error, match):
    with pytest.raises(error, match=rf"flash_attention_score: {match}"):
        ms_ops.flash_attention_score(*_tnd(), 2, input_layout="TND", **kwargs)


def test_lengths_need_tnd_and_tensor_values_checked_by_kernel():
    q, k, v = (ms.Tensor(np.ones((1, 8, 32)), ms.float32) for _ in range(3))
    with pytest.raises(ValueError, match="flash_attention_score: 'actual_seq_qlen' is only used with input_layout"):
        ms_ops.flash_attention_score(q, k, v, 2, actual_seq_qlen=[8], actual_seq_kvlen=[8])
    with pytest.raises(ValueError, match="flash_attention_score: 'sparse_mode' 7 needs input_layout 'TND'"):
        ms_ops.flash_attention_score(q, k, v, 2, sparse_mode=7)
    bad = ms.Tensor(np.array([4, 9], np.int64))
    with pytest.raises((ValueError, RuntimeError), match="actual_seq_qlen.*must end at the packed length 8"):
        to_np(ms_ops.flash_attention_score(*_tnd(), 2, input_layout="TND", actual_seq_qlen=bad,
                                           actual_seq_kvlen=[4, 8]))
    # The process survives and the next call works.
    out = ms_ops.flash_attention_score(*_tnd(), 2, input_layout="TND", actual_seq_qlen=[4, 8],
                                       actual_seq_kvlen=[4, 8])
    assert np.allclose(to_np(out), 1.0)


class DynamicPacked(nn.Cell):
    def __init__(self):
        super().__init__()
        self.mask = mode_mask(3)

    def construct(self, q, k, v, seq_q, seq_kv):
        return ms_ops.flash_attention_score(q, k, v, 2, attn_mask=self.mask, actual_seq_qlen=seq_q,
                                            actual_seq_kvlen=seq_kv, scalar_value=0.3, input_layout="TND",
                                            sparse_mode=3)


def test_dynamic_packed_graph():
    """One compiled graph for any T and any number of sequences: the lengths as Tensor inputs."""
    ms.set_context(mode=ms.GRAPH_MODE)
    net = DynamicPacked()
    net.set_inputs(*(ms.Tensor(shape=[None, 2, 32], dtype=ms.float32) for _ in range(3)),
                   *(ms.Tensor(shape=[None], dtype=ms.int64) for _ in range(2)))
    for lens_q, lens_kv in (([5, 0, 12], [7, 3, 12]), ([30, 2], [20, 9])):
        q = representable((sum(lens_q), 2, 32), "fp32")
        k, v = (representable((sum(lens_kv), 2, 32), "fp32") for _ in range(2))
        cq, ckv = cumulative(lens_q), cumulative(lens_kv)
        out = net(*(to_ms(a, "fp32") for a in (q, k, v)), ms.Tensor(np.array(cq, np.int64)),
                  ms.Tensor(np.array(ckv, np.int64)))
        dout = np.zeros(q.shape)
        ref = varlen(q, k, v, dout, cq, ckv, 0.3, sparse_mode=3)[0]
        naive = varlen(q, k, v, dout, cq, ckv, 0.3, sparse_mode=3, rnd=rounding("fp32"))[0]
        assert_close("attention_out", to_np(out), ref, naive, "fp32")
