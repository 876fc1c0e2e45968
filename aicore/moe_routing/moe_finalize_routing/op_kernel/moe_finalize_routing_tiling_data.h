// Tiling of moe_finalize_routing, shared by the host tiling function and the kernel.
#ifndef MS_OPS_MOE_FINALIZE_ROUTING_TILING_DATA_H_
#define MS_OPS_MOE_FINALIZE_ROUTING_TILING_DATA_H_

#include <cstdint>

struct MoeFinalizeRoutingTilingData {
  int64_t rows;          // R: output rows (tokens)
  int64_t topK;          // K: expanded rows combined into each output row
  int64_t hidden;        // H
  int64_t expandedRows;  // N: rows of expanded_x, flat (E*C in drop/pad modes)
  int64_t biasRows;      // rows of bias (0 without bias)
  int64_t rowsPerBlock;  // every block gets this many rows ...
  int64_t rowsRemainder; // ... and the first rowsRemainder blocks one more
  uint32_t hChunk;       // H elements per UB chunk (a multiple of 16)
  uint32_t batchRows;    // rows whose indices, scales and experts are loaded at once
  uint32_t dropPadMode;  // 0..3: bit 1 selects the row-major index layout
  uint32_t hasX1;
  uint32_t hasX2;
  uint32_t hasBias;
  uint32_t hasScales;
  uint32_t reserved;
};

// Tiling keys (data dtype, scales dtype); the kernel tests the same literals with TILING_KEY_IS.
constexpr uint64_t kMoeFinalizeRoutingKeyF32 = 1;
constexpr uint64_t kMoeFinalizeRoutingKeyF16 = 2;
constexpr uint64_t kMoeFinalizeRoutingKeyF16ScalesF32 = 3;
constexpr uint64_t kMoeFinalizeRoutingKeyBF16 = 4;
constexpr uint64_t kMoeFinalizeRoutingKeyBF16ScalesF32 = 5;

#endif  // MS_OPS_MOE_FINALIZE_ROUTING_TILING_DATA_H_
