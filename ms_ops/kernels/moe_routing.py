"""The MoE routing kernels (op descriptions): argument order, attributes and dtype rows shared
with ``aicore/moe_routing/<op>/``. The public functions are in :mod:`ms_ops.ops.moe_routing`, the
gradient wiring in :mod:`ms_ops.bprop.moe_routing`.
"""
from ms_ops._custom import BF16, F16, F32, I32, OpDesc

MOE_INIT_ROUTING = OpDesc(
    name="moe_init_routing",
    inputs=("x", "expert_idx"),
    outputs=("expanded_x", "expanded_row_idx", "expert_tokens_count_or_cumsum",
             "expert_tokens_before_capacity"),
    attrs=(("active_num", "int"), ("expert_capacity", "int"), ("expert_num", "int"),
           ("drop_pad_mode", "int"), ("expert_tokens_count_or_cumsum_flag", "int"),
           ("expert_tokens_before_capacity_flag", "bool")),
    dtype_rows=tuple((t, I32, t, I32, I32, I32) for t in (F32, F16, BF16)),
)

MOE_FINALIZE_ROUTING = OpDesc(
    name="moe_finalize_routing",
    inputs=("expanded_x", "expanded_row_idx", "x1", "x2", "bias", "scales", "expert_idx"),
    outputs=("out",),
    attrs=(("drop_pad_mode", "int"), ("has_x1", "bool"), ("has_x2", "bool"), ("has_bias", "bool"),
           ("has_scales", "bool")),
    dtype_rows=tuple((t, I32, t, t, t, s, I32, t)
                     for t in (F32, F16, BF16) for s in dict.fromkeys((t, F32))),
)

MOE_INIT_ROUTING_GRAD = OpDesc(
    name="moe_init_routing_grad",
    inputs=("grad_expanded_x", "expanded_row_idx"),
    outputs=("grad_x",),
    attrs=(("top_k", "int"), ("drop_pad_mode", "int"), ("active_num", "int")),
    dtype_rows=tuple((t, I32, t) for t in (F32, F16, BF16)),
)

MOE_FINALIZE_ROUTING_GRAD = OpDesc(
    name="moe_finalize_routing_grad",
    inputs=("grad_y", "expanded_row_idx", "expanded_x", "scales", "expert_idx", "bias"),
    outputs=("grad_expanded_x", "grad_scales", "grad_bias"),
    # drop_pad_mode: the forward's 0..3. Without expanded_x, grad_expanded_x's shape comes from
    # active_num (dropless) or expert_num x expert_capacity (drop/pad), as in CANN's V2Grad.
    attrs=(("drop_pad_mode", "int"), ("active_num", "int"), ("expert_num", "int"), ("expert_capacity", "int"),
           ("has_expanded_x", "bool"), ("has_bias", "bool"), ("has_scales", "bool")),
    dtype_rows=tuple((t, I32, t, s, I32, t, t, s, t)
                     for t in (F32, F16, BF16) for s in dict.fromkeys((t, F32))),
)
