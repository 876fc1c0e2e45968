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


def test_finalize_grad_more_slots_than_float_compare_tells_apart(capfd):
    """The gradient kernel finds a slot's pairs by comparing slots as float: N > 2^24 is refused."""
    grad_y = ms.Tensor(np.zeros((4, 0), np.float32))
    expanded = ms.Tensor(np.zeros(((1 << 24) + 1, 0), np.float32))
    row_idx = ms.Tensor(np.arange(4, dtype=np.int32))
    run_kernel_error(capfd, lambda: ms_ops.moe_finalize_routing_grad(grad_y, row_idx, expanded)[0].asnumpy(),
                     "ms_ops.moe_finalize_routing_grad: 'tiling': N=16777217 rows of expanded_x exceed 2^24")


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


GY = ms.Tensor(np.ones((4, 8), np.float32))
SCALES = ms.Tensor(np.ones((4, 2), np.float32))
STATIC_INIT_GRAD = {
    "mode": (dict(drop_pad_mode=2), ValueError, "'drop_pad_mode' must be one of"),
    "top_k": (dict(top_k=0), ValueError, "'top_k' must be >= 1"),
    "top_k_type": (dict(top_k=2.0), TypeError, "'top_k' must be an int"),
    "rank": (dict(drop_pad_mode=1), ValueError, "'grad_expanded_x' must be 3-D"),
    "not_multiple": (dict(top_k=3), ValueError, "'expanded_row_idx' must have R\\*K entries, a multiple of top_k=3"),
    "rows": (dict(grad_expanded_x=ms.Tensor(np.ones((7, 8), np.float32))), ValueError,
             "'grad_expanded_x' dimension 0 must equal the rows of expanded_x"),
    "active_rows": (dict(active_num=5), ValueError, "'grad_expanded_x' dimension 0 .* \\(5\\)"),
    "idx_dtype": (dict(expanded_row_idx=ms.Tensor(np.arange(8, dtype=np.int64))), TypeError,
                  "'expanded_row_idx' must have dtype"),
    "grad_dtype": (dict(grad_expanded_x=ms.Tensor(np.ones((8, 8), np.int32))), TypeError,
                   "'grad_expanded_x' must have dtype"),
}


@pytest.mark.parametrize("case", list(STATIC_INIT_GRAD))
def test_init_grad_static_errors(mode, case):
    """Python-side checks name moe_init_routing_grad and the argument."""
    override, exc, text = STATIC_INIT_GRAD[case]
    kw = dict(grad_expanded_x=EX, expanded_row_idx=ROW, top_k=2)
    kw.update(override)
    with pytest.raises(exc, match="moe_init_routing_grad: " + text):
        ms_ops.moe_init_routing_grad(kw.pop("grad_expanded_x"), kw.pop("expanded_row_idx"), **kw)
    good_call()


STATIC_FIN_GRAD = {
    "mode": (dict(drop_pad_mode=2), ValueError, "'drop_pad_mode' must be one of"),
    "scales_need_x": (dict(expanded_x=None), ValueError, "'expanded_x' is required with 'scales'"),
    "drop_shape_attrs": (dict(expanded_x=None, scales=None, expanded_row_idx=ms.Tensor(np.zeros(4, np.int32)),
                              drop_pad_mode=1, expert_num=3), ValueError,
                         "without 'expanded_x', drop/pad mode needs 'expert_num' and 'expert_capacity' > 0"),
    "bias_without_idx": (dict(bias=ms.Tensor(np.ones((3, 8), np.float32))), ValueError, "'bias' needs 'expert_idx'"),
    "x_dtype": (dict(expanded_x=ms.Tensor(np.ones((8, 8), np.float16))), TypeError,
                "'expanded_x' must have the dtype of 'grad_y'"),
    "x_hidden": (dict(expanded_x=ms.Tensor(np.ones((8, 5), np.float32))), ValueError, "'expanded_x' dimension 1"),
    "expert_num": (dict(expanded_x=ms.Tensor(np.ones((2, 4, 8), np.float32)), drop_pad_mode=1, expert_num=3),
                   ValueError, "'expanded_x' dimension 0 must equal expert_num"),
    "capacity": (dict(expanded_x=ms.Tensor(np.ones((2, 4, 8), np.float32)), drop_pad_mode=1, expert_capacity=5),
                 ValueError, "'expanded_x' dimension 1 must equal expert_capacity"),
    "active_num": (dict(active_num=5), ValueError, "'expanded_x' dimension 0 must equal the rows for R\\*K=8"),
    "pairs": (dict(scales=ms.Tensor(np.ones((4, 3), np.float32))), ValueError, "'expanded_row_idx' must have R\\*K"),
    "scales_rows": (dict(scales=ms.Tensor(np.ones((2, 4), np.float32))), ValueError, "'scales' dimension 0"),
    "no_scales_k1": (dict(scales=None), ValueError,
                     "'expanded_row_idx' must have R\\*K = 4\\*1 entries \\(K = 1 without scales\\)"),
    "bias_experts": (dict(expanded_x=ms.Tensor(np.ones((2, 4, 8), np.float32)), drop_pad_mode=1,
                          bias=ms.Tensor(np.ones((3, 8), np.float32)),
                          expert_idx=ms.Tensor(np.zeros((4, 2), np.int32))),
                     ValueError, "'bias' dimension 0 must equal expert_num E"),
    "return_grad_bias": (dict(return_grad_bias=1), TypeError, "'return_grad_bias' must be a bool"),
}


@pytest.mark.parametrize("case", list(STATIC_FIN_GRAD))
def test_finalize_grad_static_errors(mode, case):
    """Python-side checks name moe_finalize_routing_grad and the argument."""
    override, exc, text = STATIC_FIN_GRAD[case]
    kw = dict(grad_y=GY, expanded_row_idx=ROW, expanded_x=EX, scales=SCALES)
    kw.update(override)
    with pytest.raises(exc, match="moe_finalize_routing_grad: " + text):
        ms_ops.moe_finalize_routing_grad(kw.pop("grad_y"), kw.pop("expanded_row_idx"), **kw)
    good_call()


def test_init_grad_row_idx_out_of_range(mode, capfd):
    """The gradient functions' kernel errors name the gradient function, not the forward."""
    bad = ms.Tensor(np.array([0, 1, 2, 9, 4, 5, 6, 7], np.int32))
    run_kernel_error(capfd, lambda: ms_ops.moe_init_routing_grad(EX, bad, 2).asnumpy(),
                     "ms_ops.moe_init_routing_grad: 'expanded_row_idx': value 9 at [3] is outside [0, 8)")


def test_finalize_grad_row_idx_out_of_range(mode, capfd):
    bad = ms.Tensor(np.array([0, 1, 2, 3, 4, 5, 6, 99], np.int32))
    run_kernel_error(capfd, lambda: ms_ops.moe_finalize_routing_grad(GY, bad, EX, SCALES)[0].asnumpy(),
                     "ms_ops.moe_finalize_routing_grad: 'expanded_row_idx': value 99 at position 7 (token 3, k 1) "
                     "is outside [0, 8) in dropless mode")


def test_finalize_grad_dropped_marker_only_in_drop_mode(mode, capfd):
    bad = ms.Tensor(np.array([0, 1, 2, 3, 4, 5, 6, -1], np.int32))
    run_kernel_error(capfd, lambda: ms_ops.moe_finalize_routing_grad(GY, bad, EX, SCALES)[0].asnumpy(),
                     "ms_ops.moe_finalize_routing_grad: 'expanded_row_idx': value -1 at position 7")
