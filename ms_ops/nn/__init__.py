"""Cells built on ms_ops kernels, and :func:`reset_graph` to keep using a GRAPH-mode Cell after a
kernel refused its input."""
from ms_ops._graph import reset_graph
from ms_ops.nn.attention import FlashAttention
from ms_ops.nn.cross_entropy import FusedLinearCrossEntropyLoss
from ms_ops.nn.dsa import DSAttention, LightningIndexer
from ms_ops.nn.linear_attention import LinearAttention
from ms_ops.nn.moe_routing import MoE

__all__ = ["MoE", "FusedLinearCrossEntropyLoss", "FlashAttention", "LinearAttention", "LightningIndexer", "DSAttention",
           "reset_graph"]
