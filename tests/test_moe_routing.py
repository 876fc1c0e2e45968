"""MoE routing ops (moe_init_routing / moe_finalize_routing) and their gradients, in both modes,
against the float64 reference in ms_ops.reference.moe_routing."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import nn, ops

import ms_ops
from ms_ops.reference import moe_routing as ref
from tests.utils import Fn, MS_DTYPES, assert_close, representable, rounding, to_ms, to_np

DTYPES = ["fp32", "fp16", "bf16"]


def routing(rows, top_k, experts, zero_experts=()):
    """Random expert choices [R, K] int32 (distinct per token), never choosing ``zero_experts``."""
    allowed = np.array([e for e in range(experts) if e not in zero_experts])
    k = min(top_k, len(allowed))
    idx = np.stack([np.random.choice(allowed, k, replace=False) for _ in range(rows)])
    if k < top_k:  # fewer allowed experts than K: repeat choices (legal: a pair per (r, k))
        idx = np.concatenate([idx, idx[:, : top_k - k]], axis=1)
    return idx.astype(np.int32)


# (R, K, E, H, drop_pad_mode, capacity, active_num, counts flag, zero experts)
INIT_CASES = {
    "R1_K1_E1_H123": (1, 1, 1, 123, 0, 0, 0, 2, ()),
    "dropless_cumsum_empty_experts": (37, 3, 9, 64, 0, 0, 0, 1, (2, 5)),
    "dropless_active": (29, 4, 6, 123, 0, 0, 50, 2, ()),
    "drop_small_capacity": (41, 2, 5, 96, 1, 3, 0, 0, (4,)),
    "drop_large_capacity": (23, 2, 4, 123, 1, 23, 0, 0, ()),
    "no_expert_num": (19, 2, 7, 40, 0, 0, 0, 0, ()),
}
# The full grid (--full): LLM-like sizes and rows longer than one UB chunk.
INIT_CASES_FULL = {
    "R1025_K8_E64_H2048": (1025, 8, 64, 2048, 0, 0, 0, 1, (3,)),
    "R97_K4_E7_H7001_drop": (97, 4, 7, 7001, 1, 40, 0, 0, ()),
}


def init_kwargs(case):
    rows, top_k, experts, hidden, mode, cap, active, flag, _ = case
    kw = dict(drop_pad_mode=mode, active_num=active, expert_capacity=cap,
              expert_tokens_count_or_cumsum_flag=flag if mode == 0 else 0,
              expert_tokens_before_capacity_flag=mode == 1)
    kw["expert_num"] = 0 if (mode == 0 and flag == 0) else experts
    return kw


def grid(cases, full_cases):
    return [*cases, *(pytest.param(c, marks=pytest.mark.full) for c in full_cases)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", grid(INIT_CASES, INIT_CASES_FULL))
def test_init_routing_forward_and_grad(mode, dtype, case):
    """moe_init_routing outputs are exact; d x equals the reference gather-sum."""
    spec = INIT_CASES.get(case) or INIT_CASES_FULL[case]
    rows, top_k, experts, hidden, *_ , zero = spec
    kw = init_kwargs(spec)
    x = representable((rows, hidden), dtype)
    idx = routing(rows, top_k, experts, zero)
    want = ref.moe_init_routing(x, idx, **kw)

    def forward(xt, it):
        return ms_ops.moe_init_routing(xt, it, **kw)

    got = Fn(forward)(to_ms(x, dtype), ms.Tensor(idx))
    assert got[0].dtype == MS_DTYPES[dtype]
    np.testing.assert_array_equal(to_np(got[0]), want[0])
    for g, w in zip(got[1:], want[1:]):
        np.testing.assert_array_equal(g.asnumpy(), w)

    sens = representable(want[0].shape, dtype)
    sens_t = ms.Tensor(sens, ms.float32)  # bf16 reductions are missing on CPU: reduce in fp32

    def loss(xt, it):
        return (ms_ops.moe_init_routing(xt, it, **kw)[0].astype(ms.float32) * sens_t).sum()

    dx = Fn(ms.grad(loss))(to_ms(x, dtype), ms.Tensor(idx))
    ref_dx = ref.moe_init_routing_grad(sens, want[1], top_k=top_k, drop_pad_mode=kw["drop_pad_mode"],
                                       active_num=kw["active_num"])
    naive_dx = ref.moe_init_routing_grad(sens, want[1], top_k=top_k,
                                         drop_pad_mode=kw["drop_pad_mode"],
                                         active_num=kw["active_num"], rnd=rounding(dtype))
    assert_close("d x", to_np(dx), ref_dx, naive_dx, dtype)


def column_major(row_major_idx, rows, top_k):
    """The same (r, k) -> slot map in the column-major layout of drop_pad_mode 0/1."""
    return row_major_idx.reshape(rows, top_k).T.reshape(-1).copy()


# (R, K, E, H, drop_pad_mode, capacity, active_num, with x1, x2, bias, scales)
FIN_CASES = {
    "m2_all": (33, 3, 5, 123, 2, 0, 0, True, True, True, True),
    "m3_drop_bias_scales": (41, 2, 4, 64, 3, 5, 0, False, False, True, True),
    "m0_colmajor_x1": (17, 2, 3, 40, 0, 0, 0, True, False, False, True),
    "m1_colmajor_drop": (25, 2, 6, 96, 1, 4, 0, True, True, True, True),
    "m2_active_trunc": (19, 4, 5, 123, 2, 0, 50, False, False, True, True),
    "R1_K1_E1_noscales": (1, 1, 1, 123, 2, 0, 0, True, False, True, False),
    "m2_bare": (13, 1, 3, 32, 2, 0, 0, False, False, False, False),
}
FIN_CASES_FULL = {
    "m2_R513_K8_E64_H2048": (513, 8, 64, 2048, 2, 0, 0, True, False, True, True),
    "m3_R97_K4_E7_H7001": (97, 4, 7, 7001, 3, 30, 0, True, True, True, True),
}


def finalize_inputs(case, dtype, fp32_scales=False):
    rows, top_k, experts, hidden, mode, cap, active, has_x1, has_x2, has_bias, has_scales = case
    idx = routing(rows, top_k, experts)
    x = representable((rows, hidden), dtype)
    drop = mode in (1, 3)
    init = ref.moe_init_routing(x, idx, drop_pad_mode=1 if drop else 0, expert_capacity=cap,
                                expert_num=experts, active_num=active)
    expanded = representable(init[0].shape, dtype)
    row_idx = init[1] if mode in (2, 3) else column_major(init[1], rows, top_k)
    opt = {
        "x1": representable((rows, hidden), dtype) if has_x1 else None,
        "x2": representable((rows, hidden), dtype) if has_x2 else None,
        "bias": representable((experts, hidden), dtype) if has_bias else None,
        "scales": representable((rows, top_k), "fp32" if fp32_scales else dtype) if has_scales else None,
        "expert_idx": idx if has_bias else None,
    }
    return expanded, row_idx, opt, mode


class Finalize(nn.Cell):
    """moe_finalize_routing as a function of its float tensors (expanded_x, then the optional
    inputs present, in the order x1, x2, bias, scales); the index tensors are fixed."""

    def __init__(self, row_idx, expert_idx, mode, names):
        super().__init__()
        self.row_idx = ms.Tensor(row_idx.astype(np.int32))
        self.expert_idx = None if expert_idx is None else ms.Tensor(expert_idx)
        self.mode = mode
        self.p_x1, self.p_x2, self.p_bias, self.p_scales = (
            names.index(n) if n in names else -1 for n in ("x1", "x2", "bias", "scales"))

    def construct(self, ex, *floats):
        x1 = floats[self.p_x1] if self.p_x1 >= 0 else None
        x2 = floats[self.p_x2] if self.p_x2 >= 0 else None
        bias = floats[self.p_bias] if self.p_bias >= 0 else None
        scales = floats[self.p_scales] if self.p_scales >= 0 else None
        return ms_ops.moe_finalize_routing(ex, self.row_idx, x1=x1, x2=x2, bias=bias, scales=scales,
                                           expert_idx=self.expert_idx, drop_pad_mode=self.mode)


def finalize_call(expanded, row_idx, opt, mode, dtype, fp32_scales=False):
    """(Cell over the float tensors, its float tensor arguments, their names)."""
    names = [n for n in ("x1", "x2", "bias", "scales") if opt[n] is not None]
    args = [to_ms(expanded, dtype)]
    args += [to_ms(opt[n], "fp32" if (n == "scales" and fp32_scales) else dtype) for n in names]
    return Finalize(row_idx, opt["expert_idx"], mode, names), args, names


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", grid(FIN_CASES, FIN_CASES_FULL))
def test_finalize_routing_forward_and_grad(mode, dtype, case):
    """moe_finalize_routing and d expanded_x / d x1 / d x2 / d bias / d scales vs float64."""
    spec = FIN_CASES.get(case) or FIN_CASES_FULL[case]
    expanded, row_idx, opt, drop_mode = finalize_inputs(spec, dtype)
    fn, args, names = finalize_call(expanded, row_idx, opt, drop_mode, dtype)
    np_kw = dict(opt, drop_pad_mode=drop_mode)
    out = fn(*args)
    want = ref.moe_finalize_routing(expanded, row_idx, **np_kw)
    naive = ref.moe_finalize_routing(expanded, row_idx, rnd=rounding(dtype), **np_kw)
    assert out.dtype == args[0].dtype
    assert_close("out", to_np(out), want, naive, dtype)

    sens = representable(want.shape, dtype)
    sens_t = ms.Tensor(sens, ms.float32)  # bf16 reductions are missing on CPU: reduce in fp32

    def loss(*a):
        return (fn(*a).astype(ms.float32) * sens_t).sum()

    grads = Fn(ms.grad(loss, grad_position=tuple(range(len(args)))))(*args)
    grads = grads if isinstance(grads, tuple) else (grads,)
    np_grad_kw = {k: opt[k] for k in ("bias", "scales", "expert_idx")}
    want_g = ref.moe_finalize_routing_grad(sens, expanded, row_idx, drop_pad_mode=drop_mode, **np_grad_kw)
    naive_g = ref.moe_finalize_routing_grad(sens, expanded, row_idx, drop_pad_mode=drop_mode,
                                            rnd=rounding(dtype), **np_grad_kw)
    for name, g in zip(["expanded_x", *names], grads):
        key = f"grad_{name}"
        assert_close(f"d {name}", to_np(g), want_g[key], naive_g[key], dtype)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_finalize_routing_fp32_scales(mode, dtype):
    """Low-precision data with float32 combine weights (CANN's mixed-precision case)."""
    case = FIN_CASES["m3_drop_bias_scales"]
    expanded, row_idx, opt, drop_mode = finalize_inputs(case, dtype, fp32_scales=True)
    fn, args, names = finalize_call(expanded, row_idx, opt, drop_mode, dtype, fp32_scales=True)
    out = fn(*args)
    np_kw = dict(opt, drop_pad_mode=drop_mode)
    want = ref.moe_finalize_routing(expanded, row_idx, **np_kw)
    naive = ref.moe_finalize_routing(expanded, row_idx, rnd=rounding(dtype), **np_kw)
    assert_close("out", to_np(out), want, naive, dtype)
    def total(*a):
        return fn(*a).astype(ms.float32).sum()

    d_scales = Fn(ms.grad(total, grad_position=names.index("scales") + 1))(*args)
    assert d_scales.dtype == ms.float32
    want_g = ref.moe_finalize_routing_grad(np.ones(want.shape), expanded, row_idx,
                                           drop_pad_mode=drop_mode, bias=opt["bias"],
                                           scales=opt["scales"], expert_idx=opt["expert_idx"])
    naive_g = ref.moe_finalize_routing_grad(np.ones(want.shape), expanded, row_idx,
                                            drop_pad_mode=drop_mode, bias=opt["bias"],
                                            scales=opt["scales"], expert_idx=opt["expert_idx"],
                                            rnd=rounding(dtype))
    assert_close("d scales", to_np(d_scales), want_g["grad_scales"], naive_g["grad_scales"], dtype)


class Dispatch(nn.Cell):
    def construct(self, x, expert_idx, sens):
        expanded, row_idx, _, _ = ms_ops.moe_init_routing(x, expert_idx, expert_num=6,
                                                          expert_tokens_count_or_cumsum_flag=2)
        return ms_ops.moe_finalize_routing(expanded * sens, row_idx, drop_pad_mode=2)


def test_dynamic_shape_graph():
    """GRAPH mode compiled once with unknown R and H runs several shapes, forward and backward."""
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Dispatch()
    net.set_inputs(ms.Tensor(shape=[None, None], dtype=ms.float32),
                   ms.Tensor(shape=[None, 1], dtype=ms.int32), ms.Tensor(shape=[None, None], dtype=ms.float32))
    grad_net = ms.grad(net, grad_position=(0, 2))
    for rows, hidden in ((7, 16), (31, 123), (1, 5)):
        x = np.random.randn(rows, hidden)
        idx = routing(rows, 1, 6)
        sens = np.random.randn(rows, hidden)
        out = net(ms.Tensor(x, ms.float32), ms.Tensor(idx), ms.Tensor(sens, ms.float32))
        init = ref.moe_init_routing(x, idx, expert_num=6)
        want = ref.moe_finalize_routing(init[0] * sens, init[1], drop_pad_mode=2)
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6, atol=1e-6)
        dx, dsens = grad_net(ms.Tensor(x, ms.float32), ms.Tensor(idx), ms.Tensor(sens, ms.float32))
        np.testing.assert_allclose(dx.asnumpy(), sens[init[1]], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(dsens.asnumpy(), init[0], rtol=1e-6, atol=1e-6)


class DropCombine(nn.Cell):
    """Drop/pad dispatch and row-major combine with bias and scales (modes 1 and 3)."""

    def construct(self, x, expert_idx, scales, bias):
        expanded, row_idx, _, _ = ms_ops.moe_init_routing(x, expert_idx, expert_num=4,
                                                          expert_capacity=3, drop_pad_mode=1)
        return ms_ops.moe_finalize_routing(expanded, row_idx, scales=scales, bias=bias,
                                           expert_idx=expert_idx, drop_pad_mode=3)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dynamic_shape_graph_drop_pad(dtype):
    """GRAPH mode with unknown R: drop/pad routing with bias and scales, all gradients."""
    ms.set_context(mode=ms.GRAPH_MODE)
    net = DropCombine()
    ms_dtype = MS_DTYPES[dtype]
    net.set_inputs(ms.Tensor(shape=[None, 24], dtype=ms_dtype), ms.Tensor(shape=[None, 2], dtype=ms.int32),
                   ms.Tensor(shape=[None, 2], dtype=ms_dtype), ms.Tensor(shape=[4, 24], dtype=ms_dtype))
    grad_net = ms.grad(net, grad_position=(0, 2, 3))
    for rows in (9, 17):
        x, scales, bias = (representable(s, dtype) for s in ((rows, 24), (rows, 2), (4, 24)))
        idx = routing(rows, 2, 4)
        args = (to_ms(x, dtype), ms.Tensor(idx), to_ms(scales, dtype), to_ms(bias, dtype))
        init = ref.moe_init_routing(x, idx, expert_num=4, expert_capacity=3, drop_pad_mode=1)
        kw = dict(scales=scales, bias=bias, expert_idx=idx, drop_pad_mode=3)
        want = ref.moe_finalize_routing(init[0], init[1], **kw)
        naive = ref.moe_finalize_routing(init[0], init[1], rnd=rounding(dtype), **kw)
        assert_close("out", to_np(net(*args)), want, naive, dtype)
        dx, ds, db = grad_net(*args)
        ones = np.ones(want.shape)
        g = ref.moe_finalize_routing_grad(ones, init[0], init[1], **kw)
        g_naive = ref.moe_finalize_routing_grad(ones, init[0], init[1], rnd=rounding(dtype), **kw)
        want_dx = ref.moe_init_routing_grad(g["grad_expanded_x"], init[1], top_k=2, drop_pad_mode=1)
        naive_dx = ref.moe_init_routing_grad(g_naive["grad_expanded_x"], init[1], top_k=2,
                                             drop_pad_mode=1, rnd=rounding(dtype))
        assert_close("d x", to_np(dx), want_dx, naive_dx, dtype)
        assert_close("d scales", to_np(ds), g["grad_scales"], g_naive["grad_scales"], dtype)
        assert_close("d bias", to_np(db), g["grad_bias"], g_naive["grad_bias"], dtype)


def test_grad_of_plain_function_in_graph_mode():
    """ms.grad of a plain Python function (no Cell, no jit) in GRAPH mode."""
    ms.set_context(mode=ms.GRAPH_MODE)
    x = np.random.randn(10, 8)
    idx = routing(10, 3, 5)

    def f(xt, it):
        expanded, row_idx, _, _ = ms_ops.moe_init_routing(xt, it, expert_num=5)
        return ms_ops.moe_finalize_routing(expanded, row_idx, x1=xt, scales=ops.ones((10, 3), ms.float32),
                                           drop_pad_mode=2).sum()

    dx = ms.grad(f)(ms.Tensor(x, ms.float32), ms.Tensor(idx))
    np.testing.assert_allclose(dx.asnumpy(), np.full((10, 8), 4.0))


def test_jit_function_and_value_and_grad(mode):
    """The public functions inside @ms.jit and under value_and_grad."""
    x = np.random.randn(12, 24)
    idx = routing(12, 2, 4)
    scales = np.random.rand(12, 2)

    @ms.jit
    def combine(xt, it, st):
        expanded, row_idx, _, _ = ms_ops.moe_init_routing(xt, it, expert_num=4)
        return ms_ops.moe_finalize_routing(expanded, row_idx, scales=st, drop_pad_mode=2).sum()

    value, (dx, ds) = ms.value_and_grad(combine, grad_position=(0, 2))(
        ms.Tensor(x, ms.float32), ms.Tensor(idx), ms.Tensor(scales, ms.float32))
    np.testing.assert_allclose(value.asnumpy(), (x.sum(1, keepdims=True) * scales).sum(), rtol=1e-5)
    np.testing.assert_allclose(dx.asnumpy(), np.repeat(scales.sum(1, keepdims=True), 24, 1), rtol=1e-6)
    np.testing.assert_allclose(ds.asnumpy(), np.repeat(x.sum(1, keepdims=True), 2, 1), rtol=1e-5)


def test_deterministic():
    """Reruns are bitwise identical (fixed accumulation order, no atomics)."""
    expanded, row_idx, opt, drop_mode = finalize_inputs(FIN_CASES["m2_all"], "bf16")
    fn, args, _ = finalize_call(expanded, row_idx, opt, drop_mode, "bf16")
    grad = ms.grad(lambda *a: fn(*a).astype(ms.float32).sum(), grad_position=(0, 1, 2, 3, 4))
    first = [to_np(t) for t in (fn(*args), *grad(*args))]
    second = [to_np(t) for t in (fn(*args), *grad(*args))]
    for a, b in zip(first, second):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("init_mode, finalize_mode", [(0, 2), (1, 3)])
def test_init_then_finalize_round_trip(mode, dtype, init_mode, finalize_mode):
    """The documented pairing (init dropless -> finalize 2, init drop/pad -> finalize 3): dispatch
    then combine with scales 1/K gives x back exactly (a capacity of R drops nothing). The
    column-major mode of the same kind (0 or 1) does not pair with moe_init_routing."""
    rows, top_k, experts, hidden = 21, 4, 5, 40
    x = representable((rows, hidden), dtype)
    scales = to_ms(np.full((rows, top_k), 1.0 / top_k), dtype)

    def round_trip(xt, it, st):
        expanded, row_idx, _, _ = ms_ops.moe_init_routing(xt, it, expert_num=experts, expert_capacity=rows,
                                                          drop_pad_mode=init_mode)
        return (ms_ops.moe_finalize_routing(expanded, row_idx, scales=st, drop_pad_mode=finalize_mode),
                ms_ops.moe_finalize_routing(expanded, row_idx, scales=st, drop_pad_mode=finalize_mode - 2))

    paired, column_major_mode = Fn(round_trip)(to_ms(x, dtype), ms.Tensor(routing(rows, top_k, experts)), scales)
    np.testing.assert_array_equal(to_np(paired), x)
    assert not np.allclose(to_np(column_major_mode), x)
