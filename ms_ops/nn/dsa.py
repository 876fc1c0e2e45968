"""DeepSeek sparse attention (DeepSeek-V3.2) as Cells: the lightning indexer that picks each token's
keys, and the attention layer that attends over only those keys and trains the indexer with its
KL loss."""
import math

import mindspore as ms
import numpy as np
from mindspore import nn, ops

from ms_ops._graph import RecoveringCell
from ms_ops.ops._attention_args import compressed_mask
from ms_ops.ops._validation import FLOAT_DTYPES, check_dim, check_int, check_rank
from ms_ops.ops.attention import flash_attention_score
from ms_ops.ops.dsa import (MAX_SPARSE_COUNT, dense_lightning_indexer_kl_loss, lightning_indexer,
                            sparse_lightning_indexer_kl_loss)
from ms_ops.ops.sparse_flash_attention import sparse_flash_attention

_INDEXER = "LightningIndexer"
_DSA = "DSAttention"


def _rope_tables(max_seq_len, dim, base):
    """cos/sin [max_seq_len, 1, dim] over the two halves of the rotated part."""
    inv = base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
    angles = np.outer(np.arange(max_seq_len), inv)
    angles = np.concatenate([angles, angles], axis=-1)[:, None, :]
    return ms.Tensor(np.cos(angles), ms.float32), ms.Tensor(np.sin(angles), ms.float32)


def _rotate(x, cos, sin):
    half = x.shape[-1] // 2
    return x * cos + ops.concat((-x[..., half:], x[..., :half]), axis=-1) * sin


def _check_dtype(op, dtype):
    if dtype not in FLOAT_DTYPES:
        raise TypeError(f"{op}: 'dtype' must be one of {FLOAT_DTYPES}, got {dtype}")


def _check_rope(op, name, rope_dim, head_dim=None):
    check_int(op, name, rope_dim, low=0)
    if rope_dim % 2:
        raise ValueError(f"{op}: '{name}' must be even (rotary pairs), got {rope_dim}")
    if head_dim is not None and rope_dim > head_dim:
        raise ValueError(f"{op}: '{name}' ({rope_dim}) must not exceed the head dim ({head_dim})")


def _check_hidden(op, x, hidden_size):
    check_rank(op, "x", x, 3)
    check_dim(op, "x", x, 2, hidden_size, "hidden_size")


class LightningIndexer(RecoveringCell):
    r"""DeepSeek-V3.2's lightning indexer: scores every causal key of a token with a few ReLU heads
    and keeps the top ``sparse_count`` (:func:`ms_ops.lightning_indexer`, sparse_mode 3).

    From hidden states ``x [B, S, H]`` it projects index queries ``[B, S, index_heads,
    index_head_dim]``, one index key head ``[B, S, 1, index_head_dim]`` and per-head weights
    ``[B, S, index_heads]``; the first ``rope_head_dim`` dims of query and key are rotated by
    their position (rotary embedding, positions 0..S-1). The weights carry the factor
    ``(index_heads * index_head_dim) ** -0.5`` (the score scale; ReLU commutes with it).

    Args:
        hidden_size (int): H.
        index_heads (int): the index query heads.
        index_head_dim (int): their head dim.
        sparse_count (int): k, the keys kept per token, in [1, 2048].

    Keyword Args:
        rope_head_dim (int): the rotated part of the head dim (even, <= index_head_dim). Default 0.
        max_seq_len (int): the longest sequence the rotary tables cover. Default 4096.
        rope_base (float): the rotary base. Default 10000.0.
        dtype (mindspore.dtype): the kernel's dtype (float32, float16 or bfloat16); the
            projections stay float32. Default float32.

    Inputs:
        x (Tensor): [B, S, H] float32; S may be left open by ``set_inputs`` in GRAPH mode.

    Outputs:
        (sparse_indices, sparse_values): int32 [B, S, 1, k] key positions (best first, -1 where
        the token sees fewer than k keys) and their scores in ``dtype``. Gradients flow from
        sparse_values to the projections.
    """

    def __init__(self, hidden_size, index_heads, index_head_dim, sparse_count, *, rope_head_dim=0,
                 max_seq_len=4096, rope_base=10000.0, dtype=ms.float32):
        super().__init__()
        for name, value in (("hidden_size", hidden_size), ("index_heads", index_heads),
                            ("index_head_dim", index_head_dim), ("max_seq_len", max_seq_len)):
            check_int(_INDEXER, name, value, low=1)
        check_int(_INDEXER, "sparse_count", sparse_count, low=1)
        if sparse_count > MAX_SPARSE_COUNT:
            raise ValueError(f"{_INDEXER}: 'sparse_count' must be in [1, {MAX_SPARSE_COUNT}], got {sparse_count}")
        _check_rope(_INDEXER, "rope_head_dim", rope_head_dim, index_head_dim)
        _check_dtype(_INDEXER, dtype)
        self.hidden_size = hidden_size
        self.index_heads = index_heads
        self.index_head_dim = index_head_dim
        self.sparse_count = sparse_count
        self.rope_head_dim = rope_head_dim
        self.max_seq_len = max_seq_len
        self.dtype = dtype
        self.wq = nn.Dense(hidden_size, index_heads * index_head_dim, has_bias=False)
        self.wk = nn.Dense(hidden_size, index_head_dim, has_bias=False)
        self.weights_proj = nn.Dense(hidden_size, index_heads, has_bias=False)
        self.weight_scale = (index_heads * index_head_dim) ** -0.5
        self.cos, self.sin = _rope_tables(max_seq_len, rope_head_dim, rope_base) if rope_head_dim else (None, None)

    def _rope(self, x, s):
        if self.rope_head_dim == 0:
            return x
        r = self.rope_head_dim
        return ops.concat((_rotate(x[..., :r], self.cos[:s], self.sin[:s]), x[..., r:]), axis=-1)

    def projections(self, x):
        """(query_index [B, S, index_heads, D], key_index [B, S, 1, D], weights [B, S, index_heads])
        in ``dtype``: the inputs of the indexer kernel and of its KL loss."""
        _check_hidden(_INDEXER, x, self.hidden_size)
        b, s, _ = x.shape
        q = self._rope(self.wq(x).reshape(b, s, self.index_heads, self.index_head_dim), s)
        k = self._rope(self.wk(x).reshape(b, s, 1, self.index_head_dim), s)
        w = self.weights_proj(x) * self.weight_scale
        return q.astype(self.dtype), k.astype(self.dtype), w.astype(self.dtype)

    def select(self, query_index, key_index, weights):
        """The top-k of :func:`ms_ops.lightning_indexer` (causal) over the projections."""
        return lightning_indexer(query_index, key_index, weights, sparse_count=self.sparse_count, sparse_mode=3)

    def construct(self, x):
        return self.select(*self.projections(x))

    def extend_repr(self):
        return (f"hidden_size={self.hidden_size}, index_heads={self.index_heads}, "
                f"index_head_dim={self.index_head_dim}, sparse_count={self.sparse_count}, "
                f"rope_head_dim={self.rope_head_dim}, max_seq_len={self.max_seq_len}, dtype={self.dtype}")


class DSAttention(RecoveringCell):
    r"""Causal self-attention with DeepSeek sparse attention (DeepSeek-V3.2, MQA/MLA layout):
    every query token attends over only the ``sparse_count`` keys its
    :class:`LightningIndexer` selects, and the indexer learns from a KL loss towards the main
    attention.

    ``x [B, S, H]`` is projected to ``num_heads`` query heads and one shared key/value head
    (MQA): query ``[B, S, N, head_dim]`` plus its rotary part ``[B, S, N, rope_head_dim]``, key
    ``[B, S, 1, head_dim]`` plus ``[B, S, 1, rope_head_dim]``, value ``[B, S, 1, v_head_dim]``;
    the score is ``scale * (q . k + q_rope . k_rope)`` with ``scale = (head_dim +
    rope_head_dim) ** -0.5``. The output heads are projected back to ``[B, S, H]``.

    Sparse (default): :func:`ms_ops.sparse_flash_attention` over the indexer's keys, and the
    indexer loss :func:`ms_ops.sparse_lightning_indexer_kl_loss` over the same keys from that
    attention's softmax statistics. ``dense_warmup=True`` (DeepSeek-V3.2's warm-up stage):
    dense causal :func:`ms_ops.flash_attention_score` (its statistics by return_softmax_lse) and
    :func:`ms_ops.dense_lightning_indexer_kl_loss` over every causal key; the indexer's top-k is
    not needed then. The mode is fixed at construction; both
    modes have the same parameters, so the sparse stage can load the warm-up's checkpoint.

    The indexer reads ``stop_gradient(x)`` and its loss treats the main attention's query, key
    and statistics as constants, as in DeepSeek-V3.2: the output's gradient reaches the main
    projections only, the loss's gradient the indexer only.

    Args:
        hidden_size (int): H.
        num_heads (int): N, the query heads.
        head_dim (int): the query/key head dim without the rotary part.

    Keyword Args:
        rope_head_dim (int): the rotary part (even; 0 for none). Default 0.
        v_head_dim (int, optional): the value head dim, at most head_dim + rope_head_dim.
            Default head_dim.
        index_heads (int): the indexer's heads. Default 4.
        index_head_dim (int): the indexer's head dim. Default 32.
        index_rope_head_dim (int): the indexer's rotated part (even). Default 0.
        sparse_count (int): the keys per token, in [1, 2048]. Default 2048.
        dense_warmup (bool): dense attention and the dense KL loss. Default False.
        max_seq_len (int): the longest sequence the rotary tables cover. Default 4096.
        rope_base (float): the rotary base. Default 10000.0.
        dtype (mindspore.dtype): the kernels' dtype (float32, float16 or bfloat16); the
            projections stay float32. Default float32.

    Inputs:
        x (Tensor): [B, S, H] float32; S may be left open by ``set_inputs`` in GRAPH mode.

    Outputs:
        (output, indexer_loss): output [B, S, H] float32; indexer_loss float32 of shape (1,), the
        KL divergence summed over the tokens (as the loss ops return it).
    """

    def __init__(self, hidden_size, num_heads, head_dim, *, rope_head_dim=0, v_head_dim=None, index_heads=4,
                 index_head_dim=32, index_rope_head_dim=0, sparse_count=2048, dense_warmup=False, max_seq_len=4096,
                 rope_base=10000.0, dtype=ms.float32):
        super().__init__()
        for name, value in (("hidden_size", hidden_size), ("num_heads", num_heads), ("head_dim", head_dim),
                            ("max_seq_len", max_seq_len)):
            check_int(_DSA, name, value, low=1)
        _check_rope(_DSA, "rope_head_dim", rope_head_dim)
        v_head_dim = head_dim if v_head_dim is None else v_head_dim
        check_int(_DSA, "v_head_dim", v_head_dim, low=1)
        if v_head_dim > head_dim + rope_head_dim:
            raise ValueError(f"{_DSA}: 'v_head_dim' ({v_head_dim}) must not exceed head_dim + rope_head_dim "
                             f"({head_dim + rope_head_dim})")
        if not isinstance(dense_warmup, bool):
            raise TypeError(f"{_DSA}: 'dense_warmup' must be a bool, got {type(dense_warmup).__name__}")
        _check_dtype(_DSA, dtype)
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.rope_head_dim = rope_head_dim
        self.v_head_dim = v_head_dim
        self.dense_warmup = dense_warmup
        self.dtype = dtype
        self.scale = 1.0 / math.sqrt(head_dim + rope_head_dim)
        self.causal_mask = compressed_mask(3)  # the dense warm-up's: causal needs the mask, as in CANN
        self.q_width = head_dim + rope_head_dim
        self.kv_widths = (head_dim, rope_head_dim, v_head_dim) if rope_head_dim else (head_dim, v_head_dim)
        self.wq = nn.Dense(hidden_size, num_heads * self.q_width, has_bias=False)
        self.wkv = nn.Dense(hidden_size, sum(self.kv_widths), has_bias=False)
        self.wo = nn.Dense(num_heads * v_head_dim, hidden_size, has_bias=False)
        self.indexer = LightningIndexer(hidden_size, index_heads, index_head_dim, sparse_count,
                                        rope_head_dim=index_rope_head_dim, max_seq_len=max_seq_len,
                                        rope_base=rope_base, dtype=dtype)
        self.cos, self.sin = _rope_tables(max_seq_len, rope_head_dim, rope_base) if rope_head_dim else (None, None)

    def _main(self, x):
        """(query, key, value, query_rope, key_rope) in ``dtype``; the rope parts None without rope."""
        b, s, _ = x.shape
        q = self.wq(x).reshape(b, s, self.num_heads, self.q_width)
        kv = self.wkv(x).reshape(b, s, 1, sum(self.kv_widths))
        if not self.rope_head_dim:
            k, v = ops.split(kv, self.kv_widths, axis=-1)
            return q.astype(self.dtype), k.astype(self.dtype), v.astype(self.dtype), None, None
        k, kr, v = ops.split(kv, self.kv_widths, axis=-1)
        cos, sin = self.cos[:s], self.sin[:s]
        qr = _rotate(q[..., self.head_dim:], cos, sin)
        kr = _rotate(kr, cos, sin)
        return (q[..., :self.head_dim].astype(self.dtype), k.astype(self.dtype), v.astype(self.dtype),
                qr.astype(self.dtype), kr.astype(self.dtype))

    def _dense(self, q, k, v, qr, kr, qi, ki, w):
        if qr is not None:
            q, k = ops.concat((q, qr), axis=-1), ops.concat((k, kr), axis=-1)
        out, mx, sm = flash_attention_score(q, k, v, self.num_heads, attn_mask=self.causal_mask,
                                            scalar_value=self.scale, input_layout="BSND", sparse_mode=3,
                                            return_softmax_lse=True)
        # flash attention's statistics [B, N, S, 8] (8 equal copies) -> the loss's [B, 1, S, N].
        mx = ops.stop_gradient(mx[..., 0].swapaxes(1, 2).expand_dims(1))
        sm = ops.stop_gradient(sm[..., 0].swapaxes(1, 2).expand_dims(1))
        loss = dense_lightning_indexer_kl_loss(ops.stop_gradient(q), ops.stop_gradient(k), qi, ki, w, mx, sm,
                                               self.scale)
        return out, loss

    def _sparse(self, q, k, v, qr, kr, qi, ki, w):
        indices, _ = self.indexer.select(qi, ki, w)
        indices = ops.stop_gradient(indices)
        out, mx, sm = sparse_flash_attention(q, k, v, indices, self.scale, query_rope=qr, key_rope=kr)
        if qr is not None:
            qr, kr = ops.stop_gradient(qr), ops.stop_gradient(kr)
        loss = sparse_lightning_indexer_kl_loss(ops.stop_gradient(q), ops.stop_gradient(k), qi, ki, w, indices,
                                                ops.stop_gradient(mx), ops.stop_gradient(sm), self.scale,
                                                query_rope=qr, key_rope=kr)
        return out, loss

    def construct(self, x):
        _check_hidden(_DSA, x, self.hidden_size)
        b, s, _ = x.shape
        q, k, v, qr, kr = self._main(x)
        qi, ki, w = self.indexer.projections(ops.stop_gradient(x))
        if self.dense_warmup:
            out, loss = self._dense(q, k, v, qr, kr, qi, ki, w)
        else:
            out, loss = self._sparse(q, k, v, qr, kr, qi, ki, w)
        return self.wo(out.astype(ms.float32).reshape(b, s, self.num_heads * self.v_head_dim)), loss

    def extend_repr(self):
        return (f"hidden_size={self.hidden_size}, num_heads={self.num_heads}, head_dim={self.head_dim}, "
                f"rope_head_dim={self.rope_head_dim}, v_head_dim={self.v_head_dim}, "
                f"dense_warmup={self.dense_warmup}, dtype={self.dtype}")
