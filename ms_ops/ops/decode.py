"""Paged-KV-cache decode: ``reshape_and_cache`` and ``copy_blocks`` (the cache writes) and
``paged_attention`` (query tokens against their sequences' cached keys and values through block
tables). Inference only: no gradients.

The caches are ``[num_blocks, block_size, N_kv, D]`` tensors, normally ``Parameter``s; their
bookkeeping (block tables, slot mappings, copy-on-write pairs) is :class:`ms_ops.kv_cache.BlockManager`.

**How the caches are updated.** As MindSpore's ``ops.reshape_and_cache``: in place. The kernels
write into the cache buffers they are given; nothing is copied. The primitives carry MindSpore's
``side_effect_mem`` attribute, so in GRAPH mode MindSpore's auto-monad orders a write to a cache
``Parameter`` against the other reads and writes of that ``Parameter`` in the same graph (a later
read sees the new tokens), and never drops the write as unused. Both functions also return the
caches, tied to the write by ``ops.depend``, for callers that pass plain tensors along instead of
``Parameter``s.
"""
import functools

import mindspore as ms
from mindspore import ops

from ms_ops._custom import custom_op
from ms_ops.kernels.decode import COPY_BLOCKS, PAGED_ATTENTION, RESHAPE_AND_CACHE
from ms_ops.ops._validation import FLOAT_DTYPES, check_dtype, check_rank, check_same_dtype, known

MAX_HEAD_DIM = 512


@functools.lru_cache(maxsize=None)
def _cache_writer(desc):
    # In place on its inputs: side_effect_mem makes GRAPH mode keep the call and order it against
    # the other reads and writes of the same Parameters (auto-monad).
    prim = custom_op(desc)
    prim.add_prim_attr("side_effect_mem", True)
    return prim


def _check_caches(op, key_cache, value_cache):
    check_rank(op, "key_cache", key_cache, 4)
    check_rank(op, "value_cache", value_cache, 4)
    check_dtype(op, "key_cache", key_cache, FLOAT_DTYPES)
    check_same_dtype(op, "value_cache", value_cache, "key_cache", key_cache)
    for axis in range(4):
        a, b = key_cache.shape[axis], value_cache.shape[axis]
        if known(a) and known(b) and a != b:
            raise ValueError(f"{op}: 'value_cache' must have key_cache's shape {key_cache.shape}, "
                             f"got {value_cache.shape}")


def _check_int32(op, name, t, rank):
    check_rank(op, name, t, rank)
    check_dtype(op, name, t, (ms.int32,))


def reshape_and_cache(key, value, key_cache, value_cache, slot_mapping):
    """Writes new tokens' keys and values into a paged KV cache, in place (MindSpore's
    ``ops.reshape_and_cache``): token ``t`` goes to flat slot ``s = slot_mapping[t]``, i.e. block
    ``s // block_size``, offset ``s % block_size``; ``s = -1`` skips the token (padding).

    Args:
        key, value: ``[T, N_kv, D]`` or ``[T, N_kv * D]``, the caches' dtype.
        key_cache, value_cache: ``[num_blocks, block_size, N_kv, D]``, float32, float16 or
            bfloat16, the same shape; updated in place (see the module docstring).
        slot_mapping: ``[T]`` int32 (``BlockManager.slot_mapping``).

    Returns:
        tuple: ``(key_cache, value_cache)``, the updated caches (the same buffers).

    Raises:
        TypeError, ValueError: bad shapes or dtypes (before anything is written).
        RuntimeError: a slot beyond ``num_blocks * block_size`` or two tokens with one slot,
            found by the kernel's entry before it writes anything.
    """
    op = "reshape_and_cache"
    _check_caches(op, key_cache, value_cache)
    check_rank(op, "key", key, (2, 3))
    check_rank(op, "value", value, (2, 3))
    check_same_dtype(op, "key", key, "key_cache", key_cache)
    check_same_dtype(op, "value", value, "key_cache", key_cache)
    same = value.ndim == key.ndim
    for axis in range(min(key.ndim, value.ndim)):
        if known(key.shape[axis]) and known(value.shape[axis]) and key.shape[axis] != value.shape[axis]:
            same = False
    if not same:
        raise ValueError(f"{op}: 'value' must have key's shape {key.shape}, got {value.shape}")
    n_kv, d = key_cache.shape[2], key_cache.shape[3]
    if key.ndim == 3:
        for axis, want, what in ((1, n_kv, "key_cache's N_kv"), (2, d, "key_cache's head dim")):
            if known(key.shape[axis]) and known(want) and key.shape[axis] != want:
                raise ValueError(f"{op}: 'key' dimension {axis} must equal {what} ({want}), got shape {key.shape}")
    elif known(key.shape[1]) and known(n_kv) and known(d) and key.shape[1] != n_kv * d:
        raise ValueError(f"{op}: 'key' dimension 1 must equal N_kv * D ({n_kv * d}), got shape {key.shape}")
    _check_int32(op, "slot_mapping", slot_mapping, 1)
    if known(slot_mapping.shape[0]) and known(key.shape[0]) and slot_mapping.shape[0] != key.shape[0]:
        raise ValueError(f"{op}: 'slot_mapping' must have one entry per token ({key.shape[0]}), "
                         f"got shape {slot_mapping.shape}")
    written = _cache_writer(RESHAPE_AND_CACHE)(key, value, key_cache, value_cache, slot_mapping)
    return ops.depend(key_cache, written), ops.depend(value_cache, written)


def copy_blocks(key_cache, value_cache, block_mapping):
    """Copies whole cache blocks in place: ``cache[dst] = cache[src]`` for every row ``(src, dst)``
    of ``block_mapping``, in both caches (the copy-on-write copies ``BlockManager.append``
    returns).

    Args:
        key_cache, value_cache: ``[num_blocks, block_size, N_kv, D]``, float32, float16 or
            bfloat16; updated in place (see the module docstring).
        block_mapping: ``[n, 2]`` int32 ``(src, dst)`` block ids.

    Returns:
        tuple: ``(key_cache, value_cache)``, the updated caches (the same buffers).

    Raises:
        TypeError, ValueError: bad shapes or dtypes.
        RuntimeError: an id outside the pool, a block copied into twice, or a block both read and
            overwritten (the result would depend on the order), found before anything is written.
    """
    op = "copy_blocks"
    _check_caches(op, key_cache, value_cache)
    _check_int32(op, "block_mapping", block_mapping, 2)
    if known(block_mapping.shape[1]) and block_mapping.shape[1] != 2:
        raise ValueError(f"{op}: 'block_mapping' must be [n, 2] (src, dst) pairs, got shape {block_mapping.shape}")
    copied = _cache_writer(COPY_BLOCKS)(key_cache, value_cache, block_mapping)
    return ops.depend(key_cache, copied), ops.depend(value_cache, copied)


@functools.lru_cache(maxsize=None)
def _placeholder(dtype):
    # The kernel signature is fixed; an absent optional input is a one-element stand-in.
    return ops.zeros((1,), dtype)


def paged_attention(query, key_cache, value_cache, block_tables, context_lens, head_num, scale_value,
                    kv_head_num, *, q_seq_lens=None, alibi_slopes=None):
    r"""Attention of new query tokens against a paged KV cache (the argument order of MindSpore's
    ``PagedAttention`` primitive).

    Sequence ``b`` holds ``c_b = context_lens[b]`` tokens (its new ones included) in the cache
    blocks ``block_tables[b, :ceil(c_b / block_size)]``; its key at position ``k`` is
    ``key_cache[block_tables[b, k // block_size], k % block_size]``. Without ``q_seq_lens`` each
    sequence has one query token (``query[b]``, decode); with it, sequence ``b`` has
    ``q_b = q_seq_lens[b]`` query tokens (chunked prefill), concatenated over the sequences in
    ``query``, and its token ``j`` sits at position ``p = c_b - q_b + j`` and sees the positions
    ``0..p`` (causal within the new tokens). For query head ``n`` (kv head ``n // (N / N_kv)``):

    .. math::
        s_k = \text{scale\_value}\; q \cdot K_k + \text{slope}_n (k - p), \qquad
        \text{out} = \sum_{k \le p} \operatorname{softmax}(s)_k V_k

    (the ALiBi term only with ``alibi_slopes``). A sequence with ``c_b = 0`` (padding) gives 0.
    The kernel runs an online softmax over the cache rows: no ``[S, S]`` buffer.

    Args:
        query: ``[T, N, D]`` or ``[T, N * D]``, float32, float16 or bfloat16.
        key_cache, value_cache: ``[num_blocks, block_size, N_kv, D]``, query's dtype; D in 1..512,
            any block_size (the kernel reads a block in runs of up to 64 rows; tested 16 to 512).
        block_tables: ``[B, max_blocks]`` int32 (``BlockManager.block_tables``); entries past a
            sequence's blocks are never read.
        context_lens: ``[B]`` int32 (``BlockManager.context_lens``).
        head_num (int): N. scale_value (float): the score scale, e.g. ``D ** -0.5``.
        kv_head_num (int): N_kv, dividing N (grouped-query attention).

    Keyword Args:
        q_seq_lens: ``[B]`` int32 query tokens per sequence, adding up to T; default: one each
            (then B = T).
        alibi_slopes: ``[N]`` float32 ALiBi slopes; default none.

    Returns:
        Tensor: query's shape and dtype. fp32 arithmetic throughout.

    Raises:
        TypeError, ValueError: bad shapes, dtypes or attributes.
        RuntimeError: values the kernel would follow that are wrong (a context length over its
            block table, a block id outside the pool, query lengths not adding up to T or over
            their context), found before the kernel runs.
    """
    op = "paged_attention"
    for name, value in (("head_num", head_num), ("kv_head_num", kv_head_num)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{op}: '{name}' must be an int, got {type(value).__name__}")
        if value < 1:
            raise ValueError(f"{op}: '{name}' must be >= 1, got {value}")
    if head_num % kv_head_num != 0:
        raise ValueError(f"{op}: 'kv_head_num' ({kv_head_num}) must divide 'head_num' ({head_num})")
    if isinstance(scale_value, bool) or not isinstance(scale_value, (int, float)):
        raise TypeError(f"{op}: 'scale_value' must be a float, got {type(scale_value).__name__}")
    check_rank(op, "query", query, (2, 3))
    check_dtype(op, "query", query, FLOAT_DTYPES)
    _check_caches(op, key_cache, value_cache)
    check_same_dtype(op, "key_cache", key_cache, "query", query)
    n_kv, d = key_cache.shape[2], key_cache.shape[3]
    if known(n_kv) and n_kv != kv_head_num:
        raise ValueError(f"{op}: 'key_cache' dimension 2 must equal kv_head_num ({kv_head_num}), "
                         f"got shape {key_cache.shape}")
    if known(d) and not 1 <= d <= MAX_HEAD_DIM:
        raise ValueError(f"{op}: 'key_cache' head dim must be 1..{MAX_HEAD_DIM}, got shape {key_cache.shape}")
    want = (head_num, d) if query.ndim == 3 else (head_num * d if known(d) else -1,)
    for axis, size in enumerate(want, 1):
        if known(size) and known(query.shape[axis]) and query.shape[axis] != size:
            raise ValueError(f"{op}: 'query' must be [T, head_num, D] or [T, head_num * D] with "
                             f"head_num={head_num} and the caches' D={d}, got shape {query.shape}")
    _check_int32(op, "block_tables", block_tables, 2)
    _check_int32(op, "context_lens", context_lens, 1)
    batch = block_tables.shape[0]
    if known(batch) and known(context_lens.shape[0]) and context_lens.shape[0] != batch:
        raise ValueError(f"{op}: 'context_lens' must have one entry per row of block_tables ({batch}), "
                         f"got shape {context_lens.shape}")
    if q_seq_lens is None:
        if known(batch) and known(query.shape[0]) and batch != query.shape[0]:
            raise ValueError(f"{op}: 'block_tables' must have one row per query token ({query.shape[0]}) "
                             f"without q_seq_lens, got shape {block_tables.shape}")
    else:
        _check_int32(op, "q_seq_lens", q_seq_lens, 1)
        if known(batch) and known(q_seq_lens.shape[0]) and q_seq_lens.shape[0] != batch:
            raise ValueError(f"{op}: 'q_seq_lens' must have one entry per sequence ({batch}), "
                             f"got shape {q_seq_lens.shape}")
    if alibi_slopes is not None:
        check_rank(op, "alibi_slopes", alibi_slopes, 1)
        check_dtype(op, "alibi_slopes", alibi_slopes, (ms.float32,))
        if known(alibi_slopes.shape[0]) and alibi_slopes.shape[0] != head_num:
            raise ValueError(f"{op}: 'alibi_slopes' must have head_num ({head_num}) entries, "
                             f"got shape {alibi_slopes.shape}")
    prim = custom_op(PAGED_ATTENTION, head_num=head_num, scale_value=float(scale_value), kv_head_num=kv_head_num,
                     has_q_seq_lens=q_seq_lens is not None, has_alibi=alibi_slopes is not None)
    q_lens = _placeholder(ms.int32) if q_seq_lens is None else q_seq_lens
    slopes = _placeholder(ms.float32) if alibi_slopes is None else alibi_slopes
    return prim(query, key_cache, value_cache, block_tables, context_lens, q_lens, slopes)
