// Tiling of fused_cross_entropy_loss_with_max_sum, shared by the host tiling function and the kernel.
#ifndef MS_OPS_FUSED_CROSS_ENTROPY_LOSS_WITH_MAX_SUM_TILING_DATA_H_
#define MS_OPS_FUSED_CROSS_ENTROPY_LOSS_WITH_MAX_SUM_TILING_DATA_H_

#include <cstdint>

struct FusedCrossEntropyLossWithMaxSumTilingData {
  int64_t rows;           // BT
  int64_t vocab;          // V: columns of vocab_parallel_logits and softmax (0 without logits)
  int64_t rowsPerBlock;   // every block gets this many rows ...
  int64_t rowsRemainder;  // ... and the first rowsRemainder blocks one more
  float labelSmoothing;   // α
  float invVocabSize;     // 1 / vocab_size, for the smoothing term (0 when α = 0)
  uint32_t statRows;      // rows whose four statistics are in UB at once (a multiple of 8)
  uint32_t tileRows;      // softmax tile: rows ...
  uint32_t tileCols;      // ... and columns (tileCols == V: whole rows, several per tile)
  uint32_t hasLogits;
};

// Tiling keys by the dtype of vocab_parallel_logits (float32 without logits); every other tensor
// is float32. The kernel tests the same literals.
constexpr uint64_t kFcelKeyF32 = 1;
constexpr uint64_t kFcelKeyF16 = 2;
constexpr uint64_t kFcelKeyBF16 = 3;

#endif  // MS_OPS_FUSED_CROSS_ENTROPY_LOSS_WITH_MAX_SUM_TILING_DATA_H_
