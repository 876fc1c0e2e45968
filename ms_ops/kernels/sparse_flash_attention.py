"""The sparse flash attention kernels (op descriptions): argument order, attributes and dtype rows
shared with ``aicore/dsa/<op>/``. The public function is
:func:`ms_ops.ops.sparse_flash_attention.sparse_flash_attention`, the gradient wiring in
:mod:`ms_ops.bprop.sparse_flash_attention`.

query_rope and key_rope (the data dtype), the lengths (int64: cumulative with TND, per batch with
BSND) and block_table (int32, forward only: MindSpore's gradient takes none) are [1] placeholders
the kernels do not read when absent; the gradient kernel's d query_rope / d key_rope then have
the placeholder's shape.
"""
from ms_ops._custom import BF16, F16, F32, I32, I64, OpDesc

# Attributes of both kernels: the problem the forward solved.
_ATTRS = (("scale_value", "float"), ("sparse_block_size", "int"), ("layout", "str"), ("sparse_mode", "int"),
          ("layout_kv", "str"), ("has_lengths_query", "bool"), ("has_lengths_kv", "bool"), ("pre_tokens", "int"),
          ("next_tokens", "int"))

SPARSE_FLASH_ATTENTION = OpDesc(
    name="sparse_flash_attention",
    inputs=("query", "key", "value", "sparse_indices", "query_rope", "key_rope", "actual_seq_lengths_query",
            "actual_seq_lengths_kv", "block_table"),
    outputs=("attention_out", "softmax_max", "softmax_sum"),
    attrs=_ATTRS,
    dtype_rows=tuple((t, t, t, I32, t, t, I64, I64, I32, t, F32, F32) for t in (F32, F16, BF16)),
)

SPARSE_FLASH_ATTENTION_GRAD = OpDesc(
    name="sparse_flash_attention_grad",
    inputs=("query", "key", "value", "sparse_indices", "d_out", "attention_out", "softmax_max", "softmax_sum",
            "query_rope", "key_rope", "actual_seq_lengths_query", "actual_seq_lengths_kv"),
    outputs=("d_query", "d_key", "d_value", "d_query_rope", "d_key_rope"),
    attrs=_ATTRS,
    dtype_rows=tuple((t, t, t, I32, t, t, F32, F32, t, t, I64, I64, t, t, t, t, t) for t in (F32, F16, BF16)),
)
