"""The flash attention kernels (op descriptions): argument order, attributes and dtype rows shared
with ``aicore/attention/<op>/``. The public function is :func:`ms_ops.ops.attention.flash_attention_score`,
the gradient wiring in :mod:`ms_ops.bprop.attention`.

Both kernels take real_shift (query's dtype, or float32 slopes), attn_mask (bool or uint8), prefix,
actual_seq_qlen and actual_seq_kvlen (int64), drop_mask (uint8) after the data tensors, an absent
one being a [1] placeholder the kernel does not read, and dropout_seed (int64 [2]: the seed and
offset of the generated keep bits when keep_prob < 1 without drop_mask). The gradient kernel's dpse
has real_shift's shape and dtype.
"""
from ms_ops._custom import BF16, BOOL, F16, F32, I64, OpDesc, U8

# Attributes of both kernels: the problem the forward solved.
_ATTRS = (("head_num", "int"), ("scale_value", "float"), ("pre_tokens", "int"), ("next_tokens", "int"),
          ("input_layout", "str"), ("sparse_mode", "int"), ("pse_type", "int"), ("keep_prob", "float"))

_OPTIONAL = ("real_shift", "attn_mask", "prefix", "actual_seq_qlen", "actual_seq_kvlen", "drop_mask", "dropout_seed")

# (data dtype, real_shift dtype, attn_mask dtype) of every supported call.
_COMBOS = tuple((t, p, m) for t in (F32, F16, BF16) for p in ((t,) if t == F32 else (t, F32)) for m in (U8, BOOL))

FLASH_ATTENTION_SCORE = OpDesc(
    name="flash_attention_score",
    inputs=("query", "key", "value") + _OPTIONAL,
    outputs=("softmax_max", "softmax_sum", "attention_out"),
    attrs=_ATTRS,
    dtype_rows=tuple((t, t, t, p, m, I64, I64, I64, U8, I64, F32, F32, t) for t, p, m in _COMBOS),
)

FLASH_ATTENTION_SCORE_GRAD = OpDesc(
    name="flash_attention_score_grad",
    inputs=("query", "key", "value", "dy") + _OPTIONAL + ("softmax_max", "softmax_sum", "attention_in"),
    outputs=("dq", "dk", "dv", "dpse"),
    attrs=_ATTRS,
    dtype_rows=tuple((t, t, t, t, p, m, I64, I64, I64, U8, I64, F32, F32, t, t, t, t, p) for t, p, m in _COMBOS),
)
