"""Locates the CPU kernel library and makes its BLAS dependency loadable."""
import ctypes
import functools
import os

from ms_ops._build import LIB_NAME

_LIB_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib")


@functools.lru_cache(maxsize=None)
def cpu_library_path():
    """Absolute path of ``libms_ops_cpu.so``, with scipy-openblas32 loaded globally first.

    The library leaves the BLAS symbols undefined so that one build works in any environment:
    loading OpenBLAS with ``RTLD_GLOBAL`` here lets the dynamic linker resolve them when
    MindSpore (or a test through ctypes) opens our library.
    """
    import scipy_openblas32

    blas = os.path.join(scipy_openblas32.get_lib_dir(), f"lib{scipy_openblas32.get_library()}.so")
    # The twin runs one single-threaded sgemm per block; OpenBLAS's own worker pool would only
    # spin beside the block threads.
    ctypes.CDLL(blas, mode=ctypes.RTLD_GLOBAL).scipy_openblas_set_num_threads(1)
    path = os.path.join(_LIB_DIR, LIB_NAME)
    if not os.path.exists(path):
        raise RuntimeError(
            f"ms_ops: the CPU kernel library {path} is missing; reinstall with `pip install .` "
            "(or run `python ms_ops/_build.py` in a source checkout)")
    return path
