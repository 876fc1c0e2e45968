"""Linear attention: ``linear_attention`` (the ELU + 1 feature map of Katharopoulos et al., 2020),
differentiable with respect to query, key and value, causal or not, in O(S·D·Dv) per head.
"""
from ms_ops._custom import custom_op
from ms_ops.bprop.linear_attention import make_linear_attention_bprop
from ms_ops.kernels.linear_attention import LINEAR_ATTENTION
from ms_ops.ops._validation import FLOAT_DTYPES, check_dtype, check_same_dtype, check_tensor, known

_OP = "linear_attention"
_LAYOUTS = ("BNSD", "BSND")
MAX_HEAD_DIM = 512


def _check(query, key, value, causal, eps, input_layout):
    if not isinstance(causal, bool):
        raise TypeError(f"{_OP}: 'causal' must be a bool, got {type(causal).__name__}")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise TypeError(f"{_OP}: 'eps' must be a float, got {type(eps).__name__}")
    if not eps > 0:
        raise ValueError(f"{_OP}: 'eps' must be > 0, got {eps}")
    if input_layout not in _LAYOUTS:
        raise ValueError(f"{_OP}: 'input_layout' must be one of {_LAYOUTS}, got {input_layout!r}")
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_tensor(_OP, name, t)
        if t.ndim != 4:
            raise ValueError(f"{_OP}: '{name}' must be 4-D ({input_layout}), got shape {t.shape}")
    check_dtype(_OP, "query", query, FLOAT_DTYPES)
    check_same_dtype(_OP, "key", key, "query", query)
    check_same_dtype(_OP, "value", value, "query", query)
    for axis in range(4):
        if known(query.shape[axis]) and known(key.shape[axis]) and query.shape[axis] != key.shape[axis]:
            raise ValueError(f"{_OP}: 'key' must have query's shape {query.shape}, got {key.shape}")
        if axis < 3 and known(query.shape[axis]) and known(value.shape[axis]) \
                and query.shape[axis] != value.shape[axis]:
            raise ValueError(f"{_OP}: 'value' must match query's batch, heads and sequence "
                             f"({query.shape}), got {value.shape}")
    for name, t in (("query", query), ("value", value)):
        d = t.shape[3]
        if known(d) and not 1 <= d <= MAX_HEAD_DIM:
            raise ValueError(f"{_OP}: '{name}' head dim must be 1..{MAX_HEAD_DIM}, got {d}")


def linear_attention(query, key, value, *, causal=False, eps=1e-6, input_layout="BNSD"):
    r"""Linear attention with the feature map :math:`\phi(x) = \mathrm{ELU}(x) + 1`:

    .. math::
        \text{out}_i = \frac{\phi(Q_i) \sum_s \phi(K_s)^\top V_s}
                            {\phi(Q_i) \cdot \sum_s \phi(K_s) + \text{eps}}

    per batch and head, the sums over all positions ``s`` or, with ``causal``, over ``s <= i``.
    The kernel never forms the ``S x S`` scores: it carries the ``[D, Dv]`` state and the key sum
    chunk by chunk (O(S·D·Dv) time).

    Args:
        query, key: ``[B, N, S, D]`` (BNSD) or ``[B, S, N, D]`` (BSND); float32, float16 or
            bfloat16, the same shape and dtype; D in 1..512.
        value: the same layout with head dim Dv (1..512), query's batch, heads, length and dtype.

    Keyword Args:
        causal (bool): position i attends to positions ``s <= i`` only. Default False.
        eps (float): added to the denominator, > 0. Default 1e-6.
        input_layout (str): "BNSD" (default) or "BSND".

    Returns:
        Tensor: value's shape and dtype. Arithmetic is float32 throughout.

    Gradient: dq, dk, dv by the kernel linear_attention_grad (deterministic).
    """
    _check(query, key, value, causal, eps, input_layout)
    prim = custom_op(LINEAR_ATTENTION, make_linear_attention_bprop, causal=causal, eps=float(eps),
                     input_layout=input_layout)
    return prim(query, key, value)[0]
