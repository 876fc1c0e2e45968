"""xformers' ``memory_efficient_attention`` over the flash attention kernels: the same call, tensor
layouts and :mod:`ms_ops.attn_bias` masks, run by :func:`ms_ops.flash_attention_score` (and its
gradient kernel)."""
import math

import mindspore as ms
from mindspore import ops

from ms_ops.ops import attn_bias as ab
from ms_ops.ops._attention_args import compressed_mask
from ms_ops.ops._validation import FLOAT_DTYPES, check_dtype, check_same_dtype, check_tensor, known
from ms_ops.ops.attention import flash_attention_score

_OP = "memory_efficient_attention"


def _check_dim(name, t, axis, expected, what, ref):
    dim = t.shape[axis]
    if known(dim) and known(expected) and dim != expected:
        raise ValueError(f"{_OP}: '{name}' {what} must be {expected} (as {ref}'s), got shape {t.shape}")


def _check_shapes(query, key, value):
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_tensor(_OP, name, t)
    if query.ndim not in (3, 4, 5):
        raise ValueError(f"{_OP}: 'query' must be [B, M, K], [B, M, H, K] or [B, M, G, H, K], got shape {query.shape}")
    for name, t in (("key", key), ("value", value)):
        if t.ndim != query.ndim:
            raise ValueError(f"{_OP}: '{name}' must be {query.ndim}-D like query {query.shape}, got shape {t.shape}")
    check_dtype(_OP, "query", query, FLOAT_DTYPES)
    check_same_dtype(_OP, "key", key, "query", query)
    check_same_dtype(_OP, "value", value, "query", query)
    rank = query.ndim
    _check_dim("key", key, 0, query.shape[0], "batch size B", "query")
    _check_dim("key", key, rank - 1, query.shape[-1], "head dim K", "query")
    for axis in range(rank - 1):
        _check_dim("value", value, axis, key.shape[axis], f"dimension {axis}", "key")
    kv = value.shape[-1]
    if known(kv) and known(key.shape[-1]) and not 1 <= kv <= key.shape[-1]:
        raise ValueError(f"{_OP}: 'value' head dim Kv must be 1..K = {key.shape[-1]} (key's; the kernels need "
                         f"Kv <= K), got shape {value.shape}")
    k = query.shape[-1]
    if known(k) and not 1 <= k <= 512:
        raise ValueError(f"{_OP}: 'query' head dim K must be 1..512, got {k}")
    if rank == 4:
        hq, hk = query.shape[2], key.shape[2]
        if known(hq) and known(hk) and (hk < 1 or hq % hk != 0):
            raise ValueError(f"{_OP}: 'key' has {hk} heads, which must divide query's {hq}")
    if rank == 5:
        _check_dim("key", key, 2, query.shape[2], "group count G", "query")
        hq, hk = query.shape[3], key.shape[3]
        if known(hq) and known(hk) and hk not in (1, hq):
            raise ValueError(f"{_OP}: 'key' must have 1 or {hq} heads per group (query's), got shape {key.shape}")


def _movable(t):
    """``t`` in a dtype MindSpore can reshape: its CPU kernels of Reshape, ExpandDims and Squeeze
    have no bfloat16 (GRAPH mode), so bfloat16 moves as float32, which holds every bfloat16 value
    exactly (the kernels still get bfloat16)."""
    return t.astype(ms.float32) if t.dtype == ms.bfloat16 else t


def _to_bsnd(t):
    """[B, S, K], [B, S, H, K] or [B, S, G, H, K] -> [B, S, heads, K] in t's dtype."""
    if t.ndim == 4:
        return t
    moved = _movable(t)
    if t.ndim == 3:
        return ops.expand_dims(moved, 2).astype(t.dtype)
    return moved.reshape(t.shape[0], t.shape[1], t.shape[2] * t.shape[3], t.shape[4]).astype(t.dtype)


def _from_bsnd(out, query):
    """The kernel's [B, M, heads, Kv] output in query's layout, with value's head dim Kv."""
    if query.ndim == 4:
        return out
    moved = _movable(out)
    if query.ndim == 3:
        return ops.squeeze(moved, 2).astype(out.dtype)
    return moved.reshape(query.shape[:-1] + (out.shape[-1],)).astype(out.dtype)


def _check_scalars(p, scale):
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"{_OP}: 'p' must be a float, got {type(p).__name__}")
    if not 0.0 <= p < 1.0:
        raise ValueError(f"{_OP}: 'p' (dropout probability) must be in [0, 1), got {p}")
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))):
        raise TypeError(f"{_OP}: 'scale' must be a float or None, got {type(scale).__name__}")


def _dense_bias(bias, query, key):
    """An additive bias in query's layout, ``[B or 1, (G,) (H,) M, N]``, as real_shift
    ``[B or 1, heads, M, N]``."""
    check_same_dtype(_OP, "attn_bias", bias, "query", query)
    rank = query.ndim
    heads = tuple(query.shape[2:rank - 1])
    expected = (query.shape[0],) + heads + (query.shape[1], key.shape[1])
    fits = bias.ndim == rank
    for axis in range(rank if fits else 0):
        b, e = bias.shape[axis], expected[axis]
        if known(b) and known(e) and b != e and not (axis == 0 and b == 1):
            fits = False
    if not fits:
        want = ", ".join(str(d) for d in (f"{query.shape[0]} or 1",) + expected[1:])
        raise ValueError(f"{_OP}: 'attn_bias' must have shape [{want}] for query {query.shape} and key "
                         f"{key.shape}, got {bias.shape}")
    if rank == 3:
        return ops.expand_dims(_movable(bias), 1).astype(bias.dtype)
    if rank == 5:
        return _movable(bias).reshape(bias.shape[0], heads[0] * heads[1], bias.shape[3],
                                      bias.shape[4]).astype(bias.dtype)
    return bias


def _packed(t):
    """[1, T, N, K] -> [T, N, K] in t's dtype."""
    return ops.squeeze(_movable(t), 0).astype(t.dtype)


def _block_diagonal(q, k, v, bias, heads, scale, sparse_mode, keep_prob):
    """Packed sequences [1, T, N, K] as one TND call: each sequence attends within itself."""
    if known(q.shape[0]) and q.shape[0] != 1:
        raise ValueError(f"{_OP}: 'attn_bias' {type(bias).__name__} needs batch size 1 (sequences packed "
                         f"along dimension 1), got query shape {q.shape}")
    for name, t, info in (("query", q, bias.q_seqinfo), ("key", k, bias.k_seqinfo)):
        if known(t.shape[1]) and t.shape[1] != info.total:
            raise ValueError(f"{_OP}: '{name}' has {t.shape[1]} rows but 'attn_bias' packs {info.total} "
                             f"(lengths {info.seqlen_py})")
    out = flash_attention_score(_packed(q), _packed(k), _packed(v), heads,
                                attn_mask=compressed_mask(sparse_mode) if sparse_mode else None,
                                actual_seq_qlen=list(bias.q_seqinfo.seqstart_py[1:]),
                                actual_seq_kvlen=list(bias.k_seqinfo.seqstart_py[1:]), scalar_value=scale,
                                input_layout="TND", sparse_mode=sparse_mode, keep_prob=keep_prob)
    return ops.expand_dims(_movable(out), 0).astype(out.dtype)


def memory_efficient_attention(query, key, value, attn_bias=None, p=0.0, scale=None):
    r"""Attention as ``xformers.ops.memory_efficient_attention``, computed by the flash attention
    kernels (no ``M x N`` score matrix in memory):

    .. math::
        \text{out} = \operatorname{softmax}(\text{scale}\cdot Q K^\top + \text{bias})\, V

    per batch and head, the softmax over the keys the bias leaves visible.

    Args:
        query: ``[B, M, H, K]``; also ``[B, M, K]`` (one head) or ``[B, M, G, H, K]`` (grouped
            query attention: G groups of H query heads); float32, float16 or bfloat16.
        key, value: ``[B, N, Hk, K]`` with Hk dividing H (query head h reads key head
            ``h // (H // Hk)``; xformers itself requires Hk = H here), ``[B, N, K]``, or
            ``[B, N, G, 1 or H, K]`` (one key head per group, broadcast to its H query heads, as
            xformers' expanded 5-D keys). Query's dtype; key has query's head dim K (1..512),
            value any head dim Kv <= K (xformers allows any Kv; the kernels need Kv <= K), which
            the output takes.
        attn_bias: None (every key), :class:`ms_ops.attn_bias.LowerTriangularMask` (causal,
            top-left aligned: query i sees keys ``j <= i`` also when M != N),
            :class:`ms_ops.attn_bias.BlockDiagonalMask` or
            :class:`ms_ops.attn_bias.BlockDiagonalCausalMask` (packed sequences; B must be 1 and
            M, N the total query and key lengths; one TND call of the kernels), or a Tensor: an
            additive bias of query's dtype, ``[B or 1, H, M, N]`` (``[B or 1, M, N]``,
            ``[B or 1, G, H, M, N]``), added after the scaling (``-inf`` hides a key); its
            gradient is computed when its batch is B, zeros for a batch of 1.
        p (float): dropout probability in [0, 1): flash_attention_score's ``keep_prob = 1 - p``, the
            keep bits drawn in the kernels with a fresh seed per call (``ms.set_seed`` makes a run
            reproducible).
        scale (float, optional): the scale of ``Q K^T``. Default ``1 / sqrt(K)``.

    Returns:
        Tensor: query's shape with value's head dim Kv (``[B, M, H, Kv]``, ``[B, M, Kv]`` or
        ``[B, M, G, H, Kv]``) and query's dtype.
        The queries of a packed sequence with no keys (kv length 0) output 0 and get a zero
        gradient.

    Gradients flow to query, key and value through ``flash_attention_score_grad``.

    Memory: the packed masks, the 3-D and the 5-D forms reach the kernels through reshapes, which
    MindSpore's CPU backend copies in a differentiated GRAPH-mode function and keeps for the
    gradient: about four tensors of query's size more than calling
    :func:`ms_ops.flash_attention_score` in the kernels' layout (``input_layout="TND"`` with
    ``actual_seq_qlen`` / ``actual_seq_kvlen`` for packed sequences; 260 MiB at 16384 tokens, 8
    heads of 128, fp32).
    """
    _check_shapes(query, key, value)
    _check_scalars(p, scale)
    if scale is None:
        if not known(query.shape[-1]):
            raise ValueError(f"{_OP}: 'scale' must be given when the head dim of query {query.shape} is dynamic")
        scale = 1.0 / math.sqrt(query.shape[-1])
    q, k, v = _to_bsnd(query), _to_bsnd(key), _to_bsnd(value)
    heads, keep_prob = q.shape[2], 1.0 - float(p)
    if attn_bias is None:
        out = flash_attention_score(q, k, v, heads, scalar_value=float(scale), input_layout="BSND", keep_prob=keep_prob)
    elif isinstance(attn_bias, ab.BlockDiagonalMask):
        sparse_mode = 2 if isinstance(attn_bias, ab.BlockDiagonalCausalMask) else 0
        out = _block_diagonal(q, k, v, attn_bias, heads, float(scale), sparse_mode, keep_prob)
    elif isinstance(attn_bias, ab.LowerTriangularMask):
        out = flash_attention_score(q, k, v, heads, attn_mask=compressed_mask(2), scalar_value=float(scale),
                                    input_layout="BSND", sparse_mode=2, keep_prob=keep_prob)
    elif isinstance(attn_bias, ms.Tensor):
        out = flash_attention_score(q, k, v, heads, real_shift=_dense_bias(attn_bias, query, key),
                                    scalar_value=float(scale), input_layout="BSND", pse_type=0, keep_prob=keep_prob)
    else:
        raise TypeError(f"{_OP}: 'attn_bias' must be None, an ms_ops.attn_bias mask or a Tensor, got "
                        f"{type(attn_bias).__name__}")
    return _from_bsnd(out, query)
