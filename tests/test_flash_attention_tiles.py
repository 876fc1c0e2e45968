"""flash_attention_score and its gradient at the edges of the kernels' tiles (128 query rows
forward, 256 with four such items per core, 256 backward; 512 keys forward; 256 backward when the
key tiles make two items per core, else 128; a query tile's keys cut where its last row stops
seeing them) against the float64 reference: lengths just below, at and above 128/256/512, causal
and band masks whose ends fall inside a 512-key tile, GQA, packed TND sequences crossing tiles,
fp16/bf16. PyNative only, small head dims: the tile logic is mode- and width-independent, and
this file stays fast."""
import pytest

from tests.test_attention import check
from tests.test_attention_varlen import check as check_packed


@pytest.mark.parametrize("s1,s2", [(127, 513), (128, 512), (129, 511), (255, 257), (256, 256), (257, 255),
                                   (511, 129), (512, 128), (513, 127)])
@pytest.mark.parametrize("sparse", [0, 3])
def test_lengths_around_tiles(s1, s2, sparse):
    check(1, 1, 1, s1, s2, 16, "BNSD", "fp32", "pynative", sparse=sparse)


@pytest.mark.parametrize("s1,s2", [(255, 257), (129, 511), (257, 513)])
@pytest.mark.parametrize("sparse", [0, 3])
def test_backward_key_tiles_of_256(s1, s2, sparse):
    """24 key heads give the key pass at least 48 items of 256 keys: the backward takes 256-key tiles
    (the cases above, with one or two key heads, take 128)."""
    check(1, 24, 24, s1, s2, 16, "BNSD", "fp32", "pynative", sparse=sparse)


@pytest.mark.parametrize("s1,s2", [(513, 511), (257, 700)])
@pytest.mark.parametrize("sparse", [0, 3])
def test_forward_query_tiles_of_256(s1, s2, sparse):
    """48 query heads give the forward at least 96 items of 256 query rows: it takes 256-row tiles,
    the last one partial."""
    check(1, 48, 48, s1, s2, 16, "BNSD", "fp32", "pynative", sparse=sparse)


def test_forward_query_tiles_of_256_bf16():
    # bf16 P is written over the fp32 scores at half their byte offsets.
    check(1, 48, 24, 513, 520, 32, "BSND", "bf16", "pynative", sparse=3)


@pytest.mark.parametrize("sparse,s2,pre,nxt", [
    (0, 700, 200, 37),    # band: each query tile's keys begin past 0 and end inside a 512-key tile
    (0, 700, 300, -100),  # a band strictly below the diagonal: the first rows see no key
    (0, 900, 130, 70),    # a band over more keys than queries
    (2, 700, 0, 0),       # causal: the key end moves 128 keys per query tile
])
def test_bands_end_inside_tiles(sparse, s2, pre, nxt):
    check(1, 2, 1, 700, s2, 24, "BSND", "fp32", "pynative", pre=pre, nxt=nxt, sparse=sparse)


def test_gqa_causal_across_tiles():
    check(1, 4, 2, 600, 600, 32, "BSH", "fp32", "pynative", sparse=2)


@pytest.mark.parametrize("sparse,pre,nxt", [(3, 0, 0), (0, 150, 20), (4, 130, 70)])
def test_packed_lengths_crossing_tiles(sparse, pre, nxt):
    check_packed([130, 600, 257, 0, 513], [513, 600, 100, 40, 129], 2, 1, 16, "fp32", "pynative", sparse=sparse,
                 pre=pre, nxt=nxt)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_half_dtypes_across_tiles(dtype):
    check(1, 2, 1, 520, 530, 64, "BSND", dtype, "pynative", sparse=3)
