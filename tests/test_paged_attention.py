"""The paged KV cache kernels: reshape_and_cache and copy_blocks (in place, exact copies) and
paged_attention against the float64 reference (ms_ops.reference.decode), which is dense attention
over each sequence's tokens gathered through its block table. Random, shuffled, non-contiguous
block tables; GQA and MQA; block sizes 16 to 512; ALiBi; chunked prefill (q_seq_lens); three
dtypes; GRAPH and PYNATIVE; a jitted cache-then-attend step run twice on cache Parameters; fork
and copy-on-write through ms_ops.kv_cache.BlockManager; dynamic num_tokens; bad input (nothing in
the caches changes)."""
import re

import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

import ms_ops
from ms_ops.kv_cache import BlockManager
from ms_ops.reference import decode as ref
from tests.utils import Fn, assert_close, representable, rounding, to_ms, to_np


class Attend(nn.Cell):
    """paged_attention with its attributes fixed; q_seq_lens/alibi_slopes may be None."""

    def __init__(self, head_num, scale_value, kv_head_num):
        super().__init__()
        self.head_num, self.scale_value, self.kv_head_num = head_num, scale_value, kv_head_num

    def construct(self, query, key_cache, value_cache, block_tables, context_lens, q_seq_lens, alibi_slopes):
        return ms_ops.paged_attention(query, key_cache, value_cache, block_tables, context_lens, self.head_num,
                                      self.scale_value, self.kv_head_num, q_seq_lens=q_seq_lens,
                                      alibi_slopes=alibi_slopes)


def shuffled_tables(ctx, block_size, num_blocks, width=None):
    """Block tables of distinct, randomly chosen blocks (non-contiguous, out of order), -1 padded."""
    need = [-(-int(c) // block_size) for c in ctx]
    width = max(need + [1]) if width is None else width
    pool = np.random.permutation(num_blocks)
    assert sum(need) <= num_blocks
    tables = np.full((len(ctx), width), -1, np.int32)
    at = 0
    for b, n in enumerate(need):
        tables[b, :n] = pool[at:at + n]
        at += n
    return tables


def check_attention(mode, dtype, n, n_kv, d, block_size, ctx, q_lens=None, alibi=False, num_blocks=None):
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    num_blocks = num_blocks or sum(-(-c // block_size) for c in ctx) + 3
    tables = shuffled_tables(ctx, block_size, num_blocks)
    tokens = len(ctx) if q_lens is None else sum(q_lens)
    q = representable((tokens, n, d), dtype)
    kc, vc = (representable((num_blocks, block_size, n_kv, d), dtype) for _ in range(2))
    slopes = (2.0 ** -np.arange(1, n + 1)).astype(np.float32) if alibi else None
    scale = d ** -0.5
    args = (ms.Tensor(tables), ms.Tensor(np.array(ctx, np.int32)),
            None if q_lens is None else ms.Tensor(np.array(q_lens, np.int32)),
            None if slopes is None else ms.Tensor(slopes))
    k_ms, v_ms = to_ms(kc, dtype), to_ms(vc, dtype)
    out = Attend(n, scale, n_kv)(to_ms(q, dtype), k_ms, v_ms, *args)
    expect = ref.paged_attention(q, kc, vc, tables, ctx, n, scale, n_kv, q_lens, slopes)
    naive = ref.paged_attention(q, kc, vc, tables, ctx, n, scale, n_kv, q_lens, slopes, rnd=rounding(dtype))
    assert_close("attention_out", to_np(out), expect, naive, dtype)
    np.testing.assert_array_equal(to_np(k_ms), kc)  # attention reads the caches only
    return out


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_decode_matches_dense(mode, dtype):
    """One token per sequence, GQA 4:2, D = 40, shuffled tables, contexts 1 to 3 blocks."""
    check_attention(mode, dtype, n=4, n_kv=2, d=40, block_size=16, ctx=[1, 17, 40, 33])


@pytest.mark.parametrize("block_size,ctx,n,n_kv,d", [(32, [100, 3], 8, 1, 64), (128, [300, 129], 2, 2, 59),
                                                     (512, [600], 4, 2, 16)])
def test_block_sizes(block_size, ctx, n, n_kv, d):
    """Blocks larger than the kernel's 64-row chunk; MQA; an awkward head dim."""
    check_attention("pynative", "fp32", n=n, n_kv=n_kv, d=d, block_size=block_size, ctx=ctx)


@pytest.mark.full
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("d", [1, 111, 128, 512])
def test_head_dims_full(dtype, d):
    check_attention("pynative", dtype, n=6, n_kv=3, d=d, block_size=16, ctx=[70, 5, 16])


def test_chunked_prefill(mode):
    """q_seq_lens: several query tokens per sequence, causal within them, one sequence with none;
    ALiBi on; rows over the kernel's 64-row query tile (12 tokens x 8 heads)."""
    check_attention(mode, "fp32", n=8, n_kv=2, d=24, block_size=16, ctx=[20, 5, 40, 12], q_lens=[3, 0, 12, 1],
                    alibi=True)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_alibi(dtype):
    check_attention("pynative", dtype, n=4, n_kv=4, d=32, block_size=16, ctx=[50, 9], alibi=True)


def test_empty_context_gives_zero():
    """A padding sequence (context 0) outputs 0; its neighbours are unaffected."""
    out = check_attention("pynative", "fp32", n=2, n_kv=1, d=8, block_size=16, ctx=[5, 0, 7])
    assert not np.any(to_np(out)[1])


# --- the cache writers ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_reshape_and_cache(mode, dtype):
    """Tokens land at their flat slots (block * block_size + offset), -1 skips; both key forms;
    the caches are updated in place and returned."""
    kc, vc = (representable((5, 16, 3, 20), dtype) for _ in range(2))
    key, value = (representable((6, 3, 20), dtype) for _ in range(2))
    slots = np.array([17, -1, 79, 0, 40, -1], np.int32)
    k_p, v_p = ms.Parameter(to_ms(kc, dtype), name="k"), ms.Parameter(to_ms(vc, dtype), name="v")
    rows = (6, 3, 20) if dtype == "fp32" else (6, 60)
    write = Fn(ms_ops.reshape_and_cache)
    got_k, got_v = write(to_ms(key, dtype).reshape(rows), to_ms(value, dtype).reshape(rows), k_p, v_p,
                         ms.Tensor(slots))
    want_k, want_v = ref.reshape_and_cache(key, value, kc, vc, slots)
    for t in (got_k, k_p):
        np.testing.assert_array_equal(to_np(t), want_k)
    for t in (got_v, v_p):
        np.testing.assert_array_equal(to_np(t), want_v)


def test_copy_blocks(mode):
    kc, vc = (representable((6, 16, 2, 8), "fp16") for _ in range(2))
    mapping = np.array([[1, 4], [1, 0], [3, 5]], np.int32)
    k_p, v_p = ms.Parameter(to_ms(kc, "fp16"), name="k"), ms.Parameter(to_ms(vc, "fp16"), name="v")
    Fn(ms_ops.copy_blocks)(k_p, v_p, ms.Tensor(mapping))
    want_k, want_v = ref.copy_blocks(kc, vc, mapping)
    np.testing.assert_array_equal(to_np(k_p), want_k)
    np.testing.assert_array_equal(to_np(v_p), want_v)


class DecodeStep(nn.Cell):
    """One decode step on cache Parameters: write the new tokens' K/V, copy-on-write copies first,
    then attend. The writes' results are ignored on purpose: the kernels' side effect on the
    Parameters must order the attention after them."""

    def __init__(self, num_blocks, block_size, n, n_kv, d, dtype):
        super().__init__()
        shape = (num_blocks, block_size, n_kv, d)
        self.key_cache = ms.Parameter(ms.Tensor(np.zeros(shape, np.float32)).astype(dtype), name="key_cache")
        self.value_cache = ms.Parameter(ms.Tensor(np.zeros(shape, np.float32)).astype(dtype), name="value_cache")
        self.n, self.n_kv, self.scale = n, n_kv, d ** -0.5

    def construct(self, query, key, value, slots, copies, tables, ctx):
        ms_ops.copy_blocks(self.key_cache, self.value_cache, copies)
        ms_ops.reshape_and_cache(key, value, self.key_cache, self.value_cache, slots)
        return ms_ops.paged_attention(query, self.key_cache, self.value_cache, tables, ctx, self.n, self.scale,
                                      self.n_kv)


def test_step_sees_update_and_fork_cow(mode):
    """A jitted step (GRAPH) or eager step (PYNATIVE) that caches then attends reads the tokens it
    just wrote, three steps in a row. A shared 20-token prompt is written once and forked into two
    branches; their first tokens copy the shared, partly filled block (copy_blocks) and from then
    on each branch reads its own tokens while the full prompt block stays shared and unchanged."""
    bs, n, n_kv, d, prompt = 16, 4, 2, 16, 20
    bm = BlockManager(num_blocks=8, block_size=bs)
    step = DecodeStep(bm.num_blocks, bs, n, n_kv, d, ms.float32)
    tokens = {"sys": representable((prompt, 2, n_kv, d), "fp32")}  # [t, key/value, N_kv, D]
    bm.allocate("sys", prompt)
    none = ms.Tensor(np.zeros((0, 2), np.int32))
    step(ms.Tensor(np.zeros((1, n, d), np.float32)), ms.Tensor(tokens["sys"][:, 0].astype(np.float32)),
         ms.Tensor(tokens["sys"][:, 1].astype(np.float32)), bm.slot_mapping(["sys"], prompt), none,
         bm.block_tables(["sys"])[:1], bm.context_lens(["sys"]))
    shared = bm.block_table("sys")
    for seq in ("a", "b"):
        bm.fork("sys", seq)
        tokens[seq] = tokens["sys"].copy()
    seqs = ["a", "b"]
    for i in range(3):
        copies = sum((bm.append(s) for s in seqs), [])
        assert len(copies) == (2 if i == 0 else 0)
        new = representable((2, 2, n_kv, d), "fp32")
        for s, t in zip(seqs, new):
            tokens[s] = np.concatenate([tokens[s], t[None]])
        query = representable((2, n, d), "fp32")
        mapping = np.array(copies, np.int32).reshape(-1, 2)
        tables, ctx = bm.block_tables(seqs), bm.context_lens(seqs)
        out = step(ms.Tensor(query.astype(np.float32)), ms.Tensor(new[:, 0].astype(np.float32)),
                   ms.Tensor(new[:, 1].astype(np.float32)), bm.slot_mapping(seqs), ms.Tensor(mapping), tables, ctx)
        for r, s in enumerate(seqs):
            k_all, v_all = tokens[s][:, 0], tokens[s][:, 1]
            p = len(k_all) - 1
            group = n // n_kv
            want = np.stack([_dense(query[r, h], k_all[:, h // group], v_all[:, h // group], d ** -0.5)
                             for h in range(n)])
            np.testing.assert_allclose(to_np(out)[r], want, rtol=2e-5, atol=2e-6)
            assert p == bm.num_tokens(s) - 1
    # The full prompt block is shared, stored once, and still holds the prompt.
    assert bm.block_table("a")[0] == bm.block_table("b")[0] == shared[0] and bm.ref_count(shared[0]) == 3
    assert bm.block_table("a")[1] != bm.block_table("b")[1] != shared[1]
    np.testing.assert_array_equal(to_np(step.key_cache)[shared[0]], tokens["sys"][:bs, 0])
    np.testing.assert_array_equal(to_np(step.key_cache)[shared[1], :prompt - bs], tokens["sys"][bs:, 0])
    for s in ("a", "b", "sys"):
        bm.free(s)
    assert bm.num_free_blocks == bm.num_blocks


def _dense(q, k, v, scale):
    s = scale * k @ q
    w = np.exp(s - s.max())
    return w @ v / w.sum()


def test_dynamic_num_tokens_graph():
    """GRAPH mode with num_tokens (and the table rows) left dynamic: one compiled graph serves two
    batch sizes."""
    ms.set_context(mode=ms.GRAPH_MODE)
    n, n_kv, d, bs = 4, 1, 16, 16
    net = Attend(n, d ** -0.5, n_kv)
    net.set_inputs(ms.Tensor(shape=[None, n, d], dtype=ms.float32),
                   ms.Tensor(shape=[8, bs, n_kv, d], dtype=ms.float32),
                   ms.Tensor(shape=[8, bs, n_kv, d], dtype=ms.float32),
                   ms.Tensor(shape=[None, None], dtype=ms.int32), ms.Tensor(shape=[None], dtype=ms.int32),
                   None, None)
    kc, vc = (representable((8, bs, n_kv, d), "fp32") for _ in range(2))
    for ctx in ([3, 30], [40, 1, 17]):
        tables = shuffled_tables(ctx, bs, 8)
        q = representable((len(ctx), n, d), "fp32")
        out = net(to_ms(q, "fp32"), to_ms(kc, "fp32"), to_ms(vc, "fp32"), ms.Tensor(tables),
                  ms.Tensor(np.array(ctx, np.int32)), None, None)
        want = ref.paged_attention(q, kc, vc, tables, ctx, n, d ** -0.5, n_kv)
        np.testing.assert_allclose(to_np(out), want, rtol=1e-5, atol=1e-6)


def test_deterministic():
    a = check_attention("pynative", "fp32", n=4, n_kv=2, d=40, block_size=16, ctx=[70, 5])
    np.random.seed(1234)
    b = check_attention("pynative", "fp32", n=4, n_kv=2, d=40, block_size=16, ctx=[70, 5])
    assert a.asnumpy().tobytes() == b.asnumpy().tobytes()


# --- bad input ------------------------------------------------------------------------------------

def _attention_inputs():
    kc, vc = (ms.Tensor(np.random.randn(4, 16, 2, 8).astype(np.float32)) for _ in range(2))
    return dict(query=ms.Tensor(np.random.randn(2, 4, 8).astype(np.float32)), key_cache=kc, value_cache=vc,
                block_tables=ms.Tensor(np.array([[0, 1], [2, -1]], np.int32)),
                context_lens=ms.Tensor(np.array([20, 5], np.int32)), head_num=4, scale_value=0.3, kv_head_num=2)


def _i32(a):
    return ms.Tensor(np.array(a, np.int32))


STATIC = {
    "kv_heads_divide": (dict(kv_head_num=3), ValueError, "'kv_head_num' (3) must divide 'head_num' (4)"),
    "cache_rank": (dict(key_cache=ms.Tensor(np.zeros((4, 16, 16), np.float32))), ValueError, "'key_cache' must be 4-D"),
    "cache_shapes": (dict(value_cache=ms.Tensor(np.zeros((4, 16, 2, 4), np.float32))), ValueError,
                     "'value_cache' must have key_cache's shape"),
    "cache_heads": (dict(head_num=2, kv_head_num=1, query=ms.Tensor(np.zeros((2, 2, 8), np.float32))), ValueError,
                    "'key_cache' dimension 2 must equal kv_head_num"),
    "query_dtype": (dict(query=ms.Tensor(np.zeros((2, 4, 8), np.float16))), TypeError,
                    "'key_cache' must have the dtype of 'query'"),
    "query_heads": (dict(query=ms.Tensor(np.zeros((2, 3, 8), np.float32))), ValueError, "'query' must be"),
    "tables_dtype": (dict(block_tables=ms.Tensor(np.zeros((2, 2), np.int64))), TypeError,
                     "'block_tables' must have dtype"),
    "ctx_rows": (dict(context_lens=_i32([1, 2, 3])), ValueError, "'context_lens' must have one entry per row"),
    "alibi_len": (dict(alibi_slopes=ms.Tensor(np.ones(3, np.float32))), ValueError,
                  "'alibi_slopes' must have head_num"),
}


@pytest.mark.parametrize("case", list(STATIC))
def test_static_errors(mode, case):
    """Shapes, dtypes and attributes: TypeError/ValueError naming paged_attention and the argument."""
    override, exc, text = STATIC[case]
    kw = _attention_inputs()
    kw.update(override)
    args = [kw.pop(k) for k in ("query", "key_cache", "value_cache", "block_tables", "context_lens", "head_num",
                                "scale_value", "kv_head_num")]
    with pytest.raises(exc, match="paged_attention: " + re.escape(text)):
        ms_ops.paged_attention(*args, **kw)


RUNTIME = {
    "table_past_pool": (dict(block_tables=_i32([[0, 1], [7, -1]])), "'block_tables': entry [1, 0] is block 7"),
    "table_negative": (dict(block_tables=_i32([[0, -1], [2, -1]])), "'block_tables': entry [0, 1] is block -1"),
    "ctx_over_table": (dict(context_lens=_i32([33, 5])), "'context_lens': sequence 0 has context length 33"),
    "q_lens_sum": (dict(q_seq_lens=_i32([1, 2])), "'q_seq_lens': adds up to 3 query tokens, query has 2"),
    "q_lens_over_ctx": (dict(q_seq_lens=_i32([0, 2]), context_lens=_i32([20, 1])),
                        "'q_seq_lens': sequence 1 has 2 query tokens but context length 1"),
}


@pytest.mark.parametrize("case", list(RUNTIME))
def test_runtime_errors(case):
    """Values only the kernel sees: RuntimeError naming op and argument before the kernel runs; the
    process goes on and the next call is right."""
    override, text = RUNTIME[case]
    kw = _attention_inputs()
    kw.update(override)
    args = [kw.pop(k) for k in ("query", "key_cache", "value_cache", "block_tables", "context_lens", "head_num",
                                "scale_value", "kv_head_num")]
    with pytest.raises(RuntimeError, match=re.escape("ms_ops.paged_attention: " + text)):
        ms_ops.paged_attention(*args, **kw).asnumpy()
    check_attention("pynative", "fp32", n=2, n_kv=1, d=8, block_size=16, ctx=[5, 18])


def _caches():
    kc, vc = (np.random.randn(3, 16, 2, 8).astype(np.float32) for _ in range(2))
    return kc, vc, ms.Parameter(ms.Tensor(kc), name="k"), ms.Parameter(ms.Tensor(vc), name="v")


WRITES = {
    "slot_past_caches": (lambda k, v: ms_ops.reshape_and_cache(*_new(2), k, v, _i32([3, 48])),
                         RuntimeError, "ms_ops.reshape_and_cache: 'slot_mapping': entry 1 is slot 48, beyond"),
    "slot_twice": (lambda k, v: ms_ops.reshape_and_cache(*_new(3), k, v, _i32([5, -1, 5])),
                   RuntimeError, "ms_ops.reshape_and_cache: 'slot_mapping': entries 0 and 2 both write slot 5"),
    "slots_count": (lambda k, v: ms_ops.reshape_and_cache(*_new(3), k, v, _i32([5, 6])),
                    ValueError, "reshape_and_cache: 'slot_mapping' must have one entry per token (3)"),
    "key_heads": (lambda k, v: ms_ops.reshape_and_cache(*_new(2, heads=1), k, v, _i32([5, 6])),
                  ValueError, "reshape_and_cache: 'key' dimension 1 must equal key_cache's N_kv (2)"),
    "key_dtype": (lambda k, v: ms_ops.reshape_and_cache(*(t.astype(ms.float16) for t in _new(2)), k, v, _i32([5, 6])),
                  TypeError, "reshape_and_cache: 'key' must have the dtype of 'key_cache'"),
    "copy_outside": (lambda k, v: ms_ops.copy_blocks(k, v, _i32([[0, 1], [2, 3]])),
                     RuntimeError, "ms_ops.copy_blocks: 'block_mapping': row 1 dst 3 is outside the pool of 3 blocks"),
    "copy_twice": (lambda k, v: ms_ops.copy_blocks(k, v, _i32([[0, 2], [1, 2]])),
                   RuntimeError, "ms_ops.copy_blocks: 'block_mapping': rows 0 and 1 both copy into block 2"),
    "copy_chain": (lambda k, v: ms_ops.copy_blocks(k, v, _i32([[0, 1], [1, 2]])),
                   RuntimeError, "ms_ops.copy_blocks: 'block_mapping': row 1 reads block 1, which row 0 overwrites"),
    "copy_shape": (lambda k, v: ms_ops.copy_blocks(k, v, _i32([0, 1])),
                   ValueError, "copy_blocks: 'block_mapping' must be 2-D"),
}


def _new(t, heads=2):
    return (ms.Tensor(np.ones((t, heads, 8), np.float32)) for _ in range(2))


@pytest.mark.parametrize("case", list(WRITES))
def test_write_errors_leave_caches_unchanged(case):
    call, exc, text = WRITES[case]
    kc, vc, k_p, v_p = _caches()
    with pytest.raises(exc, match=re.escape(text)):
        call(k_p, v_p)[0].asnumpy()
    np.testing.assert_array_equal(k_p.asnumpy(), kc)
    np.testing.assert_array_equal(v_p.asnumpy(), vc)
    ms_ops.reshape_and_cache(*_new(1), k_p, v_p, _i32([17]))
    np.testing.assert_array_equal(k_p.asnumpy()[1, 1], np.ones((2, 8)))


def test_ms_jit_function():
    """Inside an @ms.jit function, with ALiBi and chunked prefill, for two numbers of tokens."""
    n, n_kv, d, bs = 2, 1, 8, 16

    @ms.jit
    def attend(q, kc, vc, tables, ctx, q_lens, slopes):
        return ms_ops.paged_attention(q, kc, vc, tables, ctx, n, 0.5, n_kv, q_seq_lens=q_lens, alibi_slopes=slopes)

    kc, vc = (representable((6, bs, n_kv, d), "fp32") for _ in range(2))
    slopes = np.array([0.5, 0.25], np.float32)
    for ctx, q_lens in (([20, 9], [2, 1]), ([4, 30], [4, 5])):
        tables = shuffled_tables(ctx, bs, 6)
        q = representable((sum(q_lens), n, d), "fp32")
        out = attend(to_ms(q, "fp32"), to_ms(kc, "fp32"), to_ms(vc, "fp32"), ms.Tensor(tables),
                     ms.Tensor(np.array(ctx, np.int32)), ms.Tensor(np.array(q_lens, np.int32)), ms.Tensor(slopes))
        want = ref.paged_attention(q, kc, vc, tables, ctx, n, 0.5, n_kv, q_lens, slopes)
        np.testing.assert_allclose(to_np(out), want, rtol=1e-5, atol=1e-6)
