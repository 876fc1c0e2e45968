"""The cross_entropy_grad_scale kernel (the backward of grad_in_forward mode) against float64:

    grad *= dout          ("sum")
    grad *= dout / count  ("mean")
    grad = 0              (count = 0: no token counts)

in place for both gradients, fp32 arithmetic and one rounding to the dtype; the output is the
scale applied, and count is marked consumed (-1). "Naive" is the same product done in the dtype:
the scale and the product each rounded to it. The kernel runs as the bprop uses it: its results
are the input tensors, ordered after it by Depend.
"""
import re

import mindspore as ms
import numpy as np
import pytest

from mindspore import ops

from ms_ops._custom import custom_op
from ms_ops.kernels.cross_entropy import CROSS_ENTROPY_GRAD_SCALE
from utils import assert_close, representable, rounding, to_ms, to_np

OP = "cross_entropy_grad_scale"


def prim_for(reduction):
    return custom_op(CROSS_ENTROPY_GRAD_SCALE, None, reduction=reduction)


class InPlace(ms.nn.Cell):
    """(input_grad, weight_grad, count) after the kernel, and the applied scale."""

    def __init__(self, prim):
        super().__init__()
        self.prim = prim

    def construct(self, dx, dw, dout, count):
        applied = self.prim(dx, dw, dout, count)
        return ops.depend(dx, applied), ops.depend(dw, applied), ops.depend(count, applied), applied


def run(dx, dw, dout, count, reduction, dtype, net=None):
    net = net or InPlace(prim_for(reduction))
    args = (to_ms(dx, dtype), to_ms(dw, dtype), ms.Tensor([dout], ms.float32), ms.Tensor([count], ms.float32))
    got_dx, got_dw, got_count, applied = net(*args)
    assert [o.dtype for o in (got_dx, got_dw)] == [args[0].dtype, args[1].dtype]
    assert [o.shape for o in (got_dx, got_dw)] == [dx.shape, dw.shape]
    assert applied.shape == (1,) and applied.dtype == ms.float32
    np.testing.assert_array_equal(to_np(got_count), [-1.0])
    return to_np(got_dx), to_np(got_dw), float(to_np(applied)[0])


def check(dx, dw, dout, count, reduction, dtype, net=None):
    *got, applied = run(dx, dw, dout, count, reduction, dtype, net)
    scale = dout / count if reduction == "mean" else dout
    assert applied == pytest.approx(scale, rel=1e-6)
    rnd = rounding(dtype)
    for name, g, a in zip(("input_grad", "weight_grad"), got, (dx, dw)):
        assert_close(name, g, a * scale, rnd(a * rnd(scale)), dtype)
    return got


def grads(rows, hidden, vocab, dtype):
    return representable((rows, hidden), dtype), representable((vocab, hidden), dtype, scale=0.01)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_dtypes(dtype, reduction):
    """input_grad 97 x 123 (one chunk with a tail), weight_grad 1000 x 123 (8 chunks)."""
    check(*grads(97, 123, 1000, dtype), -1.7, 37.0, reduction, dtype)


def test_many_blocks_bitwise():
    """More chunks than blocks (48 on the Atlas A2 profile): each element is the fp32 product,
    the same bits on every run."""
    dx, dw = grads(1025, 300, 3001, "fp32")
    first = check(dx, dw, 0.37, 3.0, "mean", "fp32")
    scale = np.float32(np.float32(0.37) / np.float32(3.0))
    for got, a in zip(first, (dx, dw)):
        np.testing.assert_array_equal(got, (a.astype(np.float32) * scale).astype(np.float64))
    for a, b in zip(run(dx, dw, 0.37, 3.0, "mean", "fp32")[:2], first):
        np.testing.assert_array_equal(a, b)


def test_sum_with_unit_upstream_is_a_copy():
    dx, dw = grads(33, 40, 77, "bf16")
    for a, b in zip(run(dx, dw, 1.0, 5.0, "sum", "bf16")[:2], (dx, dw)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_no_token_counts(reduction):
    """count = 0 writes zeros whatever the stored values and dout (a mean's 1/0 gives no NaN)."""
    dx, dw = grads(20, 16, 50, "fp16")
    for dout in (1.0, float("inf"), float("nan")):
        for out in run(dx, dw, dout, 0.0, reduction, "fp16")[:2]:
            np.testing.assert_array_equal(out, np.zeros_like(out))


def test_no_tokens():
    """N = 0: an empty input_grad; weight_grad is still scaled."""
    dx, dw = grads(0, 8, 50, "bf16")
    check(dx, dw, 2.0, 4.0, "mean", "bf16")


def test_modes(mode):
    """Compiled in GRAPH mode and run op by op in PYNATIVE."""
    check(*grads(40, 24, 300, "bf16"), 0.5, 7.0, "mean", "bf16")


def test_dynamic_shape_graph():
    """GRAPH mode with N unknown at compile time, N = 0 included."""
    ms.set_context(mode=ms.GRAPH_MODE)
    net = InPlace(prim_for("sum"))
    net.set_inputs(ms.Tensor(shape=[None, 24], dtype=ms.float32), ms.Tensor(shape=[300, 24], dtype=ms.float32),
                   ms.Tensor(shape=[1], dtype=ms.float32), ms.Tensor(shape=[1], dtype=ms.float32))
    _, dw = grads(1, 24, 300, "fp32")
    for rows in (13, 0, 70):
        dx = representable((rows, 24), "fp32")
        check(dx, dw, 3.0, 9.0, "sum", "fp32", net=net)


def test_bad_arguments():
    dx, dw = grads(4, 8, 16, "fp32")
    with pytest.raises(RuntimeError, match=re.escape(
            f"ms_ops.{OP}: 'reduction': must be 'mean' or 'sum' (the reductions to a single loss), got 'none'")):
        run(dx, dw, 1.0, 1.0, "none", "fp32")
    with pytest.raises(RuntimeError, match=re.escape(f"ms_ops.{OP}: 'dout': must have shape [1]")):
        prim_for("sum")(to_ms(dx, "fp32"), to_ms(dw, "fp32"), ms.Tensor([1.0, 2.0], ms.float32),
                        ms.Tensor([1.0], ms.float32)).asnumpy()
    check(dx, dw, 1.0, 2.0, "mean", "fp32")


def test_second_backward_is_rejected():
    """count -1 (consumed by an earlier backward): scaling again would be wrong, so the entry
    refuses and leaves the gradients as they are."""
    dx, dw = grads(4, 8, 16, "fp32")
    args = (to_ms(dx, "fp32"), to_ms(dw, "fp32"), ms.Tensor([1.0], ms.float32), ms.Tensor([-1.0], ms.float32))
    with pytest.raises(RuntimeError, match=re.escape(f"ms_ops.{OP}: 'dout': a backward of this forward ran already")):
        prim_for("sum")(*args).asnumpy()
    np.testing.assert_array_equal(to_np(args[0]), dx)
