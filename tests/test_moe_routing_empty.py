"""No tokens (R = 0): every MoE routing op, both gradient functions and ms.grad through the ops
return correctly shaped results (counts and padded slots zeros), the same on every run, and
print nothing."""
import mindspore as ms
import numpy as np
import pytest

import ms_ops
from tests.test_moe_routing import Fn
from tests.utils import MS_DTYPES, to_ms, to_np

E, C, H, K = 3, 2, 8, 2


def empty(shape, dtype="fp32"):
    return to_ms(np.zeros(shape), dtype)


def no_tokens():
    return empty((0, H)), ms.Tensor(np.zeros((0, K), np.int32))


def check(capfd, outputs, want):
    """Shapes and values of `outputs` against `want` (arrays), nothing printed, and a second run
    bitwise the same."""
    got = [tuple(to_np(t) for t in run()) for run in outputs]
    for a, b in zip(*got):
        assert np.array_equal(a, b)
    assert [a.shape for a in got[0]] == [w.shape for w in want]
    for a, w in zip(got[0], want):
        np.testing.assert_array_equal(a, w)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def twice(fn, *args):
    def run():
        res = Fn(fn)(*args)
        return res if isinstance(res, tuple) else (res,)
    return [run, run]


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_init_routing_no_tokens(mode, dtype, capfd):
    x, idx = empty((0, H), dtype), ms.Tensor(np.zeros((0, K), np.int32))

    def dropless(xt, it):
        return ms_ops.moe_init_routing(xt, it, expert_num=E, expert_tokens_count_or_cumsum_flag=1)

    def drop_pad(xt, it):
        return ms_ops.moe_init_routing(xt, it, expert_num=E, expert_capacity=C, drop_pad_mode=1,
                                       expert_tokens_before_capacity_flag=True)

    none = np.zeros((0,), np.int32)
    check(capfd, twice(dropless, x, idx), [np.zeros((0, H)), none, np.zeros(E, np.int32), none])
    check(capfd, twice(drop_pad, x, idx), [np.zeros((E, C, H)), none, none, np.zeros(E, np.int32)])


@pytest.mark.parametrize("drop_pad_mode", [0, 1, 2, 3])
def test_finalize_routing_no_tokens(mode, drop_pad_mode, capfd):
    expanded = ms.Tensor(np.ones((E, C, H) if drop_pad_mode % 2 else (4, H), np.float32))
    row_idx, x1, (_, expert_idx) = ms.Tensor(np.zeros((0,), np.int32)), empty((0, H)), no_tokens()
    scales, bias = empty((0, K)), ms.Tensor(np.ones((E, H), np.float32))

    def combine(ex, r, x1t, s, b, e):
        return ms_ops.moe_finalize_routing(ex, r, x1=x1t, scales=s, bias=b, expert_idx=e, drop_pad_mode=drop_pad_mode)

    check(capfd, twice(combine, expanded, row_idx, x1, scales, bias, expert_idx), [np.zeros((0, H))])


@pytest.mark.parametrize("drop_pad_mode", [0, 1])
def test_init_routing_grad_no_tokens(mode, drop_pad_mode, capfd):
    grad = ms.Tensor(np.ones((E, C, H) if drop_pad_mode else (0, H), np.float32))

    def grad_fn(g, r):
        return ms_ops.moe_init_routing_grad(g, r, K, drop_pad_mode=drop_pad_mode)

    check(capfd, twice(grad_fn, grad, ms.Tensor(np.zeros((0,), np.int32))), [np.zeros((0, H))])


@pytest.mark.parametrize("drop_pad_mode", [0, 1])
def test_finalize_routing_grad_no_tokens(mode, drop_pad_mode, capfd):
    """grad_expanded_x is all zeros ([E, C, H] in drop/pad mode), grad_bias zeros."""
    drop = drop_pad_mode == 1
    expanded = ms.Tensor(np.ones((E, C, H) if drop else (0, H), np.float32))
    grad_y, expert_idx = no_tokens()
    row_idx, scales = ms.Tensor(np.zeros((0,), np.int32)), empty((0, K))
    bias = ms.Tensor(np.ones((E, H), np.float32))

    def grad_fn(gy, r, ex, s, e, b):
        return ms_ops.moe_finalize_routing_grad(gy, r, ex, s, e, b, drop_pad_mode=drop_pad_mode,
                                                return_grad_bias=True)

    want = [np.zeros((E, C, H) if drop else (0, H)), np.zeros((0, K)), np.zeros((E, H))]
    check(capfd, twice(grad_fn, grad_y, row_idx, expanded, scales, expert_idx, bias), want)

    def without_expanded_x(gy, r):
        return ms_ops.moe_finalize_routing_grad(gy, r, drop_pad_mode=drop_pad_mode, expert_num=E,
                                                expert_capacity=C)[0]

    check(capfd, twice(without_expanded_x, empty((0, H)), row_idx), [want[0]])


@pytest.mark.parametrize("drop_pad_mode", [0, 1])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_grad_through_both_ops_no_tokens(mode, drop_pad_mode, dtype, capfd):
    """ms.grad of dispatch + combine with bias and scales: d x [0, H], d scales [0, K], d bias 0."""
    x, expert_idx = empty((0, H), dtype), ms.Tensor(np.zeros((0, K), np.int32))
    scales, bias = empty((0, K), dtype), to_ms(np.ones((E, H)), dtype)

    def loss(xt, s, b, e):
        expanded, row_idx, _, _ = ms_ops.moe_init_routing(xt, e, expert_num=E, expert_capacity=C,
                                                          drop_pad_mode=drop_pad_mode)
        out = ms_ops.moe_finalize_routing(expanded, row_idx, scales=s, bias=b, expert_idx=e,
                                          drop_pad_mode=2 + drop_pad_mode)
        return out.astype(ms.float32).sum()

    grad = ms.grad(loss, grad_position=(0, 1, 2))
    check(capfd, twice(grad, x, scales, bias, expert_idx), [np.zeros((0, H)), np.zeros((0, K)), np.zeros((E, H))])
    assert Fn(grad)(x, scales, bias, expert_idx)[2].dtype == MS_DTYPES[dtype]


class DropCombine(ms.nn.Cell):
    def construct(self, x, expert_idx, scales, bias):
        expanded, row_idx, _, _ = ms_ops.moe_init_routing(x, expert_idx, expert_num=E, expert_capacity=C,
                                                          drop_pad_mode=1)
        return ms_ops.moe_finalize_routing(expanded, row_idx, scales=scales, bias=bias, expert_idx=expert_idx,
                                           drop_pad_mode=3)


def test_no_tokens_in_a_dynamic_shape_graph(capfd):
    """A GRAPH net compiled once for unknown R runs R = 5, 0, 3, forward and backward."""
    ms.set_context(mode=ms.GRAPH_MODE)
    net = DropCombine()
    net.set_inputs(ms.Tensor(shape=[None, H], dtype=ms.float32), ms.Tensor(shape=[None, K], dtype=ms.int32),
                   ms.Tensor(shape=[None, K], dtype=ms.float32), ms.Tensor(shape=[E, H], dtype=ms.float32))
    grad = ms.grad(net, grad_position=(0, 2, 3))
    for rows in (5, 0, 3):
        args = (ms.Tensor(np.random.randn(rows, H), ms.float32),
                ms.Tensor(np.random.randint(0, E, (rows, K)).astype(np.int32)),
                ms.Tensor(np.random.rand(rows, K), ms.float32), ms.Tensor(np.random.randn(E, H), ms.float32))
        assert net(*args).shape == (rows, H)
        dx, ds, db = grad(*args)
        assert (dx.shape, ds.shape, db.shape) == ((rows, H), (rows, K), (E, H))
        assert rows > 0 or not db.asnumpy().any()
    out, err = capfd.readouterr()
    assert out == "" and err == ""
