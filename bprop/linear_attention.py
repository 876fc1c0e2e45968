"""Gradient of linear_attention (kernel linear_attention_grad).

With phi(x) = ELU(x) + 1, den_i the forward's normalizer, g_i = dO_i / den_i and
r_i = -(dO_i · out_i) / den_i (the gradient reaching den_i):
    dphi(Q)_i = Σ_s (g_i · V_s + r_i) phi(K_s),   dphi(K)_s = Σ_i (g_i · V_s + r_i) phi(Q_i),
    dV_s = Σ_i (phi(Q_i) · phi(K_s)) g_i,
over the pairs (i, s) that attend (s <= i when causal), then dQ = dphi(Q) · phi'(Q) with
phi'(x) = exp(min(x, 0)), and the same for K. The normalizer output is not differentiated: its
incoming gradient is ignored.
"""
from ms_ops._custom import custom_op
from ms_ops.kernels.linear_attention import LINEAR_ATTENTION_GRAD


def make_linear_attention_bprop(**attrs):
    grad_op = custom_op(LINEAR_ATTENTION_GRAD, api="linear_attention", **attrs)

    def bprop(query, key, value, out, dout):
        return grad_op(query, key, value, dout[0], out[0], out[1])

    return bprop
