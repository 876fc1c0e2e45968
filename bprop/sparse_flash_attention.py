"""Gradient of sparse_flash_attention (kernel sparse_flash_attention_grad).

With P the softmax over each query row's visible selected keys (rebuilt from softmax_max and
softmax_sum), dO the gradient of attention_out and D = rowsum(dO ∘ O):
    dV_j = Σ P_j dO,  dP = dO Vᵀ,  dS = scale · P ∘ (dP − D),
    d[q | q_rope] = dS [K | K_rope],  d[k | k_rope]_j = Σ dS_j [q | q_rope]
over the query rows (and the group's query heads) that see key j. softmax_max and softmax_sum
are not differentiated; sparse_indices, the lengths and block_table get zeros. Paged keys
(layout_kv PA_BSND) have no gradient: MindSpore's SparseFlashAttentionGrad takes no block table.
"""
from mindspore import ops

from ms_ops._custom import custom_op
from ms_ops.kernels.sparse_flash_attention import SPARSE_FLASH_ATTENTION_GRAD


def _paged_bprop(query, key, value, sparse_indices, query_rope, key_rope, seq_q, seq_kv, block_table, out, dout):
    raise ValueError("sparse_flash_attention: no gradient with 'block_table' (layout_kv 'PA_BSND'): MindSpore's "
                     "SparseFlashAttentionGrad takes no block table")


def make_sparse_flash_attention_bprop(**attrs):
    if attrs["layout_kv"] == "PA_BSND":
        return _paged_bprop
    grad_op = custom_op(SPARSE_FLASH_ATTENTION_GRAD, api="sparse_flash_attention", **attrs)

    def bprop(query, key, value, sparse_indices, query_rope, key_rope, seq_q, seq_kv, block_table, out, dout):
        dq, dk, dv, dq_rope, dk_rope = grad_op(query, key, value, sparse_indices, dout[0], out[0], out[1], out[2],
                                               query_rope, key_rope, seq_q, seq_kv)
        return (dq, dk, dv, ops.zeros_like(sparse_indices), dq_rope, dk_rope, ops.zeros_like(seq_q),
                ops.zeros_like(seq_kv), ops.zeros_like(block_table))

    return bprop
