"""Tests of the twin's Sort32 and MrgSort (tests/twin/twin_sort_cases.cpp) against numpy models of
the documented semantics, in float and half: descending scores, equal scores in element order
(Sort32) and queue order (MrgSort), the 8-byte (score, index) layout, repeats, 2 to 4 queues of any
length, the stop at an exhausted queue, and the twin's rule for what the device leaves open: -0
equals +0 and NaN ranks below every number."""
import ctypes

import numpy as np
import pytest
from twin_cases import P, build_cases

V, I, U, U16 = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint16
SIGNATURES = {
    "twin_sort32": [I, V, V, V, U],
    "twin_mrgsort": [I, V, V, U, V, U16, U16, I, V],
}
DTYPES = [np.float32, np.float16]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_cases(tmp_path_factory.mktemp("twin_sort_cases"), "twin_sort_cases", SIGNATURES)


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    monkeypatch.setenv("MS_OPS_TWIN_STRICT", "1")


def order_key(scores):
    """A float64 key whose descending order is the sort's: NaN below every number, -0 == +0."""
    s = scores.astype(np.float64) + 0.0
    return np.where(np.isnan(s), -np.inf, s), np.isnan(s)


def greater(a, b):
    """Whether score a comes strictly before score b."""
    ka, na = order_key(np.array([a]))
    kb, nb = order_key(np.array([b]))
    return bool((not na[0]) and (nb[0] or ka[0] > kb[0]))


def proposals(scores, index):
    """The 8-byte proposals: score in the low bytes (half: then 2 zero bytes), index in the high 4."""
    raw = np.zeros((scores.size, 8), np.uint8)
    raw[:, :scores.itemsize] = scores.view(np.uint8).reshape(-1, scores.itemsize)
    raw[:, 4:] = index.astype(np.uint32).view(np.uint8).reshape(-1, 4)
    return raw


def split(raw, dtype):
    """Scores and indices of proposals; the reserved bytes of half proposals must be zero."""
    scores = raw[:, :np.dtype(dtype).itemsize].copy().view(dtype).reshape(-1)
    if dtype == np.float16:
        assert (raw[:, 2:4] == 0).all()
    return scores, raw[:, 4:].copy().view(np.uint32).reshape(-1)


def sort32(lib, scores):
    n = scores.size
    index = (np.arange(n) * 7 + 1000).astype(np.uint32)
    out = np.zeros((n, 8), np.uint8)
    assert lib.twin_sort32(int(scores.dtype == np.float16), P(scores), P(index), P(out), n) == 0
    return index, out


def sort32_model(scores, index):
    rows = []
    for r in range(scores.size // 32):
        s, i = scores[r * 32:(r + 1) * 32], index[r * 32:(r + 1) * 32]
        key, nan = order_key(s)
        order = np.lexsort((np.arange(32), -key, nan))  # NaN last, then descending, then element order
        rows.append(proposals(s[order], i[order]))
    return np.concatenate(rows)


def merge_model(raw, dtype, lengths, queues, repeat, suspend):
    """The greedy merge: each step takes the largest head, the earliest queue on a tie."""
    total = sum(lengths[:queues])
    scores, _ = split(raw, dtype)
    out, counts = [], [0, 0, 0, 0]
    for r in range(repeat):
        starts = r * total + np.concatenate([[0], np.cumsum(lengths[:queues])[:-1]])
        at = [0] * queues
        while True:
            if suspend and any(at[q] == lengths[q] for q in range(queues)):
                break
            best = -1
            for q in range(queues):
                if at[q] < lengths[q] and (best < 0 or greater(scores[starts[q] + at[q]], scores[starts[best] + at[best]])):
                    best = q
            if best < 0:
                break
            out.append(raw[starts[best] + at[best]])
            at[best] += 1
        counts = at + [0] * (4 - queues)
    return np.array(out).reshape(-1, 8), counts


def mrgsort(lib, raw, dtype, lengths, valid_bit, repeat, suspend):
    n = raw.shape[0]
    out = np.zeros((n, 8), np.uint8)
    counts = np.zeros(4, np.uint16)
    lens = np.array(lengths, np.uint16)
    status = lib.twin_mrgsort(int(dtype == np.float16), P(raw), P(out), n, P(lens), valid_bit, repeat,
                              int(suspend), P(counts))
    assert status == 0
    return out, list(counts)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort32_ranks_ties_zeros_and_nan(lib, dtype):
    rng = np.random.default_rng(3)
    scores = rng.integers(-6, 6, 32 * 6).astype(dtype)  # many ties
    scores[40:44] = [0.0, -0.0, 0.0, -0.0]
    scores[70:73] = [np.nan, np.inf, -np.inf]
    scores[100] = np.nan
    scores[101] = -np.nan
    scores[128:160] = rng.standard_normal(32).astype(dtype)  # distinct
    index, out = sort32(lib, scores)
    np.testing.assert_array_equal(out, sort32_model(scores, index))
    got, _ = split(out, dtype)
    assert np.isnan(got[96 + 30:96 + 32]).all()  # the repeat's two NaN come last


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lengths,valid_bit", [((5, 0, 0, 0), 3), ((7, 13, 0, 0), 3), ((9, 0, 21, 0), 7),
                                               ((32, 1, 17, 14), 15)])
def test_mrgsort_merges_queues_of_any_length(lib, dtype, lengths, valid_bit):
    rng = np.random.default_rng(sum(lengths))
    queues = {3: 2, 7: 3, 15: 4}[valid_bit]
    lengths = list(lengths)
    pad = (-sum(lengths[:queues])) % 4
    lengths[queues - 1] += pad  # whole 32-byte blocks in and out
    parts = []
    for q in range(queues):
        s = np.sort(rng.integers(-4, 4, lengths[q]).astype(dtype))[::-1]  # sorted queues, ties across them
        if lengths[q] > 3:
            s[-1] = np.nan
        parts.append(proposals(np.ascontiguousarray(s), np.arange(lengths[q]) + 100 * q))
    raw = np.concatenate(parts)
    out, counts = mrgsort(lib, raw, dtype, lengths, valid_bit, 1, False)
    ref, ref_counts = merge_model(raw, dtype, lengths, queues, 1, False)
    np.testing.assert_array_equal(out, ref)
    assert counts == ref_counts


@pytest.mark.parametrize("dtype", DTYPES)
def test_mrgsort_repeats_and_unsorted_queues(lib, dtype):
    rng = np.random.default_rng(5)
    lengths, repeat = [8, 4, 12, 8], 3
    n = sum(lengths) * repeat
    scores = rng.integers(-3, 3, n).astype(dtype)  # unsorted: the greedy rule decides the output
    raw = proposals(scores, np.arange(n))
    out, _ = mrgsort(lib, raw, dtype, lengths, 15, repeat, False)
    ref, _ = merge_model(raw, dtype, lengths, 4, repeat, False)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mrgsort_stops_at_an_exhausted_queue(lib, dtype):
    lengths = [6, 10, 8, 0]
    scores = np.concatenate([np.arange(6, 0, -1), np.arange(9, -1, -1), np.full(8, 3)]).astype(dtype)
    raw = proposals(scores, np.arange(24))
    out, counts = mrgsort(lib, raw, dtype, lengths, 7, 1, True)
    ref, ref_counts = merge_model(raw, dtype, lengths, 3, 1, True)
    assert counts == ref_counts and sum(counts) < 24
    np.testing.assert_array_equal(out[:sum(counts)], ref)
