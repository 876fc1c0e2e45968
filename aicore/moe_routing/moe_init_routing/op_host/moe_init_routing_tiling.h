// Tiling of moe_init_routing: pure function of shapes, attributes, dtype and platform, shared by
// the CANN TilingFunc and the CPU entry.
//
// Each block owns a contiguous range of token rows, and (drop/pad mode) a range of experts whose
// empty slots it zero-fills. UB holds three int32 histograms (histCapacity entries: totals, this
// block's cursors, one block's counts), the id chunk buffers (MoeInitRoutingChunkUb) and 2 row
// buffers (3 in drop/pad mode: one is a zero row). A row longer than what is left is moved in
// hiddenChunk pieces. The user workspace holds each block's histogram and largest id.
#ifndef MS_OPS_MOE_INIT_ROUTING_TILING_H_
#define MS_OPS_MOE_INIT_ROUTING_TILING_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "../op_kernel/moe_init_routing_tiling_data.h"
#include "moe_init_routing_infer.h"
#include "platform.h"

namespace ms_ops {

// The attributes plus what the shapes and dtype tell.
struct MoeInitRoutingArgs : MoeInitRoutingAttrs {
  int64_t rows = 0;       // R
  int64_t topK = 0;       // K
  int64_t hidden = 0;     // H
  uint64_t dtypeKey = 0;  // kMoeInitRoutingKey* of x's dtype
};

struct MoeInitRoutingPlan {
  MoeInitRoutingTilingData tiling{};
  uint32_t blockDim = 0;
  uint64_t tilingKey = 0;
  uint64_t workspaceBytes = 0;  // user workspace: per block a histogram and its largest id
};

// UB bytes of the buffers sized by the id chunk (a multiple of kMoeInitRoutingIdLanes): the int32
// ids read in and expanded_row_idx written out, the ids as float, the 0/1 selection, the ones it
// selects from, the comparison mask (a bit per id), the reduce scratch and the per-expert sums.
// The kernel allocates exactly these.
inline int64_t MoeInitRoutingChunkUb(int64_t chunk) {
  return chunk * 4 * 5 + static_cast<int64_t>(AlignUp(chunk / 8, kBlockBytes)) +
         static_cast<int64_t>(AlignUp((2 * (chunk / kMoeInitRoutingIdLanes) + 8) * 4, kBlockBytes)) +
         kMoeInitRoutingHistGroup * kBlockBytes;
}

// Per block: the histogram (histCapacity int32, whole 32-byte blocks) and one 32-byte slot for its
// largest id.
inline uint64_t MoeInitRoutingWorkspace(int64_t blockDim, int64_t histCapacity) {
  return static_cast<uint64_t>(blockDim) * (AlignUp(histCapacity * 4, kBlockBytes) + kBlockBytes);
}

// Why a configuration was refused: the argument to blame and what is wrong with it.
struct MoeInitRoutingRefusal {
  std::string arg, reason;
};

inline bool MoeInitRoutingTiling(const MoeInitRoutingArgs &a, const PlatformInfo &plat,
                                 MoeInitRoutingPlan *plan, MoeInitRoutingRefusal *why) {
  auto refuse = [why](const char *arg, const std::string &reason) {
    *why = MoeInitRoutingRefusal{arg, reason};
    return false;
  };
  constexpr int64_t kInt32Max = 2147483647;
  int64_t elemBytes = 0;
  if (a.dtypeKey == kMoeInitRoutingKeyFloat) elemBytes = 4;
  if (a.dtypeKey == kMoeInitRoutingKeyHalf || a.dtypeKey == kMoeInitRoutingKeyBFloat16) elemBytes = 2;
  if (elemBytes == 0) return refuse("x", "dtype must be float32, float16 or bfloat16");
  if (a.rows < 0 || a.hidden < 0) return refuse("x", "shape must be [R, H] with R, H >= 0");
  if (a.topK < 1) return refuse("expert_idx", "shape must be [R, K] with K >= 1");
  if (a.rows > kInt32Max / a.topK)
    return refuse("expert_idx", "R*K = " + std::to_string(a.rows) + "*" + std::to_string(a.topK) +
                                    " exceeds the int32 range of expanded_row_idx");
  if (a.dropPadMode != 0 && a.dropPadMode != 1)
    return refuse("drop_pad_mode", "must be 0 (dropless) or 1 (drop/pad), got " + std::to_string(a.dropPadMode));
  if (a.countFlag < 0 || a.countFlag > 2)
    return refuse("expert_tokens_count_or_cumsum_flag",
                  "must be 0 (none), 1 (cumsum) or 2 (count), got " + std::to_string(a.countFlag));
  if (a.expertNum < 0) return refuse("expert_num", "must be >= 0, got " + std::to_string(a.expertNum));
  const bool dropPad = a.dropPadMode == 1;
  if (dropPad) {
    if (a.expertNum == 0) return refuse("expert_num", "must be > 0 in drop/pad mode (drop_pad_mode=1)");
    if (a.expertCapacity <= 0)
      return refuse("expert_capacity",
                    "must be > 0 in drop/pad mode (drop_pad_mode=1), got " + std::to_string(a.expertCapacity));
    if (a.expertCapacity > kInt32Max / a.expertNum)
      return refuse("expert_capacity", "expert_num*expert_capacity exceeds the int32 range of expanded_row_idx");
  } else if (a.countFlag != 0 && a.expertNum == 0) {
    return refuse("expert_num", "must be > 0 when expert_tokens_count_or_cumsum_flag is 1 or 2");
  }

  const int64_t flat = a.rows * a.topK;
  MoeInitRoutingTilingData t{};
  t.rows = a.rows;
  t.topK = a.topK;
  t.hidden = a.hidden;
  t.expertNum = a.expertNum;
  t.histCapacity = a.expertNum > 0 ? a.expertNum : kMoeInitRoutingMaxScanExperts;
  t.capacity = dropPad ? a.expertCapacity : 0;
  t.dropPadMode = a.dropPadMode;
  t.countMode = dropPad ? 0 : a.countFlag;
  t.writeBeforeCapacity = (dropPad && a.beforeCapacityFlag) ? 1 : 0;
  t.expandedRows = dropPad ? a.expertNum * a.expertCapacity : MoeInitRoutingActiveRows(flat, a.activeNum);

  const int64_t work = std::max<int64_t>({a.rows, dropPad ? a.expertNum : 0, 1});
  const int64_t blocks = std::min<int64_t>(work, plat.aivCoreNum);
  t.rowsPerBlock = std::max<int64_t>(1, CeilDiv(a.rows, blocks));
  t.expertsPerBlock = dropPad ? CeilDiv(a.expertNum, blocks) : 0;
  int64_t blockDim = std::max<int64_t>(1, CeilDiv(a.rows, t.rowsPerBlock));
  if (dropPad) blockDim = std::max<int64_t>(blockDim, CeilDiv(a.expertNum, t.expertsPerBlock));

  // UB: the ids chunk shrinks to its minimum (one token's K ids, whole vector repeats) before the
  // rows do.
  const int64_t ub = plat.ubSize;
  const int64_t histBytes = 3 * static_cast<int64_t>(AlignUp(t.histCapacity * 4, kBlockBytes));
  const int64_t rowBufs = dropPad ? 3 : 2;
  const int64_t minChunk = static_cast<int64_t>(AlignUp(a.topK, kMoeInitRoutingIdLanes));
  int64_t idxChunk =
      static_cast<int64_t>(AlignUp(std::max<int64_t>(a.topK, std::min<int64_t>(flat, 2048)), kMoeInitRoutingIdLanes));
  if (histBytes + MoeInitRoutingChunkUb(idxChunk) + rowBufs * kBlockBytes > ub) idxChunk = minChunk;
  const int64_t fixed = histBytes + MoeInitRoutingChunkUb(idxChunk);
  if (fixed + rowBufs * kBlockBytes > ub) {
    // Histogram entries left once the ids of one token and minimal row buffers are placed.
    const int64_t histRoom = (ub - MoeInitRoutingChunkUb(minChunk) - rowBufs * kBlockBytes) / 12 / 8 * 8;
    if (a.expertNum > 0 && histRoom >= 8)
      return refuse("expert_num", std::to_string(a.expertNum) + " experts do not fit the UB histograms (" +
                                      std::to_string(ub) + " bytes of UB, K = " + std::to_string(a.topK) +
                                      "); at most " + std::to_string(histRoom) + " experts are supported");
    std::string reason = "K = " + std::to_string(a.topK) + " experts per token do not fit in UB (" +
                         std::to_string(ub) + " bytes)";
    if (a.expertNum == 0 && histRoom >= 8)
      reason += " next to the " + std::to_string(kMoeInitRoutingMaxScanExperts) +
                "-bin histograms used without expert_num; pass expert_num";
    return refuse("expert_idx", reason);
  }
  const int64_t rowRoom = (ub - fixed) / rowBufs / kBlockBytes * kBlockBytes;
  t.idxChunk = idxChunk;
  const int64_t rowBytes = static_cast<int64_t>(AlignUp(a.hidden * elemBytes, kBlockBytes));
  t.hiddenChunk = rowBytes <= rowRoom ? a.hidden : rowRoom / elemBytes;

  plan->tiling = t;
  plan->blockDim = static_cast<uint32_t>(blockDim);
  plan->tilingKey = a.dtypeKey;
  plan->workspaceBytes = MoeInitRoutingWorkspace(blockDim, t.histCapacity);
  return true;
}

}  // namespace ms_ops

#endif  // MS_OPS_MOE_INIT_ROUTING_TILING_H_
