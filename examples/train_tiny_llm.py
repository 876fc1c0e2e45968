"""Trains a tiny decoder language model built on ms_ops' kernels, in GRAPH mode, on text it writes.

The model (``TinyLM``): token embedding, then per layer RMSNorm -> grouped-query attention with
rotary positions through ``ms_ops.flash_attention_score`` (causal, BSND) -> RMSNorm -> a
mixture-of-experts feed-forward through ``ms_ops.nn.MoE`` (the routing kernels), and at the top
the fused linear + cross-entropy head ``ms_ops.nn.FusedLinearCrossEntropyLoss`` (no [N, V]
logits). The text is generated: sentences from a small grammar, read character by character, so
nothing is downloaded and the loss has something to learn (spelling, then grammar).

Shows a progress bar, prints the loss at the start and the end, writes ``tiny_llm_loss.png`` and
the checkpoint ``tiny_llm.ckpt`` (parameters, optimizer state, step) to ``--out-dir`` (default
``examples/outputs/``), and exits non-zero unless the loss clearly fell. ``--resume`` continues
from that checkpoint up to ``--steps`` in total. ``examples/generate.py`` decodes from it.

``--attention dsa`` replaces each layer's attention by DeepSeek sparse attention
(``ms_ops.nn.DSAttention``: one shared key/value head, each token attends over the
``--sparse-count`` keys its lightning indexer selects) and adds the indexer's KL loss (per token,
summed over the layers) to the LM loss; both are printed. As in DeepSeek-V3.2, the first
``--dense-warmup-steps`` steps are a dense warm-up (``DSAttention(dense_warmup=True)``: dense
causal attention, the indexer trained by the KL loss over every causal key); the sparse stage then
starts from the warm-up's parameters and optimizer state. The warm-up's and the sparse stage's
indexer losses are printed separately (the dense one spans every causal key, so the two are not
on one scale).

``--dtype bf16``/``fp16`` runs attention and the LM head (ms_ops kernels) in that dtype; the
dense projections and the experts stay float32 because MindSpore's CPU matmul has no bfloat16.

Run (repo installed, e.g. ``pip install -e ".[examples]"``; the default run takes 2 to 4 minutes
on 2 CPU cores):
    python examples/train_tiny_llm.py [--steps 300] [--seq-len 64] [--dtype fp32] [--resume]
                                      [--attention gqa|dsa] [--sparse-count 16] [--dense-warmup-steps 10]
"""
import argparse
import math
import os
import sys
import time

os.environ.setdefault("GLOG_v", "3")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import mindspore as ms  # noqa: E402
import numpy as np  # noqa: E402
from mindspore import Parameter, nn, ops  # noqa: E402
from tqdm import tqdm  # noqa: E402

import ms_ops  # noqa: E402

DTYPES = {"fp32": ms.float32, "fp16": ms.float16, "bf16": ms.bfloat16}


# --- the text --------------------------------------------------------------------------------
class GrammarText:
    """Sentences like "the old miller carried a red lantern to the harbour." from a fixed grammar,
    as one long character stream; ``vocab`` is its sorted character set."""

    WORDS = {
        "det": ["the", "a", "every", "one"],
        "adj": ["old", "red", "quiet", "clever", "small", "golden", "tired", "bright"],
        "noun": ["miller", "cat", "sailor", "lantern", "river", "king", "garden", "letter", "harbour"],
        "verb": ["carried", "found", "watched", "painted", "followed", "remembered", "opened"],
        "prep": ["to", "near", "under", "beyond", "behind"],
    }

    def __init__(self, seed, chars=200_000):
        rng = np.random.default_rng(seed)
        pieces, total = [], 0
        while total < chars:
            sentence = self._sentence(rng)
            pieces.append(sentence)
            total += len(sentence)
        self.text = "".join(pieces)
        self.vocab = sorted(set(self.text))
        lookup = {c: i for i, c in enumerate(self.vocab)}
        self.ids = np.array([lookup[c] for c in self.text], np.int32)

    def _pick(self, rng, kind):
        words = self.WORDS[kind]
        return words[rng.integers(len(words))]

    def _phrase(self, rng):
        words = [self._pick(rng, "det")]
        if rng.random() < 0.6:
            words.append(self._pick(rng, "adj"))
        return words + [self._pick(rng, "noun")]

    def _sentence(self, rng):
        words = self._phrase(rng) + [self._pick(rng, "verb")] + self._phrase(rng)
        if rng.random() < 0.5:
            words += [self._pick(rng, "prep")] + self._phrase(rng)
        return " ".join(words) + ". "

    def batch(self, rng, batch, seq_len):
        starts = rng.integers(0, len(self.ids) - seq_len - 1, batch)
        window = np.stack([self.ids[s:s + seq_len + 1] for s in starts])
        return window[:, :-1], window[:, 1:]

    def decode(self, ids):
        return "".join(self.vocab[i] for i in ids)


# --- the model -------------------------------------------------------------------------------
class RMSNorm(nn.Cell):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = Parameter(ms.Tensor(np.ones(hidden, np.float32)), name="weight")
        self.eps = eps

    def construct(self, x):
        return x * ops.rsqrt((x * x).mean(-1, keep_dims=True) + self.eps) * self.weight


def rope_tables(seq_len, head_dim, base=10000.0):
    """cos/sin [S, 1, D] for rotary positions over the two halves of each head."""
    inv = base ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    angles = np.outer(np.arange(seq_len), inv)
    angles = np.concatenate([angles, angles], axis=-1)[:, None, :]
    return ms.Tensor(np.cos(angles), ms.float32), ms.Tensor(np.sin(angles), ms.float32)


def apply_rope(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = ops.concat((-x[..., half:], x[..., :half]), axis=-1)
    return x * cos + rotated * sin


class Attention(nn.Cell):
    """Grouped-query causal self-attention: ``heads`` query heads share ``kv_heads`` key/value
    heads; ms_ops.flash_attention_score in BSND with sparse_mode 3 (causal)."""

    def __init__(self, hidden, heads, kv_heads, dtype):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.wq = nn.Dense(hidden, heads * self.head_dim, has_bias=False)
        self.wkv = nn.Dense(hidden, 2 * kv_heads * self.head_dim, has_bias=False)
        self.wo = nn.Dense(heads * self.head_dim, hidden, has_bias=False)
        self.dtype = dtype
        # sparse_mode 3 (causal) takes CANN's compressed mask; without a mask the op attends to every key.
        self.causal_mask = ms.Tensor(np.triu(np.ones((2048, 2048), np.bool_), 1))

    def construct(self, x, cos, sin):
        b, s, _ = x.shape
        q = self.wq(x).reshape(b, s, self.heads, self.head_dim)
        k, v = ops.split(self.wkv(x).reshape(b, s, 2 * self.kv_heads, self.head_dim), self.kv_heads, axis=2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        out = ms_ops.flash_attention_score(q.astype(self.dtype), k.astype(self.dtype), v.astype(self.dtype),
                                           self.heads, attn_mask=self.causal_mask,
                                           scalar_value=1.0 / math.sqrt(self.head_dim), input_layout="BSND",
                                           sparse_mode=3)
        return self.wo(out.astype(ms.float32).reshape(b, s, self.heads * self.head_dim))


class Block(nn.Cell):
    def __init__(self, args, dtype):
        super().__init__()
        self.norm1, self.norm2 = RMSNorm(args.hidden), RMSNorm(args.hidden)
        self.attention = Attention(args.hidden, args.heads, args.kv_heads, dtype)
        # Capacity for every token (E / k even shares): the loss measures the model, not drops.
        self.moe = ms_ops.nn.MoE(args.hidden, args.ffn, args.experts, args.top_k,
                                 capacity_factor=args.experts / args.top_k)

    def construct(self, x, cos, sin):
        x = x + self.attention(self.norm1(x), cos, sin)
        return x + self.moe(self.norm2(x))


class DSABlock(nn.Cell):
    """Block with DeepSeek sparse attention (its own rotary tables); returns (x, indexer loss)."""

    def __init__(self, args, dtype, dense):
        super().__init__()
        self.norm1, self.norm2 = RMSNorm(args.hidden), RMSNorm(args.hidden)
        head_dim = args.hidden // args.heads
        self.attention = ms_ops.nn.DSAttention(args.hidden, args.heads, head_dim, rope_head_dim=head_dim // 2,
                                               index_heads=2, index_head_dim=head_dim,
                                               index_rope_head_dim=head_dim // 2, sparse_count=args.sparse_count,
                                               dense_warmup=dense, max_seq_len=args.seq_len, dtype=dtype)
        self.moe = ms_ops.nn.MoE(args.hidden, args.ffn, args.experts, args.top_k,
                                 capacity_factor=args.experts / args.top_k)

    def construct(self, x):
        out, indexer_loss = self.attention(self.norm1(x))
        x = x + out
        return x + self.moe(self.norm2(x)), indexer_loss


class TinyLM(nn.Cell):
    """``construct(tokens [B, S], targets [B, S])`` -> mean next-token loss (with ``--attention
    dsa``: (that loss, the indexer loss per token summed over layers)); ``hidden_states`` gives
    the final normalised states [B, S, H] (for decoding; GQA attention only). ``dense``: the DSA
    layers' dense warm-up form (the same parameters)."""

    def __init__(self, args, vocab_size, dense=False):
        super().__init__()
        dtype = DTYPES[args.dtype]
        self.dsa = args.attention == "dsa"
        self.embed = nn.Embedding(vocab_size, args.hidden)
        self.blocks = nn.CellList([DSABlock(args, dtype, dense) if self.dsa else Block(args, dtype)
                                   for _ in range(args.layers)])
        self.norm = RMSNorm(args.hidden)
        self.head = ms_ops.nn.FusedLinearCrossEntropyLoss(args.hidden, vocab_size, dtype=dtype)
        self.cos, self.sin = rope_tables(args.seq_len, args.hidden // args.heads)
        self.dtype = dtype

    def hidden_states(self, tokens):
        x = self.embed(tokens)
        s = tokens.shape[1]
        for block in self.blocks:
            x = block(x, self.cos[:s], self.sin[:s])
        return self.norm(x)

    def construct(self, tokens, targets):
        if self.dsa:
            x, indexer_loss = self.embed(tokens), 0.0
            for block in self.blocks:
                x, loss = block(x)
                indexer_loss = indexer_loss + loss.sum()
            h = self.norm(x)
            lm_loss = self.head(h.reshape(-1, h.shape[-1]).astype(self.dtype), targets.reshape(-1))
            return lm_loss, indexer_loss / targets.size
        h = self.hidden_states(tokens)
        return self.head(h.reshape(-1, h.shape[-1]).astype(self.dtype), targets.reshape(-1))


class TrainWithIndexerLoss(nn.TrainOneStepCell):
    """One optimizer step on LM loss + indexer loss; returns both (``--attention dsa``)."""

    def construct(self, tokens, targets):
        lm_loss, indexer_loss = self.network(tokens, targets)
        sens = (ops.ones_like(lm_loss), ops.ones_like(indexer_loss))
        grads = self.grad_reducer(self.grad(self.network, self.weights)(tokens, targets, sens))
        self.optimizer(grads)
        return lm_loss, indexer_loss


# --- training --------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=300, help="total training steps (with --resume: including "
                                                          "those already done)")
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--dtype", choices=sorted(DTYPES), default="fp32")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--ffn", type=int, default=128)
    p.add_argument("--experts", type=int, default=4)
    p.add_argument("--top-k", type=int, default=2)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--attention", choices=["gqa", "dsa"], default="gqa",
                   help="gqa: flash attention (default); dsa: DeepSeek sparse attention + indexer loss")
    p.add_argument("--sparse-count", type=int, default=16, help="keys per token with --attention dsa")
    p.add_argument("--dense-warmup-steps", type=int, default=10,
                   help="with --attention dsa: the first steps use dense attention and the dense indexer loss")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--resume", action="store_true", help="continue from --out-dir/tiny_llm.ckpt")
    p.add_argument("--out-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "outputs"))
    return p.parse_args(argv)


def build(args, vocab_size, dense=False):
    model = TinyLM(args, vocab_size, dense)
    optimizer = nn.Adam(model.trainable_params(), learning_rate=args.lr)
    step = (TrainWithIndexerLoss if model.dsa else nn.TrainOneStepCell)(model, optimizer)
    step.set_train()
    return model, step


def main(argv=None):
    args = parse_args(argv)
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(args.seed)
    text = GrammarText(args.seed)
    model, train_step = build(args, len(text.vocab))
    os.makedirs(args.out_dir, exist_ok=True)
    ckpt = os.path.join(args.out_dir, "tiny_llm.ckpt")
    start, losses, indexer_losses, warmup_losses = 0, [], [], []
    state = None
    if args.resume:
        if not os.path.exists(ckpt):
            sys.exit(f"train_tiny_llm: --resume, but there is no checkpoint at {ckpt}")
        state = ms.load_checkpoint(ckpt)
        start = int(state.pop("step").asnumpy())
        losses = [float(v) for v in state.pop("losses").asnumpy()]
        ms.load_param_into_net(train_step, state, strict_load=True)
        print(f"resumed from {ckpt} at step {start}")
    # The dense warm-up runs on its own network of the same parameters (dense_warmup is fixed at
    # construction, and each form compiles its own graph); its state moves to the sparse one after.
    warmup = min(max(args.dense_warmup_steps, 0), args.steps) if model.dsa else 0
    warm_step = build(args, len(text.vocab), dense=True)[1] if start < warmup else None
    if warm_step is not None and state is not None:
        ms.load_param_into_net(warm_step, state, strict_load=True)
    rng = np.random.default_rng(args.seed + start)
    t0 = time.time()
    with tqdm(range(start, args.steps), desc="train", unit="step") as bar:
        for step in bar:
            tokens, targets = text.batch(rng, args.batch, args.seq_len)
            dense = step < warmup
            out = (warm_step if dense else train_step)(ms.Tensor(tokens), ms.Tensor(targets))
            if model.dsa:
                out, indexer = out
                (warmup_losses if dense else indexer_losses).append(float(indexer.asnumpy()))
            if dense and step + 1 == warmup:
                ms.load_param_into_net(train_step, {p.name: p for p in warm_step.get_parameters()}, strict_load=True)
            loss = float(out.asnumpy())
            losses.append(loss)
            bar.set_postfix(loss=f"{loss:.3f}")
    elapsed = time.time() - t0
    last_step = warm_step if args.steps <= warmup and warm_step is not None else train_step
    ms.save_checkpoint(last_step, ckpt, append_dict={
        "step": ms.Tensor(np.array(args.steps, np.int32)),
        "losses": ms.Tensor(np.array(losses, np.float32))})

    window = max(1, min(20, len(losses) // 5))
    first, last = np.mean(losses[:window]), np.mean(losses[-window:])
    print(f"vocabulary {len(text.vocab)} characters; {args.layers} layers, hidden {args.hidden}, "
          f"{args.heads} query / {1 if model.dsa else args.kv_heads} key-value heads, {args.experts} experts "
          f"(top {args.top_k})")
    print(f"loss: first {window} steps {first:.3f} -> last {window} steps {last:.3f} "
          f"(uniform guess: {math.log(len(text.vocab)):.3f}); {args.steps - start} steps in {elapsed:.0f} s")
    if warmup_losses:
        w = max(1, min(window, len(warmup_losses) // 2))
        print(f"DSA dense warm-up ({len(warmup_losses)} steps, every causal key) indexer loss: first {w} steps "
              f"{np.mean(warmup_losses[:w]):.4f} -> last {w} steps {np.mean(warmup_losses[-w:]):.4f}")
    if indexer_losses:
        # Both distributions start near uniform (KL near 0); the loss rises while the main
        # attention sharpens, then falls as the indexer follows: the highest window shows it.
        window = max(1, min(window, len(indexer_losses)))
        first = max(start, warmup)  # the sparse stage's first step
        means = np.convolve(indexer_losses, np.ones(window) / window, mode="valid")
        top = int(np.argmax(means))
        print(f"DSA (top {args.sparse_count} keys) indexer loss: first {window} steps "
              f"{np.mean(indexer_losses[:window]):.4f} -> last {window} steps {np.mean(indexer_losses[-window:]):.4f} "
              f"(highest {window}-step mean {means[top]:.4f}, steps {first + top + 1}-{first + top + window})")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(np.arange(1, len(losses) + 1), losses)
    ax.set_xlabel("step")
    ax.set_ylabel("next-character loss")
    ax.set_title(f"TinyLM ({args.dtype}), ms_ops kernels")
    fig.tight_layout()
    fig.savefig(os.path.join(args.out_dir, "tiny_llm_loss.png"), dpi=120)
    print(f"checkpoint: {ckpt}; loss curve: {os.path.join(args.out_dir, 'tiny_llm_loss.png')}")
    if not last < 0.8 * first:
        sys.exit("train_tiny_llm: the loss did not fall by 20%")


if __name__ == "__main__":
    main()
