"""The twin's NPU cost profile (aicore/twin/twin_profile.h): kernels with known traffic
(tests/twin/twin_profile_cases.cpp) report exactly that traffic per block and in total, the
estimated Atlas A2 time follows the model twin_profile.cpp states, and nothing is reported when the
profile is off."""
import ctypes
import json

import numpy as np
import pytest
from twin_cases import P, build_cases

V, U, I = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int
SIGNATURES = {"twin_profile_add": [V, V, V, U], "twin_profile_matmul": [V, V, V, I]}
N = 4096
CLOCK_HZ = 1.8e9
SCALAR_PER_ISSUE, SCALAR_UB_CYCLES, SCALAR_GM_CYCLES = 8, 2, 20
PIPES = ("MTE2", "MTE3", "MTE1", "FIX", "V", "M")

# One block of twin_profile_add: two 4096-float copies in, one Add (16 KiB / 256 B = 64 repeats),
# one copy out, 8 GetValue on GM and 8 SetValue on UB.
ADD_BLOCK = dict(mte2_bytes=2 * N * 4, mte2_calls=2, mte3_bytes=N * 4, mte3_calls=1, mte1_bytes=0, fix_bytes=0,
                 vec_instr=1, vec_repeats=64, cube_macs=0, cube_macs_f32=0, cube_calls=0, scalar_gm=8,
                 scalar_ub=8, scalar_est=8 + 8 + SCALAR_PER_ISSUE * 4)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_cases(tmp_path_factory.mktemp("twin_profile"), "twin_profile_cases", SIGNATURES)


@pytest.fixture(autouse=True)
def env(monkeypatch):
    monkeypatch.setenv("MS_OPS_TWIN_STRICT", "1")
    monkeypatch.delenv("MS_OPS_TWIN_PROFILE", raising=False)
    monkeypatch.delenv("MS_OPS_TWIN_PROFILE_JSON", raising=False)


def run_add(lib, blocks):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(blocks * N).astype(np.float32)
    y = rng.standard_normal(blocks * N).astype(np.float32)
    z = np.zeros_like(x)
    assert lib.twin_profile_add(P(x), P(y), P(z), blocks) == 0
    np.testing.assert_array_equal(z, x + y)


def profiled(monkeypatch, tmp_path, run):
    path = tmp_path / "profile.jsonl"
    monkeypatch.setenv("MS_OPS_TWIN_PROFILE_JSON", str(path))
    run()
    monkeypatch.delenv("MS_OPS_TWIN_PROFILE_JSON")
    return [json.loads(line) for line in path.read_text().splitlines()]


def counts(record):
    return {k: record[k] for k in ADD_BLOCK}


def test_add_counts_per_block_and_total(lib, monkeypatch, tmp_path):
    [rec] = profiled(monkeypatch, tmp_path, lambda: run_add(lib, 3))
    assert (rec["kernel"], rec["blocks"], rec["cores"]) == ("twin_profile_add", 3, 3)
    assert [b["block"] for b in rec["per_block"]] == [0, 1, 2]
    for b in rec["per_block"]:
        assert counts(b) == ADD_BLOCK
    assert counts(rec["total"]) == {k: 3 * v for k, v in ADD_BLOCK.items()}


def test_add_estimate_follows_the_model(lib, monkeypatch, tmp_path):
    [rec] = profiled(monkeypatch, tmp_path, lambda: run_add(lib, 3))
    b = rec["per_block"][0]
    # 3 active cores get more than the per-core cap of 128 B/cycle: MTE2 moves 32 KiB in 256 cycles.
    mte2 = 2 * N * 4 / 128
    scalar = SCALAR_PER_ISSUE * 4 + 8 * SCALAR_UB_CYCLES + 8 * SCALAR_GM_CYCLES
    assert b["bound"] == "MTE2"
    assert b["pipe_us"]["MTE2"] == pytest.approx(mte2 / CLOCK_HZ * 1e6, abs=1e-3)
    assert b["pipe_us"]["V"] == pytest.approx(64 / CLOCK_HZ * 1e6, abs=1e-3)
    assert b["pipe_us"]["S"] == pytest.approx(scalar / CLOCK_HZ * 1e6, abs=1e-3)
    assert b["est_us"] == pytest.approx((mte2 + scalar) / CLOCK_HZ * 1e6, abs=1e-3)
    assert b["serial_us"] == pytest.approx(sum(b["pipe_us"][p] for p in PIPES) + b["pipe_us"]["S"], abs=3e-3)
    assert rec["est_us"] == pytest.approx(b["est_us"], abs=1e-3)


def test_matmul_counts(lib, monkeypatch, tmp_path):
    n = 128
    rng = np.random.default_rng(1)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    c = np.zeros((n, n), np.float32)
    [rec] = profiled(monkeypatch, tmp_path, lambda: lib.twin_profile_matmul(P(a), P(b), P(c), n))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    t = rec["total"]
    assert (t["cube_macs_f32"], t["cube_macs"], t["cube_calls"]) == (n ** 3, 0, 1)
    assert (t["mte2_bytes"], t["mte1_bytes"], t["fix_bytes"]) == (2 * n * n * 4, 2 * n * n * 4, n * n * 4)
    assert (t["vec_instr"], t["mte3_bytes"], t["scalar_gm"], t["scalar_ub"]) == (0, 0, 0, 0)
    # fp32 cube: 1024 MACs/cycle, 2048 cycles against MTE2's 1024.
    assert rec["bound"] == "M"
    assert rec["pipe_us"]["M"] == pytest.approx(n ** 3 / 1024 / CLOCK_HZ * 1e6, abs=1e-3)


def test_printed_report(lib, monkeypatch, capfd):
    monkeypatch.setenv("MS_OPS_TWIN_PROFILE", "1")
    run_add(lib, 2)
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("ms_ops profile twin_profile_add:")]
    assert len(lines) == 3
    assert "block 0: MTE2 32768 B, MTE3 16384 B" in lines[0]
    assert "vector 1 instr / 64 repeats" in lines[1]
    assert "2 blocks on 2 cores, total: MTE2 65536 B" in lines[2]
    assert "(bound MTE2)" in lines[2]


def test_off_by_default(lib, tmp_path, capfd):
    run_add(lib, 1)
    assert "ms_ops profile" not in capfd.readouterr().err
    assert list(tmp_path.iterdir()) == []
