"""moe_finalize_routing with an index that names a slot more than once (CANN's own test cases do):
the forward reads the slot for each pair, the gradient sums over them in ascending pair order,
bitwise reproducibly and whatever the kernel's block count."""
import mindspore as ms
import numpy as np
import pytest

import ms_ops
from ms_ops.reference import moe_routing as ref
from tests.test_moe_routing import Fn, column_major
from tests.utils import assert_close, representable, rounding, to_ms, to_np

DTYPES = ["fp32", "fp16", "bf16"]

# (R, K, expanded_x shape without H, H, drop_pad_mode, bias experts (0: none), with scales, with x1)
CASES = {
    "m2_hot_slot": (37, 3, (60,), 70, 2, 4, True, True),
    "m3_drop_repeats": (29, 2, (5, 6), 48, 3, 5, True, False),
    "m0_colmajor": (23, 4, (92,), 33, 0, 0, True, False),
    "m1_colmajor_drop": (19, 2, (3, 4), 40, 1, 3, True, True),
    "m2_no_scales": (31, 1, (12,), 24, 2, 2, False, False),
}


def repeated_index(rows, top_k, expanded_shape, mode):
    """Row-major [R*K] slots in [0, N) (dropless: also below R*K) or [-1, E*C) (drop/pad), with a
    slot that a sixth of the pairs share, slots no pair names, and (drop/pad) dropped pairs."""
    slots = int(np.prod(expanded_shape))
    pairs = rows * top_k
    drop = mode in (1, 3)
    high = slots if drop else min(slots, pairs)
    idx = np.random.randint(-1 if drop else 0, high, pairs)
    idx[np.random.choice(pairs, max(2, pairs // 6), replace=False)] = high // 2
    return idx.astype(np.int32)


def case_inputs(case, dtype):
    rows, top_k, ex_shape, hidden, mode, experts, has_scales, has_x1 = case
    idx = repeated_index(rows, top_k, ex_shape, mode)
    opt = {
        "x1": representable((rows, hidden), dtype) if has_x1 else None,
        "bias": representable((experts, hidden), dtype) if experts else None,
        "scales": representable((rows, top_k), dtype) if has_scales else None,
        "expert_idx": np.random.randint(0, experts, (rows, top_k)).astype(np.int32) if experts else None,
    }
    kernel_idx = column_major(idx, rows, top_k) if mode in (0, 1) else idx
    return representable((*ex_shape, hidden), dtype), idx, kernel_idx, opt


class Combine(ms.nn.Cell):
    """moe_finalize_routing of (expanded_x, index, x1, bias, scales, expert_idx), None-free."""

    def __init__(self, mode, opt):
        super().__init__()
        self.mode = mode
        self.has = {n: opt[n] is not None for n in ("x1", "bias", "scales")}

    def construct(self, ex, idx, x1, bias, scales, expert_idx):
        return ms_ops.moe_finalize_routing(
            ex, idx, x1=x1 if self.has["x1"] else None, bias=bias if self.has["bias"] else None,
            scales=scales if self.has["scales"] else None,
            expert_idx=expert_idx if self.has["bias"] else None, drop_pad_mode=self.mode)


def run_with_grads(case, dtype, expanded, kernel_idx, opt, sens):
    """The forward and its gradients w.r.t. expanded_x, x1, bias, scales (zeros stand in for the
    absent ones, which the Cell does not pass)."""
    rows, top_k, _, hidden, mode, experts, _, _ = case
    fill = {"x1": np.zeros((rows, hidden)), "bias": np.zeros((1, hidden)), "scales": np.zeros((rows, top_k))}
    floats = [to_ms(expanded, dtype)] + [to_ms(opt[n] if opt[n] is not None else fill[n], dtype)
                                         for n in ("x1", "bias", "scales")]
    expert = ms.Tensor(opt["expert_idx"] if experts else np.zeros((rows, top_k), np.int32))
    net = Combine(mode, opt)
    sens_t = ms.Tensor(sens, ms.float32)

    def loss(ex, x1, bias, scales, idx, expert_idx):
        return (net(ex, idx, x1, bias, scales, expert_idx).astype(ms.float32) * sens_t).sum()

    args = (*floats, ms.Tensor(kernel_idx), expert)
    out = Fn(net)(floats[0], args[4], *floats[1:], expert)
    grads = Fn(ms.grad(loss, grad_position=(0, 1, 2, 3)))(*args)
    return out, grads


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(CASES))
def test_repeated_slots_forward_and_grads(mode, dtype, case):
    """Forward and every gradient against float64, with repeats, in all four layouts."""
    spec = CASES[case]
    expanded, _, kernel_idx, opt = case_inputs(spec, dtype)
    drop_mode = spec[4]
    np_kw = dict(opt, drop_pad_mode=drop_mode)
    want = ref.moe_finalize_routing(expanded, kernel_idx, **np_kw)
    naive = ref.moe_finalize_routing(expanded, kernel_idx, rnd=rounding(dtype), **np_kw)
    sens = representable(want.shape, dtype)
    out, grads = run_with_grads(spec, dtype, expanded, kernel_idx, opt, sens)
    assert_close("out", to_np(out), want, naive, dtype)

    grad_kw = dict(bias=opt["bias"], scales=opt["scales"], expert_idx=opt["expert_idx"], drop_pad_mode=drop_mode)
    want_g = ref.moe_finalize_routing_grad(sens, expanded, kernel_idx, **grad_kw)
    naive_g = ref.moe_finalize_routing_grad(sens, expanded, kernel_idx, rnd=rounding(dtype), **grad_kw)
    assert_close("d expanded_x", to_np(grads[0]), want_g["grad_expanded_x"], naive_g["grad_expanded_x"], dtype)
    if opt["x1"] is not None:
        assert_close("d x1", to_np(grads[1]), sens, sens, dtype)
    for i, name in ((2, "bias"), (3, "scales")):
        if opt[name] is not None:
            key = f"grad_{name}"
            assert_close(f"d {name}", to_np(grads[i]), want_g[key], naive_g[key], dtype)


def test_reference_sums_repeats():
    """The oracle itself: a slot named by pairs 0 and 2 gets s0*dy0 + s2*dy2 (not the last one)."""
    dy = np.array([[1.0], [10.0]])
    got = ref.moe_finalize_routing_grad(dy, np.zeros((4, 1)), np.array([1, 3, 1, 0]),
                                        scales=np.array([[2.0, 3.0], [5.0, 7.0]]), drop_pad_mode=2)
    np.testing.assert_array_equal(got["grad_expanded_x"][:, 0], [70.0, 2.0 + 50.0, 0.0, 3.0])


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_repeated_slots_bitwise_rerun(mode, dtype):
    """Reruns with repeats give bitwise identical outputs and gradients."""
    spec = CASES["m3_drop_repeats"]
    expanded, _, kernel_idx, opt = case_inputs(spec, dtype)
    sens = representable((spec[0], spec[3]), dtype)
    runs = [run_with_grads(spec, dtype, expanded, kernel_idx, opt, sens) for _ in range(2)]
    first, second = ([to_np(runs[i][0])] + [to_np(g) for g in runs[i][1]] for i in range(2))
    for a, b in zip(first, second):
        assert np.array_equal(a, b)


def test_repeated_slots_independent_of_block_count(mode):
    """The same pairs with more unused slots after them (so more blocks, other slot ranges per
    block) give bitwise the same gradient rows: the summation order is the pairs' alone."""
    rows, top_k, hidden = 6, 2, 40
    idx = np.array([3, 0, 3, 7, 3, 1, 9, 0, 11, 3, 2, 0], np.int32)
    gy, scales = representable((rows, hidden), "bf16"), representable((rows, top_k), "bf16")
    results = []
    for slots in (12, 400):
        expanded = representable((slots, hidden), "bf16")
        expanded[:12] = 0.5
        results.append(Fn(ms_ops.moe_finalize_routing_grad)(
            to_ms(gy, "bf16"), ms.Tensor(idx), to_ms(expanded, "bf16"), to_ms(scales, "bf16")))
    small, large = ([to_np(t) for t in r] for r in results)
    assert np.array_equal(small[0], large[0][:12])
    assert not large[0][12:].any()
    assert np.array_equal(small[1], large[1])
    want = ref.moe_finalize_routing_grad(gy, np.full((12, hidden), 0.5), idx, scales=scales, drop_pad_mode=2)
    assert_close("grad_expanded_x", small[0], want["grad_expanded_x"],
                 ref.moe_finalize_routing_grad(gy, np.full((12, hidden), 0.5), idx, scales=scales,
                                               drop_pad_mode=2, rnd=rounding("bf16"))["grad_expanded_x"], "bf16")


def test_repeated_slots_many_windows():
    """131072 drop/pad slots: each block scans its slot range in several windows; repeats and
    empty slots in all of them."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    rows, top_k, experts, capacity, hidden = 64, 4, 64, 2048, 8
    idx = np.random.randint(-1, experts * capacity, rows * top_k).astype(np.int32)
    idx[::7] = idx[5]
    idx[1::11] = experts * capacity - 1
    gy, scales = np.random.randn(rows, hidden), np.random.randn(rows, top_k)
    expanded = np.random.randn(experts, capacity, hidden)
    got = ms_ops.moe_finalize_routing_grad(
        ms.Tensor(gy, ms.float32), ms.Tensor(idx), ms.Tensor(expanded, ms.float32), ms.Tensor(scales, ms.float32),
        drop_pad_mode=1)
    want = ref.moe_finalize_routing_grad(gy, expanded, idx, scales=scales, drop_pad_mode=3)
    naive = ref.moe_finalize_routing_grad(gy, expanded, idx, scales=scales, drop_pad_mode=3, rnd=rounding("fp32"))
    assert_close("grad_expanded_x", to_np(got[0]), want["grad_expanded_x"], naive["grad_expanded_x"], "fp32")
    assert_close("grad_scales", to_np(got[1]), want["grad_scales"], naive["grad_scales"], "fp32")
