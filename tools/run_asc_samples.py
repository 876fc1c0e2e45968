#!/usr/bin/env python3
"""Runs public AscendC samples of CANN's asc-devkit, unchanged, on the CPU twin, with their own data
and verdict scripts.

Usage: tools/run_asc_samples.py ASC_DEVKIT_CHECKOUT [--work DIR] [--only NAME[,NAME...] | --sweep]

ASC_DEVKIT_CHECKOUT is a local checkout of CANN's asc-devkit (this script fetches nothing). Its
samples (examples/**/<name>.asc) are single sources: the kernel, then a host `main` that drives it
through ACL on the NPU. For each sample of SAMPLES this script
  * takes the kernel part (everything before `main`) as it is, leaving out only the host includes
    (ACL, the samples' data_utils.h, host tiling and registration headers), with the sample's own build defines
    (SCENARIO_NUM) and Atlas A2's architecture macros (the twin's kernel_operator.h sets them);
  * adds a driver of ours that does what the sample's `main` does on the device: reads the inputs
    its gen_data.py wrote, launches the kernel on the twin (a cube kernel on one cube core, a
    mixed kernel in MIX_MODE, one AIC and two AIVs per group) in strict mode, and writes the output
    file its verify_result.py reads;
  * runs the sample's own scripts/gen_data.py, the program, and scripts/verify_result.py, in a
    scratch copy of the sample's directory, and prints one row per sample: compiles?, runs
    correctly against its golden data?, why not.
--sweep compiles the kernel part of every .asc sample (syntax only, SCENARIO_NUM=1) and prints how
many compile and the most frequent first errors.
Needs g++ and what the samples' scripts import (numpy, ml_dtypes); a missing module is reported in
the table, not hidden.
"""
import argparse
import collections
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The host side's headers (ACL, the samples' file helpers, host tiling and registration, PyTorch).
HOST_INCLUDES = re.compile(r'^\s*#\s*include\s+[<"](acl/acl\.h|data_utils\.h|cpu_debug_launch\.h|tiling/tiling_api\.h|'
                           r'tiling/platform/platform_ascendc\.h|register/tilingdata_base\.h|torch/extension\.h)[">].*$',
                           re.M)


def _cann_tool():
    """compile_cann_kernels.py, for its process, error and twin-build helpers."""
    spec = importlib.util.spec_from_file_location("compile_cann_kernels", os.path.join(ROOT, "tools",
                                                                                      "compile_cann_kernels.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Sample:
    """One sample: where it is, its build defines, how its `main` launches the kernel (`cube`: one
    block on a cube core; `mix`: `blocks` groups of one AIC and two AIVs), the call (arguments a0,
    a1, ... are the inputs in `inputs` order, then the output), its input files and bytes, its output
    bytes, and the arguments its gen_data.py / verify_result.py take."""

    def __init__(self, name, path, asc, covers, launch, blocks, call, inputs, out_bytes, defines=(), gen=(),
                 verify=("output/output.bin", "output/golden.bin")):
        self.name, self.path, self.asc, self.covers = name, path, asc, covers
        self.launch, self.blocks, self.call = launch, blocks, call
        self.inputs, self.out_bytes, self.defines = inputs, out_bytes, list(defines)
        self.gen, self.verify = list(gen), list(verify)


MMAD = "examples/01_simd_cpp_api/03_basic_api/03_matrix_compute/mmad"
M, N, K = 30, 40, 70  # the sizes of the mmad sample's main
SAMPLES = [
    Sample("mmad (scenario 1)", MMAD, "mmad.asc",
           "int8 -> int32, B transposed by LoadDataWithTranspose, bias through L1 into the bias table", "cube", 1,
           f"mmad_custom<{M}, {N}, {K}>(a0, a1, a2, out)",
           [("input/x1_gm.bin", M * K), ("input/x2_gm.bin", K * N), ("input/bias_gm.bin", N * 4)], M * N * 4,
           ["-DSCENARIO_NUM=1"], ["-scenarioNum=1"], ["-scenarioNum=1", "output/output.bin", "output/golden.bin"]),
    Sample("mmad (scenario 2)", MMAD, "mmad.asc", "bf16 -> fp32, a second Mmad accumulating in L0C", "cube", 1,
           f"mmad_custom<{M}, {N}, {K}>(a0, a1, nullptr, out)",
           [("input/x1_gm.bin", M * K * 2), ("input/x2_gm.bin", K * N * 2)], M * N * 4,
           ["-DSCENARIO_NUM=2"], ["-scenarioNum=2"], ["-scenarioNum=2", "output/output.bin", "output/golden.bin"]),
    Sample("mmad (scenario 3)", MMAD, "mmad.asc",
           "fp32 -> fp32, A and B given transposed, kDirectionAlign, bias tensor", "cube", 1,
           f"mmad_custom<{M}, {N}, {K}>(a0, a1, a2, out)",
           [("input/x1_gm.bin", M * K * 4), ("input/x2_gm.bin", K * N * 4), ("input/bias_gm.bin", N * 4)], M * N * 4,
           ["-DSCENARIO_NUM=3"], ["-scenarioNum=3"], ["-scenarioNum=3", "output/output.bin", "output/golden.bin"]),
] + [
    Sample(f"fixpipe_l0c2gm (scenario {sc})", "examples/01_simd_cpp_api/03_basic_api/03_matrix_compute/fixpipe_l0c2gm",
           "fixpipe_l0c2gm.asc", covers, "cube", 1, "fixpipe_l0c2gm<128, 128, 256>(a0, a1, out, nullptr)",
           [("input/x1_gm.bin", 128 * 128 * 2), ("input/x2_gm.bin", 128 * 256 * 2)], 128 * 256 * 4,
           [f"-DSCENARIO_NUM={sc}"], [f"-scenarioNum={sc}"])
    for sc, covers in ((1, "half -> fp32 over two k rounds, Fixpipe into NZ"), (2, "Fixpipe into ND (row-major)"),
                       (6, "Fixpipe with ReLU"))
] + [
    Sample(f"mmad_load3dv2 (scenario {sc})", "examples/01_simd_cpp_api/03_basic_api/03_matrix_compute/mmad_load3dv2",
           "mmad_load3dv2.asc", covers, "cube", 1, "mmad_custom<30, 70, 40>(a0, a1, out)",
           [("input/x1_gm.bin", 30 * 40 * size), ("input/x2_gm.bin", 40 * 70 * size)], 30 * 70 * 4,
           [f"-DSCENARIO_NUM={sc}"], [f"-scenarioNum={sc}"],
           [f"-scenarioNum={sc}", "output/output.bin", "output/golden.bin"])
    for sc, size, covers in ((1, 2, "half: A into L0A and B into L0B by Load3Dv2"),
                             (2, 2, "half: A given transposed, into L0A by Load3Dv2 with enTranspose"),
                             (3, 4, "fp32: A and B by Load3Dv2"),
                             (4, 4, "fp32: A given transposed, Load3Dv2 with enTranspose, kDirectionAlign"),
                             (5, 1, "int8 -> int32: A by Load3Dv2, B given transposed by LoadData 2-D"))
] + [
    Sample(f"load_data_l12l0 (scenario {sc})", "examples/01_simd_cpp_api/03_basic_api/03_matrix_compute/"
           "load_data_l12l0", "load_data_l12l0.asc", covers, "cube", 1, "KernelLoadDataL12L0<40, 50, 70>(a0, a1, out)",
           [("input/x1_gm.bin", 40 * 70 * size), ("input/x2_gm.bin", 70 * 50 * size)], 40 * 50 * 4,
           [f"-DSCENARIO_NUM={sc}"], [f"-scenarioNum={sc}"],
           [f"-scenarioNum={sc}", "output/output.bin", "output/golden.bin"])
    for sc, size, covers in (
        (3, 1, "int8: A and Bᵀ by LoadData 2-D"), (4, 1, "int8: A by Load3Dv2, Bᵀ by LoadData 2-D"),
        (5, 1, "int8: Aᵀ and B by LoadDataWithTranspose"), (6, 2, "half: A and Bᵀ by LoadData 2-D"),
        (7, 2, "half: A by Load3Dv2, Bᵀ by LoadData 2-D"), (8, 2, "half: Aᵀ and B by LoadData 2-D, transposing"),
        (9, 2, "half: Aᵀ and B by LoadDataWithTranspose"), (10, 2, "half: Aᵀ and B by Load3Dv2"),
        (11, 4, "fp32: A and Bᵀ by LoadData 2-D"), (12, 4, "fp32: A by Load3Dv2, Bᵀ by LoadData 2-D"),
        (13, 4, "fp32: Aᵀ and B by Load3Dv2"), (14, 4, "fp32: Aᵀ and B in L1 as zZ, by LoadDataWithTranspose"))
] + [
    Sample("mmad_unitflag", "examples/01_simd_cpp_api/03_basic_api/03_matrix_compute/mmad_unitflag",
           "mmad_unitflag.asc", "half -> fp32 over 8 k rounds with unitFlag between Mmad and Fixpipe", "cube", 1,
           "mmad_with_unitflag_custom<128, 256, 512, 8>(a0, a1, out)",
           [("input/x1_gm.bin", 128 * 512 * 2), ("input/x2_gm.bin", 512 * 256 * 2)], 128 * 256 * 4),
    Sample("batch_matmul", "examples/01_simd_cpp_api/03_basic_api/03_matrix_compute/batch_matmul",
           "batch_matmul.asc", "fp32, 4 matrices in one launch, B into L0B by Load3Dv2 (image to column)", "cube",
           1, "batch_matmul_custom<4, 30, 40, 70>(a0, a1, out)",
           [("input/x1_gm.bin", 4 * 30 * 40 * 4), ("input/x2_gm.bin", 4 * 40 * 70 * 4)], 4 * 30 * 70 * 4),
    Sample("matmul_leakyrelu_basic_api", "examples/01_simd_cpp_api/00_introduction/03_fusion_operation/"
           "matmul_leakyrelu_basic_api", "matmul_leakyrelu_basic_api.asc",
           "MIX: Mmad and Fixpipe (F322F16) on the AIC, LeakyRelu on its two AIVs, cross-core flags, "
           "LocalMemAllocator", "mix", 2, "mmad_vec_custom<512, 128, 128, 256, 128, 128, 256, 128, 128>(a0, a1, out)",
           [("input/x1_gm.bin", 512 * 128 * 2), ("input/x2_gm.bin", 128 * 128 * 2)], 512 * 128 * 2),
]


def kernel_part(source):
    """The sample's kernel code: everything before its host `main`, without the host includes."""
    m = re.search(r"^\s*int(32_t)?\s+main\s*\(", source, re.M)
    return HOST_INCLUDES.sub("", source[:m.start()] if m else source)


def driver(sample):
    """C++ appended to the kernel part: what the sample's main does, on the twin."""
    reads = "\n".join(f'  std::vector<uint8_t> in{i} = Read("{f}", {n});' for i, (f, n) in enumerate(sample.inputs))
    args = "\n".join(f"  uint8_t *a{i} = in{i}.data();" for i in range(len(sample.inputs)))
    launch = ("ms_ops::twin::Launch(\"sample\", {b}, 0, [&] {{ ms_ops::twin::RunAsAic(); {c}; }})"
              if sample.launch == "cube" else "ms_ops::twin::LaunchMixed(\"sample\", {b}, 0, [&] {{ {c}; }})")
    return f"""
// ---- run_asc_samples.py: the sample's main on the twin ----
#include <cstdio>
#include <vector>
#include "twin_runtime.h"

static std::vector<uint8_t> Read(const char *path, size_t bytes) {{
  std::vector<uint8_t> v(bytes);
  FILE *f = std::fopen(path, "rb");
  if (f == nullptr || std::fread(v.data(), 1, bytes, f) != bytes) {{
    std::fprintf(stderr, "cannot read %zu bytes of %s\\n", bytes, path);
    std::exit(2);
  }}
  std::fclose(f);
  return v;
}}

int main() {{
{reads}
{args}
  std::vector<uint8_t> outBuf({sample.out_bytes});
  uint8_t *out = outBuf.data();
  const int status = {launch.format(b=sample.blocks, c=sample.call)};
  if (status != 0) {{
    std::fprintf(stderr, "twin: %s\\n", ms_ops::twin::LastFailure().c_str());
    return 1;
  }}
  FILE *f = std::fopen("output/output.bin", "wb");
  std::fwrite(out, 1, outBuf.size(), f);
  std::fclose(f);
  return 0;
}}
"""


def flags():
    inc = [os.path.join(ROOT, "aicore", d) for d in ("twin", "common")]
    return [f for d in inc for f in ("-I", d)]


def run_sample(tool, checkout, sample, work, twin):
    """(compiles, runs correctly, why not) of one sample."""
    src_dir = os.path.join(checkout, sample.path)
    asc = os.path.join(src_dir, sample.asc)
    if not os.path.exists(asc):
        return "no", "no", f"{sample.path}/{sample.asc} not in this checkout"
    case = os.path.join(work, re.sub(r"\W+", "_", sample.name))
    shutil.rmtree(case, ignore_errors=True)
    shutil.copytree(src_dir, case)
    os.makedirs(os.path.join(case, "input"), exist_ok=True)
    os.makedirs(os.path.join(case, "output"), exist_ok=True)
    with open(asc, errors="replace") as f:
        source = kernel_part(f.read())
    prog_src = os.path.join(case, "twin_sample.cpp")
    with open(prog_src, "w") as f:
        f.write(source + driver(sample))
    objs, libs = twin
    exe = os.path.join(case, "twin_sample")
    rc, log = tool.run([*tool.CXX, *flags(), *sample.defines, prog_src, *objs, "-o", exe, "-lpthread", *libs])
    if rc != 0:
        return "no", "no", tool.first_error(log)
    rc, log = tool.run([sys.executable, "scripts/gen_data.py", *sample.gen], cwd=case)
    if rc != 0:
        missing = re.search(r"No module named '([^']+)'", log)
        return "yes", "no", f"gen_data.py needs {missing.group(1)}" if missing else "gen_data.py: " + tool.first_error(log)
    env = dict(os.environ, MS_OPS_TWIN_STRICT="1")
    rc, log = tool.run([exe], cwd=case, env=env)
    if rc != 0:
        return "yes", "no", tool.first_error(log)
    rc, log = tool.run([sys.executable, "scripts/verify_result.py", *sample.verify], cwd=case)
    verdict = log.strip().splitlines()[-1] if log.strip() else ""
    return "yes", "yes" if rc == 0 else "no", verdict


def sweep(tool, checkout, work):
    """How many samples' kernel parts compile (syntax only), and the most frequent first errors."""
    files = sorted(glob.glob(os.path.join(checkout, "examples", "**", "*.asc"), recursive=True))
    ok, errors = 0, collections.Counter()
    for path in files:
        with open(path, errors="replace") as f:
            source = kernel_part(f.read())
        cpp = os.path.join(work, "sweep.cpp")
        with open(cpp, "w") as f:
            f.write(source)
        rc, log = tool.run(["g++", "-fsyntax-only", "-std=c++17", "-w", "-DSCENARIO_NUM=1", "-DSCENARIO=1",
                            *flags(), cpp])
        if rc == 0:
            ok += 1
            continue
        first = next((re.split(r"(?:fatal )?error: ", l, maxsplit=1)[1] for l in log.splitlines()
                      if re.search(r"(?:fatal )?error: ", l)), "failed")
        errors[re.sub(r"‘([^’]*)’ (is not a member of|does not name|was not declared)", r"‘\1’ \2", first)[:100]] += 1
    print(f"{ok} of {len(files)} samples' kernels compile against the twin (syntax only)")
    for message, count in errors.most_common(15):
        print(f"{count:4d}  {message}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkout", help="a local checkout of CANN's asc-devkit")
    parser.add_argument("--work", help="scratch directory (default: a fresh temporary one)")
    parser.add_argument("--only", help="comma-separated sample names")
    parser.add_argument("--sweep", action="store_true", help="syntax-compile every sample's kernel part")
    args = parser.parse_args()
    tool = _cann_tool()
    work = args.work or tempfile.mkdtemp(prefix="asc_samples_")
    os.makedirs(work, exist_ok=True)
    if args.sweep:
        sweep(tool, args.checkout, work)
        return
    twin = tool.twin_objects(work)
    chosen = [s for s in SAMPLES if not args.only or s.name in args.only.split(",")]
    print("| sample | covers | compiles | runs correctly | evidence |")
    print("|---|---|---|---|---|")
    for s in chosen:
        compiles, correct, why = run_sample(tool, args.checkout, s, work, twin)
        print(f"| {s.name} | {s.covers} | {compiles} | {correct} | {why} |", flush=True)


if __name__ == "__main__":
    main()
