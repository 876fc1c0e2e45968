"""Flash attention benchmark: ms_ops vs attention composed from MindSpore ops vs PyTorch CPU SDPA.

Dense cases: B=1, N1=N2=8, D=128, S1=S2=S in (1024, 4096, 8192), causal and full, fp32 and
bf16, forward and forward+backward (gradients w.r.t. q, k, v), BNSD tensors. Implementations
(``--impl``):

- ``ms_ops``: ``ms_ops.flash_attention_score(..., input_layout="BNSD")`` (causal: ``sparse_mode=2``
  with CANN's compressed mask) under ``ms.jit`` (forward) or, forward+backward, ``ms.jit`` of
  ``ops.GradOperation(get_all=True, sens_param=True)`` with ``dout`` as the output's gradient (what
  ``out.backward(dout)`` does in torch); GRAPH mode (PyNative's dispatcher busy-waits and steals a
  core). Until 2026-12-04 this was ``ms.grad`` of ``sum(out.astype(fp32) * dout)``: the loss's
  composed casts, product and sum cost bf16 about 50 ms at S=4096, which torch does not pay.
- ``composed``: ``softmax(masked_fill(BatchMatMul(q, k^T) * scale, causal mask, -inf)) @ v`` from
  MindSpore ops, the same ``ms.jit``/``GradOperation``; the causal mask is a bool ``[S, S]`` input. bf16
  is computed in fp32 (MindSpore's CPU BatchMatMul has no bf16) with casts at both ends.
- ``torch``: ``F.scaled_dot_product_attention(q, k, v, is_causal=causal)``, ``out.backward(dout)``,
  2 threads.

Packed variable lengths (``--varlen``; causal, fp32 by default, forward+backward): 16 sequences
of random lengths (seeded) summing to 16384 tokens, ``ms_ops.memory_efficient_attention`` with a
``BlockDiagonalCausalMask`` on the packed ``[1, 16384, 8, 128]`` tensors ("packed") vs the same
sequences padded to the longest, ``[16, max_len, 8, 128]`` with a ``LowerTriangularMask``
("padded": causal masking keeps every real query away from the padding keys). torch: one SDPA per
sequence in a Python loop ("packed") vs SDPA on the padded batch.

Every case runs in its own process (this script with ``--worker``), measured by ``_harness.py``
as in every benchmark: inputs built, framework started with a tiny unrelated graph (base RSS),
warmup calls (the first compiles), then the peak-RSS mark is reset and the timed repeats run.
Extra peak memory = VmHWM - base - the bytes of the results: the output forward; the output and
dq, dk, dv forward+backward (the output exists there too, as the tensor the gradient flows
from): what attention costs beyond its inputs, outputs and gradients, issue 10's measure. An
implementation's own saved statistics (ms_ops' softmax_max/sum, torch's logsumexp) count as
extra. The parent kills a case above ``--mem-limit-gib`` RSS or when the machine runs short of
memory ("out of memory").

GFLOP/s counts the useful work alike for all: 2 GEMMs of 2*D per visible (query, key) pair and
head forward, 4 more backward (dV, dP, dQ, dK; a recompute of Q K^T is not counted); a causal
square mask has S(S+1)/2 visible pairs. The reference is numpy's float32 sgemm
(4096x2048 @ 2048x4096, best of 7, both cores), printed with the CPU model: compare
implementations within one run.

Run (repo installed, e.g. ``pip install -e .``; torch optional):
    python benchmarks/bench_attention.py                      # the full set; about an hour
    python benchmarks/bench_attention.py --seqlens 512 --dtypes fp32 --varlen-tokens 2048 \
        --patience 0 --retries 0                              # a smoke run of every code path
"""
import argparse
import datetime
import gc
import importlib.util
import json
import math
import os

from _harness import (GIB, SGEMM_SHAPE, Unavailable, add_process_args, append_csv, cpu_model, fmt, measure, median,
                      parse_list, sgemm_reference, time_steps, worker)

HERE = os.path.dirname(os.path.abspath(__file__))
IMPLS = ("ms_ops", "composed", "torch")
DTYPE_BYTES = {"fp32": 4, "bf16": 2}
HEADS, HEAD_DIM = 8, 128
VARLEN_SEQS, VARLEN_TOKENS = 16, 16384
CSV_COLUMNS = ["timestamp", "impl", "case", "dtype", "S", "mask", "pass", "median_s", "min_s", "gflops",
               "pct_sgemm", "extra_peak_mib", "status", "note"]


def visible_pairs(lengths, causal):
    return sum(n * (n + 1) // 2 if causal else n * n for n in lengths)


def useful_flop(lengths, causal, backward):
    gemms = 6 if backward else 2
    return gemms * 2 * HEAD_DIM * HEADS * visible_pairs(lengths, causal)


def varlen_lengths(tokens):
    """16 random lengths (seeded) summing to ``tokens``, each >= 1."""
    import numpy as np
    rng = np.random.default_rng(0)
    cuts = np.sort(rng.choice(np.arange(1, tokens), VARLEN_SEQS - 1, replace=False))
    return [int(n) for n in np.diff(np.concatenate([[0], cuts, [tokens]]))]


# ---------------------------------------------------------------- worker side (one case each)

def make_arrays(spec):
    """q, k, v, dout as float32 numpy: BNSD [1, 8, S, 128] (dense), packed BSND [1, T, 8, 128] or
    padded BSND [16, max_len, 8, 128] (zeros past each length)."""
    import numpy as np
    rng = np.random.default_rng(0)
    if spec["case"] == "dense":
        shape = (1, HEADS, spec["s"], HEAD_DIM)
        return [rng.standard_normal(shape, np.float32) for _ in range(4)]
    lengths = spec["lengths"]
    packed = [rng.standard_normal((1, spec["s"], HEADS, HEAD_DIM), np.float32) for _ in range(4)]
    if spec["case"] == "packed":
        return packed
    padded = [np.zeros((len(lengths), max(lengths), HEADS, HEAD_DIM), np.float32) for _ in range(4)]
    start = 0
    for i, n in enumerate(lengths):
        for p, a in zip(padded, packed):
            p[i, :n] = a[0, start:start + n]
        start += n
    return padded


def build_mindspore(spec, arrays):
    import mindspore as ms
    import numpy as np
    from mindspore import ops

    ms.set_context(mode=ms.GRAPH_MODE)
    dtype = {"fp32": ms.float32, "bf16": ms.bfloat16}[spec["dtype"]]
    q, k, v, dout = (ms.Tensor(a).astype(dtype) for a in arrays)
    scale = 1 / math.sqrt(HEAD_DIM)
    causal = spec["mask"] == "causal"
    if spec["impl"] == "ms_ops":
        try:
            import ms_ops
        except Exception as exc:  # a broken build must read as this row's status, not a crash
            raise Unavailable(f"ms_ops import failed: {type(exc).__name__}: {exc}") from exc
        if spec["case"] == "dense":
            # Causal as on Ascend: sparse_mode 2 with CANN's compressed mask (without one the op
            # attends to every key).
            mask = ms.Tensor(np.triu(np.ones((2048, 2048), np.bool_), 1)) if causal else None

            def attention(q, k, v):
                return ms_ops.flash_attention_score(q, k, v, HEADS, attn_mask=mask, scalar_value=scale,
                                                    input_layout="BNSD", sparse_mode=2 if causal else 0)

            desc = "ms_ops.flash_attention_score(BNSD), GRAPH mode"
        else:
            bias = (ms_ops.attn_bias.BlockDiagonalCausalMask.from_seqlens(spec["lengths"])
                    if spec["case"] == "packed" else ms_ops.attn_bias.LowerTriangularMask())

            def attention(q, k, v):
                return ms_ops.memory_efficient_attention(q, k, v, attn_bias=bias)

            desc = f"ms_ops.memory_efficient_attention({type(bias).__name__}), GRAPH mode"
    else:
        if spec["case"] != "dense":
            raise Unavailable("skipped: no composed MindSpore varlen attention")
        # Built here, before the base RSS is read: the mask counts as an input.
        mask = ms.Tensor(np.triu(np.ones((spec["s"], spec["s"]), bool), 1)) if causal else None
        batch_matmul_nt = ops.BatchMatMul(transpose_b=True)

        def composed(q, k, v):
            scores = batch_matmul_nt(q, k) * scale
            if causal:
                scores = ops.masked_fill(scores, mask, float("-inf"))
            return ops.BatchMatMul()(ops.softmax(scores, -1), v)

        attention = composed
        desc = "softmax(masked_fill(BatchMatMul(q, k^T) * scale)) @ v, GRAPH mode"
        if spec["dtype"] == "bf16":
            def attention(q, k, v):
                # CPU BatchMatMul has no bf16 kernel: compute in fp32; the Casts' gradients bring
                # the grads back to bf16.
                return composed(q.astype(ms.float32), k.astype(ms.float32), v.astype(ms.float32)).astype(ms.bfloat16)

            desc += ", bf16 computed in fp32 (no bf16 BatchMatMul on CPU)"

    if spec["backward"]:
        grad_with_sens = ops.GradOperation(get_all=True, sens_param=True)

        @ms.jit
        def fwd_bwd(q, k, v, dout):
            return grad_with_sens(attention)(q, k, v, dout)

        def step():
            grads = fwd_bwd(q, k, v, dout)
            # GRAPH-mode calls may return before the kernels finish; asnumpy waits.
            for g in grads:
                g.asnumpy()
            return grads

        return step, desc + ", GradOperation(sens_param=True) with dout"
    forward = ms.jit(attention)

    def step():
        out = forward(q, k, v)
        out.asnumpy()
        return out

    return step, desc


def build_torch(spec, arrays):
    if importlib.util.find_spec("torch") is None:
        raise Unavailable("skipped: torch not installed")
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(2)
    t_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[spec["dtype"]]
    causal = spec["mask"] == "causal"
    tensors = [torch.from_numpy(a).to(t_dtype) for a in arrays]
    if spec["case"] != "dense":
        tensors = [t.transpose(1, 2).contiguous() for t in tensors]  # BSND -> BNSD for SDPA
    q, k, v, dout = tensors
    for t in (q, k, v):
        t.requires_grad_(spec["backward"])

    if spec["case"] == "packed":
        starts = [0]
        for n in spec["lengths"]:
            starts.append(starts[-1] + n)

        def attention():
            return torch.cat([F.scaled_dot_product_attention(q[:, :, a:b], k[:, :, a:b], v[:, :, a:b],
                                                             is_causal=causal)
                              for a, b in zip(starts[:-1], starts[1:])], dim=2)

        desc = f"torch {torch.__version__} SDPA, one call per sequence"
    else:
        def attention():
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

        desc = f"torch {torch.__version__} F.scaled_dot_product_attention"

    if spec["backward"]:
        def step():
            q.grad = k.grad = v.grad = None  # the last step's grads must not add to this step's peak
            attention().backward(dout)
            return q.grad, k.grad, v.grad

        return step, desc + ", out.backward(dout)"

    def step():
        with torch.no_grad():
            return attention()

    return step, desc


def run_case(spec):
    arrays = make_arrays(spec)
    if spec["impl"] == "torch":
        step, desc = build_torch(spec, arrays)
    else:
        step, desc = build_mindspore(spec, arrays)
    result_bytes = arrays[0].size * DTYPE_BYTES[spec["dtype"]] * (4 if spec["backward"] else 1)
    del arrays
    gc.collect()
    stats, _ = time_steps(step, spec["impl"], spec["warmup"], spec["repeats"])
    return dict(stats, desc=desc, result_bytes=result_bytes)


# ---------------------------------------------------------------- parent side

def measure_case(spec, args, retries):
    return measure(__file__, spec, args.mem_limit_gib, args.timeout, args.patience, retries)


def make_row(spec, result, sgemm_gflops):
    row = dict(impl=spec["impl"], case=spec["case"], dtype=spec["dtype"], s=spec["s"], mask=spec["mask"],
               pass_="fwd+bwd" if spec["backward"] else "fwd", status=result["status"], note="")
    if result["status"] != "ok":
        return row
    lengths = spec.get("lengths", [spec["s"]])
    row.update(median_s=median(result["times"]), min_s=min(result["times"]),
               extra_mib=(result["peak"] - result["base"] - result["result_bytes"]) / 2**20)
    row["gflops"] = useful_flop(lengths, spec["mask"] == "causal", spec["backward"]) / row["median_s"] / 1e9
    row["pct_sgemm"] = 100 * row["gflops"] / sgemm_gflops
    row["others_pct"] = result["others_pct"]
    scope = "timed runs" if result["hwm_reset"] else "whole process (VmHWM not resettable)"
    row["note"] = (f"{result['desc']}; base {result['base'] / GIB:.2f} GiB, peak {result['peak'] / GIB:.2f} GiB "
                   f"over {scope}, results {result['result_bytes'] / 2**20:.0f} MiB; CPU {result['cpu_pct']:.0f}%, "
                   f"other processes {result['others_pct']:.0f}%")
    return row


def write_csv(path, stamp, rows):
    """Appends rows as they are measured: a long run that dies keeps what it measured."""
    append_csv(path, CSV_COLUMNS, [[stamp, r["impl"], r["case"], r["dtype"], r["s"], r["mask"], r["pass_"],
                                    fmt(r, "median_s", ".4f"), fmt(r, "min_s", ".4f"), fmt(r, "gflops", ".1f"),
                                    fmt(r, "pct_sgemm", ".1f"), fmt(r, "extra_mib", ".1f"), r["status"], r["note"]]
                                   for r in rows])


def describe(r):
    return f"{r['impl']:8s} {r['case']:6s} {r['dtype']:4s} {r['s']:6d} {r['mask']:6s} {r['pass_']:7s}"


def print_table(rows, sgemm_gflops):
    head = (f"{'impl':8s} {'case':6s} {'dtyp':4s} {'S':>6s} {'mask':6s} {'pass':7s} {'median ms':>10s} "
            f"{'min ms':>9s} {'GFLOP/s':>8s} {'%sgemm':>7s} {'extra MiB':>10s} {'other%':>6s}  status")
    print("\n" + head + "\n" + "-" * len(head))
    for r in rows:
        if r["status"] == "ok":
            print(f"{describe(r)} {1e3 * r['median_s']:10.1f} {1e3 * r['min_s']:9.1f} {r['gflops']:8.1f} "
                  f"{r['pct_sgemm']:6.0f}% {r['extra_mib']:10.1f} {r['others_pct']:6.0f}  ok")
        else:
            print(f"{describe(r)} {'':57s}  {r['status']}")
    print(f"(numpy sgemm: {sgemm_gflops:.1f} GFLOP/s)")


def report_goals(rows, varlen_tokens):
    """Issue 10's goals, where this run measured what they need."""
    ok = {(r["impl"], r["case"], r["dtype"], r["s"], r["mask"], r["pass_"]): r for r in rows if r["status"] == "ok"}
    print("\nGoals:")

    def verdict(label, keys, test, shown):
        missing = [" ".join(map(str, k)) for k in keys if k not in ok]
        if missing:
            print(f"  {label}: not measured ({', '.join(missing)})")
            return
        got = [ok[k] for k in keys]
        print(f"  {label}: {'met' if test(*got) else 'NOT MET'} ({shown(*got)})")

    for dtype in ("fp32", "bf16"):
        for pass_ in ("fwd", "fwd+bwd"):
            verdict(f"causal {dtype} S=4096 {pass_}: ms_ops no slower than torch SDPA",
                    [("ms_ops", "dense", dtype, 4096, "causal", pass_), ("torch", "dense", dtype, 4096, "causal", pass_)],
                    lambda a, t: a["median_s"] <= t["median_s"],
                    lambda a, t: f"{1e3 * a['median_s']:.0f} vs {1e3 * t['median_s']:.0f} ms, "
                                 f"margin {100 * (t['median_s'] / a['median_s'] - 1):+.0f}%")
    verdict("fp32 causal fwd+bwd S=8192: extra peak <= 64 MiB",
            [("ms_ops", "dense", "fp32", 8192, "causal", "fwd+bwd")],
            lambda a: a["extra_mib"] <= 64, lambda a: f"{a['extra_mib']:.1f} MiB")
    verdict("fp32 causal fwd+bwd extra peak grows at most linearly (S=4096 -> 8192: <= 2.2x, 8 MiB floor)",
            [("ms_ops", "dense", "fp32", s, "causal", "fwd+bwd") for s in (4096, 8192)],
            lambda a, b: b["extra_mib"] <= 2.2 * max(a["extra_mib"], 8.0),
            lambda a, b: f"{a['extra_mib']:.1f} -> {b['extra_mib']:.1f} MiB")
    for dtype in ("fp32", "bf16"):
        verdict(f"varlen {dtype} fwd+bwd: packed at least 2x faster than padded",
                [("ms_ops", "packed", dtype, varlen_tokens, "causal", "fwd+bwd"),
                 ("ms_ops", "padded", dtype, varlen_tokens, "causal", "fwd+bwd")],
                lambda p, q: 2 * p["median_s"] <= q["median_s"],
                lambda p, q: f"{1e3 * p['median_s']:.0f} vs {1e3 * q['median_s']:.0f} ms, "
                             f"{q['median_s'] / p['median_s']:.2f}x")


def cases(args):
    impls = parse_list(args.impl, IMPLS)
    dtypes = parse_list(args.dtypes, tuple(DTYPE_BYTES))
    masks = parse_list(args.masks, ("causal", "full"))
    passes = parse_list(args.passes, ("fwd", "fwd+bwd"))
    common = dict(repeats=args.repeats, warmup=args.warmup)
    for s in parse_list(args.seqlens, cast=int):
        for mask in masks:
            for dtype in dtypes:
                for pass_ in passes:
                    for impl in impls:
                        yield dict(impl=impl, case="dense", dtype=dtype, s=s, mask=mask,
                                   backward=pass_ == "fwd+bwd", **common)
    if args.varlen:
        lengths = varlen_lengths(args.varlen_tokens)
        for dtype in parse_list(args.varlen_dtypes, tuple(DTYPE_BYTES)):
            for case in ("packed", "padded"):
                for impl in (i for i in impls if i != "composed"):
                    yield dict(impl=impl, case=case, dtype=dtype, s=args.varlen_tokens, mask="causal", backward=True,
                               lengths=lengths, **common)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_process_args(parser)
    parser.add_argument("--impl", default=",".join(IMPLS), help="comma-separated: " + ",".join(IMPLS))
    parser.add_argument("--seqlens", default="1024,4096,8192", help="comma-separated S values (dense cases)")
    parser.add_argument("--masks", default="causal,full", help="comma-separated: causal,full")
    parser.add_argument("--dtypes", default="fp32,bf16", help="comma-separated: fp32,bf16")
    parser.add_argument("--passes", default="fwd,fwd+bwd", help="comma-separated: fwd,fwd+bwd")
    parser.add_argument("--varlen", action=argparse.BooleanOptionalAction, default=True,
                        help="the packed vs padded cases (16 sequences, 16384 tokens, causal, fwd+bwd)")
    parser.add_argument("--varlen-tokens", type=int, default=VARLEN_TOKENS,
                        help="total tokens of the 16 packed sequences")
    parser.add_argument("--varlen-dtypes", default="fp32", help="comma-separated dtypes of the varlen cases")
    parser.add_argument("--csv", default=os.path.join(HERE, "results", "attention.csv"),
                        help="results CSV to append to")
    args = parser.parse_args()
    if args.worker:
        worker(json.loads(args.worker), run_case)
        return

    stamp = datetime.datetime.now().isoformat(timespec="seconds")
    sgemm, sgemm_gflops = sgemm_reference(__file__, args.mem_limit_gib, args.timeout, args.patience,
                                          max(args.retries, 3))
    m, k, n = SGEMM_SHAPE
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores")
    print(f"numpy sgemm {m}x{k} @ {k}x{n} fp32: {sgemm_gflops:.1f} GFLOP/s (best of 7; other processes "
          f"{sgemm['others_pct']:.0f}% CPU)", flush=True)
    if args.varlen:
        print(f"varlen lengths: {varlen_lengths(args.varlen_tokens)}")

    rows = []
    for spec in cases(args):
        print(f"{spec['impl']} {spec['case']} {spec['dtype']} S={spec['s']} {spec['mask']} "
              f"{'fwd+bwd' if spec['backward'] else 'fwd'} ...", end=" ", flush=True)
        row = make_row(spec, measure_case(spec, args, args.retries), sgemm_gflops)
        rows.append(row)
        write_csv(args.csv, stamp, [row])
        if row["status"] == "ok":
            print(f"{1e3 * row['median_s']:.1f} ms, {row['gflops']:.1f} GFLOP/s, extra {row['extra_mib']:.1f} MiB "
                  f"[{row['note']}]", flush=True)
        else:
            print(row["status"], flush=True)

    print_table(rows, sgemm_gflops)
    print(f"\nB=1, N1=N2={HEADS}, D={HEAD_DIM}; median of {args.repeats} after {args.warmup} warmup; "
          f"{cpu_model()}. GFLOP/s = useful GEMM work (2 GEMMs forward, 6 forward+backward, visible pairs "
          f"only) / median time; %sgemm against numpy's {sgemm_gflops:.1f} GFLOP/s. Extra MiB = peak RSS "
          f"over the timed runs - RSS with inputs built and framework started - result bytes (output, and "
          f"gradients forward+backward). "
          f"Appended to {args.csv}")
    report_goals(rows, args.varlen_tokens)


if __name__ == "__main__":
    main()
