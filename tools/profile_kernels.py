"""Runs every ms_ops kernel once, forward and gradient, at a representative size with the twin's
NPU cost profile on (aicore/twin/twin_profile.h) and prints a markdown table: per kernel the bytes
moved by MTE2 (GM->UB/L1) and MTE3 (UB->GM), vector repeats, cube MACs, scalar GetValue/SetValue
(and the estimated scalar instructions), the estimated Atlas A2 time and the pipe that bounds it.

The estimate is the model twin_profile.cpp states (per-pipe throughput, pipes overlapped, scalar
not): an account of what a kernel asks of the NPU, not a measurement.

Run (repo installed, e.g. ``pip install -e .``):
    python tools/profile_kernels.py                 # every kernel
    python tools/profile_kernels.py --only moe      # cases whose name contains "moe"
    python tools/profile_kernels.py --json p.jsonl  # keep the raw per-launch records too
"""
import argparse
import json
import os
import sys
import tempfile

os.environ.setdefault("GLOG_v", "3")

import mindspore as ms  # noqa: E402
import numpy as np  # noqa: E402

import ms_ops  # noqa: E402

DTYPE = ms.bfloat16  # the training dtype; fp32 operands would run the cube at its fp32 rate
RNG = np.random.default_rng(0)


def tensor(*shape, scale=1.0, dtype=DTYPE):
    return ms.Tensor((RNG.standard_normal(shape) * scale).astype(np.float32)).astype(dtype)


def routing(rows, top_k, experts):
    """Expert ids of `rows` tokens, top_k distinct experts each."""
    ids = np.argsort(RNG.random((rows, experts)), axis=1)[:, :top_k].astype(np.int32)
    return ms.Tensor(ids)


def moe(rows=4096, hidden=1024, top_k=8, experts=64):
    """Dropless dispatch and weighted combine with a bias, and both gradients."""
    x, idx = tensor(rows, hidden), routing(rows, top_k, experts)
    scales = tensor(rows, top_k, scale=0.3)
    bias = tensor(experts, hidden, scale=0.1)

    def net(x, scales, bias):
        expanded, row_idx, _, _ = ms_ops.moe_init_routing(x, idx, expert_num=experts)
        return ms_ops.moe_finalize_routing(expanded, row_idx, scales=scales, bias=bias, expert_idx=idx,
                                           drop_pad_mode=2).astype(ms.float32).sum()
    return ms.grad(net, grad_position=(0, 1, 2))(x, scales, bias)


def cross_entropy(mode, tokens=2048, hidden=1024, vocab=16384):
    """The LM-head loss in kernel mode `mode` and its gradients."""
    x, w = tensor(tokens, hidden, scale=0.1), tensor(vocab, hidden, scale=0.05)
    target = ms.Tensor(RNG.integers(0, vocab, tokens).astype(np.int32))
    return ms.grad(lambda x, w: ms_ops.fused_linear_cross_entropy(x, w, target, mode=mode), grad_position=(0, 1))(x, w)


def flash_attention(batch=1, heads=8, seq=1024, dim=128):
    """Causal attention (BNSD) and its gradient."""
    q, k, v = (tensor(batch, heads, seq, dim) for _ in range(3))

    def net(q, k, v):
        return ms_ops.flash_attention_score(q, k, v, heads, input_layout="BNSD", sparse_mode=2,
                                            scalar_value=dim ** -0.5, next_tokens=0).astype(ms.float32).sum()
    return ms.grad(net, grad_position=(0, 1, 2))(q, k, v)


def linear_attention(batch=1, heads=8, seq=1024, dim=64):
    """Causal linear attention (BNSD) and its gradient."""
    q, k, v = (tensor(batch, heads, seq, dim, scale=0.5) for _ in range(3))

    def net(q, k, v):
        return ms_ops.linear_attention(q, k, v, causal=True).astype(ms.float32).sum()
    return ms.grad(net, grad_position=(0, 1, 2))(q, k, v)



def dsa(seq=1024, heads=16, index_heads=16, dim=512, rope=64, index_dim=128, top_k=256):
    """DeepSeek sparse attention (BSND, causal, MQA): the lightning indexer picks top_k keys, sparse
    flash attention attends over them, the indexer's KL loss; all with their gradients."""
    q, k = tensor(1, seq, heads, dim, scale=0.1), tensor(1, seq, 1, dim, scale=0.1)
    q_rope, k_rope = tensor(1, seq, heads, rope, scale=0.1), tensor(1, seq, 1, rope, scale=0.1)
    q_index, k_index = tensor(1, seq, index_heads, index_dim, scale=0.1), tensor(1, seq, 1, index_dim, scale=0.1)
    weights = tensor(1, seq, index_heads, scale=0.1)
    scale = (dim + rope) ** -0.5
    indices, _ = ms_ops.lightning_indexer(q_index, k_index, weights, sparse_count=top_k, return_value=True)

    def indexer(qi, ki, w):
        return ms_ops.lightning_indexer(qi, ki, w, sparse_count=top_k, return_value=True)[1].astype(ms.float32).sum()

    def attention(q, k, q_rope, k_rope):
        out = ms_ops.sparse_flash_attention(q, k, k, indices, scale, query_rope=q_rope, key_rope=k_rope)[0]
        return out.astype(ms.float32).sum()

    _, row_max, row_sum = ms_ops.sparse_flash_attention(q, k, k, indices, scale, query_rope=q_rope, key_rope=k_rope,
                                                        return_softmax_lse=True)

    def kl(qi, ki, w):
        return ms_ops.sparse_lightning_indexer_kl_loss(q, k, qi, ki, w, indices, row_max, row_sum, scale,
                                                       query_rope=q_rope, key_rope=k_rope).sum()
    return (ms.grad(indexer, grad_position=(0, 1, 2))(q_index, k_index, weights)
            + ms.grad(attention, grad_position=(0, 1, 2, 3))(q, k, q_rope, k_rope)
            + ms.grad(kl, grad_position=(0, 1, 2))(q_index, k_index, weights))


def decode(seqs=8, heads=32, kv_heads=8, dim=128, block_size=128, context=1024):
    """One decode step: each sequence's new token cached (reshape_and_cache), then attends over its
    context through a shuffled block table (paged_attention)."""
    blocks_per_seq = context // block_size
    pool = seqs * blocks_per_seq
    key_cache, value_cache = tensor(pool, block_size, kv_heads, dim), tensor(pool, block_size, kv_heads, dim)
    tables = ms.Tensor(RNG.permutation(pool).astype(np.int32).reshape(seqs, blocks_per_seq))
    lens = ms.Tensor(np.full(seqs, context, np.int32))
    slots = ms.Tensor((tables.asnumpy()[:, -1] * block_size + block_size - 1).astype(np.int32))
    ms_ops.reshape_and_cache(tensor(seqs, kv_heads, dim), tensor(seqs, kv_heads, dim), key_cache, value_cache, slots)
    return ms_ops.paged_attention(tensor(seqs, heads, dim), key_cache, value_cache, tables, lens, heads,
                                  dim ** -0.5, kv_heads)

CASES = {
    "moe R4096 H1024 K8 E64": moe,
    "cross_entropy N2048 H1024 V16384 grad_in_forward": lambda: cross_entropy("grad_in_forward"),
    "cross_entropy N2048 H1024 V16384 memory_saving": lambda: cross_entropy("memory_saving"),
    "flash_attention B1 N8 S1024 D128 causal": flash_attention,
    "linear_attention B1 N8 S1024 D64 causal": linear_attention,
    "dsa S1024 N16 D512+64 Nidx16 k256 causal": dsa,
    "decode B8 N32 Nkv8 D128 block128 context1024": decode,
}


def materialise(result):
    for t in result if isinstance(result, (tuple, list)) else (result,):
        t.asnumpy()


def mib(b):
    return f"{b / 2 ** 20:.2f}"


def table(rows):
    """The markdown table of (case, kernel, merged record) rows."""
    head = ("| case | kernel | launches | blocks | MTE2 MiB | MTE3 MiB | vector repeats | cube MACs | "
            "scalar GetValue/SetValue (est. instr) | est. A2 µs | bound |")
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for case, kernel, r in rows:
        t = r["total"]
        macs = t["cube_macs"] + t["cube_macs_f32"]
        out.append(f"| {case} | `{kernel}` | {r['launches']} | {r['blocks']} | {mib(t['mte2_bytes'])} | "
                   f"{mib(t['mte3_bytes'])} | {t['vec_repeats']:,} | {macs:,} | "
                   f"{t['scalar_gm'] + t['scalar_ub']:,} ({t['scalar_est']:,}) | {r['est_us']:.1f} | {r['bound']} |")
    return "\n".join(out)


def merge(records):
    """Launches of one kernel in one case, summed (time too: they run one after the other)."""
    first = records[0]
    total = {k: sum(r["total"][k] for r in records) for k in first["total"]}
    slowest = max(records, key=lambda r: r["est_us"])
    return {"launches": len(records), "blocks": max(r["blocks"] for r in records), "total": total,
            "est_us": sum(r["est_us"] for r in records), "bound": slowest["bound"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="run the cases whose name contains this text")
    parser.add_argument("--json", help="also append the raw per-launch records to this file")
    args = parser.parse_args()
    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case, run in CASES.items():
            if args.only not in case:
                continue
            path = os.path.join(tmp, "profile.jsonl")
            os.environ["MS_OPS_TWIN_PROFILE_JSON"] = path
            materialise(run())
            del os.environ["MS_OPS_TWIN_PROFILE_JSON"]
            with open(path) as f:
                records = [json.loads(line) for line in f]
            os.remove(path)
            if args.json:
                with open(args.json, "a") as f:
                    f.writelines(json.dumps(dict(r, case=case)) + "\n" for r in records)
            by_kernel = {}
            for r in records:
                by_kernel.setdefault(r["kernel"], []).append(r)
            rows += [(case, k, merge(rs)) for k, rs in by_kernel.items()]
            print(f"{case}: {len(records)} launches", file=sys.stderr)
    print(table(rows))


if __name__ == "__main__":
    main()
