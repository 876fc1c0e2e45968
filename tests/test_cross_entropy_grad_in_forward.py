"""ms_ops.fused_linear_cross_entropy in mode "grad_in_forward" and the default "auto" against the
float64 reference: several token blocks (a small block_bytes), upstream gradients other than 1,
budget independence, N unknown at compile time, the Cell, and which kernel mode "auto" picks in
each situation. The cases shared with the other modes are in test_cross_entropy.py (every kernel
mode), test_cross_entropy_empty.py (N = 0) and test_cross_entropy_msrun.py (vocabulary parallel)."""
import json
import os
import re
import subprocess
import sys

import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

import ms_ops
from ms_ops.ops.cross_entropy import _block_bounds, resolve_mode
from ms_ops.reference import cross_entropy as ref
from tests.utils import assert_close, representable, rounding, to_ms, to_np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_case(n, h, v, dtype, ignore_index=-100):
    x = representable((n, h), dtype)
    w = representable((v, h), dtype, scale=0.1)
    target = np.random.randint(0, v, n)
    target[:2] = [0, v - 1]
    target[np.random.rand(n) < 0.2] = ignore_index
    return x, w, target.astype(np.int64)


def budget(rows, vocab):
    """block_bytes whose token blocks hold `rows` tokens (one chunk of the kernel up to 512 rows)."""
    return rows * vocab * 4


def grads_of(objective, x, w, target, dtype):
    loss, (dx, dw) = ms.value_and_grad(objective, grad_position=(0, 1))(to_ms(x, dtype), to_ms(w, dtype),
                                                                         ms.Tensor(target))
    return to_np(loss), to_np(dx), to_np(dw)


def check(x, w, target, dtype, got, grad_output=None, **kw):
    exact = ref.fused_linear_cross_entropy(x, w, target, grad_output=grad_output, **kw)
    naive = ref.fused_linear_cross_entropy(x, w, target, grad_output=grad_output, rnd=rounding(dtype), **kw)
    for name, value, e, nv in zip(("loss", "input_grad", "weight_grad"), got, exact, naive):
        assert_close(name, value, e, nv, dtype)


# (N, H, V, rows per token block): 300 tokens in blocks of 128, 128, 44; 1025 in 9 blocks.
BLOCKS = {"three_blocks": (300, 40, 1000, 128), "nine_blocks_h59": (1025, 59, 300, 128)}


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("size", list(BLOCKS))
def test_token_blocks(mode, size, dtype, reduction):
    n, h, v, rows = BLOCKS[size]
    x, w, target = make_case(n, h, v, dtype)

    def loss_fn(a, b, t):
        return ms_ops.fused_linear_cross_entropy(a, b, t, reduction=reduction, label_smoothing=0.1,
                                                 mode="grad_in_forward", block_bytes=budget(rows, v))

    got = grads_of(loss_fn, x, w, target, dtype)
    check(x, w, target, dtype, got, reduction=reduction, label_smoothing=0.1)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_upstream_gradient(mode, reduction):
    """The backward scales the stored gradients by d loss: here 3 - 0.5 = 2.5, the loss used twice."""
    x, w, target = make_case(97, 123, 1000, "fp32", ignore_index=7)

    def objective(a, b, t):
        loss = ms_ops.fused_linear_cross_entropy(a, b, t, reduction=reduction, ignore_index=7,
                                                 label_smoothing=0.2, mode="grad_in_forward")
        return loss * 3.0 - loss * 0.5

    _, dx, dw = grads_of(objective, x, w, target, "fp32")
    loss = ms_ops.fused_linear_cross_entropy(to_ms(x, "fp32"), to_ms(w, "fp32"), ms.Tensor(target),
                                             reduction=reduction, ignore_index=7, label_smoothing=0.2,
                                             mode="grad_in_forward")
    check(x, w, target, "fp32", (to_np(loss), dx, dw), grad_output=2.5, reduction=reduction,
          ignore_index=7, label_smoothing=0.2)
    assert not np.any(dx[target == 7])


def test_block_budget_does_not_change_results():
    """Without a group the kernel sums over the same parts in the same order whatever the token
    blocks, for one chunk size: the default (one block of three 512-row chunks here) and blocks of
    one chunk give the same fp32 bits (fp16/bf16 round their weight_grad pair per token block)."""
    dtype = "fp32"
    x, w, target = make_case(1100, 40, 1000, dtype)
    results = []
    for block_bytes in (None, budget(512, 1000)):
        def loss_fn(a, b, t):
            return ms_ops.fused_linear_cross_entropy(a, b, t, mode="grad_in_forward", block_bytes=block_bytes)
        results.append(grads_of(loss_fn, x, w, target, dtype))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


class GradNet(nn.Cell):
    def __init__(self, **kw):
        super().__init__()
        self.grad = ms.value_and_grad(self.loss, grad_position=(0, 1))
        self.kw = kw

    def loss(self, x, w, t):
        return ms_ops.fused_linear_cross_entropy(x, w, t, **self.kw)

    def construct(self, x, w, t):
        return self.grad(x, w, t)


def test_dynamic_token_count_several_blocks():
    """GRAPH mode, N unknown at compile time: the kernel cuts the token blocks at run time."""
    ms.set_context(mode=ms.GRAPH_MODE)
    net = GradNet(label_smoothing=0.05, block_bytes=budget(128, 200))
    net.set_inputs(ms.Tensor(shape=[None, 24], dtype=ms.float32), ms.Tensor(shape=[200, 24], dtype=ms.float32),
                   ms.Tensor(shape=[None], dtype=ms.int64))
    w = representable((200, 24), "fp32", scale=0.1)
    for n in (300, 5, 129):
        x, _, target = make_case(n, 24, 200, "fp32")
        loss, (dx, dw) = net(to_ms(x, "fp32"), to_ms(w, "fp32"), ms.Tensor(target))
        check(x, w, target, "fp32", (to_np(loss), to_np(dx), to_np(dw)), label_smoothing=0.05)


def test_cell_default_mode_and_budget(mode):
    """The Cell defaults to "auto"; its block_bytes reaches the op (three blocks here)."""
    head = ms_ops.nn.FusedLinearCrossEntropyLoss(40, 1000, block_bytes=budget(128, 1000), label_smoothing=0.1)
    assert "mode=auto" in repr(head) and "block_bytes=512000" in repr(head)
    x, _, target = make_case(300, 40, 1000, "fp32")
    w = head.weight.asnumpy().astype(np.float64)
    grad_fn = ms.value_and_grad(head, grad_position=0, weights=head.trainable_params())
    loss, (dx, (dw,)) = grad_fn(to_ms(x, "fp32"), ms.Tensor(target))
    check(x, w, target, "fp32", (to_np(loss), to_np(dx), to_np(dw)), label_smoothing=0.1)


@pytest.mark.parametrize("mode_arg,reduction,gradients,want", [
    ("auto", "mean", True, "grad_in_forward"),
    ("auto", "sum", True, "grad_in_forward"),
    ("auto", "none", True, "memory_saving"),
    ("auto", "mean", False, "memory_saving"),
    ("auto", "none", False, "memory_saving"),
    ("grad_in_forward", "sum", False, "grad_in_forward"),
    ("grad_in_forward", "none", True, "memory_saving"),
    ("memory_saving", "mean", True, "memory_saving"),
    ("high_performance", "mean", True, "high_performance"),
    ("high_performance", "none", False, "high_performance"),
])
def test_resolve_mode(mode_arg, reduction, gradients, want):
    assert resolve_mode(mode_arg, reduction, gradients) == want


def test_block_bounds():
    """Vocabulary-parallel token blocks: rows whose float32 logits fit the budget, at least one."""
    assert _block_bounds(300, 1000, budget(128, 1000)) == ((0, 128), (128, 256), (256, 300))
    assert _block_bounds(300, 1000, 1) == tuple((r, r + 1) for r in range(300))
    assert _block_bounds(128, 1000, budget(128, 1000)) == ()
    assert _block_bounds(None, 1000, 1) == ()
    assert _block_bounds(0, 1000, 1) == ()


# Which kernel refuses a bad target tells which mode ran: fused_linear_online_max_sum starts
# memory_saving (and high_performance), fused_linear_cross_entropy_grad_in_forward is grad_in_forward.
SITUATIONS = {
    "pynative_no_grad": "fused_linear_online_max_sum",
    "pynative_value_and_grad": "fused_linear_cross_entropy_grad_in_forward",
    "pynative_value_and_grad_none": "fused_linear_online_max_sum",
    "pynative_cell_no_grad": "fused_linear_online_max_sum",
    "pynative_train_one_step": "fused_linear_cross_entropy_grad_in_forward",
    "pynative_jit": "fused_linear_cross_entropy_grad_in_forward",
    "graph_called_directly": "fused_linear_online_max_sum",
    "graph_value_and_grad": "fused_linear_cross_entropy_grad_in_forward",
    "graph_cell": "fused_linear_cross_entropy_grad_in_forward",
    "graph_cell_none": "fused_linear_online_max_sum",
}


W = np.full((16, 8), 0.1, np.float32)


class Head(nn.Cell):
    def __init__(self, reduction):
        super().__init__()
        self.weight = ms.Parameter(ms.Tensor(W), name="weight")
        self.reduction = reduction

    def construct(self, x, t):
        return ms_ops.fused_linear_cross_entropy(x, self.weight, t, reduction=self.reduction).sum()


def run_situation(name):
    """The kernel named by the error of a call with a bad target in situation `name`."""
    ms.set_context(mode=ms.GRAPH_MODE if name.startswith("graph") else ms.PYNATIVE_MODE)
    x = ms.Tensor(np.ones((4, 8), np.float32))
    t = ms.Tensor(np.array([0, 99, 2, 3], np.int32))
    reduction = "none" if name.endswith("_none") else "mean"
    head = Head(reduction)

    def loss_fn(a, target):
        return ms_ops.fused_linear_cross_entropy(a, ms.Tensor(W), target, reduction=reduction).sum()

    calls = {
        "no_grad": lambda: loss_fn(x, t),
        "called_directly": lambda: loss_fn(x, t),
        "value_and_grad": lambda: ms.value_and_grad(loss_fn)(x, t)[0],
        "jit": lambda: ms.jit(loss_fn)(x, t),
        "cell": lambda: head(x, t),
        "train_one_step": lambda: nn.TrainOneStepCell(head, nn.SGD(head.trainable_params()))(x, t),
    }
    call = next(c for key, c in calls.items() if key in name)
    try:
        call().asnumpy()
    except RuntimeError as e:
        found = re.search(r"\(in kernel (\w+)\)", str(e))
        return found.group(1) if found else str(e)
    return "no error"


def test_auto_picks():
    """Each situation in a process of its own: MindSpore 2.10 leaves its PYNATIVE "requires grad"
    state set after an exception inside ms.grad (as these calls raise), which would make every
    later "auto" call of the process take grad_in_forward. Dispatch is synchronous there: after a
    kernel error, MindSpore 2.10's asynchronous queue sometimes launched a later op (Zeros) whose
    output it had not allocated, a segfault in MindSpore's own CPU kernel in about 1 run of 30
    (README, Errors)."""
    got = {}
    for name in SITUATIONS:
        code = ("import json, sys; sys.path[:0] = sys.argv[1:3];"
                " import mindspore; mindspore.runtime.launch_blocking();"
                " import tests.test_cross_entropy_grad_in_forward as t;"
                " print('KERNEL', json.dumps(t.run_situation(sys.argv[3])))")
        out = subprocess.run([sys.executable, "-c", code, ROOT, os.path.join(ROOT, "tests"), name], cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
        lines = [line for line in out.stdout.splitlines() if line.startswith("KERNEL ")]
        got[name] = json.loads(lines[-1][len("KERNEL "):]) if lines else out.stderr[-2000:]
    assert got == SITUATIONS


@pytest.mark.filterwarnings("ignore:vjp_fn has been called multiple times")
def test_vjp_function_called_twice(mode):
    """The backward scales the gradients the forward stored in place. A vjp function called twice
    must still give each cotangent its own gradients: MindSpore recomputes the forward for the
    second call (it warns so); were it not to, the kernel's consumed mark would make the second
    call an error instead of a silently doubled scale."""
    x, w, target = make_case(40, 24, 300, "fp32")

    def loss_fn(a, b):
        return ms_ops.fused_linear_cross_entropy(a, b, ms.Tensor(target), mode="grad_in_forward")

    loss, vjp_fn = ms.vjp(loss_fn, to_ms(x, "fp32"), to_ms(w, "fp32"))
    for upstream in (1.0, -2.5):
        dx, dw = vjp_fn(ms.Tensor(upstream, ms.float32))
        check(x, w, target, "fp32", (to_np(loss), to_np(dx), to_np(dw)), grad_output=upstream)
