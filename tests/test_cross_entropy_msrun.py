"""Vocabulary parallelism for real: 2 workers started by MindSpore's msrun on 127.0.0.1 (mccl
collectives on CPU) each hold half of the classifier; loss, input gradient and each rank's weight
gradient must equal the single-process result. Runs the user-facing examples/vocab_parallel_msrun.sh;
examples/vocab_parallel.py compares and reports. The script's console output must be just one
RESULT line per rank (no MindSpore warnings), and a successful run must not leave its log directory."""
import json
import os
import signal
import socket
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT_S = 240


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_msrun(tmp_path, *args):
    env = dict(os.environ)
    # msrun starts its workers with the `python` on PATH, which must be this environment's.
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.pop("LOG_DIR", None)  # the script's own temporary log directory is under test
    tmp_dir = tmp_path / "tmp"
    tmp_dir.mkdir()
    env["TMPDIR"] = str(tmp_dir)
    env["MASTER_PORT"] = str(free_port())
    # The script's own timeout comes first: on it msrun stops its workers.
    env["MSRUN_TIMEOUT"] = str(TIMEOUT_S - 40)
    cmd = ["bash", os.path.join(ROOT, "examples", "vocab_parallel_msrun.sh"), *args]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, text=True)
    try:
        out, _ = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        # SIGTERM first: the script passes it on as SIGINT, on which msrun kills its workers (they
        # run in sessions of their own, out of reach of a kill of this process group).
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
        pytest.fail(f"msrun did not finish within {TIMEOUT_S} s\n{out[-6000:]}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    lines = out.splitlines()
    results = [json.loads(line[len("RESULT "):]) for line in lines if line.startswith("RESULT ")]
    return proc.returncode, out, results, sorted(os.listdir(tmp_dir))


# grad_in_forward's token blocks: 97 tokens, V_local = 500 (1000 over 2 ranks), 32 rows per block
# (32 * 500 float32 logits) -> blocks of 32, 32, 32, 1.
BLOCKS_OF_32 = str(32 * 500 * 4)


@pytest.mark.parametrize("args", [("--graph", "--mode", "memory_saving"), ("--mode", "high_performance"),
                                  ("--graph", "--mode", "grad_in_forward", "--block-bytes", BLOCKS_OF_32),
                                  ("--block-bytes", BLOCKS_OF_32), ("--dynamic", "--block-bytes", BLOCKS_OF_32)],
                         ids=["graph_memory_saving", "pynative_high_performance", "graph_grad_in_forward_blocks",
                              "pynative_auto_blocks", "graph_auto_dynamic_one_block"])
def test_two_workers_match_single_process(tmp_path, args):
    code, out, results, leftover = run_msrun(tmp_path, *args)
    # On a failure the script keeps its logs and prints their last lines: all in `out`.
    assert code == 0, f"msrun exit {code}\n{out[-6000:]}"
    # Each rank's RESULT line exactly once (msrun's --join used to tail the worker logs as well).
    assert sorted(r["rank"] for r in results) == [0, 1], out[-6000:]
    for r in results:
        assert r["ranks"] == 2
        assert r["ok"], f"rank {r['rank']} differs from the single-process result: {r['max_rel_err']}"
    assert results[0]["loss"] == pytest.approx(results[1]["loss"], rel=1e-6)
    warnings = [line for line in out.splitlines() if "WARNING" in line]
    assert not warnings, "\n".join(warnings[:20])
    assert not leftover, f"left behind in TMPDIR: {leftover}"
