"""DeepSeek sparse attention's main attention: ``sparse_flash_attention`` (ops-transformer
SparseFlashAttention), differentiable with respect to query, key, value, query_rope and key_rope.
Signature and defaults are MindSpore's ``ops.sparse_flash_attention``.
"""
import mindspore as ms
from mindspore import ops

from ms_ops._custom import custom_op
from ms_ops.bprop.sparse_flash_attention import make_sparse_flash_attention_bprop
from ms_ops.kernels.sparse_flash_attention import SPARSE_FLASH_ATTENTION
from ms_ops.ops._validation import (FLOAT_DTYPES, check_block_table, check_dtype, check_int, check_same_dtype,
                                   check_tensor, known, sequence_lengths)

_OP = "sparse_flash_attention"
_FAR = 2**63 - 1
_LAYOUTS = {"BSND": 4, "TND": 3}


def _placeholder(dtype):
    """The [1] tensor standing in for an absent optional input (the kernel never reads it)."""
    return ops.zeros((1,), dtype)


def _check_dim(name, t, axis, want, what):
    if known(t.shape[axis]) and known(want) and t.shape[axis] != want:
        raise ValueError(f"{_OP}: '{name}' dimension {axis} must equal {what} ({want}), got shape {t.shape}")


def _check_tensors(query, key, value, sparse_indices, query_rope, key_rope, layout, paged):
    # Query and sparse_indices in the query layout; key and value 4-D [blocks, block_size, N2, D]
    # when paged, whatever the query layout.
    rank = _LAYOUTS[layout]
    krank = 4 if paged else rank
    for name, t, want in (("query", query, rank), ("key", key, krank), ("value", value, krank),
                          ("sparse_indices", sparse_indices, rank)):
        check_tensor(_OP, name, t)
        if t.ndim != want:
            what = "layout_kv 'PA_BSND'" if want != rank else f"layout '{layout}'"
            raise ValueError(f"{_OP}: '{name}' must be {want}-D for {what}, got shape {t.shape}")
    check_dtype(_OP, "query", query, FLOAT_DTYPES)
    check_same_dtype(_OP, "key", key, "query", query)
    check_same_dtype(_OP, "value", value, "query", query)
    check_dtype(_OP, "sparse_indices", sparse_indices, (ms.int32,))
    n, d = rank - 2, rank - 1
    n1, n2 = query.shape[n], key.shape[-2]
    if known(n1) and known(n2) and (n2 < 1 or n1 % n2 != 0):
        raise ValueError(f"{_OP}: 'key' has {n2} heads, which must divide query's {n1} (GQA/MQA)")
    _check_dim("key", key, krank - 1, query.shape[d], "query's head dim")
    for axis in range(krank - 1):
        _check_dim("value", value, axis, key.shape[axis], "key's")
    for axis in range(rank - 2):
        _check_dim("sparse_indices", sparse_indices, axis, query.shape[axis], "query's")
    _check_dim("sparse_indices", sparse_indices, n, n2, "key's head count")
    if rank == 4 and not paged:
        _check_dim("key", key, 0, query.shape[0], "query's batch")
    if (query_rope is None) != (key_rope is None):
        given, missing = ("query_rope", "key_rope") if key_rope is None else ("key_rope", "query_rope")
        raise ValueError(f"{_OP}: '{given}' is given without '{missing}' (the rope parts come in pairs)")
    if query_rope is None:
        return
    for name, t, ref in (("query_rope", query_rope, query), ("key_rope", key_rope, key)):
        check_tensor(_OP, name, t)
        check_same_dtype(_OP, name, t, "query", query)
        if t.ndim != ref.ndim:
            raise ValueError(f"{_OP}: '{name}' must be {ref.ndim}-D as its tensor, got shape {t.shape}")
        for axis in range(ref.ndim - 1):
            _check_dim(name, t, axis, ref.shape[axis], "the matching tensor's")
    _check_dim("key_rope", key_rope, krank - 1, query_rope.shape[d], "query_rope's head dim")


def sparse_flash_attention(query, key, value, sparse_indices, scale_value, *, block_table=None,
                           actual_seq_lengths_query=None, actual_seq_lengths_kv=None, query_rope=None, key_rope=None,
                           sparse_block_size=1, layout_query="BSND", layout_kv="BSND", sparse_mode=3,
                           pre_tokens=_FAR, next_tokens=_FAR, attention_mode=0, return_softmax_lse=False):
    r"""Attention of every query row over only the keys its index list selects:

    .. math::
        \text{out}_{t,n} = \sum_{j \in J(t)} \operatorname{softmax}_j\big(\text{scale}\cdot
        (q_{t,n}\cdot k_j + q^{rope}_{t,n}\cdot k^{rope}_j)\big)\, v_j

    where J(t) are the keys of row t's sequence selected by ``sparse_indices[t, n2, :]`` for the
    key head ``n2 = n // (N1 / N2)`` (GQA/MQA), entry e selecting keys
    ``[e * sparse_block_size, (e + 1) * sparse_block_size)`` (those past the sequence's end are
    skipped), -1 entries none, and, with sparse_mode 3, only keys ``j <= i + S2 - S1`` of query
    i (causal from the bottom-right corner) even when selected.

    Args:
        query: ``[B, S1, N1, D]`` (BSND) or ``[T1, N1, D]`` (TND), float32, float16 or bfloat16.
        key: ``[B, S2, N2, D]`` or ``[T2, N2, D]``, query's dtype, N1 a multiple of N2.
        value: key's shape but its own head dim Dv, query's dtype.
        sparse_indices: int32 ``[B, S1, N2, K]`` or ``[T1, N2, K]``: block indices in
            ``[0, ceil(S2 / sparse_block_size))`` of the row's sequence (S2 its key length), or -1;
            no repeats in a list (the kernel checks the values: RuntimeError naming the entry). K
            is not capped.
        scale_value (float): the scale of the scores.
        block_table (Tensor, optional): paged keys, exactly with layout_kv "PA_BSND": int32
            ``[B, max_blocks]``; key and value are then ``[num_blocks, block_size, N2, D]`` and key
            position p of batch b is row ``p % block_size`` of block ``block_table[b, p // block_size]``.
            Forward only: MindSpore's gradient takes no block table (ms.grad raises ValueError).
        actual_seq_lengths_query, actual_seq_lengths_kv (list of int or int Tensor): with TND
            required: cumulative lengths, one per sequence, the last one T1 / T2 (lengths 0
            allowed). With BSND optional: one length per batch, in [0, S1] / [0, S2] (query rows
            past their length output 0 and get no gradient; keys past it are never seen; their
            rows' index lists are not read). With PA_BSND, actual_seq_lengths_kv is required and
            per sequence (one per batch, or per TND query sequence), not cumulative.
        query_rope, key_rope (Tensor, optional): together or not at all: query's / key's shape
            with the rope head dim Dr (the MLA layout, e.g. D = 512 + Dr = 64).
        sparse_block_size (int): keys per index entry, >= 1.
        layout_query, layout_kv (str): "BSND" or "TND", the same for both, or "PA_BSND" keys
            (block_table) with either query layout, as MindSpore allows.
        sparse_mode (int): 3 (default, causal from the bottom-right) or 0 (every selected key).
        pre_tokens, next_tokens (int): a band on the selected keys, anchored like sparse_mode 3 at
            the bottom-right: query i of a sequence with S1 queries and S2 keys sees key p only if
            ``i + S2 - S1 - pre_tokens <= p <= i + S2 - S1 + next_tokens`` (sparse_mode 3 caps
            next_tokens at 0). The defaults 2**63-1 are no band (Ascend accepts only those).
        attention_mode (int): 0, 1 or 2 (2: MindSpore's MLA-absorb mode); the math is the same.
        return_softmax_lse (bool): accepted for compatibility; the statistics are always returned.

    Returns:
        tuple: (attention_out ``[.., N1, Dv]`` in query's dtype, softmax_max, softmax_sum), the
        statistics float32 ``[B, N2, S1, N1/N2]`` or ``[N2, T1, N1/N2]``: each row's max of the
        scaled scores and the sum of exp(score - max). A row with no visible key outputs 0, max the
        lowest float32 and sum 0. Valid in GRAPH and PYNATIVE mode.

    Gradient: d query, d key, d value, d query_rope, d key_rope by the kernel
    sparse_flash_attention_grad (deterministic: each block adds its tokens' key gradients into its
    own float32 partial sums in order, and the blocks' sums are added in a fixed pairwise order);
    the statistics outputs are not differentiated.
    """
    if layout_query not in _LAYOUTS:
        raise ValueError(f"{_OP}: 'layout_query' must be 'BSND' or 'TND', got {layout_query!r}")
    paged = layout_kv == "PA_BSND"
    if layout_kv != layout_query and not paged:
        raise ValueError(f"{_OP}: 'layout_kv' {layout_kv!r} must equal 'layout_query' {layout_query!r} "
                         f"(or be 'PA_BSND')")
    check_block_table(_OP, block_table, paged, "layout_kv", layout_kv)
    check_int(_OP, "sparse_mode", sparse_mode, allowed=(0, 3))
    check_int(_OP, "sparse_block_size", sparse_block_size, low=1)
    check_int(_OP, "attention_mode", attention_mode, allowed=(0, 1, 2))
    for name, v in (("pre_tokens", pre_tokens), ("next_tokens", next_tokens)):
        check_int(_OP, name, v)
    if not isinstance(return_softmax_lse, bool):
        raise TypeError(f"{_OP}: 'return_softmax_lse' must be a bool, got {type(return_softmax_lse).__name__}")
    if isinstance(scale_value, bool) or not isinstance(scale_value, (int, float)):
        raise TypeError(f"{_OP}: 'scale_value' must be a float, got {type(scale_value).__name__}")
    _check_tensors(query, key, value, sparse_indices, query_rope, key_rope, layout_query, paged)
    seq_q, seq_kv, has_q, has_kv = sequence_lengths(_OP, query, key, layout_query, actual_seq_lengths_query,
                                                    actual_seq_lengths_kv, key_name="actual_seq_lengths_kv",
                                                    layout_key_name="layout_kv", paged=paged)
    tnd = layout_query == "TND"
    if query_rope is None:
        query_rope = key_rope = _placeholder(query.dtype)
    table = block_table if paged else _placeholder(ms.int32)
    prim = custom_op(SPARSE_FLASH_ATTENTION, make_sparse_flash_attention_bprop, scale_value=float(scale_value),
                     sparse_block_size=sparse_block_size, layout=layout_query, sparse_mode=sparse_mode,
                     layout_kv=layout_kv, has_lengths_query=has_q and not tnd,
                     has_lengths_kv=has_kv and (paged or not tnd),
                     pre_tokens=pre_tokens, next_tokens=next_tokens)
    return prim(query, key, value, sparse_indices, query_rope, key_rope, seq_q, seq_kv, table)
