"""ms_ops: fused LLM-training kernels for MindSpore, with gradients, in GRAPH and PYNATIVE mode.

Each op is an AscendC kernel (``aicore/``) registered as a MindSpore ``Custom`` op. On the CPU it
runs through ms_ops' twin of the AscendC API; the Ascend build of the same sources is written to
the CANN spec but has not been compiled or run (no CANN toolkit or NPU was available).

Functions (``ms_ops.<name>``):

- MoE routing: :func:`moe_init_routing` (dispatch: group token copies by expert) and
  :func:`moe_finalize_routing` (combine: weighted sum back into token order), CANN's
  MoeInitRoutingV2 / MoeFinalizeRoutingV2; both differentiable.
- Cross entropy: :func:`fused_linear_cross_entropy` (the LM head's ``x @ W^T`` and its loss
  without the ``[N, V]`` logits, optionally vocabulary-parallel over a group; differentiable),
  and its kernels as forward-only functions :func:`fused_linear_online_max_sum`,
  :func:`fused_cross_entropy_loss_with_max_sum`, :func:`fused_linear_cross_entropy_loss_grad`.
- Attention: :func:`flash_attention_score` (MindSpore's signature) and xformers'
  :func:`memory_efficient_attention` with the masks of :mod:`ms_ops.attn_bias`;
  :func:`linear_attention` (ELU + 1 feature map, causal or not, linear in the sequence length);
  all differentiable.
- DeepSeek sparse attention: :func:`lightning_indexer` (top-k keys per query; differentiable
  through its values), :func:`sparse_flash_attention` (each query over only its selected keys;
  differentiable), and the indexer's losses :func:`sparse_lightning_indexer_kl_loss` and
  :func:`dense_lightning_indexer_kl_loss` (KL towards the main attention; gradients to the
  indexer's inputs only). MindSpore's signatures.

Paged KV cache: :class:`ms_ops.kv_cache.BlockManager` (reference-counted blocks, block tables,
fork and copy-on-write) and the kernels on the caches: ``reshape_and_cache``, ``copy_blocks`` (in
place) and ``paged_attention``.

Cells (``ms_ops.nn``): :class:`~ms_ops.nn.MoE`, :class:`~ms_ops.nn.FusedLinearCrossEntropyLoss`,
:class:`~ms_ops.nn.FlashAttention`, :class:`~ms_ops.nn.LinearAttention`, and
:func:`~ms_ops.nn.reset_graph` to keep using a GRAPH-mode Cell after a kernel refused a batch.
"""
from ms_ops.ops import (attn_bias, flash_attention_score, fused_cross_entropy_loss_with_max_sum,
                        fused_linear_cross_entropy, fused_linear_cross_entropy_loss_grad,
                        fused_linear_online_max_sum, lightning_indexer, linear_attention, memory_efficient_attention,
                        moe_finalize_routing, moe_finalize_routing_grad, moe_init_routing, moe_init_routing_grad,
                        sparse_flash_attention, sparse_lightning_indexer_kl_loss, dense_lightning_indexer_kl_loss)
from ms_ops.ops.decode import copy_blocks, paged_attention, reshape_and_cache
from ms_ops import kv_cache, nn

__version__ = "0.1.0"

__all__ = ["flash_attention_score", "memory_efficient_attention", "attn_bias", "linear_attention",
           "moe_init_routing", "moe_finalize_routing", "moe_init_routing_grad",
           "moe_finalize_routing_grad", "fused_linear_cross_entropy",
           "fused_linear_online_max_sum", "fused_cross_entropy_loss_with_max_sum",
           "fused_linear_cross_entropy_loss_grad", "sparse_flash_attention", "lightning_indexer",
           "sparse_lightning_indexer_kl_loss", "dense_lightning_indexer_kl_loss", "reshape_and_cache",
           "copy_blocks", "paged_attention", "kv_cache", "nn"]
