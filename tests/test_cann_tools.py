"""Tests of tools/compile_cann_kernels.py's build stand-ins and verdicts, on small made-up op trees
and logs (the real kernels need an ops-nn checkout, which the tests do not have)."""
import importlib.util
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("compile_cann_kernels",
                                                  os.path.join(ROOT, "tools", "compile_cann_kernels.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


HOST_TILING = """
BEGIN_TILING_DATA_DEF(InnerTiling)
TILING_DATA_FIELD_DEF(uint32_t, rows);
END_TILING_DATA_DEF;
BEGIN_TILING_DATA_DEF(OpTilingData)
TILING_DATA_FIELD_DEF(uint64_t, total);
TILING_DATA_FIELD_DEF_ARR(uint32_t, 4, starts);
TILING_DATA_FIELD_DEF_STRUCT(InnerTiling, inner);
END_TILING_DATA_DEF;
"""

OP_DEF = """
this->Input("x").ParamType(REQUIRED);
this->Input("weight_scale").ParamType(OPTIONAL);
this->Output("y").ParamType(REQUIRED);
this->Output("x").ParamType(REQUIRED);
"""


def make_op(tmp_path):
    host = tmp_path / "op" / "op_host"
    host.mkdir(parents=True)
    (host / "op_tiling.h").write_text(HOST_TILING)
    (host / "op_def.cpp").write_text(OP_DEF)
    return str(tmp_path / "op")


def test_tiling_header_from_the_host_definition(tool, tmp_path):
    header = tool.tiling_header(make_op(tmp_path), "op")
    assert "struct InnerTiling {\n  uint32_t rows;\n};" in header
    assert "struct OpTilingData {\n  uint64_t total;\n  uint32_t starts[4];\n  InnerTiling inner;\n};" in header
    # GET_TILING_DATA reads the last definition, the op's own.
    assert "  OpTilingData var;" in header
    assert tool.tiling_header(str(tmp_path / "none"), "none") is None


SHARED_TILING = """
namespace optiling {
constexpr uint16_t MAX_LISTS = 8;
BEGIN_TILING_DATA_DEF(ListTilingData)
TILING_DATA_FIELD_DEF(uint64_t, ubSize);
TILING_DATA_FIELD_DEF_ARR(int64_t, MAX_LISTS, counts);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(ListAbs, ListTilingData)
}
"""


def test_tiling_header_from_a_shared_registration(tool, tmp_path):
    shared = tmp_path / "family" / "list_utils" / "op_host"
    shared.mkdir(parents=True)
    (shared / "list_tiling_def.h").write_text(SHARED_TILING)
    own = tmp_path / "family" / "list_abs" / "op_host"
    own.mkdir(parents=True)
    header = tool.tiling_header(str(own.parent), "list_abs", str(tmp_path))
    assert "constexpr uint16_t MAX_LISTS = 8;" in header
    assert "struct ListTilingData {\n  uint64_t ubSize;\n  int64_t counts[MAX_LISTS];\n};" in header
    assert "  ListTilingData var;" in header
    assert tool.tiling_header(str(own.parent), "list_abs") is None  # without the checkout to search
    kernel = own.parent / "op_kernel"
    kernel.mkdir()
    (kernel / "list_abs.cpp").write_text("struct ListTilingData {\n  int n;\n};")
    assert tool.tiling_header(str(own.parent), "list_abs", str(tmp_path)) is None  # the kernel has its own


def test_staged_kernels_see_each_other_as_siblings(tool, tmp_path):
    tree = tmp_path / "ops"
    for rel, text in [("norm/rms_norm/op_kernel/rms_norm_base.h", "base"),
                      ("norm/add_rms_norm/op_kernel/add_rms_norm.cpp", '#include "../rms_norm/rms_norm_base.h"'),
                      ("experimental/norm/rms_norm/op_kernel/rms_norm_base.h", "other")]:
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    staged = tool.stage_kernels(str(tree), str(tmp_path / "stage"))
    add = staged[os.path.join("norm", "add_rms_norm")]
    with open(os.path.join(add, "..", "rms_norm", "rms_norm_base.h")) as f:
        assert f.read() == "base"  # the one outside experimental/
    assert os.path.join("experimental", "norm", "rms_norm") not in staged


def test_ut_tiling_header_is_the_tests_own(tool, tmp_path):
    ut = tmp_path / "op" / "tests" / "ut" / "op_kernel"
    ut.mkdir(parents=True)
    test = ut / "test_op.cpp"
    test.write_text("// test")
    assert tool.ut_tiling_header(str(test), "op") is None
    (ut / "test_op_tiling_def.h").write_text("#define GET_TILING_DATA(t, p) OpTilingTest t")  # the test's alone
    assert tool.ut_tiling_header(str(test), "op") is None
    (ut / "op_tiling_def.h").write_text("struct OpTiling { int n; };")  # no GET_TILING_DATA: not it
    assert tool.ut_tiling_header(str(test), "op") is None
    (ut / "op_tiling_def.h").write_text("#define GET_TILING_DATA(t, p) OpTiling t")
    assert tool.ut_tiling_header(str(test), "op") == str(ut / "op_tiling_def.h")


def test_dtype_macros_one_per_argument(tool, tmp_path):
    assert tool.dtype_macros(make_op(tmp_path), "op", "half") == [
        "-DDTYPE_X=half", "-DORIG_DTYPE_X=DT_FLOAT16", "-DDTYPE_WEIGHT_SCALE=half",
        "-DORIG_DTYPE_WEIGHT_SCALE=DT_FLOAT16", "-DDTYPE_Y=half", "-DORIG_DTYPE_Y=DT_FLOAT16"]


def test_key_dispatcher_calls_the_instance_of_the_key(tool):
    source = 'extern "C" __global__ __aicore__ void k(GM_ADDR x, GM_ADDR tiling) { }'
    params = tool.entry_params(source, "k")
    assert params == "GM_ADDR x, GM_ADDR tiling"
    code = tool.key_dispatcher("k", params, [1, 31])
    assert 'void k_tiling_key_31(GM_ADDR x, GM_ADDR tiling);' in code
    assert "    case 1: return k_tiling_key_1(x, tiling);" in code
    assert "no instance of the kernel for tiling key" in code


def log(*lines):
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("rc,out,scripts,ok,why", [
    (0, "", log("== python3 gen_data.py 8", "== exit 0", "== python3 compare_data.py float32", "PASSED!"),
     "yes", "1 compare_data.py run(s)"),
    (0, "", log("== python3 compare_data.py float32", "FAILED! mismatches=3/64"), "no", "golden comparison: FAILED!"),
    (0, "", log("== python3 gen_data.py 8", "== exit 0"), "no golden", "compares no output"),
    (1, "ms_ops k: block 0: Adds: pipe race", log("== python3 compare_data.py float32", "PASSED!"), "no",
     "twin: k: block 0: Adds: pipe race"),
    (0, "ms_ops k: block 0: kernel end: warning: 1 tensor(s) still allocated",
     log("== python3 compare_data.py float32", "PASSED!"), "yes", "1 compare_data.py run(s)"),
    (0, "", log("ModuleNotFoundError: No module named 'tensorflow'"), "no", "need Python module(s) tensorflow"),
    (1, "[  FAILED  ] T.case", "", "no", "test: [  FAILED  ] T.case"),
])
def test_verdict(tool, rc, out, scripts, ok, why):
    got_ok, got_why = tool.verdict(rc, out, scripts)
    assert got_ok == ok
    assert why in got_why


def test_build_tree_puts_the_checkout_four_levels_up(tool, tmp_path):
    checkout = tmp_path / "ops-nn"
    (checkout / "experimental" / "loss").mkdir(parents=True)
    (checkout / "README.md").write_text("ops-nn")
    run_dir = tool.build_tree(str(tmp_path / "work"), str(checkout))
    up = os.path.join(run_dir, "..", "..", "..", "..")
    assert os.path.isdir(os.path.join(up, "experimental", "loss"))
    assert open(os.path.join(up, "README.md")).read() == "ops-nn"
    assert sorted(os.listdir(checkout)) == ["README.md", "experimental"]  # the checkout is not written


# ---- tools/run_asc_samples.py (asc-devkit's single-source samples) ----

@pytest.fixture(scope="module")
def samples_tool():
    spec = importlib.util.spec_from_file_location("run_asc_samples", os.path.join(ROOT, "tools", "run_asc_samples.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


TINY_ASC = """#include "acl/acl.h"
#include "kernel_operator.h"
#include "data_utils.h"
#include "tiling/platform/platform_ascendc.h"

__global__ __cube__ void tiny_custom(__gm__ uint8_t *a, __gm__ uint8_t *c)
{
    AscendC::GlobalTensor<float> ag, cg;
    ag.SetGlobalBuffer((__gm__ float *)a, 8);
    cg.SetGlobalBuffer((__gm__ float *)c, 8);
    AscendC::LocalTensor<float> l1(AscendC::TPosition::A1, 0, 8);
    AscendC::DataCopy(l1, ag, 8);
    AscendC::PipeBarrier<PIPE_ALL>();
    AscendC::DataCopy(cg, l1, 8);
}

int32_t main(int32_t argc, char *argv[])
{
    aclInit(nullptr);
    return 0;
}
"""


def test_kernel_part_drops_main_and_the_host_headers(samples_tool):
    part = samples_tool.kernel_part(TINY_ASC)
    assert "aclInit" not in part and "int32_t main" not in part
    assert '#include "kernel_operator.h"' in part
    for host in ("acl/acl.h", "data_utils.h", "platform_ascendc.h"):
        assert host not in part


def test_sample_driver_compiles_around_a_kernel(samples_tool, tmp_path):
    sample = samples_tool.Sample("tiny", "x", "tiny.asc", "copy", "cube", 1, "tiny_custom(a0, out)",
                                 [("input/x1_gm.bin", 32)], 32)
    src = samples_tool.kernel_part(TINY_ASC) + samples_tool.driver(sample)
    assert 'Read("input/x1_gm.bin", 32)' in src and "ms_ops::twin::RunAsAic(); tiny_custom(a0, out);" in src
    path = tmp_path / "tiny.cpp"
    path.write_text(src)
    p = subprocess.run(["g++", "-fsyntax-only", "-std=c++17", *samples_tool.flags(), str(path)], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
