// Tiling of moe_init_routing_grad (MoeInitRoutingV2Grad semantics), shared by kernel and host.
#ifndef MS_OPS_MOE_INIT_ROUTING_GRAD_TILING_DATA_H_
#define MS_OPS_MOE_INIT_ROUTING_GRAD_TILING_DATA_H_

#include <cstdint>

// Tiling keys select the element type of grad_expanded_x / grad_x.
constexpr uint64_t kMoeInitRoutingGradKeyFloat = 1;
constexpr uint64_t kMoeInitRoutingGradKeyHalf = 2;
constexpr uint64_t kMoeInitRoutingGradKeyBFloat16 = 3;

struct MoeInitRoutingGradTilingData {
  int64_t rows;          // R, rows of grad_x
  int64_t topK;          // K
  int64_t hidden;        // H
  int64_t gradRows;      // rows of grad_expanded_x seen as [gradRows, H]: A (dropless) or E*C
  int64_t rowsPerBlock;  // contiguous rows of grad_x owned by a block
  int64_t rowsPerChunk;  // rows whose K indices are loaded into UB at once
  int64_t hiddenChunk;   // elements of a row per UB chunk (== hidden unless the row is too big)
};

#endif  // MS_OPS_MOE_INIT_ROUTING_GRAD_TILING_DATA_H_
