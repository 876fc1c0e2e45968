"""Data of the DSA indexer tests: token-major arrays ([T, N, D]) and their layouts, the
reference's segments, and Cells that call the ops with fixed keywords (GRAPH mode compiles them)."""
import mindspore as ms
import numpy as np
from mindspore import nn, ops

from ms_ops.reference import dsa as ref


class Problem:
    """A BSND batch of equal lengths or a TND pack; ``tok`` turns a layout array token-major."""

    def __init__(self, layout, seq_q, seq_k):
        self.layout = layout
        if layout == "BSND":
            (self.batch, self.s1), self.s2 = seq_q, seq_k
            self.t1, self.t2 = self.batch * self.s1, self.batch * self.s2
            self.segs = ref.segments("BSND", self.t1, self.t2, self.s1, self.s2)
        else:
            self.cum_q, self.cum_k = [int(x) for x in np.cumsum(seq_q)], [int(x) for x in np.cumsum(seq_k)]
            self.t1, self.t2 = self.cum_q[-1], self.cum_k[-1]
            self.segs = ref.segments("TND", self.t1, self.t2, lengths_query=self.cum_q, lengths_key=self.cum_k)

    def shaped(self, a, query=True):
        """Token-major [T, ...] -> the layout's shape."""
        if self.layout == "TND":
            return a
        return a.reshape(self.batch, self.s1 if query else self.s2, *a.shape[1:])

    def tok(self, a):
        """The layout's shape -> token-major [T, ...]."""
        return np.asarray(a).reshape(-1, *a.shape[(2 if self.layout == "BSND" else 1):])

    def stats(self, a):
        """Token-major [T1, N2, G] statistics -> (B, N2, S1, G) or (N2, T1, G)."""
        if self.layout == "TND":
            return a.transpose(1, 0, 2)
        return a.reshape(self.batch, self.s1, *a.shape[1:]).transpose(0, 2, 1, 3)


class Indexer(nn.Cell):
    """lightning_indexer with fixed keywords; returns (indices, values)."""

    def __init__(self, fn, **kwargs):
        super().__init__()
        self.fn = fn
        self.kwargs = kwargs

    def construct(self, q, k, w):
        return self.fn(q, k, w, **self.kwargs)


class SelectedSum(nn.Cell):
    """Σ dy · sparse_values over the selected entries (index >= 0), in float32."""

    def __init__(self, indexer):
        super().__init__()
        self.indexer = indexer

    def construct(self, q, k, w, dy):
        idx, val = self.indexer(q, k, w)
        return (ops.where(idx >= 0, val.astype(ms.float32), 0.0) * dy).sum()
