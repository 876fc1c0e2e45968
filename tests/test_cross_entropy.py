"""ms_ops.fused_linear_cross_entropy and ms_ops.nn.FusedLinearCrossEntropyLoss against the float64
reference: loss, input gradient and weight gradient, in both execution modes and every kernel
mode, with ignore_index, label smoothing, every reduction, dynamic shapes and awkward sizes.
grad_in_forward's own cases (token blocks, upstream gradients, "auto") are in
test_cross_entropy_grad_in_forward.py."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

import ms_ops
from ms_ops.reference import cross_entropy as ref
from tests.utils import assert_close, representable, rounding, to_ms, to_np

KERNEL_MODES = ("memory_saving", "high_performance", "grad_in_forward")


def make_case(n, h, v, dtype, ignore_every=5, ignore_index=-100, weight_scale=0.1):
    x = representable((n, h), dtype)
    w = representable((v, h), dtype, scale=weight_scale)
    target = np.random.randint(0, v, n).astype(np.int32)
    if ignore_every:
        target[::ignore_every] = ignore_index
    return x, w, target


def value_and_grads(x, w, target, dtype, **kw):
    def loss_fn(a, b, t):
        return ms_ops.fused_linear_cross_entropy(a, b, t, **kw)
    loss, (dx, dw) = ms.value_and_grad(loss_fn, grad_position=(0, 1))(
        to_ms(x, dtype), to_ms(w, dtype), ms.Tensor(target))
    return to_np(loss), to_np(dx), to_np(dw)


def check_against_reference(x, w, target, dtype, got, **kw):
    loss, dx, dw = got
    exact = ref.fused_linear_cross_entropy(x, w, target, **kw)
    naive = ref.fused_linear_cross_entropy(x, w, target, rnd=rounding(dtype), **kw)
    for name, value, e, nv in zip(("loss", "input_grad", "weight_grad"), (loss, dx, dw), exact, naive):
        assert_close(name, value, e, nv, dtype)


CASES = {
    "n1": (1, 16, 128, 0.0),
    "n97_h123": (97, 123, 1000, 0.1),
    "v50257": (6, 24, 50257, 0.0),
}


@pytest.mark.parametrize("kernel_mode", KERNEL_MODES)
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("case", list(CASES))
def test_loss_and_grads(mode, dtype, kernel_mode, case):
    n, h, v, smoothing = CASES[case]
    x, w, target = make_case(n, h, v, dtype, ignore_every=5 if n > 1 else 0)
    got = value_and_grads(x, w, target, dtype, label_smoothing=smoothing, mode=kernel_mode)
    check_against_reference(x, w, target, dtype, got, label_smoothing=smoothing)


@pytest.mark.parametrize("reduction", ["sum", "none"])
@pytest.mark.parametrize("kernel_mode", KERNEL_MODES)
def test_reductions(mode, reduction, kernel_mode):
    """'none' gives per-token losses (0 when ignored) and takes a per-token upstream gradient."""
    x, w, target = make_case(40, 32, 300, "fp32")
    scale = np.random.rand(40)

    def objective(a, b, t):
        loss = ms_ops.fused_linear_cross_entropy(a, b, t, reduction=reduction, mode=kernel_mode,
                                                 label_smoothing=0.2)
        return (loss * ms.Tensor(scale, ms.float32)).sum() if reduction == "none" else loss * 3.0

    loss_grads = ms.grad(objective, grad_position=(0, 1))(to_ms(x, "fp32"), to_ms(w, "fp32"), ms.Tensor(target))
    loss = ms_ops.fused_linear_cross_entropy(to_ms(x, "fp32"), to_ms(w, "fp32"), ms.Tensor(target),
                                             reduction=reduction, mode=kernel_mode, label_smoothing=0.2)
    grad_output = scale if reduction == "none" else 3.0
    exact = ref.fused_linear_cross_entropy(x, w, target, reduction=reduction, label_smoothing=0.2,
                                           grad_output=grad_output)
    naive = ref.fused_linear_cross_entropy(x, w, target, reduction=reduction, label_smoothing=0.2,
                                           grad_output=grad_output, rnd=rounding("fp32"))
    assert loss.shape == ((40,) if reduction == "none" else ())
    if reduction == "none":
        assert np.all(to_np(loss)[::5] == 0)
    for name, value, e, nv in zip(("loss", "input_grad", "weight_grad"),
                                  (to_np(loss), *map(to_np, loss_grads)), exact, naive):
        assert_close(name, value, e, nv, "fp32")


@pytest.mark.parametrize("kernel_mode", KERNEL_MODES)
def test_ignore_index_inside_vocabulary_and_int64(mode, kernel_mode):
    """An ignore_index that is a real class id (0 here) skips exactly those tokens."""
    x, w, target = make_case(33, 20, 130, "fp32", ignore_every=3, ignore_index=0)
    def loss_fn(a, b, t):
        return ms_ops.fused_linear_cross_entropy(a, b, t, ignore_index=0, mode=kernel_mode)
    loss, (dx, dw) = ms.value_and_grad(loss_fn, grad_position=(0, 1))(
        to_ms(x, "fp32"), to_ms(w, "fp32"), ms.Tensor(target.astype(np.int64)))
    check_against_reference(x, w, target, "fp32", (to_np(loss), to_np(dx), to_np(dw)), ignore_index=0)
    assert np.all(to_np(dx)[target == 0] == 0)


@pytest.mark.parametrize("kernel_mode", KERNEL_MODES)
def test_all_tokens_ignored(kernel_mode):
    """'mean' over no tokens is 0/0 = NaN, as in PyTorch; 'sum' is 0; the gradients are 0."""
    x, w, _ = make_case(4, 8, 128, "fp32")
    target = np.full(4, -100, np.int32)
    loss, dx, dw = value_and_grads(x, w, target, "fp32", mode=kernel_mode)
    assert np.isnan(loss) and not np.any(dx) and not np.any(dw)
    loss, dx, dw = value_and_grads(x, w, target, "fp32", reduction="sum", mode=kernel_mode)
    assert loss == 0 and not np.any(dx) and not np.any(dw)


class LossNet(nn.Cell):
    def __init__(self, **kw):
        super().__init__()
        self.kw = kw

    def construct(self, x, w, t):
        return ms_ops.fused_linear_cross_entropy(x, w, t, **self.kw)


class GradNet(nn.Cell):
    def __init__(self, net):
        super().__init__()
        self.grad = ms.value_and_grad(net, grad_position=(0, 1))

    def construct(self, x, w, t):
        return self.grad(x, w, t)


@pytest.mark.parametrize("kernel_mode", KERNEL_MODES)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_dynamic_token_count_graph(dtype, kernel_mode):
    """One compiled graph (N unknown at compile time) serves several token counts."""
    ms.set_context(mode=ms.GRAPH_MODE)
    net = GradNet(LossNet(label_smoothing=0.05, mode=kernel_mode))
    ms_dtype = {"fp32": ms.float32, "bf16": ms.bfloat16}[dtype]
    net.set_inputs(ms.Tensor(shape=[None, 24], dtype=ms_dtype), ms.Tensor(shape=[200, 24], dtype=ms_dtype),
                   ms.Tensor(shape=[None], dtype=ms.int32))
    w = representable((200, 24), dtype, scale=0.1)
    for n in (7, 50):
        x, _, target = make_case(n, 24, 200, dtype)
        loss, (dx, dw) = net(to_ms(x, dtype), to_ms(w, dtype), ms.Tensor(target))
        check_against_reference(x, w, target, dtype, (to_np(loss), to_np(dx), to_np(dw)),
                                label_smoothing=0.05)


def test_jit_function(mode):
    """The default mode ("auto") compiled by ms.jit: grad_in_forward."""
    x, w, target = make_case(20, 16, 256, "fp32")

    def loss_fn(a, b, t):
        return ms_ops.fused_linear_cross_entropy(a, b, t)

    @ms.jit
    def step(a, b, t):
        return ms.value_and_grad(loss_fn, grad_position=(0, 1))(a, b, t)

    loss, (dx, dw) = step(to_ms(x, "fp32"), to_ms(w, "fp32"), ms.Tensor(target))
    check_against_reference(x, w, target, "fp32", (to_np(loss), to_np(dx), to_np(dw)))


@pytest.mark.parametrize("kernel_mode", ("auto",) + KERNEL_MODES)
def test_cell_trains_its_weight(mode, kernel_mode):
    """The Cell's weight Parameter gets its gradient, and a few SGD steps lower the loss."""
    head = ms_ops.nn.FusedLinearCrossEntropyLoss(16, 100, mode=kernel_mode, label_smoothing=0.1)
    assert "mode=" + kernel_mode in repr(head)
    x, _, target = make_case(30, 16, 100, "fp32")
    w0 = head.weight.asnumpy().astype(np.float64)
    grad_fn = ms.value_and_grad(head, grad_position=0, weights=head.trainable_params())
    loss, (dx, (dw,)) = grad_fn(to_ms(x, "fp32"), ms.Tensor(target))
    check_against_reference(x, w0, target, "fp32", (to_np(loss), to_np(dx), to_np(dw)), label_smoothing=0.1)
    optimizer = nn.SGD(head.trainable_params(), learning_rate=2.0)
    first = float(loss.asnumpy())
    for _ in range(5):
        loss, (_, grads) = grad_fn(to_ms(x, "fp32"), ms.Tensor(target))
        optimizer(grads)
    assert float(loss.asnumpy()) < first - 0.05


def test_kernel_modes_agree():
    """Every kernel mode computes the same math; they agree to fp32 rounding."""
    x, w, target = make_case(64, 48, 777, "fp32")
    a = value_and_grads(x, w, target, "fp32", mode="memory_saving", label_smoothing=0.1)
    for kernel_mode in KERNEL_MODES[1:]:
        b = value_and_grads(x, w, target, "fp32", mode=kernel_mode, label_smoothing=0.1)
        for u, v in zip(a, b):
            np.testing.assert_allclose(u, v, rtol=2e-5, atol=1e-7)


@pytest.mark.parametrize("kernel_mode", KERNEL_MODES)
def test_deterministic(kernel_mode):
    x, w, target = make_case(300, 64, 2000, "bf16")
    a = value_and_grads(x, w, target, "bf16", mode=kernel_mode)
    b = value_and_grads(x, w, target, "bf16", mode=kernel_mode)
    for u, v in zip(a, b):
        assert np.array_equal(u, v)


@pytest.mark.full
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("kernel_mode", KERNEL_MODES)
def test_llm_like_sizes(dtype, kernel_mode):
    """Several tiles and blocks in both directions: N=1025 tokens, H=256, V=50257."""
    ms.set_context(mode=ms.GRAPH_MODE)
    x, w, target = make_case(1025, 256, 50257, dtype, weight_scale=0.05)
    got = value_and_grads(x, w, target, dtype, mode=kernel_mode, label_smoothing=0.1)
    check_against_reference(x, w, target, dtype, got, label_smoothing=0.1)
