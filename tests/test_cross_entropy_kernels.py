"""Kernel-level tests of fused_linear_online_max_sum and fused_cross_entropy_loss_with_max_sum:
every output against a float64 statement of the op, in both modes, for all dtypes, awkward sizes,
vocabulary shards, both logits modes; exact target_mask / masked_target; determinism; bad input."""
import re

import mindspore as ms
import numpy as np
import pytest
from mindspore import ops

from ms_ops._custom import custom_op
from ms_ops.kernels.cross_entropy import (FUSED_CROSS_ENTROPY_LOSS_WITH_MAX_SUM,
                                          FUSED_LINEAR_ONLINE_MAX_SUM)
from ms_ops.reference import cross_entropy as ref_ce
from tests.utils import Fn, assert_close, representable, rounding, to_ms, to_np

DTYPES = ["fp32", "fp16", "bf16"]
IGNORE = -100


def online_max_sum_prim(start, end, vocab_size, return_logits):
    return custom_op(FUSED_LINEAR_ONLINE_MAX_SUM, None, vocab_start_index=start, vocab_end_index=end,
                     return_logits=return_logits, vocab_size=vocab_size, ignore_index=IGNORE)


def loss_prim(label_smoothing, vocab_size, has_logits):
    return custom_op(FUSED_CROSS_ENTROPY_LOSS_WITH_MAX_SUM, None, label_smoothing=label_smoothing,
                     vocab_size=vocab_size, has_logits=has_logits)


def placeholder():
    return ops.zeros((1,), ms.float32)


def naive_sum(rnd):
    """Row sums as a naive kernel takes them: one by one in float32, rounded to the dtype."""
    return lambda a: rnd(np.cumsum(a.astype(np.float32), axis=1)[:, -1].astype(np.float64))


def targets(rows, start, vocab, vocab_size):
    """Targets of all kinds: inside the shard (its first and last id among them), outside it on
    both sides, and ignore_index rows."""
    t = np.random.randint(start, start + vocab, rows)
    kinds = np.random.randint(0, 5, rows)
    if start > 0:
        t = np.where(kinds == 1, np.random.randint(0, start, rows), t)
    if start + vocab < vocab_size:
        t = np.where(kinds == 2, np.random.randint(start + vocab, vocab_size, rows), t)
    t = np.where(kinds == 3, IGNORE, t)
    t[: min(rows, 2)] = [start, start + vocab - 1][: min(rows, 2)]
    return t


def run_online_max_sum(x, w, t, dtype, target_dtype, start, vocab_size, return_logits, graph=False,
                       end=None):
    """The kernel on the shard [start, end) (default: as many ids as the weight has rows)."""
    prim = online_max_sum_prim(start, start + w.shape[0] if end is None else end, vocab_size, return_logits)
    args = (to_ms(x, dtype), to_ms(w, dtype), ms.Tensor(t.astype(target_dtype)))
    if graph:
        ms.set_context(mode=ms.GRAPH_MODE)
        return Fn(prim)(*args)
    return prim(*args)


def naive_logits(x, w, dtype):
    """x · wᵀ in the input precision: a float32 matmul rounded to the dtype."""
    return rounding(dtype)((x.astype(np.float32) @ w.astype(np.float32).T).astype(np.float64))


def check_online_max_sum(outs, x, w, t, dtype, target_dtype, start, return_logits, end=None):
    """Every output of fused_linear_online_max_sum against the float64 statement; the naive
    version computes the logits in the input precision, rounds after every later op and sums
    rows one element at a time."""
    rnd = rounding(dtype)
    end = start + w.shape[0] if end is None else end
    z = x @ w.T
    z_naive = naive_logits(x, w, dtype)
    want = ref_ce.online_max_sum(z, t, start, end)
    naive = ref_ce.online_max_sum(z_naive, t, start, end, rnd=rnd, row_sum=naive_sum(rnd))
    got = [to_np(o) for o in outs]
    index_type = ms.int64 if target_dtype == np.int64 else ms.int32
    assert [o.dtype for o in outs] == [ms.float32] * 3 + [ms.uint8, index_type, ms.float32, ms.float32]
    for name, i, k in (("logits_max_local", 0, 0), ("sum_exp_logits_local", 1, 1),
                       ("predicted_logits_local", 2, 2), ("sum_logits_local", 6, 5)):
        assert_close(name, got[i], want[k], naive[k], dtype)
    np.testing.assert_array_equal(got[3], want[3], err_msg="target_mask bits")
    np.testing.assert_array_equal(got[4], want[4], err_msg="masked_target")
    if return_logits:
        assert_close("vocab_parallel_logits", got[5], z, z_naive, dtype)
    else:
        assert got[5].shape == (0,)


# (BT, H, V, vocab_start_index, vocab_size, target dtype)
CASES = {
    "BT1_H123_V128": (1, 123, 128, 0, 128, np.int32),
    "BT97_H123_V1003_shard": (97, 123, 1003, 500, 2000, np.int64),
    "BT300_2blocks_chunks": (300, 64, 1003, 0, 1003, np.int32),
    "BT6500_multi_row_tiles": (6500, 16, 200, 40, 300, np.int64),
    "BT20_V50257": (20, 32, 50257, 0, 50257, np.int32),
    "BT2100_5x3_groups": (2100, 16, 1100, 200, 1500, np.int64),  # 5 row groups x 3 vocabulary groups
}
CASES_FULL = {
    "BT1030_H1024_V8000_shard": (1030, 1024, 8000, 8000, 32000, np.int64),
    "BT4100_H256_V32000": (4100, 256, 32000, 0, 32000, np.int32),
}


def grid_data(shape, denominator):
    return np.random.randint(-16, 17, shape) / denominator


def case_data(spec, dtype):
    """fp16/bf16: random values of the dtype. fp32: multiples of 1/4 in [-4, 4] (input) and of
    1/16 in [-1, 1] (weight), whose logits (multiples of 1/64 below 4H) every fp32 summation order
    gives exactly for H < 2^16: the comparison then measures the kernel's own arithmetic rather
    than the BLAS's summation order against the naive one's, which on a few rows differ by chance
    by several ulps. The logits spread over tens, so the running max really moves."""
    rows, hidden, vocab, start, vocab_size, target_dtype = spec
    if dtype == "fp32":
        x, w = grid_data((rows, hidden), 4), grid_data((vocab, hidden), 16)
    else:
        x = representable((rows, hidden), dtype)
        w = representable((vocab, hidden), dtype, scale=1.0 / np.sqrt(hidden))
    return x, w, targets(rows, start, vocab, vocab_size), target_dtype


@pytest.mark.parametrize("return_logits", [False, True], ids=["saving", "logits"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", [*CASES, *(pytest.param(c, marks=pytest.mark.full) for c in CASES_FULL)])
def test_online_max_sum(case, dtype, return_logits):
    spec = CASES.get(case) or CASES_FULL[case]
    x, w, t, target_dtype = case_data(spec, dtype)
    start, vocab_size = spec[3], spec[4]
    outs = run_online_max_sum(x, w, t, dtype, target_dtype, start, vocab_size, return_logits)
    check_online_max_sum(outs, x, w, t, dtype, target_dtype, start, return_logits)


@pytest.mark.parametrize("case", ["BT97_H123_V1003_shard", "BT300_2blocks_chunks"])
def test_online_max_sum_modes(mode, case):
    """GRAPH and PYNATIVE give the same, correct outputs (both target dtypes)."""
    spec = CASES[case]
    x, w, t, target_dtype = case_data(spec, "bf16")
    outs = run_online_max_sum(x, w, t, "bf16", target_dtype, spec[3], spec[4], True, graph=mode == "graph")
    check_online_max_sum(outs, x, w, t, "bf16", target_dtype, spec[3], True)


def test_online_max_sum_deterministic():
    x, w, t, target_dtype = case_data(CASES["BT300_2blocks_chunks"], "fp32")
    for return_logits in (False, True):
        a = run_online_max_sum(x, w, t, "fp32", target_dtype, 0, 1003, return_logits)
        b = run_online_max_sum(x, w, t, "fp32", target_dtype, 0, 1003, return_logits)
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u.asnumpy(), v.asnumpy())


def test_online_max_sum_dynamic_shape_graph():
    """GRAPH mode with BT unknown at compile time: shapes come from the C++ infer hook."""
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Fn(online_max_sum_prim(0, 96, 96, True))
    net.set_inputs(ms.Tensor(shape=[None, 40], dtype=ms.float32), ms.Tensor(shape=[96, 40], dtype=ms.float32),
                   ms.Tensor(shape=[None], dtype=ms.int32))
    w = grid_data((96, 40), 16)
    for rows in (13, 70):
        x = grid_data((rows, 40), 4)
        t = targets(rows, 0, 96, 96)
        outs = net(to_ms(x, "fp32"), to_ms(w, "fp32"), ms.Tensor(t.astype(np.int32)))
        assert outs[3].shape == (-(-rows // 8),) and outs[5].shape == (rows, 96)
        check_online_max_sum(outs, x, w, t, "fp32", np.int32, 0, True)


def loss_inputs(rows, vocab, dtype="fp32"):
    """Random logits [BT, V] of ``dtype`` and their global statistics (max, sum of exponentials,
    predicted logit of a random target, sum of logits), rounded to float32 as the kernel gets them."""
    z = representable((rows, vocab), dtype, scale=3.0)
    t = np.random.randint(0, vocab, rows)
    m, s, pred, _, _, zs = ref_ce.online_max_sum(z, t, 0, vocab)
    return z, [v.astype(np.float32).astype(np.float64) for v in (m, s, pred, zs)]


# (BT, V, label_smoothing, vocab_size)
LOSS_CASES = {
    "BT1_V7": (1, 7, 0.0, 7),
    "BT97_V1003_smooth": (97, 1003, 0.1, 1003),
    "BT1100_V300_stat_chunks": (1100, 300, 0.0, 300),
    "BT3_V20000_column_tiles": (3, 20000, 0.25, 20000),
    "BT60_V1000_shard_smooth": (60, 1000, 0.2, 4000),
}


@pytest.mark.parametrize("has_logits", ["loss", *DTYPES], ids=["loss", *(f"softmax_{d}" for d in DTYPES)])
@pytest.mark.parametrize("case", list(LOSS_CASES))
def test_loss_with_max_sum(case, has_logits):
    """Loss alone, or with the softmax of float32/float16/bfloat16 logits. Whatever the logits'
    dtype the kernel widens them and computes in float32 (the softmax is float32, as CANN's), so
    the naive comparison is the same math in float32 on the same (exactly widened) values."""
    rows, vocab, alpha, vocab_size = LOSS_CASES[case]
    dtype = "fp32" if has_logits == "loss" else has_logits
    z, (m, s, p, zs) = loss_inputs(rows, vocab, dtype)
    prim = loss_prim(alpha, vocab_size, has_logits != "loss")
    logits = placeholder() if has_logits == "loss" else to_ms(z, dtype)
    loss, softmax = prim(*(ms.Tensor(v, ms.float32) for v in (m, s, p, zs)), logits)
    assert loss.dtype == softmax.dtype == ms.float32
    want = ref_ce.fused_cross_entropy_loss_with_max_sum(m, s, p, zs, z, label_smoothing=alpha,
                                                        vocab_size=vocab_size)
    naive = ref_ce.fused_cross_entropy_loss_with_max_sum(m, s, p, zs, z, label_smoothing=alpha,
                                                         vocab_size=vocab_size, rnd=rounding("fp32"))
    assert_close("loss", to_np(loss), want[0], naive[0], "fp32")
    if has_logits != "loss":
        assert_close("softmax", to_np(softmax), want[1], naive[1], "fp32")
    else:
        assert softmax.shape == (0,)


@pytest.mark.parametrize("shards", [1, 3])
def test_pipeline_matches_cross_entropy(mode, shards):
    """Both kernels chained over vocabulary shards (statistics combined as a tensor-parallel
    caller does) give the per-token cross-entropy with label smoothing of the reference."""
    rows, hidden, vocab, alpha = 77, 48, 999, 0.1
    x, w = grid_data((rows, hidden), 4), grid_data((vocab, hidden), 16)
    t = np.random.randint(0, vocab, rows)
    if mode == "graph":
        ms.set_context(mode=ms.GRAPH_MODE)
    bounds = np.linspace(0, vocab, shards + 1).astype(int)
    parts = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        prim = Fn(online_max_sum_prim(int(a), int(b), vocab, False))
        outs = prim(to_ms(x, "fp32"), to_ms(w[a:b], "fp32"), ms.Tensor(t.astype(np.int32)))
        parts.append([to_np(outs[i]) for i in (0, 1, 2, 6)] + [outs[3].asnumpy()])
    m = np.max([p[0] for p in parts], axis=0)
    s = sum(p[1] * np.exp(p[0] - m) for p in parts)
    inside = [np.unpackbits(p[4], bitorder="little")[:rows] == 0 for p in parts]
    pred = sum(np.where(i, p[2] + p[0] - m, 0.0) for p, i in zip(parts, inside))
    zs = sum(p[3] for p in parts)
    loss, _ = Fn(loss_prim(alpha, vocab, False))(*(ms.Tensor(v, ms.float32) for v in (m, s, pred, zs)),
                                                  placeholder())
    want = ref_ce.per_token_loss(x, w, t, label_smoothing=alpha)
    naive = ref_ce.per_token_loss(x, w, t, label_smoothing=alpha, rnd=rounding("fp32"))
    assert_close("loss", to_np(loss), want, naive, "fp32")


def test_loss_deterministic():
    z, stats = loss_inputs(97, 1003)
    prim = loss_prim(0.1, 1003, True)
    a, b = (prim(*(ms.Tensor(v, ms.float32) for v in stats), ms.Tensor(z, ms.float32)) for _ in range(2))
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u.asnumpy(), v.asnumpy())


def good_calls():
    """A correct call of each kernel after a rejected one: the process and the ops still work."""
    x, w, t, target_dtype = case_data(CASES["BT97_H123_V1003_shard"], "fp32")
    outs = run_online_max_sum(x, w, t, "fp32", target_dtype, 500, 2000, False)
    check_online_max_sum(outs, x, w, t, "fp32", target_dtype, 500, False)
    _, stats = loss_inputs(5, 30)
    loss, _ = loss_prim(0.0, 30, False)(*(ms.Tensor(v, ms.float32) for v in stats), placeholder())
    assert np.all(np.isfinite(loss.asnumpy()))


def run_kernel_error(capfd, call, message):
    """The exception carries the kernel entry's message; nothing is printed besides it."""
    with pytest.raises(RuntimeError, match=re.escape(message)):
        call()
    assert "ms_ops" not in capfd.readouterr().err
    good_calls()


@pytest.mark.parametrize("target_dtype", [np.int32, np.int64])
def test_target_out_of_range(mode, capfd, target_dtype):
    """A target outside [0, vocab_size) that is not ignore_index is rejected by the kernel entry."""
    x, w = representable((9, 16), "fp32"), representable((32, 16), "fp32")
    t = np.array([0, 5, IGNORE, 31, 40, 7, 123456, 2, 3], target_dtype)
    prim = online_max_sum_prim(32, 64, 100, False)
    if mode == "graph":
        ms.set_context(mode=ms.GRAPH_MODE)
        prim = Fn(prim)
    run_kernel_error(capfd, lambda: prim(to_ms(x, "fp32"), to_ms(w, "fp32"), ms.Tensor(t))[0].asnumpy(),
                     "ms_ops.fused_linear_online_max_sum: 'target': value 123456 at [6] is outside [0, 100) "
                     "and is not ignore_index (-100)")


BAD_ATTRS = {
    "end_before_start": (dict(start=40, end=31, vocab_size=100), "'vocab_end_index': must be >= "
                                                                "vocab_start_index = 40, got 31"),
    "negative_start": (dict(start=-1, end=31, vocab_size=100), "'vocab_start_index': must be >= 0"),
    "vocab_size": (dict(start=32, end=64, vocab_size=50), "'vocab_size': must be >= vocab_end_index = 64"),
}


@pytest.mark.parametrize("case", list(BAD_ATTRS))
def test_online_max_sum_bad_attributes(capfd, case):
    kw, message = BAD_ATTRS[case]
    x, w = representable((4, 16), "fp32"), representable((32, 16), "fp32")
    prim = online_max_sum_prim(kw["start"], kw["end"], kw["vocab_size"], False)
    run_kernel_error(capfd, lambda: prim(to_ms(x, "fp32"), to_ms(w, "fp32"),
                                         ms.Tensor(np.zeros(4, np.int32)))[0].asnumpy(),
                     "ms_ops.fused_linear_online_max_sum: " + message)


def test_loss_bad_label_smoothing(capfd):
    _, stats = loss_inputs(4, 10)
    prim = loss_prim(1.0, 10, False)
    run_kernel_error(capfd, lambda: prim(*(ms.Tensor(v, ms.float32) for v in stats), placeholder())[0].asnumpy(),
                     "ms_ops.fused_cross_entropy_loss_with_max_sum: 'label_smoothing': must be in [0, 1)")
