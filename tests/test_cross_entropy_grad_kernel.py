"""The fused_linear_cross_entropy_loss_grad kernel against its float64 formula.

    G[r, j]     = grad[r] * (p[r, j] - (1 - a) [row r unmasked, j == masked_target[r]] - a / Vg)
    input_grad  = G W,    weight_grad = G^T X

with p the given softmax (high-performance mode) or exp(X W^T - logits_max) / sum_exp_logits
(memory-saving mode). logits_max and sum_exp_logits are global over several vocabulary shards, so
they are built here from this shard's logits plus made-up statistics of the other shards. "Naive"
is the same math with every step (logits, p, G, the gradients) rounded to the input dtype and the
products accumulated in float32.
"""
import re

import mindspore as ms
import numpy as np
import pytest
from mindspore import ops

from ms_ops._custom import custom_op
from ms_ops.kernels.cross_entropy import FUSED_LINEAR_CROSS_ENTROPY_LOSS_GRAD
from utils import assert_close, representable, rounding, to_ms, to_np

OP = "fused_linear_cross_entropy_loss_grad"
F32 = rounding("fp32")


def make_case(rows, hidden, vocab, dtype, index=np.int32, masked_frac=0.3):
    """float64 inputs exactly representable in what the kernel receives."""
    x = representable((rows, hidden), dtype)
    w = representable((vocab, hidden), dtype, scale=2 / np.sqrt(hidden))
    z = x @ w.T
    # The other shards' max and sum: a global max at least the local one.
    other_max = z.max(axis=1) + np.random.randn(rows)
    logits_max = F32(np.maximum(z.max(axis=1), other_max))
    sum_exp = F32(np.exp(z - logits_max[:, None]).sum(axis=1)
                  + np.exp(other_max - logits_max) * np.random.uniform(1, 3 * vocab, rows))
    masked = np.random.rand(rows) < masked_frac
    target = np.where(masked, 0, np.random.randint(0, vocab, rows))
    # LSB first; the pad bits of the last byte are 1, as the forward op writes them.
    bits = np.ones(-(-rows // 8) * 8, np.uint8)
    bits[:rows] = masked
    grad = F32(np.random.randn(rows))
    grad[::7] = 0.0
    return dict(x=x, w=w, z=z, logits_max=logits_max, sum_exp=sum_exp, masked=masked,
                target=target.astype(index), mask=np.packbits(bits, bitorder="little"), grad=grad,
                softmax=F32(np.exp(z - logits_max[:, None]) / sum_exp[:, None]), dtype=dtype)


def reference(c, softmax, alpha, vocab_size, naive=False):
    """(input_grad, weight_grad) in float64, or naively: every step rounded to the input dtype and
    the products accumulated in float32."""
    if naive:
        rnd = rounding(c["dtype"])

        def mm(a, b):
            return rnd(np.float32(a) @ np.float32(b))
    else:
        rnd, mm = (lambda a: a), np.matmul
    if softmax:
        p = c["softmax"]
    else:
        z = mm(c["x"], c["w"].T)
        p = rnd(rnd(np.exp(rnd(z - c["logits_max"][:, None]))) / c["sum_exp"][:, None])
    g = rnd(p - alpha / vocab_size)
    rows = np.nonzero(~c["masked"])[0]
    g[rows, c["target"][rows]] = rnd(g[rows, c["target"][rows]] - (1 - alpha))
    g = rnd(g * c["grad"][:, None])
    return mm(g, c["w"]), mm(g.T, c["x"])


def f32_tensor(a):
    return ms.Tensor(np.asarray(a, np.float32))


def run(c, softmax, alpha, vocab_size=None, prim_wrapper=None):
    vocab = c["w"].shape[0]
    prim = custom_op(FUSED_LINEAR_CROSS_ENTROPY_LOSS_GRAD, None, label_smoothing=alpha,
                     vocab_size=vocab_size or vocab, has_softmax=softmax)
    args = (f32_tensor(c["grad"]), to_ms(c["x"], c["dtype"]), to_ms(c["w"], c["dtype"]),
            ms.Tensor(c["mask"]), ms.Tensor(c["target"]), f32_tensor(c["logits_max"]),
            f32_tensor(c["sum_exp"]),
            f32_tensor(c["softmax"]) if softmax else ops.zeros((1,), ms.float32))
    dx, dw = (prim_wrapper(prim) if prim_wrapper else prim)(*args)
    assert dx.dtype == dw.dtype == to_ms(c["x"][:1], c["dtype"]).dtype
    return to_np(dx), to_np(dw)


def check(c, softmax, alpha, vocab_size=None, prim_wrapper=None):
    vocab_size = vocab_size or c["w"].shape[0]
    dx, dw = run(c, softmax, alpha, vocab_size, prim_wrapper)
    ref_dx, ref_dw = reference(c, softmax, alpha, vocab_size)
    naive_dx, naive_dw = reference(c, softmax, alpha, vocab_size, naive=True)
    assert_close("input_grad", dx, ref_dx, naive_dx, c["dtype"])
    assert_close("weight_grad", dw, ref_dw, naive_dw, c["dtype"])
    return dx, dw


@pytest.mark.parametrize("alpha,index", [(0.0, np.int32), (0.1, np.int64)], ids=["a0-i32", "a0.1-i64"])
@pytest.mark.parametrize("softmax", [False, True], ids=["memory_saving", "softmax"])
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_dtypes_modes(dtype, softmax, alpha, index):
    """H=123 and V=1003: rows of awkward byte lengths everywhere."""
    check(make_case(97, 123, 1003, dtype, index), softmax, alpha)


# (BT, H, V): blockDim = min(24, V tiles, BT chunks); rounds = ceil(V tiles / blockDim).
SIZES = {
    "single_token": (1, 16, 128),         # one block, one step
    "bt97_v128": (97, 40, 128),           # one V tile: one block, one step
    "two_blocks_three_rounds": (200, 40, 2100),
    "five_blocks_two_rounds": (520, 64, 2600),  # the last round has one active block of five
    "gpt2_vocab": (16, 24, 50257),        # 99 V tiles, an 81-column tail
    "wide_hidden": (40, 4104, 600),       # fp16/bf16 beyond H = 4096: tiles of up to 256 columns
}


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("size", list(SIZES))
def test_sizes(size, dtype):
    rows, hidden, vocab = SIZES[size]
    check(make_case(rows, hidden, vocab, dtype), softmax=size == "bt97_v128", alpha=0.1)


def test_vocab_size_larger_than_shard():
    """label_smoothing spreads a / Vg over the whole vocabulary, not the shard."""
    check(make_case(200, 40, 2100, "fp16", np.int64), softmax=False, alpha=0.2, vocab_size=8400)


def test_no_tokens():
    """BT = 0: input_grad is empty and weight_grad all zeros."""
    c = make_case(0, 8, 50, "bf16")
    dx, dw = run(c, False, 0.1)
    assert dx.shape == (0, 8)
    np.testing.assert_array_equal(dw, np.zeros((50, 8)))


def test_all_rows_masked():
    """No target in this shard: G is the softmax part alone."""
    check(make_case(97, 40, 300, "fp32", masked_frac=1.0), softmax=False, alpha=0.0)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_deterministic(dtype):
    """Several blocks accumulate into the same rows; reruns are bitwise equal."""
    c = make_case(520, 64, 2600, dtype)
    first = run(c, False, 0.1)
    for _ in range(2):
        again = run(c, False, 0.1)
        np.testing.assert_array_equal(again[0], first[0])
        np.testing.assert_array_equal(again[1], first[1])


# fp32 with the softmax: two products per block (its row group x vocabulary group of p W, its share
# of the vocabulary for p^T X'), then the partials, label-smoothing and target terms added row by row.
@pytest.mark.parametrize("rows,hidden,vocab,alpha,vocab_size", [
    (1001, 40, 2100, 0.1, 4 * 2100),  # 3 blocks: row shares of 333-334 start inside mask bytes; Kg = 3
    (2100, 16, 9000, 0.1, None),      # 9 blocks: 3 row groups x 3 vocabulary groups of p W
    (1100, 900, 7000, 0.2, None),     # 7 blocks: Kg = 2 (the partials' cap) x R = 3, one block idle
    (40, 10000, 48, 0.1, None),       # H wider than a UB buffer: column pieces
    (3, 24, 2100, 0.3, None),         # fewer rows than blocks could take
    (520, 64, 2600, 0.0, None),       # no smoothing: no partial sums
])
def test_fp32_softmax_products(rows, hidden, vocab, alpha, vocab_size):
    check(make_case(rows, hidden, vocab, "fp32", np.int64), True, alpha, vocab_size=vocab_size)


def test_fp32_softmax_deterministic():
    c = make_case(1001, 40, 2100, "fp32")
    first = run(c, True, 0.1)
    again = run(c, True, 0.1)
    np.testing.assert_array_equal(again[0], first[0])
    np.testing.assert_array_equal(again[1], first[1])


class GradCell(ms.nn.Cell):
    def __init__(self, prim):
        super().__init__()
        self.prim = prim

    def construct(self, *args):
        return self.prim(*args)


@pytest.mark.parametrize("dtype,softmax", [("fp32", False), ("bf16", True)])
def test_modes(mode, dtype, softmax):
    """Through a Cell, compiled in GRAPH mode and run op by op in PYNATIVE."""
    check(make_case(200, 40, 2100, dtype), softmax, 0.1, prim_wrapper=GradCell)


def test_bad_masked_target(capfd):
    """A target outside [0, V) on an unmasked row: an error naming the argument, row and value;
    the process goes on. The same value on a masked row is never read."""
    c = make_case(97, 16, 300, "fp32")
    row = int(np.nonzero(~c["masked"])[0][3])
    bad = dict(c, target=c["target"].copy())
    bad["target"][row] = 300
    with pytest.raises(RuntimeError, match=re.escape(
            f"ms_ops.{OP}: 'masked_target': value 300 at row {row} is outside [0, 300)")):
        run(bad, False, 0.0)
    bad = dict(c, target=c["target"].astype(np.int64))
    bad["target"][row] = -1
    with pytest.raises(RuntimeError, match=re.escape(f"ms_ops.{OP}: 'masked_target': value -1 at row {row}")):
        run(bad, True, 0.1)
    assert "ms_ops" not in capfd.readouterr().err
    masked_row = int(np.nonzero(c["masked"])[0][0])
    ok = dict(c, target=c["target"].copy())
    ok["target"][masked_row] = -5
    check(ok, False, 0.0)


@pytest.mark.full
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("softmax", [False, True], ids=["memory_saving", "softmax"])
def test_full_large(dtype, softmax):
    """Many blocks and rounds at LLM-like proportions (H not a multiple of 16, V with a tail)."""
    check(make_case(1025, 257, 50257, dtype, np.int64), softmax, 0.1, vocab_size=4 * 50257)
