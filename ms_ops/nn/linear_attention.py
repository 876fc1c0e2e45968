"""Multi-head linear attention layer built on the linear_attention kernel."""
from mindspore import nn

from ms_ops.ops._validation import check_int, check_rank
from ms_ops.ops.linear_attention import MAX_HEAD_DIM, linear_attention


class LinearAttention(nn.Cell):
    r"""Multi-head self-attention with the linear attention of :func:`ms_ops.linear_attention`.

    ``x [B, S, H]`` is projected to query, key and value of ``num_heads`` heads of
    ``H / num_heads`` each (BSND, so no transpose), attended, and projected back to ``[B, S, H]``.

    Args:
        hidden_size (int): H.
        num_heads (int): N; must divide H, with head dim 1..512.

    Keyword Args:
        causal (bool): each position attends only to itself and earlier ones. Default False.
        eps (float): the denominator's eps. Default 1e-6.
        has_bias (bool): biases in the four projections. Default True.
    """

    def __init__(self, hidden_size, num_heads, *, causal=False, eps=1e-6, has_bias=True):
        super().__init__()
        check_int("LinearAttention", "hidden_size", hidden_size, low=1)
        check_int("LinearAttention", "num_heads", num_heads, low=1)
        if hidden_size % num_heads != 0 or hidden_size // num_heads > MAX_HEAD_DIM:
            raise ValueError(f"LinearAttention: 'num_heads' ({num_heads}) must divide 'hidden_size' "
                             f"({hidden_size}) into heads of at most {MAX_HEAD_DIM}")
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.causal = causal
        self.eps = eps
        self.q_proj = nn.Dense(hidden_size, hidden_size, has_bias=has_bias)
        self.k_proj = nn.Dense(hidden_size, hidden_size, has_bias=has_bias)
        self.v_proj = nn.Dense(hidden_size, hidden_size, has_bias=has_bias)
        self.o_proj = nn.Dense(hidden_size, hidden_size, has_bias=has_bias)

    def construct(self, x):
        check_rank("LinearAttention", "x", x, 3)
        b, s, _ = x.shape
        heads = (b, s, self.num_heads, self.head_dim)
        q = self.q_proj(x).reshape(heads)
        k = self.k_proj(x).reshape(heads)
        v = self.v_proj(x).reshape(heads)
        out = linear_attention(q, k, v, causal=self.causal, eps=self.eps, input_layout="BSND")
        return self.o_proj(out.reshape(b, s, self.hidden_size))

    def extend_repr(self):
        return (f"hidden_size={self.hidden_size}, num_heads={self.num_heads}, causal={self.causal}, "
                f"eps={self.eps}")
