"""Cells built on ms_ops kernels."""
from ms_ops.nn.cross_entropy import FusedLinearCrossEntropyLoss
from ms_ops.nn.moe_routing import MoE

__all__ = ["MoE", "FusedLinearCrossEntropyLoss"]
