"""Numerics helpers: dtype conversion, naive-precision rounding and the error-bound rule.

The rule (architecture.md): a kernel's max error against the float64 reference must be at most
twice the error of the same math done naively in the input precision, plus a small floor for
the dtype's rounding noise at the reference's magnitude.
"""
import mindspore as ms
import numpy as np
from mindspore import nn

from ms_ops.ops._attention_args import COMPRESSED_MASKS, compressed_mask

MS_DTYPES = {"fp32": ms.float32, "fp16": ms.float16, "bf16": ms.bfloat16}
FAR = 2147483647  # flash_attention_score's default pre_tokens / next_tokens: every key


def round_bf16(a):
    """Round float64 values to bfloat16 precision (round to nearest even), returned as float64."""
    f = np.asarray(a, np.float64).astype(np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    one, shift = np.uint64(1), np.uint64(16)  # typed: a 0-d array would promote plain ints to float
    rounded = (bits + np.uint64(0x7FFF) + ((bits >> shift) & one)) & np.uint64(0xFFFF0000)
    out = rounded.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(f), f, out).astype(np.float64)


def rounding(dtype):
    """The per-operation rounding of ``dtype`` ("fp32"/"fp16"/"bf16") on float64 arrays."""
    if dtype == "bf16":
        return round_bf16
    np_type = np.float16 if dtype == "fp16" else np.float32
    return lambda a: np.asarray(a).astype(np_type).astype(np.float64)


def to_ms(a, dtype):
    """float64 numpy -> MindSpore tensor of ``dtype`` (values rounded to it)."""
    return ms.Tensor(np.asarray(a, np.float32)).astype(MS_DTYPES[dtype])


def representable(shape, dtype, scale=1.0):
    """Random float64 data exactly representable in ``dtype``."""
    return rounding(dtype)(np.random.randn(*shape) * scale)


def to_np(t):
    """MindSpore tensor -> float64 (floats) or int numpy array."""
    if t.dtype in (ms.float16, ms.bfloat16, ms.float32, ms.float64):
        return t.astype(ms.float32).asnumpy().astype(np.float64)
    return t.asnumpy()


def assert_close(name, actual, ref, naive, dtype, show=5):
    """Assert the error rule; on failure print where and how much ``actual`` differs."""
    actual, ref, naive = (np.asarray(a, np.float64) for a in (actual, ref, naive))
    assert actual.shape == ref.shape, f"{name}: shape {actual.shape} != reference {ref.shape}"
    assert np.array_equal(np.isnan(actual), np.isnan(ref)), f"{name}: NaN positions differ"
    rnd = rounding(dtype)
    floor = 2 * np.max(np.abs(rnd(rnd(ref + 0.3) - 0.3) - ref), initial=0.0) + 1e-30
    err = np.abs(actual - ref)
    naive_err = np.max(np.abs(naive - ref), initial=0.0)
    bound = 2 * naive_err + floor
    worst = np.max(err, initial=0.0)
    if worst <= bound:
        return
    bad = np.argwhere(err > bound)
    lines = [f"{name} ({dtype}): max error {worst:.3e} > bound {bound:.3e} "
             f"(naive {naive_err:.3e}, floor {floor:.3e}); {len(bad)} of {err.size} elements off"]
    for idx in bad[:show]:
        i = tuple(idx)
        lines.append(f"  at {i}: got {actual[i]!r}, reference {ref[i]!r}, naive {naive[i]!r}")
    raise AssertionError("\n".join(lines))


class Fn(nn.Cell):
    """Runs ``fn`` (a function or a primitive) inside a Cell, so that GRAPH mode compiles it as a
    graph (PYNATIVE runs it op by op)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def construct(self, *args):
        return self.fn(*args)


class Call(nn.Cell):
    """``fn(q, k, v, **kwargs)`` in a Cell: an attention op with its keyword arguments fixed."""

    def __init__(self, fn, **kwargs):
        super().__init__()
        self.fn = fn
        self.kwargs = kwargs

    def construct(self, q, k, v):
        return self.fn(q, k, v, **self.kwargs)


class VjpLoss(nn.Cell):
    """<cell(q, k, v), w> in float32: its gradients are cell's vector-Jacobian products with w."""

    def __init__(self, cell):
        super().__init__()
        self.cell = cell

    def construct(self, q, k, v, w):
        return (self.cell(q, k, v).astype(ms.float32) * w).sum()


def mode_mask(sparse_mode=0, pre_tokens=FAR, next_tokens=FAR, s1=None, s2=None):
    """The attn_mask under which flash_attention_score applies sparse_mode and pre/next_tokens (as
    in CANN, without attn_mask it attends to every key): the mode's compressed mask for modes 2-4
    and 6-8 (the one ms_ops' own callers pass); for mode 0 with a band, the [S1, S2] mask of the keys outside it (CANN wants the two to
    agree); None otherwise."""
    if sparse_mode in COMPRESSED_MASKS:
        return compressed_mask(sparse_mode)
    if sparse_mode == 0 and (pre_tokens < FAR or next_tokens < FAR):
        i, j = np.arange(s1)[:, None], np.arange(s2)[None, :]
        return ms.Tensor((j < i - pre_tokens) | (j > i + next_tokens))
    return None


def with_mode_mask(kwargs, s1=None, s2=None):
    """flash_attention_score keyword arguments with ``attn_mask=mode_mask(...)`` added when they
    have no attn_mask (an explicit None stays)."""
    if "attn_mask" in kwargs:
        return kwargs
    mask = mode_mask(kwargs.get("sparse_mode", 0), kwargs.get("pre_tokens", FAR), kwargs.get("next_tokens", FAR),
                     s1, s2)
    return kwargs if mask is None else dict(kwargs, attn_mask=mask)
