"""Flash attention: ``flash_attention_score`` (CANN FlashAttentionScore), differentiable with
respect to query, key and value. Signature and defaults are MindSpore's
``ops.flash_attention_score``; what is not supported yet raises a ValueError (see the function).
"""

from ms_ops._custom import custom_op
from ms_ops.bprop.attention import make_flash_attention_score_bprop
from ms_ops.kernels.attention import FLASH_ATTENTION_SCORE
from ms_ops.ops._attention_args import (check_dropout, check_mask, check_prefix, check_pse, fresh_dropout_seed,
                                        longest, sequences)
from ms_ops.ops._validation import FLOAT_DTYPES, check_dtype, check_int, check_same_dtype, check_tensor, known

_OP = "flash_attention_score"
_LAYOUTS = {"BSH": 3, "SBH": 3, "BSND": 4, "BNSD": 4, "TND": 3}
_FAR = 2147483647  # pre_tokens / next_tokens reaching every key


def _unsupported(name, what):
    raise ValueError(f"{_OP}: '{name}' {what} is not supported yet in ms_ops")


def _dims(t, layout):
    """(B, S, N, D) of a tensor in ``layout``; for BSH/SBH N is the hidden size N*D and D is None
    (head_num splits it); for TND B is None (the sequence lengths give it) and S is T."""
    shape = t.shape
    if layout == "TND":
        return None, shape[0], shape[1], shape[2]
    if layout in ("BSH", "SBH"):
        b, s = (shape[0], shape[1]) if layout == "BSH" else (shape[1], shape[0])
        return b, s, shape[2], None
    if layout == "BSND":
        return shape[0], shape[1], shape[2], shape[3]
    return shape[0], shape[2], shape[1], shape[3]


def _check_shapes(query, key, value, head_num, layout):
    rank = _LAYOUTS[layout]
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_tensor(_OP, name, t)
        if t.ndim != rank:
            raise ValueError(f"{_OP}: '{name}' must be {rank}-D for input_layout '{layout}', got shape {t.shape}")
    check_dtype(_OP, "query", query, FLOAT_DTYPES)
    check_same_dtype(_OP, "key", key, "query", query)
    check_same_dtype(_OP, "value", value, "query", query)
    bq, _, nq, dq = _dims(query, layout)
    bk, _, nk, dk = _dims(key, layout)
    if known(bq) and known(bk) and bq != bk:
        raise ValueError(f"{_OP}: 'key' batch {bk} differs from query's {bq} (shapes {query.shape}, {key.shape})")
    if rank == 3 and layout != "TND":
        if known(nq) and nq % head_num != 0:
            raise ValueError(f"{_OP}: 'query' hidden size {nq} is not a multiple of head_num {head_num}")
        if known(nq):
            dq = nq // head_num
            if known(nk) and nk % dq != 0:
                raise ValueError(f"{_OP}: 'key' hidden size {nk} is not a multiple of the head dim {dq}")
            n1, n2 = head_num, nk // dq if known(nk) else None
        else:
            n1, n2 = head_num, None
    else:
        if known(nq) and nq != head_num:
            raise ValueError(f"{_OP}: 'head_num' is {head_num} but query {query.shape} has {nq} heads")
        if known(dq) and known(dk) and dq != dk:
            raise ValueError(f"{_OP}: 'key' head dim {dk} must equal query's {dq}")
        n1, n2 = head_num, nk
    if known(dq) and not 1 <= dq <= 512:
        raise ValueError(f"{_OP}: 'query' head dim must be 1..512, got {dq}")
    if n2 is not None and known(n2) and (n2 < 1 or n1 % n2 != 0):
        raise ValueError(f"{_OP}: 'key' has {n2} heads, which must divide query's {n1} (GQA/MQA)")
    for axis in range(rank - 1):
        if known(value.shape[axis]) and known(key.shape[axis]) and value.shape[axis] != key.shape[axis]:
            raise ValueError(f"{_OP}: 'value' must have key's shape {key.shape} but for the head dim, got "
                             f"{value.shape}")
    hv, hk = value.shape[-1], key.shape[-1]
    if known(hv) and known(hk) and hv > hk:
        raise ValueError(f"{_OP}: 'value' head dim must not exceed key's (D_v <= D), got value {value.shape} and "
                         f"key {key.shape}")
    if rank == 3 and layout != "TND" and known(hv) and n2 is not None and known(n2) and hv % n2 != 0:
        raise ValueError(f"{_OP}: 'value' hidden size {hv} is not a multiple of key's {n2} heads")
    return bq, _dims(query, layout)[1], _dims(key, layout)[1]


def flash_attention_score(query, key, value, head_num, real_shift=None, drop_mask=None, padding_mask=None,
                          attn_mask=None, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, keep_prob=1.0,
                          scalar_value=1.0, pre_tokens=2147483647, next_tokens=2147483647, inner_precise=0,
                          input_layout="BSH", sparse_mode=0, *, pse_type=1, seed=None, offset=None,
                          return_softmax_lse=False):
    r"""Multi-head attention without the ``S1 x S2`` score matrix in memory:

    .. math::
        \text{out} = \operatorname{softmax}(\text{scalar\_value}\cdot Q K^\top \text{ over visible keys})\, V

    per sequence and query head; query head ``n`` reads key/value head ``n // (N1 // N2)`` (GQA/MQA),
    with a position bias (``real_shift``, ``pse_type``) added to the logits when given.

    Args:
        query: ``[B, S1, N1*D]`` (BSH), ``[S1, B, N1*D]`` (SBH), ``[B, S1, N1, D]`` (BSND),
            ``[B, N1, S1, D]`` (BNSD) or ``[T1, N1, D]`` (TND: the sequences packed one after
            the other); float32, float16 or bfloat16.
        key, value: the same layout with S2 (T2) rows and N2 heads (N1 a multiple of N2) and
            query's dtype; key has query's head dim D (1..512), value a head dim D_v <= D (as CANN
            allows), which attention_out takes.
        head_num (int): N1.
        real_shift (Tensor, optional): pse_type 0 or 1: a bias of query's dtype, ``[B, N1, S1, S2]``
            (differentiable: d real_shift comes from the gradient kernel), or, not differentiated,
            ``[B, N1, 1, S2]``, ``[1, N1, S1, S2]`` (B and S1 broadcast), and the ALiBi-compressed
            ``[B or 1, N1, 1024, S2]`` (the last 1024 rows of a bias depending on j - i only;
            sparse_mode 2 or 3, or 0 with next_tokens <= 0, and S1 == S2 > 1024). pse_type 2 or
            3: float32 ALiBi slopes ``[N1]`` or ``[B, N1]`` (S1 == S2), the kernel generating the
            bias ``-slope * |i - j|`` (2) or ``-slope * sqrt(|i - j|)`` (3); not differentiated.
            With TND (ms_ops' choice, CANN gives no such form): pse_type 0 or 1 only, per sequence
            padded to the longest one, ``[B, N1, S1, S2]`` with S1, S2 the longest query / key
            lengths (sequence b's query i and key j read element (b, n1, i, j)) or ``[B, N1, 1,
            S2]`` / ``[1, N1, S1, S2]``, not differentiated.
        attn_mask (Tensor, optional): bool or uint8, 1 = masked out. None (the default): full
            attention, every key of the sequence; as in CANN, sparse_mode, pre_tokens,
            next_tokens and prefix then take no effect (a causal call passes the compressed
            mask, e.g. ``Tensor(np.triu(np.ones((2048, 2048), np.bool_), 1))``). sparse_mode 0 and 1:
            ``[B, N1, S1, S2]``, ``[B, 1, S1, S2]``, ``[1, 1, S1, S2]`` or ``[S1, S2]``, applied
            on top of the mode's visible keys (TND: per sequence, S1 and S2 the longest query /
            key lengths, as real_shift); sparse_mode 5: ``[B, N1, S1, S2]``
            or ``[B, 1, S1, S2]``. The compressed masks of the other modes (``[2048, 2048]`` for
            2, 3, 4, 7, 8 and ``[3072, 2048]`` for 6) are checked for their shape; as in CANN,
            the mode alone defines the visible keys, so their contents are not read.
        prefix (list of int or Tensor): sparse_mode 5 and 6: per batch, the number of leading
            keys every query sees.
        actual_seq_qlen, actual_seq_kvlen (list of int or int64 Tensor): TND only and required
            there: cumulative query / key lengths, one entry per sequence, the last one T1 / T2
            (lengths [2, 0, 3] are [2, 2, 5]). Sequences of length 0 are allowed on either side.
        scalar_value (float): the scale of the scores.
        pre_tokens, next_tokens (int): the band of sparse_mode 0 (``i - pre_tokens <= j <=
            i + next_tokens``), 4, 7 and 8 (the same band anchored at the bottom-right corner:
            ``i + S2 - S1 - pre_tokens <= j <= i + S2 - S1 + next_tokens``). A band that leaves
            a row no key (which MindSpore's docstring calls not allowed, and CANN's own test cases
            run) gives that row 0.
        input_layout (str): "BSH", "SBH", "BSND", "BNSD" or "TND".
        sparse_mode (int): with attn_mask given, the keys query i of a sequence (S1 queries,
            S2 keys) sees, before the mask: 0 the band of pre/next_tokens (the defaults: every key); 1 every key;
            2 ``j <= i`` (causal from the top left); 3 ``j <= i + S2 - S1`` (causal from the
            bottom right); 4 the bottom-right band; 5 and 6 (prefix) mode 3's keys plus the
            first ``prefix[b]`` keys; 7 (TND) mode 3 for every sequence but the last one with
            queries and keys, which is the band of mode 4; 8 (TND) mode 2 for every sequence but
            the first one with queries and keys, which is the band of mode 4. (CANN describes 7
            and 8 as the last/first batch being "a band"; ms_ops takes that band to be mode 4's,
            anchored at the bottom-right corner, for both.) With TND every mode acts per
            sequence.
        pse_type (int, keyword-only): how real_shift enters the logits: 0 ``scale * QKᵀ + pse``,
            1 (default, MindSpore's only form) ``scale * (QKᵀ + pse)``, 2 and 3 the in-kernel ALiBi
            above, added after the scaling.

        keep_prob (float): dropout on the probabilities, in (0, 1]: ``out = (P ∘ Z / keep_prob) V``
            with keep bits Z (1 = keep); the softmax statistics are those of the undropped P. Z
            comes from ``drop_mask`` when given, else from the kernels' counter-based generator
            (Philox-4x32-10 keyed by (seed, offset) and the element's position (b, n1, i, j);
            kept when the draw is below keep_prob * 2^32), which the gradient kernel regenerates,
            so no mask is stored.
        drop_mask (Tensor, optional): uint8 ``[B, N1, S1, S2 // 8]`` (S2 a multiple of 8),
            MindSpore's form: key j of row i is bit ``j % 8`` (least significant first) of
            byte ``j // 8``, 1 = keep. Only read when keep_prob < 1. With TND (ms_ops' choice:
            neither MindSpore nor CANN defines a TND drop_mask) per sequence, padded to the longest
            one as attn_mask: S1 and S2 the longest query / key lengths (S2 a multiple of 8),
            sequence b's query i and key j reading bit (b, n1, i, j), the element the kernels'
            generator draws for it.
        seed, offset (int, keyword-only): the generator's key and stream offset when keep_prob < 1
            without drop_mask; the same pair gives the same bits every call. When both are None
            (the default) every call takes a fresh (seed, offset) from ms_ops' generator
            (``ms_ops.ops._attention_args.DROPOUT_GENERATOR``, MindSpore's Generator: seed and
            offset Parameters advanced inside the graph in GRAPH mode, as MindSpore's dropout_ext
            does), so consecutive training steps drop differently; ``ms.set_seed(s)`` reseeds it
            (offset 0) at the next call, in GRAPH mode at the next graph compilation, so a run
            that starts with ms.set_seed is reproducible.
        return_softmax_lse (bool, keyword-only): also return the kernel's softmax statistics.

    Not supported yet (a ValueError names the argument): padding_mask and inner_precise other
    than 0, 1 or 2 (2, CANN's handling of rows that see no key, is what ms_ops always does).

    Returns:
        Tensor: attention_out, query's shape (with value's head dim D_v) and dtype. A query row
        that sees no key (every key masked, an empty key sequence, or outside the mode's range)
        outputs 0 and gets a zero gradient.
        With ``return_softmax_lse``: ``(attention_out, softmax_max, softmax_sum)``, the
        statistics float32 ``[B, N1, S1, 8]`` (TND: ``[T1, N1, 8]``; the 8 copies of a row's
        value are CANN's layout): each row's maximum scaled logit and the sum of
        ``exp(logit - max)`` over its visible keys (max the lowest float32 and sum 0 for a row
        that sees no key). The statistics carry no gradient.

    Gradient: dq, dk, dv (and d real_shift for the full form) by the kernel
    flash_attention_score_grad (deterministic); attn_mask, prefix and the sequence lengths get zeros.
    d real_shift is computed only for the full ``[B, N1, S1, S2]`` tensor of pse_type 0 or 1 (not
    with TND), as the issue and CANN's dpse define it. Every other real_shift form (the broadcast
    ``[B, N1, 1, S2]`` and ``[1, N1, S1, S2]``, the ALiBi-compressed ``[B or 1, N1, 1024, S2]``,
    the slopes of pse_type 2/3, and TND's padded forms) is treated as a constant: ``ms.grad`` with
    respect to it returns zeros of its shape (MindSpore's answer for a stopped gradient), never a
    partial sum, so a learnable bias needs the full form.
    """
    if padding_mask is not None:
        _unsupported("padding_mask", "(any value but None)")
    if input_layout not in _LAYOUTS:
        raise ValueError(f"{_OP}: 'input_layout' must be one of {tuple(_LAYOUTS)}, got {input_layout!r}")
    check_int(_OP, "sparse_mode", sparse_mode)
    if not 0 <= sparse_mode <= 8:
        raise ValueError(f"{_OP}: 'sparse_mode' must be in 0..8, got {sparse_mode}")
    if sparse_mode in (7, 8) and input_layout != "TND":
        raise ValueError(f"{_OP}: 'sparse_mode' {sparse_mode} needs input_layout 'TND', got {input_layout!r}")
    if sparse_mode == 5 and input_layout == "TND":
        raise ValueError(f"{_OP}: 'sparse_mode' 5 is not defined for input_layout 'TND' (use 6)")
    check_int(_OP, "inner_precise", inner_precise)
    # 2 is CANN's handling of rows without a visible key, which ms_ops always does (zero output).
    if inner_precise not in (0, 1, 2):
        _unsupported("inner_precise", f"{inner_precise} (only 0, 1 and 2)")
    check_int(_OP, "head_num", head_num, low=1)
    check_int(_OP, "pre_tokens", pre_tokens)
    check_int(_OP, "next_tokens", next_tokens)
    if isinstance(scalar_value, bool) or not isinstance(scalar_value, (int, float)):
        raise TypeError(f"{_OP}: 'scalar_value' must be a float, got {type(scalar_value).__name__}")
    if not isinstance(return_softmax_lse, bool):
        raise TypeError(f"{_OP}: 'return_softmax_lse' must be a bool, got {type(return_softmax_lse).__name__}")
    batch, s1, s2 = _check_shapes(query, key, value, head_num, input_layout)
    packed_batch, seq_q, seq_kv = sequences(input_layout, actual_seq_qlen, actual_seq_kvlen, s1, s2)
    if attn_mask is None:
        # As CANN: without attn_mask, sparse_mode and pre/next_tokens take no effect (full attention),
        # nor does prefix; a prefix with a mode that has none is still a wrong call.
        if prefix is not None and sparse_mode not in (5, 6):
            check_prefix(prefix, sparse_mode, batch, s2)
        sparse_mode, pre_tokens, next_tokens, prefix = 0, _FAR, _FAR, None
    pre = check_prefix(prefix, sparse_mode, packed_batch if input_layout == "TND" else batch,
                       None if input_layout == "TND" else s2)
    if input_layout == "TND":
        # attn_mask and real_shift are per sequence, padded to the longest one.
        batch, s1, s2 = packed_batch, longest(actual_seq_qlen), longest(actual_seq_kvlen)
    mask = check_mask(attn_mask, sparse_mode, input_layout, batch, head_num, s1, s2)
    pse = check_pse(real_shift, pse_type, input_layout, query.dtype, batch, head_num, s1, s2, sparse_mode,
                    next_tokens)
    drop, dropout_seed = check_dropout(keep_prob, drop_mask, seed, offset, input_layout, batch, head_num, s1, s2)
    if dropout_seed is None:
        dropout_seed = fresh_dropout_seed()
    prim = custom_op(FLASH_ATTENTION_SCORE, make_flash_attention_score_bprop, head_num=head_num,
                     scale_value=float(scalar_value), pre_tokens=pre_tokens, next_tokens=next_tokens,
                     input_layout=input_layout, sparse_mode=sparse_mode, pse_type=pse_type,
                     keep_prob=float(keep_prob))
    softmax_max, softmax_sum, out = prim(query, key, value, pse, mask, pre, seq_q, seq_kv, drop, dropout_seed)
    if return_softmax_lse:
        return out, softmax_max, softmax_sum
    return out
