"""MoE token routing: dispatch (``moe_init_routing``) and combine (``moe_finalize_routing``),
and their gradients as functions of their own (``moe_init_routing_grad``,
``moe_finalize_routing_grad``).

Semantics are CANN's MoeInitRoutingV2 / MoeFinalizeRoutingV2 and their V2Grad ops; keyword names
follow MindSpore's ``ops.moe_init_routing_v2`` / ``ops.moe_finalize_routing``. Both forward ops are
differentiable; their gradients run the same kernels as the two gradient functions.

Which finalize mode goes with which init mode (the index layouts must agree):

=================================  ==============================  ==================================
``moe_init_routing`` mode          ``moe_finalize_routing`` mode   ``moe_finalize_routing_grad`` mode
=================================  ==============================  ==================================
``drop_pad_mode=0`` (dropless)     ``drop_pad_mode=2``             ``drop_pad_mode=0``
``drop_pad_mode=1`` (drop/pad)     ``drop_pad_mode=3``             ``drop_pad_mode=1``
=================================  ==============================  ==================================

moe_init_routing writes ``expanded_row_idx`` row-major (pair ``(r, k)`` at ``r*K + k``).
moe_finalize_routing's own default, ``drop_pad_mode=0`` (and 1), reads the column-major layout of
CANN's V1 MoeInitRouting (pair ``(r, k)`` at ``k*R + r``): it does not pair with moe_init_routing.
"""
import mindspore as ms
from mindspore import ops

from ms_ops._custom import custom_op
from ms_ops.bprop.moe_routing import make_moe_finalize_routing_bprop, make_moe_init_routing_bprop
from ms_ops.kernels.moe_routing import (MOE_FINALIZE_ROUTING, MOE_FINALIZE_ROUTING_GRAD,
                                        MOE_INIT_ROUTING, MOE_INIT_ROUTING_GRAD)
from ms_ops.ops._validation import (FLOAT_DTYPES, check_dim, check_dtype, check_int, check_rank,
                                    check_same_dtype, known)


def moe_init_routing(x, expert_idx, *, active_num=0, expert_capacity=0, expert_num=0,
                     drop_pad_mode=0, expert_tokens_count_or_cumsum_flag=0,
                     expert_tokens_before_capacity_flag=False):
    r"""Dispatches tokens to experts: sorts the R*K (token, expert) pairs by expert.

    With ``expert_idx`` flattened row-major (pair ``i = r*K + k``) and a stable sort by expert id
    (ties keep token order), giving the sorted position ``j = dest(i)``:

    .. math::
        \text{expanded\_x}[\text{dest}(i)] = x[\lfloor i / K \rfloor], \qquad
        \text{expanded\_row\_idx}[i] = \text{dest}(i)

    ``expanded_row_idx`` is row-major. To combine, pass it to :func:`moe_finalize_routing` with
    ``drop_pad_mode=2`` after a dropless dispatch (``drop_pad_mode=0`` here) and
    ``drop_pad_mode=3`` after a drop/pad one (``drop_pad_mode=1`` here); moe_finalize_routing's
    default mode 0 expects the column-major index of CANN's V1 op instead:

    ==================================  =========================================
    this function                       :func:`moe_finalize_routing`
    ==================================  =========================================
    ``drop_pad_mode=0`` (dropless)      ``drop_pad_mode=2``
    ``drop_pad_mode=1`` (drop/pad)      ``drop_pad_mode=3``
    ==================================  =========================================

    Args:
        x (Tensor): token features ``[R, H]``, float32/float16/bfloat16.
        expert_idx (Tensor): chosen experts ``[R, K]``, int32, values in ``[0, expert_num)``.

    Keyword Args:
        active_num (int): dropless mode only; when ``0 < active_num < R*K`` only the first
            ``active_num`` sorted rows are produced. Default 0 (all).
        expert_capacity (int): C, slots per expert in drop/pad mode (``0 < C``; unlike CANN, C may
            exceed R, which keeps a fixed C usable when the token count varies). Default 0.
        expert_num (int): E. Required (> 0) in drop/pad mode and when counts are requested; with 0
            the experts are the ids present (ids up to 8191).
        drop_pad_mode (int): 0 dropless; 1 drop/pad: ``expanded_x`` is ``[E, C, H]``, a pair
            whose rank within its expert is >= C is dropped (``expanded_row_idx`` = -1), the
            pair of rank c < C goes to slot ``e*C + c``; unfilled slots are zero. Default 0.
        expert_tokens_count_or_cumsum_flag (int): dropless mode: 0 none, 1 cumulative counts,
            2 counts per expert. Default 0.
        expert_tokens_before_capacity_flag (bool): drop/pad mode: per-expert counts before
            dropping. Default False.

    Returns:
        tuple of 4 Tensors:

        - **expanded_x**: ``[A, H]`` (dropless; ``A = active_num`` if truncating else ``R*K``)
          or ``[E, C, H]`` (drop/pad), dtype of x.
        - **expanded_row_idx**: ``[R*K]`` int32, position of each pair in ``expanded_x``
          (flat row ``e*C + c`` in drop/pad mode, -1 if dropped).
        - **expert_tokens_count_or_cumsum**: ``[E]`` int32 when requested, else ``[0]``.
        - **expert_tokens_before_capacity**: ``[E]`` int32 when requested, else ``[0]``.

    With no tokens (R = 0) the outputs are empty, except the drop/pad ``expanded_x`` (all zeros)
    and the requested per-expert counts (zeros).

    Gradient: ``d x[r] = sum_k d expanded_x[expanded_row_idx[r*K + k]]`` (dropped and inactive
    pairs contribute nothing), the kernel of :func:`moe_init_routing_grad`.
    """
    op = "moe_init_routing"
    check_rank(op, "x", x, 2)
    check_rank(op, "expert_idx", expert_idx, 2)
    check_dtype(op, "x", x, FLOAT_DTYPES)
    check_dtype(op, "expert_idx", expert_idx, (ms.int32,))
    check_dim(op, "expert_idx", expert_idx, 0, x.shape[0], "the number of rows of 'x'")
    if not known(expert_idx.shape[1]):
        raise ValueError(f"{op}: 'expert_idx' must have a static K (dimension 1) in GRAPH mode: "
                         f"the gradient kernel takes K as an attribute; give it in set_inputs")
    check_int(op, "drop_pad_mode", drop_pad_mode, allowed=(0, 1))
    check_int(op, "active_num", active_num, low=0)
    check_int(op, "expert_num", expert_num, low=0)
    check_int(op, "expert_capacity", expert_capacity, low=0)
    check_int(op, "expert_tokens_count_or_cumsum_flag", expert_tokens_count_or_cumsum_flag,
              allowed=(0, 1, 2))
    if not isinstance(expert_tokens_before_capacity_flag, bool):
        raise TypeError(f"{op}: 'expert_tokens_before_capacity_flag' must be a bool")
    if drop_pad_mode == 1:
        if expert_capacity <= 0:
            raise ValueError(f"{op}: 'expert_capacity' must be > 0 in drop/pad mode "
                             f"(drop_pad_mode=1), got {expert_capacity}")
        if expert_num <= 0:
            raise ValueError(f"{op}: 'expert_num' must be > 0 in drop/pad mode, got {expert_num}")
    if expert_tokens_count_or_cumsum_flag and expert_num <= 0:
        raise ValueError(f"{op}: 'expert_num' must be > 0 when "
                         f"'expert_tokens_count_or_cumsum_flag' is set")
    prim = custom_op(MOE_INIT_ROUTING, make_moe_init_routing_bprop, active_num=active_num,
                     expert_capacity=expert_capacity, expert_num=expert_num,
                     drop_pad_mode=drop_pad_mode,
                     expert_tokens_count_or_cumsum_flag=expert_tokens_count_or_cumsum_flag,
                     expert_tokens_before_capacity_flag=expert_tokens_before_capacity_flag)
    return prim(x, expert_idx)


def _placeholder(t, dtype):
    """The [1] tensor standing in for an absent optional input (the kernel never reads it)."""
    if t is None:
        return ops.zeros((1,), dtype)
    return t


def moe_finalize_routing(expanded_x, expanded_row_idx, *, x1=None, x2=None, bias=None, scales=None,
                         expert_idx=None, drop_pad_mode=0):
    r"""Combines expert outputs back into token order.

    .. math::
        \text{out}[r] = x1[r] + x2[r] + \sum_{k<K} s[r,k]\,
            (\text{expanded\_x}[j(r,k)] + \text{bias}[\text{expert\_idx}[r,k]])

    where ``j(r,k) = expanded_row_idx[k*R + r]`` (column-major, drop_pad_mode 0/1) or
    ``expanded_row_idx[r*K + k]`` (row-major, 2/3, as produced by :func:`moe_init_routing`).
    A pair with ``j = -1`` (dropped, modes 1/3) or ``j >= N`` (dropless modes with an
    ``expanded_x`` of N < R*K rows, i.e. after ``active_num`` truncation) contributes nothing,
    not even its bias. Several pairs may name the same slot (CANN accepts it too): each reads it,
    and in the gradient the slot gets the sum of their terms, in ascending pair order ``r*K + k``.

    The mode must match the layout of the index. After :func:`moe_init_routing` (row-major):

    ==========================================  ==================================
    :func:`moe_init_routing` ``drop_pad_mode``  this function's ``drop_pad_mode``
    ==========================================  ==================================
    0 (dropless)                                2
    1 (drop/pad)                                3
    ==========================================  ==================================

    Modes 0 (dropless) and 1 (drop/pad), the default 0 included, are for the column-major index
    of CANN's V1 MoeInitRouting; with moe_init_routing's index they mix up the pairs.

    Args:
        expanded_x (Tensor): ``[N, H]`` (modes 0/2) or ``[E, C, H]`` (modes 1/3),
            float32/float16/bfloat16.
        expanded_row_idx (Tensor): ``[R*K]`` int32, the slot of each pair: ``[0, R*K)`` in modes
            0/2, ``[-1, E*C)`` in modes 1/3; entries may repeat.

    Keyword Args:
        x1, x2 (Tensor, optional): ``[R, H]`` residuals, dtype of expanded_x; ``x2`` needs ``x1``.
        bias (Tensor, optional): ``[E, H]`` per-expert bias, needs ``expert_idx``.
        scales (Tensor, optional): ``[R, K]`` combine weights, dtype of expanded_x or float32.
            Without scales, K = 1 and every weight is 1.
        expert_idx (Tensor, optional): ``[R, K]`` int32, expert of each pair (used by bias).
        drop_pad_mode (int): 0..3 as above (0/2 dropless, 1/3 drop/pad; 0/1 column-major, 2/3
            row-major). Default 0.

    Returns:
        Tensor ``[R, H]``, dtype of expanded_x (``[0, H]`` when R = 0). Differentiable w.r.t.
        expanded_x, x1, x2, bias and scales, through the kernel of
        :func:`moe_finalize_routing_grad`.
    """
    op = "moe_finalize_routing"
    check_int(op, "drop_pad_mode", drop_pad_mode, allowed=(0, 1, 2, 3))
    drop = drop_pad_mode in (1, 3)
    check_rank(op, "expanded_x", expanded_x, 3 if drop else 2)
    check_dtype(op, "expanded_x", expanded_x, FLOAT_DTYPES)
    check_rank(op, "expanded_row_idx", expanded_row_idx, 1)
    check_dtype(op, "expanded_row_idx", expanded_row_idx, (ms.int32,))
    hidden = expanded_x.shape[-1]
    num_pairs = expanded_row_idx.shape[0]
    if scales is not None:
        check_rank(op, "scales", scales, 2)
        check_dtype(op, "scales", scales, tuple(dict.fromkeys((expanded_x.dtype, ms.float32))))
        rows, top_k = scales.shape
        if known(rows) and known(top_k) and known(num_pairs) and rows * top_k != num_pairs:
            raise ValueError(f"{op}: 'expanded_row_idx' must have R*K = {rows}*{top_k} entries "
                             f"(from 'scales' {scales.shape}), got {num_pairs}")
    else:
        rows, top_k = num_pairs, 1
    if x2 is not None and x1 is None:
        raise ValueError(f"{op}: 'x2' may only be given together with 'x1'")
    for name, skip in (("x1", x1), ("x2", x2)):
        if skip is not None:
            check_rank(op, name, skip, 2)
            check_same_dtype(op, name, skip, "expanded_x", expanded_x)
            check_dim(op, name, skip, 0, rows, "R")
            check_dim(op, name, skip, 1, hidden, "H of 'expanded_x'")
    if bias is not None:
        if expert_idx is None:
            raise ValueError(f"{op}: 'bias' needs 'expert_idx' (the expert of each pair)")
        check_rank(op, "bias", bias, 2)
        check_same_dtype(op, "bias", bias, "expanded_x", expanded_x)
        check_dim(op, "bias", bias, 1, hidden, "H of 'expanded_x'")
        if drop:
            check_dim(op, "bias", bias, 0, expanded_x.shape[0], "expert_num E of 'expanded_x'")
    if expert_idx is not None:
        check_rank(op, "expert_idx", expert_idx, 2)
        check_dtype(op, "expert_idx", expert_idx, (ms.int32,))
        check_dim(op, "expert_idx", expert_idx, 0, rows, "R")
        check_dim(op, "expert_idx", expert_idx, 1, top_k, "K")
    dtype = expanded_x.dtype
    prim = custom_op(MOE_FINALIZE_ROUTING, make_moe_finalize_routing_bprop,
                     drop_pad_mode=drop_pad_mode, has_x1=x1 is not None, has_x2=x2 is not None,
                     has_bias=bias is not None, has_scales=scales is not None)
    return prim(expanded_x, expanded_row_idx, _placeholder(x1, dtype), _placeholder(x2, dtype),
                _placeholder(bias, dtype), _placeholder(scales, dtype),
                _placeholder(expert_idx, ms.int32))


def _active_rows(pairs, active_num):
    """Rows of a dropless expanded_x: active_num truncates when 0 < active_num < R*K."""
    return active_num if 0 < active_num < pairs else pairs


def moe_init_routing_grad(grad_expanded_x, expanded_row_idx, top_k, drop_pad_mode=0, active_num=0):
    r"""Gradient of :func:`moe_init_routing` w.r.t. x (CANN ``MoeInitRoutingV2Grad``).

    .. math::
        \text{grad\_x}[r] = \sum_{k<K} \text{grad\_expanded\_x}[\text{expanded\_row\_idx}[r K + k]]

    summed in fp32 in k order. An entry of -1 (a dropped pair) or one at or past the rows of
    ``grad_expanded_x`` (dropless, after ``active_num`` truncation) contributes nothing. This is
    the kernel ``ms.grad`` runs through moe_init_routing. Tensors first, then CANN's attributes in
    CANN's order (``topK, dropPadMode, activeNum``).

    Args:
        grad_expanded_x (Tensor): ``[A, H]`` (dropless; ``A = active_num`` if
            ``0 < active_num < R*K``, else ``R*K``) or ``[E, C, H]`` (drop/pad),
            float32/float16/bfloat16.
        expanded_row_idx (Tensor): ``[R*K]`` int32, row-major, as :func:`moe_init_routing`
            returns it: ``[0, R*K)`` dropless, ``[-1, E*C)`` drop/pad.
        top_k (int): K >= 1; ``len(expanded_row_idx)`` must be a multiple of it.
        drop_pad_mode (int): 0 dropless, 1 drop/pad (``grad_expanded_x`` 3-D). Default 0.
        active_num (int): dropless only, counted in pairs (rows of expanded_x) as
            moe_init_routing counts it. Default 0 (no truncation).

    Returns:
        Tensor ``grad_x`` ``[R, H]``, dtype of grad_expanded_x (``[0, H]`` when R = 0). Not
        differentiable itself.
    """
    op = "moe_init_routing_grad"
    check_int(op, "top_k", top_k, low=1)
    check_int(op, "drop_pad_mode", drop_pad_mode, allowed=(0, 1))
    check_int(op, "active_num", active_num, low=0)
    check_rank(op, "grad_expanded_x", grad_expanded_x, 3 if drop_pad_mode else 2)
    check_dtype(op, "grad_expanded_x", grad_expanded_x, FLOAT_DTYPES)
    check_rank(op, "expanded_row_idx", expanded_row_idx, 1)
    check_dtype(op, "expanded_row_idx", expanded_row_idx, (ms.int32,))
    pairs = expanded_row_idx.shape[0]
    if known(pairs):
        if pairs % top_k:
            raise ValueError(f"{op}: 'expanded_row_idx' must have R*K entries, a multiple of "
                             f"top_k={top_k}, got {pairs}")
        if drop_pad_mode == 0:
            check_dim(op, "grad_expanded_x", grad_expanded_x, 0, _active_rows(pairs, active_num),
                      f"the rows of expanded_x for R*K={pairs}, active_num={active_num}")
    prim = custom_op(MOE_INIT_ROUTING_GRAD, top_k=top_k, drop_pad_mode=drop_pad_mode,
                     active_num=active_num)
    return prim(grad_expanded_x, expanded_row_idx)


def _check_expanded(op, expanded_x, grad_y, drop, active_num, expert_num, expert_capacity, pairs):
    """expanded_x against grad_y and against the attributes that also give its shape."""
    check_rank(op, "expanded_x", expanded_x, 3 if drop else 2)
    check_same_dtype(op, "expanded_x", expanded_x, "grad_y", grad_y)
    check_dim(op, "expanded_x", expanded_x, expanded_x.ndim - 1, grad_y.shape[1], "H of 'grad_y'")
    if drop:
        if expert_num:
            check_dim(op, "expanded_x", expanded_x, 0, expert_num, "expert_num")
        if expert_capacity:
            check_dim(op, "expanded_x", expanded_x, 1, expert_capacity, "expert_capacity")
    elif active_num and known(pairs):
        check_dim(op, "expanded_x", expanded_x, 0, _active_rows(pairs, active_num),
                  f"the rows for R*K={pairs}, active_num={active_num}")


def moe_finalize_routing_grad(grad_y, expanded_row_idx, expanded_x=None, scales=None,
                              expert_idx=None, bias=None, *, drop_pad_mode=0, active_num=0,
                              expert_num=0, expert_capacity=0, return_grad_bias=False):
    r"""Gradients of :func:`moe_finalize_routing` (CANN ``MoeFinalizeRoutingV2Grad``).

    With the row-major index (pair ``(r, k)`` at ``p = r*K + k``), its slot
    ``j(r,k) = expanded_row_idx[p]``, and only the pairs whose slot is in ``[0, N)``
    (``N`` = rows of expanded_x, ``E*C`` in drop/pad mode; -1 marks a dropped pair):

    .. math::
        \text{grad\_expanded\_x}[j] = \sum_{(r,k):\, j(r,k) = j} s[r,k]\, \text{grad\_y}[r]

        \text{grad\_scales}[r,k] = \langle \text{expanded\_x}[j(r,k)]
            + \text{bias}[\text{expert\_idx}[r,k]],\ \text{grad\_y}[r] \rangle

        \text{grad\_bias}[e] = \sum_{(r,k):\, \text{expert\_idx}[r,k] = e} s[r,k]\, \text{grad\_y}[r]

    with ``s = 1`` without scales (then K = 1). A slot no pair names gets zeros; a slot several
    pairs name gets the sum, in fp32 in ascending pair order ``p`` (deterministic, no atomics);
    the sums of grad_scales and grad_bias are fp32 too. A dropped pair gets ``grad_scales = 0``
    and adds nothing to grad_bias. This is the kernel ``ms.grad`` runs through
    moe_finalize_routing. Tensors first, optional ones in CANN's order (positional or keyword);
    the attributes are keyword-only.

    The modes are CANN's V2Grad ones, for the row-major index of :func:`moe_init_routing`:
    ``drop_pad_mode=0`` is the gradient of moe_finalize_routing's mode 2 (after a dropless
    moe_init_routing), ``drop_pad_mode=1`` of its mode 3 (after a drop/pad one). For the
    column-major modes 0/1 of moe_finalize_routing, use ``ms.grad`` through it.

    Where CANN's material disagrees with itself, this function keeps the choice consistent with
    the forward:

    - a dropped pair (slot -1, or past ``active_num``) contributes nothing to grad_scales, not even
      ``<bias[e], grad_y[r]>``: CANN's test golden adds that bias term although its forward adds
      nothing for a dropped pair;
    - ``active_num`` counts pairs, i.e. rows of expanded_x, as CANN's V2Grad documentation and
      MoeInitRoutingV2 (whose truncated output this is the gradient of) count it; a golden that
      counts tokens would give expanded_x ``active_num*K`` rows, which no forward produces;
    - the index may repeat a slot, as CANN's test cases do (its documentation says it may not);
      the gradient sums, the adjoint of the forward reading the slot once per pair;
    - float32 scales are allowed with float16/bfloat16 data (CANN's Ascend 950 rows; its A2/A3
      rows want scales in grad_y's dtype).

    Args:
        grad_y (Tensor): ``[R, H]``, float32/float16/bfloat16.
        expanded_row_idx (Tensor): ``[R*K]`` int32, row-major: ``[0, R*K)`` in dropless mode,
            ``[-1, E*C)`` in drop/pad mode; entries may repeat.
        expanded_x (Tensor, optional): ``[N, H]`` (dropless) or ``[E, C, H]`` (drop/pad), dtype of
            grad_y. Needed with scales (for grad_scales); without it grad_expanded_x's shape
            comes from the attributes: ``[A, H]`` with ``A = active_num`` if
            ``0 < active_num < R*K`` else ``R*K``, or ``[expert_num, expert_capacity, H]``.
        scales (Tensor, optional): ``[R, K]``, dtype of grad_y or float32. Without it K = 1.
        expert_idx (Tensor, optional): ``[R, K]`` int32, expert of each pair; needed with bias.
        bias (Tensor, optional): ``[E, H]``, dtype of grad_y.

    Keyword Args:
        drop_pad_mode (int): 0 dropless, 1 drop/pad. Default 0.
        active_num (int): dropless mode, in pairs (see above); checked against expanded_x when
            both are given. Default 0.
        expert_num (int): E, drop/pad mode; required (> 0) without expanded_x, else checked
            against it when non-zero. Default 0.
        expert_capacity (int): C, drop/pad mode; as expert_num. Default 0.
        return_grad_bias (bool): also return grad_bias (CANN's op has no such output; the
            kernel computes it for the forward's bias). Default False.

    Returns:
        tuple ``(grad_expanded_x, grad_scales)``, or with ``return_grad_bias``
        ``(grad_expanded_x, grad_scales, grad_bias)``:

        - **grad_expanded_x**: the shape of expanded_x (see above), dtype of grad_y.
        - **grad_scales**: ``[R, K]``, dtype of scales; None without scales.
        - **grad_bias**: ``[E, H]``, dtype of grad_y; None without bias.

        With R = 0: grad_expanded_x is all zeros (``[0, H]`` dropless), grad_scales ``[0, K]``,
        grad_bias zeros. Not differentiable itself.
    """
    op = "moe_finalize_routing_grad"
    check_int(op, "drop_pad_mode", drop_pad_mode, allowed=(0, 1))
    for name, value in (("active_num", active_num), ("expert_num", expert_num),
                        ("expert_capacity", expert_capacity)):
        check_int(op, name, value, low=0)
    if not isinstance(return_grad_bias, bool):
        raise TypeError(f"{op}: 'return_grad_bias' must be a bool, got {type(return_grad_bias).__name__}")
    drop = drop_pad_mode == 1
    check_rank(op, "grad_y", grad_y, 2)
    check_dtype(op, "grad_y", grad_y, FLOAT_DTYPES)
    check_rank(op, "expanded_row_idx", expanded_row_idx, 1)
    check_dtype(op, "expanded_row_idx", expanded_row_idx, (ms.int32,))
    rows, hidden = grad_y.shape
    pairs = expanded_row_idx.shape[0]
    top_k = 1
    if scales is not None:
        check_rank(op, "scales", scales, 2)
        check_dtype(op, "scales", scales, tuple(dict.fromkeys((grad_y.dtype, ms.float32))))
        check_dim(op, "scales", scales, 0, rows, "R of 'grad_y'")
        top_k = scales.shape[1]
    if known(rows) and known(top_k) and known(pairs) and rows * top_k != pairs:
        raise ValueError(f"{op}: 'expanded_row_idx' must have R*K = {rows}*{top_k} entries "
                         f"({'K from scales' if scales is not None else 'K = 1 without scales'}), "
                         f"got {pairs}")
    if expanded_x is not None:
        _check_expanded(op, expanded_x, grad_y, drop, active_num, expert_num, expert_capacity, pairs)
    elif scales is not None:
        raise ValueError(f"{op}: 'expanded_x' is required with 'scales' (grad_scales reads it)")
    elif drop and (expert_num <= 0 or expert_capacity <= 0):
        raise ValueError(f"{op}: without 'expanded_x', drop/pad mode needs 'expert_num' and "
                         f"'expert_capacity' > 0 (they give grad_expanded_x's shape), got "
                         f"{expert_num} and {expert_capacity}")
    if bias is not None:
        if expert_idx is None:
            raise ValueError(f"{op}: 'bias' needs 'expert_idx' (the expert of each pair)")
        check_rank(op, "bias", bias, 2)
        check_same_dtype(op, "bias", bias, "grad_y", grad_y)
        check_dim(op, "bias", bias, 1, hidden, "H of 'grad_y'")
        if drop:
            experts = expanded_x.shape[0] if expanded_x is not None else expert_num
            check_dim(op, "bias", bias, 0, experts, "expert_num E")
    if expert_idx is not None:
        check_rank(op, "expert_idx", expert_idx, 2)
        check_dtype(op, "expert_idx", expert_idx, (ms.int32,))
        check_dim(op, "expert_idx", expert_idx, 0, rows, "R of 'grad_y'")
        check_dim(op, "expert_idx", expert_idx, 1, top_k, "K")
    dtype = grad_y.dtype
    prim = custom_op(MOE_FINALIZE_ROUTING_GRAD, drop_pad_mode=2 + drop_pad_mode, active_num=active_num,
                     expert_num=expert_num, expert_capacity=expert_capacity,
                     has_expanded_x=expanded_x is not None, has_bias=bias is not None,
                     has_scales=scales is not None)
    grad_ex, grad_scales, grad_bias = prim(grad_y, expanded_row_idx, _placeholder(expanded_x, dtype),
                                           _placeholder(scales, dtype), _placeholder(expert_idx, ms.int32),
                                           _placeholder(bias, dtype))
    grad_scales = grad_scales if scales is not None else None
    if not return_grad_bias:
        return grad_ex, grad_scales
    return grad_ex, grad_scales, grad_bias if bias is not None else None
