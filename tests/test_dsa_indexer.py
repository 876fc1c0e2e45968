"""lightning_indexer and its gradient (lightning_indexer_grad) against the float64 reference
(ms_ops.reference.dsa): BSND and TND (sequences of length 0 and 1, more queries than keys), both
sparse modes, GQA groups, head dims and k outside CANN's limits, several key tiles, integer data
with deliberate ties (the index sets must equal the reference's exactly), three dtypes, GRAPH and
PYNATIVE mode with ms.grad, determinism, and the errors."""
import mindspore as ms
import numpy as np
import pytest

import ms_ops
from ms_ops.reference import dsa as ref
from tests.dsa_cases import Indexer, Problem, SelectedSum
from tests.utils import assert_close, representable, rounding, to_ms, to_np

PROBLEMS = {"BSND": (("BSND", (2, 37), 45)), "TND": ("TND", [0, 1, 23, 12], [3, 4, 30, 5])}


def ints(shape, low=-2, high=3):
    """Small integers: exact in every dtype, and many equal scores."""
    return np.random.randint(low, high, shape).astype(np.float64)


def indexer(prob, q, k, w, dtype, sparse_count, sparse_mode):
    """(indices, values) token-major, from the op."""
    kwargs = dict(sparse_count=sparse_count, sparse_mode=sparse_mode, layout_query=prob.layout,
                  layout_key=prob.layout)
    if prob.layout == "TND":
        kwargs.update(actual_seq_lengths_query=prob.cum_q, actual_seq_lengths_key=prob.cum_k)
    cell = Indexer(ms_ops.lightning_indexer, **kwargs)
    idx, val = cell(to_ms(prob.shaped(q), dtype), to_ms(prob.shaped(k, False), dtype), to_ms(prob.shaped(w), dtype))
    return prob.tok(idx.asnumpy()), prob.tok(to_np(val)), cell


def check_selection(prob, n1, n2, d, sparse_count, sparse_mode, dtype="fp32"):
    q, k, w = ints((prob.t1, n1, d)), ints((prob.t2, n2, d)), ints((prob.t1, n1))
    idx, val, _ = indexer(prob, q, k, w, dtype, sparse_count, sparse_mode)
    ridx, rval = ref.lightning_indexer(q, k, w, prob.segs, sparse_count, sparse_mode)
    np.testing.assert_array_equal(idx, ridx)
    np.testing.assert_array_equal(val, rounding(dtype)(rval))
    return ridx


@pytest.mark.parametrize("sparse_mode", [0, 3])
@pytest.mark.parametrize("layout", ["BSND", "TND"])
def test_selection(mode, layout, sparse_mode):
    ridx = check_selection(Problem(*PROBLEMS[layout]), 6, 2, 19, 16, sparse_mode)
    assert (ridx >= 0).any() and ((ridx == -1).any() or sparse_mode == 0)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_selection_dtypes(dtype):
    check_selection(Problem("TND", [5, 17], [9, 20]), 4, 1, 8, 12, 3, dtype)


def test_many_key_tiles():
    """1100 keys: three score tiles, merges into a full top-k and tiles skipped by the k-th score."""
    check_selection(Problem("BSND", (1, 6), 1100), 3, 1, 5, 40, 0)


@pytest.mark.parametrize("sparse_count", [70, 200])
def test_candidates_of_a_full_top_k(sparse_count):
    """2100 causal keys: after the first tile only the scores above the k-th enter, packed as
    candidates of every sort size (32, 64, ..., 256), wide integer data with some ties."""
    prob = Problem("BSND", (1, 5), 2100)
    q, k, w = ints((prob.t1, 2, 6), -9, 10), ints((prob.t2, 1, 6), -9, 10), ints((prob.t1, 2), -3, 4)
    idx, val, _ = indexer(prob, q, k, w, "fp32", sparse_count, 3)
    ridx, rval = ref.lightning_indexer(q, k, w, prob.segs, sparse_count, 3)
    np.testing.assert_array_equal(idx, ridx)
    np.testing.assert_array_equal(val, rval)
    assert (ridx > 512).mean() > 0.5  # most of the top-k entered after the first tile


def test_group_larger_than_tile_rows():
    """160 query heads per key head: one query row per item and head dims past CANN's 128."""
    check_selection(Problem("BSND", (1, 3), 70), 160, 1, 130, 64, 3)


def grads(prob, q, k, w, dy, dtype, mode, sparse_count, sparse_mode):
    """(dq, dk, dw) token-major float64 from ms.grad of Σ dy · sparse_values, and the indices."""
    kwargs = dict(sparse_count=sparse_count, sparse_mode=sparse_mode, layout_query=prob.layout,
                  layout_key=prob.layout)
    if prob.layout == "TND":
        kwargs.update(actual_seq_lengths_query=prob.cum_q, actual_seq_lengths_key=prob.cum_k)
    loss = SelectedSum(Indexer(ms_ops.lightning_indexer, **kwargs))
    args = [to_ms(prob.shaped(q), dtype), to_ms(prob.shaped(k, False), dtype), to_ms(prob.shaped(w), dtype)]
    dy_t = ms.Tensor(prob.shaped(dy).astype(np.float32))
    if mode == "pynative":
        out = ms.grad(lambda a, b, c: loss(a, b, c, dy_t), grad_position=(0, 1, 2))(*args)
    else:
        out = ms.grad(loss, grad_position=(0, 1, 2))(*args, dy_t)
    idx = loss.indexer(*args)[0].asnumpy()
    return [prob.tok(to_np(g)) for g in out], prob.tok(idx)


def check_grads(prob, n1, n2, d, sparse_count, dtype, mode):
    q, k = representable((prob.t1, n1, d), dtype), representable((prob.t2, n2, d), dtype)
    w = representable((prob.t1, n1), dtype)
    dy = rounding(dtype)(np.random.randn(prob.t1, n2, sparse_count))
    got, idx = grads(prob, q, k, w, dy, dtype, mode, sparse_count, 3)
    ref_g = ref.lightning_indexer_grad(q, k, w, dy, idx, prob.segs)
    naive = ref.lightning_indexer_grad(q, k, w, dy, idx, prob.segs, rnd=rounding(dtype))
    for name, g, r, nv in zip(("d_query", "d_key", "d_weights"), got, ref_g, naive):
        assert_close(name, g, r, nv, dtype)
    return got


@pytest.mark.parametrize("layout", ["BSND", "TND"])
def test_grad(mode, layout):
    check_grads(Problem(*PROBLEMS[layout]), 6, 2, 19, 16, "fp32", mode)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_grad_dtypes(dtype):
    check_grads(Problem("BSND", (1, 20), 33), 4, 1, 24, 8, dtype, "pynative")


def test_grad_deterministic():
    prob = Problem("BSND", (2, 30), 30)
    first = check_grads(prob, 4, 2, 16, 8, "fp32", "pynative")
    np.random.seed(1234)
    second = check_grads(prob, 4, 2, 16, 8, "fp32", "pynative")
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


@pytest.mark.full
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_grad_full(dtype):
    check_grads(Problem("TND", [1, 300, 0, 97], [7, 600, 2, 97]), 16, 1, 128, 200, dtype, "pynative")


def _args(layout="BSND", dtype=ms.float32, n1=4, n2=2, d=8):
    shape_q, shape_k, shape_w = ((2, 5, n1, d), (2, 6, n2, d), (2, 5, n1)) if layout == "BSND" else \
        ((5, n1, d), (6, n2, d), (5, n1))
    return [ms.Tensor(np.random.randn(*s).astype(np.float32)).astype(dtype) for s in (shape_q, shape_k, shape_w)]


@pytest.mark.parametrize("change,exc,words", [
    (dict(sparse_count=0), ValueError, "'sparse_count'"),
    (dict(sparse_count=4096), ValueError, "'sparse_count'"),
    (dict(sparse_mode=1), ValueError, "'sparse_mode'"),
    (dict(layout_key="TND"), ValueError, "'layout_key'"),
    (dict(layout_query="BNSD", layout_key="BNSD"), ValueError, "'layout_query'"),
    (dict(pre_tokens=5), ValueError, "'pre_tokens'"),
    (dict(block_table=ms.Tensor(np.zeros((2, 1), np.int32))), ValueError, "'block_table'"),
    (dict(actual_seq_lengths_query=[5, 7]), ValueError, "'actual_seq_lengths_query'"),
    (dict(actual_seq_lengths_key=[1]), ValueError, "'actual_seq_lengths_key'"),
])
def test_errors(change, exc, words):
    q, k, w = _args()
    with pytest.raises(exc, match=f"lightning_indexer: {words}"):
        ms_ops.lightning_indexer(q, k, w, **change)


def test_errors_tensors():
    q, k, w = _args()
    with pytest.raises(TypeError, match="lightning_indexer: 'key'"):
        ms_ops.lightning_indexer(q, k.astype(ms.float16), w)
    with pytest.raises(ValueError, match="lightning_indexer: 'key' heads"):
        ms_ops.lightning_indexer(*_args(n1=3, n2=2))
    with pytest.raises(ValueError, match="lightning_indexer: 'weights'"):
        ms_ops.lightning_indexer(q, k, w[:, :4])
    q, k, w = _args("TND")
    with pytest.raises(ValueError, match="lightning_indexer: 'actual_seq_lengths_query' is required"):
        ms_ops.lightning_indexer(q, k, w, layout_query="TND", layout_key="TND")
    with pytest.raises(ValueError, match="lightning_indexer: 'actual_seq_lengths_key' must end"):
        ms_ops.lightning_indexer(q, k, w, layout_query="TND", layout_key="TND", actual_seq_lengths_query=[5],
                                 actual_seq_lengths_key=[4])
    # Lengths in a Tensor are checked by the kernel; the process survives and the op still works.
    with pytest.raises(RuntimeError, match="lightning_indexer: 'actual_seq_lengths_key'"):
        ms_ops.lightning_indexer(q, k, w, layout_query="TND", layout_key="TND", actual_seq_lengths_query=[5],
                                 actual_seq_lengths_key=ms.Tensor(np.array([9], np.int64)))[0].asnumpy()
    idx, _ = ms_ops.lightning_indexer(q, k, w, layout_query="TND", layout_key="TND", actual_seq_lengths_query=[5],
                                      actual_seq_lengths_key=[6], sparse_count=4)
    assert idx.shape == (5, 2, 4)


def test_bsnd_lengths(mode):
    """BSND with per-batch lengths: rows past a batch's query length output -1, keys past its key
    length are never selected, and the causal corner moves with the lengths."""
    prob = Problem("BSND", (2, 9), 12)
    prob.segs = ref.segments("BSND", prob.t1, prob.t2, 9, 12, lengths_query=[9, 4], lengths_key=[7, 12])
    q, k, w = ints((prob.t1, 4, 6)), ints((prob.t2, 2, 6)), ints((prob.t1, 4))
    cell = Indexer(ms_ops.lightning_indexer, sparse_count=5, actual_seq_lengths_query=[9, 4],
                   actual_seq_lengths_key=[7, 12])
    idx, val = cell(to_ms(prob.shaped(q), "fp32"), to_ms(prob.shaped(k, False), "fp32"), to_ms(prob.shaped(w), "fp32"))
    ridx, rval = ref.lightning_indexer(q, k, w, prob.segs, 5, 3)
    np.testing.assert_array_equal(prob.tok(idx.asnumpy()), ridx)
    np.testing.assert_array_equal(prob.tok(to_np(val)), rval)
    assert (ridx[9 + 4:] == -1).all()


def paged(k, lengths, block_size, order):
    """BSND keys [B, S2, N2, D] as PA_BSND blocks (in the given block order) and their table."""
    batch, s2 = k.shape[:2]
    per = -(-s2 // block_size)
    blocks = np.zeros((batch * per, block_size) + k.shape[2:])
    table = np.zeros((batch, per), np.int32)
    for b in range(batch):
        for j in range(-(-lengths[b] // block_size)):
            slot = order[b * per + j]
            rows = k[b, j * block_size:(j + 1) * block_size]
            blocks[slot, :rows.shape[0]] = rows
            table[b, j] = slot
    return blocks, table


def test_paged_keys(mode):
    """PA_BSND: keys through a shuffled block table equal the same keys in BSND."""
    prob = Problem("BSND", (2, 6), 13)
    lengths = [13, 7]
    prob.segs = ref.segments("BSND", prob.t1, prob.t2, 6, 13, lengths_key=lengths)
    q, k, w = ints((prob.t1, 4, 6)), ints((prob.t2, 2, 6)), ints((prob.t1, 4))
    blocks, table = paged(prob.shaped(k, False), lengths, 4, np.random.permutation(8))
    cell = Indexer(ms_ops.lightning_indexer, sparse_count=9, layout_key="PA_BSND", actual_seq_lengths_key=lengths,
                   block_table=ms.Tensor(table))
    idx, val = cell(to_ms(prob.shaped(q), "fp32"), to_ms(blocks, "fp32"), to_ms(prob.shaped(w), "fp32"))
    ridx, rval = ref.lightning_indexer(q, k, w, prob.segs, 9, 3)
    np.testing.assert_array_equal(prob.tok(idx.asnumpy()), ridx)
    np.testing.assert_array_equal(prob.tok(to_np(val)), rval)


def test_paged_keys_packed_queries():
    """TND queries with PA_BSND keys (key lengths per sequence, as a list or a Tensor) select as the
    same keys packed in TND."""
    lens_k = [6, 8]
    q, w = ints((5, 4, 6)), ints((5, 4))
    k = ints((14, 1, 6))
    blocks = np.zeros((4, 4, 1, 6), np.float32)
    blocks[0, :4], blocks[1, :2] = k[:4], k[4:6]
    blocks[2, :4], blocks[3, :4] = k[6:10], k[10:14]
    table = ms.Tensor(np.array([[0, 1], [2, 3]], np.int32))
    args = (to_ms(q, "fp32"), to_ms(blocks, "fp32"), to_ms(w, "fp32"))
    want = ms_ops.lightning_indexer(args[0], to_ms(k, "fp32"), args[2], actual_seq_lengths_query=[2, 5],
                                    actual_seq_lengths_key=[6, 14], layout_query="TND", layout_key="TND",
                                    sparse_count=5)
    for lengths in (lens_k, ms.Tensor(np.array(lens_k, np.int64))):
        got = ms_ops.lightning_indexer(*args, actual_seq_lengths_query=[2, 5], actual_seq_lengths_key=lengths,
                                       layout_query="TND", layout_key="PA_BSND", block_table=table, sparse_count=5)
        for g, r in zip(got, want):
            np.testing.assert_array_equal(to_np(g), to_np(r))


def test_paged_errors():
    q, k, w = _args()
    blocks = ms.Tensor(np.random.randn(3, 4, 2, 8).astype(np.float32))
    table = ms.Tensor(np.array([[0, 1], [2, 0]], np.int32))
    with pytest.raises(ValueError, match="lightning_indexer: 'actual_seq_lengths_key' is required"):
        ms_ops.lightning_indexer(q, blocks, w, layout_key="PA_BSND", block_table=table)
    with pytest.raises(RuntimeError, match="lightning_indexer: 'block_table': is too short"):
        ms_ops.lightning_indexer(q, blocks, w, layout_key="PA_BSND", block_table=table,
                                 actual_seq_lengths_key=[9, 3])[0].asnumpy()
    bad = ms.Tensor(np.array([[0, 5], [2, 0]], np.int32))
    with pytest.raises(RuntimeError, match="lightning_indexer: 'block_table': entry \\[0, 1\\] is 5"):
        ms_ops.lightning_indexer(q, blocks, w, layout_key="PA_BSND", block_table=bad,
                                 actual_seq_lengths_key=[6, 3])[0].asnumpy()


@pytest.mark.full
def test_largest_k():
    """k = 2048 over 2600 keys: the UB plan at its largest, in every kernel of the indexer."""
    check_selection(Problem("BSND", (1, 24), 2600), 8, 1, 16, 2048, 0)
    check_grads(Problem("BSND", (1, 6), 2100), 8, 1, 16, 2048, "fp32", "pynative")


def test_dynamic_length_graph():
    """GRAPH mode with the sequence lengths left open (Cell.set_inputs): one compile, two lengths."""
    ms.set_context(mode=ms.GRAPH_MODE)
    cell = Indexer(ms_ops.lightning_indexer, sparse_count=6)
    cell.set_inputs(ms.Tensor(shape=[1, None, 4, 8], dtype=ms.float32), ms.Tensor(shape=[1, None, 2, 8], dtype=ms.float32),
                    ms.Tensor(shape=[1, None, 4], dtype=ms.float32))
    for s in (9, 20):
        prob = Problem("BSND", (1, s), s)
        q, k, w = ints((s, 4, 8)), ints((s, 2, 8)), ints((s, 4))
        idx, val = cell(to_ms(prob.shaped(q), "fp32"), to_ms(prob.shaped(k, False), "fp32"),
                        to_ms(prob.shaped(w), "fp32"))
        ridx, _ = ref.lightning_indexer(q, k, w, prob.segs, 6, 3)
        np.testing.assert_array_equal(prob.tok(idx.asnumpy()), ridx)
