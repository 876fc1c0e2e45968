"""Builds the CPU kernel library from the ``aicore/`` sources with g++.

Used by ``setup.py`` (at install time) and by the twin's own tests (which compile test kernels
against the same headers with the same flags). Kept free of MindSpore imports so that it runs in
pip's isolated build environment.
"""
import glob
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

LIB_NAME = "libms_ops_cpu.so"

CXXFLAGS = [
    "-O3", "-march=native", "-std=c++17", "-fPIC", "-fopenmp",
    # MindSpore 2.10 is built with the old libstdc++ ABI; AotExtra passes std::string by value.
    "-D_GLIBCXX_USE_CXX11_ABI=0",
    "-fvisibility=hidden",
    "-Wall", "-Wextra", "-Wno-unused-parameter",
]


def aicore_dir(root):
    return os.path.join(root, "aicore")


def include_dirs(root):
    base = aicore_dir(root)
    return [os.path.join(base, "twin"), os.path.join(base, "common"), base]


def cpu_sources(root):
    """Twin runtime, every op kernel and every op's MindSpore CPU entry.

    CANN-only host files (``*_def.cpp``, ``*_tiling.cpp``, ``*_infershape.cpp``) are not part of
    the CPU build: they need the CANN headers.
    """
    base = aicore_dir(root)
    srcs = sorted(glob.glob(os.path.join(base, "twin", "*.cpp")))
    srcs += sorted(glob.glob(os.path.join(base, "*", "op_kernel", "*.cpp")))
    srcs += sorted(glob.glob(os.path.join(base, "*", "op_host", "*_cpu.cpp")))
    return srcs


def _run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("g++ failed:\n" + " ".join(cmd) + "\n" + proc.stdout + proc.stderr)
    if proc.stderr:
        sys.stderr.write(proc.stderr)


def compile_library(sources, output, root, extra_flags=()):
    """Compiles ``sources`` (one g++ per file, in parallel) and links the shared library ``output``.

    Raises with g++'s output on failure.
    """
    flags = [*CXXFLAGS, *extra_flags, *(f"-I{d}" for d in include_dirs(root))]
    obj_dir = output + ".objs"
    os.makedirs(obj_dir, exist_ok=True)
    objects = [os.path.join(obj_dir, f"{i}_{os.path.basename(s)}.o") for i, s in enumerate(sources)]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(lambda so: _run(["g++", *flags, "-c", so[0], "-o", so[1]]),
                      zip(sources, objects)))
    # BLAS symbols (scipy_cblas_sgemm, ...) stay undefined here: ms_ops loads scipy-openblas32's
    # library with RTLD_GLOBAL before this library, so they resolve at load time in any venv.
    _run(["g++", *flags, "-shared", "-o", output, *objects])
    shutil.rmtree(obj_dir)
    return output


def build(root, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    return compile_library(cpu_sources(root), os.path.join(out_dir, LIB_NAME), root)


if __name__ == "__main__":
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    print(build(here, os.path.join(here, "ms_ops", "lib")), file=sys.stderr)
