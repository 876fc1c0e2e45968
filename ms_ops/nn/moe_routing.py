"""Mixture-of-experts layer built on the ms_ops routing kernels."""
import math

import mindspore as ms
from mindspore import Parameter, ops
from mindspore.common.initializer import Normal, initializer

from ms_ops._graph import RecoveringCell
from ms_ops.ops._validation import FLOAT_DTYPES, check_dim, check_dtype, check_tensor, known
from ms_ops.ops.moe_routing import moe_finalize_routing, moe_init_routing


class MoE(RecoveringCell):
    r"""Top-k routed mixture of SwiGLU experts.

    For tokens ``x [R, H]`` (any leading shape is flattened):

    1. router: ``p = softmax(x W_r)`` over E experts; keep the top ``k`` (``s [R, k]``,
       renormalised to sum 1 when ``normalize_top_k``) and their ids ``e [R, k]``;
    2. dispatch: :func:`ms_ops.moe_init_routing` in drop/pad mode groups the R*k pairs per expert
       into ``[E, C, H]`` with ``C = ceil(capacity_factor * R * k / E)`` (clipped to [1, R]);
       pairs beyond an expert's capacity are dropped;
    3. experts: ``y_e = (silu(x_e W_gate,e) * (x_e W_up,e)) W_down,e`` as batched matmuls;
    4. combine: :func:`ms_ops.moe_finalize_routing` gives ``out[r] = sum_k s[r,k] y[e(r,k), slot]``.

    Gradients reach the expert weights, the router (through the combine weights ``s``) and ``x``.

    Args:
        hidden_size (int): H.
        ffn_hidden_size (int): F, hidden size of each expert.
        num_experts (int): E.
        top_k (int): experts per token. Default 2.
        capacity_factor (float): slots per expert relative to an even load. Default 2.0; use
            ``num_experts / top_k`` (or more) for no dropping at all.
        expert_capacity (int, optional): a fixed C instead of the one from ``capacity_factor``;
            needed in GRAPH mode when the token count is dynamic (``Cell.set_inputs``).
        normalize_top_k (bool): renormalise the kept router probabilities. Default True.
        dtype (mindspore.dtype): parameter and compute dtype of the experts. Default float32
            (MindSpore's CPU batched matmul has no bfloat16 kernel; routing runs in the dtype of
            ``x`` whatever this is).

    Inputs:
        x (Tensor): ``[..., H]`` float32/float16/bfloat16; its last dimension must be
            ``hidden_size`` (checked: a mismatch raises ``ValueError``, it is never reinterpreted
            as a different token count). In GRAPH mode the token count must be static unless
            ``expert_capacity`` is given (it sets C). Zero tokens give an empty output and zero
            parameter gradients; with a token count unknown at compile time (GRAPH mode,
            ``set_inputs`` with ``None``) zero tokens reach MindSpore's router ops, which warn
            on empty tensors and whose TopK gradient fails on them.

    Outputs:
        Tensor of the shape and dtype of ``x``.
    """

    def __init__(self, hidden_size, ffn_hidden_size, num_experts, top_k=2, *, capacity_factor=2.0,
                 expert_capacity=None, normalize_top_k=True, dtype=ms.float32):
        super().__init__()
        if not 1 <= top_k <= num_experts:
            raise ValueError(f"MoE: 'top_k' must be in [1, num_experts={num_experts}], got {top_k}")
        if capacity_factor <= 0:
            raise ValueError(f"MoE: 'capacity_factor' must be > 0, got {capacity_factor}")
        if expert_capacity is not None and expert_capacity < 1:
            raise ValueError(f"MoE: 'expert_capacity' must be >= 1, got {expert_capacity}")
        self.hidden_size = hidden_size
        self.ffn_hidden_size = ffn_hidden_size
        self.num_experts = num_experts
        self.top_k = top_k
        self.capacity_factor = capacity_factor
        self.expert_capacity = expert_capacity
        self.normalize_top_k = normalize_top_k
        std_in, std_out = hidden_size ** -0.5, ffn_hidden_size ** -0.5
        self.router = Parameter(initializer(Normal(std_in), (hidden_size, num_experts), ms.float32),
                                name="router")
        self.w_gate_up = Parameter(
            initializer(Normal(std_in), (num_experts, hidden_size, 2 * ffn_hidden_size), dtype),
            name="w_gate_up")
        self.w_down = Parameter(
            initializer(Normal(std_out), (num_experts, ffn_hidden_size, hidden_size), dtype),
            name="w_down")

    def capacity(self, num_tokens):
        if self.expert_capacity is not None:
            return self.expert_capacity
        per_expert = self.capacity_factor * num_tokens * self.top_k / self.num_experts
        return max(1, min(num_tokens, math.ceil(per_expert)))

    def construct(self, x):
        check_tensor("MoE", "x", x)
        if x.ndim < 1:
            raise ValueError(f"MoE: 'x' must be [..., hidden_size={self.hidden_size}], got a scalar")
        check_dim("MoE", "x", x, -1, self.hidden_size, "hidden_size")
        check_dtype("MoE", "x", x, FLOAT_DTYPES)
        shape = x.shape
        tokens = x.reshape(-1, self.hidden_size)
        if known(tokens.shape[0]) and tokens.shape[0] == 0:
            # No token: the output is x itself (empty), and no parameter gets a gradient. The
            # router's MindSpore ops would warn on the empty tensors and TopK's gradient fails.
            return x
        probs = ops.softmax(ops.matmul(tokens.astype(ms.float32), self.router), axis=-1)
        weights, expert_idx = ops.topk(probs, self.top_k)
        if self.normalize_top_k:
            weights = weights / weights.sum(axis=-1, keepdims=True)
        expert_idx = expert_idx.astype(ms.int32)
        capacity = self.capacity(tokens.shape[0])
        # Only the two outputs used: unpacking the others into `_` leaves isolated graph nodes that
        # GRAPH mode drops with an ANALYZER "side effect nodes were eliminated" warning (the
        # capacity from max/min carries an interpreted node's side-effect flag into them).
        expanded, row_idx = moe_init_routing(
            tokens, expert_idx, expert_capacity=capacity, expert_num=self.num_experts,
            drop_pad_mode=1)[:2]
        expanded = expanded.astype(self.w_gate_up.dtype)
        gate, up = ops.split(ops.bmm(expanded, self.w_gate_up), self.ffn_hidden_size, axis=-1)
        expert_out = ops.bmm(ops.silu(gate) * up, self.w_down).astype(x.dtype)
        out = moe_finalize_routing(expert_out, row_idx, scales=weights.astype(x.dtype),
                                   expert_idx=expert_idx, drop_pad_mode=3)
        return out.reshape(shape)

    def extend_repr(self):
        return (f"hidden_size={self.hidden_size}, ffn_hidden_size={self.ffn_hidden_size}, "
                f"num_experts={self.num_experts}, top_k={self.top_k}, "
                f"capacity_factor={self.capacity_factor}")
