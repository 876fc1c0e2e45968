"""flash_attention_score's checks of the packed sequence lengths (TND), attn_mask, prefix,
real_shift and dropout against input_layout, sparse_mode and pse_type, and their conversion to the
kernels' inputs. Static: they run in PyNative and at compile time in GRAPH mode; values inside a Tensor
are checked by the kernel.
"""
import functools

import mindspore as ms
import numpy as np
from mindspore import ops
from mindspore.common.generator import Generator
from mindspore.common.seed import _get_op_seed, _update_seeds

from ms_ops.ops._validation import known

_OP = "flash_attention_score"
# Where the kernels' dropout (seed, offset) pairs come from when the caller gives none: seed and
# offset Parameters that a call advances inside the compiled graph in GRAPH mode, the mechanism of
# MindSpore's own dropout_ext. That one uses MindSpore's default generator, whose seed inside a
# graph ignores mindspore.manual_seed in 2.10 (a fresh random seed per process), so ms_ops keeps
# its own generator and seeds it from ms.set_seed.
DROPOUT_GENERATOR = Generator()
# One call takes one offset: the kernels put the offset in its own counter words, so consecutive
# offsets already give independent bits.
_DROPOUT_STEP = ms.Tensor(1, ms.int64)
# MindSpore's per-op seed bookkeeping, which every ms.set_seed resets to the op seed (0 here): the
# way to see a new ms.set_seed call, also one repeating the last seed.
_SEED_KEY = "ms_ops.flash_attention_score.dropout"
_randomly_seeded = []

# The compressed masks of the modes whose mask the kernel does not need to read.
COMPRESSED_MASKS = {2: (2048, 2048), 3: (2048, 2048), 4: (2048, 2048), 6: (3072, 2048), 7: (2048, 2048),
                    8: (2048, 2048)}


@functools.lru_cache(maxsize=None)
def _int64_tensor(values):
    """The int64 Tensor of a tuple of ints (a compile-time constant in GRAPH mode)."""
    return ms.Tensor(np.array(values, dtype=np.int64))


@functools.lru_cache(maxsize=None)
def compressed_mask(sparse_mode):
    """CANN's compressed attn_mask of sparse_mode 2, 3, 4, 7 and 8 (bool [2048, 2048], 1 above the
    diagonal) or 6 ([3072, 2048]: that triangle over a 1024-row block whose right half is 1), for
    callers that want a mode's visible keys: without attn_mask the op computes full attention. A
    constant in GRAPH mode."""
    rows, cols = COMPRESSED_MASKS[sparse_mode]
    mask = np.zeros((rows, cols), np.bool_)
    mask[:cols] = np.triu(np.ones((cols, cols), np.bool_), 1)
    mask[cols:, cols // 2:] = True
    return ms.Tensor(mask)


def placeholder(dtype):
    """The [1] tensor standing in for an absent optional input (the kernel never reads it)."""
    return ops.zeros((1,), dtype)


def _int_list(name, values):
    if isinstance(values, (list, tuple)):
        for x in values:
            if isinstance(x, bool) or not isinstance(x, int):
                raise TypeError(f"{_OP}: '{name}' must hold ints, got {type(x).__name__}")
        return tuple(values)
    raise TypeError(f"{_OP}: '{name}' must be a list or tuple of ints or an int64 Tensor, got {type(values).__name__}")


def _as_int64(name, values):
    """An int64 Tensor from a Tensor (int32 or int64, 1-D) or a list of ints."""
    if isinstance(values, ms.Tensor):
        if values.dtype not in (ms.int64, ms.int32) or values.ndim != 1:
            raise TypeError(f"{_OP}: '{name}' must be a 1-D int64 Tensor, got {values.dtype} of shape {values.shape}")
        return values if values.dtype == ms.int64 else values.astype(ms.int64)
    return _int64_tensor(_int_list(name, values))


def _check_cumulative(name, values, total):
    if not values:
        raise ValueError(f"{_OP}: '{name}' must list at least one sequence")
    prev = 0
    for x in values:
        if x < prev:
            raise ValueError(f"{_OP}: '{name}' must be non-decreasing from >= 0 (cumulative lengths), got {values}")
        prev = x
    if known(total) and values[-1] != total:
        raise ValueError(f"{_OP}: '{name}' must end at the packed length {total} (T), got {values[-1]}")


def sequences(layout, actual_seq_qlen, actual_seq_kvlen, t1, t2):
    """(batch or None, qlen Tensor, kvlen Tensor) for the kernels; checks the lengths of TND."""
    given = actual_seq_qlen is not None, actual_seq_kvlen is not None
    if layout != "TND":
        if any(given):
            name = "actual_seq_qlen" if given[0] else "actual_seq_kvlen"
            raise ValueError(f"{_OP}: '{name}' is only used with input_layout 'TND', got {layout!r}")
        return None, placeholder(ms.int64), placeholder(ms.int64)
    if not all(given):
        name = "actual_seq_kvlen" if given[0] else "actual_seq_qlen"
        raise ValueError(f"{_OP}: '{name}' is required with input_layout 'TND' (cumulative lengths)")
    batch = None
    lens = []
    for name, values, total in (("actual_seq_qlen", actual_seq_qlen, t1), ("actual_seq_kvlen", actual_seq_kvlen, t2)):
        if not isinstance(values, ms.Tensor):
            values = _int_list(name, values)
            _check_cumulative(name, values, total)
            if batch is not None and len(values) != batch:
                raise ValueError(f"{_OP}: '{name}' must have one entry per sequence like 'actual_seq_qlen' "
                                 f"({batch}), got {len(values)}")
            batch = len(values)
        lens.append(_as_int64(name, values))
    return batch, lens[0], lens[1]


def longest(cumulative):
    """The longest sequence of cumulative lengths given as a list, None (unknown here) for a Tensor."""
    if isinstance(cumulative, ms.Tensor):
        return None
    return max(b - a for a, b in zip((0,) + tuple(cumulative[:-1]), cumulative))


def check_prefix(prefix, sparse_mode, batch, s2):
    """The kernels' prefix input: per-batch prefix lengths for sparse_mode 5 and 6."""
    if sparse_mode not in (5, 6):
        if prefix is not None:
            raise ValueError(f"{_OP}: 'prefix' is only used by sparse_mode 5 and 6, got sparse_mode {sparse_mode}")
        return placeholder(ms.int64)
    if prefix is None:
        raise ValueError(f"{_OP}: 'prefix' is required by sparse_mode {sparse_mode} (one length per batch)")
    if isinstance(prefix, ms.Tensor):
        return _as_int64("prefix", prefix)
    values = _int_list("prefix", prefix)
    if batch is not None and known(batch) and len(values) != batch:
        raise ValueError(f"{_OP}: 'prefix' must have one entry per batch ({batch}), got {len(values)}")
    for x in values:
        if x < 0 or (s2 is not None and known(s2) and x > s2):
            raise ValueError(f"{_OP}: 'prefix' entries must be in [0, S2={s2}], got {values}")
    return _int64_tensor(values)


def check_mask(attn_mask, sparse_mode, layout, b, n1, s1, s2):
    """The kernels' attn_mask input. Modes 0, 1 and 5 read a full mask; the other modes take the
    compressed form, whose shape is checked and contents not needed. With TND s1 and s2 are the
    longest sequence's lengths (the mask is per sequence, padded)."""
    if attn_mask is None:
        return placeholder(ms.uint8)
    if not isinstance(attn_mask, ms.Tensor):
        raise TypeError(f"{_OP}: 'attn_mask' must be a Tensor, got {type(attn_mask).__name__}")
    if attn_mask.dtype not in (ms.bool_, ms.uint8):
        raise TypeError(f"{_OP}: 'attn_mask' must be bool or uint8 (1 = masked out), got {attn_mask.dtype}")
    shape = tuple(attn_mask.shape)
    if sparse_mode in COMPRESSED_MASKS:
        if shape != COMPRESSED_MASKS[sparse_mode]:
            raise ValueError(f"{_OP}: 'attn_mask' must be the compressed {COMPRESSED_MASKS[sparse_mode]} mask "
                             f"for sparse_mode {sparse_mode}, got shape {shape}")
        return attn_mask
    wanted = [(b, n1, s1, s2), (b, 1, s1, s2)]
    if sparse_mode != 5:
        wanted += [(1, 1, s1, s2), (s1, s2)]
    wanted = list(dict.fromkeys(wanted))  # B or N1 of 1 repeats a form
    if not any(len(w) == len(shape) and all(not known(x) or not known(y) or x == y for x, y in zip(w, shape))
               for w in wanted):
        raise ValueError(f"{_OP}: 'attn_mask' shape {shape} does not fit sparse_mode {sparse_mode}: "
                         f"expected one of {wanted}")
    return attn_mask


def check_pse(real_shift, pse_type, layout, dtype, b, n1, s1, s2, sparse_mode, next_tokens):
    """The kernels' real_shift input. pse_type 0/1: a tensor of query's dtype, [B, N1, S1, S2] (the
    one form with a gradient), [B or 1, N1, S1 or 1, S2], or the ALiBi-compressed
    [B or 1, N1, 1024, S2] (causal, S1 == S2 > 1024); its gradient is stopped but for the full form.
    pse_type 2/3: float32 slopes [N1] or [B, N1], S1 == S2 (never differentiated). With TND (s1, s2
    the longest sequence's lengths: per sequence, padded) pse_type 0/1 only, never differentiated."""
    if isinstance(pse_type, bool) or not isinstance(pse_type, int):
        raise TypeError(f"{_OP}: 'pse_type' must be an int, got {type(pse_type).__name__}")
    if pse_type not in (0, 1, 2, 3):
        raise ValueError(f"{_OP}: 'pse_type' must be 0, 1, 2 or 3, got {pse_type}")
    if real_shift is None:
        if pse_type >= 2:
            raise ValueError(f"{_OP}: 'real_shift' is required by pse_type {pse_type} (the ALiBi slopes)")
        return placeholder(dtype)
    if not isinstance(real_shift, ms.Tensor):
        raise TypeError(f"{_OP}: 'real_shift' must be a Tensor, got {type(real_shift).__name__}")
    shape = tuple(real_shift.shape)
    packed = layout == "TND"
    if packed and pse_type >= 2:
        raise ValueError(f"{_OP}: 'real_shift' slopes (pse_type {pse_type}) are not supported with input_layout 'TND'")
    if pse_type >= 2:
        if real_shift.dtype != ms.float32:
            raise TypeError(f"{_OP}: 'real_shift' (slopes of pse_type {pse_type}) must be float32, "
                            f"got {real_shift.dtype}")
        if shape not in ((n1,), (b, n1)):
            raise ValueError(f"{_OP}: 'real_shift' (slopes of pse_type {pse_type}) must be [N1] or [B, N1] "
                             f"({n1},) / ({b}, {n1}), got {shape}")
        if known(s1) and known(s2) and s1 != s2:
            raise ValueError(f"{_OP}: 'real_shift' slopes (pse_type {pse_type}) need S1 == S2, got {s1}, {s2}")
        return ops.stop_gradient(real_shift)
    if real_shift.dtype != dtype:
        raise TypeError(f"{_OP}: 'real_shift' must have query's dtype {dtype}, got {real_shift.dtype}")
    causal = sparse_mode in (2, 3) or (sparse_mode == 0 and next_tokens <= 0)
    compressed = len(shape) == 4 and shape[2] == 1024 and causal and known(s1) and s1 > 1024 and s1 == s2 and not packed
    fits = (len(shape) == 4 and shape[0] in (b, 1) and shape[1] == n1 and shape[3] == s2
            and (shape[2] in (s1, 1) or compressed))
    if not fits:
        raise ValueError(f"{_OP}: 'real_shift' shape {shape} does not fit [B, N1, S1, S2] = {(b, n1, s1, s2)} "
                         f"(B and S1 may be 1; [B, N1, 1024, S2] ALiBi-compressed when causal with S1 == S2 > 1024)")
    if shape == (b, n1, s1, s2) and not compressed and not packed:
        return real_shift
    return ops.stop_gradient(real_shift)


def _follow_global_seed():
    """Reseeds DROPOUT_GENERATOR (offset 0) with the global seed after each ms.set_seed; without a
    global seed, seeds it once at random, as MindSpore seeds its default generator."""
    seed = ms.get_seed()
    if seed is None:
        if not _randomly_seeded:
            DROPOUT_GENERATOR.seed()
            _randomly_seeded.append(True)
        return
    if _get_op_seed(0, _SEED_KEY) == 0:
        DROPOUT_GENERATOR.manual_seed(seed)
        _update_seeds(0, _SEED_KEY)


# An lru_cache wrapper (size 0: it calls through every time) is run in Python when GRAPH mode
# compiles the graph instead of being parsed into it, as ms_ops._custom.custom_op is; PyNative
# runs it on every call.
follow_global_seed = functools.lru_cache(maxsize=0)(_follow_global_seed)


def fresh_dropout_seed():
    """dropout_seed (int64 [2]) for one call: the generator's (seed, offset), the offset advancing."""
    follow_global_seed()
    seed, offset = DROPOUT_GENERATOR._step(_DROPOUT_STEP)  # pylint: disable=protected-access
    return ops.concat((seed.reshape((1,)), offset.reshape((1,))))


def check_dropout(keep_prob, drop_mask, seed, offset, layout, b, n1, s1, s2):
    """(drop_mask input, dropout_seed input or None). keep_prob in (0, 1]; below 1 the keep bits
    come from ``drop_mask`` (uint8 [B, N1, S1, S2 // 8], S2 a multiple of 8; TND: per sequence, padded to
    the longest, as attn_mask) or, without
    it, are drawn in the kernels from (seed, offset): the explicit ints, or, when both are None,
    None here and the caller takes a fresh pair (``fresh_dropout_seed``)."""
    if isinstance(keep_prob, bool) or not isinstance(keep_prob, (int, float)):
        raise TypeError(f"{_OP}: 'keep_prob' must be a float, got {type(keep_prob).__name__}")
    if not 0.0 < keep_prob <= 1.0:
        raise ValueError(f"{_OP}: 'keep_prob' must be in (0, 1], got {keep_prob}")
    for name, x in (("seed", seed), ("offset", offset)):
        if x is not None and (isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= 0x7FFFFFFFFFFFFFFF):
            raise TypeError(f"{_OP}: '{name}' must be an int in [0, 2**63 - 1], got {x!r}")
    if drop_mask is not None:
        if not isinstance(drop_mask, ms.Tensor):
            raise TypeError(f"{_OP}: 'drop_mask' must be a Tensor, got {type(drop_mask).__name__}")
        if drop_mask.dtype != ms.uint8:
            raise TypeError(f"{_OP}: 'drop_mask' must be uint8 (8 keep bits a byte), got {drop_mask.dtype}")
    if keep_prob == 1.0:
        return placeholder(ms.uint8), _int64_tensor((0, 0))
    if drop_mask is None:
        if seed is None and offset is None:
            return placeholder(ms.uint8), None
        return placeholder(ms.uint8), _int64_tensor((seed or 0, offset or 0))
    if seed is not None or offset is not None:
        raise ValueError(f"{_OP}: 'seed'/'offset' draw the keep bits in the kernel: give them or 'drop_mask', not both")
    packed = layout == "TND"
    if known(s2) and s2 % 8 != 0:
        what = "the longest key sequence S2" if packed else "S2"
        raise ValueError(f"{_OP}: 'drop_mask' needs {what} a multiple of 8 (8 keys a byte), got S2 = {s2}; "
                         f"leave drop_mask out to have the kernel draw the keep bits from seed and offset")
    want = (b, n1, s1, s2 // 8 if known(s2) else s2)
    shape = tuple(drop_mask.shape)
    if len(shape) != 4 or not all(not known(x) or not known(y) or x == y for x, y in zip(want, shape)):
        form = ("[B, N1, S1, S2 // 8] per sequence, S1 / S2 the longest query / key lengths" if packed
                else "[B, N1, S1, S2 // 8]")
        raise ValueError(f"{_OP}: 'drop_mask' must be {form} = {want}, got {shape}")
    return ops.stop_gradient(drop_mask), _int64_tensor((0, 0))
