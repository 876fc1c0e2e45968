"""d real_shift of the real_shift forms flash_attention_score treats as constants (broadcast
[B, N1, 1, S2] and [1, N1, S1, S2], ALiBi-compressed [1, N1, 1024, S2]): zeros of real_shift's
shape through ms.grad and ms.value_and_grad in both modes, while dq, dk and dv stay exact."""
import mindspore as ms
import numpy as np
import pytest

import ms_ops
from ms_ops.reference.attention import alibi
from tests.test_attention_pse import Loss, Shifted, check, run
from tests.utils import representable, to_ms, to_np


@pytest.mark.parametrize("shape,pse_type", [((2, 2, 1, 40), 1), ((1, 2, 24, 40), 0)])
def test_broadcast_forms(mode, shape, pse_type):
    # check() asserts d real_shift is zeros of the broadcast shape, the other gradients against
    # the float64 reference.
    check(2, 2, 1, 24, 40, 32, shape, pse_type, "fp32", mode, layout="BSND", sparse=3)


def test_compressed_form_graph():
    s, d = 1040, 8
    q, k, v, dout = (representable((1, 1, s, d), "fp32") for _ in range(4))
    got = run(q, k, v, alibi([0.02], s)[:, :, -1024:], dout, 1, "BNSD", "fp32", "graph", "fp32",
              sparse_mode=2, pse_type=1)
    assert got[4].shape == (1, 1, 1024, s) and np.all(got[4] == 0)
    assert np.all(np.isfinite(got[1])) and np.any(got[1] != 0)


def test_value_and_grad_broadcast(mode):
    """value_and_grad gives the loss of the biased forward and the zero d real_shift together."""
    b, n1, s1, s2, d = 1, 2, 9, 16, 16
    q, k, v = (representable(shape, "fp32") for shape in ((b, s1, n1, d), (b, s2, n1, d), (b, s2, n1, d)))
    pse = representable((b, n1, 1, s2), "fp32")
    w = ms.Tensor(np.ones((b, s1, n1, d), np.float32))
    attention = Shifted(head_num=n1, input_layout="BSND")
    args = [to_ms(a, "fp32") for a in (q, k, v, pse)]
    loss, grads = ms.value_and_grad(Loss(attention), grad_position=(0, 3))(*args, w)
    forward = ms_ops.flash_attention_score(*args[:3], n1, real_shift=args[3], input_layout="BSND")
    np.testing.assert_allclose(float(loss.asnumpy()), to_np(forward).sum(), rtol=1e-5)
    assert grads[1].shape == pse.shape and np.all(to_np(grads[1]) == 0)
    assert np.any(to_np(grads[0]) != 0)
