"""Installs ms_ops and builds its CPU kernel library (the aicore/ kernels on the AscendC twin).

The Ascend (CANN) build of the same kernels is `aicore/build_cann.sh`; it needs a CANN toolkit.
"""
import importlib.util
import os

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


def _load_build_module():
    # ms_ops/_build.py is loaded by path: importing the package would import MindSpore.
    spec = importlib.util.spec_from_file_location("ms_ops_build", os.path.join(ROOT, "ms_ops", "_build.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildWithKernels(build_py):
    """Builds libms_ops_cpu.so into ms_ops/lib before the package files are collected."""

    def run(self):
        _load_build_module().build(ROOT, os.path.join(ROOT, "ms_ops", "lib"))
        super().run()


setup(
    name="ms_ops",
    version="0.1.0",
    description="Fused LLM-training kernels (MoE routing, ...) for MindSpore on Ascend and CPU",
    python_requires=">=3.9",
    packages=["ms_ops", "ms_ops.ops", "ms_ops.nn", "ms_ops.reference", "ms_ops.kernels", "ms_ops.bprop"],
    package_dir={"ms_ops.bprop": "bprop"},
    package_data={"ms_ops": ["lib/*.so"]},
    install_requires=["mindspore==2.10.0", "numpy<2", "scipy-openblas32"],
    extras_require={"test": ["pytest", "pytest-xdist", "tqdm", "matplotlib"], "examples": ["tqdm", "matplotlib"]},
    cmdclass={"build_py": BuildWithKernels},
)
