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
  int64_t groupsPerBlock;  // 8-row groups every block owns (whole target_mask bytes) ...
  int64_t groupsRemainder; // ... and the first groupsRemainder blocks one more
  uint32_t mTile;          // rows of a logits tile (a multiple of 8)
  uint32_t nTile;          // vocabulary columns of a logits tile; row stride of the workspace tile
  uint32_t chunkRows;      // tile rows per UB chunk of the vector pass
  uint32_t returnLogits;   // 1: tiles land in vocab_parallel_logits; 0: in the block's workspace
  // Returned logits only: their product cut into gemmRowGroups x gemmVocabGroups parts, one per
  // block, of at most gemmRows rows (the Matmul's single M); 0 otherwise.
  uint32_t gemmRowGroups;
  uint32_t gemmVocabGroups;
  uint32_t gemmRows;
  TCubeTiling mm;          // logits tile = input rows x weight rowsᵀ, fp32 out (M: mTile, or gemmRows)
};

#endif  // MS_OPS_FUSED_LINEAR_ONLINE_MAX_SUM_TILING_DATA_H_
