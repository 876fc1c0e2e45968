"""DeepSeek sparse attention benchmark: ms_ops' kernels vs the same math composed from MindSpore
ops (GRAPH mode) and from PyTorch CPU.

One sequence of T tokens (BSND, B=1), fp32, causal (sparse_mode 3). Three operations (``--ops``):

- ``indexer``: the lightning indexer's forward, T=4096, 16 index heads, D=128, one key head,
  top k=512. ms_ops: ``ms_ops.lightning_indexer`` (scores and top-k tile by tile). composed /
  torch: ``ReLU(q k^T)`` for every (token, head, key) (the T x 16 x T buffer), weighted sum over
  heads, causal mask, ``topk``.
- ``attention``: sparse flash attention forward+backward (gradients to query, key, value and
  both rope parts), T=4096, N1=16 query heads, N2=1 key head, D=512 + 64 rope, Dv=512, k=512
  keys per token (the first k causal keys for the first tokens, then a seeded random causal
  selection). ms_ops: ``ms_ops.sparse_flash_attention`` under ``ms.grad``. composed: the same
  sparse math from MindSpore ops, in chunks of CHUNK queries (a whole [T, k, D + Dr] gather
  with its gradient would not fit in memory): the chunk's selected keys and values gathered,
  ``softmax(q k_sel^T * scale) v_sel`` by batched matmuls, ``ms.grad`` of one GRAPH-compiled
  chunk function, the key and value gradients summed over the chunks. torch: dense attention
  ``softmax(mask(q k^T + q_r k_r^T) * scale) v`` with a T x T mask of the selection (SDPA with
  that mask), and autograd.
- ``kl_loss``: the indexer's KL loss and its gradients to the index query, key and weights at
  the same sizes (16 index heads of D=128). ms_ops: ``ms_ops.sparse_lightning_indexer_kl_loss``
  (one fused kernel) under ``ms.grad``, with the statistics of the sparse attention computed
  beforehand. composed / torch: the target from the main attention's masked dense scores
  (softmax per head, summed over heads, L1-normalised, no gradient), the indexer's masked
  log-softmax, ``sum p (log p - log q)`` and autograd.

Every case runs in its own process (this script with ``--worker``), measured by ``_harness.py``
as in every benchmark: inputs built, framework started (base RSS), warmup calls (the first
compiles), peak-RSS mark reset, timed repeats; the median is reported. Extra peak memory = peak
RSS over the timed runs - base - the bytes of the results. GFLOP/s counts the useful work alike
for all (indexer: 2 D per head and causal pair; attention: 6 (D + Dr) + 6 Dv per head and
selected pair; KL loss: 2 N1 (D + Dr) + 6 Ni Di per selected pair), beside numpy's float32 sgemm
on the same machine. Rows are appended to ``--csv`` (default ``benchmarks/results/dsa.csv``).

Run (repo installed; torch optional):
    python benchmarks/bench_dsa.py            # full sizes (several GiB for the composed cases)
    python benchmarks/bench_dsa.py --quick    # T=256 and small heads: a smoke run of every path
"""
import argparse
import datetime
import gc
import importlib.util
import json
import math
import os

from _harness import (GIB, SGEMM_SHAPE, Unavailable, add_process_args, append_csv, cpu_model, fmt, measure, median,
                      sgemm_reference, time_steps, worker)

HERE = os.path.dirname(os.path.abspath(__file__))
IMPLS = ("ms_ops", "composed", "torch")
OPS = ("indexer", "attention", "kl_loss")
CHUNK = 256  # queries per GRAPH call of the composed sparse attention
FULL = dict(t=4096, n1=16, d=512, dr=64, dv=512, ni=16, di=128, k=512)
QUICK = dict(t=256, n1=4, d=64, dr=16, dv=64, ni=4, di=32, k=32)
CSV_COLUMNS = ["timestamp", "impl", "op", "sizes", "median_s", "min_s", "gflops", "pct_sgemm", "extra_peak_mib",
               "status", "note"]


def selected_pairs(t, k):
    return sum(min(i + 1, k) for i in range(t))


def useful_flop(op, z):
    if op == "indexer":
        return 2 * z["di"] * z["ni"] * z["t"] * (z["t"] + 1) // 2
    pairs = selected_pairs(z["t"], z["k"])
    if op == "attention":
        return pairs * z["n1"] * (6 * (z["d"] + z["dr"]) + 6 * z["dv"])
    return pairs * (2 * z["n1"] * (z["d"] + z["dr"]) + 6 * z["ni"] * z["di"])


# ---------------------------------------------------------------- worker side (one case each)

def make_arrays(z):
    """Seeded float32 inputs (BSND, B=1) and the int32 selection [1, T, 1, k] (-1 padded)."""
    import numpy as np
    rng = np.random.default_rng(0)
    t, k = z["t"], z["k"]

    def normal(*shape, scale=1.0):
        return (scale * rng.standard_normal((1, t) + shape)).astype(np.float32)

    arrays = dict(q=normal(z["n1"], z["d"], scale=0.1), qr=normal(z["n1"], z["dr"], scale=0.1),
                  k=normal(1, z["d"], scale=0.1), kr=normal(1, z["dr"], scale=0.1), v=normal(1, z["dv"]),
                  dout=normal(z["n1"], z["dv"]), qi=normal(z["ni"], z["di"]), ki=normal(1, z["di"]),
                  w=normal(z["ni"]))
    idx = np.full((1, t, 1, k), -1, np.int32)
    for i in range(t):
        keys = np.arange(i + 1) if i < k else np.sort(rng.choice(i + 1, k, replace=False))
        idx[0, i, 0, :len(keys)] = keys
    arrays["idx"] = idx
    return arrays


def selection_mask(idx, t):
    """bool [T, T]: True where key s is not selected for token i."""
    import numpy as np
    keep = np.zeros((t, t), bool)
    rows = np.repeat(np.arange(t), idx.shape[-1])
    cols = idx.reshape(-1)
    keep[rows[cols >= 0], cols[cols >= 0]] = True
    return ~keep


def build_ms_ops(op, z, a):
    import mindspore as ms
    try:
        import ms_ops
    except Exception as exc:  # a broken build must read as this row's status, not a crash
        raise Unavailable(f"ms_ops import failed: {type(exc).__name__}: {exc}") from exc
    t = {name: ms.Tensor(x) for name, x in a.items()}
    scale = 1.0 / math.sqrt(z["d"] + z["dr"])
    sparse_count = z["k"]
    if op == "indexer":
        def indexer(q, k, w):
            return ms_ops.lightning_indexer(q, k, w, sparse_count=sparse_count)

        fn = ms.jit(indexer)
        return (lambda: fn(t["qi"], t["ki"], t["w"])), "ms_ops.lightning_indexer, GRAPH mode"

    def attention(q, k, v, idx, qr, kr):
        return ms_ops.sparse_flash_attention(q, k, v, idx, scale, query_rope=qr, key_rope=kr)

    if op == "attention":
        def loss(q, k, v, qr, kr, idx, dout):
            return (attention(q, k, v, idx, qr, kr)[0] * dout).sum()

        fn = ms.jit(ms.grad(loss, grad_position=(0, 1, 2, 3, 4)))
        return (lambda: fn(t["q"], t["k"], t["v"], t["qr"], t["kr"], t["idx"], t["dout"])), \
            "ms_ops.sparse_flash_attention, ms.grad of sum(out * dout), GRAPH mode"
    _, mx, sm = ms.jit(attention)(t["q"], t["k"], t["v"], t["idx"], t["qr"], t["kr"])

    def kl(qi, ki, w, q, k, qr, kr, idx, mx, sm):
        return ms_ops.sparse_lightning_indexer_kl_loss(q, k, qi, ki, w, idx, mx, sm, scale, query_rope=qr,
                                                       key_rope=kr).sum()

    fn = ms.jit(ms.grad(kl, grad_position=(0, 1, 2)))
    return (lambda: fn(t["qi"], t["ki"], t["w"], t["q"], t["k"], t["qr"], t["kr"], t["idx"], mx, sm)), \
        "ms_ops.sparse_lightning_indexer_kl_loss (one fused kernel), ms.grad, GRAPH mode"


def composed_attention(z, a, scale):
    """Sparse attention forward+backward from MindSpore ops, CHUNK queries per GRAPH call: each
    chunk gathers its [CHUNK, k, D + Dr] keys and [CHUNK, k, Dv] values (the -1 entries point at
    key 0 and are masked), and adds its key and value gradients to the running sums."""
    import mindspore as ms
    import numpy as np
    from mindspore import ops
    tn, n1, chunk = z["t"], z["n1"], min(CHUNK, z["t"])
    bmm_nt, bmm = ops.BatchMatMul(transpose_b=True), ops.BatchMatMul()

    def loss(q, qr, k, kr, v, idx, dout):
        sel = ops.maximum(idx, 0)
        keys = ops.gather(ops.concat((k, kr), -1), sel, 0)
        s = bmm_nt(ops.concat((q, qr), -1), keys) * scale
        s = ops.masked_fill(s, (idx < 0).expand_dims(1), float("-inf"))
        out = bmm(ops.softmax(s, -1), ops.gather(v, sel, 0))
        return (out * dout).sum()

    grad = ms.grad(loss, grad_position=(0, 1, 2, 3, 4))

    @ms.jit
    def chunk_step(q, qr, k, kr, v, idx, dout, dk, dkr, dv):
        gq, gqr, gk, gkr, gv = grad(q, qr, k, kr, v, idx, dout)
        return gq, gqr, dk + gk, dkr + gkr, dv + gv

    k, kr, v = (ms.Tensor(a[name][0, :, 0]) for name in ("k", "kr", "v"))
    pieces = [(slice(c0, c0 + chunk),) for c0 in range(0, tn, chunk)]
    chunks = [tuple(ms.Tensor(a[name][0][c]) for name in ("q", "qr")) +
              (ms.Tensor(a["idx"][0, c[0], 0]), ms.Tensor(a["dout"][0][c])) for c in pieces]
    zeros = [ms.Tensor(np.zeros(x.shape, np.float32)) for x in (k, kr, v)]

    def step():
        dk, dkr, dv = zeros
        dq = []
        for q, qr, idx, dout in chunks:
            gq, gqr, dk, dkr, dv = chunk_step(q, qr, k, kr, v, idx, dout, dk, dkr, dv)
            dq += [gq, gqr]
        return dq + [dk, dkr, dv]

    return step, (f"sparse attention in chunks of {chunk} queries: gathered k, v [{chunk}, k, D], batched "
                  f"matmuls, ms.grad of one GRAPH-compiled chunk function, {n1} heads")


def build_composed(op, z, a):
    """The same math from MindSpore ops (GRAPH mode): dense [T, T] (per head) buffers and masks."""
    import mindspore as ms
    import numpy as np
    from mindspore import ops
    tn = z["t"]
    scale = 1.0 / math.sqrt(z["d"] + z["dr"])
    ni, di, sparse_count = z["ni"], z["di"], z["k"]
    t = {name: ms.Tensor(x) for name, x in a.items() if name != "idx"}

    def index_scores(qi, ki, w):
        """[T, T]: the ReLU scores of every (token, head, key) ([T, Ni, T]), weighted over heads."""
        scores = ops.relu(ops.matmul(qi[0].reshape(-1, di), ki[0, :, 0].T)).reshape(tn, ni, tn)
        return (scores * w[0].expand_dims(-1)).sum(1)

    if op == "indexer":
        def indexer(qi, ki, w, causal):
            return ops.topk(ops.masked_fill(index_scores(qi, ki, w), causal, float("-inf")), sparse_count)

        fn = ms.jit(indexer)
        causal = ms.Tensor(np.triu(np.ones((tn, tn), bool), 1))
        return (lambda: fn(t["qi"], t["ki"], t["w"], causal)), \
            "ReLU(q k^T) [T, Ni, T], weighted sum, topk; GRAPH mode"
    if op == "attention":
        return composed_attention(z, a, scale)
    masked = ms.Tensor(selection_mask(a["idx"], tn))

    def main_scores(q, k, qr, kr, masked):
        """[N1, T, T] scaled scores of the main attention, -inf off the selection."""
        s = ops.matmul(q[0].swapaxes(0, 1), k[0, :, 0].T) + ops.matmul(qr[0].swapaxes(0, 1), kr[0, :, 0].T)
        return ops.masked_fill(s * scale, masked, float("-inf"))

    def kl(qi, ki, w, q, k, qr, kr, masked):
        p = ops.softmax(main_scores(q, k, qr, kr, masked), -1).sum(0)
        p = ops.stop_gradient(p / p.sum(-1, keepdims=True))
        log_q = ops.log_softmax(ops.masked_fill(index_scores(qi, ki, w), masked, -1e30), -1)
        log_p = ops.log(ops.masked_fill(p, masked, 1.0))
        return ops.masked_fill(p * (log_p - log_q), masked, 0.0).sum()

    fn = ms.jit(ms.grad(kl, grad_position=(0, 1, 2)))
    return (lambda: fn(t["qi"], t["ki"], t["w"], t["q"], t["k"], t["qr"], t["kr"], masked)), \
        "dense masked KL over [T, T] (+ [N1, T, T] target), ms.grad; GRAPH mode"


def build_torch(op, z, a):
    if importlib.util.find_spec("torch") is None:
        raise Unavailable("skipped: torch not installed")
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(2)
    tn = z["t"]
    scale = 1.0 / math.sqrt(z["d"] + z["dr"])
    t = {name: torch.from_numpy(x) for name, x in a.items() if name != "idx"}
    if op == "indexer":
        causal = torch.ones(tn, tn, dtype=torch.bool).triu(1)

        def step():
            with torch.no_grad():
                scores = torch.relu(t["qi"][0].reshape(-1, z["di"]) @ t["ki"][0, :, 0].T).reshape(tn, z["ni"], tn)
                index = (scores * t["w"][0][..., None]).sum(1).masked_fill(causal, float("-inf"))
                return torch.topk(index, z["k"])

        return step, f"torch {torch.__version__}: ReLU(q k^T) [T, Ni, T], weighted sum, topk"
    masked = torch.from_numpy(selection_mask(a["idx"], tn))
    if op == "attention":
        q = torch.cat([t["q"], t["qr"]], -1).transpose(1, 2).requires_grad_()
        k = torch.cat([t["k"], t["kr"]], -1).transpose(1, 2).requires_grad_()
        v = t["v"].transpose(1, 2).requires_grad_()
        dout = t["dout"].transpose(1, 2)

        def step():
            q.grad = k.grad = v.grad = None  # the last step's grads must not add to this step's peak
            out = F.scaled_dot_product_attention(q, k.expand(-1, z["n1"], -1, -1), v.expand(-1, z["n1"], -1, -1),
                                                 attn_mask=~masked, scale=scale)
            out.backward(dout)
            return q.grad, k.grad, v.grad

        return step, f"torch {torch.__version__}: SDPA with the selection as a [T, T] mask, backward"
    qi, ki, w = (t[name].clone().requires_grad_() for name in ("qi", "ki", "w"))

    def step():
        qi.grad = ki.grad = w.grad = None
        # The target is rebuilt every step, as the other implementations do.
        with torch.no_grad():
            s = (t["q"][0].transpose(0, 1) @ t["k"][0, :, 0].T + t["qr"][0].transpose(0, 1) @ t["kr"][0, :, 0].T)
            target = torch.softmax((s * scale).masked_fill(masked, float("-inf")), -1).sum(0)
            target = target / target.sum(-1, keepdim=True)
            del s
        scores = torch.relu(qi[0].reshape(-1, z["di"]) @ ki[0, :, 0].T).reshape(tn, z["ni"], tn)
        log_q = torch.log_softmax((scores * w[0][..., None]).sum(1).masked_fill(masked, -1e30), -1)
        loss = (target * (torch.log(target.masked_fill(masked, 1.0)) - log_q)).masked_fill(masked, 0.0).sum()
        loss.backward()
        return qi.grad, ki.grad, w.grad

    return step, f"torch {torch.__version__}: dense masked KL over [T, T], backward"


def result_bytes(op, z):
    t = z["t"]
    if op == "indexer":
        return t * z["k"] * 8
    if op == "attention":
        return 4 * t * (z["n1"] * (z["d"] + z["dr"]) + z["d"] + z["dr"] + z["dv"])
    return 4 * t * (z["ni"] * z["di"] + z["di"] + z["ni"])


def finish(results):
    """Waits for the results: a GRAPH-mode call may return before its kernels finish."""
    for r in results:
        if hasattr(r, "asnumpy"):
            r.asnumpy()


def run_case(spec):
    z, op, impl = spec["sizes"], spec["op"], spec["impl"]
    arrays = make_arrays(z)
    if impl != "torch":
        import mindspore as ms
        ms.set_context(mode=ms.GRAPH_MODE)
    build = {"ms_ops": build_ms_ops, "composed": build_composed, "torch": build_torch}[impl]
    step, desc = build(op, z, arrays)
    del arrays
    gc.collect()
    stats, _ = time_steps(step, impl, spec["warmup"], spec["repeats"], finish)
    return dict(stats, desc=desc, result_bytes=result_bytes(op, z))


# ---------------------------------------------------------------- parent side

def measure_case(spec, args, retries):
    return measure(__file__, spec, args.mem_limit_gib, args.timeout, args.patience, retries)


def sizes_label(z):
    return f"T{z['t']}_N{z['n1']}_D{z['d']}+{z['dr']}_Dv{z['dv']}_Ni{z['ni']}_Di{z['di']}_k{z['k']}"


def make_row(spec, result, sgemm_gflops):
    row = dict(impl=spec["impl"], op=spec["op"], status=result["status"], note="")
    if result["status"] != "ok":
        return row
    row.update(median_s=median(result["times"]), min_s=min(result["times"]),
               extra_mib=(result["peak"] - result["base"] - result["result_bytes"]) / 2**20)
    row["gflops"] = useful_flop(spec["op"], spec["sizes"]) / row["median_s"] / 1e9
    row["pct_sgemm"] = 100 * row["gflops"] / sgemm_gflops
    scope = "timed runs" if result["hwm_reset"] else "whole process (VmHWM not resettable)"
    row["note"] = (f"{result['desc']}; base {result['base'] / GIB:.2f} GiB, peak {result['peak'] / GIB:.2f} GiB "
                   f"over {scope}; CPU {result['cpu_pct']:.0f}%, other processes {result['others_pct']:.0f}%")
    return row


def write_csv(path, stamp, label, row):
    """Appends one row as soon as it is measured: a long run that dies keeps what it measured."""
    append_csv(path, CSV_COLUMNS, [[stamp, row["impl"], row["op"], label, fmt(row, "median_s", ".4f"),
                                    fmt(row, "min_s", ".4f"), fmt(row, "gflops", ".1f"), fmt(row, "pct_sgemm", ".1f"),
                                    fmt(row, "extra_mib", ".1f"), row["status"], row["note"]]])


def report_goals(rows):
    """Issue 11's goals, where this run measured what they need."""
    ok = {(r["impl"], r["op"]): r for r in rows if r["status"] == "ok"}
    print("\nGoals:")
    for op, other, factor in (("indexer", "composed", 5), ("indexer", "torch", 4), ("attention", "composed", 3),
                              ("kl_loss", "composed", 3)):
        if ("ms_ops", op) not in ok or (other, op) not in ok:
            print(f"  {op}: ms_ops >= {factor}x faster than {other}: not measured")
            continue
        ratio = ok[(other, op)]["median_s"] / ok[("ms_ops", op)]["median_s"]
        print(f"  {op}: ms_ops >= {factor}x faster than {other}: {'met' if ratio >= factor else 'NOT MET'} "
              f"({ratio:.1f}x)")
    if ("ms_ops", "indexer") in ok:
        extra = ok[("ms_ops", "indexer")]["extra_mib"]
        print(f"  indexer: ms_ops extra peak < 64 MiB: {'met' if extra < 64 else 'NOT MET'} ({extra:.1f} MiB)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_process_args(parser)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repeat, no waiting: a smoke run")
    parser.add_argument("--impl", nargs="+", choices=IMPLS, default=list(IMPLS))
    parser.add_argument("--ops", nargs="+", choices=OPS, default=list(OPS))
    parser.add_argument("--csv", default=os.path.join(HERE, "results", "dsa.csv"), help="results CSV to append to")
    args = parser.parse_args()
    if args.worker:
        worker(json.loads(args.worker), run_case)
        return
    if args.quick:
        args.repeats, args.patience, args.retries = 1, 0.0, 0
    sizes = QUICK if args.quick else FULL
    label = sizes_label(sizes)

    stamp = datetime.datetime.now().isoformat(timespec="seconds")
    _, sgemm_gflops = sgemm_reference(__file__, args.mem_limit_gib, args.timeout, args.patience,
                                      0 if args.quick else 3)
    m, k, n = SGEMM_SHAPE
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; numpy sgemm {m}x{k} @ {k}x{n} fp32: "
          f"{sgemm_gflops:.1f} GFLOP/s; sizes {label}, fp32, causal", flush=True)

    rows = []
    for op in args.ops:
        for impl in args.impl:
            spec = dict(impl=impl, op=op, sizes=sizes, repeats=args.repeats, warmup=args.warmup)
            print(f"{impl} {op} ...", end=" ", flush=True)
            row = make_row(spec, measure_case(spec, args, args.retries), sgemm_gflops)
            rows.append(row)
            write_csv(args.csv, stamp, label, row)
            print(f"{1e3 * row['median_s']:.1f} ms" if row["status"] == "ok" else row["status"], flush=True)

    head = f"{'op':10s} {'impl':9s} {'median ms':>10s} {'min ms':>9s} {'GFLOP/s':>8s} {'%sgemm':>7s} {'extra MiB':>10s}"
    print("\n" + head + "\n" + "-" * len(head))
    for r in rows:
        if r["status"] == "ok":
            print(f"{r['op']:10s} {r['impl']:9s} {1e3 * r['median_s']:10.1f} {1e3 * r['min_s']:9.1f} "
                  f"{r['gflops']:8.1f} {r['pct_sgemm']:6.0f}% {r['extra_mib']:10.1f}")
        else:
            print(f"{r['op']:10s} {r['impl']:9s} {r['status']}")
    print(f"(numpy sgemm: {sgemm_gflops:.1f} GFLOP/s; median of {args.repeats} after {args.warmup} warmup; "
          f"appended to {args.csv})")
    report_goals(rows)


if __name__ == "__main__":
    main()
