"""MoE token routing: dispatch (``moe_init_routing``) and combine (``moe_finalize_routing``).

Semantics are CANN's MoeInitRoutingV2 / MoeFinalizeRoutingV2; keyword names follow MindSpore's
``ops.moe_init_routing_v2`` / ``ops.moe_finalize_routing``. Both ops are differentiable.
"""
import mindspore as ms
from mindspore import ops

from ms_ops._custom import custom_op
from ms_ops.bprop.moe_routing import make_moe_finalize_routing_bprop, make_moe_init_routing_bprop
from ms_ops.kernels.moe_routing import MOE_FINALIZE_ROUTING, MOE_INIT_ROUTING
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

    Gradient: ``d x[r] = sum_k d expanded_x[expanded_row_idx[r*K + k]]`` (dropped and inactive
    pairs contribute nothing).
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
    not even its bias.

    Args:
        expanded_x (Tensor): ``[N, H]`` (modes 0/2) or ``[E, C, H]`` (modes 1/3),
            float32/float16/bfloat16.
        expanded_row_idx (Tensor): ``[R*K]`` int32, an injective map (no repeated entry).

    Keyword Args:
        x1, x2 (Tensor, optional): ``[R, H]`` residuals, dtype of expanded_x; ``x2`` needs ``x1``.
        bias (Tensor, optional): ``[E, H]`` per-expert bias, needs ``expert_idx``.
        scales (Tensor, optional): ``[R, K]`` combine weights, dtype of expanded_x or float32.
            Without scales, K = 1 and every weight is 1.
        expert_idx (Tensor, optional): ``[R, K]`` int32, expert of each pair (used by bias).
        drop_pad_mode (int): 0..3 as above. Default 0.

    Returns:
        Tensor ``[R, H]``, dtype of expanded_x. Differentiable w.r.t. expanded_x, x1, x2, bias
        and scales.
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
