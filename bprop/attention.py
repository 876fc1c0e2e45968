"""Gradient of flash_attention_score (kernel flash_attention_score_grad).

With P the softmax of the scaled visible scores (rebuilt from softmax_max and softmax_sum) and
dO the gradient of attention_out, D_i = rowsum(dO ∘ O):
    dV = Pᵀ dO,  dP = dO Vᵀ,  dS = P ∘ (dP − D),  dQ = scale · dS K,  dK = scale · dSᵀ Q
(GQA: a key/value head sums over the query heads that read it). The statistics outputs
softmax_max and softmax_sum are not differentiated: their incoming gradients are ignored.
"""
from ms_ops._custom import custom_op
from ms_ops.kernels.attention import FLASH_ATTENTION_SCORE_GRAD


def make_flash_attention_score_bprop(**attrs):
    grad_op = custom_op(FLASH_ATTENTION_SCORE_GRAD, api="flash_attention_score", **attrs)

    def bprop(query, key, value, out, dout):
        return grad_op(query, key, value, dout[2], out[0], out[1], out[2])

    return bprop
