"""A paged KV cache's bookkeeping: the pool of physical blocks and one block table per sequence.

The caches themselves are tensors ``[num_blocks, block_size, kv_heads, head_dim]`` (one for keys,
one for values); this module decides which block and slot each token of each sequence lives in.

- A sequence's token ``i`` lives in physical block ``table[i // block_size]`` at offset
  ``i % block_size``, i.e. at flat slot ``table[i // block_size] * block_size + i % block_size``
  (the ``slot_mapping`` that MindSpore's ``reshape_and_cache`` takes).
- Blocks are reference-counted. :meth:`BlockManager.fork` lets a child sequence share every block
  of its parent (a common prompt is stored once). A block is taken from the pool only when a
  sequence's next token crosses into a new block.
- Copy on write: when a sequence appends into a last block that is shared and only partly filled,
  the sequence gets its own copy of that block first. :meth:`BlockManager.append` returns such
  copies as ``(src, dst)`` block pairs; the caller copies the cache blocks (``copy_blocks``)
  before writing the new tokens.
- A block whose count drops to 0 goes back to the pool. Running out of blocks raises
  :class:`OutOfBlocksError` before anything changes: the tables and counts stay as they were.

Example::

    bm = BlockManager(num_blocks=64, block_size=16)
    bm.allocate("system", 40)                 # a 40-token prompt: 3 blocks
    bm.fork("system", "a"); bm.fork("system", "b")   # both share the 3 blocks
    copies = bm.append("a")                   # token 40 of "a" goes into the shared, partly
                                              # filled block 2: "a" gets a copy -> [(2, 3)]
    slots = bm.slot_mapping(["a"])            # where to write token 40 of "a"
"""
from collections import deque

import numpy as np

__all__ = ["BlockManager", "OutOfBlocksError"]


class OutOfBlocksError(RuntimeError):
    """The pool has fewer free blocks than a request needs; nothing was changed."""


def _check_count(method, name, value, low):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"BlockManager.{method}: '{name}' must be an int, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"BlockManager.{method}: '{name}' must be >= {low}, got {value}")
    return int(value)


class BlockManager:
    """Reference-counted physical blocks and per-sequence block tables of a paged KV cache.

    Args:
        num_blocks (int): blocks in the pool (the caches' first dimension).
        block_size (int): tokens per block (the caches' second dimension).

    Sequences are named by any hashable id. Methods raise ``ValueError`` for an unknown or
    already existing sequence and :class:`OutOfBlocksError` when the pool cannot serve a request.
    """

    def __init__(self, num_blocks, block_size):
        self.num_blocks = _check_count("__init__", "num_blocks", num_blocks, 1)
        self.block_size = _check_count("__init__", "block_size", block_size, 1)
        # Lowest ids first, freed blocks to the back: a deterministic, easily read layout.
        self._free = deque(range(self.num_blocks))
        self._refs = [0] * self.num_blocks
        self._tables = {}
        self._lens = {}

    # --- queries ---------------------------------------------------------------------------
    @property
    def num_free_blocks(self):
        return len(self._free)

    def __contains__(self, seq):
        return seq in self._tables

    def sequences(self):
        return list(self._tables)

    def num_tokens(self, seq):
        return self._lens[self._known("num_tokens", seq)]

    def block_table(self, seq):
        """The physical block ids of ``seq``, in token order (a copy)."""
        return list(self._tables[self._known("block_table", seq)])

    def ref_count(self, block):
        block = _check_count("ref_count", "block", block, 0)
        if block >= self.num_blocks:
            raise ValueError(f"BlockManager.ref_count: 'block' must be < num_blocks={self.num_blocks}, "
                             f"got {block}")
        return self._refs[block]

    def blocks_needed(self, num_tokens):
        return -(-num_tokens // self.block_size)

    # --- changes ---------------------------------------------------------------------------
    def allocate(self, seq, num_tokens):
        """A new sequence holding ``num_tokens`` tokens (its prompt): ceil(n / block_size) blocks."""
        if seq in self._tables:
            raise ValueError(f"BlockManager.allocate: sequence {seq!r} exists already; free() it first")
        num_tokens = _check_count("allocate", "num_tokens", num_tokens, 0)
        self._tables[seq] = self._take("allocate", self.blocks_needed(num_tokens))
        self._lens[seq] = num_tokens

    def append(self, seq, num_tokens=1):
        """Makes room for ``num_tokens`` more tokens of ``seq`` and returns the copy-on-write copies.

        Returns:
            list of ``(src, dst)`` block ids: before writing the new tokens, copy cache block
            ``src`` to ``dst`` (at most one pair: the sequence's shared, partly filled last block).
        """
        self._known("append", seq)
        num_tokens = _check_count("append", "num_tokens", num_tokens, 1)
        table, length = self._tables[seq], self._lens[seq]
        new_blocks = self.blocks_needed(length + num_tokens) - len(table)
        last_partial_shared = length % self.block_size != 0 and self._refs[table[-1]] > 1
        taken = self._take("append", new_blocks + int(last_partial_shared))
        copies = []
        if last_partial_shared:
            src, dst = table[-1], taken.pop(0)
            self._refs[src] -= 1
            table[-1] = dst
            copies.append((src, dst))
        table.extend(taken)
        self._lens[seq] = length + num_tokens
        return copies

    def fork(self, parent, child):
        """``child`` starts as ``parent``: the same tokens in the same (shared) blocks."""
        self._known("fork", parent)
        if child in self._tables:
            raise ValueError(f"BlockManager.fork: child sequence {child!r} exists already")
        table = list(self._tables[parent])
        for block in table:
            self._refs[block] += 1
        self._tables[child] = table
        self._lens[child] = self._lens[parent]

    def free(self, seq):
        """Drops ``seq``; blocks no other sequence holds go back to the pool."""
        for block in self._tables.pop(self._known("free", seq)):
            self._refs[block] -= 1
            if self._refs[block] == 0:
                self._free.append(block)
        del self._lens[seq]

    # --- tensors for the kernels -------------------------------------------------------------
    def block_tables(self, seqs, max_blocks=None):
        """int32 ``[len(seqs), max_blocks]`` block tables, padded with -1 (never read: the
        context length bounds every read)."""
        seqs = [self._known("block_tables", s) for s in seqs]
        width = max((len(self._tables[s]) for s in seqs), default=0)
        if max_blocks is None:
            max_blocks = width
        elif _check_count("block_tables", "max_blocks", max_blocks, 0) < width:
            raise ValueError(f"BlockManager.block_tables: 'max_blocks' is {max_blocks}, but a "
                             f"sequence holds {width} blocks")
        out = np.full((len(seqs), max_blocks), -1, np.int32)
        for i, s in enumerate(seqs):
            out[i, :len(self._tables[s])] = self._tables[s]
        return _tensor(out)

    def context_lens(self, seqs):
        """int32 ``[len(seqs)]``: the tokens each sequence holds."""
        return _tensor(np.array([self._lens[self._known("context_lens", s)] for s in seqs], np.int32))

    def slot_mapping(self, seqs, num_tokens=1):
        """int32 flat cache slots of the last ``num_tokens`` tokens of each sequence, concatenated
        in ``seqs`` order (``num_tokens``: one int for all, or one per sequence). After
        :meth:`allocate` (``num_tokens`` = the prompt length) or :meth:`append`, these are the
        slots ``reshape_and_cache`` writes the new tokens' keys and values to."""
        seqs = list(seqs)
        counts = [num_tokens] * len(seqs) if isinstance(num_tokens, (int, np.integer)) else list(num_tokens)
        if len(counts) != len(seqs):
            raise ValueError(f"BlockManager.slot_mapping: 'num_tokens' has {len(counts)} entries for "
                             f"{len(seqs)} sequences")
        slots = []
        for s, n in zip(seqs, counts):
            length = self._lens[self._known("slot_mapping", s)]
            n = _check_count("slot_mapping", "num_tokens", n, 0)
            if n > length:
                raise ValueError(f"BlockManager.slot_mapping: sequence {s!r} holds {length} tokens, "
                                 f"asked for the last {n}")
            pos = np.arange(length - n, length)
            table = np.asarray(self._tables[s], np.int64)
            slots.append(table[pos // self.block_size] * self.block_size + pos % self.block_size)
        flat = np.concatenate(slots) if slots else np.zeros(0, np.int64)
        return _tensor(flat.astype(np.int32))

    # --- internals ---------------------------------------------------------------------------
    def _known(self, method, seq):
        if seq not in self._tables:
            raise ValueError(f"BlockManager.{method}: unknown sequence {seq!r}; allocate() or fork() it first")
        return seq

    def _take(self, method, count):
        if count > len(self._free):
            raise OutOfBlocksError(
                f"BlockManager.{method}: needs {count} free blocks, the pool has {len(self._free)} of "
                f"{self.num_blocks}; free finished sequences or build a larger pool")
        taken = [self._free.popleft() for _ in range(count)]
        for block in taken:
            self._refs[block] = 1
        return taken


def _tensor(array):
    # Imported here so that the bookkeeping above works (and is testable) without MindSpore.
    import mindspore as ms
    return ms.Tensor(array)
