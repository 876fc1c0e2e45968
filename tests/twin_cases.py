"""Builds a library of twin test kernels (tests/twin/<name>.cpp with the twin's sources) for ctypes:
the fixtures of test_twin.py, test_twin_api.py and test_twin_gemm.py; and bf16 bit patterns."""
import ctypes
import glob
import importlib.util
import os

import numpy as np
import scipy_openblas32

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_build_module():
    """ms_ops/_build.py by path (importing the package would import MindSpore)."""
    spec = importlib.util.spec_from_file_location("_ms_ops_build", os.path.join(ROOT, "ms_ops", "_build.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def build_cases(out_dir, name, signatures, extra_flags=()):
    """The ctypes library of tests/twin/<name>.cpp, built with the library's flags and then
    `extra_flags`; every function in `signatures` returns int."""
    # The twin's Matmul leaves the BLAS symbols to the process: load them globally first.
    ctypes.CDLL(os.path.join(scipy_openblas32.get_lib_dir(), "libscipy_openblas.so"), mode=ctypes.RTLD_GLOBAL)
    out = os.path.join(str(out_dir), f"lib{name}.so")
    sources = [os.path.join(ROOT, "tests", "twin", f"{name}.cpp")]
    sources += sorted(glob.glob(os.path.join(ROOT, "aicore", "twin", "*.cpp")))
    load_build_module().compile_library(sources, out, ROOT, extra_flags)
    so = ctypes.CDLL(out)
    for fn, args in signatures.items():
        getattr(so, fn).argtypes = args
        getattr(so, fn).restype = ctypes.c_int
    return so


def P(a):
    """A numpy array's data as a void pointer."""
    return a.ctypes.data_as(ctypes.c_void_p)


def bf16_rne(x):
    """bf16 bit patterns (uint16) of float32 x, rounded to nearest even; NaN stays a quiet NaN."""
    u = x.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), (u >> 16).astype(np.uint16) | 0x40, r).astype(np.uint16)
