"""After a kernel refuses a batch in GRAPH mode, MindSpore 2.10 refuses every later run of that
compiled graph; ms_ops Cells called directly recover by themselves, and ms_ops.nn.reset_graph
brings back any other Cell (a user's training step) with its parameters as they were."""
import re

import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

import ms_ops

H, V = 16, 50
PREVIOUS_STEP = "An error occurred in the previous step of this model execution"
BAD_TARGET = re.escape("ms_ops.fused_linear_cross_entropy: 'target': value 1000 at [2] is outside [0, 50)")


def batch(bad=False):
    hidden = ms.Tensor(np.random.RandomState(0).randn(4, H), ms.float32)
    target = ms.Tensor(np.array([1, 2, 1000 if bad else 3, 4], np.int32))
    return hidden, target


@pytest.fixture
def graph_mode():
    ms.set_context(mode=ms.GRAPH_MODE)


def test_own_cell_recovers_after_a_bad_batch(graph_mode):
    head = ms_ops.nn.FusedLinearCrossEntropyLoss(H, V)
    good = head(*batch()).asnumpy()
    with pytest.raises(RuntimeError, match=BAD_TARGET):
        head(*batch(bad=True))
    np.testing.assert_array_equal(head(*batch()).asnumpy(), good)


def test_training_step_needs_reset_graph(graph_mode):
    """The documented behaviour: the user's step Cell fails for good until reset_graph; the
    failed step changed no parameter, and training goes on from where it was."""
    head = ms_ops.nn.FusedLinearCrossEntropyLoss(H, V)
    step = nn.TrainOneStepCell(head, nn.SGD(head.trainable_params(), learning_rate=0.5))
    first = step(*batch()).asnumpy()
    weight = head.weight.asnumpy().copy()
    with pytest.raises(RuntimeError, match=BAD_TARGET):
        step(*batch(bad=True))
    np.testing.assert_array_equal(head.weight.asnumpy(), weight)
    with pytest.raises(RuntimeError, match=PREVIOUS_STEP):
        step(*batch())
    ms_ops.nn.reset_graph(step)
    second = step(*batch()).asnumpy()
    assert second < first
    assert not np.array_equal(head.weight.asnumpy(), weight)


def test_reset_graph_argument():
    with pytest.raises(TypeError, match="reset_graph: 'cell' must be a mindspore.nn.Cell"):
        ms_ops.nn.reset_graph(object())
