"""The public functions of the cross-entropy trio (ms_ops.fused_linear_online_max_sum,
fused_cross_entropy_loss_with_max_sum, fused_linear_cross_entropy_loss_grad) called the way CANN's
test lists call them: optional inputs left out, fp16/bf16 logits into the loss, vocabulary ranges
of another length than the weight. Values against ms_ops.reference.cross_entropy, in GRAPH (inside
a compiled Cell) and PYNATIVE mode."""
import re

import mindspore as ms
import numpy as np
import pytest

import ms_ops
from ms_ops.reference import cross_entropy as ref
from tests.utils import Fn, assert_close, representable, rounding, to_ms, to_np

F32 = rounding("fp32")


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


def max_sum(x, w, t, start, end, return_logits):
    return ms_ops.fused_linear_online_max_sum(x, w, t, start, end, vocab_size=4000,
                                              return_logits=return_logits)


def max_sum_logits(x, w, t, start, end):
    return max_sum(x, w, t, start, end, True)


def max_sum_no_logits(x, w, t, start, end):
    return max_sum(x, w, t, start, end, False)


# (V_local, vocab_start_index, vocab_end_index, extra targets): ranges of fewer ids than weight
# rows (the rows past the range take part in the statistics, no target maps to them), none, and
# more (targets past the weight's rows would have no logit: none here).
RANGES = {
    "shorter": (130, 1000, 1100, [999, 1000, 1099, 1100, 1129]),
    "empty": (64, 500, 500, [499, 500, 501]),
    "longer": (64, 0, 100, [0, 63, 100, 101]),
}


@pytest.mark.parametrize("return_logits", [False, True], ids=["saving", "logits"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("case", list(RANGES))
def test_vocabulary_range_of_any_length(mode, case, dtype, return_logits):
    """vocab_end_index - vocab_start_index != V_local, as CANN allows. The end is exclusive: a
    target equal to it is masked (CANN's kernel; its docs write '>')."""
    vocab, start, end, extra = RANGES[case]
    rows = 45
    x = representable((rows, 40), dtype)
    w = representable((vocab, 40), dtype, scale=0.3)
    t = np.random.randint(max(start - 50, 0), min(start + vocab, end) + 50, rows)
    t[np.isin(t, np.arange(start + vocab, end))] = start  # ids without a weight row: refused
    t[:len(extra)] = extra
    t[-1] = -100
    fn = max_sum_logits if return_logits else max_sum_no_logits
    outs = Fn(fn)(to_ms(x, dtype), to_ms(w, dtype), ms.Tensor(t.astype(np.int32)), start, end)
    rnd = rounding(dtype)
    want = ref.fused_linear_online_max_sum(x, w, t, start, end)
    naive = ref.fused_linear_online_max_sum(x, w, t, start, end, rnd=rnd)
    got = [to_np(o) for o in outs]
    for name, i in (("logits_max_local", 0), ("sum_exp_logits_local", 1), ("predicted_logits_local", 2),
                    ("sum_logits_local", 6)):
        k = 5 if i == 6 else i
        assert_close(name, got[i], want[k], naive[k], dtype)
    np.testing.assert_array_equal(got[3], want[3], err_msg="target_mask bits")
    np.testing.assert_array_equal(got[4], want[4], err_msg="masked_target")
    inside = (t >= start) & (t < end)
    assert np.array_equal(np.unpackbits(got[3], bitorder="little")[:rows] == 0, inside)
    if return_logits:
        assert_close("vocab_parallel_logits", got[5], want[6], naive[6], dtype)


def test_target_without_weight_row(mode, capfd):
    """A range longer than the weight: a target inside it but past the weight's rows has no
    logit and is refused, naming the value and its place; the process goes on."""
    x, w = representable((6, 16), "fp32"), representable((64, 16), "fp32")
    t = np.array([0, 5, 63, 64, 99, 7], np.int32)
    with pytest.raises(RuntimeError, match=re.escape(
            "ms_ops.fused_linear_online_max_sum: 'target': value 64 at [3] is in the shard [0, 100) but past "
            "weight's 64 rows (ids up to 63)")):
        Fn(max_sum_no_logits)(to_ms(x, "fp32"), to_ms(w, "fp32"), ms.Tensor(t), 0, 100)[0].asnumpy()
    assert "ms_ops" not in capfd.readouterr().err
    t[3:5] = [100, 120]
    outs = Fn(max_sum_no_logits)(to_ms(x, "fp32"), to_ms(w, "fp32"), ms.Tensor(t), 0, 100)
    np.testing.assert_array_equal(outs[4].asnumpy(), [0, 5, 63, 0, 0, 7])
