"""The linear attention kernels (op descriptions): argument order, attributes and dtype rows shared
with ``aicore/attention/linear_attention*/``. The public function is
:func:`ms_ops.ops.linear_attention.linear_attention`, the gradient wiring in
:mod:`ms_ops.bprop.linear_attention`.
"""
from ms_ops._custom import BF16, F16, F32, OpDesc

# Attributes of both kernels: the problem the forward solved.
_ATTRS = (("causal", "bool"), ("eps", "float"), ("input_layout", "str"))

LINEAR_ATTENTION = OpDesc(
    name="linear_attention",
    inputs=("query", "key", "value"),
    outputs=("attention_out", "normalizer"),
    attrs=_ATTRS,
    dtype_rows=tuple((t, t, t, t, F32) for t in (F32, F16, BF16)),
)

LINEAR_ATTENTION_GRAD = OpDesc(
    name="linear_attention_grad",
    inputs=("query", "key", "value", "dout", "attention_out", "normalizer"),
    outputs=("dq", "dk", "dv"),
    attrs=_ATTRS,
    dtype_rows=tuple((t, t, t, t, t, F32, t, t, t) for t in (F32, F16, BF16)),
)
