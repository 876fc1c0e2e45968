"""The example and the benchmark run end to end (each in its own process, as a user runs them)."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_script(relpath, *args, cwd, timeout=300):
    env = dict(os.environ, GLOG_v="3")
    proc = subprocess.run([sys.executable, os.path.join(ROOT, relpath), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (f"{relpath} exited with {proc.returncode}\n"
                                  f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}")
    return proc


def test_moe_train_example_learns(tmp_path):
    """examples/moe_train.py trains (exit 0 means the loss fell) and writes its loss curve into
    --out-dir, nothing into the current directory."""
    cwd, out = tmp_path / "cwd", tmp_path / "out"
    cwd.mkdir()
    run_script("examples/moe_train.py", "--steps", "60", "--out-dir", str(out), cwd=cwd)
    assert (out / "moe_loss.png").stat().st_size > 0
    assert not any(cwd.iterdir())




def test_train_tiny_llm_example_learns_resumes_and_generates(tmp_path):
    """examples/train_tiny_llm.py (the README's first command) trains in GRAPH mode until the loss
    falls (exit 0), writes its checkpoint and curve into --out-dir, and --resume continues from
    the saved step with the saved loss history; examples/generate.py decodes from it."""
    cwd, out = tmp_path / "cwd", tmp_path / "out"
    cwd.mkdir()
    short = ("--seq-len", "32", "--out-dir", str(out))
    first = run_script("examples/train_tiny_llm.py", "--steps", "40", *short, cwd=cwd, timeout=900)
    assert "40 steps in" in first.stdout
    assert (out / "tiny_llm_loss.png").stat().st_size > 0 and (out / "tiny_llm.ckpt").stat().st_size > 0
    resumed = run_script("examples/train_tiny_llm.py", "--steps", "45", "--resume", *short, cwd=cwd, timeout=900)
    assert "at step 40" in resumed.stdout and "5 steps in" in resumed.stdout
    # examples/generate.py decodes from that checkpoint through the paged cache; its prefill logits
    # equal a dense forward of the same tokens, and each fork copies the shared partial block once.
    gen = run_script("examples/generate.py", "--new-tokens", "6", "--out-dir", str(out), cwd=cwd, timeout=900)
    completions = [line for line in gen.stdout.splitlines() if line.startswith("  the old king")]
    assert len(completions) == 4 and all(len(line.split("|")[1]) == 6 for line in completions)
    assert "copy-on-write copies: 4" in gen.stdout
    diff = float(gen.stdout.split("logits: max abs difference ")[1].split()[0])
    assert diff < 1e-4
    # examples/pynative_debug.py steps through block 0 of the same checkpoint in PYNATIVE mode.
    dbg = run_script("examples/pynative_debug.py", "--seq-len", "32", "--out-dir", str(out), cwd=cwd, timeout=900)
    assert "loaded" in dbg.stdout and "(trained 45 steps)" in dbg.stdout
    figure = lambda label: float(dbg.stdout.split(label)[1].split()[0])  # noqa: E731
    assert figure("attention_out vs float64 reference: max abs difference") < 1e-4
    assert figure("unrolled MoE vs the MoE Cell: max abs difference") < 1e-5
    assert figure("stepped op by op vs the Block Cell: max abs difference") < 1e-5
    norms = [float(line.split()[-1]) for line in dbg.stdout.splitlines() if line.startswith("  blocks.0.")]
    assert len(norms) == 8 and all(n > 0 for n in norms)
    assert not any(cwd.iterdir())

def test_train_tiny_llm_dsa(tmp_path):
    """--attention dsa: each layer is ms_ops.nn.DSAttention, dense for the first 10 steps (the
    default warm-up), then sparse; the indexer loss is added to the LM loss and printed per stage.
    40 steps: the script exits non-zero unless the LM loss fell 20%, which 20 steps do not quite
    reach."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    proc = run_script("examples/train_tiny_llm.py", "--attention", "dsa", "--steps", "40", "--seq-len", "32",
                      "--sparse-count", "8", "--out-dir", str(tmp_path / "out"), cwd=cwd, timeout=900)
    found = re.search(r"\(top 8 keys\) indexer loss: first \d+ steps ([\d.]+) -> last \d+ steps ([\d.]+)",
                      proc.stdout)
    assert found and float(found[1]) > 0 and float(found[2]) > 0 and "40 steps in" in proc.stdout
    warm = re.search(r"dense warm-up \(10 steps, every causal key\) indexer loss: first \d+ steps ([\d.]+) -> "
                     r"last \d+ steps ([\d.]+)", proc.stdout)
    assert warm and float(warm[1]) > 0 and float(warm[2]) > 0


def test_paged_kv_cache_example(tmp_path):
    """examples/paged_kv_cache.py reproduces the paging experiment: naive reservation fills about
    a quarter of the cache, paging about 98%, and forks store the shared prompt once."""
    proc = run_script("examples/paged_kv_cache.py", "--out-dir", str(tmp_path), cwd=tmp_path)
    rows = [line.split("|")[1:-1] for line in proc.stdout.splitlines() if line.startswith("| ")]
    util = {int(r[0]): (float(r[1].strip(" %")), float(r[2].strip(" %"))) for r in rows if r[0].strip().isdigit()}
    assert sorted(util) == [10, 25, 50, 100, 200]
    assert all(18 < naive < 32 and 97.5 < paged < 99.5 for naive, paged in util.values())
    blocks = {r[0].strip(): int(r[1]) for r in rows if not r[0].strip().isdigit() and r[1].strip().isdigit()}
    assert blocks["prompt, one copy per request"] == 130 and blocks["prompt, shared (fork)"] == 13
    assert blocks["all tokens, shared + copy-on-write"] == 13 + 10 * 5
    assert "copy-on-write copies: 10 " in proc.stdout
    assert (tmp_path / "paged_kv_cache.png").stat().st_size > 0

@pytest.mark.full
def test_moe_routing_benchmark_quick(tmp_path):
    """benchmarks/bench_moe_routing.py --quick checks both providers agree, times them and
    appends its rows to the CSV it is given."""
    results = tmp_path / "moe_routing.csv"
    run_script("benchmarks/bench_moe_routing.py", "--quick", "--csv", str(results), cwd=tmp_path)
    header, *rows = results.read_text().splitlines()
    assert header.split(",") == ["timestamp", "op", "provider", "mode", "dtype", "shape",
                                 "median_ms", "gbps", "note"]
    assert rows


@pytest.mark.full
def test_attention_benchmark_smoke(tmp_path):
    """benchmarks/bench_attention.py on tiny sizes runs every implementation and the packed vs
    padded cases, and appends one ok row per case to the CSV it is given."""
    results = tmp_path / "attention.csv"
    run_script("benchmarks/bench_attention.py", "--seqlens", "256", "--dtypes", "fp32", "--masks", "causal",
               "--passes", "fwd+bwd", "--varlen-tokens", "512", "--repeats", "1", "--patience", "0",
               "--retries", "0", "--csv", str(results), cwd=tmp_path, timeout=600)
    header, *rows = results.read_text().splitlines()
    assert header.split(",")[:7] == ["timestamp", "impl", "case", "dtype", "S", "mask", "pass"]
    cases = [row.split(",")[1:3] for row in rows]
    assert cases == [["ms_ops", "dense"], ["composed", "dense"], ["torch", "dense"], ["ms_ops", "packed"],
                     ["torch", "packed"], ["ms_ops", "padded"], ["torch", "padded"]]
    assert all(",ok," in row for row in rows)


@pytest.mark.full
def test_linear_attention_benchmark_smoke(tmp_path):
    """benchmarks/bench_linear_attention.py on tiny sizes times all three implementations at every
    length, prints the ratio table and appends one row per case to the CSV it is given."""
    results = tmp_path / "linear_attention.csv"
    proc = run_script("benchmarks/bench_linear_attention.py", "--seq", "64", "130", "--batch", "2", "--repeats", "1",
                      "--csv", str(results), cwd=tmp_path)
    assert "flash/linear" in proc.stdout and "composed/linear" in proc.stdout
    header, *rows = results.read_text().splitlines()
    assert header.split(",") == ["timestamp", "impl", "shape", "median_ms"]
    cases = [row.split(",")[1:3] for row in rows]
    assert cases == [[impl, f"B2_N1_S{s}_D64"] for s in (64, 130) for impl in ("linear", "flash", "composed")]
    assert all(float(row.split(",")[3]) > 0 for row in rows)


@pytest.mark.full
def test_dsa_benchmark_quick(tmp_path):
    """benchmarks/bench_dsa.py --quick runs every implementation of the three DSA operations on
    tiny sizes and appends one ok row per case to the CSV it is given."""
    results = tmp_path / "dsa.csv"
    proc = run_script("benchmarks/bench_dsa.py", "--quick", "--csv", str(results), cwd=tmp_path, timeout=900)
    assert "Goals:" in proc.stdout and "GFLOP/s" in proc.stdout
    header, *rows = results.read_text().splitlines()
    assert header.split(",")[:4] == ["timestamp", "impl", "op", "sizes"]
    cases = [row.split(",")[1:3] for row in rows]
    impls = ("ms_ops", "composed", "torch")
    assert cases == [[impl, op] for op in ("indexer", "attention", "kl_loss") for impl in impls]
    assert all(",ok," in row for row in rows)
