"""ms_ops.nn.MoE: forward and every parameter gradient equal a dense composed-MindSpore MoE (no
dropping), and the layer trains, in GRAPH and PYNATIVE mode."""
import os
import subprocess
import sys

import mindspore as ms
import numpy as np
import pytest
from mindspore import nn, ops

from ms_ops.nn import MoE


class DenseMoE(nn.Cell):
    """Every expert on every token, then the top-k weighted sum: the same function as MoE when
    no pair is dropped, written with MindSpore built-ins only (autodiff gives the gradients)."""

    def __init__(self, moe):
        super().__init__()
        self.moe = moe

    def construct(self, x):
        return dense_moe(self.moe, x)


def dense_moe(cell, x):
    tokens = x.reshape(-1, cell.hidden_size)
    probs = ops.softmax(ops.matmul(tokens, cell.router), axis=-1)
    weights, idx = ops.topk(probs, cell.top_k)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    every = ops.broadcast_to(tokens, (cell.num_experts,) + tokens.shape)
    gate, up = ops.split(ops.bmm(every, cell.w_gate_up), cell.ffn_hidden_size, axis=-1)
    outs = ops.bmm(ops.silu(gate) * up, cell.w_down)                 # [E, R, H]
    rows = ops.arange(tokens.shape[0]).reshape(-1, 1).broadcast_to(idx.shape)
    picked = outs[idx, rows]                                          # [R, K, H]
    return (picked * weights.expand_dims(-1)).sum(axis=1).reshape(x.shape)


class Loss(nn.Cell):
    def __init__(self, body, target):
        super().__init__()
        self.body, self.target = body, target

    def construct(self, x):
        return ((self.body(x) - self.target) ** 2).mean()


def test_moe_matches_dense_and_trains(mode):
    """Outputs and gradients (router, expert weights, x) match the dense version; SGD lowers the loss."""
    cell = MoE(16, 24, num_experts=4, top_k=2, capacity_factor=2.0)  # capacity = all tokens: no drops
    x = ms.Tensor(np.random.randn(2, 5, 16), ms.float32)
    target = ms.Tensor(np.random.randn(2, 5, 16), ms.float32)
    np.testing.assert_allclose(cell(x).asnumpy(), DenseMoE(cell)(x).asnumpy(), rtol=1e-5, atol=1e-6)

    params = cell.trainable_params()
    ours = ms.value_and_grad(Loss(cell, target), grad_position=0, weights=params)
    dense = ms.value_and_grad(Loss(DenseMoE(cell), target), grad_position=0, weights=params)
    (l1, (dx1, dw1)), (l2, (dx2, dw2)) = ours(x), dense(x)
    np.testing.assert_allclose(l1.asnumpy(), l2.asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(dx1.asnumpy(), dx2.asnumpy(), rtol=1e-4, atol=1e-6)
    for p, a, b in zip(params, dw1, dw2):
        assert np.abs(a.asnumpy()).max() > 0, p.name
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-4, atol=1e-6, err_msg=p.name)

    step = nn.TrainOneStepCell(Loss(cell, target), nn.SGD(params, learning_rate=0.5))
    first = float(step(x).asnumpy())
    for _ in range(20):
        last = float(step(x).asnumpy())
    assert last < 0.8 * first


def test_moe_bf16_and_repr(mode):
    """bf16 activations route in bf16 (with drops at a small capacity) around fp32 experts, and
    the Cell describes itself."""
    cell = MoE(32, 16, num_experts=8, top_k=2, capacity_factor=0.5)
    out = cell(ms.Tensor(np.random.randn(40, 32), ms.bfloat16))
    assert out.shape == (40, 32) and out.dtype == ms.bfloat16
    assert np.isfinite(out.astype(ms.float32).asnumpy()).all()
    assert "num_experts=8, top_k=2" in repr(cell)


class GradCell(nn.Cell):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def construct(self, x):
        return self.fn(x)


def test_moe_dynamic_token_count_graph():
    """GRAPH mode compiled once for an unknown token count (fixed capacity), forward and grads."""
    ms.set_context(mode=ms.GRAPH_MODE)
    cell = MoE(8, 12, num_experts=3, top_k=2, expert_capacity=16)  # >= every token count below
    net = Loss(cell, ms.Tensor(np.zeros((1, 8)), ms.float32))
    dense = Loss(DenseMoE(cell), ms.Tensor(np.zeros((1, 8)), ms.float32))
    params = cell.trainable_params()
    grad = GradCell(ms.value_and_grad(net, grad_position=0, weights=params))
    net.set_inputs(ms.Tensor(shape=[None, 8], dtype=ms.float32))
    grad.set_inputs(ms.Tensor(shape=[None, 8], dtype=ms.float32))
    for tokens in (5, 16, 9):
        np.testing.assert_allclose(net(ms.Tensor(np.ones((tokens, 8)), ms.float32)).asnumpy(),
                                   dense(ms.Tensor(np.ones((tokens, 8)), ms.float32)).asnumpy(), rtol=1e-5)
        x = ms.Tensor(np.random.randn(tokens, 8), ms.float32)
        (loss, (dx, dw)), (want, (want_dx, want_dw)) = grad(x), ms.value_and_grad(
            dense, grad_position=0, weights=params)(x)
        np.testing.assert_allclose(loss.asnumpy(), want.asnumpy(), rtol=1e-5)
        np.testing.assert_allclose(dx.asnumpy(), want_dx.asnumpy(), rtol=1e-4, atol=1e-6)
        for a, b in zip(dw, want_dw):
            np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-4, atol=1e-6)


BAD_INPUTS = {
    "hidden_fits_reshape": (np.zeros((6, 8), np.float32), ValueError, r"MoE: 'x' dimension -1 must equal hidden_size \(16\)"),
    "hidden_not_divisible": (np.zeros((6, 20), np.float32), ValueError, r"MoE: 'x' dimension -1 must equal hidden_size \(16\)"),
    "int_dtype": (np.zeros((6, 16), np.int32), TypeError, r"MoE: 'x' must have dtype"),
}


def test_moe_rejects_wrong_hidden_size(mode):
    """[6, 8] into MoE(16, ...) once came back as 3 tokens of width 16; now every mismatch of the
    last dimension is an error naming the Cell and the argument, and the Cell still works."""
    cell = MoE(16, 32, num_experts=4)
    for case, (x, exc, text) in BAD_INPUTS.items():
        with pytest.raises(exc, match=text):
            cell(ms.Tensor(x))
    assert cell(ms.Tensor(np.random.randn(6, 16), ms.float32)).shape == (6, 16)


QUIET_SCRIPT = """
import mindspore as ms, numpy as np, ms_ops
ms.set_context(mode=ms.GRAPH_MODE)
net = ms_ops.nn.MoE(16, 32, 4)
x = ms.Tensor(np.random.randn(6, 16), ms.float32)
net(x)
print(net(ms.Tensor(np.zeros((0, 16)), ms.float32)).shape)


def loss(x):
    return net(x).sum()


ms.value_and_grad(loss, None, net.trainable_params())(x)
print("done")
"""


def test_moe_graph_compile_is_quiet(tmp_path):
    """Compiling MoE and its gradient, and a call with zero tokens, print no MindSpore warning
    (GLOG_v=2 shows them; the unused routing outputs once made two ANALYZER warnings per
    compile, and the router's ops warn on empty tensors)."""
    script = tmp_path / "moe_quiet.py"
    script.write_text(QUIET_SCRIPT)
    env = dict(os.environ, GLOG_v="2")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and "(0, 16)\ndone" in proc.stdout, proc.stderr[-3000:]
    assert "WARNING" not in proc.stderr, proc.stderr[-3000:]


def test_moe_zero_tokens(mode):
    """No token: an empty output of x's shape and dtype, and zero gradients for every parameter."""
    cell = MoE(16, 32, num_experts=4)
    x = ms.Tensor(np.zeros((2, 0, 16)), ms.float32)
    out = cell(x)
    assert out.shape == (2, 0, 16) and out.dtype == ms.float32
    grads = ms.grad(cell, grad_position=None, weights=cell.trainable_params())(x)
    assert len(grads) == 3
    for p, g in zip(cell.trainable_params(), grads):
        assert g.shape == p.shape
        np.testing.assert_array_equal(g.asnumpy(), 0, err_msg=p.name)
