"""Linear attention vs softmax attention, forward time against sequence length (seed 003's experiment).

One attention layer, batch 32, one head of D = 64 (BNSD ``[32, 1, S, 64]``), S from 128 to 6000,
forward only, fp32, GRAPH mode (PyNative's dispatcher busy-waits and steals a core). Implementations
(``--impl``):

- ``linear``: ``ms_ops.linear_attention`` (non-causal, ELU + 1 features): O(S·D²) per head.
- ``flash``: ``ms_ops.flash_attention_score`` (scale 1/sqrt(D), no mask): O(S²·D), no S x S buffer.
- ``composed``: ``softmax(Q Kᵀ / sqrt(D)) V`` from MindSpore ops, which holds the ``[B, S, S]``
  scores; skipped when they would exceed ``--composed-limit-gib``.

Each case: one warmup call (it compiles), then the median of ``--repeats`` timed calls. The table
shows milliseconds and the ratio of each softmax attention's time to linear attention's (> 1: linear
attention is faster). The goal of the experiment: the ratio grows about linearly in S, and linear
attention beats flash attention from S >= 512. Rows are appended to ``--csv``; ``--plot`` draws
time against S when matplotlib is installed.

Run (repo installed):
    python benchmarks/bench_linear_attention.py                           # S = 128 .. 6000
    python benchmarks/bench_linear_attention.py --seq 128 256 --batch 4 --repeats 2   # smoke run
"""
import argparse
import csv
import datetime
import math
import os
import statistics
import time

import mindspore as ms
import numpy as np
from mindspore import nn, ops

import ms_ops

SEQS = (128, 256, 512, 1024, 2048, 4096, 6000)
IMPLS = ("linear", "flash", "composed")
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "linear_attention.csv")


class Linear(nn.Cell):
    def construct(self, q, k, v):
        return ms_ops.linear_attention(q, k, v)


class Flash(nn.Cell):
    def __init__(self, dim):
        super().__init__()
        self.scale = 1.0 / math.sqrt(dim)

    def construct(self, q, k, v):
        return ms_ops.flash_attention_score(q, k, v, 1, scalar_value=self.scale, input_layout="BNSD")


class Composed(nn.Cell):
    def __init__(self, dim):
        super().__init__()
        self.scale = 1.0 / math.sqrt(dim)

    def construct(self, q, k, v):
        scores = ops.matmul(q, k.swapaxes(-1, -2)) * self.scale
        return ops.matmul(ops.softmax(scores, axis=-1), v)


def finish(out):
    """Waits for ``out``: reading one element back needs the whole call done (the runtime may
    return before it finishes, and ``ms.runtime.synchronize`` is for devices, not the CPU)."""
    out[0, 0, 0, 0].asnumpy()


def time_case(cell, args, repeats):
    """Median milliseconds of ``repeats`` calls after one warmup."""
    finish(cell(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        finish(cell(*args))
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, nargs="+", default=list(SEQS), help="sequence lengths")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--impl", nargs="+", choices=IMPLS, default=list(IMPLS))
    parser.add_argument("--composed-limit-gib", type=float, default=4.0,
                        help="skip composed attention when its fp32 scores exceed this")
    parser.add_argument("--csv", default=RESULTS, help="append rows here ('' to skip)")
    parser.add_argument("--plot", default="", help="save a plot of time against S here (needs matplotlib)")
    args = parser.parse_args()

    ms.set_context(mode=ms.GRAPH_MODE)
    cells = {"linear": Linear(), "flash": Flash(args.dim), "composed": Composed(args.dim)}
    rng = np.random.default_rng(3)
    results = {impl: {} for impl in args.impl}
    stamp = datetime.datetime.now().isoformat(timespec="seconds")
    rows = []
    for s in args.seq:
        q, k, v = (ms.Tensor(rng.standard_normal((args.batch, 1, s, args.dim), np.float32)) for _ in range(3))
        for impl in args.impl:
            score_gib = args.batch * s * s * 4 / 2**30
            if impl == "composed" and score_gib > args.composed_limit_gib:
                results[impl][s] = None
                continue
            results[impl][s] = time_case(cells[impl], (q, k, v), args.repeats)
            rows.append([stamp, impl, f"B{args.batch}_N1_S{s}_D{args.dim}", f"{results[impl][s]:.3f}"])

    header = f"{'S':>6} " + " ".join(f"{impl + ' ms':>13}" for impl in args.impl)
    others = [impl for impl in args.impl if impl != "linear"] if "linear" in args.impl else []
    header += " " + " ".join(f"{impl + '/linear':>16}" for impl in others)
    print(f"forward, fp32, B={args.batch}, N=1, D={args.dim}, median of {args.repeats}")
    print(header)
    for s in args.seq:
        line = f"{s:>6} " + " ".join(
            f"{results[impl][s]:>13.2f}" if results[impl][s] is not None else f"{'skipped':>13}" for impl in args.impl)
        for impl in others:
            t, base = results[impl][s], results["linear"][s]
            line += " " + (f"{t / base:>16.2f}" if t is not None else f"{'-':>16}")
        print(line)

    if args.csv:
        new = not os.path.exists(args.csv)
        os.makedirs(os.path.dirname(os.path.abspath(args.csv)), exist_ok=True)
        with open(args.csv, "a", newline="") as f:
            writer = csv.writer(f)
            if new:
                writer.writerow(["timestamp", "impl", "shape", "median_ms"])
            writer.writerows(rows)
    if args.plot:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib is not installed: no plot")
            return
        fig, ax = plt.subplots(figsize=(6, 4))
        for impl in args.impl:
            xs = [s for s in args.seq if results[impl][s] is not None]
            ax.plot(xs, [results[impl][s] for s in xs], marker="o", label=impl)
        ax.set_xlabel("sequence length S")
        ax.set_ylabel("forward time (ms)")
        ax.set_title(f"attention forward, B={args.batch}, D={args.dim}, fp32")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot)
        print(f"plot saved to {args.plot}")


if __name__ == "__main__":
    main()
