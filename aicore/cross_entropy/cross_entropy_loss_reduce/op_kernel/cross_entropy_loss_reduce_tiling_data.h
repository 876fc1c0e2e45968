// Tiling of cross_entropy_loss_reduce (and of its gradient, which walks the tokens the same way),
// shared by the host tiling function and the kernels.
#ifndef MS_OPS_CROSS_ENTROPY_LOSS_REDUCE_TILING_DATA_H_
#define MS_OPS_CROSS_ENTROPY_LOSS_REDUCE_TILING_DATA_H_

#include <cstdint>

struct CrossEntropyLossReduceTilingData {
  int64_t rows;         // N, the tokens
  int64_t ignoreIndex;  // target value of the tokens that do not count
  uint32_t chunkRows;   // tokens per UB chunk (a multiple of 8)
  uint32_t reduction;   // CeReduction: 0 mean, 1 sum, 2 none
};

// Tiling keys by the dtype of target; the kernels test the same literals.
constexpr uint64_t kCelrKeyI32 = 1;
constexpr uint64_t kCelrKeyI64 = 2;

#endif  // MS_OPS_CROSS_ENTROPY_LOSS_REDUCE_TILING_DATA_H_
