"""The public gradient functions moe_init_routing_grad / moe_finalize_routing_grad (CANN's V2Grad
ops): values against float64, and bitwise the same as ms.grad through the forward ops (they run
the same kernels)."""
import mindspore as ms
import numpy as np
import pytest

import ms_ops
from ms_ops.reference import moe_routing as ref
from tests.test_moe_routing import Fn, routing
from tests.utils import MS_DTYPES, assert_close, representable, rounding, to_ms, to_np

DTYPES = ["fp32", "fp16", "bf16"]

# (R, K, E, H, drop_pad_mode, expert_capacity, active_num)
INIT_GRAD_CASES = {
    "dropless": (29, 3, 5, 70, 0, 0, 0),
    "active": (23, 4, 6, 33, 0, 0, 40),
    "drop": (31, 2, 4, 48, 1, 5, 0),
    "R1_K1": (1, 1, 1, 17, 0, 0, 0),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(INIT_GRAD_CASES))
def test_init_routing_grad(mode, dtype, case):
    """grad_x against float64, and bitwise equal to ms.grad through moe_init_routing."""
    rows, top_k, experts, hidden, drop_mode, capacity, active = INIT_GRAD_CASES[case]
    kw = dict(drop_pad_mode=drop_mode, expert_capacity=capacity, expert_num=experts, active_num=active)
    x, idx = representable((rows, hidden), dtype), routing(rows, top_k, experts)
    expanded, row_idx, _, _ = ref.moe_init_routing(x, idx, **kw)
    grad_expanded = representable(expanded.shape, dtype)

    def grad_fn(g, r):
        return ms_ops.moe_init_routing_grad(g, r, top_k, drop_pad_mode=drop_mode, active_num=active)

    got = Fn(grad_fn)(to_ms(grad_expanded, dtype), ms.Tensor(row_idx))
    assert got.dtype == MS_DTYPES[dtype]
    grad_kw = dict(top_k=top_k, drop_pad_mode=drop_mode, active_num=active)
    assert_close("grad_x", to_np(got), ref.moe_init_routing_grad(grad_expanded, row_idx, **grad_kw),
                 ref.moe_init_routing_grad(grad_expanded, row_idx, rnd=rounding(dtype), **grad_kw), dtype)

    sens = ms.Tensor(grad_expanded, ms.float32)

    def loss(xt, it):
        return (ms_ops.moe_init_routing(xt, it, **kw)[0].astype(ms.float32) * sens).sum()

    through_forward = Fn(ms.grad(loss))(to_ms(x, dtype), ms.Tensor(idx))
    assert np.array_equal(to_np(through_forward), to_np(got))


def test_init_routing_grad_positional_attributes(mode):
    """CANN's order: top_k, drop_pad_mode, active_num may all be positional."""
    grad = np.random.randn(4, 8)  # active_num=4 of R*K=6 rows
    row_idx = np.array([5, 0, 3, 1, 2, 4], np.int32)
    got = Fn(ms_ops.moe_init_routing_grad)(ms.Tensor(grad, ms.float32), ms.Tensor(row_idx), 2, 0, 4)
    want = ref.moe_init_routing_grad(grad, row_idx, top_k=2, active_num=4)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)


# (R, K, E, H, drop_pad_mode, expert_capacity, active_num, with expanded_x, with scales, with bias)
FIN_GRAD_CASES = {
    "dropless_scales_bias": (33, 3, 5, 70, 0, 0, 0, True, True, True),
    "drop_scales_bias": (41, 2, 4, 48, 1, 5, 0, True, True, True),
    "active_scales": (19, 4, 5, 40, 0, 0, 50, True, True, False),
    "no_expanded_x_bias": (27, 1, 4, 33, 0, 0, 0, False, False, True),
    "drop_no_expanded_x": (25, 1, 3, 24, 1, 4, 0, False, False, False),
    "active_no_expanded_x": (21, 1, 3, 16, 0, 0, 12, False, False, False),
}


def finalize_grad_inputs(case, dtype):
    rows, top_k, experts, hidden, drop_mode, capacity, active, has_ex, has_scales, has_bias = case
    idx = routing(rows, top_k, experts)
    init = ref.moe_init_routing(np.zeros((rows, hidden)), idx, drop_pad_mode=drop_mode, expert_num=experts,
                                expert_capacity=capacity, active_num=active)
    arrays = {
        "grad_y": representable((rows, hidden), dtype),
        "expanded_row_idx": init[1],
        "expanded_x": representable(init[0].shape, dtype) if has_ex else None,
        "scales": representable((rows, top_k), dtype) if has_scales else None,
        "expert_idx": idx if has_bias else None,
        "bias": representable((experts, hidden), dtype) if has_bias else None,
    }
    attrs = dict(drop_pad_mode=drop_mode, active_num=active,
                 expert_num=experts if drop_mode else 0, expert_capacity=capacity)
    return arrays, attrs, init[0].shape


def to_tensors(arrays, dtype):
    return {k: None if v is None else (ms.Tensor(v) if v.dtype == np.int32 else to_ms(v, dtype))
            for k, v in arrays.items()}


class FinalizeGrad(ms.nn.Cell):
    """moe_finalize_routing_grad of the six tensors, the absent ones given as None."""

    def __init__(self, present, attrs):
        super().__init__()
        self.has_ex, self.has_scales, self.has_expert, self.has_bias = present
        self.drop_pad_mode = attrs["drop_pad_mode"]
        self.active_num = attrs["active_num"]
        self.expert_num = attrs["expert_num"]
        self.expert_capacity = attrs["expert_capacity"]

    def construct(self, grad_y, row_idx, expanded_x, scales, expert_idx, bias):
        return ms_ops.moe_finalize_routing_grad(
            grad_y, row_idx, expanded_x if self.has_ex else None, scales if self.has_scales else None,
            expert_idx if self.has_expert else None, bias if self.has_bias else None,
            drop_pad_mode=self.drop_pad_mode, active_num=self.active_num, expert_num=self.expert_num,
            expert_capacity=self.expert_capacity, return_grad_bias=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(FIN_GRAD_CASES))
def test_finalize_routing_grad(mode, dtype, case):
    """All three gradients against float64; absent inputs give None; expanded_x may be absent
    without scales (its shape then comes from the attributes)."""
    arrays, attrs, expanded_shape = finalize_grad_inputs(FIN_GRAD_CASES[case], dtype)
    tensors = to_tensors(arrays, dtype)
    names = ("expanded_x", "scales", "expert_idx", "bias")
    present = tuple(arrays[n] is not None for n in names)
    dummy = ms.Tensor(np.zeros((1,), np.float32))
    args = [tensors["grad_y"], tensors["expanded_row_idx"]] + [dummy if t is None else t
                                                                for t in (tensors[n] for n in names)]
    got_ex, got_scales, got_bias = FinalizeGrad(present, attrs)(*args)

    expanded = arrays["expanded_x"] if arrays["expanded_x"] is not None else np.zeros(expanded_shape)
    kw = dict(scales=arrays["scales"], bias=arrays["bias"], expert_idx=arrays["expert_idx"],
              drop_pad_mode=2 + attrs["drop_pad_mode"])
    want = ref.moe_finalize_routing_grad(arrays["grad_y"], expanded, arrays["expanded_row_idx"], **kw)
    naive = ref.moe_finalize_routing_grad(arrays["grad_y"], expanded, arrays["expanded_row_idx"],
                                          rnd=rounding(dtype), **kw)
    assert got_ex.dtype == MS_DTYPES[dtype]
    assert_close("grad_expanded_x", to_np(got_ex), want["grad_expanded_x"], naive["grad_expanded_x"], dtype)
    for name, got in (("scales", got_scales), ("bias", got_bias)):
        if arrays[name] is None:
            assert got is None
        else:
            assert_close(f"grad_{name}", to_np(got), want[f"grad_{name}"], naive[f"grad_{name}"], dtype)


@pytest.mark.parametrize("case", ["dropless_scales_bias", "drop_scales_bias", "active_scales"])
def test_finalize_routing_grad_matches_autodiff(mode, case):
    """Bitwise the same as ms.grad through moe_finalize_routing in the matching mode (2 or 3)."""
    spec = FIN_GRAD_CASES[case][:-1] + (True,)  # with bias: its gradient is compared too
    arrays, attrs, _ = finalize_grad_inputs(spec, "bf16")
    t = to_tensors(arrays, "bf16")
    sens = ms.Tensor(arrays["grad_y"], ms.float32)
    forward_mode = 2 + attrs["drop_pad_mode"]

    def loss(ex, scales, bias, row_idx, expert_idx):
        out = ms_ops.moe_finalize_routing(ex, row_idx, scales=scales, bias=bias, expert_idx=expert_idx,
                                          drop_pad_mode=forward_mode)
        return (out.astype(ms.float32) * sens).sum()

    autodiff = Fn(ms.grad(loss, grad_position=(0, 1, 2)))(t["expanded_x"], t["scales"], t["bias"],
                                                          t["expanded_row_idx"], t["expert_idx"])

    def public(grad_y, row_idx, ex, scales, expert_idx, bias):
        return ms_ops.moe_finalize_routing_grad(grad_y, row_idx, ex, scales, expert_idx, bias,
                                                drop_pad_mode=attrs["drop_pad_mode"], active_num=attrs["active_num"],
                                                expert_num=attrs["expert_num"],
                                                expert_capacity=attrs["expert_capacity"], return_grad_bias=True)

    got = Fn(public)(t["grad_y"], t["expanded_row_idx"], t["expanded_x"], t["scales"], t["expert_idx"], t["bias"])
    for a, b in zip(autodiff, got):
        assert np.array_equal(to_np(a), to_np(b))


def test_finalize_routing_grad_default_outputs(mode):
    """CANN's two outputs by default; positional optional tensors in CANN's order."""
    grad_y, ex, scales = np.random.randn(4, 8), np.random.randn(8, 8), np.random.rand(4, 2)
    row_idx = np.array([3, 0, 6, 1, 2, 7, 5, 4], np.int32)
    got = Fn(ms_ops.moe_finalize_routing_grad)(ms.Tensor(grad_y, ms.float32), ms.Tensor(row_idx),
                                               ms.Tensor(ex, ms.float32), ms.Tensor(scales, ms.float32))
    assert len(got) == 2
    want = ref.moe_finalize_routing_grad(grad_y, ex, row_idx, scales=scales, drop_pad_mode=2)
    np.testing.assert_allclose(got[0].asnumpy(), want["grad_expanded_x"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got[1].asnumpy(), want["grad_scales"], rtol=1e-5, atol=1e-5)
