#!/usr/bin/env python3
"""Compiles public CANN AscendC kernels, unchanged, against the CPU twin and runs their own kernel
tests with their own golden data.

Usage: tools/compile_cann_kernels.py OPS_NN_CHECKOUT [--work DIR] [--only NAME[,NAME...] | --sweep]

OPS_NN_CHECKOUT is a local checkout of CANN's ops-nn repository (this script fetches nothing). For
each kernel of KERNELS it does what a CANN build and its kernel-UT harness do, with the twin in
place of the NPU toolchain:
  * generates the build stand-ins: the kernel-side tiling header from the host's
    BEGIN_TILING_DATA_DEF definition (a plain struct and GET_TILING_DATA), force-included into
    the kernel as the CANN build does, and the DTYPE_<ARG> macros of the op definition's inputs and
    outputs; a kernel that tests TILING_KEY_IS is compiled once per tiling key with TILING_KEY_VAR
    set (so `if constexpr (TILING_KEY_IS(k))` works), behind a generated entry that dispatches on
    the launch's key;
  * compiles the kernel source and its gtest kernel test (tests/ut/op_kernel/test_<op>.cpp, which
    includes tikicpulib.h: the twin's aicore/twin/tikicpulib.h) with g++ for Atlas A2
    (__CCE_AICORE__ 220, __NPU_ARCH__ 2201), links them with the checkout's UT helpers, gtest and
    the twin;
  * runs the test in strict mode (MS_OPS_TWIN_STRICT=1) in a scratch directory. The tests call
    their gen_data.py / compare_data.py through `python3`; a shim first on PATH runs them with this
    interpreter and records their output, so the verdict is read from the comparison itself. The
    DTYPE_* macros are one dtype per build, as the UT build's AddOpTestCase sets them: a test case
    that needs another dtype cannot hold there, and a gtest filter leaves it out (said in the row);
  * for a MIX kernel whose test runs only a single-core wrapper (MixEntry), also builds its
    production entry for the device (no __CCE_KT_TEST__) per dtype and runs it in MIX_MODE, one AIC
    and two AIVs per group, through a driver of ours (tools/cann_drivers/) that takes the data and
    the verdict from the kernel test's own gen_data.py / compare_data.py.
Needs g++, gtest (Debian: libgtest-dev) and what the tests' golden-data scripts import (numpy,
torch, tensorflow for bfloat16); a missing module is reported in the table, not hidden.
Prints one row per kernel: kernel, what it covers, compiles?, runs correctly against its golden data
(yes / no / "no golden" when its test compares nothing), why not.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TWIN = os.path.join(ROOT, "aicore", "twin")
CXX = ["g++", "-std=c++17", "-O1", "-march=native", "-fopenmp", "-w"]
DEVICE = ["-D__CCE_KT_TEST__", "-D__CCE_AICORE__=220", "-D__NPU_ARCH__=2201"]


class Kernel:
    """One op of ops-nn: its directory, what it covers, the dtype its DTYPE_* macros name (the one
    its UT build's AddOpTestCase sets) and, when some of its test cases cannot hold in that build,
    the gtest filter of those that can, with the reason."""

    def __init__(self, op_dir, covers, dtype="float", cases=None):
        self.op_dir = op_dir
        self.name = os.path.basename(op_dir)
        self.label = self.name
        self.covers = covers
        self.dtype = dtype
        self.cases = cases


class MixEntry(Kernel):
    """A MIX kernel's production entry, which its kernel test does not run: compiled for the device
    (no __CCE_KT_TEST__) once per dtype with the tiling keys `keys`, launched in MIX_MODE by our
    driver tools/cann_drivers/<driver> over `groups` AIC+2 AIV groups, each launch checked by the
    kernel test's own gen_data.py / compare_data.py."""

    def __init__(self, op_dir, covers, driver, keys, groups, dtypes):
        super().__init__(op_dir, covers)
        self.label = f"{self.name} (MIX entry)"
        self.driver = driver
        self.keys = keys
        self.groups = groups
        self.dtypes = dtypes


KERNELS = [
    Kernel("activation/fatrelu_mul", "vector"),
    Kernel("activation/squared_relu", "vector"),
    Kernel("activation/gelu_mul", "vector"),
    Kernel("activation/heaviside", "vector, compare/select"),
    Kernel("experimental/activation/silu_mul", "vector"),
    Kernel("loss/logit", "vector"),
    Kernel("activation/ge_glu_grad_v2", "vector, atomics"),
    Kernel("loss/mse_loss_v2", "reduce"),
    Kernel("loss/cross_entropy_loss", "reduce (WholeReduce/BlockReduce)"),
    Kernel("foreach/foreach_norm", "reduce"),
    Kernel("norm/add_layer_norm", "reduce"),
    Kernel("experimental/loss/l2_loss", "reduce", cases=(
        "*float32*", "its UT build sets DTYPE_X=float, so only the float32 case can hold (the fp16 and bf16 cases "
                     "hand half-width data to the float kernel)")),
    Kernel("experimental/loss/softmax_grad", "reduce"),
    Kernel("conv/deformable_conv2d", "matmul"),
    Kernel("experimental/matmul/fused_patch_mlp", "matmul, mixed AIC/AIV"),
    MixEntry("experimental/matmul/fused_patch_mlp", "matmul + vector on AIC/AIV, cross-core flags, SyncAll",
             driver="fused_patch_mlp_mix.cpp", keys=(1, 11, 31), groups=(1, 2),
             dtypes=(("float16", "half"), ("bfloat16", "bfloat16_t"), ("float32", "float"))),
]

# ---- build stand-ins ----

FIELD = re.compile(r"TILING_DATA_FIELD_DEF\s*\(\s*([\w:]+)\s*,\s*(\w+)\s*\)")
ARRAY = re.compile(r"TILING_DATA_FIELD_DEF_ARR\s*\(\s*([\w:]+)\s*,\s*(\w+)\s*,\s*(\w+)\s*\)")
REGISTERED = re.compile(r"REGISTER_TILING_DATA_CLASS\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)")
CONSTANT = re.compile(r"^\s*(?:static\s+)?constexpr\s+[\w:]+\s+\w+\s*=\s*[^;]+;", re.M)
STRUCT = re.compile(r"TILING_DATA_FIELD_DEF_STRUCT\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)")


def tiling_defs(text):
    """The BEGIN_TILING_DATA_DEF(Name) ... END_TILING_DATA_DEF blocks: [(name, [C++ member lines])]."""
    out = []
    for m in re.finditer(r"BEGIN_TILING_DATA_DEF\s*\(\s*(\w+)\s*\)(.*?)END_TILING_DATA_DEF", text, re.S):
        members = []
        for line in m.group(2).splitlines():
            if a := ARRAY.search(line):
                members.append(f"  {a.group(1)} {a.group(3)}[{a.group(2)}];")
            elif s := STRUCT.search(line):
                members.append(f"  {s.group(1)} {s.group(2)};")
            elif f := FIELD.search(line):
                members.append(f"  {f.group(1)} {f.group(2)};")
        out.append((m.group(1), members))
    return out


def host_headers(root):
    """The text of every .h file under root's op_host directories, by path."""
    texts = {}
    for dirpath, _, files in os.walk(root):
        if "op_host" not in dirpath.split(os.sep):
            continue
        for f in sorted(files):
            if f.endswith(".h"):
                with open(os.path.join(dirpath, f), errors="replace") as fh:
                    texts[os.path.join(dirpath, f)] = fh.read()
    return texts


_SHARED = {}


def shared_tiling(checkout, name):
    """(constants, defs, struct) from the op_host header anywhere in the checkout that registers
    the op's tiling class (REGISTER_TILING_DATA_CLASS(<OpType>, <Struct>), OpType the op's name in
    CamelCase), as ops sharing one definition (the foreach family's) do; None when there is none."""
    if checkout not in _SHARED:
        _SHARED[checkout] = {op: text for text in host_headers(checkout).values()
                             for op, _ in REGISTERED.findall(text)}
    op_type = "".join(part.capitalize() for part in name.split("_"))
    text = _SHARED[checkout].get(op_type)
    if text is None:
        return None
    struct = dict(REGISTERED.findall(text))[op_type]
    return CONSTANT.findall(text), tiling_defs(text), struct


def defines_struct(root, struct):
    """Whether a source under root defines `struct <struct>` itself (a kernel with its own tiling
    struct, as some experimental ops have beside the op they copy)."""
    pattern = re.compile(rf"\bstruct\s+{struct}\s*{{")
    for dirpath, _, files in os.walk(root):
        for f in files:
            with open(os.path.join(dirpath, f), errors="replace") as fh:
                if pattern.search(fh.read()):
                    return True
    return False


def tiling_header(op_root, name, checkout=None, skip=()):
    """The kernel-side tiling header a CANN build generates from the op's host tiling definition
    (its own op_host, else the shared header that registers its class), or None when the op has
    none (it then defines its tiling struct in the kernel sources)."""
    constants, defs = [], []
    for text in host_headers(os.path.join(op_root, "op_host")).values():
        defs += tiling_defs(text)
    main = defs[-1][0] if defs else None
    if not defs and checkout is not None and (shared := shared_tiling(checkout, name)) is not None \
            and not defines_struct(os.path.join(op_root, "op_kernel"), shared[2]):
        constants, defs, main = shared
    defs = [(struct, members) for struct, members in defs if struct not in skip]
    if not defs:
        return None
    lines = [f"// Generated by tools/compile_cann_kernels.py from {name}'s op_host tiling definition.",
             "#pragma once", "#include <cstdint>", "#include <cstring>", '#include "kernel_tiling/kernel_tiling.h"', "",
             *(c.strip() for c in constants), ""]
    for struct, members in defs:
        lines += [f"struct {struct} {{", *members, "};", ""]
    lines += ["#undef GET_TILING_DATA",
              "#define GET_TILING_DATA(var, tiling) \\",
              f"  {main} var;                      \\",
              "  std::memcpy(&var, reinterpret_cast<const void *>(tiling), sizeof(var))",
              "#undef GET_TILING_DATA_WITH_STRUCT",
              "#define GET_TILING_DATA_WITH_STRUCT(Type, var, tiling) \\",
              "  Type var;                                          \\",
              "  std::memcpy(&var, reinterpret_cast<const void *>(tiling), sizeof(Type))", ""]
    return "\n".join(lines)


# The DT_* number (kernel_type.h) a build's ORIG_DTYPE_<ARG> names for each kernel-side dtype.
ORIG_DTYPE = {"half": "DT_FLOAT16", "float": "DT_FLOAT", "bfloat16_t": "DT_BF16"}


def dtype_macros(op_root, name, dtype):
    """-DDTYPE_<ARG>=<dtype> and -DORIG_DTYPE_<ARG>=<its DT_*> for each Input/Output of the op
    definition, as the CANN build sets them."""
    args = []
    for dirpath, _, files in os.walk(os.path.join(op_root, "op_host")):
        for f in files:
            if f.endswith("_def.cpp"):
                with open(os.path.join(dirpath, f), errors="replace") as fh:
                    args += re.findall(r"\b(?:Input|Output)\s*\(\s*\"(\w+)\"", fh.read())
    orig = ORIG_DTYPE.get(dtype)
    return [m for a in dict.fromkeys(args)
            for m in [f"-DDTYPE_{a.upper()}={dtype}"] + ([f"-DORIG_DTYPE_{a.upper()}={orig}"] if orig else [])]


# ---- compile, link, run ----

def run(cmd, cwd=None, env=None, timeout=900):
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def first_error(log):
    for line in log.splitlines():
        if "error" in line:
            return re.sub(r"^\S*/", "", line.strip())[:160]
    return log.strip().splitlines()[-1][:160] if log.strip() else "failed"


def twin_objects(work):
    """The twin's runtime objects and the BLAS library its Matmul calls, built once."""
    import scipy_openblas32
    objs = []
    newest = max(os.path.getmtime(os.path.join(d, f)) for d, _, fs in os.walk(TWIN) for f in fs)
    for src in sorted(f for f in os.listdir(TWIN) if f.endswith(".cpp")):
        obj = os.path.join(work, "twin_" + src.replace(".cpp", ".o"))
        if not os.path.exists(obj) or os.path.getmtime(obj) < newest:
            rc, log = run([*CXX, "-I", TWIN, "-I", os.path.join(ROOT, "aicore", "common"), "-c",
                           os.path.join(TWIN, src), "-o", obj])
            if rc != 0:
                sys.exit(f"the twin does not compile: {first_error(log)}")
        objs.append(obj)
    blas = scipy_openblas32.get_lib_dir()
    return objs, ["-L", blas, "-lscipy_openblas", f"-Wl,-rpath,{blas}"]


def helper_objects(checkout, work):
    """The checkout's kernel-UT helpers (data files, gen/compare script runners)."""
    ut = os.path.join(checkout, "tests", "ut", "op_kernel")
    objs = []
    for src in ("data_utils.cpp", "kernel_ut_data_helper.cpp", "kernel_ut_data_executor.cpp"):
        obj = os.path.join(work, "ut_" + src.replace(".cpp", ".o"))
        if not os.path.exists(obj):
            rc, log = run([*CXX, "-I", ut, "-c", os.path.join(ut, src), "-o", obj])
            if rc != 0:
                sys.exit(f"the checkout's UT helpers do not compile: {first_error(log)}")
        objs.append(obj)
    return objs


def python_shim(work, log):
    """A `python3` first on PATH that runs this interpreter and appends each script's output to log."""
    shim = os.path.join(work, "shim")
    os.makedirs(shim, exist_ok=True)
    path = os.path.join(shim, "python3")
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\necho \"== python3 $*\" >> '{log}'\n"
                f"'{sys.executable}' \"$@\" >> '{log}' 2>&1\nrc=$?\necho \"== exit $rc\" >> '{log}'\nexit $rc\n")
    os.chmod(path, 0o755)
    return shim


def verdict(rc, out, script_log):
    """(runs correctly: "yes" / "no" / "no golden", why) from the test binary's exit, its output and
    the log of the gen_data.py / compare_data.py runs."""
    # The twin's errors; its notes (": warning: ", which strict mode leaves only for what the NPU
    # tolerates) do not make a run fail.
    twin = [l for l in out.splitlines() if l.startswith("ms_ops ") and ": warning: " not in l]
    if twin:
        return "no", "twin: " + twin[0][len("ms_ops "):][:150]
    missing = sorted(set(re.findall(r"No module named '([\w.]+)'", script_log)))
    if missing:
        return "no", "its golden-data scripts need Python module(s) " + ", ".join(missing) + " (not installed)"
    # compare_data.py scripts print "FAILED!", "[FAIL] ..." or a "Result: n PASSED, m FAILED" summary.
    failed = [l for l in script_log.splitlines()
              if re.search(r"FAILED!|\[FAIL\]|Error|\b[1-9]\d* FAILED", l)]
    if failed:
        return "no", f"golden comparison: {failed[0].strip()[:150]}"
    if rc != 0:
        bad = [l for l in out.splitlines() if "Failure" in l or "[  FAILED  ]" in l]
        return "no", "test: " + (bad[0].strip() if bad else f"exit {rc}")[:150]
    compares = script_log.count("== python3 compare_data.py")
    passed = len(re.findall(r"PASSED|\[PASS\]", script_log))
    if compares == 0:
        return "no golden", "its kernel test passes but compares no output with golden data"
    if passed == 0:
        return "no", f"{compares} compare_data.py run(s) compared nothing"
    return "yes", f"{compares} compare_data.py run(s), every output matched its golden data"


KEY = re.compile(r"TILING_KEY_IS\s*\(\s*(\d+)\s*\)")


def entry_params(source, name):
    """The parameter list of the kernel's `extern "C" __global__ __aicore__ void <name>(...)`, or None."""
    m = re.search(r"__global__\s+__aicore__\s+void\s+" + re.escape(name) + r"\s*\(([^)]*)\)", source)
    return m.group(1).strip() if m else None


def key_dispatcher(name, params, keys):
    """What a CANN build generates around a kernel compiled once per tiling key: the kernel's entry,
    calling the instance of the launch's key (each instance is the kernel compiled with
    -DTILING_KEY_VAR=<key> and its entry renamed <name>_tiling_key_<key>)."""
    args = ", ".join(re.findall(r"(\w+)\s*(?:,|$)", params))
    lines = ['#include "kernel_operator.h"', ""]
    lines += [f'extern "C" __global__ __aicore__ void {name}_tiling_key_{k}({params});' for k in keys]
    lines += ["", f'extern "C" __global__ __aicore__ void {name}({params}) {{',
              "  switch (::ms_ops::twin::Current().tilingKey) {"]
    lines += [f"    case {k}: return {name}_tiling_key_{k}({args});" for k in keys]
    lines += ['    default: ::ms_ops::twin::Fail("TILING_KEY_IS", "no instance of the kernel for tiling key " +',
              "                                 std::to_string(::ms_ops::twin::Current().tilingKey));",
              "  }", "}", ""]
    return "\n".join(lines)


def compile_kernel(k, kernel_src, kdir, flags, only_keys=None):
    """The kernel's objects: one compile, or with TILING_KEY_IS one per tiling key (those of
    only_keys when given) plus the dispatching entry. (rc, log, objects)."""
    with open(kernel_src, errors="replace") as f:
        source = f.read()
    keys = sorted({int(v) for v in KEY.findall(source)})
    if only_keys is not None:
        keys = [key for key in keys if key in only_keys]
    params = entry_params(source, k.name)
    if not keys or params is None:
        kobj = os.path.join(kdir, "kernel.o")
        rc, log = run([*CXX, *flags, "-c", kernel_src, "-o", kobj])
        return rc, log, [kobj]
    objs = []
    for key in keys:
        kobj = os.path.join(kdir, f"kernel_key_{key}.o")
        rc, log = run([*CXX, *flags, f"-DTILING_KEY_VAR={key}", f"-D{k.name}={k.name}_tiling_key_{key}", "-c",
                       kernel_src, "-o", kobj])
        if rc != 0:
            return rc, f"tiling key {key}: " + log, objs
        objs.append(kobj)
    stub = os.path.join(kdir, "tiling_key_dispatch.cpp")
    with open(stub, "w") as f:
        f.write(key_dispatcher(k.name, params, keys))
    kobj = os.path.join(kdir, "tiling_key_dispatch.o")
    rc, log = run([*CXX, *flags, "-c", stub, "-o", kobj])
    return rc, log, objs + [kobj]


def test_source(op_root, name):
    tdir = os.path.join(op_root, "tests", "ut", "op_kernel")
    for dirpath, _, files in sorted(os.walk(tdir)):
        if f"test_{name}.cpp" in files and "arch35" not in dirpath:
            return os.path.join(dirpath, f"test_{name}.cpp")
    return None


def kernel_flags(k, checkout, kdir, ut_tiling=None):
    """The include path and forced includes a CANN build compiles k's kernel with: the twin in place
    of CANN's headers, the op's directories, and the tiling header generated from its op_host; with
    ut_tiling (the kernel test's own tiling header, as a kernel UT build has it) that header after
    the generated one, whose structs it defines itself left out of the generated one."""
    op_root = os.path.join(checkout, k.op_dir)
    includes = ["-I", TWIN, "-I", os.path.join(ROOT, "aicore", "common"), "-I", os.path.join(op_root, "op_kernel"),
                "-I", os.path.join(checkout, "common", "inc", "op_kernel"), "-I", os.path.join(op_root, "op_host")]
    own = set()
    if ut_tiling is not None:
        with open(ut_tiling, errors="replace") as f:
            own = set(re.findall(r"\bstruct\s+(\w+)\s*{", f.read()))
    headers = []
    header = tiling_header(op_root, k.name, checkout, skip=own)
    if header is not None:
        headers.append(os.path.join(kdir, f"{k.name}_tiling_data_generated.h"))
        with open(headers[-1], "w") as f:
            f.write(header)
    if ut_tiling is not None:
        headers.append(ut_tiling)
    if not headers:
        return includes, []
    return includes, [arg for h in ["kernel_operator.h", *headers] for arg in ("-include", h)]


def ut_tiling_header(test_src, name):
    """The kernel test's tiling header for the kernel, tests/ut/op_kernel/<op>_tiling_def.h defining
    GET_TILING_DATA, which a CANN kernel UT build force-includes into the kernel after the generated
    one: the test fills the tiling through its structs, whose layout may differ from op_host's
    (foreach_norm's counts are 64-bit there, 32-bit in op_host). A header of another name
    (logit's test_logit_tiling_def.h) is the test's alone. None when there is none."""
    path = os.path.join(os.path.dirname(test_src), f"{name}_tiling_def.h")
    if not os.path.exists(path):
        return None
    with open(path, errors="replace") as fh:
        return path if re.search(r"#\s*define\s+GET_TILING_DATA\b", fh.read()) else None


def build_tree(kdir, checkout):
    """Where a CANN build runs its kernel UTs: <checkout>/build/tests/ut/op_kernel, so that a test
    finding its data four levels up finds the checkout. Here the checkout's top level is linked
    into a scratch tree, which keeps the checkout itself untouched."""
    root = fresh_dir(os.path.join(kdir, "checkout"))
    for entry in os.listdir(checkout):
        os.symlink(os.path.join(checkout, entry), os.path.join(root, entry))
    return fresh_dir(os.path.join(root, "build", "tests", "ut", "op_kernel"))


def run_strict(cmd, kdir, checkout, cwd=None):
    """Runs cmd (in cwd, default kdir) in strict mode, its python3 calls through the shim, the
    kernel taken as CANN's compiler builds it (--cce-auto-sync: MS_OPS_TWIN_AUTO_SYNC=1):
    (rc, output, script log), or None when it timed out."""
    script_log = os.path.join(kdir, "scripts.log")
    open(script_log, "w").close()
    env = dict(os.environ, OPS_NN_ROOT=checkout, MS_OPS_TWIN_STRICT="1", MS_OPS_TWIN_AUTO_SYNC="1",
               PATH=python_shim(kdir, script_log) + os.pathsep + os.environ.get("PATH", ""))
    try:
        rc, out = run(cmd, cwd=cwd or kdir, env=env)
    except subprocess.TimeoutExpired:
        return None
    with open(os.path.join(kdir, "test.log"), "a") as f:
        f.write(out)
    with open(script_log) as f:
        return rc, out, f.read()


def fresh_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def build_and_run(k, checkout, work, twin, helpers):
    op_root = os.path.join(checkout, k.op_dir)
    kdir = fresh_dir(os.path.join(work, k.name))
    kernel_src = os.path.join(op_root, "op_kernel", k.name + ".cpp")
    test_src = test_source(op_root, k.name)
    if not os.path.exists(kernel_src) or test_src is None:
        return False, "no", "no op_kernel source or kernel test in the checkout"
    ut_tiling = ut_tiling_header(test_src, k.name)
    includes, forced = kernel_flags(k, checkout, kdir, ut_tiling)
    # As AddOpTestCase's compile options, the DTYPE_* macros reach the test too (some include the kernel).
    dtypes = dtype_macros(op_root, k.name, k.dtype)
    rc, log, kobjs = compile_kernel(k, kernel_src, kdir, [*DEVICE, *dtypes, *includes, *forced])
    if rc != 0:
        return False, "no", "kernel: " + first_error(log)
    ut = os.path.join(checkout, "tests", "ut", "op_kernel")
    tobj = os.path.join(kdir, "test.o")
    rc, log = run([*CXX, *DEVICE, *dtypes, *includes, "-I", ut, "-I", os.path.dirname(test_src), "-c", test_src,
                   "-o", tobj])
    if rc != 0:
        return False, "no", "kernel test: " + first_error(log)
    exe = os.path.join(kdir, "test_" + k.name)
    objs, libs = twin
    rc, log = run([*CXX, *kobjs, tobj, *helpers, *objs, "-o", exe, "-lgtest", "-lgtest_main", "-lpthread", *libs])
    if rc != 0:
        return True, "no", "link: " + first_error(log)
    cmd = [exe] + ([f"--gtest_filter={k.cases[0]}"] if k.cases else [])
    result = run_strict(cmd, kdir, checkout, build_tree(kdir, checkout))
    if result is None:
        return True, "no", "timed out"
    ok, why = verdict(*result)
    return True, ok, why + (f" ({k.cases[0]}: {k.cases[1]})" if k.cases else "")


def build_and_run_mix(k, checkout, work, twin, helpers):
    """k's MIX production entry, per dtype: the kernel for the device with k.keys, our driver,
    one run per group count."""
    op_root = os.path.join(checkout, k.op_dir)
    kdir = fresh_dir(os.path.join(work, k.name + "_mix"))
    kernel_src = os.path.join(op_root, "op_kernel", k.name + ".cpp")
    includes, forced = kernel_flags(k, checkout, kdir)
    ut = os.path.join(checkout, "tests", "ut", "op_kernel")
    device = [f for f in DEVICE if f != "-D__CCE_KT_TEST__"]
    objs, libs = twin
    compares = 0
    for name, ctype in k.dtypes:
        ddir = fresh_dir(os.path.join(kdir, name))
        rc, log, kobjs = compile_kernel(k, kernel_src, ddir,
                                        [*device, *dtype_macros(op_root, k.name, ctype), *includes, *forced], k.keys)
        if rc != 0:
            return False, "no", f"kernel ({name}): " + first_error(log)
        dobj = os.path.join(ddir, "driver.o")
        rc, log = run([*CXX, *device, *includes, "-I", ut, *forced, "-c",
                       os.path.join(ROOT, "tools", "cann_drivers", k.driver), "-o", dobj])
        if rc != 0:
            return False, "no", "driver: " + first_error(log)
        exe = os.path.join(ddir, "mix_" + k.name)
        rc, log = run([*CXX, *kobjs, dobj, *helpers, *objs, "-o", exe, "-lpthread", *libs])
        if rc != 0:
            return True, "no", "link: " + first_error(log)
        for groups in k.groups:
            result = run_strict([exe, name, str(groups), *map(str, k.keys)], ddir, checkout)
            if result is None:
                return True, "no", f"{name}, {groups} group(s): timed out"
            ok, why = verdict(*result)
            if ok != "yes":
                return True, "no", f"{name}, {groups} group(s): {why}"
            compares += result[2].count("== python3 compare_data.py")
    keys = "/".join(map(str, k.keys))
    groups = " and ".join(map(str, k.groups))
    return True, "yes", (f"{compares} compare_data.py runs (tiling keys {keys}, " +
                         ", ".join(name for name, _ in k.dtypes) + f", {groups} AIC+2 AIV groups): every output "
                         "matched its golden data")


def stage_kernels(checkout, stage):
    """Every op's op_kernel directory as <stage>/<op name>/ (hard links, or copies across file
    systems): the layout a CANN build compiles kernel sources in, where a kernel's
    `#include "../<op>/x.h"` names another op's kernel sources (`../foreach_utils/`, `../rms_norm/`).
    A name that occurs twice keeps the directory outside experimental/, else the first in sorted
    order. Returns {op path relative to the checkout: its staged directory} for the ops staged."""
    def order(w):
        return "experimental" in os.path.relpath(w[0], checkout).split(os.sep), w[0]

    staged = {}
    for dirpath, _, _ in sorted(os.walk(checkout), key=order):
        if os.path.basename(dirpath) != "op_kernel":
            continue
        op_root = os.path.dirname(dirpath)
        dest = os.path.join(stage, os.path.basename(op_root))
        if os.path.exists(dest):
            continue
        try:
            shutil.copytree(dirpath, dest, copy_function=os.link)
        except OSError:
            shutil.copytree(dirpath, dest)
        staged[os.path.relpath(op_root, checkout)] = dest
    return staged


def sweep(checkout, work):
    """--sweep: every op of the checkout with an op_kernel/<op>.cpp entry, compiled syntax-only
    (no test, no run) from the staged layout of stage_kernels, with the stand-ins above and fp16
    DTYPE_* macros. Prints how many compile and, for each first error, how many ops stop at it: a
    missing header (the include paths of a CANN build or CANN-internal trees) or an API the twin
    lacks."""
    ops = []
    for dirpath, _, files in os.walk(checkout):
        op_root = os.path.dirname(dirpath)
        if os.path.basename(dirpath) == "op_kernel" and f"{os.path.basename(op_root)}.cpp" in files:
            ops.append(os.path.relpath(op_root, checkout))
    stage = fresh_dir(os.path.join(work, "stage"))
    staged = stage_kernels(checkout, stage)
    first = {}
    for rel in sorted(ops):
        k = Kernel(rel, "sweep")
        kdir = fresh_dir(os.path.join(work, rel.replace(os.sep, "__")))
        includes, forced = kernel_flags(k, checkout, kdir)
        src = os.path.join(checkout, rel, "op_kernel", f"{k.name}.cpp")
        if rel in staged:
            own = os.path.join(checkout, rel, "op_kernel")
            includes = [staged[rel] if i == own else i for i in includes]
            src = os.path.join(staged[rel], f"{k.name}.cpp")
        rc, log = run([*CXX, *includes, *forced, *DEVICE, *dtype_macros(os.path.join(checkout, rel), k.name, "half"),
                       "-fsyntax-only", "-fmax-errors=1", src])
        if rc != 0:
            m = re.search(r"(?:fatal )?error: (.*)", log)
            first.setdefault(m.group(1).strip() if m else "failed", []).append(rel)
    failed = sum(len(v) for v in first.values())
    print(f"{len(ops) - failed} of {len(ops)} op kernels compile (syntax only)")
    for why, rels in sorted(first.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(rels):4d}  {why[:150]}  (e.g. {rels[0]})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout", help="local checkout of CANN's ops-nn")
    ap.add_argument("--work", help="scratch directory (default: a temporary one)")
    ap.add_argument("--only", help="comma-separated kernel names")
    ap.add_argument("--sweep", action="store_true", help="compile every op's kernel entry, syntax only (see sweep)")
    args = ap.parse_args()
    checkout = os.path.abspath(args.checkout)
    if not os.path.isdir(os.path.join(checkout, "tests", "ut", "op_kernel")):
        sys.exit(f"{checkout} does not look like an ops-nn checkout (no tests/ut/op_kernel)")
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="cann_kernels_"))
    os.makedirs(work, exist_ok=True)
    if args.sweep:
        return sweep(checkout, work)
    twin = twin_objects(work)
    helpers = helper_objects(checkout, work)
    chosen = [k for k in KERNELS if not args.only or k.name in args.only.split(",")]
    rows = []
    for k in chosen:
        build = build_and_run_mix if isinstance(k, MixEntry) else build_and_run
        compiles, ok, why = build(k, checkout, work, twin, helpers)
        rows.append((k.label, k.covers, "yes" if compiles else "no", ok, why))
        print(f"{k.label}: compiles={rows[-1][2]} runs={rows[-1][3]} {why}", file=sys.stderr, flush=True)
    print("| kernel | covers | compiles | runs correctly | why not / evidence |")
    print("|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(f"\nlogs and binaries under {work}", file=sys.stderr)


if __name__ == "__main__":
    main()
