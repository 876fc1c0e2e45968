"""Attention biases of :func:`ms_ops.memory_efficient_attention`, after xformers'
``xformers.ops.fmha.attn_bias``: objects that describe a mask without holding it, so the kernel
builds the mask from a few numbers instead of reading an ``M x N`` tensor.

- :class:`LowerTriangularMask`: causal, aligned at the top left (query i sees keys j <= i, also
  when M != N).
- :class:`BlockDiagonalMask`: packed sequences ``[1, sum(lengths), ...]``; each query sees only
  the keys of its own sequence.
- :class:`BlockDiagonalCausalMask`: the same, causal inside each sequence (top-left aligned per
  sequence, as xformers).

``materialize(shape)`` writes a mask out as a dense additive bias (0 visible, -inf hidden): for
references and tests, never needed by the op.
"""
from dataclasses import dataclass
from typing import Tuple

import mindspore as ms
import numpy as np


class AttentionBias:
    """Base class of the biases :func:`ms_ops.memory_efficient_attention` accepts."""

    def _visible(self, m, n):
        """Boolean ``[m, n]``: whether query i sees key j."""
        raise NotImplementedError

    def materialize(self, shape, dtype=ms.float32):
        """The dense additive bias of ``shape`` (``[..., M, N]``): 0 where a query sees a key,
        ``-inf`` elsewhere, broadcast over the leading dimensions."""
        shape = tuple(shape)
        if len(shape) < 2 or any(isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in shape):
            raise ValueError(f"{type(self).__name__}.materialize: 'shape' must be a tuple of at least "
                             f"two non-negative ints, got {shape}")
        bias = np.where(self._visible(shape[-2], shape[-1]), 0.0, -np.inf).astype(np.float32)
        return ms.Tensor(np.ascontiguousarray(np.broadcast_to(bias, shape))).astype(dtype)


class LowerTriangularMask(AttentionBias):
    """Causal mask, top-left aligned: query i sees keys ``j <= i`` (with M > N the last queries
    see every key; with M < N the last keys are seen by no query)."""

    def _visible(self, m, n):
        return np.arange(n)[None, :] <= np.arange(m)[:, None]

    def __repr__(self):
        return "LowerTriangularMask()"


@dataclass(frozen=True)
class SeqLenInfo:
    """Where the packed sequences start: ``seqstart_py[i]`` is the first row of sequence i and
    ``seqstart_py[-1]`` the total row count."""
    seqstart_py: Tuple[int, ...]

    @property
    def seqlen_py(self):
        return tuple(b - a for a, b in zip(self.seqstart_py[:-1], self.seqstart_py[1:]))

    @property
    def max_seqlen(self):
        return max(self.seqlen_py, default=0)

    @property
    def total(self):
        return self.seqstart_py[-1]

    @classmethod
    def from_seqlens(cls, seqlens, where, name):
        if isinstance(seqlens, (str, bytes)) or not hasattr(seqlens, "__iter__"):
            raise TypeError(f"{where}: '{name}' must be a sequence of ints, got {type(seqlens).__name__}")
        lengths = tuple(seqlens)
        if not lengths:
            raise ValueError(f"{where}: '{name}' must hold at least one length")
        for n in lengths:
            if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
                raise TypeError(f"{where}: '{name}' must hold ints, got {n!r} ({type(n).__name__})")
            if n < 0:
                raise ValueError(f"{where}: '{name}' lengths must be >= 0, got {lengths}")
        return cls(tuple(int(s) for s in np.concatenate([[0], np.cumsum(lengths)])))

    def split(self, tensor, where):
        """``tensor [1, total, ...]`` -> one ``[1, length, ...]`` view per sequence."""
        if not isinstance(tensor, ms.Tensor):
            raise TypeError(f"{where}: 'tensor' must be a Tensor, got {type(tensor).__name__}")
        if tensor.ndim < 2 or tensor.shape[0] != 1 or tensor.shape[1] != self.total:
            raise ValueError(f"{where}: 'tensor' must have shape [1, {self.total}, ...] (the packed "
                             f"sequences), got {tensor.shape}")
        return [tensor[:, a:b] for a, b in zip(self.seqstart_py[:-1], self.seqstart_py[1:])]


class BlockDiagonalMask(AttentionBias):
    """Packed sequences: the queries of sequence i (rows ``q_seqinfo.seqstart_py[i]`` up to the
    next start) see exactly the keys of sequence i. Tensors are ``[1, total, ...]`` (B = 1)."""

    def __init__(self, q_seqinfo, k_seqinfo):
        if len(q_seqinfo.seqstart_py) != len(k_seqinfo.seqstart_py):
            raise ValueError(f"{type(self).__name__}: query and key sequence counts differ "
                             f"({len(q_seqinfo.seqlen_py)} vs {len(k_seqinfo.seqlen_py)})")
        self.q_seqinfo = q_seqinfo
        self.k_seqinfo = k_seqinfo

    @classmethod
    def from_seqlens(cls, q_seqlen, kv_seqlen=None):
        """The mask of sequences of ``q_seqlen`` query rows each and ``kv_seqlen`` key rows each
        (default: ``q_seqlen``); lengths may be 0 (the queries of a sequence without keys see
        nothing and output 0)."""
        where = f"{cls.__name__}.from_seqlens"
        q_info = SeqLenInfo.from_seqlens(q_seqlen, where, "q_seqlen")
        if kv_seqlen is None:
            return cls(q_info, q_info)
        k_info = SeqLenInfo.from_seqlens(kv_seqlen, where, "kv_seqlen")
        if len(k_info.seqlen_py) != len(q_info.seqlen_py):
            raise ValueError(f"{where}: 'kv_seqlen' has {len(k_info.seqlen_py)} lengths but 'q_seqlen' "
                             f"{len(q_info.seqlen_py)}")
        return cls(q_info, k_info)

    def split(self, tensor):
        """``[1, total queries, ...]`` -> the list of per-sequence ``[1, length, ...]`` tensors."""
        return self.q_seqinfo.split(tensor, f"{type(self).__name__}.split")

    def split_queries(self, tensor):
        return self.split(tensor)

    def split_kv(self, tensor):
        """``[1, total keys, ...]`` -> the list of per-sequence ``[1, length, ...]`` tensors."""
        return self.k_seqinfo.split(tensor, f"{type(self).__name__}.split_kv")

    def make_causal(self):
        return BlockDiagonalCausalMask(self.q_seqinfo, self.k_seqinfo)

    def _block(self, m, n):
        return np.ones((m, n), bool)

    def _visible(self, m, n):
        if (m, n) != (self.q_seqinfo.total, self.k_seqinfo.total):
            raise ValueError(f"{type(self).__name__}.materialize: 'shape' must end in "
                             f"({self.q_seqinfo.total}, {self.k_seqinfo.total}), got ({m}, {n})")
        visible = np.zeros((m, n), bool)
        for (q0, q1), (k0, k1) in zip(zip(self.q_seqinfo.seqstart_py, self.q_seqinfo.seqstart_py[1:]),
                                      zip(self.k_seqinfo.seqstart_py, self.k_seqinfo.seqstart_py[1:])):
            visible[q0:q1, k0:k1] = self._block(q1 - q0, k1 - k0)
        return visible

    def __repr__(self):
        return (f"{type(self).__name__}(q_seqlen={self.q_seqinfo.seqlen_py}, "
                f"kv_seqlen={self.k_seqinfo.seqlen_py})")


class BlockDiagonalCausalMask(BlockDiagonalMask):
    """:class:`BlockDiagonalMask` with each sequence causal, top-left aligned: query i of a
    sequence sees that sequence's keys ``j <= i``."""

    def _block(self, m, n):
        return LowerTriangularMask()._visible(m, n)
