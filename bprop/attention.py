"""Gradient of flash_attention_score (kernel flash_attention_score_grad).

With P the softmax of the visible logits (rebuilt from softmax_max and softmax_sum) and dO the
gradient of attention_out, D_i = rowsum(dO ∘ O):
    dV = Pᵀ dO,  dP = dO Vᵀ,  dS = P ∘ (dP − D),  dQ = scale · dS K,  dK = scale · dSᵀ Q
(GQA: a key/value head sums over the query heads that read it), and for a full
[B, N1, S1, S2] real_shift d real_shift = dS (pse_type 0) or scale · dS (pse_type 1); the other
real_shift forms get zeros (the public function stops their gradient). With dropout (keep bits Z,
from drop_mask or regenerated from dropout_seed exactly as the forward drew them) P V used
P ∘ Z / keep_prob: dV = (P ∘ Z / keep_prob)ᵀ dO and dP is dO Vᵀ ∘ Z / keep_prob. The statistics outputs
softmax_max and softmax_sum are not differentiated: their incoming gradients are ignored. attn_mask,
prefix, the sequence lengths, drop_mask and dropout_seed are not differentiable: their gradients
are zeros.
"""
from mindspore import ops

from ms_ops._custom import custom_op
from ms_ops.kernels.attention import FLASH_ATTENTION_SCORE_GRAD


def make_flash_attention_score_bprop(**attrs):
    grad_op = custom_op(FLASH_ATTENTION_SCORE_GRAD, api="flash_attention_score", **attrs)

    def bprop(query, key, value, real_shift, attn_mask, prefix, seq_q, seq_kv, drop_mask, dropout_seed, out, dout):
        dq, dk, dv, dpse = grad_op(query, key, value, dout[2], real_shift, attn_mask, prefix, seq_q, seq_kv, drop_mask,
                                   dropout_seed, out[0], out[1], out[2])
        return (dq, dk, dv, dpse, ops.zeros_like(attn_mask), ops.zeros_like(prefix), ops.zeros_like(seq_q),
                ops.zeros_like(seq_kv), ops.zeros_like(drop_mask), ops.zeros_like(dropout_seed))

    return bprop
