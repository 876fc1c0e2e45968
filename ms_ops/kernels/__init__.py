"""Kernel descriptions, one module per op family: what ``ms_ops/_custom.py`` needs to build each
kernel's ``ops.Custom`` (the kernels themselves are ``aicore/<family>/<op>/``). The public
functions (:mod:`ms_ops.ops`) and the gradient wiring (:mod:`ms_ops.bprop`) both import from here,
so imports run one way: nn -> ops -> bprop -> kernels -> _custom.
"""
