"""BlockManager: the paged KV cache's block tables, reference counts and copy-on-write."""
import numpy as np
import pytest

from ms_ops.kv_cache import BlockManager, OutOfBlocksError


def _refs(bm):
    return [bm.ref_count(b) for b in range(bm.num_blocks)]


def test_blocks_taken_only_at_block_boundaries():
    bm = BlockManager(num_blocks=8, block_size=4)
    bm.allocate("s", 5)
    assert bm.block_table("s") == [0, 1] and bm.num_free_blocks == 6
    for expected_blocks in (2, 2, 2, 3):          # tokens 6, 7, 8 fit block 1; token 9 does not
        assert bm.append("s") == []
        assert len(bm.block_table("s")) == expected_blocks
    assert bm.num_tokens("s") == 9
    assert bm.append("s", 7) == [] and bm.block_table("s") == [0, 1, 2, 3] and bm.num_tokens("s") == 16


def test_fork_shares_prefix_and_copy_on_write_on_partial_block():
    bm = BlockManager(num_blocks=16, block_size=4)
    bm.allocate("sys", 10)                        # blocks 0, 1 full; block 2 holds 2 tokens
    bm.fork("sys", "a")
    bm.fork("sys", "b")
    assert bm.block_table("a") == bm.block_table("b") == [0, 1, 2]
    assert _refs(bm)[:3] == [3, 3, 3] and bm.num_free_blocks == 13
    assert bm.append("a") == [(2, 3)]             # "a" writes into shared block 2: its own copy
    assert bm.block_table("a") == [0, 1, 3] and bm.block_table("sys") == [0, 1, 2]
    assert _refs(bm)[:4] == [3, 3, 2, 1]
    assert bm.append("a") == []                   # block 3 is "a"'s alone now
    assert bm.append("b", 3) == [(2, 4)]          # 2 tokens into the copy, 1 into a new block
    assert bm.block_table("b") == [0, 1, 4, 5] and bm.num_tokens("b") == 13
    assert bm.append("sys") == []                 # sys is block 2's last holder: no copy
    assert _refs(bm)[:6] == [3, 3, 1, 1, 1, 1]


def test_fork_on_full_block_needs_no_copy():
    bm = BlockManager(num_blocks=4, block_size=4)
    bm.allocate("p", 8)
    bm.fork("p", "c")
    assert bm.append("c") == [] and bm.block_table("c") == [0, 1, 2] and bm.ref_count(2) == 1


def test_refcounts_return_to_zero_after_every_free():
    rng = np.random.default_rng(0)
    bm = BlockManager(num_blocks=64, block_size=8)
    bm.allocate("root", 21)
    live = ["root"]
    for i in range(40):
        op = rng.integers(3)
        if op == 0 and len(live) < 8:
            child = f"s{i}"
            bm.fork(live[rng.integers(len(live))], child)
            live.append(child)
        elif op == 1:
            bm.append(live[rng.integers(len(live))], int(rng.integers(1, 12)))
        elif len(live) > 1:
            bm.free(live.pop(rng.integers(len(live))))
        held = {}
        for s in live:
            for b in bm.block_table(s):
                held[b] = held.get(b, 0) + 1
        assert _refs(bm) == [held.get(b, 0) for b in range(64)]
        assert bm.num_free_blocks == 64 - len(held)
    for s in live:
        bm.free(s)
    assert _refs(bm) == [0] * 64 and bm.num_free_blocks == 64


def test_out_of_blocks_is_an_error_that_changes_nothing():
    bm = BlockManager(num_blocks=3, block_size=4)
    bm.allocate("a", 6)
    bm.fork("a", "b")
    with pytest.raises(OutOfBlocksError, match=r"BlockManager.allocate: needs 2 free blocks, the pool has 1"):
        bm.allocate("c", 5)
    assert "c" not in bm
    bm.append("a")                                # CoW takes the last free block
    with pytest.raises(OutOfBlocksError, match="BlockManager.append"):
        bm.append("b", 3)                         # needs a copy of block 1 and one more block
    assert bm.block_table("b") == [0, 1] and bm.num_tokens("b") == 6 and bm.num_free_blocks == 0


def test_bad_arguments_name_method_and_argument():
    bm = BlockManager(num_blocks=4, block_size=4)
    with pytest.raises(ValueError, match=r"BlockManager.__init__: 'block_size' must be >= 1"):
        BlockManager(4, 0)
    with pytest.raises(TypeError, match=r"BlockManager.__init__: 'num_blocks' must be an int"):
        BlockManager(4.0, 16)
    with pytest.raises(ValueError, match=r"BlockManager.append: unknown sequence 'x'"):
        bm.append("x")
    bm.allocate("a", 1)
    with pytest.raises(ValueError, match=r"BlockManager.allocate: sequence 'a' exists already"):
        bm.allocate("a", 1)
    with pytest.raises(ValueError, match=r"BlockManager.fork: child sequence 'a' exists already"):
        bm.fork("a", "a")
    with pytest.raises(ValueError, match=r"BlockManager.append: 'num_tokens' must be >= 1"):
        bm.append("a", 0)
    with pytest.raises(ValueError, match=r"BlockManager.slot_mapping: sequence 'a' holds 1 tokens"):
        bm.slot_mapping(["a"], 2)
    with pytest.raises(ValueError, match=r"BlockManager.block_tables: 'max_blocks' is 0"):
        bm.block_tables(["a"], max_blocks=0)
    bm.free("a")
    with pytest.raises(ValueError, match=r"BlockManager.free: unknown sequence 'a'"):
        bm.free("a")


def test_tensors_for_the_kernels():
    bm = BlockManager(num_blocks=16, block_size=4)
    bm.allocate(0, 6)                             # blocks 0, 1
    bm.allocate(1, 3)                             # block 2
    bm.fork(0, 2)
    bm.append(2, 2)                               # CoW of block 1 -> 3
    tables = bm.block_tables([0, 1, 2], max_blocks=3).asnumpy()
    assert tables.dtype == np.int32
    np.testing.assert_array_equal(tables, [[0, 1, -1], [2, -1, -1], [0, 3, -1]])
    np.testing.assert_array_equal(bm.context_lens([0, 1, 2]).asnumpy(), [6, 3, 8])
    slots = bm.slot_mapping([0, 1, 2], [6, 1, 2]).asnumpy()
    np.testing.assert_array_equal(slots, [0, 1, 2, 3, 4, 5, 10, 14, 15])
    assert slots.dtype == np.int32
