"""The public functions of the cross-entropy trio (ms_ops.fused_linear_online_max_sum,
fused_cross_entropy_loss_with_max_sum, fused_linear_cross_entropy_loss_grad) called the way CANN's
test lists call them: optional inputs left out, fp16/bf16 logits into the loss, vocabulary ranges
of another length than the weight. Values against ms_ops.reference.cross_entropy, in GRAPH (inside
a compiled Cell) and PYNATIVE mode."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

import ms_ops
from ms_ops.reference import cross_entropy as ref
from tests.utils import assert_close, representable, rounding, to_ms, to_np

F32 = rounding("fp32")


class Fn(nn.Cell):
    """Runs ``fn`` compiled as a graph in GRAPH mode (op by op in PYNATIVE)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def construct(self, *args):
        return self.fn(*args)


def loss_only(m, s, p):
    return ms_ops.fused_cross_entropy_loss_with_max_sum(m, s, p)


def loss_and_softmax(m, s, p, z):
    return ms_ops.fused_cross_entropy_loss_with_max_sum(m, s, p, vocab_parallel_logits=z)


def statistics(rows, vocab, dtype):
    """Logits of ``dtype`` [rows, vocab] and their float32 statistics (max, sum of exponentials,
    predicted logit of a random target relative to the max)."""
    z = representable((rows, vocab), dtype, scale=3.0)
    m, s, p, _, _, _ = ref.online_max_sum(z, np.random.randint(0, vocab, rows), 0, vocab)
    return z, [F32(v) for v in (m, s, p)]


@pytest.mark.parametrize("rows", [1, 37, 1100])
def test_loss_without_sum_logits(mode, rows):
    """Neither sum_logits nor vocab_parallel_logits: the loss of every token (the [1] stand-in of
    sum_logits is never read without label smoothing, whatever the token count)."""
    _, (m, s, p) = statistics(rows, 50, "fp32")
    loss, softmax = Fn(loss_only)(*(ms.Tensor(v, ms.float32) for v in (m, s, p)))
    want, _ = ref.fused_cross_entropy_loss_with_max_sum(m, s, p, None)
    naive, _ = ref.fused_cross_entropy_loss_with_max_sum(m, s, p, None, rnd=F32)
    assert_close("loss", to_np(loss), want, naive, "fp32")
    assert softmax.shape == (0,)


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_softmax_without_sum_logits(mode, dtype):
    """vocab_parallel_logits of each dtype CANN takes (float32/float16/bfloat16), no sum_logits:
    loss and softmax are float32 (CANN's softMaxOutOptional is float32), computed in float32."""
    z, (m, s, p) = statistics(97, 1003, dtype)
    loss, softmax = Fn(loss_and_softmax)(*(ms.Tensor(v, ms.float32) for v in (m, s, p)), to_ms(z, dtype))
    assert loss.dtype == softmax.dtype == ms.float32
    want = ref.fused_cross_entropy_loss_with_max_sum(m, s, p, None, z)
    naive = ref.fused_cross_entropy_loss_with_max_sum(m, s, p, None, z, rnd=F32)
    assert_close("loss", to_np(loss), want[0], naive[0], "fp32")
    assert_close("softmax", to_np(softmax), want[1], naive[1], "fp32")
