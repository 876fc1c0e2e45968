// Tiling of fused_linear_online_max_sum as a pure function of shapes, attributes, dtypes and the
// platform, shared by the CANN TilingFunc and the CPU entry.
//
// Blocks are R row groups (whole 8-row groups each, so each target_mask byte has one writer) x Kg
// vocabulary groups (whole nTile-column tiles each); block b takes row group b % R and vocabulary
// group b / R. It walks its rows in tiles of mTile rows and, for each, its vocabulary in tiles of
// nTile columns: the Matmul writes the fp32 logits tile [mTile, nTile] to GM (the block's
// workspace, or its place in vocab_parallel_logits), and the vector pass reads it back in chunks
// of chunkRows rows to update each row's running max, rescaled sum of exponentials, sum of logits
// and target logit. With Kg > 1 those are the row's statistics over the group's columns: they go
// to workspace, and after a SyncAll each block merges a share of the rows over the groups in
// group order. Cutting the vocabulary lets a block's products take many rows: on the CPU twin
// (one core, H = 1024) 176 x 512 x 1024 products ran at 171 GFLOP/s, 512 x 512 x 1024 at 193 and
// 1024 x 512 x 1024 at 200. No [BT, V] buffer exists unless the logits are returned.
#ifndef MS_OPS_FUSED_LINEAR_ONLINE_MAX_SUM_TILING_H_
#define MS_OPS_FUSED_LINEAR_ONLINE_MAX_SUM_TILING_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "../../cross_entropy_common.h"
#include "../../../common/platform.h"
#include "../op_kernel/fused_linear_online_max_sum_tiling_data.h"

namespace ms_ops {

struct FusedLinearOnlineMaxSumProblem {
  int64_t rows = 0;        // BT
  int64_t hidden = 0;      // H
  int64_t vocab = 0;       // V (local shard)
  int64_t vocabStart = 0;  // vocab_start_index
  int64_t vocabEnd = 0;    // vocab_end_index (exclusive): vocabEnd - vocabStart may differ from V
  bool returnLogits = false;
  CeFloat dataType = CeFloat::kF32;
  bool int64Target = false;
};

struct FusedLinearOnlineMaxSumTiling {
  FusedLinearOnlineMaxSumTilingData data{};
  uint32_t blockDim = 0;        // 0: nothing to compute (BT == 0)
  uint64_t tilingKey = 0;
  uint64_t workspaceBytes = 0;  // user workspace: fp32 [mTile, nTile] tiles and partial statistics
  std::string error;            // why the problem cannot run; empty when it can
};

// Logits tiles: at least kFlomsMinBlockRows rows per block before another block is added, about
// kFlomsGroupRows rows per row group, at most kFlomsMaxTileRows rows (kFlomsMaxTileRowsLogits when
// the tiles land in the returned logits, taking no workspace) and kFlomsTileCols columns per tile.
constexpr uint64_t kFlomsMinBlockRows = 128;
constexpr uint64_t kFlomsGroupRows = 1024;
constexpr uint64_t kFlomsMaxTileRows = 512;
constexpr uint64_t kFlomsMaxTileRowsLogits = 1024;
constexpr uint64_t kFlomsTileCols = 512;
constexpr uint32_t kFlomsStateArrays = 8;  // per-row fp32 state of a row tile, see the kernel
constexpr uint32_t kFlomsReduceSlots = 3;  // reduction results, one 32-byte block each

// UB row pitch (elements) of a chunk of logits tile rows.
inline uint64_t FlomsPitch(uint64_t nTile) { return AlignUp(nTile, kBlockBytes / 4); }

// UB bytes the kernel allocates besides the double-buffered chunk: exp row and reduction scratch
// (one pitch each), reduction results, the per-row state and local targets, the targets in and
// masked targets out, and the row tile's target_mask bytes. The kernel's InitBuffer calls follow
// these formulas exactly.
inline uint64_t FlomsUbFixed(uint64_t mTile, uint64_t pitch, uint32_t targetBytes) {
  return 2 * pitch * 4 + kFlomsReduceSlots * kBlockBytes + (kFlomsStateArrays + 1) * mTile * 4 +
         2 * AlignUp(mTile * targetBytes, kBlockBytes) + AlignUp(mTile / 8, kBlockBytes);
}

inline uint64_t FlomsUbPerChunkRow(uint64_t pitch) { return 2 * pitch * 4; }

// The Matmul tiling of one logits tile: A = input rows [mTile, H], B = weight rows [nTile, H]
// transposed, C fp32 with row stride V (into the logits) or nTile (into the workspace). Base
// tiles fit L0A/L0B (64 KiB) and L0C (128 KiB), with room to double-buffer L0A/L0B.
inline TCubeTiling FlomsCubeTiling(const FusedLinearOnlineMaxSumProblem &p, uint32_t blockDim, uint64_t mTile,
                                   uint64_t nTile) {
  TCubeTiling mm{};
  mm.usedCoreNum = static_cast<int32_t>(blockDim);
  mm.M = static_cast<int32_t>(p.rows);
  mm.N = static_cast<int32_t>(p.returnLogits ? p.vocab : nTile);
  mm.Ka = mm.Kb = static_cast<int32_t>(p.hidden);
  mm.singleCoreM = static_cast<int32_t>(mTile);
  mm.singleCoreN = static_cast<int32_t>(nTile);
  mm.singleCoreK = static_cast<int32_t>(p.hidden);
  mm.baseM = 128;
  mm.baseN = 256;
  mm.baseK = p.dataType == CeFloat::kF32 ? 32 : 64;
  mm.depthA1 = mm.depthB1 = 2;
  mm.stepM = mm.stepN = 1;
  mm.stepKa = mm.stepKb = 1;
  mm.iterateOrder = 0;
  mm.dbL0A = mm.dbL0B = 2;
  mm.dbL0C = 1;
  return mm;
}

inline FusedLinearOnlineMaxSumTiling ComputeFusedLinearOnlineMaxSumTiling(const FusedLinearOnlineMaxSumProblem &p,
                                                                          const PlatformInfo &platform) {
  FusedLinearOnlineMaxSumTiling t;
  if (p.rows < 0 || p.hidden < 1 || p.vocab < 1 || p.vocabStart < 0 || p.vocabEnd < p.vocabStart) {
    t.error = "needs BT >= 0, H >= 1, V >= 1 and 0 <= vocab_start_index <= vocab_end_index (got BT=" +
              std::to_string(p.rows) + ", H=" + std::to_string(p.hidden) + ", V=" + std::to_string(p.vocab) +
              ", vocab_start_index=" + std::to_string(p.vocabStart) +
              ", vocab_end_index=" + std::to_string(p.vocabEnd) + ")";
    return t;
  }
  if (p.rows > INT32_MAX || p.hidden > INT32_MAX || p.vocab > INT32_MAX) {
    t.error = "BT, H and V must each fit the Matmul's int32 shapes";
    return t;
  }
  const uint64_t rows = uint64_t(p.rows), groups = CeilDiv(rows, 8);
  uint64_t blocks = rows / kFlomsMinBlockRows;
  if (blocks > platform.aicCoreNum) blocks = platform.aicCoreNum;
  if (blocks > groups) blocks = groups;
  if (blocks < 1) blocks = 1;
  const uint64_t nTile = uint64_t(p.vocab) < kFlomsTileCols ? uint64_t(p.vocab) : kFlomsTileCols;
  const uint64_t vocabTiles = CeilDiv(uint64_t(p.vocab), nTile);
  uint64_t rowGroups = std::clamp<uint64_t>(CeilDiv(rows, kFlomsGroupRows), 1, blocks);
  const uint64_t vocabGroups = std::clamp<uint64_t>(blocks / rowGroups, 1, vocabTiles);
  rowGroups = std::clamp<uint64_t>(blocks / vocabGroups, 1, std::max<uint64_t>(groups, 1));
  blocks = rowGroups * vocabGroups;
  const uint64_t groupRowsMax = CeilDiv(groups, rowGroups) * 8;
  const uint64_t maxTileRows = p.returnLogits ? kFlomsMaxTileRowsLogits : kFlomsMaxTileRows;
  const uint64_t tilesPerGroup = CeilDiv(groupRowsMax, maxTileRows);
  const uint64_t mTile = AlignUp(CeilDiv(groupRowsMax, tilesPerGroup), 8);
  const uint64_t pitch = FlomsPitch(nTile);

  const uint32_t targetBytes = p.int64Target ? 8 : 4;
  const uint64_t fixed = FlomsUbFixed(mTile, pitch, targetBytes);
  const uint64_t chunkCap = fixed >= platform.ubSize ? 0 : (platform.ubSize - fixed) / FlomsUbPerChunkRow(pitch);
  if (chunkCap < 1) {
    t.error = "the " + std::to_string(platform.ubSize) + "-byte UB cannot hold a " + std::to_string(mTile) + "x" +
              std::to_string(nTile) + " logits tile's state and one chunk row";
    return t;
  }

  FusedLinearOnlineMaxSumTilingData &d = t.data;
  d.rows = p.rows;
  d.hidden = p.hidden;
  d.vocab = p.vocab;
  d.vocabStart = p.vocabStart;
  d.vocabEnd = p.vocabEnd;
  d.rowGroups = static_cast<int64_t>(rowGroups);
  d.vocabGroups = static_cast<int64_t>(vocabGroups);
  d.mTile = static_cast<uint32_t>(mTile);
  d.nTile = static_cast<uint32_t>(nTile);
  d.chunkRows = static_cast<uint32_t>(chunkCap < mTile ? chunkCap : mTile);
  d.returnLogits = p.returnLogits ? 1 : 0;
  t.blockDim = rows == 0 ? 0 : static_cast<uint32_t>(blocks);
  d.mm = FlomsCubeTiling(p, t.blockDim, mTile, nTile);
  t.tilingKey = CrossEntropyKey(p.dataType, p.int64Target);
  const uint64_t tiles = p.returnLogits ? 0 : AlignUp(blocks * mTile * nTile * 4, kBlockBytes);
  d.statsOffset = tiles;
  d.statsPitch = AlignUp(rows, 8);
  const uint64_t stats = vocabGroups > 1 ? vocabGroups * kFlomsStats * d.statsPitch * 4 : 0;
  t.workspaceBytes = rows == 0 ? 0 : tiles + stats;
  return t;
}

}  // namespace ms_ops

#endif  // MS_OPS_FUSED_LINEAR_ONLINE_MAX_SUM_TILING_H_
