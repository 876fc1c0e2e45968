"""The lightning indexer kernels (op descriptions): argument order, attributes and dtype rows shared
with ``aicore/dsa/lightning_indexer*/``. The public functions are in :mod:`ms_ops.ops.dsa`, the
gradient wiring in :mod:`ms_ops.bprop.dsa`.

The sequence lengths (int64) and the indexer's block_table (int32, paged keys) are inputs after
the data tensors; an absent one is a [1] placeholder the kernel does not read (``has_lengths_*``
and ``layout_key`` say which are real).
"""
from ms_ops._custom import BF16, F16, F32, I32, I64, OpDesc

# Attributes of the indexer and its gradient: the problem the forward solved.
_ATTRS = (("layout_query", "str"), ("layout_key", "str"), ("sparse_count", "int"), ("sparse_mode", "int"),
          ("pre_tokens", "int"), ("next_tokens", "int"), ("has_lengths_query", "bool"),
          ("has_lengths_key", "bool"))

LIGHTNING_INDEXER = OpDesc(
    name="lightning_indexer",
    inputs=("query", "key", "weights", "actual_seq_lengths_query", "actual_seq_lengths_key", "block_table"),
    outputs=("sparse_indices", "sparse_values"),
    attrs=_ATTRS,
    dtype_rows=tuple((t, t, t, I64, I64, I32, I32, t) for t in (F32, F16, BF16)),
)

LIGHTNING_INDEXER_GRAD = OpDesc(
    name="lightning_indexer_grad",
    inputs=("query", "key", "dy", "sparse_indices", "weights", "actual_seq_lengths_query",
            "actual_seq_lengths_key"),
    outputs=("d_query", "d_key", "d_weights"),
    attrs=_ATTRS,
    dtype_rows=tuple((t, t, t, I32, t, I64, I64, t, t, t) for t in (F32, F16, BF16)),
)

# Attributes of both KL-loss kernels.
_KL_ATTRS = (("layout_query", "str"), ("layout_key", "str"), ("sparse_mode", "int"), ("pre_tokens", "int"),
             ("next_tokens", "int"), ("has_lengths_query", "bool"), ("has_lengths_key", "bool"),
             ("scale_value", "float"), ("has_rope", "bool"))

SPARSE_LIGHTNING_INDEXER_GRAD_KL_LOSS = OpDesc(
    name="sparse_lightning_indexer_grad_kl_loss",
    inputs=("query", "key", "query_index", "key_index", "weights", "sparse_indices", "softmax_max", "softmax_sum",
            "query_rope", "key_rope", "actual_seq_qlen", "actual_seq_klen"),
    outputs=("d_query_index", "d_key_index", "d_weights", "loss"),
    attrs=_KL_ATTRS,
    dtype_rows=tuple((t, t, t, t, t, I32, F32, F32, t, t, I64, I64, t, t, t, F32) for t in (F32, F16, BF16)),
)

DENSE_LIGHTNING_INDEXER_GRAD_KL_LOSS = OpDesc(
    name="dense_lightning_indexer_grad_kl_loss",
    inputs=("query", "key", "query_index", "key_index", "weights", "softmax_max", "softmax_sum", "query_rope",
            "key_rope", "actual_seq_qlen", "actual_seq_klen"),
    outputs=("d_query_index", "d_key_index", "d_weights", "loss"),
    attrs=_KL_ATTRS,
    dtype_rows=tuple((t, t, t, t, t, F32, F32, t, t, I64, I64, t, t, t, F32) for t in (F32, F16, BF16)),
)
