"""Fused linear + cross-entropy benchmark: ms_ops vs composed MindSpore vs PyTorch CPU.

Forward+backward of ``loss = cross_entropy(input @ weight.T, target)`` (mean reduction) w.r.t.
input [BT, H] and weight [V, H], fp32 and bf16, at BT=4096, H=1024 and 2048, V=32000 and
V=128256, in one run. Implementations (``--impl``):

- ``ms_auto``: ``ms_ops.fused_linear_cross_entropy(...)`` with its default mode;
  ``ms_gif`` / ``ms_saving`` / ``ms_perf``: ``mode="grad_in_forward"`` / ``"memory_saving"`` /
  ``"high_performance"``; each under ``ms.jit(ms.value_and_grad(...))`` (GRAPH mode: PyNative's
  dispatcher busy-waits and steals a core).
- ``composed``: ``ops.cross_entropy(MatMul(transpose_b=True)(x, w), target)``, the same graph
  mode and ``value_and_grad``. ``transpose_b`` is how ``nn.Dense`` multiplies: ``x @ w.T`` would
  also materialise a transposed copy of the weight.
- ``torch``: ``F.linear_cross_entropy`` with ``LinearCrossEntropyOptions()`` (its chunked,
  memory-efficient path; the resolved policy and chunk size are printed) if the installed torch
  has it, else ``F.cross_entropy(F.linear(...))``; ``loss.backward()``, 2 threads.

Every (implementation, V, dtype) case runs in its own process (this script with ``--worker``),
so each case's peak memory is its own. The worker builds the inputs (seeded; input ~N(0, 1),
weight ~0.02 N(0, 1), so the loss is ~ln V), reads its resident memory (cold base), starts the
framework with a tiny unrelated forward+backward (8x8, compiled in GRAPH mode for MindSpore),
reads its resident memory again (base), runs the warmup (the first call compiles), resets the
kernel's peak-RSS mark (``5`` into ``/proc/self/clear_refs``), runs the timed repeats and reads
the peak (``VmHWM``). Extra peak memory = peak - base - the bytes of the two gradients: what a
training step costs beyond the tensors it must hold anyway, in a process whose framework is up,
as in any training run. It includes what the case's first call left behind (its compiled graph,
a framework's cached memory), which a training loop pays too. The framework's one-time start-up
(runtime and compiler code paged in, memory and thread pools created: about 15 MiB for
MindSpore, whatever the graph) is not the loss's cost; the cold extra (peak - cold base -
gradients) includes it and is recorded too. The parent polls each worker's RSS
every 0.1 s and kills it above ``--mem-limit-gib`` (the machine has 24 GiB and no swap;
RLIMIT_AS is useless against MindSpore's large virtual reservations), or when the machine has
under 1 GiB available: that row then reads "out of memory". Before each case the parent waits
(``--patience``) for other processes to go quiet, and measures again (``--retries``) when they
took > 25% CPU during the timed runs; every row records that share.

GFLOP/s counts the useful work of every implementation alike: 3 GEMMs of 2*BT*H*V (forward
logits, grad_input, grad_weight), although a memory-saving path recomputes the logits (a 4th).
The reference is numpy's float32 sgemm, 4096x2048 @ 2048x4096 on both cores, in its own process
(the best of 7 runs: a peak, and the least disturbed by other load). It is printed beside every
figure, with the CPU's model name, so that runs on different CPUs can be compared: compare
implementations only within one run.

Run (repo installed, e.g. ``pip install -e .``; torch optional, ``pip install torch==2.13.0``):
    python benchmarks/bench_cross_entropy.py          # full sizes, ~1 h on an idle machine
    python benchmarks/bench_cross_entropy.py --quick  # BT=512 H=256 V=4000,16032: a smoke run
"""
import argparse
import datetime
import gc
import importlib.util
import json
import os
from dataclasses import dataclass

from _harness import (GIB, SGEMM_SHAPE, Unavailable, add_process_args, append_csv, cpu_model, fmt, measure, median,
                      parse_list, sgemm_reference, time_steps, worker)

HERE = os.path.dirname(os.path.abspath(__file__))
IMPLS = ("ms_auto", "ms_gif", "ms_saving", "ms_perf", "composed", "torch")
# None: the function's default mode.
MS_OPS_MODES = {"ms_auto": None, "ms_gif": "grad_in_forward", "ms_saving": "memory_saving",
                "ms_perf": "high_performance"}
DTYPE_BYTES = {"fp32": 4, "bf16": 2}
CSV_COLUMNS = ["timestamp", "impl", "dtype", "BT", "H", "V", "median_s", "min_s", "gflops",
               "pct_sgemm", "extra_peak_gib", "extra_cold_gib", "status", "note"]


@dataclass(frozen=True)
class Sizes:
    bt: int
    hidden: tuple
    vocab: tuple


FULL = Sizes(4096, (1024, 2048), (32000, 128256))
QUICK = Sizes(512, (256,), (4000, 16032))  # the same 4x step in V as the full run


def useful_flop(bt, hidden, vocab):
    return 3 * 2 * bt * hidden * vocab


# ---------------------------------------------------------------- worker side (one case each)

def make_arrays(bt, hidden, vocab):
    import numpy as np
    rng = np.random.default_rng(0)
    x = rng.standard_normal((bt, hidden), np.float32)
    w = rng.standard_normal((vocab, hidden), np.float32)
    w *= 0.02
    return x, w, rng.integers(0, vocab, bt).astype(np.int32)


def build_mindspore(impl, dtype, arrays):
    """A step running fwd+bwd to completion, and a description of the implementation."""
    if impl in MS_OPS_MODES:
        try:
            import ms_ops
        except Exception as exc:  # a broken build must read as this row's status, not a crash
            raise Unavailable(f"ms_ops import failed: {type(exc).__name__}: {exc}") from exc
        fused = getattr(ms_ops, "fused_linear_cross_entropy", None)
        if fused is None:
            raise Unavailable("ms_ops.fused_linear_cross_entropy not available")
    import mindspore as ms
    from mindspore import ops

    ms.set_context(mode=ms.GRAPH_MODE)
    ms_dtype = {"fp32": ms.float32, "bf16": ms.bfloat16}[dtype]
    x_np, w_np, t_np = arrays
    x, w = ms.Tensor(x_np).astype(ms_dtype), ms.Tensor(w_np).astype(ms_dtype)
    t = ms.Tensor(t_np)

    if impl in MS_OPS_MODES:
        mode = MS_OPS_MODES[impl]
        if mode is None:
            def loss_fn(x, w, t):
                return fused(x, w, t)
        else:
            def loss_fn(x, w, t):
                return fused(x, w, t, mode=mode)

        desc = f"ms_ops.fused_linear_cross_entropy(mode={mode or 'default'!r}), GRAPH mode"
    else:
        matmul_nt = ops.MatMul(transpose_b=True)

        def composed(x, w, t):
            return ops.cross_entropy(matmul_nt(x, w), t)

        loss_fn, desc = composed, "ops.cross_entropy(MatMul(transpose_b=True)), GRAPH mode"
        if dtype == "bf16":
            def loss_fn(x, w, t):
                # CPU MatMul (and Transpose) have no bf16 kernels: compute in fp32; the Cast's
                # gradient brings the grads back to bf16.
                return composed(x.astype(ms.float32), w.astype(ms.float32), t)

            desc += ", bf16 cast to fp32 (no bf16 MatMul on CPU)"

    fwd_bwd = ms.jit(ms.value_and_grad(loss_fn, grad_position=(0, 1)))

    def step():
        loss, (d_x, d_w) = fwd_bwd(x, w, t)
        # GRAPH-mode calls may return before the kernels finish; asnumpy waits (zero-copy on CPU).
        d_w.asnumpy()
        d_x.asnumpy()
        return float(loss.asnumpy())

    return step, desc


def torch_options_desc(options, bt, hidden, vocab, dtype):
    """The chunking policy torch resolves for this call ('auto' if this torch cannot say)."""
    import torch
    adjust = getattr(options, "_adjust", None)
    if adjust is None:
        return "auto"
    r = adjust(bt, hidden, vocab, dtype, torch.device("cpu"))
    return (f"acc_policy={r.acc_policy}, chunking={r.chunking_method}, "
            f"batch_chunk_size={r.batch_chunk_size}, acc_dtype={r.acc_dtype}")


def build_torch(dtype, arrays):
    if importlib.util.find_spec("torch") is None:
        raise Unavailable("skipped: torch not installed")
    import warnings

    import torch
    import torch.nn.functional as F

    torch.set_num_threads(2)
    t_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    x_np, w_np, t_np = arrays
    x = torch.from_numpy(x_np).to(t_dtype).requires_grad_()
    w = torch.from_numpy(w_np).to(t_dtype).requires_grad_()
    t = torch.from_numpy(t_np).long()  # the chunked path needs int64 targets

    if hasattr(F, "linear_cross_entropy"):
        options = torch.nn.LinearCrossEntropyOptions()
        # Falling back to the reference path is a warning in torch; here it must not go unseen.
        warnings.filterwarnings("error", message="linear_cross_entropy: ``options`` ignored")

        def loss_fn():
            return F.linear_cross_entropy(x, w, t, options=options)

        desc = (f"torch {torch.__version__} F.linear_cross_entropy, chunked "
                f"(LinearCrossEntropyOptions(): "
                f"{torch_options_desc(options, *x.shape, w.shape[0], t_dtype)})")
    else:
        def loss_fn():
            return F.cross_entropy(F.linear(x, w).float(), t)

        desc = f"torch {torch.__version__} F.cross_entropy(F.linear(...)) (no linear_cross_entropy)"

    def step():
        x.grad = w.grad = None  # the last step's grads must not add to this step's peak
        loss = loss_fn()
        loss.backward()
        return float(loss)

    return step, desc


def run_case(spec):
    bt, hidden, vocab, dtype = spec["bt"], spec["hidden"], spec["vocab"], spec["dtype"]
    arrays = make_arrays(bt, hidden, vocab)
    if spec["impl"] == "torch":
        step, desc = build_torch(dtype, arrays)
    else:
        step, desc = build_mindspore(spec["impl"], dtype, arrays)
    del arrays
    gc.collect()
    stats, loss = time_steps(step, spec["impl"], spec["warmup"], spec["repeats"])
    return dict(stats, desc=desc, loss=loss, grad_bytes=(bt + vocab) * hidden * DTYPE_BYTES[dtype])


# ---------------------------------------------------------------- parent side

def measure_case(spec, args, patience, retries):
    return measure(__file__, spec, args.mem_limit_gib, args.timeout, patience, retries)


def make_row(spec, result, sgemm_gflops):
    row = dict(impl=spec["impl"], dtype=spec["dtype"], bt=spec["bt"], hidden=spec["hidden"],
               vocab=spec["vocab"], status=result["status"], note="")
    if result["status"] != "ok":
        if "max_rss" in result:
            row["note"] = f"max RSS seen {result['max_rss'] / GIB:.1f} GiB"
        return row
    logits = spec["bt"] * spec["vocab"] * 4
    row.update(median_s=median(result["times"]), min_s=min(result["times"]),
               extra_gib=(result["peak"] - result["base"] - result["grad_bytes"]) / GIB,
               extra_cold_gib=(result["peak"] - result["cold_base"] - result["grad_bytes"]) / GIB)
    row["gflops"] = useful_flop(spec["bt"], spec["hidden"], spec["vocab"]) / row["median_s"] / 1e9
    row["pct_sgemm"] = 100 * row["gflops"] / sgemm_gflops
    row["x_logits"] = row["extra_gib"] * GIB / logits
    row["desc"], row["others_pct"] = result["desc"], result["others_pct"]
    peak_scope = "timed runs" if result["hwm_reset"] else "whole process (VmHWM not resettable)"
    row["note"] = (f"{result['desc']}; loss {result['loss']:.4f}; base {result['base'] / GIB:.2f}"
                   f" GiB (cold {result['cold_base'] / GIB:.2f}), after warmup {result['warm'] / GIB:.2f}, peak {result['peak'] / GIB:.2f}"
                   f" over {peak_scope}, grads {result['grad_bytes'] / GIB:.2f}; extra = "
                   f"{row['x_logits']:.1f}x the fp32 logits; CPU {result['cpu_pct']:.0f}%, "
                   f"other processes {result['others_pct']:.0f}%; GFLOP/s on 3 GEMMs")
    return row


def write_csv(path, stamp, rows):
    """Appends rows as they are measured: a run of an hour that dies keeps what it measured."""
    append_csv(path, CSV_COLUMNS, [[stamp, r["impl"], r["dtype"], r["bt"], r["hidden"], r["vocab"],
                                    fmt(r, "median_s", ".3f"), fmt(r, "min_s", ".3f"),
                                    fmt(r, "gflops", ".1f"), fmt(r, "pct_sgemm", ".1f"),
                                    fmt(r, "extra_gib", ".3f"), fmt(r, "extra_cold_gib", ".3f"), r["status"],
                                    r["note"]] for r in rows])


def print_table(rows, sgemm_gflops):
    head = (f"{'impl':10s} {'dtype':5s} {'H':>5s} {'V':>7s} {'median s':>9s} {'min s':>8s} "
            f"{'GFLOP/s':>8s} {'sgemm':>6s} {'%sgemm':>7s} {'extra GiB':>10s} {'x logits':>9s} "
            f"{'other%':>6s}  status")
    print("\n" + head + "\n" + "-" * len(head))
    for r in rows:
        if r["status"] == "ok":
            print(f"{r['impl']:10s} {r['dtype']:5s} {r['hidden']:5d} {r['vocab']:7d} "
                  f"{r['median_s']:9.2f} {r['min_s']:8.2f} {r['gflops']:8.1f} {sgemm_gflops:6.0f} "
                  f"{r['pct_sgemm']:6.0f}% {r['extra_gib']:10.3f} {r['x_logits']:9.2f} "
                  f"{r['others_pct']:6.0f}  ok")
        else:
            print(f"{r['impl']:10s} {r['dtype']:5s} {r['hidden']:5d} {r['vocab']:7d} {'':62s}  "
                  f"{r['status']}")


def report_goals(rows, sizes):
    """Issue 9's goals, per H at the smallest V of the run (flatness: against the largest)."""
    ok = {(r["impl"], r["dtype"], r["hidden"], r["vocab"]): r for r in rows if r["status"] == "ok"}
    small, large = min(sizes.vocab), max(sizes.vocab)
    print(f"\nGoals (at V={small}; 'flat in V' compares V={large}):")

    def verdict(label, needed, test, shown):
        missing = [f"{i} {d} H={h} V={v}" for i, d, h, v in needed if (i, d, h, v) not in ok]
        if missing:
            print(f"  {label}: not measured (no result for {', '.join(missing)})")
            return
        got = [ok[k] for k in needed]
        print(f"  {label}: {'met' if test(*got) else 'NOT MET'} ({shown(*got)})")

    for hidden in sizes.hidden:
        for dtype in sorted({r["dtype"] for r in rows}):
            case = f"H={hidden} {dtype}"
            auto, sav, perf, tor = ((i, dtype, hidden, small) for i in ("ms_auto", "ms_saving", "ms_perf", "torch"))
            verdict(f"{case} default mode time <= torch's", [auto, tor],
                    lambda a, t: a["median_s"] <= t["median_s"],
                    lambda a, t: f"{a['median_s']:.2f} vs {t['median_s']:.2f} s")
            verdict(f"{case} default mode extra peak <= 1/4 of torch's", [auto, tor],
                    lambda a, t: a["extra_gib"] <= t["extra_gib"] / 4,
                    lambda a, t: f"{a['extra_gib']:.3f} vs {t['extra_gib']:.3f} GiB")
            verdict(f"{case} high-performance >= 90% of sgemm (3 GEMMs)", [perf],
                    lambda p: p["pct_sgemm"] >= 90, lambda p: f"{p['pct_sgemm']:.0f}%")
            verdict(f"{case} memory-saving time <= 1.1 x 4/3 x high-performance", [sav, perf],
                    lambda s_, p: s_["median_s"] <= 1.1 * 4 / 3 * p["median_s"],
                    lambda s_, p: f"{s_['median_s']:.2f} vs {1.1 * 4 / 3 * p['median_s']:.2f} s")
            if small != large:
                verdict(f"{case} memory-saving extra flat in V (<= 1.5x)",
                        [sav, ("ms_saving", dtype, hidden, large)],
                        lambda s_, b: b["extra_gib"] <= 1.5 * max(s_["extra_gib"], 0.01),
                        lambda s_, b: f"{s_['extra_gib']:.3f} -> {b['extra_gib']:.3f} GiB")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_process_args(parser, patience=None, retries=None, patience_note=" (default 120, 0 with --quick)",
                     retries_note=" (default 2, 0 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help=f"BT={QUICK.bt} H={QUICK.hidden} V={QUICK.vocab} (smoke run)")
    parser.add_argument("--impl", default=",".join(IMPLS), help="comma-separated: " +
                        ",".join(IMPLS))
    parser.add_argument("--vocab", help="comma-separated V values (default: the size set's)")
    parser.add_argument("--hidden", help="comma-separated H values (default: the size set's)")
    parser.add_argument("--dtypes", default="fp32,bf16", help="comma-separated: fp32,bf16")
    parser.add_argument("--csv", default=os.path.join(HERE, "results", "cross_entropy.csv"),
                        help="results CSV to append to")
    args = parser.parse_args()
    if args.worker:
        worker(json.loads(args.worker), run_case)
        return

    sizes = QUICK if args.quick else FULL
    if args.vocab:
        sizes = Sizes(sizes.bt, sizes.hidden, tuple(parse_list(args.vocab, cast=int)))
    if args.hidden:
        sizes = Sizes(sizes.bt, tuple(parse_list(args.hidden, cast=int)), sizes.vocab)
    impls = parse_list(args.impl, IMPLS)
    dtypes = parse_list(args.dtypes, tuple(DTYPE_BYTES))
    if "torch" in impls and importlib.util.find_spec("torch") is None:
        print("PyTorch is not installed: the torch rows are skipped "
              "(pip install torch==2.13.0 for the CPU build)")

    patience = args.patience if args.patience is not None else (0 if args.quick else 120)
    if args.retries is None:
        args.retries = 0 if args.quick else 2
    # A few seconds per try: worth more tries than a case to get an undisturbed reference.
    stamp = datetime.datetime.now().isoformat(timespec="seconds")
    sgemm, sgemm_gflops = sgemm_reference(__file__, args.mem_limit_gib, args.timeout, patience,
                                          max(args.retries, 5))
    m, k, n = SGEMM_SHAPE
    sgemm_s = median(sgemm["times"])
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores")
    print(f"numpy sgemm {m}x{k} @ {k}x{n} fp32: peak {sgemm_gflops:.1f} GFLOP/s (best of 7; "
          f"median {2 * m * k * n / sgemm_s / 1e9:.1f}; other processes "
          f"{sgemm['others_pct']:.0f}% CPU)", flush=True)
    rows = [dict(impl="numpy_sgemm", dtype="fp32", bt=m, hidden=k, vocab=n, median_s=sgemm_s,
                 min_s=min(sgemm["times"]), gflops=sgemm_gflops, pct_sgemm=100.0, status="ok",
                 note=f"reference: GFLOP/s of the best of 7 runs on 2 threads; BT/H/V columns "
                      f"are M/K/N; other processes {sgemm['others_pct']:.0f}% CPU; {cpu_model()}")]
    write_csv(args.csv, stamp, rows)

    for hidden in sizes.hidden:
        for vocab in sizes.vocab:
            for dtype in dtypes:
                for impl in impls:
                    spec = dict(impl=impl, dtype=dtype, bt=sizes.bt, hidden=hidden, vocab=vocab,
                                repeats=args.repeats, warmup=args.warmup)
                    print(f"{impl} {dtype} BT={sizes.bt} H={hidden} V={vocab} ...", end=" ",
                          flush=True)
                    row = make_row(spec, measure_case(spec, args, patience, args.retries), sgemm_gflops)
                    rows.append(row)
                    write_csv(args.csv, stamp, [row])
                    if row["status"] == "ok":
                        print(f"{row['median_s']:.2f} s, {row['gflops']:.1f} GFLOP/s "
                              f"({row['pct_sgemm']:.0f}% of sgemm {sgemm_gflops:.0f}), extra "
                              f"{row['extra_gib']:.3f} GiB  [{row['note']}]", flush=True)
                    else:
                        print(f"{row['status']} {row['note']}", flush=True)

    case_rows = rows[1:]
    print_table(case_rows, sgemm_gflops)
    print(f"\nBT={sizes.bt}; forward+backward; median of {args.repeats} after "
          f"{args.warmup} warmup; {cpu_model()}. GFLOP/s = 3 GEMMs of 2*BT*H*V / median time for every row (a "
          f"memory-saving path's recompute is not counted); %sgemm against numpy's "
          f"{sgemm_gflops:.1f} GFLOP/s. Extra GiB = peak RSS over the timed runs - RSS with the "
          f"inputs built and the framework started - gradient bytes (the CSV's extra_cold_gib "
          f"counts the framework's start-up too); 'x logits' relates it to a BT x V fp32 logits tensor. "
          f"other%: CPU used by other processes during the timed runs (100 = one core). "
          f"Appended to {args.csv}")
    for desc in sorted({r["desc"] for r in case_rows if "desc" in r}):
        print(f"  {desc}")
    report_goals(case_rows, sizes)


if __name__ == "__main__":
    main()
