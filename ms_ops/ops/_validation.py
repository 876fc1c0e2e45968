"""Static argument checks shared by the public functions.

They run in PyNative and, at compile time, in GRAPH mode (MindSpore evaluates them on constant
shapes and dtypes). A dimension left unknown by ``Cell.set_inputs`` is not judged here: the
kernel entry checks it when the values arrive.
"""
import functools

import mindspore as ms
import numpy as np
from mindspore import ops

FLOAT_DTYPES = (ms.float32, ms.float16, ms.bfloat16)


def known(dim):
    """Whether ``dim`` is a size fixed at compile time. A dimension left open by
    ``Cell.set_inputs`` is a run-time value in GRAPH mode, not a constant."""
    return ops.isconstant(dim) and dim is not None and dim >= 0


def check_tensor(op, name, t):
    if not isinstance(t, ms.Tensor):
        raise TypeError(f"{op}: '{name}' must be a Tensor, got {type(t).__name__}")


def check_rank(op, name, t, ranks):
    """``ranks``: an int or a tuple of allowed ranks."""
    check_tensor(op, name, t)
    allowed = ranks if isinstance(ranks, tuple) else (ranks,)
    if t.ndim not in allowed:
        want = " or ".join(f"{r}-D" for r in allowed)
        raise ValueError(f"{op}: '{name}' must be {want}, got shape {t.shape}")


def check_dtype(op, name, t, dtypes):
    if t.dtype not in dtypes:
        names = ", ".join(str(d) for d in dtypes)
        raise TypeError(f"{op}: '{name}' must have dtype in ({names}), got {t.dtype}")


def check_same_dtype(op, name, t, ref_name, ref):
    if t.dtype != ref.dtype:
        raise TypeError(f"{op}: '{name}' must have the dtype of '{ref_name}' ({ref.dtype}), got {t.dtype}")


def check_dim(op, name, t, axis, expected, what):
    """``t.shape[axis]`` must equal ``expected`` (skipped when either is unknown)."""
    dim = t.shape[axis]
    if known(dim) and known(expected) and dim != expected:
        raise ValueError(f"{op}: '{name}' dimension {axis} must equal {what} ({expected}), "
                         f"got shape {t.shape}")


def check_int(op, name, value, low=None, allowed=None):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{op}: '{name}' must be an int, got {type(value).__name__}")
    if allowed is not None and value not in allowed:
        raise ValueError(f"{op}: '{name}' must be one of {allowed}, got {value}")
    if low is not None and value < low:
        raise ValueError(f"{op}: '{name}' must be >= {low}, got {value}")


def check_choice(op, name, value, choices):
    if value not in choices:
        raise ValueError(f"{op}: '{name}' must be one of {choices}, got {value!r}")


def check_float(op, name, value, low, high):
    """``low <= value < high`` for a Python number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{op}: '{name}' must be a float, got {type(value).__name__}")
    if not low <= value < high:
        raise ValueError(f"{op}: '{name}' must be in [{low}, {high}), got {value}")


def check_block_table(op, block_table, paged, layout_arg, layout):
    """A block table is given exactly with paged keys (``layout_arg`` == "PA_BSND"), an int32
    [batch, max_blocks] Tensor."""
    if paged != (block_table is not None):
        raise ValueError(f"{op}: 'block_table' is required exactly with {layout_arg} 'PA_BSND' (paged keys), got "
                         f"{'none' if block_table is None else 'one'} with {layout_arg} {layout!r}")
    if paged:
        check_tensor(op, "block_table", block_table)
        if block_table.dtype != ms.int32 or block_table.ndim != 2:
            raise TypeError(f"{op}: 'block_table' must be a 2-D int32 Tensor [batch, max_blocks], got "
                            f"{block_table.dtype} of shape {block_table.shape}")


@functools.lru_cache(maxsize=None)
def _int64_tensor(values):
    return ms.Tensor(np.array(values, dtype=np.int64))


def lengths_arg(op, name, values, layout, batch, limit):
    """(int64 Tensor or a [1] placeholder, given): one sequence-lengths argument, cumulative for
    TND and per batch for BSND; list values are checked here, Tensor values by the kernel."""
    if values is None:
        if layout == "TND":
            raise ValueError(f"{op}: '{name}' is required with layout 'TND' (cumulative lengths)")
        return ops.zeros((1,), ms.int64), False
    if isinstance(values, ms.Tensor):
        if values.dtype not in (ms.int32, ms.int64) or values.ndim != 1:
            raise TypeError(f"{op}: '{name}' must be a 1-D int32/int64 Tensor, got {values.dtype} "
                            f"of shape {values.shape}")
        return values.astype(ms.int64), True
    if not isinstance(values, (list, tuple)) or any(isinstance(x, bool) or not isinstance(x, int) for x in values):
        raise TypeError(f"{op}: '{name}' must be a list of ints or an int Tensor, got {values!r}")
    values = tuple(values)
    if layout == "TND":
        if not values or any(b < a for a, b in zip((0,) + values, values)) or values[0] < 0:
            raise ValueError(f"{op}: '{name}' must be non-decreasing cumulative lengths from >= 0, got {values}")
        if known(limit) and values[-1] != limit:
            raise ValueError(f"{op}: '{name}' must end at the packed length {limit}, got {values[-1]}")
    else:
        if known(batch) and len(values) != batch:
            raise ValueError(f"{op}: '{name}' must have one length per batch ({batch}), got {len(values)}")
        if any(x < 0 or (known(limit) and x > limit) for x in values):
            raise ValueError(f"{op}: '{name}' entries must be in [0, {limit}], got {values}")
    return _int64_tensor(values), True


def sequence_lengths(op, query, key, layout, lengths_query, lengths_key, *, key_name="actual_seq_lengths_key",
                     layout_key_name="layout_key", paged=False):
    """(query lengths, key lengths, whether each was given) for the kernels of the DSA ops, from
    query [B, S1, ...] or [T1, ...] and key alike. Paged keys (PA_BSND) need per-batch key lengths,
    bounded by the block table, which the kernel checks them against."""
    tnd = layout == "TND"
    qlen, has_q = lengths_arg(op, "actual_seq_lengths_query", lengths_query, layout,
                              None if tnd else query.shape[0], query.shape[0] if tnd else query.shape[1])
    if paged:
        if lengths_key is None:
            raise ValueError(f"{op}: '{key_name}' is required with {layout_key_name} 'PA_BSND' "
                             f"(per-batch key lengths)")
        # One length per sequence: TND's count is that of the cumulative query lengths.
        batch = (len(lengths_query) if isinstance(lengths_query, (list, tuple)) else None) if tnd else query.shape[0]
        klen, has_k = lengths_arg(op, key_name, lengths_key, "BSND", batch, None)
        return qlen, klen, has_q, has_k
    klen, has_k = lengths_arg(op, key_name, lengths_key, layout, None if tnd else key.shape[0],
                              key.shape[0] if tnd else key.shape[1])
    return qlen, klen, has_q, has_k
