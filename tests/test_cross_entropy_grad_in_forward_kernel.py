"""The fused_linear_cross_entropy_grad_in_forward kernel against the float64 reference.

    loss[r]     = per_token_loss (0 for tokens whose target is ignore_index)
    input_grad  = d(sum_r loss[r]) / d input,   weight_grad = d(sum_r loss[r]) / d weight

(``ms_ops/reference/cross_entropy.py``: ``per_token_loss`` and ``fused_linear_cross_entropy``
with ``reduction="sum"``). "Naive" is the reference's ``rnd`` version: the same math with every
step rounded to the input dtype and the products accumulated in float32. ``block_bytes`` sets the
token block (rows whose fp32 logits fit it, in whole chunks of 16 to 512 rows: as many as it holds,
at most N rounded up to 16).
"""
import os
import re
import subprocess
import sys

import mindspore as ms
import numpy as np
import pytest

from ms_ops._custom import custom_op
from ms_ops.kernels.cross_entropy import FUSED_LINEAR_CROSS_ENTROPY_GRAD_IN_FORWARD
from ms_ops.ops.cross_entropy import MIN_DEFAULT_BLOCK_BYTES as DEFAULT_BLOCK
from ms_ops.reference import cross_entropy as ref
from utils import assert_close, representable, rounding, to_ms, to_np

OP = "fused_linear_cross_entropy_grad_in_forward"


def make_case(rows, hidden, vocab, dtype, index=np.int32, ignore_index=-100, ignored=0.2, scale=2.0):
    """float64 inputs exactly representable in what the kernel receives; targets cover the
    first and last class and a share of ignored tokens."""
    x = representable((rows, hidden), dtype)
    w = representable((vocab, hidden), dtype, scale=scale / np.sqrt(hidden))
    t = np.random.randint(0, vocab, rows)
    t[: min(rows, 2)] = [0, vocab - 1][: min(rows, 2)]
    t = np.where(np.random.rand(rows) < ignored, ignore_index, t)
    return dict(x=x, w=w, target=t.astype(index), ignore_index=ignore_index, dtype=dtype)


def reference(c, alpha, naive=False):
    """(loss, input_grad, weight_grad) in float64, or naively in the input dtype."""
    kw = dict(ignore_index=c["ignore_index"], label_smoothing=alpha)
    if naive:
        kw["rnd"] = rounding(c["dtype"])
    loss = ref.per_token_loss(c["x"], c["w"], c["target"], **kw)
    _, dx, dw = ref.fused_linear_cross_entropy(c["x"], c["w"], c["target"], reduction="sum", **kw)
    return loss, dx, dw


def prim_for(c, alpha, block_bytes):
    return custom_op(FUSED_LINEAR_CROSS_ENTROPY_GRAD_IN_FORWARD, None, ignore_index=c["ignore_index"],
                     label_smoothing=alpha, block_bytes=block_bytes)


def run(c, alpha, block_bytes=DEFAULT_BLOCK, wrapper=None):
    prim = prim_for(c, alpha, block_bytes)
    outs = (wrapper(prim) if wrapper else prim)(to_ms(c["x"], c["dtype"]), to_ms(c["w"], c["dtype"]),
                                                ms.Tensor(c["target"]))
    want = to_ms(c["x"][:1], c["dtype"]).dtype
    assert [o.dtype for o in outs] == [ms.float32, want, want]
    return tuple(to_np(o) for o in outs)


def check(c, alpha, block_bytes=DEFAULT_BLOCK, wrapper=None):
    got = run(c, alpha, block_bytes, wrapper)
    want, naive = reference(c, alpha), reference(c, alpha, naive=True)
    for name, g, r, n in zip(("loss", "input_grad", "weight_grad"), got, want, naive):
        assert_close(name, g, r, n, c["dtype"])
    return got


def budget(rows, vocab):
    """block_bytes whose token blocks hold `rows` tokens."""
    return rows * vocab * 4


@pytest.mark.parametrize("alpha,index", [(0.0, np.int32), (0.1, np.int64)], ids=["a0-i32", "a0.1-i64"])
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_dtypes(dtype, alpha, index):
    """N=97, H=123, V=1000 (a 232-column tail V tile): one token block."""
    check(make_case(97, 123, 1000, dtype, index), alpha)


# (N, H, V, block_bytes): chunks of the budget's rows (16 to 512, at most N rounded up to 16), V tiles
# of <= 1024 columns.
SIZES = {
    "single_token": (1, 16, 50, DEFAULT_BLOCK),
    "three_token_blocks_tail": (300, 40, 1000, budget(128, 1000)),  # blocks of 128, 128, 44 rows
    "budget_below_one_chunk": (200, 24, 300, 1),                    # still one chunk per block
    "three_blocks_of_two_chunks": (2200, 32, 2100, budget(1024, 2100)),  # 512-row chunks, 3 V tiles
    "many_tiles": (40, 24, 20003, DEFAULT_BLOCK),                   # 20 V tiles, an 851-column tail
}


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("size", list(SIZES))
def test_sizes(size, dtype):
    rows, hidden, vocab, block_bytes = SIZES[size]
    check(make_case(rows, hidden, vocab, dtype, np.int64, ignored=0.0 if rows == 1 else 0.2), 0.1, block_bytes)


def test_ignore_index_inside_vocabulary():
    """An ignore_index that is also a class id: tokens with that target count with weight 0,
    whatever their logits."""
    c = make_case(150, 32, 400, "fp32", ignore_index=7, ignored=0.3)
    loss, dx, _ = check(c, 0.1, budget(64, 400))
    ignored = c["target"] == 7
    assert ignored.any()
    np.testing.assert_array_equal(loss[ignored], 0.0)
    np.testing.assert_array_equal(dx[ignored], 0.0)


def test_all_tokens_ignored():
    c = make_case(40, 16, 100, "bf16", ignored=1.0)
    loss, dx, dw = run(c, 0.1)
    for a in (loss, dx, dw):
        np.testing.assert_array_equal(a, np.zeros_like(a))


def test_large_logits():
    """Logits in the hundreds: exp is taken relative to each row's max, in every tile."""
    check(make_case(97, 64, 1000, "fp32", scale=40.0), 0.1, budget(32, 1000))


def test_block_budget_does_not_matter():
    """For one chunk size, every fp32 sum runs over the same chunks and V tiles in the same global
    order whatever the token block boundaries: 512-row chunks in blocks of one chunk or of two give
    bitwise equal results. (fp16/bf16 weight_grad rounds its hi/lo pair once per token block.)"""
    c = make_case(1100, 24, 300, "fp32")
    one = check(c, 0.1, budget(512, 300))
    two = check(c, 0.1, budget(1024, 300))
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_deterministic(dtype):
    """Many blocks share the work of several token blocks; reruns are bitwise equal."""
    c = make_case(600, 64, 2600, dtype)
    first = run(c, 0.1, budget(256, 2600))
    for _ in range(2):
        for a, b in zip(run(c, 0.1, budget(256, 2600)), first):
            np.testing.assert_array_equal(a, b)


def test_deterministic_across_thread_counts(tmp_path):
    """A process with one OpenMP thread (one core's worth of the twin's cube units, another
    interleaving of the blocks) gives the same bits."""
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[1]); import test_cross_entropy_grad_in_forward_kernel"
            " as t; np.random.seed(5); c = t.make_case(300, 40, 1000, 'bf16');"
            " np.savez(sys.argv[2], *t.run(c, 0.1, t.budget(128, 1000)))")
    out = tmp_path / "one_thread.npz"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    subprocess.run([sys.executable, "-c", code, os.path.dirname(__file__), str(out)], env=env, check=True,
                   timeout=300)
    np.random.seed(5)
    here = run(make_case(300, 40, 1000, "bf16"), 0.1, budget(128, 1000))
    with np.load(out) as there:
        for i, a in enumerate(here):
            np.testing.assert_array_equal(there[f"arr_{i}"], a)


class Fn(ms.nn.Cell):
    def __init__(self, prim):
        super().__init__()
        self.prim = prim

    def construct(self, *args):
        return self.prim(*args)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_modes(mode, dtype):
    """Through a Cell, compiled in GRAPH mode and run op by op in PYNATIVE."""
    check(make_case(300, 40, 1000, dtype, np.int64), 0.1, budget(128, 1000), wrapper=Fn)


def test_dynamic_shape_graph():
    """GRAPH mode with N unknown at compile time: shapes come from the C++ infer hook."""
    ms.set_context(mode=ms.GRAPH_MODE)
    c = make_case(70, 40, 300, "fp32")
    net = Fn(prim_for(c, 0.1, budget(32, 300)))
    net.set_inputs(ms.Tensor(shape=[None, 40], dtype=ms.float32), ms.Tensor(shape=[300, 40], dtype=ms.float32),
                   ms.Tensor(shape=[None], dtype=ms.int32))
    for rows in (13, 70):
        part = dict(c, x=c["x"][:rows], target=c["target"][:rows])
        loss, dx, dw = check(part, 0.1, wrapper=lambda prim: net)
        assert loss.shape == (rows,) and dx.shape == (rows, 40) and dw.shape == (300, 40)


def test_no_tokens():
    """N = 0: loss and input_grad are empty, weight_grad all zeros."""
    c = make_case(0, 8, 50, "bf16")
    loss, dx, dw = run(c, 0.1)
    assert loss.shape == (0,) and dx.shape == (0, 8)
    np.testing.assert_array_equal(dw, np.zeros((50, 8)))


@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_bad_target(capfd, index):
    """A target outside [0, V) that is not ignore_index: an error naming the argument, position
    and value; the process goes on."""
    c = make_case(9, 16, 32, "fp32", index, ignored=0.0)
    c["target"][[2, 6]] = [-100, 123456]
    with pytest.raises(RuntimeError, match=re.escape(
            f"ms_ops.{OP}: 'target': value 123456 at [6] is outside [0, 32) and is not ignore_index (-100)")):
        run(c, 0.0)
    c["target"][6] = -1
    with pytest.raises(RuntimeError, match=re.escape(f"ms_ops.{OP}: 'target': value -1 at [6]")):
        run(c, 0.0)
    assert "ms_ops" not in capfd.readouterr().err
    c["target"][6] = 31
    check(c, 0.0)


@pytest.mark.parametrize("attrs,message", [
    (dict(label_smoothing=1.0), "'label_smoothing': must be in [0, 1)"),
    (dict(block_bytes=0), "'block_bytes': must be >= 1, got 0"),
], ids=["label_smoothing", "block_bytes"])
def test_bad_attributes(attrs, message):
    c = make_case(4, 16, 32, "fp32")
    kw = dict(alpha=attrs.get("label_smoothing", 0.0), block_bytes=attrs.get("block_bytes", DEFAULT_BLOCK))
    with pytest.raises(RuntimeError, match=re.escape(f"ms_ops.{OP}: {message}")):
        run(c, kw["alpha"], kw["block_bytes"])
