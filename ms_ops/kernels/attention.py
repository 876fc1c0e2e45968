"""The flash attention kernels (op descriptions): argument order, attributes and dtype rows shared
with ``aicore/attention/<op>/``. The public function is :func:`ms_ops.ops.attention.flash_attention_score`,
the gradient wiring in :mod:`ms_ops.bprop.attention`.
"""
from ms_ops._custom import BF16, F16, F32, OpDesc

# Attributes of both kernels: the problem the forward solved.
_ATTRS = (("head_num", "int"), ("scale_value", "float"), ("pre_tokens", "int"), ("next_tokens", "int"),
          ("input_layout", "str"), ("sparse_mode", "int"))

FLASH_ATTENTION_SCORE = OpDesc(
    name="flash_attention_score",
    inputs=("query", "key", "value"),
    outputs=("softmax_max", "softmax_sum", "attention_out"),
    attrs=_ATTRS,
    dtype_rows=tuple((t, t, t, F32, F32, t) for t in (F32, F16, BF16)),
)

FLASH_ATTENTION_SCORE_GRAD = OpDesc(
    name="flash_attention_score_grad",
    inputs=("query", "key", "value", "dy", "softmax_max", "softmax_sum", "attention_in"),
    outputs=("dq", "dk", "dv"),
    attrs=_ATTRS,
    dtype_rows=tuple((t, t, t, t, F32, F32, t, t, t, t) for t in (F32, F16, BF16)),
)
