// Tiling of the indexer's gradient kernels (lightning_indexer_grad; host and kernel). Rows and
// batches as in lightning_indexer_tiling_data.h.
//
// A work item is one query token and key head: its live selected keys (indices >= 0, at most
// topK, padded to kPad, a multiple of 64) are gathered, scored against the token's query group
// and differentiated. The block's fp32 GM workspace (offsets in floats): the query group
// [group, dim], the gathered keys [kPad, dim], scores and their gradient [group, kPad], the
// token's query-group and gathered-key gradients, and the block's own key-gradient partial sum
// [keyRows, dim] (keyRows = T2 * N2), which the blocks add up in block order after a SyncAll:
// the key gradient is deterministic.
#ifndef MS_OPS_DSA_LIGHTNING_INDEXER_GRAD_TILING_DATA_H_
#define MS_OPS_DSA_LIGHTNING_INDEXER_GRAD_TILING_DATA_H_

#include <cstdint>

#include "../common/cube_tiling.h"

struct LightningIndexerGradTilingData {
  int64_t batch;
  int64_t seq1, seq2;
  uint32_t qLenMode, kLenMode;
  int64_t n1, n2, group, dim;
  int64_t topK;          // keys per token: sparse_indices' last dim, or (dense) the most visible keys
  // kPad: lanes of one run of a token's keys (the KL losses take longer lists in runs of kPad).
  uint32_t sparseMode;    // the dense kernel's visible keys: 0 all, 3 right-down causal
  uint32_t kPad;
  int64_t keyRows;  // T2 * N2 rows of dim in key and d_key
  uint64_t offQ, offK, offS, offDs, offDq, offDk, offPart;
  uint64_t blockFloats;
  // sparse_lightning_indexer_grad_kl_loss only (0 otherwise): the main attention's heads, head
  // and rope dims, scale, and its query group [mainGroup, mainDim + ropeDim], gathered keys
  // [kPad, mainDim + ropeDim] and scores [mainGroup, kPad]; the per-token losses
  // [tokens1 * n2] after all blocks' workspaces (offLoss from the workspace start).
  int64_t tokens1;
  int64_t mainN1, mainN2, mainGroup, mainDim, ropeDim;
  float scale;
  // The KL losses' pre_tokens/next_tokens band (band 0: none): query i of a batch with `valid`
  // queries and `keys` keys counts key j only if a - preTokens <= j <= a + nextTokens, a = i +
  // keys - valid (anchored at the bottom-right; sparse_mode 3 caps nextTokens at 0).
  uint32_t band;
  int64_t preTokens, nextTokens;
  // offIp: the token's indexer scores and unnormalised targets, run after run ([2, topK rounded
  // up to kPad]), between the KL kernel's two passes.
  uint64_t offMq, offMk, offMs, offIp, offLoss;
  TCubeTiling mmNT;  // scores = query group x gathered keysᵀ (both the indexer's and the main)
  TCubeTiling mmNN;  // d query group = d scores x gathered keys
  TCubeTiling mmTN;  // d gathered keys = d scoresᵀ x query group
};

#endif  // MS_OPS_DSA_LIGHTNING_INDEXER_GRAD_TILING_DATA_H_
