"""Gradients of the MoE routing ops.

moe_init_routing (dispatch, a gather of token rows):
    d x[r] = sum_k d expanded_x[expanded_row_idx[r*K + k]]      (kernel moe_init_routing_grad;
    dropped (-1) entries and rows past active_num contribute nothing). Consumes out[1].
moe_finalize_routing (combine):
    out[r] = x1[r] + x2[r] + sum_k s[r,k] (expanded_x[j(r,k)] + bias[e(r,k)])
    d expanded_x[j]      = sum over the pairs (r,k) with j(r,k) = j, in ascending r*K + k,
                           of s[r,k] d out[r]      (the index may repeat a slot)
    d s[r,k]             = <expanded_x[j(r,k)] + bias[e(r,k)], d out[r]>
    d bias[e]            = sum_{(r,k): e(r,k)=e} s[r,k] d out[r]
    d x1 = d x2 = d out                                          (kernel moe_finalize_routing_grad)
Integer inputs (indices) get zeros.
"""
from mindspore import ops

from ms_ops._custom import custom_op
from ms_ops.kernels.moe_routing import MOE_FINALIZE_ROUTING_GRAD, MOE_INIT_ROUTING_GRAD


def make_moe_init_routing_bprop(*, active_num, expert_capacity, expert_num, drop_pad_mode,
                                expert_tokens_count_or_cumsum_flag,
                                expert_tokens_before_capacity_flag):
    def bprop(x, expert_idx, out, dout):
        grad_op = custom_op(MOE_INIT_ROUTING_GRAD, api="moe_init_routing", top_k=expert_idx.shape[1],
                            drop_pad_mode=drop_pad_mode, active_num=active_num)
        return grad_op(dout[0], out[1]), ops.zeros_like(expert_idx)

    return bprop


def make_moe_finalize_routing_bprop(*, drop_pad_mode, has_x1, has_x2, has_bias, has_scales):
    grad_op = custom_op(MOE_FINALIZE_ROUTING_GRAD, api="moe_finalize_routing",
                        drop_pad_mode=drop_pad_mode, active_num=0, expert_num=0, expert_capacity=0,
                        has_expanded_x=True, has_bias=has_bias, has_scales=has_scales)

    def bprop(expanded_x, expanded_row_idx, x1, x2, bias, scales, expert_idx, out, dout):
        d_expanded_x, d_scales, d_bias = grad_op(dout, expanded_row_idx, expanded_x, scales,
                                                 expert_idx, bias)
        d_x1 = dout if has_x1 else ops.zeros_like(x1)
        d_x2 = dout if has_x2 else ops.zeros_like(x2)
        return (d_expanded_x, ops.zeros_like(expanded_row_idx), d_x1, d_x2, d_bias, d_scales,
                ops.zeros_like(expert_idx))

    return bprop
