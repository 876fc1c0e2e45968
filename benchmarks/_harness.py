"""The process plumbing the benchmarks share: one case per worker process, its time and memory
measured the same way everywhere, and the parent's guards and CSV rows.

Worker side (``python bench_x.py --worker '<spec json>'``): ``worker`` runs one case (or the numpy
sgemm reference) and prints its result as a ``RESULT {json}`` line. ``time_steps`` measures a
step function: the inputs built, the framework started with a tiny unrelated graph (base RSS),
warmup calls (the first compiles), the peak-RSS mark reset, then the timed repeats.

Parent side: ``measure`` waits for a quiet machine, spawns the worker, kills it above an RSS limit,
when the machine runs short of memory or after a timeout, and measures again a case other
processes disturbed (> 25% CPU during its timed runs), keeping the least disturbed run.
``sgemm_reference`` gives numpy's float32 sgemm GFLOP/s on the same machine, the yardstick of
every benchmark's GFLOP/s column; ``append_csv`` appends rows as soon as they are measured, so a
long run that dies keeps what it measured.
"""
import argparse
import csv
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback

GIB = 2**30
SGEMM_SHAPE = (4096, 2048, 4096)
MIN_AVAILABLE_GIB = 1
QUIET_PCT = 25


class Unavailable(Exception):
    """The implementation cannot run here; its message is the row's status."""


def proc_status_kib(field, pid="self"):
    """A ``VmRSS``/``VmHWM`` line of /proc/<pid>/status in KiB; None once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def mem_available_kib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def busy_cpu_seconds():
    """CPU seconds all processes have used (/proc/stat): other load skews the timings."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = ticks
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds():
    t = os.times()
    return t.user + t.system


def cpu_snapshot():
    return own_cpu_seconds(), busy_cpu_seconds(), time.perf_counter()


def cpu_usage(snap0, snap1):
    """This process's CPU % and other processes' CPU % between two snapshots (100 = one core)."""
    own, busy, wall = (b - a for a, b in zip(snap0, snap1))
    return 100 * own / wall, 100 * max(0.0, busy - own) / wall


def wait_until_idle(patience):
    """Waits up to ``patience`` s for a second in which other processes use < 15% CPU: a build
    or test run beside a case of many seconds would skew its time."""
    start = time.monotonic()
    while time.monotonic() - start < patience:
        busy0, own0 = busy_cpu_seconds(), own_cpu_seconds()
        time.sleep(1.0)
        if busy_cpu_seconds() - busy0 - (own_cpu_seconds() - own0) < 0.15:
            return


def reset_peak_rss():
    """Resets VmHWM to the current RSS; False where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def median(values):
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def parse_list(text, allowed=None, cast=str):
    """A comma-separated CLI value as a list; unknown values end the run with the choices."""
    items = [cast(s) for s in text.split(",") if s.strip()]
    bad = [i for i in items if allowed is not None and i not in allowed]
    if bad:
        raise SystemExit(f"unknown value(s) {bad}; choose from {', '.join(allowed)}")
    return items


# ---------------------------------------------------------------- worker side

def start_framework(impl):
    """A tiny forward+backward unrelated to the case, in the case's framework (torch, else
    MindSpore in its current mode): what any training process has run before the measured step,
    so the framework's own start-up memory is in the base RSS, not in the case's extra."""
    if impl == "torch":
        import torch
        a = torch.ones(8, 8, requires_grad=True)
        (a * a).sum().backward()
        return
    import mindspore as ms
    import numpy as np

    def tiny(a, b):
        return (a * b).sum()

    a = ms.Tensor(np.ones((8, 8), np.float32))
    _, (d_a, _) = ms.jit(ms.value_and_grad(tiny, grad_position=(0, 1)))(a, a)
    d_a.asnumpy()


def time_steps(step, impl, warmup, repeats, finish=None):
    """Times ``step()`` ``repeats`` times after ``warmup`` calls. Called with the inputs built and
    everything else released: ``cold_base`` is the RSS then, ``base`` after ``start_framework``,
    ``warm`` after the warmup, ``peak`` the RSS high-water mark over the timed runs only (where
    ``hwm_reset``; else over the whole process). ``finish(result)`` waits for a step's results
    (GRAPH-mode calls may return before their kernels end). Returns (the measurements, a dict
    ready for ``worker``'s JSON line, and the last step's result)."""
    gc.collect()
    cold_base = proc_status_kib("VmRSS") * 1024
    start_framework(impl)
    gc.collect()
    base = proc_status_kib("VmRSS") * 1024
    for _ in range(warmup):
        result = step()
        if finish is not None:
            finish(result)
        del result
    warm = proc_status_kib("VmRSS") * 1024
    hwm_reset = reset_peak_rss()
    times, last = [], None
    snap = cpu_snapshot()
    for _ in range(repeats):
        last = None  # the last step's results must not add to this step's peak
        start = time.perf_counter()
        last = step()
        if finish is not None:
            finish(last)
        times.append(time.perf_counter() - start)
    cpu_pct, others_pct = cpu_usage(snap, cpu_snapshot())
    return dict(status="ok", times=times, cold_base=cold_base, base=base, warm=warm,
                peak=proc_status_kib("VmHWM") * 1024, hwm_reset=hwm_reset, cpu_pct=cpu_pct,
                others_pct=others_pct), last


def run_sgemm():
    """numpy's float32 sgemm of SGEMM_SHAPE, 7 timed runs after one warmup (numpy's threads)."""
    import numpy as np
    m, k, n = SGEMM_SHAPE
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k), np.float32), rng.standard_normal((k, n), np.float32)
    a @ b
    times = []
    snap = cpu_snapshot()
    for _ in range(7):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    cpu_pct, others_pct = cpu_usage(snap, cpu_snapshot())
    return dict(status="ok", times=times, cpu_pct=cpu_pct, others_pct=others_pct)


def worker(spec, run_case):
    """Runs one case (``run_case(spec)``, or the sgemm reference for impl "sgemm") and prints
    its result dict as the last stdout line, JSON after 'RESULT '. Unavailable becomes the
    status, any other failure an "error: ..." status with the traceback on stderr."""
    try:
        result = run_sgemm() if spec["impl"] == "sgemm" else run_case(spec)
    except Unavailable as exc:
        result = dict(status=str(exc))
    except Exception as exc:
        traceback.print_exc()
        first_line = (str(exc).strip().splitlines() or [""])[0]
        result = dict(status=f"error: {type(exc).__name__}: {first_line}"[:300])
    print("RESULT " + json.dumps(result), flush=True)


# ---------------------------------------------------------------- parent side

def spawn(script, spec, mem_limit_gib, timeout):
    """Runs ``script --worker <spec>``, killing it above ``mem_limit_gib`` of RSS, when the
    machine runs short of memory, or after ``timeout`` s; its result dict (``max_rss`` in bytes
    added to a killed case's)."""
    env = dict(os.environ, GLOG_v=os.environ.get("GLOG_v", "3"))
    cmd = [sys.executable, os.path.abspath(script), "--worker", json.dumps(spec)]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        start, max_rss, killed = time.monotonic(), 0, None
        while proc.poll() is None:
            rss = proc_status_kib("VmRSS", proc.pid) or 0
            max_rss = max(max_rss, rss)
            elapsed = time.monotonic() - start
            if rss > mem_limit_gib * 2**20:
                killed = f"out of memory (> {mem_limit_gib:g} GiB RSS; killed after {elapsed:.0f} s)"
            elif mem_available_kib() < MIN_AVAILABLE_GIB * 2**20:
                # Other processes hold memory too: the kernel's OOM killer must not have to choose.
                killed = (f"out of memory (machine below {MIN_AVAILABLE_GIB} GiB available at "
                          f"{rss / 2**20:.1f} GiB RSS; killed after {elapsed:.0f} s)")
            elif elapsed > timeout:
                killed = f"timed out (> {timeout:g} s)"
            if killed:
                proc.kill()
                proc.wait()
                return dict(status=killed, max_rss=max_rss * 1024)
            time.sleep(0.1)
        out.seek(0)
        results = [line[7:] for line in out.read().splitlines() if line.startswith("RESULT ")]
        if results:
            return json.loads(results[-1])
        err.seek(0)
        tail = [line for line in err.read().splitlines() if line.strip()][-1:]
        return dict(status=f"worker exited with code {proc.returncode}: {' '.join(tail)}"[:300])


def measure(script, spec, mem_limit_gib, timeout, patience, retries):
    """``spawn`` on a quiet machine if possible: waits up to ``patience`` s for quiet before each
    try; a case disturbed by other processes (> QUIET_PCT % CPU during its timed runs) is measured
    again, ``retries`` times, and the least disturbed result kept."""
    best = None
    for _ in range(1 + retries):
        wait_until_idle(patience)
        result = spawn(script, spec, mem_limit_gib, timeout)
        if result["status"] != "ok":
            return result
        if best is None or result["others_pct"] < best["others_pct"]:
            best = result
        if best["others_pct"] <= QUIET_PCT:
            break
    return best


def sgemm_reference(script, mem_limit_gib, timeout, patience, retries):
    """(result, GFLOP/s of the best run) of numpy's sgemm in a worker of ``script``; the run
    ends when the reference fails."""
    result = measure(script, dict(impl="sgemm"), mem_limit_gib, timeout, patience, retries)
    if result["status"] != "ok":
        raise SystemExit(f"sgemm reference failed: {result['status']}")
    m, k, n = SGEMM_SHAPE
    return result, 2 * m * k * n / min(result["times"]) / 1e9


def fmt(row, key, spec):
    """``row[key]`` formatted with ``spec``; empty when the row lacks it (a failed case)."""
    return format(row[key], spec) if key in row else ""


def append_csv(path, columns, lines):
    """Appends ``lines`` (lists of cells) to the CSV at ``path``, with the ``columns`` header when
    the file is new."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        writer = csv.writer(f)
        if new:
            writer.writerow(columns)
        writer.writerows(lines)


def add_process_args(parser, patience=60.0, retries=1, patience_note="", retries_note=""):
    """The CLI flags every benchmark shares: --worker (internal), --repeats, --warmup,
    --mem-limit-gib, --timeout, --patience, --retries; a benchmark that resolves the last two's
    defaults itself passes None and says how in the notes."""
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per case (median)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs first (the first compiles)")
    parser.add_argument("--mem-limit-gib", type=float, default=20.0,
                        help="kill a case whose RSS exceeds this (the machine has 24 GiB)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per case")
    parser.add_argument("--patience", type=float, default=patience,
                        help="seconds to wait for other processes to go quiet before each case" + patience_note)
    parser.add_argument("--retries", type=int, default=retries,
                        help=f"re-measurements of a case disturbed by other processes (> {QUIET_PCT}%% CPU)"
                        + retries_note)
