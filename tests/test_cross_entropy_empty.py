"""Zero tokens (N = 0) through the cross-entropy family: ms_ops.fused_linear_cross_entropy in every
reduction and kernel mode ("auto" included), GRAPH mode with N unknown at compile time, and each op
of the trio.

Defined as PyTorch does: "mean" over nothing is NaN, "sum" 0, "none" a [0] tensor; the gradients
are a [0, H] input gradient and zeros of the weight's shape. Every call gives the same, and nothing
is printed: the warnings test runs the cases in a child process with MindSpore's warnings on (the
test session turns them off with GLOG_v=3) and reads its stderr through capfd.
"""
import os
import subprocess
import sys

import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

import ms_ops
from ms_ops.reference import cross_entropy as ref
from tests.utils import Fn, assert_close, rounding

HIDDEN, VOCAB = 24, 200
KERNEL_MODES = ("memory_saving", "high_performance", "grad_in_forward", "auto")
REDUCTIONS = ("mean", "sum", "none")
EMPTY_LOSS = {"mean": np.float32(np.nan), "sum": np.float32(0.0)}


class LossNet(nn.Cell):
    def __init__(self, reduction, kernel_mode):
        super().__init__()
        self.reduction = reduction
        self.kernel_mode = kernel_mode

    def construct(self, x, w, t):
        return ms_ops.fused_linear_cross_entropy(x, w, t, reduction=self.reduction, mode=self.kernel_mode,
                                                 label_smoothing=0.1)


def grad_net(reduction, kernel_mode):
    """value_and_grad of the loss w.r.t. input and weight ("none": of its sum, through sens)."""
    return ms.value_and_grad(LossNet(reduction, kernel_mode), grad_position=(0, 1))


def empty_args(dtype=ms.float32):
    """Built in their dtype: a cast of an empty tensor would print MindSpore's warning itself."""
    w = np.random.randn(VOCAB, HIDDEN) * 0.1
    return (ms.Tensor(np.zeros((0, HIDDEN)), dtype), ms.Tensor(w, dtype), ms.Tensor(np.zeros(0, np.int32)))


def check_empty(loss, dx, dw, reduction, dtype=ms.float32):
    if reduction == "none":
        assert loss.shape == (0,) and loss.dtype == ms.float32
    else:
        assert loss.shape == () and loss.dtype == ms.float32
        np.testing.assert_array_equal(loss.asnumpy(), EMPTY_LOSS[reduction])
    assert dx.shape == (0, HIDDEN) and dx.dtype == dtype
    assert dw.shape == (VOCAB, HIDDEN) and dw.dtype == dtype
    np.testing.assert_array_equal(dw.astype(ms.float32).asnumpy(), np.zeros((VOCAB, HIDDEN)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("kernel_mode", KERNEL_MODES)
def test_no_tokens(mode, kernel_mode, reduction):
    """20 calls, every one the defined value (the reduction used to read memory nothing wrote)."""
    fn = grad_net(reduction, kernel_mode)
    args = empty_args()
    for _ in range(20):
        loss, (dx, dw) = fn(*args)
        check_empty(loss, dx, dw, reduction)


@pytest.mark.parametrize("kernel_mode", ["memory_saving", "grad_in_forward"])
@pytest.mark.parametrize("dtype", [ms.float16, ms.bfloat16])
def test_no_tokens_half_precision(mode, dtype, kernel_mode):
    loss, (dx, dw) = grad_net("mean", kernel_mode)(*empty_args(dtype))
    check_empty(loss, dx, dw, "mean", dtype)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("kernel_mode", KERNEL_MODES)
def test_dynamic_token_count_includes_zero(kernel_mode, reduction):
    """One graph compiled with N unknown runs N = 0, then N > 0 (against the reference), then 0."""
    ms.set_context(mode=ms.GRAPH_MODE)
    wrapper = GradCell(reduction, kernel_mode)
    wrapper.set_inputs(ms.Tensor(shape=[None, HIDDEN], dtype=ms.float32),
                       ms.Tensor(shape=[VOCAB, HIDDEN], dtype=ms.float32), ms.Tensor(shape=[None], dtype=ms.int32))
    x0, w, t0 = empty_args()
    for n in (0, 37, 0):
        if n == 0:
            loss, (dx, dw) = wrapper(x0, w, t0)
            check_empty(loss, dx, dw, reduction)
            continue
        x = np.random.randn(n, HIDDEN).astype(np.float32)
        t = np.random.randint(0, VOCAB, n).astype(np.int32)
        t[::4] = -100
        loss, (dx, dw) = wrapper(ms.Tensor(x), w, ms.Tensor(t))
        grad_output = np.ones(n) if reduction == "none" else None
        kw = dict(reduction=reduction, label_smoothing=0.1, grad_output=grad_output)
        exact = ref.fused_linear_cross_entropy(x, w.asnumpy(), t, **kw)
        naive = ref.fused_linear_cross_entropy(x, w.asnumpy(), t, rnd=rounding("fp32"), **kw)
        for name, got, e, nv in zip(("loss", "input_grad", "weight_grad"), (loss, dx, dw), exact, naive):
            assert_close(name, got.asnumpy(), e, nv, "fp32")


class GradCell(nn.Cell):
    def __init__(self, reduction, kernel_mode):
        super().__init__()
        self.grad = grad_net(reduction, kernel_mode)

    def construct(self, x, w, t):
        return self.grad(x, w, t)


def max_sum(x, w, t):
    return ms_ops.fused_linear_online_max_sum(x, w, t, 0, VOCAB, return_logits=True)


def loss_with_softmax(m, s, p, z):
    return ms_ops.fused_cross_entropy_loss_with_max_sum(m, s, p, sum_logits=m, vocab_parallel_logits=z,
                                                        label_smoothing=0.1, vocab_size=VOCAB)


def loss_only(m, s, p):
    return ms_ops.fused_cross_entropy_loss_with_max_sum(m, s, p)


def grad_saving(g, x, w, mask, target, m, s):
    return ms_ops.fused_linear_cross_entropy_loss_grad(g, x, w, mask, target, logits_max=m, sum_exp_logits=s)


def grad_softmax(g, x, w, mask, target, p):
    return ms_ops.fused_linear_cross_entropy_loss_grad(g, x, w, mask, target, softmax=p, label_smoothing=0.1)


def test_trio_no_tokens(mode):
    """Each public function of the trio with N = 0: empty outputs of the right shapes and dtypes,
    and a weight gradient of zeros."""
    x, w, t = empty_args()
    outs = Fn(max_sum)(x, w, t)
    assert [o.shape for o in outs] == [(0,), (0,), (0,), (0,), (0,), (0, VOCAB), (0,)]
    assert outs[3].dtype == ms.uint8 and outs[4].dtype == ms.int32
    m, s, p, mask, target = outs[:5]
    loss, softmax = Fn(loss_with_softmax)(m, s, p, ms.Tensor(np.zeros((0, VOCAB)), ms.bfloat16))
    assert loss.shape == (0,) and softmax.shape == (0, VOCAB) and softmax.dtype == ms.float32
    loss, softmax = Fn(loss_only)(m, s, p)
    assert loss.shape == (0,) and softmax.shape == (0,)
    g = ms.Tensor(np.zeros(0, np.float32))
    for dx, dw in (Fn(grad_saving)(g, x, w, mask, target, m, s),
                   Fn(grad_softmax)(g, x, w, mask, target, ms.Tensor(np.zeros((0, VOCAB), np.float32)))):
        assert dx.shape == (0, HIDDEN)
        np.testing.assert_array_equal(dw.asnumpy(), np.zeros((VOCAB, HIDDEN)))


def run_child_cases():
    """Every N = 0 case of this file once per mode (the child of test_nothing_printed)."""
    for mode in (ms.PYNATIVE_MODE, ms.GRAPH_MODE):
        ms.set_context(mode=mode)
        for kernel_mode in KERNEL_MODES:
            for reduction in REDUCTIONS:
                loss, (dx, dw) = grad_net(reduction, kernel_mode)(*empty_args())
                check_empty(loss, dx, dw, reduction)
        test_trio_no_tokens(None)
    ms.set_context(mode=ms.GRAPH_MODE)
    for kernel_mode in ("memory_saving", "grad_in_forward"):
        dynamic = GradCell("mean", kernel_mode)
        dynamic.set_inputs(ms.Tensor(shape=[None, HIDDEN], dtype=ms.float32),
                           ms.Tensor(shape=[VOCAB, HIDDEN], dtype=ms.float32), ms.Tensor(shape=[None], dtype=ms.int32))
        loss, (dx, dw) = dynamic(*empty_args())
        check_empty(loss, dx, dw, "mean")
    print("child cases done")


def run_child(what, capfd):
    env = dict(os.environ, GLOG_v="2")  # MindSpore's default: warnings shown
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    subprocess.run([sys.executable, os.path.abspath(__file__), what], env=env, cwd=root, check=True, timeout=600)
    return capfd.readouterr()


def test_nothing_printed(capfd):
    """No MindSpore warning ("ReduceSum ... shape cannot contain zero", "Mul output shape contain
    0", ...) and nothing else on stderr for N = 0. The control child runs MindSpore's own ReduceSum
    on an empty tensor the same way and must show its warning: the capture does see warnings."""
    captured = run_child("control", capfd)
    assert "[WARNING]" in captured.err and "ReduceSum" in captured.err
    captured = run_child("cases", capfd)
    assert "child cases done" in captured.out
    assert captured.err == "", captured.err


if __name__ == "__main__":
    if sys.argv[1] == "control":
        print(ms.Tensor(np.zeros(0, np.float32)).sum())
    else:
        run_child_cases()
