"""Public functional API of ms_ops."""
from ms_ops.ops import attn_bias
from ms_ops.ops.attention import flash_attention_score
from ms_ops.ops.dsa import dense_lightning_indexer_kl_loss, lightning_indexer, sparse_lightning_indexer_kl_loss
from ms_ops.ops.linear_attention import linear_attention
from ms_ops.ops.cross_entropy import (fused_cross_entropy_loss_with_max_sum,
                                      fused_linear_cross_entropy,
                                      fused_linear_cross_entropy_loss_grad,
                                      fused_linear_online_max_sum)
from ms_ops.ops.decode import copy_blocks, paged_attention, reshape_and_cache
from ms_ops.ops.memory_efficient_attention import memory_efficient_attention
from ms_ops.ops.moe_routing import (moe_finalize_routing, moe_finalize_routing_grad, moe_init_routing,
                                   moe_init_routing_grad)
from ms_ops.ops.sparse_flash_attention import sparse_flash_attention

__all__ = ["flash_attention_score", "memory_efficient_attention", "attn_bias", "linear_attention",
           "moe_init_routing", "moe_finalize_routing", "moe_init_routing_grad",
           "moe_finalize_routing_grad", "fused_linear_cross_entropy",
           "fused_linear_online_max_sum", "fused_cross_entropy_loss_with_max_sum",
           "fused_linear_cross_entropy_loss_grad", "reshape_and_cache", "copy_blocks", "paged_attention",
           "sparse_flash_attention",
           "lightning_indexer", "sparse_lightning_indexer_kl_loss", "dense_lightning_indexer_kl_loss"]
