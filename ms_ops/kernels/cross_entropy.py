"""The kernels of the vocabulary-parallel fused linear + cross-entropy (op descriptions):
argument order, attributes and dtype rows shared with ``aicore/cross_entropy/<op>/``. The CANN
trio, the reduction of the per-token losses and its gradient, then grad_in_forward mode's two
kernels (the loss with both gradients, and their scaling in the backward). The public functions are in
:mod:`ms_ops.ops.cross_entropy`, the gradient wiring in :mod:`ms_ops.bprop.cross_entropy`.
"""
from ms_ops._custom import BF16, F16, F32, I32, I64, U8, OpDesc

FUSED_LINEAR_ONLINE_MAX_SUM = OpDesc(
    name="fused_linear_online_max_sum",
    inputs=("input", "weight", "target"),
    outputs=("logits_max_local", "sum_exp_logits_local", "predicted_logits_local", "target_mask",
             "masked_target", "vocab_parallel_logits", "sum_logits_local"),
    attrs=(("vocab_start_index", "int"), ("vocab_end_index", "int"), ("return_logits", "bool"),
           ("vocab_size", "int"), ("ignore_index", "int")),
    dtype_rows=tuple((t, t, g, F32, F32, F32, U8, g, F32, F32)
                     for t in (F32, F16, BF16) for g in (I32, I64)),
)

FUSED_CROSS_ENTROPY_LOSS_WITH_MAX_SUM = OpDesc(
    name="fused_cross_entropy_loss_with_max_sum",
    inputs=("logits_max", "sum_exp_logits", "predicted_logits", "sum_logits",
            "vocab_parallel_logits"),
    outputs=("loss", "softmax"),
    attrs=(("label_smoothing", "float"), ("vocab_size", "int"), ("has_logits", "bool")),
    dtype_rows=tuple((F32, F32, F32, F32, t, F32, F32) for t in (F32, F16, BF16)),
)

FUSED_LINEAR_CROSS_ENTROPY_LOSS_GRAD = OpDesc(
    name="fused_linear_cross_entropy_loss_grad",
    inputs=("grad", "input", "weight", "target_mask", "masked_target", "logits_max",
            "sum_exp_logits", "softmax"),
    outputs=("input_grad", "weight_grad"),
    attrs=(("label_smoothing", "float"), ("vocab_size", "int"), ("has_softmax", "bool")),
    dtype_rows=tuple((F32, t, t, U8, g, F32, F32, F32, t, t)
                     for t in (F32, F16, BF16) for g in (I32, I64)),
)

# out is [N] for reduction "none", else [1]; count ([1]) is what "mean" divides by.
CROSS_ENTROPY_LOSS_REDUCE = OpDesc(
    name="cross_entropy_loss_reduce",
    inputs=("loss", "target"),
    outputs=("out", "count"),
    attrs=(("ignore_index", "int"), ("reduction", "str")),
    dtype_rows=tuple((F32, g, F32, F32) for g in (I32, I64)),
)

CROSS_ENTROPY_LOSS_REDUCE_GRAD = OpDesc(
    name="cross_entropy_loss_reduce_grad",
    inputs=("dout", "target", "count"),
    outputs=("grad",),
    attrs=(("ignore_index", "int"), ("reduction", "str")),
    dtype_rows=tuple((F32, g, F32, F32) for g in (I32, I64)),
)

# ms_ops's own (no CANN counterpart): the per-token loss and both gradients of its sum in one
# pass, token block by token block ("grad in forward"); block_bytes bounds one block's fp32 logits.
FUSED_LINEAR_CROSS_ENTROPY_GRAD_IN_FORWARD = OpDesc(
    name="fused_linear_cross_entropy_grad_in_forward",
    inputs=("input", "weight", "target"),
    outputs=("loss", "input_grad", "weight_grad"),
    attrs=(("ignore_index", "int"), ("label_smoothing", "float"), ("block_bytes", "int")),
    dtype_rows=tuple((t, t, g, F32, t, t) for t in (F32, F16, BF16) for g in (I32, I64)),
)

# ms_ops's own: the backward of grad_in_forward mode. Scales the stored gradients of sum_r loss_r
# by dout ("sum") or dout / count ("mean"); zeros when count is 0.
CROSS_ENTROPY_GRAD_SCALE = OpDesc(
    name="cross_entropy_grad_scale",
    inputs=("input_grad", "weight_grad", "dout", "count"),
    outputs=("applied_scale",),
    attrs=(("reduction", "str"),),
    dtype_rows=tuple((t, t, F32, F32, F32) for t in (F32, F16, BF16)),
)
