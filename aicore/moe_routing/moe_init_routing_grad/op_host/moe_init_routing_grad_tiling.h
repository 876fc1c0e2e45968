// Tiling of moe_init_routing_grad: pure function of shapes, attributes, dtype and platform, shared
// by the CANN TilingFunc and the CPU entry.
//
// Each block owns a contiguous range of grad_x rows. UB holds the indices of rowsPerChunk rows,
// 2 input and 2 output row buffers, and for fp16/bf16 an fp32 accumulator and an fp32 cast
// buffer (fp32 accumulates straight into the output buffer). Rows that do not fit are reduced in
// hiddenChunk pieces.
#ifndef MS_OPS_MOE_INIT_ROUTING_GRAD_TILING_H_
#define MS_OPS_MOE_INIT_ROUTING_GRAD_TILING_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "../../moe_init_routing/op_host/moe_init_routing_infer.h"
#include "../op_kernel/moe_init_routing_grad_tiling_data.h"
#include "platform.h"

namespace ms_ops {

struct MoeInitRoutingGradArgs {
  int64_t gradRank = 0;   // 2 (dropless) or 3 (drop/pad)
  int64_t gradRows = 0;   // A, or E*C
  int64_t hidden = 0;     // H
  int64_t flatCount = 0;  // len(expanded_row_idx) = R*K
  uint64_t dtypeKey = 0;  // kMoeInitRoutingGradKey* of grad_expanded_x's dtype
  int64_t topK = 0;
  int64_t dropPadMode = 0;
  int64_t activeNum = 0;
};

struct MoeInitRoutingGradPlan {
  MoeInitRoutingGradTilingData tiling{};
  uint32_t blockDim = 0;
  uint64_t tilingKey = 0;
};

// Why a configuration was refused: the argument to blame and what is wrong with it.
struct MoeInitRoutingGradRefusal {
  std::string arg, reason;
};

inline bool MoeInitRoutingGradTiling(const MoeInitRoutingGradArgs &a, const PlatformInfo &plat,
                                     MoeInitRoutingGradPlan *plan, MoeInitRoutingGradRefusal *why) {
  auto refuse = [why](const char *arg, const std::string &reason) {
    *why = MoeInitRoutingGradRefusal{arg, reason};
    return false;
  };
  int64_t elemBytes = 0;
  if (a.dtypeKey == kMoeInitRoutingGradKeyFloat) elemBytes = 4;
  if (a.dtypeKey == kMoeInitRoutingGradKeyHalf || a.dtypeKey == kMoeInitRoutingGradKeyBFloat16) elemBytes = 2;
  if (elemBytes == 0) return refuse("grad_expanded_x", "dtype must be float32, float16 or bfloat16");
  if (a.topK < 1) return refuse("top_k", "must be >= 1, got " + std::to_string(a.topK));
  if (a.dropPadMode != 0 && a.dropPadMode != 1)
    return refuse("drop_pad_mode", "must be 0 (dropless) or 1 (drop/pad), got " + std::to_string(a.dropPadMode));
  if (a.flatCount < 0 || a.flatCount % a.topK != 0)
    return refuse("expanded_row_idx", "length " + std::to_string(a.flatCount) + " is not a multiple of top_k=" +
                                          std::to_string(a.topK));
  if (a.hidden < 0 || a.gradRows < 0) return refuse("grad_expanded_x", "has a negative dim");
  if (a.dropPadMode == 0) {
    if (a.gradRank != 2) return refuse("grad_expanded_x", "must be 2-D [A, H] in dropless mode (drop_pad_mode=0)");
    const int64_t active = MoeInitRoutingActiveRows(a.flatCount, a.activeNum);
    if (a.gradRows != active)
      return refuse("grad_expanded_x", "has " + std::to_string(a.gradRows) + " rows, expected " +
                                           std::to_string(active) + " (len(expanded_row_idx)=" +
                                           std::to_string(a.flatCount) + ", active_num=" +
                                           std::to_string(a.activeNum) + ")");
  } else if (a.gradRank != 3) {
    return refuse("grad_expanded_x", "must be 3-D [E, C, H] in drop/pad mode (drop_pad_mode=1)");
  }

  const int64_t rows = a.flatCount / a.topK;
  MoeInitRoutingGradTilingData t{};
  t.rows = rows;
  t.topK = a.topK;
  t.hidden = a.hidden;
  t.gradRows = a.gradRows;
  const int64_t blocks = std::min<int64_t>(std::max<int64_t>(rows, 1), plat.aivCoreNum);
  t.rowsPerBlock = std::max<int64_t>(1, CeilDiv(rows, blocks));
  const int64_t blockDim = std::max<int64_t>(1, CeilDiv(rows, t.rowsPerBlock));

  // UB: the index chunk shrinks to one row's K indices before the row chunks shrink below H.
  const bool isFloat = elemBytes == 4;
  auto bytes = [](int64_t elems, int64_t size) { return static_cast<int64_t>(AlignUp(elems * size, kBlockBytes)); };
  auto need = [&](int64_t rowsPerChunk, int64_t chunk) {
    const int64_t rowBuf = bytes(std::max<int64_t>(chunk, 1), elemBytes);
    const int64_t accBuf = isFloat ? 0 : bytes(std::max<int64_t>(chunk, 1), 4);
    return bytes(rowsPerChunk * a.topK, 4) + 4 * rowBuf + 2 * accBuf;
  };
  const int64_t ub = plat.ubSize;
  int64_t rowsPerChunk = std::min<int64_t>(t.rowsPerBlock, std::max<int64_t>(1, 2048 / a.topK));
  if (need(rowsPerChunk, a.hidden) > ub) rowsPerChunk = 1;
  int64_t chunk = a.hidden;
  if (need(rowsPerChunk, chunk) > ub) {
    // Multiples of 64 elements keep every piece 32-byte aligned in GM and UB for both widths.
    const int64_t perElem = 4 * elemBytes + (isFloat ? 0 : 8);
    chunk = (ub - bytes(rowsPerChunk * a.topK, 4)) / perElem / 64 * 64;
    if (chunk < 64 || need(rowsPerChunk, chunk) > ub)
      return refuse("top_k", "the " + std::to_string(a.topK) + " indices of a row do not fit in UB (" +
                                 std::to_string(ub) + " bytes)");
  }
  t.rowsPerChunk = rowsPerChunk;
  t.hiddenChunk = chunk;

  plan->tiling = t;
  plan->blockDim = static_cast<uint32_t>(blockDim);
  plan->tilingKey = a.dtypeKey;
  return true;
}

}  // namespace ms_ops

#endif  // MS_OPS_MOE_INIT_ROUTING_GRAD_TILING_H_
