"""Gradients of the DeepSeek sparse attention indexer ops.

lightning_indexer: sparse_values[t, n, j] = I[t, n, sparse_indices[t, n, j]] with the selection
held fixed, so with dI the incoming gradient on the selected keys and S = q[t, g] · k[s]:
    dw[t, g] = Σ_j dI_j ReLU(S_j),  dS_j = dI_j w[t, g] [S_j > 0],
    dq[t, g] = Σ_j dS_j k[s_j],     dk[s] = Σ over (t, g, j) with s_j = s of dS_j q[t, g],
by the kernel lightning_indexer_grad (deterministic; not for paged keys). The indices, lengths
and block table get zeros.

sparse_/dense_lightning_indexer_kl_loss: their forward kernels compute the gradients with the loss.
"""
from mindspore import ops

from ms_ops._custom import custom_op
from ms_ops.kernels.lightning_indexer import LIGHTNING_INDEXER_GRAD


def make_lightning_indexer_bprop(**attrs):
    grad_op = custom_op(LIGHTNING_INDEXER_GRAD, api="lightning_indexer", **attrs)

    def bprop(query, key, weights, qlen, klen, block_table, out, dout):
        dq, dk, dw = grad_op(query, key, dout[1], out[0], weights, qlen, klen)
        return dq, dk, dw, ops.zeros_like(qlen), ops.zeros_like(klen), ops.zeros_like(block_table)

    return bprop


def make_sparse_lightning_indexer_kl_loss_bprop(**attrs):
    """The forward kernel already gave d query_index, d key_index and d weights for d loss = 1:
    they are scaled by d loss. The main attention's inputs, the selection, the statistics and the
    lengths are detached (zeros), as in DeepSeek-V3.2's indexer training."""

    def bprop(query, key, query_index, key_index, weights, sparse_indices, softmax_max, softmax_sum, query_rope,
              key_rope, qlen, klen, out, dout):
        scale = dout[3].astype(query_index.dtype)
        return (ops.zeros_like(query), ops.zeros_like(key), out[0] * scale, out[1] * scale, out[2] * scale,
                ops.zeros_like(sparse_indices), ops.zeros_like(softmax_max), ops.zeros_like(softmax_sum),
                ops.zeros_like(query_rope), ops.zeros_like(key_rope), ops.zeros_like(qlen), ops.zeros_like(klen))

    return bprop


def make_dense_lightning_indexer_kl_loss_bprop(**attrs):
    """As the sparse loss's, without the selection input."""

    def bprop(query, key, query_index, key_index, weights, softmax_max, softmax_sum, query_rope, key_rope, qlen, klen,
              out, dout):
        scale = dout[3].astype(query_index.dtype)
        return (ops.zeros_like(query), ops.zeros_like(key), out[0] * scale, out[1] * scale, out[2] * scale,
                ops.zeros_like(softmax_max), ops.zeros_like(softmax_sum), ops.zeros_like(query_rope),
                ops.zeros_like(key_rope), ops.zeros_like(qlen), ops.zeros_like(klen))

    return bprop
