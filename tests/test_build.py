"""Tests of ms_ops/_build.py's incremental build, on a tiny fake aicore tree in a temp folder: an
object is reused only while the content of its source, of every header it includes and the flags
are unchanged, and the library is relinked only when needed."""
import ctypes
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD_PY = os.path.join(ROOT, "ms_ops", "_build.py")

EXPORT = 'extern "C" __attribute__((visibility("default")))'
TREE = {
    "aicore/twin/twin.h": "#pragma once\n#define TWIN_VALUE 1\n",
    "aicore/twin/twin_runtime.cpp": f'#include "twin.h"\n{EXPORT} int twin_value() {{ return TWIN_VALUE; }}\n',
    "aicore/common/shared.h": "#pragma once\n#define SHARED_VALUE 10\n",
    # new layout, aicore/<family>/<op>/...
    "aicore/fam/op_a/op_kernel/op_a.cpp": f'#include "shared.h"\n{EXPORT} int op_a() {{ return SHARED_VALUE + 1; }}\n',
    "aicore/fam/op_a/op_host/op_a_cpu.cpp": f'#include "twin.h"\n{EXPORT} int op_a_host() {{ return TWIN_VALUE; }}\n',
    "aicore/fam/op_a/op_host/op_a_def.cpp": "CANN only: not part of the CPU build\n",
    # old layout, aicore/<op>/...
    "aicore/op_b/op_kernel/op_b.cpp": f'#include "shared.h"\n{EXPORT} int op_b() {{ return SHARED_VALUE + 2; }}\n',
    "aicore/op_b/op_host/op_b_cpu.cpp": f'{EXPORT} int op_b_host() {{ return 0; }}\n',
}
SOURCES = sorted(p for p in TREE if p.endswith(".cpp") and not p.endswith("_def.cpp"))


def _load_build():
    spec = importlib.util.spec_from_file_location("_ms_ops_build_test", BUILD_PY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


B = _load_build()


@pytest.fixture
def tree(tmp_path):
    for rel, text in TREE.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(tmp_path)


def build(root, **kw):
    """Builds the fake tree; returns (sources compiled, relative to root; whether it linked)."""
    msgs = []
    B.compile_library(B.cpu_sources(root), lib_path(root), root, log=msgs.append, **kw)
    compiled = sorted(m.split("] ", 1)[1] for m in msgs if m.startswith("compiling ["))
    return compiled, any(m.startswith("linked ") for m in msgs)


def lib_path(root):
    return os.path.join(root, "lib", "libfake.so")


def call(root, name):
    # A fresh copy per call: dlopen would hand back an already loaded library of the same name.
    copy = os.path.join(root, f"load{time.monotonic_ns()}.so")
    shutil.copy(lib_path(root), copy)
    return getattr(ctypes.CDLL(copy), name)()


def edit(root, rel, old, new):
    path = os.path.join(root, rel)
    with open(path) as f:
        text = f.read()
    assert old in text
    with open(path, "w") as f:
        f.write(text.replace(old, new))


def test_sources_at_any_depth(tree):
    assert [os.path.relpath(p, tree) for p in B.cpu_sources(tree)] == SOURCES


def test_include_dirs_skip_missing_folders(tree):
    aicore = os.path.join(tree, "aicore")
    assert B.include_dirs(tree) == [os.path.join(aicore, "twin"), os.path.join(aicore, "common"), aicore]
    os.makedirs(os.path.join(tree, "aicore", "ms_cpu"))
    assert os.path.join(tree, "aicore", "ms_cpu") in B.include_dirs(tree)


def test_header_edit_recompiles_exactly_its_includers(tree):
    os.makedirs(os.path.join(tree, "lib"))
    assert build(tree) == (SOURCES, True)
    assert call(tree, "op_a") == 11
    assert build(tree) == ([], False)

    edit(tree, "aicore/common/shared.h", "10", "20")
    assert build(tree) == (["aicore/fam/op_a/op_kernel/op_a.cpp", "aicore/op_b/op_kernel/op_b.cpp"], True)
    assert (call(tree, "op_a"), call(tree, "op_b"), call(tree, "twin_value")) == (21, 22, 1)

    edit(tree, "aicore/twin/twin.h", "1", "5")
    assert build(tree) == (["aicore/fam/op_a/op_host/op_a_cpu.cpp", "aicore/twin/twin_runtime.cpp"], True)
    assert (call(tree, "op_a_host"), call(tree, "op_a")) == (5, 21)

    # Back to the first content: the objects of then are found again, only the link is redone.
    edit(tree, "aicore/common/shared.h", "20", "10")
    assert build(tree) == ([], True)
    assert call(tree, "op_a") == 11


def test_source_edit_and_new_mtimes(tree):
    os.makedirs(os.path.join(tree, "lib"))
    build(tree)
    # A fresh clone: every file has a new mtime but the same content.
    later = time.time() + 100
    for rel in TREE:
        os.utime(os.path.join(tree, rel), (later, later))
    assert build(tree) == ([], False)

    edit(tree, "aicore/op_b/op_kernel/op_b.cpp", "+ 2", "+ 3")
    assert build(tree) == (["aicore/op_b/op_kernel/op_b.cpp"], True)
    assert call(tree, "op_b") == 13


def test_flags_and_missing_or_replaced_library(tree):
    os.makedirs(os.path.join(tree, "lib"))
    build(tree)
    assert build(tree, extra_flags=["-DSHARED_EXTRA=1"]) == (SOURCES, True)

    os.remove(lib_path(tree))
    assert build(tree) == ([], True)
    with open(lib_path(tree), "ab") as f:  # changed by something else
        f.write(b"\0")
    assert build(tree) == ([], True)
    assert call(tree, "op_a") == 11


def test_header_edited_while_compiling_is_not_cached(tree, monkeypatch):
    os.makedirs(os.path.join(tree, "lib"))
    run = B._run

    def run_then_edit(cmd, **kw):
        out = run(cmd, **kw)
        if cmd[-3].endswith("op_a.cpp"):  # g++ ... -c op_a.cpp -o x.o: g++ read the old shared.h
            edit(tree, "aicore/common/shared.h", "10", "30")
        return out

    monkeypatch.setattr(B, "_run", run_then_edit)
    build(tree)
    monkeypatch.setattr(B, "_run", run)
    compiled, _ = build(tree)
    assert "aicore/fam/op_a/op_kernel/op_a.cpp" in compiled
    assert call(tree, "op_a") == 31


def test_concurrent_builds(tree):
    os.makedirs(os.path.join(tree, "lib"))
    code = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('b', sys.argv[1]); "
            "b = importlib.util.module_from_spec(spec); spec.loader.exec_module(b); "
            "b.compile_library(b.cpu_sources(sys.argv[2]), sys.argv[3], sys.argv[2])")
    procs = [subprocess.Popen([sys.executable, "-c", code, BUILD_PY, tree, lib_path(tree)],
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for p in procs:
        assert p.wait() == 0, p.stderr.read()
    assert build(tree) == ([], False)
    assert call(tree, "op_b") == 12
    leftovers = [f for f in os.listdir(os.path.join(tree, "build", "kernels")) if ".tmp" in f]
    assert leftovers == [] and os.listdir(os.path.join(tree, "lib")) == ["libfake.so"]


def test_progress_lines(tree):
    os.makedirs(os.path.join(tree, "lib"))
    msgs = []
    B.compile_library(B.cpu_sources(tree), lib_path(tree), tree, log=msgs.append)
    assert msgs[0] == f"0 of {len(SOURCES)} objects up to date, compiling {len(SOURCES)}"
    assert re.fullmatch(r"linked lib/libfake\.so in \d+\.\d s", msgs[-1])
    edit(tree, "aicore/op_b/op_host/op_b_cpu.cpp", "0;", "1;")
    msgs.clear()
    B.compile_library(B.cpu_sources(tree), lib_path(tree), tree, log=msgs.append)
    assert msgs[:2] == [f"{len(SOURCES) - 1} of {len(SOURCES)} objects up to date, compiling 1",
                        "compiling [1/1] aicore/op_b/op_host/op_b_cpu.cpp"]
