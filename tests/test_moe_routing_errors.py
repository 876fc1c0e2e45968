"""Bad input to the MoE routing ops: a clear error naming op and argument, and the process goes on."""
import re

import mindspore as ms
import numpy as np
import pytest

import ms_ops

X = ms.Tensor(np.ones((4, 8), np.float32))
IDX = ms.Tensor(np.array([[0, 1], [1, 2], [2, 0], [1, 0]], np.int32))


def good_call():
    expanded, row_idx, counts, _ = ms_ops.moe_init_routing(X, IDX, expert_num=3,
                                                            expert_tokens_count_or_cumsum_flag=2)
    np.testing.assert_array_equal(counts.asnumpy(), [3, 3, 2])
    out = ms_ops.moe_finalize_routing(expanded, row_idx, scales=ms.Tensor(np.ones((4, 2), np.float32)),
                                      drop_pad_mode=2)
    np.testing.assert_allclose(out.asnumpy(), 2 * np.ones((4, 8)))


STATIC_INIT = {
    "x_rank": (dict(x=ms.Tensor(np.ones((2, 2, 8), np.float32))), ValueError, "'x' must be 2-D"),
    "x_dtype": (dict(x=ms.Tensor(np.ones((4, 8), np.int32))), TypeError, "'x' must have dtype"),
    "idx_dtype": (dict(expert_idx=ms.Tensor(np.zeros((4, 2), np.int64))), TypeError, "'expert_idx' must have dtype"),
    "rows": (dict(expert_idx=ms.Tensor(np.zeros((3, 2), np.int32))), ValueError, "'expert_idx' dimension 0"),
    "capacity": (dict(drop_pad_mode=1, expert_num=3, expert_capacity=0), ValueError, "'expert_capacity' must be > 0"),
    "mode": (dict(drop_pad_mode=2), ValueError, "'drop_pad_mode' must be one of"),
    "counts_need_e": (dict(expert_tokens_count_or_cumsum_flag=1), ValueError, "'expert_num' must be > 0"),
}


@pytest.mark.parametrize("case", list(STATIC_INIT))
def test_init_static_errors(mode, case):
    """Python-side checks name moe_init_routing and the argument."""
    override, exc, text = STATIC_INIT[case]
    kw = dict(x=X, expert_idx=IDX)
    kw.update(override)
    with pytest.raises(exc, match="moe_init_routing: " + text.replace("(", r"\(")):
        ms_ops.moe_init_routing(kw.pop("x"), kw.pop("expert_idx"), **kw)
    good_call()


EX = ms.Tensor(np.ones((8, 8), np.float32))
ROW = ms.Tensor(np.arange(8, dtype=np.int32))
STATIC_FIN = {
    "x2_without_x1": (dict(x2=ms.Tensor(np.ones((8, 8), np.float32))), ValueError, "'x2' may only be given together with 'x1'"),
    "bias_without_idx": (dict(bias=ms.Tensor(np.ones((3, 8), np.float32))), ValueError, "'bias' needs 'expert_idx'"),
    "scales_count": (dict(scales=ms.Tensor(np.ones((3, 2), np.float32))), ValueError, "'expanded_row_idx' must have R\\*K"),
    "scales_dtype": (dict(scales=ms.Tensor(np.ones((4, 2), np.float16))), TypeError, "'scales' must have dtype"),
    "x1_hidden": (dict(x1=ms.Tensor(np.ones((8, 5), np.float32))), ValueError, "'x1' dimension 1"),
    "idx_dtype": (dict(expanded_row_idx=ms.Tensor(np.arange(8, dtype=np.int64))), TypeError, "'expanded_row_idx' must have dtype"),
    "expert_num_vs_bias": (dict(expanded_x=ms.Tensor(np.ones((2, 4, 8), np.float32)), drop_pad_mode=3,
                                scales=ms.Tensor(np.ones((4, 2), np.float32)),
                                bias=ms.Tensor(np.ones((3, 8), np.float32)),
                                expert_idx=ms.Tensor(np.zeros((4, 2), np.int32))),
                           ValueError, "'bias' dimension 0 must equal expert_num"),
    "drop_rank": (dict(drop_pad_mode=1), ValueError, "'expanded_x' must be 3-D"),
}


@pytest.mark.parametrize("case", list(STATIC_FIN))
def test_finalize_static_errors(mode, case):
    """Python-side checks name moe_finalize_routing and the argument."""
    override, exc, text = STATIC_FIN[case]
    kw = dict(expanded_x=EX, expanded_row_idx=ROW)
    kw.update(override)
    with pytest.raises(exc, match="moe_finalize_routing: " + text):
        ms_ops.moe_finalize_routing(kw.pop("expanded_x"), kw.pop("expanded_row_idx"), **kw)
    good_call()


def run_kernel_error(capfd, call, message):
    """The exception carries the kernel entry's message (op, argument, value, position), and
    nothing is printed besides it."""
    with pytest.raises(RuntimeError, match=re.escape(message)):
        call()
    assert "ms_ops" not in capfd.readouterr().err
    good_call()


def test_init_expert_id_out_of_range(mode, capfd):
    """An expert id >= expert_num is rejected by the kernel entry, with op and argument named."""
    bad = ms.Tensor(np.array([[0, 1], [1, 7], [2, 0], [1, 0]], np.int32))
    run_kernel_error(capfd, lambda: ms_ops.moe_init_routing(X, bad, expert_num=3)[0].asnumpy(),
                     "ms_ops.moe_init_routing: 'expert_idx': value 7 at [1, 1] is outside [0, 3)")


def test_init_negative_expert_id(mode, capfd):
    bad = ms.Tensor(np.array([[0, 1], [1, -2], [2, 0], [1, 0]], np.int32))
    run_kernel_error(capfd, lambda: ms_ops.moe_init_routing(X, bad)[0].asnumpy(),
                     "ms_ops.moe_init_routing: 'expert_idx': value -2 at [1, 1] is outside [0, ")


def test_finalize_row_idx_out_of_range(mode, capfd):
    bad = ms.Tensor(np.array([0, 1, 2, 3, 4, 5, 6, 99], np.int32))
    run_kernel_error(capfd, lambda: ms_ops.moe_finalize_routing(EX, bad, drop_pad_mode=2).asnumpy(),
                     "ms_ops.moe_finalize_routing: 'expanded_row_idx': ")


def test_finalize_row_idx_duplicated(mode, capfd):
    bad = ms.Tensor(np.array([0, 1, 2, 3, 4, 5, 6, 6], np.int32))
    run_kernel_error(capfd, lambda: ms_ops.moe_finalize_routing(EX, bad, drop_pad_mode=2).asnumpy(),
                     "ms_ops.moe_finalize_routing: 'expanded_row_idx': ")


def test_finalize_dropped_marker_only_in_drop_modes(mode, capfd):
    bad = ms.Tensor(np.array([0, 1, 2, 3, 4, 5, 6, -1], np.int32))
    run_kernel_error(capfd, lambda: ms_ops.moe_finalize_routing(EX, bad, drop_pad_mode=2).asnumpy(),
                     "ms_ops.moe_finalize_routing: 'expanded_row_idx': ")


def test_finalize_bias_expert_out_of_range(mode, capfd):
    scales = ms.Tensor(np.ones((4, 2), np.float32))
    bias = ms.Tensor(np.ones((3, 8), np.float32))
    bad_experts = ms.Tensor(np.array([[0, 1], [1, 5], [2, 0], [1, 0]], np.int32))
    run_kernel_error(capfd, lambda: ms_ops.moe_finalize_routing(
        EX, ROW, scales=scales, bias=bias, expert_idx=bad_experts, drop_pad_mode=2).asnumpy(),
        "ms_ops.moe_finalize_routing: 'expert_idx': value 5 at [1, 1]")


class Dispatch(ms.nn.Cell):
    def construct(self, x, expert_idx):
        return ms_ops.moe_init_routing(x, expert_idx, expert_num=3)[0]


def test_init_dynamic_top_k_rejected():
    """K must be static in GRAPH mode (the gradient kernel takes it as an attribute)."""
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Dispatch()
    net.set_inputs(ms.Tensor(shape=[None, 8], dtype=ms.float32), ms.Tensor(shape=[None, None], dtype=ms.int32))
    with pytest.raises(ValueError, match="moe_init_routing: 'expert_idx' must have a static K"):
        net(X, IDX)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    good_call()
