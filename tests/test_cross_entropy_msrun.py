"""Vocabulary parallelism for real: 2 workers started by MindSpore's msrun on 127.0.0.1 (mccl
collectives on CPU) each hold half of the classifier; loss, input gradient and each rank's weight
gradient must equal the single-process result. Runs the user-facing examples/vocab_parallel_msrun.sh;
examples/vocab_parallel.py compares and reports."""
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
    log_dir = tmp_path / "logs"
    env["LOG_DIR"] = str(log_dir)
    env["MASTER_PORT"] = str(free_port())
    cmd = ["bash", os.path.join(ROOT, "examples", "vocab_parallel_msrun.sh"), *args]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, text=True)
    try:
        out, _ = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"msrun did not finish within {TIMEOUT_S} s")
    finally:
        # msrun's workers live in its session: nothing may outlive the test.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    results = []
    for name in sorted(os.listdir(log_dir)) if log_dir.exists() else []:
        text = (log_dir / name).read_text(errors="replace")
        results += [json.loads(line[len("RESULT "):]) for line in text.splitlines() if line.startswith("RESULT ")]
    return proc.returncode, out, results, log_dir


@pytest.mark.parametrize("args", [("--graph",), ("--mode", "high_performance")],
                         ids=["graph_memory_saving", "pynative_high_performance"])
def test_two_workers_match_single_process(tmp_path, args):
    code, out, results, log_dir = run_msrun(tmp_path, *args)
    logs = "\n".join((log_dir / n).read_text(errors="replace")[-3000:] for n in sorted(os.listdir(log_dir))) \
        if log_dir.exists() else ""
    assert sorted(r["rank"] for r in results) == [0, 1], f"msrun exit {code}\n{out[-3000:]}\n{logs}"
    for r in results:
        assert r["ranks"] == 2
        assert r["ok"], f"rank {r['rank']} differs from the single-process result: {r['max_rel_err']}"
    assert results[0]["loss"] == pytest.approx(results[1]["loss"], rel=1e-6)
    assert code == 0, out[-3000:]
