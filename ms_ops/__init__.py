"""ms_ops: fused LLM-training kernels for MindSpore, one AscendC source for Ascend and CPU."""
from ms_ops.ops import (fused_cross_entropy_loss_with_max_sum, fused_linear_cross_entropy,
                        fused_linear_cross_entropy_loss_grad, fused_linear_online_max_sum,
                        moe_finalize_routing, moe_finalize_routing_grad, moe_init_routing,
                        moe_init_routing_grad)
from ms_ops import nn

__version__ = "0.1.0"

__all__ = ["moe_init_routing", "moe_finalize_routing", "moe_init_routing_grad",
           "moe_finalize_routing_grad", "fused_linear_cross_entropy",
           "fused_linear_online_max_sum", "fused_cross_entropy_loss_with_max_sum",
           "fused_linear_cross_entropy_loss_grad", "nn"]
