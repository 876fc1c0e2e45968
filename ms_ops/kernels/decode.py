"""The decode kernels (op descriptions): argument order, attributes and dtype rows shared with
``aicore/decode/``. The public functions are in :mod:`ms_ops.ops.decode`.

The two cache writers update their cache inputs in place (the kernel writes into those buffers);
their one output is a small int32 count that lets a caller order later reads after the write.
"""
from ms_ops._custom import BF16, F16, F32, I32, OpDesc

_FLOATS = (F32, F16, BF16)

RESHAPE_AND_CACHE = OpDesc(
    name="reshape_and_cache",
    inputs=("key", "value", "key_cache", "value_cache", "slot_mapping"),
    outputs=("written_tokens",),
    attrs=(),
    dtype_rows=tuple((t, t, t, t, I32, I32) for t in _FLOATS),
)

COPY_BLOCKS = OpDesc(
    name="copy_blocks",
    inputs=("key_cache", "value_cache", "block_mapping"),
    outputs=("copied_blocks",),
    attrs=(),
    dtype_rows=tuple((t, t, I32, I32) for t in _FLOATS),
)

# q_seq_lens and alibi_slopes are always passed (a [1] placeholder when absent, with the flag
# attribute off), so that one kernel signature serves every call.
PAGED_ATTENTION = OpDesc(
    name="paged_attention",
    inputs=("query", "key_cache", "value_cache", "block_tables", "context_lens", "q_seq_lens", "alibi_slopes"),
    outputs=("attention_out",),
    attrs=(("head_num", "int"), ("scale_value", "float"), ("kv_head_num", "int"),
           ("has_q_seq_lens", "bool"), ("has_alibi", "bool")),
    dtype_rows=tuple((t, t, t, I32, I32, I32, F32, t) for t in _FLOATS),
)
