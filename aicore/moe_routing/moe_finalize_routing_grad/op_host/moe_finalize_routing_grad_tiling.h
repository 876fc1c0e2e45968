// Tiling of moe_finalize_routing_grad as a pure function of shapes, attributes, dtypes and the
// platform, shared by the CANN TilingFunc and the CPU entry.
//
// The kernel has three parts, each partitioned over all blocks, without atomics, so that every
// output row is written by one block only:
//   slots:       blocks own slot ranges of N, windowSlots slots at a time. One vector index scan
//                per window finds, in ascending pair order, each slot's first and last pair and
//                chains the pairs of a slot through the workspace (next pair, and its scale).
//                Slots no pair names become zeros; a slot named by several pairs (the index may
//                repeat, as CANN's tests do) gets its pairs' sum, taken in ascending pair order
//                in fp32. Each slot's sole pair (-1: none or several) goes to the workspace;
//   grad_bias:   work items of biasCols columns x biasExperts experts; one vector index scan per
//                item finds the pairs of its experts and accumulates s*grad_y[r] over them in pair
//                order, reading each grad_y row slice once for all experts of the item;
//   -- SyncAll --
//   token rows:  blocks own rows r of grad_y; per H chunk of grad_y[r], each contributing pair
//                (r,k) that is its slot j's sole pair writes s*grad_y[r] to grad_expanded_x[j],
//                and every pair adds its dot product to grad_scales[r,k].
// So every slot's value is written once, by one block, in an order fixed by the index alone: the
// result does not depend on the block count. The token pass keeps the common case (an injective
// index, as moe_init_routing makes) at one grad_y read per token and one write per pair; repeats
// cost their own rows plus one scan per window.
#ifndef MS_OPS_MOE_FINALIZE_ROUTING_GRAD_TILING_H_
#define MS_OPS_MOE_FINALIZE_ROUTING_GRAD_TILING_H_

#include <cstdint>
#include <string>

#include "../../../common/platform.h"
#include "../../moe_finalize_routing/op_host/moe_finalize_routing_tiling.h"
#include "../op_kernel/moe_finalize_routing_grad_tiling_data.h"

namespace ms_ops {

struct MoeFinalizeRoutingGradProblem {
  int64_t rows = 0;          // R
  int64_t topK = 1;          // K
  int64_t hidden = 0;        // H
  int64_t expandedRows = 0;  // N (E*C for drop/pad)
  int64_t biasRows = 0;
  int64_t scalesNumel = 0;   // grad_scales elements (the placeholder's without scales)
  int64_t biasNumel = 0;     // grad_bias elements (the placeholder's without bias)
  int64_t dropPadMode = 0;
  bool hasBias = false, hasScales = false;
  MoeFloat dataType = MoeFloat::kF32;
  MoeFloat scalesType = MoeFloat::kF32;  // dtype of the scales input (or of its placeholder)
};

struct MoeFinalizeRoutingGradTiling {
  MoeFinalizeRoutingGradTilingData data{};
  uint64_t workspaceBytes = 0;  // user workspace: the slot chains (next pair, and its scale), sole pairs
  uint32_t blockDim = 0;
  uint64_t tilingKey = 0;
  std::string error;  // why the problem cannot run; empty when it can
};

// Reductions need one 32-byte result block and a scratch of one float per 64-element repeat:
// 1 KiB serves chunks up to kMoeGradMaxChunk.
constexpr uint32_t kMoeGradReduceBytes = 32 + 1024;
constexpr uint64_t kMoeGradMaxChunk = 16384;

// grad_bias accumulators get at most this much UB.
constexpr uint64_t kMoeGradBiasBudget = 48 * 1024;

// The UB bytes the kernel allocates; its InitBuffer calls follow these formulas exactly.
inline uint64_t MoeFinalizeRoutingGradUbPerH(uint32_t dataBytes) {
  // grad_y row (held across the K pairs of a row), 2 input rows (expanded_x, bias), 2 output rows,
  // a zero row; for fp16/bf16 three fp32 rows for the arithmetic.
  return 6 * uint64_t(dataBytes) + (dataBytes == 4 ? 0 : 3 * 4);
}

// fp32 accumulators (biasExperts rows of biasColsPad), their fp16/bf16 copy for the output, and
// one fp32 row for the scaled grad_y slice.
inline uint64_t MoeFinalizeRoutingGradUbBias(uint64_t colsPad, uint64_t experts, uint32_t dataBytes) {
  return experts * colsPad * (4 + (dataBytes == 4 ? 0 : dataBytes)) + colsPad * 4;
}

// The forward's batch of routing data, plus grad_scales in fp32 and in its output dtype.
inline uint64_t MoeFinalizeRoutingGradUbBatch(uint64_t batchRows, uint64_t topK, bool rowMajor, uint32_t scalesBytes,
                                              bool hasScales, bool hasBias) {
  const uint64_t entries = batchRows * topK;
  const uint64_t gradScales =
      hasScales ? AlignUp(entries * 4, kBlockBytes) + AlignUp(entries * scalesBytes, kBlockBytes) : 0;
  return MoeFinalizeRoutingUbBatch(batchRows, topK, rowMajor, scalesBytes, hasScales, hasBias) + gradScales;
}

// A slot window: each slot's first and last pair (int32) and, with scales, the first pair's scale.
inline uint64_t MoeFinalizeRoutingGradUbWindow(uint64_t windowSlots, bool hasScales) {
  return windowSlots * 4 * (hasScales ? 3 : 2);
}

constexpr uint64_t kMoeGradMaxWindow = 2048;

// The pair masks (moe_finalize_routing_grad.cpp): the batch's slots as float, padded to whole
// 64-float repeats, and their 1-bit mask; column-major indices also as float in their own layout,
// with the Gather offsets to pair order; with bias the expert ids as float and a second mask.
inline uint64_t MoeFinalizeRoutingGradUbFilter(uint64_t batchRows, uint64_t topK, bool rowMajor, bool hasBias) {
  const uint64_t entries = batchRows * topK, padded = AlignUp(entries, 64);
  const uint64_t key = padded * 4, mask = AlignUp(padded / 8, kBlockBytes);
  uint64_t bytes = key + mask;
  if (!rowMajor) bytes += topK * AlignUp(batchRows, 8) * 4 + AlignUp(entries * 4, kBlockBytes);
  if (hasBias) bytes += key + mask;
  return bytes;
}

// Slots are compared as float: exact up to 2^24.
constexpr int64_t kMoeGradMaxSlots = int64_t(1) << 24;

// The chains: per pair (r*K + k) the next pair naming the same slot and, with scales, the pair's
// scale as fp32; then per slot its sole pair (int32). Each array starts 32-byte aligned.
inline uint64_t MoeFinalizeRoutingGradWorkspace(uint64_t pairs, uint64_t slots, bool hasScales) {
  return AlignUp(pairs * 4, kBlockBytes) * (hasScales ? 2 : 1) + AlignUp(slots * 4, kBlockBytes);
}

inline uint64_t MoeFinalizeRoutingGradKey(MoeFloat data, MoeFloat scales) {
  if (data == MoeFloat::kF32) return kMoeFinalizeRoutingGradKeyF32;
  if (data == MoeFloat::kF16)
    return scales == MoeFloat::kF32 ? kMoeFinalizeRoutingGradKeyF16ScalesF32 : kMoeFinalizeRoutingGradKeyF16;
  return scales == MoeFloat::kF32 ? kMoeFinalizeRoutingGradKeyBF16ScalesF32 : kMoeFinalizeRoutingGradKeyBF16;
}

inline MoeFinalizeRoutingGradTiling ComputeMoeFinalizeRoutingGradTiling(const MoeFinalizeRoutingGradProblem &p,
                                                                        const PlatformInfo &platform) {
  MoeFinalizeRoutingGradTiling t;
  if (p.scalesType != p.dataType && p.scalesType != MoeFloat::kF32) {
    t.error = "scales must have the dtype of expanded_x or float32";
    return t;
  }
  if (p.rows < 0 || p.topK < 1 || p.hidden < 0 || p.expandedRows < 0 || p.biasRows < 0 || p.scalesNumel < 0 ||
      p.biasNumel < 0) {
    t.error = "needs R >= 0, K >= 1, H >= 0 (got R=" + std::to_string(p.rows) + ", K=" + std::to_string(p.topK) +
              ", H=" + std::to_string(p.hidden) + ")";
    return t;
  }
  if (p.expandedRows > kMoeGradMaxSlots) {
    t.error = "N=" + std::to_string(p.expandedRows) + " rows of expanded_x exceed 2^24, the most slots the kernel's "
              "float compare tells apart";
    return t;
  }
  const bool rowMajor = (p.dropPadMode & 2) != 0;
  if (!rowMajor && p.topK > 4095) {
    t.error = "K=" + std::to_string(p.topK) + " exceeds 4095, the most index columns one strided copy gathers";
    return t;
  }
  const uint32_t dataBytes = MoeFloatBytes(p.dataType), scalesBytes = MoeFloatBytes(p.scalesType);
  const uint64_t work = uint64_t(p.expandedRows) > uint64_t(p.rows) ? uint64_t(p.expandedRows) : uint64_t(p.rows);
  const uint64_t blocks = work == 0 ? 1 : (work < platform.aivCoreNum ? work : platform.aivCoreNum);
  const uint64_t hidden = p.hidden > 0 ? uint64_t(p.hidden) : 1;  // chunk sizes for H = 0 stay valid

  const uint64_t batchRows = MoeFinalizeRoutingBatchRows(p.rows, p.topK);
  uint64_t windowSlots = AlignUp(CeilDiv(uint64_t(p.expandedRows), blocks), 8);
  if (windowSlots > kMoeGradMaxWindow) windowSlots = kMoeGradMaxWindow;
  if (windowSlots < 8) windowSlots = 8;

  // grad_bias items: whole rows of H when they fit, the experts split over the blocks. Each pair
  // of an item's experts costs the item two vector instructions and a few scalar reads whatever
  // its width, so splitting the columns would repeat that cost per column range; splitting the
  // experts divides it (a grad_y row is then read once per item that has a pair of it).
  uint64_t biasCols = 0, biasColsPad = 0, biasExperts = 0;
  if (p.hasBias) {
    const uint64_t maxCols = kMoeGradBiasBudget / (4 + (dataBytes == 4 ? 0 : dataBytes) + 4) / 16 * 16;
    biasCols = hidden < maxCols ? hidden : maxCols;
    biasColsPad = AlignUp(biasCols, 16);
    const uint64_t fit =
        (kMoeGradBiasBudget - biasColsPad * 4) / (biasColsPad * (4 + (dataBytes == 4 ? 0 : dataBytes)));
    const uint64_t colRanges = CeilDiv(hidden, biasCols);
    const uint64_t groups = colRanges < blocks ? blocks / colRanges : 1;
    biasExperts = CeilDiv(uint64_t(p.biasRows > 0 ? p.biasRows : 1), groups);
    if (biasExperts > fit) biasExperts = fit;
  }
  const uint64_t fixed =
      MoeFinalizeRoutingGradUbBatch(batchRows, p.topK, rowMajor, scalesBytes, p.hasScales, p.hasBias) +
      MoeFinalizeRoutingGradUbWindow(windowSlots, p.hasScales) + kMoeGradReduceBytes +
      MoeFinalizeRoutingGradUbFilter(batchRows, p.topK, rowMajor, p.hasBias) +
      (p.hasBias ? MoeFinalizeRoutingGradUbBias(biasColsPad, biasExperts, dataBytes) : 0);
  uint64_t hCap = fixed >= platform.ubSize ? 0 : (platform.ubSize - fixed) / MoeFinalizeRoutingGradUbPerH(dataBytes);
  hCap = (hCap > kMoeGradMaxChunk ? kMoeGradMaxChunk : hCap) / 16 * 16;
  if (hCap < 16) {
    t.error = "K=" + std::to_string(p.topK) + " leaves no room in the " + std::to_string(platform.ubSize) +
              "-byte UB for a 16-element chunk of H";
    return t;
  }
  const uint64_t chunks = CeilDiv(hidden, hCap);
  const uint64_t hChunk = AlignUp(CeilDiv(hidden, chunks), 16);

  MoeFinalizeRoutingGradTilingData &d = t.data;
  d.rows = p.rows;
  d.topK = p.topK;
  d.hidden = p.hidden;
  d.expandedRows = p.expandedRows;
  d.biasRows = p.hasBias ? p.biasRows : 0;
  d.scalesNumel = p.hasScales ? p.rows * p.topK : p.scalesNumel;
  d.biasNumel = p.hasBias ? p.biasRows * p.hidden : p.biasNumel;
  d.hChunk = static_cast<uint32_t>(hChunk);
  d.batchRows = static_cast<uint32_t>(batchRows);
  d.windowSlots = static_cast<uint32_t>(windowSlots);
  // The kernel loads a grad_y slice of biasCols into an H-chunk buffer.
  d.biasCols = static_cast<uint32_t>(biasCols < hChunk ? biasCols : hChunk);
  d.biasColsPad = static_cast<uint32_t>(biasColsPad);
  d.biasExperts = static_cast<uint32_t>(biasExperts);
  d.dropPadMode = static_cast<uint32_t>(p.dropPadMode);
  d.hasBias = p.hasBias;
  d.hasScales = p.hasScales;
  t.workspaceBytes =
      MoeFinalizeRoutingGradWorkspace(uint64_t(p.rows) * uint64_t(p.topK), uint64_t(p.expandedRows), p.hasScales);
  t.blockDim = static_cast<uint32_t>(blocks);
  t.tilingKey = MoeFinalizeRoutingGradKey(p.dataType, p.scalesType);
  return t;
}

}  // namespace ms_ops

#endif  // MS_OPS_MOE_FINALIZE_ROUTING_GRAD_TILING_H_
