"""One factory that turns an op description into a MindSpore ``ops.Custom`` primitive.

On CPU the primitive calls ``libms_ops_cpu.so:<Op>`` (the kernel run through the AscendC twin);
on Ascend it calls the CANN custom op ``aclnn<Op>Msops``. Shapes and dtypes are inferred in C++
(``<Op>InferShape``/``<Op>InferType`` in the same library), which keeps GRAPH mode working with
dynamic shapes. Primitives are cached per attribute tuple, so each distinct configuration builds
its primitive (and its bprop's gradient primitives) once; the device target is read then, so
set it before the first op call.
"""
import functools
from dataclasses import dataclass
from typing import Callable, Optional, Tuple

import mindspore as ms
from mindspore import ops
from mindspore.ops import CustomRegOp, DataType

from ms_ops._lib import cpu_library_path

_PY_TYPES = {"int": int, "float": float, "bool": bool, "str": str}

# Every primitive carries the name of the public function it runs for, so that a kernel's error
# message names what the user called (a kernel can serve another function: the cross-entropy
# kernels run for fused_linear_cross_entropy, gradient kernels for their forward op).
API_ATTR = "api"

F32 = DataType.F32_Default
F16 = DataType.F16_Default
BF16 = DataType.BF16_Default
I32 = DataType.I32_Default
I64 = DataType.I64_Default
U8 = DataType.U8_Default
BOOL = DataType.BOOL_Default


@dataclass(frozen=True)
class OpDesc:
    """What MindSpore needs to know about one kernel.

    name: the snake_case op name (``aicore/<name>/``); the kernel symbol is its CamelCase form.
    inputs/outputs: tensor names in kernel argument order (as in the CANN OpDef).
    attrs: ``(name, type)`` pairs, type in ``int``/``float``/``bool``/``str``.
    dtype_rows: supported dtype combinations, one ``DataType`` per input then per output.
    """
    name: str
    inputs: Tuple[str, ...]
    outputs: Tuple[str, ...]
    attrs: Tuple[Tuple[str, str], ...]
    dtype_rows: Tuple[Tuple[tuple, ...], ...]

    @property
    def camel(self):
        return "".join(part.capitalize() for part in self.name.split("_"))


def _func_name(desc, target):
    if target == "Ascend":
        return f"aclnn{desc.camel}Msops"
    return f"{cpu_library_path()}:{desc.camel}"


def _reg_info(desc, func, target):
    reg = CustomRegOp(func if target == "Ascend" else desc.camel)
    for i, name in enumerate(desc.inputs):
        reg = reg.input(i, name, "required")
    for i, name in enumerate(desc.outputs):
        reg = reg.output(i, name, "required")
    for name, kind in (*desc.attrs, (API_ATTR, "str")):
        reg = reg.attr(name, "required", kind)
    for row in desc.dtype_rows:
        reg = reg.dtype_format(*row)
    return reg.target(target).get_op_info()


@functools.lru_cache(maxsize=None)
def custom_op(desc: OpDesc, bprop_factory: Optional[Callable] = None, api: Optional[str] = None,
              **attrs):
    """The ``ops.Custom`` for ``desc`` with attribute values ``attrs``, built once per distinct call.

    Every declared attribute must be given. ``bprop_factory(**attrs)`` builds the bprop. ``api``
    is the public function the kernel runs for (default: the kernel's own name); its errors name
    it. The cache wrapper also makes MindSpore's GRAPH-mode compiler run this function in Python
    at compile time instead of parsing it (arguments are compile-time constants).
    """
    missing = [n for n, _ in desc.attrs if n not in attrs]
    extra = sorted(set(attrs) - {n for n, _ in desc.attrs})
    if missing or extra:
        raise TypeError(f"ms_ops {desc.name}: attributes missing {missing} / unknown {extra}")
    # MindSpore's attribute casts are strict (an int is not a float): coerce to the declared type.
    values = {n: _PY_TYPES[kind](attrs[n]) for n, kind in desc.attrs}
    target = ms.get_context("device_target")
    func = _func_name(desc, target)
    bprop = bprop_factory(**values) if bprop_factory is not None else None
    prim = ops.Custom(func, out_shape=None, out_dtype=None, func_type="aot", bprop=bprop,
                      reg_info=_reg_info(desc, func, target))
    for name, value in (*values.items(), (API_ATTR, api or desc.name)):
        prim.add_prim_attr(name, value)
    return prim
