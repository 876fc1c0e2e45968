"""Bad input to the fused linear cross-entropy ops: a clear error naming op and argument, and the
process goes on to run a correct call."""
import re

import mindspore as ms
import numpy as np
import pytest
from mindspore.communication import GlobalComm

import ms_ops

X = ms.Tensor(np.ones((4, 8), np.float32))
W = ms.Tensor(np.ones((16, 8), np.float32) * 0.1)
T = ms.Tensor(np.array([0, 3, -100, 15], np.int32))
OP = "fused_linear_cross_entropy"


def good_call():
    loss = ms_ops.fused_linear_cross_entropy(X, W, T, reduction="none")
    np.testing.assert_allclose(loss.asnumpy(), [np.log(16), np.log(16), 0, np.log(16)], rtol=1e-6)


STATIC = {
    "input_rank": (dict(input=ms.Tensor(np.ones((2, 2, 8), np.float32))), ValueError, "'input' must be 2-D"),
    "weight_rank": (dict(weight=ms.Tensor(np.ones(8, np.float32))), ValueError, "'weight' must be 2-D"),
    "target_rank": (dict(target=ms.Tensor(np.zeros((4, 1), np.int32))), ValueError, "'target' must be 1-D"),
    "input_dtype": (dict(input=ms.Tensor(np.ones((4, 8), np.int32))), TypeError, "'input' must have dtype"),
    "weight_dtype": (dict(weight=ms.Tensor(np.ones((16, 8), np.float16))), TypeError,
                     "'weight' must have the dtype of 'input'"),
    "target_dtype": (dict(target=ms.Tensor(np.zeros(4, np.float32))), TypeError, "'target' must have dtype"),
    "hidden": (dict(weight=ms.Tensor(np.ones((16, 7), np.float32))), ValueError, "'weight' dimension 1"),
    "tokens": (dict(target=ms.Tensor(np.zeros(5, np.int32))), ValueError, "'target' dimension 0"),
    "empty_vocab": (dict(weight=ms.Tensor(np.ones((0, 8), np.float32))), ValueError,
                    "'weight' must have at least one vocabulary row"),
    "smoothing_high": (dict(label_smoothing=1.0), ValueError, r"'label_smoothing' must be in \[0.0, 1.0\)"),
    "smoothing_negative": (dict(label_smoothing=-0.1), ValueError, "'label_smoothing' must be in"),
    "smoothing_type": (dict(label_smoothing="0.1"), TypeError, "'label_smoothing' must be a float"),
    "reduction": (dict(reduction="avg"), ValueError, "'reduction' must be one of"),
    "mode": (dict(mode="fast"), ValueError, "'mode' must be one of"),
    "ignore_index": (dict(ignore_index=1.5), TypeError, "'ignore_index' must be an int"),
    "start_without_group": (dict(vocab_start_index=16), ValueError, "'vocab_start_index' needs a 'group'"),
    "group_type": (dict(group=3), TypeError, "'group' must be a communication group name"),
    "block_bytes_zero": (dict(block_bytes=0), ValueError, "'block_bytes' must be >= 1, got 0"),
    "block_bytes_type": (dict(block_bytes=1.5), TypeError, "'block_bytes' must be an int"),
}


@pytest.mark.parametrize("case", list(STATIC))
def test_static_errors(mode, case):
    override, exc, text = STATIC[case]
    kw = dict(input=X, weight=W, target=T)
    kw.update(override)
    with pytest.raises(exc, match=f"{OP}: {text}"):
        ms_ops.fused_linear_cross_entropy(kw.pop("input"), kw.pop("weight"), kw.pop("target"), **kw)
    good_call()


def test_kernel_function_errors():
    """The trio's own checks: a range that ends before it starts, a vocabulary smaller than it."""
    with pytest.raises(ValueError, match="fused_linear_online_max_sum: 'vocab_end_index' must be >= 8, got 4"):
        ms_ops.fused_linear_online_max_sum(X, W, T, 8, 4)
    with pytest.raises(ValueError, match="fused_linear_online_max_sum: 'vocab_size' must be >= 20"):
        ms_ops.fused_linear_online_max_sum(X, W, T, 4, 20, vocab_size=10)
    with pytest.raises(ValueError, match="fused_linear_cross_entropy_loss_grad: without 'softmax'"):
        ms_ops.fused_linear_cross_entropy_loss_grad(ms.Tensor(np.ones(4, np.float32)), X, W,
                                                    ms.Tensor(np.zeros(1, np.uint8)), T)
    with pytest.raises(ValueError, match="fused_cross_entropy_loss_with_max_sum: label smoothing needs"):
        v = ms.Tensor(np.ones(4, np.float32))
        ms_ops.fused_cross_entropy_loss_with_max_sum(v, v, v, label_smoothing=0.1)
    good_call()


@pytest.mark.parametrize("bad", [16, 1000, -1, -101])
def test_target_out_of_range(mode, capfd, bad):
    """A target outside [0, V) that is not ignore_index is refused by the kernel entry."""
    target = ms.Tensor(np.array([0, bad, 2, 3], np.int32))
    with pytest.raises(RuntimeError, match=re.escape(
            f"ms_ops.fused_linear_cross_entropy: 'target': value {bad} at [1] is outside [0, 16)")) as info:
        ms_ops.fused_linear_cross_entropy(X, W, target).asnumpy()
    assert "(in kernel fused_linear_online_max_sum)" in str(info.value)
    assert "ms_ops" not in capfd.readouterr().err
    good_call()


@pytest.mark.parametrize("group", ["tp_group", GlobalComm.WORLD_COMM_GROUP], ids=["other_name", "world_before_init"])
def test_cpu_group_must_be_the_initialised_world_group(mode, group):
    """MindSpore's CPU collectives run only on the world group of init() under msrun; without
    init() MindSpore would report any group as one rank and fail later inside AllGather."""
    assert not GlobalComm.INITED
    text = (f"{OP}: 'group' on CPU must be the world group, mindspore.communication.GlobalComm.WORLD_COMM_GROUP "
            f"('mccl_world_group' once init() has run in a process started by msrun): MindSpore's CPU collectives "
            f"work on no other group; got {group!r}; mindspore.communication.init() has not run")
    with pytest.raises(ValueError, match=re.escape(text)):
        ms_ops.fused_linear_cross_entropy(X, W, T, group=group)
    with pytest.raises(ValueError, match=re.escape(text.replace(OP, "FusedLinearCrossEntropyLoss"))):
        ms_ops.nn.FusedLinearCrossEntropyLoss(8, 16, group=group)
    good_call()
