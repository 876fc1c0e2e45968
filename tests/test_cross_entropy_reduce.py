"""Kernels cross_entropy_loss_reduce and cross_entropy_loss_reduce_grad (the reduction of
fused_linear_cross_entropy's per-token losses) against float64 numpy: every reduction, both target
dtypes, token counts from 0 to several chunks, ignored tokens with non-finite losses, both modes,
determinism and bad input."""
import re

import mindspore as ms
import numpy as np
import pytest

from ms_ops._custom import custom_op
from ms_ops.kernels.cross_entropy import CROSS_ENTROPY_LOSS_REDUCE, CROSS_ENTROPY_LOSS_REDUCE_GRAD
from tests.utils import Fn, assert_close, rounding

IGNORE = -100
REDUCTIONS = ["mean", "sum", "none"]


def prims(reduction, graph):
    fwd = custom_op(CROSS_ENTROPY_LOSS_REDUCE, None, ignore_index=IGNORE, reduction=reduction)
    bwd = custom_op(CROSS_ENTROPY_LOSS_REDUCE_GRAD, None, ignore_index=IGNORE, reduction=reduction)
    return (Fn(fwd), Fn(bwd)) if graph else (fwd, bwd)


def case(rows, target_dtype):
    """float32 losses of mixed magnitude, about a quarter of the tokens ignored; some ignored
    tokens carry inf and NaN losses, which must not reach the result."""
    loss = (np.random.rand(rows) * 10.0 ** np.random.randint(-2, 3, rows)).astype(np.float32)
    target = np.random.randint(0, 1000, rows).astype(target_dtype)
    ignored = np.random.rand(rows) < 0.25
    target[ignored] = IGNORE
    loss[np.nonzero(ignored)[0][:2]] = [np.inf, np.nan][: min(2, ignored.sum())]
    return loss, target


def reference(loss, target, reduction, dout):
    """(out, count, d loss) in float64; out is [1] for "mean"/"sum", as the kernel gives it."""
    kept = target != IGNORE
    values = np.where(kept, loss.astype(np.float64), 0.0)
    count = kept.sum()
    if reduction == "none":
        return values, count, np.where(kept, dout, 0.0)
    total = values.sum()
    if reduction == "sum":
        return np.array([total]), count, np.where(kept, dout[0], 0.0)
    mean = total / count if count else np.nan
    return np.array([mean]), count, np.where(kept, dout[0] / count if count else 0.0, 0.0)


@pytest.mark.parametrize("target_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("rows", [0, 1, 97, 10000])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_reduce_and_grad(mode, reduction, rows, target_dtype):
    """10000 tokens are three chunks. The naive sum for the error bound adds the float32 values
    one by one in float32."""
    loss, target = case(rows, target_dtype)
    fwd, bwd = prims(reduction, mode == "graph")
    out, count = fwd(ms.Tensor(loss), ms.Tensor(target))
    dout = np.random.randn(rows if reduction == "none" else 1).astype(np.float32)
    grad = bwd(ms.Tensor(dout), ms.Tensor(target), count)
    want_out, want_count, want_grad = reference(loss, target, reduction, dout)
    assert out.shape == want_out.shape and count.shape == (1,) and grad.shape == (rows,)
    assert count.asnumpy()[0] == want_count
    kept = target != IGNORE
    naive_total = np.cumsum(np.where(kept, loss, np.float32(0)), dtype=np.float32)[-1:] if rows else np.zeros(1)
    naive_out = {"none": want_out, "sum": naive_total,
                 "mean": naive_total / np.float32(max(want_count, 1))}[reduction]
    if rows == 0 and reduction == "mean":
        assert np.isnan(out.asnumpy()).all()  # 0/0; the error rule has no bound for NaN
    else:
        assert_close("out", out.asnumpy(), want_out, naive_out, "fp32")
    assert_close("grad", grad.asnumpy(), want_grad, rounding("fp32")(want_grad), "fp32")


def test_empty_and_all_ignored():
    """No token that counts: "mean" is NaN (0/0, as PyTorch), "sum" 0, count 0, and every
    gradient 0 (nothing divides by the zero count)."""
    for rows in (0, 5):
        target = ms.Tensor(np.full(rows, IGNORE, np.int32))
        loss = ms.Tensor(np.full(rows, np.inf, np.float32))
        for reduction, value in (("mean", np.nan), ("sum", 0.0)):
            fwd, bwd = prims(reduction, False)
            out, count = fwd(loss, target)
            np.testing.assert_array_equal(out.asnumpy(), [value])
            assert count.asnumpy()[0] == 0
            grad = bwd(ms.Tensor(np.array([2.0], np.float32)), target, count)
            np.testing.assert_array_equal(grad.asnumpy(), np.zeros(rows))


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_deterministic(reduction):
    loss, target = case(10000, np.int64)
    fwd, _ = prims(reduction, False)
    first = fwd(ms.Tensor(loss), ms.Tensor(target))[0].asnumpy()
    for _ in range(3):
        np.testing.assert_array_equal(fwd(ms.Tensor(loss), ms.Tensor(target))[0].asnumpy(), first)


def test_bad_input(capfd):
    """Wrong shapes reach the user as errors naming the kernel and the argument."""
    fwd, bwd = prims("sum", False)
    with pytest.raises(RuntimeError, match=re.escape(
            "ms_ops.cross_entropy_loss_reduce: 'target': must have shape [4] ([N], N of loss), got [3]")):
        fwd(ms.Tensor(np.ones(4, np.float32)), ms.Tensor(np.zeros(3, np.int32)))[0].asnumpy()
    with pytest.raises(RuntimeError, match=re.escape(
            "ms_ops.cross_entropy_loss_reduce_grad: 'dout': must have shape [1] (the gradient of a reduced loss), "
            "got [4]")):
        bwd(ms.Tensor(np.ones(4, np.float32)), ms.Tensor(np.zeros(4, np.int32)),
            ms.Tensor(np.ones(1, np.float32))).asnumpy()
    assert "ms_ops" not in capfd.readouterr().err
    out, _ = fwd(ms.Tensor(np.ones(4, np.float32)), ms.Tensor(np.zeros(4, np.int32)))
    np.testing.assert_array_equal(out.asnumpy(), [4.0])
