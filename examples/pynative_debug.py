"""The tiny LM of ``train_tiny_llm.py`` in PYNATIVE mode: step through one layer op by op, look at
each ms_ops kernel's intermediate outputs, check one against its float64 reference, and take
gradients of a single layer.

What PYNATIVE gives a kernel user that GRAPH mode does not: every call returns a concrete tensor
at once, so ordinary Python (print, numpy, pdb breakpoints) works between the ops of a layer.
This script walks the first block of the model:

1. attention: ``flash_attention_score(..., return_softmax_lse=True)`` also returns the kernel's
   softmax statistics (row max and sum of exp, fp32, [B, N1, S1, 8]); the output is compared with
   ``ms_ops.reference.attention`` in float64;
2. the MoE feed-forward, unrolled: router, ``moe_init_routing`` (how many tokens each expert got,
   and how many were dropped), the experts, ``moe_finalize_routing``;
3. the loss head and ``ms.value_and_grad`` of the loss with respect to that block's parameters.

It loads ``--out-dir/tiny_llm.ckpt`` when ``train_tiny_llm.py`` wrote one, else uses fresh
weights. Run: ``python examples/pynative_debug.py [--out-dir DIR] [--seq-len 32]``
"""
import math
import os
import sys

os.environ.setdefault("GLOG_v", "3")

import mindspore as ms  # noqa: E402
import numpy as np  # noqa: E402
from mindspore import ops  # noqa: E402

import ms_ops  # noqa: E402
from ms_ops.reference.attention import flash_attention, visible_offsets  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_tiny_llm import GrammarText, TinyLM, apply_rope, parse_args  # noqa: E402


def stats(name, t):
    a = t.astype(ms.float32).asnumpy()
    print(f"  {name:<28} {str(tuple(a.shape)):<18} mean {a.mean():+.4f}  std {a.std():.4f}  "
          f"max|.| {np.abs(a).max():.4f}")
    return a


def attention_step(block, x, cos, sin):
    """The block's attention, op by op, with the kernel's statistics and a float64 check."""
    att = block.attention
    b, s, _ = x.shape
    h = block.norm1(x)
    q = apply_rope(att.wq(h).reshape(b, s, att.heads, att.head_dim), cos, sin)
    k, v = ops.split(att.wkv(h).reshape(b, s, 2 * att.kv_heads, att.head_dim), att.kv_heads, axis=2)
    k = apply_rope(k, cos, sin)
    scale = 1.0 / math.sqrt(att.head_dim)
    out, row_max, row_sum = ms_ops.flash_attention_score(q, k, v, att.heads, attn_mask=att.causal_mask,
                                                         scalar_value=scale, input_layout="BSND", sparse_mode=3,
                                                         return_softmax_lse=True)
    stats("query (after RoPE)", q)
    stats("key (after RoPE)", k)
    o = stats("attention_out", out)
    stats("softmax_max [B,N1,S1,8]", row_max)
    stats("softmax_sum [B,N1,S1,8]", row_sum)
    # The float64 reference in BNSD, key/value heads repeated for the query heads (GQA).
    to_bnsd = lambda t: t.asnumpy().astype(np.float64).transpose(0, 2, 1, 3)  # noqa: E731
    group = att.heads // att.kv_heads
    low, high = visible_offsets(s, s, 0, 0, 3)
    ref = flash_attention(to_bnsd(q), np.repeat(to_bnsd(k), group, 1), np.repeat(to_bnsd(v), group, 1),
                          scale, low, high).transpose(0, 2, 1, 3)
    print(f"  attention_out vs float64 reference: max abs difference {np.abs(o - ref).max():.2e}")
    return x + att.wo(out.reshape(b, s, att.heads * att.head_dim))


def moe_step(block, x):
    """The block's MoE feed-forward unrolled around the two routing kernels."""
    moe = block.moe
    tokens = block.norm2(x).reshape(-1, moe.hidden_size)
    probs = ops.softmax(ops.matmul(tokens, moe.router), axis=-1)
    weights, expert_idx = ops.topk(probs, moe.top_k)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    expert_idx = expert_idx.astype(ms.int32)
    capacity = moe.capacity(tokens.shape[0])
    expanded, row_idx, _, before_capacity = ms_ops.moe_init_routing(
        tokens, expert_idx, expert_capacity=capacity, expert_num=moe.num_experts, drop_pad_mode=1,
        expert_tokens_before_capacity_flag=True)
    counts = before_capacity.asnumpy()
    dropped = int((row_idx.asnumpy() < 0).sum())
    print(f"  router: tokens per expert {counts.tolist()} (capacity {capacity} each), "
          f"{dropped} of {row_idx.shape[0]} token copies dropped")
    stats("expanded_x [E, C, H]", expanded)
    gate, up = ops.split(ops.bmm(expanded, moe.w_gate_up), moe.ffn_hidden_size, axis=-1)
    expert_out = ops.bmm(ops.silu(gate) * up, moe.w_down)
    out = ms_ops.moe_finalize_routing(expert_out, row_idx, scales=weights, expert_idx=expert_idx,
                                      drop_pad_mode=3)
    stats("combined [R, H]", out)
    same = np.abs(out.asnumpy() - moe(block.norm2(x)).reshape(-1, moe.hidden_size).asnumpy()).max()
    print(f"  unrolled MoE vs the MoE Cell: max abs difference {same:.2e}")
    return x + out.reshape(x.shape)


def main():
    args = parse_args(sys.argv[1:] + ["--steps", "0"])
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(args.seed)
    text = GrammarText(args.seed)
    model = TinyLM(args, len(text.vocab))
    ckpt = os.path.join(args.out_dir, "tiny_llm.ckpt")
    if os.path.exists(ckpt):
        state = ms.load_checkpoint(ckpt)
        loaded, _ = ms.load_param_into_net(model, {k: v for k, v in state.items() if k not in ("step", "losses")})
        print(f"loaded {ckpt} (trained {int(state['step'].asnumpy())} steps)")
    else:
        print("no checkpoint: fresh weights (run train_tiny_llm.py first to debug a trained model)")
    tokens, targets = text.batch(np.random.default_rng(1), 2, args.seq_len)
    tokens, targets = ms.Tensor(tokens), ms.Tensor(targets)
    print(f"input: {text.decode(tokens.asnumpy()[0])!r}")

    s = args.seq_len
    cos, sin = model.cos[:s], model.sin[:s]
    block = model.blocks[0]
    x = model.embed(tokens)
    print("block 0, attention:")
    x = attention_step(block, x, cos, sin)
    print("block 0, mixture of experts:")
    x = moe_step(block, x)
    stepped = x.asnumpy()
    whole = block(model.embed(tokens), cos, sin).asnumpy()
    print(f"block 0 stepped op by op vs the Block Cell: max abs difference {np.abs(stepped - whole).max():.2e}")

    params = block.trainable_params()
    loss, grads = ms.value_and_grad(model, grad_position=None, weights=params)(tokens, targets)
    print(f"loss {float(loss.asnumpy()):.4f}; gradient norms of block 0's parameters:")
    for p, g in zip(params, grads):
        print(f"  {p.name:<40} {float(np.linalg.norm(g.asnumpy())):.4e}")


if __name__ == "__main__":
    main()
