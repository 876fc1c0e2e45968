"""ms_ops.nn.FusedLinearCrossEntropyLoss checks its inputs against its configuration and names
itself and the argument."""
import mindspore as ms
import numpy as np
import pytest

import ms_ops

BAD = {
    "hidden_size": (dict(hidden=np.zeros((4, 8), np.float32)), ValueError,
                    r"FusedLinearCrossEntropyLoss: 'hidden' dimension 1 must equal hidden_size \(16\)"),
    "hidden_rank": (dict(hidden=np.zeros((2, 2, 16), np.float32)), ValueError,
                    r"FusedLinearCrossEntropyLoss: 'hidden' must be 2-D"),
    "hidden_dtype": (dict(hidden=np.zeros((4, 16), np.float16)), TypeError,
                     r"FusedLinearCrossEntropyLoss: 'hidden' must have the dtype of 'weight'"),
    "target_rows": (dict(target=np.zeros(5, np.int32)), ValueError,
                    r"FusedLinearCrossEntropyLoss: 'target' dimension 0 must equal the number of tokens"),
    "target_rank": (dict(target=np.zeros((4, 1), np.int32)), ValueError,
                    r"FusedLinearCrossEntropyLoss: 'target' must be 1-D"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_cell_rejects_mismatched_inputs(mode, case):
    head = ms_ops.nn.FusedLinearCrossEntropyLoss(16, 100)
    args = dict(hidden=np.random.randn(4, 16).astype(np.float32), target=np.array([1, 2, 3, 99], np.int32))
    override, exc, text = BAD[case]
    bad = dict(args, **override)
    with pytest.raises(exc, match=text):
        head(ms.Tensor(bad["hidden"]), ms.Tensor(bad["target"]))
    assert np.isfinite(head(ms.Tensor(args["hidden"]), ms.Tensor(args["target"])).asnumpy())


def test_cell_zero_tokens(mode):
    """No token: the mean loss over nothing is NaN (as PyTorch), the weight gradient zeros."""
    head = ms_ops.nn.FusedLinearCrossEntropyLoss(16, 100)
    hidden, target = ms.Tensor(np.zeros((0, 16)), ms.float32), ms.Tensor(np.zeros(0, np.int32))
    loss, (d_weight,) = ms.value_and_grad(head, grad_position=None, weights=head.trainable_params())(hidden, target)
    assert loss.shape == () and np.isnan(loss.asnumpy())
    assert d_weight.shape == (100, 16)
    np.testing.assert_array_equal(d_weight.asnumpy(), 0)
