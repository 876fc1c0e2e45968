"""DeepSeek sparse attention's indexer: ``lightning_indexer`` (MindSpore's signature), differentiable
through its selected values with respect to query, key and weights, and its training loss
``sparse_lightning_indexer_kl_loss`` (one fused kernel for the loss and its gradients).
"""
import mindspore as ms
from mindspore import ops

from ms_ops._custom import custom_op
from ms_ops.bprop.dsa import (make_dense_lightning_indexer_kl_loss_bprop, make_lightning_indexer_bprop,
                              make_sparse_lightning_indexer_kl_loss_bprop)
from ms_ops.kernels.lightning_indexer import (DENSE_LIGHTNING_INDEXER_GRAD_KL_LOSS, LIGHTNING_INDEXER,
                                              SPARSE_LIGHTNING_INDEXER_GRAD_KL_LOSS)
from ms_ops.ops._validation import (FLOAT_DTYPES, check_block_table, check_dtype, check_int, check_same_dtype,
                                   check_tensor, known, sequence_lengths)

_LI = "lightning_indexer"
_KL = "sparse_lightning_indexer_kl_loss"
_DENSE = "dense_lightning_indexer_kl_loss"
_LAYOUTS = ("BSND", "TND")
_FAR = 9223372036854775807  # 2**63 - 1, written out: GRAPH mode parses defaults and overflows on 2**63
MAX_SPARSE_COUNT = 2048


def _check_indexer(query, key, weights, layout_query, layout_key, sparse_count, sparse_mode, pre_tokens,
                   next_tokens, block_table, op=_LI):
    if layout_query not in _LAYOUTS:
        raise ValueError(f"{op}: 'layout_query' must be one of {_LAYOUTS}, got {layout_query!r}")
    paged = op == _LI and layout_key == "PA_BSND"
    if layout_key != layout_query and not paged:
        also = " or 'PA_BSND'" if op == _LI else ""
        raise ValueError(f"{op}: 'layout_key' must equal layout_query ({layout_query!r}){also}, got {layout_key!r}")
    check_block_table(op, block_table, paged, "layout_key", layout_key)
    check_int(op, "sparse_count", sparse_count, low=1)
    if sparse_count > MAX_SPARSE_COUNT:
        raise ValueError(f"{op}: 'sparse_count' must be in [1, {MAX_SPARSE_COUNT}], got {sparse_count}")
    check_int(op, "sparse_mode", sparse_mode, allowed=(0, 3))
    for name, v in (("pre_tokens", pre_tokens), ("next_tokens", next_tokens)):
        check_int(op, name, v)
        # The KL losses take a band (which keys count); the indexer only the default.
        if v != _FAR and op == _LI:
            raise ValueError(f"{op}: '{name}' accepts only the default 2**63-1, got {v}")
    rank = 3 if layout_query == "TND" else 4
    # The KL losses check their index tensors here: name them as their callers do.
    qn, kn = ("query", "key") if op == _LI else ("query_index", "key_index")
    for name, t in ((qn, query), (kn, key), ("weights", weights)):
        check_tensor(op, name, t)
        want = rank - 1 if name == "weights" else 4 if name == kn and paged else rank
        if t.ndim != want:
            raise ValueError(f"{op}: '{name}' must be {want}-D for layout {layout_query!r}, got shape {t.shape}")
    check_dtype(op, qn, query, FLOAT_DTYPES)
    check_same_dtype(op, kn, key, qn, query)
    check_same_dtype(op, "weights", weights, qn, query)
    n1, d, n2 = query.shape[-2], query.shape[-1], key.shape[-2]
    if known(d) and known(key.shape[-1]) and d != key.shape[-1]:
        raise ValueError(f"{op}: '{kn}' head dim must equal {qn}'s ({d}), got shape {key.shape}")
    if known(n1) and known(n2) and (n2 < 1 or n1 % n2 != 0):
        raise ValueError(f"{op}: '{kn}' heads ({n2}) must divide {qn}'s heads ({n1})")
    for axis in range(rank - 1):
        a, b = query.shape[axis], weights.shape[axis]
        if known(a) and known(b) and a != b:
            raise ValueError(f"{op}: 'weights' must have {qn}'s leading dims {query.shape[:-1]}, got {weights.shape}")
    if rank == 4 and not paged and known(query.shape[0]) and known(key.shape[0]) and query.shape[0] != key.shape[0]:
        raise ValueError(f"{op}: '{kn}' batch must equal {qn}'s ({query.shape[0]}), got shape {key.shape}")


def lightning_indexer(query, key, weights, *, actual_seq_lengths_query=None, actual_seq_lengths_key=None,
                      block_table=None, layout_query="BSND", layout_key="BSND", sparse_count=2048, sparse_mode=3,
                      pre_tokens=_FAR, next_tokens=_FAR, return_value=False):
    r"""DeepSeek-V3.2's lightning indexer: for every query token t and key head n the index scores

    .. math::
        I_{t,n}[s] = \sum_{g} w_{t,g}\,\mathrm{ReLU}(q_{t,g} \cdot k_{s,n})

    over the query heads g of n's group (N1 / N2 heads) and the keys s that t sees, then the
    top ``sparse_count`` keys by score. The kernel scores one key tile at a time and keeps a
    running top-k per query row: no T x T (or T x N1 x T) buffer.

    Args:
        query: [B, S1, N1, D] (BSND) or [T1, N1, D] (TND); float32, float16 or bfloat16.
        key: [B, S2, N2, D] or [T2, N2, D], query's dtype; N2 divides N1. With layout_key
            "PA_BSND": paged, [block_count, block_size, N2, D].
        weights: [B, S1, N1] or [T1, N1], query's dtype.

    Keyword Args:
        actual_seq_lengths_query, actual_seq_lengths_key (list of int or int Tensor): BSND:
            optional per-batch lengths (rows past a batch's query length output -1); TND:
            required cumulative lengths (last = T).
        block_table (int32 Tensor [B, max_blocks]): with layout_key "PA_BSND" (and only then): key
            s of batch b is row ``s % block_size`` of block ``block_table[b, s // block_size]``;
            actual_seq_lengths_key (per batch) is then required. Paged keys are for inference:
            no gradient.
        layout_query, layout_key (str): "BSND" or "TND", the same for both, or layout_key
            "PA_BSND".
        sparse_count (int): k, in [1, 2048].
        sparse_mode (int): 0 every key, 3 (default) right-down causal (query i of a batch with
            S1 queries and S2 keys sees keys s <= i + S2 - S1).
        pre_tokens, next_tokens (int): only the default 2**63-1.
        return_value (bool): accepted for MindSpore's signature; the values are always returned.

    Returns:
        (sparse_indices, sparse_values): [B, S1, N2, k] or [T1, N2, k]; int32 key indices within
        the batch, in descending score order, ties to the lower index, -1 past the visible keys;
        the scores in query's dtype (-inf where the index is -1). Arithmetic is float32.

    Gradient: through sparse_values, to query, key and weights by the kernel
    lightning_indexer_grad (deterministic); the selection itself is not differentiated.
    """
    _check_indexer(query, key, weights, layout_query, layout_key, sparse_count, sparse_mode, pre_tokens, next_tokens,
                   block_table)
    if not isinstance(return_value, bool):
        raise TypeError(f"{_LI}: 'return_value' must be a bool, got {type(return_value).__name__}")
    qlen, klen, has_q, has_k = sequence_lengths(_LI, query, key, layout_query, actual_seq_lengths_query,
                                                actual_seq_lengths_key, paged=layout_key == "PA_BSND")
    table = block_table if block_table is not None else ops.zeros((1,), ms.int32)
    prim = custom_op(LIGHTNING_INDEXER, make_lightning_indexer_bprop, layout_query=layout_query,
                     layout_key=layout_key, sparse_count=sparse_count, sparse_mode=sparse_mode, pre_tokens=pre_tokens,
                     next_tokens=next_tokens, has_lengths_query=has_q, has_lengths_key=has_k)
    out = prim(query, key, weights, qlen, klen, table)
    return out[0], out[1]


def _check_kl(query, key, query_index, key_index, sparse_indices, softmax_max, softmax_sum, scale_value, query_rope,
              key_rope, layout, op=_KL):
    rank = query_index.ndim
    for name, t in (("query", query), ("key", key), ("softmax_max", softmax_max), ("softmax_sum", softmax_sum)):
        check_tensor(op, name, t)
    for name, t in (("query", query), ("key", key)):
        if t.ndim != rank:
            raise ValueError(f"{op}: '{name}' must be {rank}-D for layout {layout!r}, got shape {t.shape}")
        check_same_dtype(op, name, t, "query_index", query_index)
    if (query_rope is None) != (key_rope is None):
        given = "query_rope" if query_rope is not None else "key_rope"
        raise ValueError(f"{op}: '{given}' is given without its pair: pass both query_rope and key_rope or neither")
    for name, t in (("query_rope", query_rope), ("key_rope", key_rope)):
        if t is not None:
            check_tensor(op, name, t)
            check_same_dtype(op, name, t, "query_index", query_index)
    if sparse_indices is not None:
        check_tensor(op, "sparse_indices", sparse_indices)
        if sparse_indices.dtype != ms.int32:
            raise TypeError(f"{op}: 'sparse_indices' must be int32, got {sparse_indices.dtype}")
    for name, t in (("softmax_max", softmax_max), ("softmax_sum", softmax_sum)):
        if t.dtype != ms.float32:
            raise TypeError(f"{op}: '{name}' must be float32, got {t.dtype}")
    if isinstance(scale_value, bool) or not isinstance(scale_value, (int, float)):
        raise TypeError(f"{op}: 'scale_value' must be a float, got {type(scale_value).__name__}")
    n1, n2 = query.shape[-2], key.shape[-2]
    if known(n1) and known(n2) and (n2 < 1 or n1 % n2 != 0):
        raise ValueError(f"{op}: 'key' heads ({n2}) must divide query's heads ({n1})")
    ni2 = key_index.shape[-2]
    if known(n2) and known(ni2) and n2 != ni2:
        raise ValueError(f"{op}: 'key' heads ({n2}) must equal key_index's ({ni2}): the loss pairs each main "
                         f"key head with the index key head of the same number")
    if sparse_indices is not None and known(sparse_indices.shape[-2]) and known(n2) \
            and sparse_indices.shape[-2] != n2:
        raise ValueError(f"{op}: 'sparse_indices' must select per key head of 'key' ({n2}), got shape "
                         f"{sparse_indices.shape}")


_KL_KERNELS = {_KL: (SPARSE_LIGHTNING_INDEXER_GRAD_KL_LOSS, make_sparse_lightning_indexer_kl_loss_bprop),
               _DENSE: (DENSE_LIGHTNING_INDEXER_GRAD_KL_LOSS, make_dense_lightning_indexer_kl_loss_bprop)}


def _kl_loss(op, tensors, scale_value, query_rope, key_rope, actual_seq_qlen, actual_seq_klen, layout, sparse_mode,
             pre_tokens, next_tokens):
    """The checked KL loss ``op`` through its kernel: ``tensors`` are its inputs up to softmax_sum
    (query, key, query_index, key_index, weights[, sparse_indices], softmax_max, softmax_sum); the
    absent rope parts and lengths become placeholders. Returns the loss."""
    query_index, key_index = tensors[2], tensors[3]
    qlen, klen, has_q, has_k = sequence_lengths(op, query_index, key_index, layout, actual_seq_qlen, actual_seq_klen)
    has_rope = query_rope is not None
    if not has_rope:
        query_rope = key_rope = ops.zeros((1,), query_index.dtype)
    kernel, bprop = _KL_KERNELS[op]
    prim = custom_op(kernel, bprop, api=op, layout_query=layout, layout_key=layout, sparse_mode=sparse_mode,
                     pre_tokens=pre_tokens, next_tokens=next_tokens, has_lengths_query=has_q, has_lengths_key=has_k,
                     scale_value=float(scale_value), has_rope=has_rope)
    return prim(*tensors, query_rope, key_rope, qlen, klen)[3]


def sparse_lightning_indexer_kl_loss(query, key, query_index, key_index, weights, sparse_indices, softmax_max,
                                     softmax_sum, scale_value=1.0, *, query_rope=None, key_rope=None,
                                     actual_seq_qlen=None, actual_seq_klen=None, layout="BSND", sparse_mode=3,
                                     pre_tokens=_FAR, next_tokens=_FAR):
    r"""The lightning indexer's training loss (DeepSeek-V3.2): for every query token t and key
    head n over its selected keys j (``sparse_indices`` >= 0),

    .. math::
        p_j \propto \sum_{g} \mathrm{softmax}_g(j), \quad
        I_j = \sum_h w_h\,\mathrm{ReLU}(q^{idx}_h \cdot k^{idx}_j), \quad
        \text{loss} = \sum_{t,n} \mathrm{KL}(p \,\|\, \mathrm{softmax}(I))

    where softmax_g is the main attention's probability for its query head g of n's group, rebuilt
    from query, key (and the rope parts: score = scale * (q·k + q_rope·k_rope)) and the forward's
    softmax_max / softmax_sum, and p is L1-normalised over the selected keys. One kernel
    (sparse_lightning_indexer_grad_kl_loss) computes the loss and, with dI = softmax(I) - p, the
    gradients to query_index, key_index and weights; the backward scales them by d loss. The main
    attention's inputs get zero gradients (they are detached). Deterministic.

    Args:
        query: [B, S1, N1, D] (BSND) or [T1, N1, D] (TND), the main attention's query.
        key: [B, S2, N2, D] or [T2, N2, D]; N2 divides N1.
        query_index, key_index: the indexer's [B, S1, Ni, Di] and [B, S2, N2, Di] (or TND).
        weights: [B, S1, Ni] or [T1, Ni].
        sparse_indices: int32 [B, S1, N2, k] or [T1, N2, k], keys of the batch or -1; no key twice.
        softmax_max, softmax_sum: float32 (B, N2, S1, N1 / N2) or (N2, T1, N1 / N2).
        scale_value (float): the main attention's score scale.

    Keyword Args:
        query_rope, key_rope: [.., N1, Dr] and [.., N2, Dr], both or neither.
        actual_seq_qlen, actual_seq_klen: as lightning_indexer's lengths (TND: cumulative, required).
        layout (str): "BSND" or "TND".
        sparse_mode (int): 0 or 3 (the selection already encodes the causal mask; with a band,
            3 also drops selected keys past the diagonal).
        pre_tokens, next_tokens (int): a band on the keys that count, as sparse_flash_attention's:
            query i of a sequence with S1 queries and S2 keys counts key j only if
            ``i + S2 - S1 - pre_tokens <= j <= i + S2 - S1 + next_tokens`` (sparse_mode 3 caps
            next_tokens at 0); selected keys outside it are treated as -1 entries. The defaults
            2**63-1 are no band.

    Returns:
        Tensor: loss, float32 of shape (1,).
    """
    _check_indexer(query_index, key_index, weights, layout, layout, 1, sparse_mode, pre_tokens, next_tokens, None,
                   op=_KL)
    _check_kl(query, key, query_index, key_index, sparse_indices, softmax_max, softmax_sum, scale_value, query_rope,
              key_rope, layout)
    return _kl_loss(_KL, (query, key, query_index, key_index, weights, sparse_indices, softmax_max, softmax_sum),
                    scale_value, query_rope, key_rope, actual_seq_qlen, actual_seq_klen, layout, sparse_mode,
                    pre_tokens, next_tokens)


def dense_lightning_indexer_kl_loss(query, key, query_index, key_index, weights, softmax_max, softmax_sum,
                                    scale_value=1.0, *, query_rope=None, key_rope=None, actual_seq_qlen=None,
                                    actual_seq_klen=None, layout="BSND", sparse_mode=3, pre_tokens=_FAR,
                                    next_tokens=_FAR):
    r"""The indexer's loss of DeepSeek-V3.2's dense warm-up: :func:`sparse_lightning_indexer_kl_loss`
    over every key a query token sees (``sparse_mode`` 3: right-down causal; 0: all keys) instead
    of a selection, with softmax_max / softmax_sum of the dense main attention (same layouts). One
    kernel (dense_lightning_indexer_grad_kl_loss) computes the loss and the gradients to
    query_index, key_index and weights; deterministic. Any number of keys: the kernel takes a
    token's keys in runs of 2048 (two passes past that). Arguments as the sparse loss's, minus
    sparse_indices.

    Returns:
        Tensor: loss, float32 of shape (1,).
    """
    _check_indexer(query_index, key_index, weights, layout, layout, 1, sparse_mode, pre_tokens, next_tokens, None,
                   op=_DENSE)
    _check_kl(query, key, query_index, key_index, None, softmax_max, softmax_sum, scale_value, query_rope, key_rope,
              layout, op=_DENSE)
    return _kl_loss(_DENSE, (query, key, query_index, key_index, weights, softmax_max, softmax_sum), scale_value,
                    query_rope, key_rope, actual_seq_qlen, actual_seq_klen, layout, sparse_mode, pre_tokens,
                    next_tokens)
