"""Greedy decoding from the ``train_tiny_llm.py`` checkpoint through a paged KV cache.

Several prompts share one system prompt. The system prompt is prefilled once; each request is a
``BlockManager.fork`` of it, so its cache blocks are stored once. Each request then prefills its
own prompt (chunked prefill: ``q_seq_lens``) and decodes token by token with
``ms_ops.paged_attention``; the first write into the shared, partly filled last block copies it
(copy-on-write, ``ms_ops.copy_blocks``). Keys and values go into the per-layer caches with
``ms_ops.reshape_and_cache`` at the slots the manager assigns.

Prints each completion, the cache blocks in use against one private copy per request, and the
largest difference between the paged path's logits and a dense forward of the same tokens.
Runs in PYNATIVE mode (a Python loop over steps). Run after training:
    python examples/train_tiny_llm.py && python examples/generate.py [--new-tokens 20]
"""
import argparse
import math
import os
import sys

os.environ.setdefault("GLOG_v", "3")

import mindspore as ms  # noqa: E402
import numpy as np  # noqa: E402
from mindspore import ops  # noqa: E402

import ms_ops  # noqa: E402
from ms_ops.kv_cache import BlockManager  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_tiny_llm import GrammarText, TinyLM, apply_rope, parse_args, rope_tables  # noqa: E402

# Within the 64 positions the model was trained on (RoPE does not extrapolate far).
SYSTEM = "the old king watched a river. "
PROMPTS = ["one red", "the sailor", "every qu", "a golden"]


class PagedLM:
    """TinyLM's layers run on new tokens only, reading the earlier ones from paged caches."""

    def __init__(self, model, num_blocks, block_size, max_len):
        self.model = model
        att = model.blocks[0].attention
        self.heads, self.kv_heads, self.head_dim = att.heads, att.kv_heads, att.head_dim
        shape = (num_blocks, block_size, self.kv_heads, self.head_dim)
        self.caches = [(ms.Tensor(np.zeros(shape, np.float32)), ms.Tensor(np.zeros(shape, np.float32)))
                       for _ in model.blocks]
        self.manager = BlockManager(num_blocks, block_size)
        self.cos, self.sin = rope_tables(max_len, self.head_dim)
        self.copies = 0

    def reserve(self, seqs, counts):
        """Room for ``counts`` new tokens per sequence; copy-on-write copies done in every cache."""
        pairs = [pair for s, n in zip(seqs, counts) for pair in self.manager.append(s, n)]
        if pairs:
            mapping = ms.Tensor(np.array(pairs, np.int32))
            for key_cache, value_cache in self.caches:
                ms_ops.copy_blocks(key_cache, value_cache, mapping)
            self.copies += len(pairs)

    def step(self, seqs, tokens):
        """Runs the new tokens of ``seqs`` (already reserved; ``tokens[i]`` lists sequence i's
        new token ids) and returns the logits of each sequence's last new token [B, V]."""
        counts = [len(t) for t in tokens]
        flat = ms.Tensor(np.concatenate(tokens).astype(np.int32))
        positions = np.concatenate([np.arange(self.manager.num_tokens(s) - n, self.manager.num_tokens(s))
                                    for s, n in zip(seqs, counts)])
        cos, sin = self.cos[ms.Tensor(positions)], self.sin[ms.Tensor(positions)]
        slots = self.manager.slot_mapping(seqs, counts)
        tables, lens = self.manager.block_tables(seqs), self.manager.context_lens(seqs)
        q_lens = ms.Tensor(np.array(counts, np.int32))
        x = self.model.embed(flat)
        for block, (key_cache, value_cache) in zip(self.model.blocks, self.caches):
            att = block.attention
            h = block.norm1(x)
            q = apply_rope(att.wq(h).reshape(-1, self.heads, self.head_dim), cos, sin)
            k, v = ops.split(att.wkv(h).reshape(-1, 2 * self.kv_heads, self.head_dim), self.kv_heads, axis=1)
            ms_ops.reshape_and_cache(apply_rope(k, cos, sin), v, key_cache, value_cache, slots)
            out = ms_ops.paged_attention(q, key_cache, value_cache, tables, lens, self.heads,
                                         1.0 / math.sqrt(self.head_dim), self.kv_heads, q_seq_lens=q_lens)
            x = x + att.wo(out.reshape(-1, self.heads * self.head_dim))
            x = x + block.moe(block.norm2(x))
        last = np.cumsum(counts) - 1
        h = self.model.norm(x)[ms.Tensor(last)]
        return ops.matmul(h, self.model.head.weight.astype(ms.float32).T)


def dense_logits(model, ids):
    """The same model on the whole token list at once (the training path), last position's logits."""
    h = model.hidden_states(ms.Tensor(np.array([ids], np.int32)))[0, -1]
    return ops.matmul(h, model.head.weight.astype(ms.float32).T)


def main():
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--new-tokens", type=int, default=20)
    parser.add_argument("--block-size", type=int, default=16)
    own, rest = parser.parse_known_args()
    args = parse_args(rest + ["--seq-len", str(len(SYSTEM) + max(map(len, PROMPTS)) + own.new_tokens)])
    ms.set_context(mode=ms.PYNATIVE_MODE)
    text = GrammarText(args.seed)
    ckpt = os.path.join(args.out_dir, "tiny_llm.ckpt")
    if not os.path.exists(ckpt):
        sys.exit(f"generate: no checkpoint at {ckpt}; run examples/train_tiny_llm.py first")
    model = TinyLM(args, len(text.vocab))
    state = ms.load_checkpoint(ckpt)
    ms.load_param_into_net(model, {k: v for k, v in state.items() if k not in ("step", "losses")})
    model.set_train(False)
    lookup = {c: i for i, c in enumerate(text.vocab)}
    encode = lambda s: [lookup[c] for c in s]  # noqa: E731

    lm = PagedLM(model, num_blocks=64, block_size=own.block_size, max_len=args.seq_len)
    system = encode(SYSTEM)
    lm.manager.allocate("system", len(system))
    lm.step(["system"], [system])
    seqs = list(range(len(PROMPTS)))
    for s in seqs:
        lm.manager.fork("system", s)
    prompts = [encode(p) for p in PROMPTS]
    lm.reserve(seqs, [len(p) for p in prompts])
    logits = lm.step(seqs, prompts)
    history = [system + p for p in prompts]
    worst = max(float(np.abs(logits[i].asnumpy() - dense_logits(model, history[i]).asnumpy()).max())
                for i in seqs)
    generated = [[] for _ in seqs]
    for _ in range(own.new_tokens):
        nxt = logits.asnumpy().argmax(-1)
        for i in seqs:
            generated[i].append(int(nxt[i]))
            history[i].append(int(nxt[i]))
        lm.reserve(seqs, [1] * len(seqs))
        logits = lm.step(seqs, [[g[-1]] for g in generated])

    print(f"system prompt {SYSTEM!r}, shared by {len(seqs)} requests (forks)")
    for p, g in zip(PROMPTS, generated):
        print(f"  {SYSTEM}{p}|{text.decode(g)}")
    bm = lm.manager
    used = bm.num_blocks - bm.num_free_blocks
    private = sum(bm.blocks_needed(bm.num_tokens(s)) for s in seqs)
    print(f"cache blocks in use: {used} (one private copy per request would take {private}); "
          f"copy-on-write copies: {lm.copies}")
    print(f"paged prefill vs dense forward, logits: max abs difference {worst:.2e}")
    for s in seqs + ["system"]:
        bm.free(s)
    assert bm.num_free_blocks == bm.num_blocks


if __name__ == "__main__":
    main()
