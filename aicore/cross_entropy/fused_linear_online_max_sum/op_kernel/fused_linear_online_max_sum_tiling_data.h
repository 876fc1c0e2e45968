// Tiling of fused_linear_online_max_sum, shared by the host tiling function and the kernel.
#ifndef MS_OPS_FUSED_LINEAR_ONLINE_MAX_SUM_TILING_DATA_H_
#define MS_OPS_FUSED_LINEAR_ONLINE_MAX_SUM_TILING_DATA_H_

#include <cstdint>

#include "../../../common/cube_tiling.h"

struct FusedLinearOnlineMaxSumTilingData {
  int64_t rows;            // BT
  int64_t hidden;          // H
  int64_t vocab;           // V: rows of weight, the local vocabulary shard
  int64_t vocabStart;      // global id of weight row 0 (vocab_start_index)
  int64_t vocabEnd;        // first id past the shard (vocab_end_index, exclusive), any >= vocabStart
  int64_t rowGroups;       // R: row groups, whole 8-row groups each (block b: row group b % R)
  int64_t vocabGroups;     // Kg: vocabulary groups, whole nTile tiles each (block b: group b / R)
  uint32_t mTile;          // rows of a logits tile (a multiple of 8)
  uint32_t nTile;          // vocabulary columns of a logits tile; row stride of the workspace tile
  uint32_t chunkRows;      // tile rows per UB chunk of the vector pass
  uint32_t returnLogits;   // 1: tiles land in vocab_parallel_logits; 0: in the block's workspace
  uint64_t statsOffset;    // workspace bytes: Kg > 1: fp32 [Kg, 4, statsPitch] partial row statistics
  uint64_t statsPitch;     // BT rounded up to 8
  TCubeTiling mm;          // logits tile = input rows x weight rowsᵀ, fp32 out
};

// fp32 partial statistics per row and vocabulary group (Kg > 1): max, sum of exps relative to it,
// sum of logits, target logit.
constexpr uint32_t kFlomsStats = 4;

#endif  // MS_OPS_FUSED_LINEAR_ONLINE_MAX_SUM_TILING_DATA_H_
