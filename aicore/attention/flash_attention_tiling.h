// Tiling of flash_attention_score and flash_attention_score_grad as a pure function of the
// problem and the platform, shared by the CANN TilingFuncs and the CPU entries.
//
// Work items (head, tile of query rows) or (key head, tile of key rows), the tiles of all
// sequences in order, are dealt round-robin to the blocks (one per cube core). Each block has its
// own GM workspace for the score, probability and product tiles, so no S1 x S2 buffer exists.
#ifndef MS_OPS_FLASH_ATTENTION_TILING_H_
#define MS_OPS_FLASH_ATTENTION_TILING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "../common/platform.h"
#include "flash_attention_tiling_data.h"

namespace ms_ops {

enum class FaLayout { kBSH, kSBH, kBSND, kBNSD, kTND };
enum class FaFloat { kF32, kF16, kBF16 };

struct FlashAttentionProblem {
  int64_t batch = 0, heads1 = 0, heads2 = 0, seq1 = 0, seq2 = 0, dim = 0;
  int64_t dimV = 0;  // value's head dim (<= dim); FaSetValueDim puts it into the tiling data
  FaLayout layout = FaLayout::kBSH;
  FaFloat dataType = FaFloat::kF32;
  float scale = 1.0f;
  int64_t preTokens = 0, nextTokens = 0, sparseMode = 0;
  // TND: cumulative query / key lengths (batch entries each); seq1/seq2 are then T1/T2.
  std::vector<int64_t> cumQ, cumKv;
  bool hasMask = false, hasPrefix = false;
  int64_t maskStrideB = 0, maskStrideN = 0, maskRow = 0, maskElems = 0;
  // real_shift, as FlashAttentionTilingData describes it.
  uint32_t pseKind = 0, pseAddFirst = 0, pseGrad = 0;
  int64_t pseStrideB = 0, pseStrideN = 0, pseRow = 0, pseElems = 0, pseBase = -1;
};

struct FlashAttentionTiling {
  FlashAttentionTilingData data{};
  uint32_t blockDim = 0;        // 0: nothing to compute
  uint64_t tilingKey = 0;       // 1 fp32, 2 fp16, 3 bf16
  uint64_t workspaceBytes = 0;  // all blocks' workspaces
  std::string error;
};

// Query rows x key rows of a score tile. The forward covers 512 keys per cube and vector pass (a
// fixed cost per tile, the Matmul set-up, the accumulator's rescale and the running statistics, is
// paid 4x less often). Its UB at most: 108 KiB for a chunk's S and P queues and its reduction
// scratch (24 rows of 512 fp32: 48 + 48 + 12 KiB), accumulator in/out chunks of 16 KiB each, up to
// 3.5 KiB of broadcast blocks, 15 KiB of row statistics (256-row tiles) and a zero row, and the rows
// of nTile elements (attn_mask: 2 x 2 KiB fp32 + 0.5 KiB bytes + 1 KiB half + 2 x 2 KiB;
// real_shift: 3 x 2 KiB; dropout bits: 24 x 96 B): about 178 KiB against the A2's 184 KiB usable
// UB (the twin refuses the reserved top in strict mode). The backward's tiles are 256 x 256: its
// per-block workspace (S, then P over it; dP, then dS over it) grows with the tile, 512 KiB per
// block (S = 8192 causal fp32 forward+backward: about 61 MiB beyond inputs, outputs and gradients;
// issue 10's budget: 64 MiB).
// 256 query rows against 128 (A2 estimate at S = 4096, N = 8 causal: 1383 -> 1231 us) move each key
// and value tile half as often. With fewer than two 256-key items per core the key tiles would
// leave cores idle in the last round (at S = 1024, N = 8: 32 items on 24 cores), so such problems
// keep 128 keys.
constexpr uint64_t kFaQueryTile = kFaTileUnit, kFaWideQueryTile = 2 * kFaTileUnit, kFaKeyTile = 4 * kFaTileUnit;
constexpr uint64_t kFaGradQueryTile = 2 * kFaTileUnit, kFaGradKeyTile = 2 * kFaTileUnit;

inline TCubeTiling FaCubeTiling(FaFloat t, uint32_t blockDim, int64_t m, int64_t n, int64_t k) {
  return SingleShapeCubeTiling(blockDim, m, n, k, 128, 256, t == FaFloat::kF32 ? 32 : 64, 2);
}

// Strides (elements) of one tensor [.., S, N, D] in the layout: batch, head, row.
inline void FaStrides(FaLayout l, int64_t b, int64_t s, int64_t n, int64_t d, int64_t &sb, int64_t &sn, int64_t &row) {
  (void)b;
  switch (l) {
    case FaLayout::kBSH:
    case FaLayout::kBSND: sb = s * n * d; sn = d; row = n * d; break;
    case FaLayout::kSBH: sb = n * d; sn = d; row = b * n * d; break;
    case FaLayout::kBNSD: sb = n * s * d; sn = s * d; row = d; break;
    case FaLayout::kTND: sb = 0; sn = d; row = n * d; break;
  }
}

// Tiles of `tile` rows over the queries (keys = false) or keys of every sequence.
inline uint64_t FaTileCount(const FlashAttentionProblem &p, bool packed, size_t nb, bool keys, uint64_t tile) {
  const std::vector<int64_t> &cum = keys ? p.cumKv : p.cumQ;
  if (!packed) return uint64_t(p.batch) * CeilDiv(uint64_t(keys ? p.seq2 : p.seq1), tile);
  uint64_t tiles = 0;
  for (size_t b = 0; b < nb; ++b) tiles += CeilDiv(uint64_t(cum[b] - (b ? cum[b - 1] : 0)), tile);
  return tiles;
}

// The forward's query tile: kFaWideQueryTile when that leaves at least four items (query head,
// tile) per core, so that the blocks, dealt the items from the most expensive down, end close
// together (A2 estimate at S = 4096, N = 8 causal: 584 -> 516 us; at S = 1024, 1.3 items per
// core, 256 rows gain nothing: 46.1 against 46.0 us).
inline uint64_t FaQueryTile(const FlashAttentionProblem &p, bool packed, size_t nb, uint32_t cores) {
  const uint64_t items = uint64_t(p.heads1) * FaTileCount(p, packed, nb, false, kFaWideQueryTile);
  return items >= 4 * uint64_t(cores) ? kFaWideQueryTile : kFaQueryTile;
}

// The backward's key tile: kFaGradKeyTile when there are at least two such tiles (over the key
// heads) per core.
inline uint64_t FaGradKeyTile(const FlashAttentionProblem &p, bool packed, size_t nb, uint32_t cores) {
  const uint64_t items = uint64_t(p.heads2) * FaTileCount(p, packed, nb, true, kFaGradKeyTile);
  return items >= 2 * uint64_t(cores) ? kFaGradKeyTile : uint64_t(kFaTileUnit);
}

inline FlashAttentionTiling ComputeFlashAttentionTiling(const FlashAttentionProblem &p, const PlatformInfo &platform,
                                                        bool grad) {
  FlashAttentionTiling t;
  if (p.batch < 0 || p.heads1 < 1 || p.heads2 < 1 || p.heads1 % p.heads2 != 0 || p.seq1 < 0 || p.seq2 < 0 ||
      p.dim < 1 || p.dim > 512) {
    t.error = "needs N1 a multiple of N2 >= 1 and 1 <= D <= 512";
    return t;
  }
  if (p.sparseMode < 0 || p.sparseMode > 8) {
    t.error = "sparse_mode must be in 0..8";
    return t;
  }
  const bool packed = p.layout == FaLayout::kTND;
  const size_t nb = packed ? p.cumQ.size() : size_t(p.batch);
  if (packed && (p.cumKv.size() != nb || int64_t(nb) != p.batch)) {
    t.error = "actual_seq_qlen and actual_seq_kvlen need one entry per sequence";
    return t;
  }
  FlashAttentionTilingData &d = t.data;
  d.batch = p.batch;
  d.heads1 = p.heads1;
  d.heads2 = p.heads2;
  d.dim = p.dim;
  // Per-sequence lengths: the tile sizes follow the longest; the items count every tile.
  int64_t maxQ = packed ? 0 : p.seq1, maxKv = packed ? 0 : p.seq2;
  for (size_t b = 0; packed && b < nb; ++b) {
    const int64_t lq = p.cumQ[b] - (b ? p.cumQ[b - 1] : 0), lk = p.cumKv[b] - (b ? p.cumKv[b - 1] : 0);
    maxQ = lq > maxQ ? lq : maxQ;
    maxKv = lk > maxKv ? lk : maxKv;
  }
  d.seq1 = maxQ;
  d.seq2 = maxKv;
  d.qRows = packed ? p.seq1 : p.batch * p.seq1;
  d.kRows = packed ? p.seq2 : p.batch * p.seq2;
  // SBH's row stride spans the batch: the Matmul's int32 strides must hold it.
  FaStrides(p.layout, p.batch, p.seq1, p.heads1, p.dim, d.qStrideB, d.qStrideN, d.qRow);
  FaStrides(p.layout, p.batch, p.seq2, p.heads2, p.dim, d.kStrideB, d.kStrideN, d.kRow);
  if (d.qRow > INT32_MAX || d.kRow > INT32_MAX) {
    t.error = "row strides must fit the Matmul's int32 shapes";
    return t;
  }
  if (packed) {
    d.statStrideB = 0;
    d.statStrideN = 8;
    d.statRow = p.heads1 * 8;
  } else {
    d.statStrideB = p.heads1 * p.seq1 * 8;
    d.statStrideN = p.seq1 * 8;
    d.statRow = 8;
  }
  auto clampFar = [](int64_t v) { return v > kFaFar ? kFaFar : (v < -kFaFar ? -kFaFar : v); };
  d.sparseMode = p.sparseMode;
  d.preTokens = clampFar(p.preTokens);
  d.nextTokens = clampFar(p.nextTokens);
  // Mode 7: the last sequence with queries and keys is the band, the others right-down causal;
  // mode 8: the first one, the others left-up causal.
  d.bandBatch = -1;
  for (size_t i = 0; packed && (p.sparseMode == 7 || p.sparseMode == 8) && i < nb; ++i) {
    const size_t b = p.sparseMode == 7 ? nb - 1 - i : i;
    if (p.cumQ[b] > (b ? p.cumQ[b - 1] : 0) && p.cumKv[b] > (b ? p.cumKv[b - 1] : 0)) {
      d.bandBatch = int64_t(b);
      break;
    }
  }
  d.packed = packed ? 1 : 0;
  d.hasMask = p.hasMask ? 1 : 0;
  d.hasPrefix = p.hasPrefix ? 1 : 0;
  d.maskStrideB = p.maskStrideB;
  d.maskStrideN = p.maskStrideN;
  d.maskRow = p.maskRow;
  d.maskElems = p.maskElems;
  d.pseKind = p.pseKind;
  d.pseAddFirst = p.pseAddFirst;
  d.pseGrad = p.pseGrad;
  d.pseStrideB = p.pseStrideB;
  d.pseStrideN = p.pseStrideN;
  d.pseRow = p.pseRow;
  d.pseElems = p.pseElems;
  d.pseBase = p.pseBase;
  d.scale = p.scale;
  const uint64_t queryTile = grad ? kFaGradQueryTile : FaQueryTile(p, packed, nb, platform.aicCoreNum);
  const uint64_t mT = maxQ < int64_t(queryTile) ? uint64_t(maxQ > 0 ? maxQ : 1) : queryTile;
  const uint64_t keyTile = grad ? FaGradKeyTile(p, packed, nb, platform.aicCoreNum) : kFaKeyTile;
  const uint64_t nT = maxKv < int64_t(keyTile) ? uint64_t(maxKv > 0 ? maxKv : 1) : keyTile;
  d.mTile = static_cast<uint32_t>(mT);
  d.nTile = static_cast<uint32_t>(nT);
  const uint64_t qTiles = FaTileCount(p, packed, nb, false, mT), kTiles = FaTileCount(p, packed, nb, true, nT);
  d.qTiles = int64_t(qTiles);
  d.kTiles = int64_t(kTiles);
  // Forward items: (n1, query tile); the backward's key pass has (n2, key tile) items too.
  const uint64_t qItems = uint64_t(p.heads1) * qTiles, kItems = uint64_t(p.heads2) * kTiles;
  uint64_t items = grad ? (qItems > kItems ? qItems : kItems) : qItems;
  uint64_t blocks = items < platform.aicCoreNum ? items : platform.aicCoreNum;
  // Sequences of length 0 leave no tile; a query row without keys still gets its zeros from its
  // item, as do the keys of a sequence without queries in the backward.
  const bool empty = items == 0;
  t.blockDim = empty ? 0 : static_cast<uint32_t>(blocks);
  d.mmNT = FaCubeTiling(p.dataType, t.blockDim, mT, nT, p.dim);
  d.mmNN = FaCubeTiling(p.dataType, t.blockDim, mT, p.dim, nT);
  d.mmTN = FaCubeTiling(p.dataType, t.blockDim, nT, p.dim, mT);
  t.tilingKey = p.dataType == FaFloat::kF32 ? 1 : p.dataType == FaFloat::kF16 ? 2 : 3;
  // Per block, forward: S (P written over it) and the accumulator; backward: S (P over it) and
  // dP (dS over it). A fp16/bf16 backward also sums dq, dk, dv in fp32 (dv counted at D >= D_v).
  const uint64_t floats = grad ? 2 * mT * nT : mT * nT + mT * uint64_t(p.dim);
  const uint64_t sums = grad && p.dataType != FaFloat::kF32
                            ? (uint64_t(d.qRows) * p.heads1 + 2 * uint64_t(d.kRows) * p.heads2) * uint64_t(p.dim)
                            : 0;
  t.workspaceBytes = empty ? 0 : (blocks * floats + (grad ? FaRowDFloats(d) : 0) + sums) * 4;
  return t;
}

}  // namespace ms_ops

#endif  // MS_OPS_FLASH_ATTENTION_TILING_H_
