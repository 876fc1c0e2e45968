"""Gradients of the DeepSeek sparse attention indexer ops.

lightning_indexer: sparse_values[t, n, j] = I[t, n, sparse_indices[t, n, j]] with the selection
held fixed, so with dI the incoming gradient on the selected keys and S = q[t, g] · k[s]:
    dw[t, g] = Σ_j dI_j ReLU(S_j),  dS_j = dI_j w[t, g] [S_j > 0],
    dq[t, g] = Σ_j dS_j k[s_j],     dk[s] = Σ over (t, g, j) with s_j = s of dS_j q[t, g],
by the kernel lightning_indexer_grad (deterministic). The indices and lengths get zeros.
"""
from mindspore import ops

from ms_ops._custom import custom_op
from ms_ops.kernels.lightning_indexer import LIGHTNING_INDEXER_GRAD


def make_lightning_indexer_bprop(**attrs):
    grad_op = custom_op(LIGHTNING_INDEXER_GRAD, api="lightning_indexer", **attrs)

    def bprop(query, key, weights, qlen, klen, out, dout):
        dq, dk, dw = grad_op(query, key, dout[1], out[0], weights, qlen, klen)
        return dq, dk, dw, ops.zeros_like(qlen), ops.zeros_like(klen)

    return bprop
