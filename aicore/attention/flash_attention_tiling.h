// Tiling of flash_attention_score and flash_attention_score_grad as a pure function of the
// problem and the platform, shared by the CANN TilingFuncs and the CPU entries.
//
// Work items (batch, head, tile of query rows) or (batch, key head, tile of key rows) are dealt
// round-robin to the blocks (one per cube core). Each block has its own GM workspace for the
// score, probability and product tiles, so no S1 x S2 buffer exists.
#ifndef MS_OPS_FLASH_ATTENTION_TILING_H_
#define MS_OPS_FLASH_ATTENTION_TILING_H_

#include <cstdint>
#include <string>

#include "../common/platform.h"
#include "flash_attention_tiling_data.h"

namespace ms_ops {

enum class FaLayout { kBSH, kSBH, kBSND, kBNSD };
enum class FaFloat { kF32, kF16, kBF16 };

// Keys visible beyond this distance are all keys (pre/next_tokens' "unlimited" 2147483647).
constexpr int64_t kFaFar = int64_t(1) << 40;

struct FlashAttentionProblem {
  int64_t batch = 0, heads1 = 0, heads2 = 0, seq1 = 0, seq2 = 0, dim = 0;
  FaLayout layout = FaLayout::kBSH;
  FaFloat dataType = FaFloat::kF32;
  float scale = 1.0f;
  int64_t preTokens = 0, nextTokens = 0, sparseMode = 0;
};

struct FlashAttentionTiling {
  FlashAttentionTilingData data{};
  uint32_t blockDim = 0;        // 0: nothing to compute
  uint64_t tilingKey = 0;       // 1 fp32, 2 fp16, 3 bf16
  uint64_t workspaceBytes = 0;  // all blocks' workspaces
  std::string error;
};

constexpr uint64_t kFaQueryTile = 64, kFaKeyTile = 128;

inline TCubeTiling FaCubeTiling(FaFloat t, uint32_t blockDim, int64_t m, int64_t n, int64_t k) {
  TCubeTiling mm{};
  mm.usedCoreNum = static_cast<int32_t>(blockDim);
  mm.M = mm.singleCoreM = static_cast<int32_t>(m);
  mm.N = mm.singleCoreN = static_cast<int32_t>(n);
  mm.Ka = mm.Kb = mm.singleCoreK = static_cast<int32_t>(k);
  mm.baseM = 128;
  mm.baseN = 256;
  mm.baseK = t == FaFloat::kF32 ? 32 : 64;
  mm.depthA1 = mm.depthB1 = 2;
  mm.stepM = mm.stepN = mm.stepKa = mm.stepKb = 1;
  mm.dbL0A = mm.dbL0B = 2;
  mm.dbL0C = 1;
  return mm;
}

// Strides (elements) of one tensor [.., S, N, D] in the layout: batch, head, row.
inline void FaStrides(FaLayout l, int64_t b, int64_t s, int64_t n, int64_t d, int64_t &sb, int64_t &sn, int64_t &row) {
  (void)b;
  switch (l) {
    case FaLayout::kBSH:
    case FaLayout::kBSND: sb = s * n * d; sn = d; row = n * d; break;
    case FaLayout::kSBH: sb = n * d; sn = d; row = b * n * d; break;
    case FaLayout::kBNSD: sb = n * s * d; sn = s * d; row = d; break;
  }
}

// grad: the backward's workspace (S, P, dP, dS tiles and two fp32 accumulators per block).
inline FlashAttentionTiling ComputeFlashAttentionTiling(const FlashAttentionProblem &p, const PlatformInfo &platform,
                                                        bool grad) {
  FlashAttentionTiling t;
  if (p.batch < 0 || p.heads1 < 1 || p.heads2 < 1 || p.heads1 % p.heads2 != 0 || p.seq1 < 0 || p.seq2 < 0 ||
      p.dim < 1 || p.dim > 512) {
    t.error = "needs N1 a multiple of N2 >= 1 and 1 <= D <= 512";
    return t;
  }
  if (p.sparseMode != 0 && p.sparseMode != 2 && p.sparseMode != 3) {
    t.error = "sparse_mode must be 0, 2 or 3";
    return t;
  }
  FlashAttentionTilingData &d = t.data;
  d.batch = p.batch;
  d.heads1 = p.heads1;
  d.heads2 = p.heads2;
  d.seq1 = p.seq1;
  d.seq2 = p.seq2;
  d.dim = p.dim;
  // SBH's row stride spans the batch: the Matmul's int32 strides must hold it.
  FaStrides(p.layout, p.batch, p.seq1, p.heads1, p.dim, d.qStrideB, d.qStrideN, d.qRow);
  FaStrides(p.layout, p.batch, p.seq2, p.heads2, p.dim, d.kStrideB, d.kStrideN, d.kRow);
  if (d.qRow > INT32_MAX || d.kRow > INT32_MAX) {
    t.error = "row strides must fit the Matmul's int32 shapes";
    return t;
  }
  auto clampFar = [](int64_t v) { return v > kFaFar ? kFaFar : (v < -kFaFar ? -kFaFar : v); };
  if (p.sparseMode == 0) {
    d.lowOffset = -clampFar(p.preTokens);
    d.highOffset = clampFar(p.nextTokens);
  } else {
    d.lowOffset = -kFaFar;
    d.highOffset = p.sparseMode == 2 ? 0 : p.seq2 - p.seq1;
  }
  d.scale = p.scale;
  const uint64_t mT = p.seq1 < int64_t(kFaQueryTile) ? uint64_t(p.seq1 > 0 ? p.seq1 : 1) : kFaQueryTile;
  const uint64_t nT = p.seq2 < int64_t(kFaKeyTile) ? uint64_t(p.seq2 > 0 ? p.seq2 : 1) : kFaKeyTile;
  d.mTile = static_cast<uint32_t>(mT);
  d.nTile = static_cast<uint32_t>(nT);
  // Forward items: (b, n1, query tile); the backward's key pass has (b, n2, key tile) items too.
  const uint64_t qItems = uint64_t(p.batch) * p.heads1 * CeilDiv(uint64_t(p.seq1), mT);
  const uint64_t kItems = uint64_t(p.batch) * p.heads2 * CeilDiv(uint64_t(p.seq2), nT);
  uint64_t items = grad ? (qItems > kItems ? qItems : kItems) : qItems;
  uint64_t blocks = items < platform.aicCoreNum ? items : platform.aicCoreNum;
  const bool empty = p.batch == 0 || p.seq1 == 0 || p.seq2 == 0;
  t.blockDim = empty ? 0 : static_cast<uint32_t>(blocks);
  d.mmNT = FaCubeTiling(p.dataType, t.blockDim, mT, nT, p.dim);
  d.mmNN = FaCubeTiling(p.dataType, t.blockDim, mT, p.dim, nT);
  d.mmTN = FaCubeTiling(p.dataType, t.blockDim, nT, p.dim, mT);
  t.tilingKey = p.dataType == FaFloat::kF32 ? 1 : p.dataType == FaFloat::kF16 ? 2 : 3;
  // Forward: S, P (fp32-sized), P V and the accumulator. Backward: S, P, dP, dS and two
  // accumulators of max(mT, nT) x D.
  const uint64_t big = mT > nT ? mT : nT;
  const uint64_t floats = grad ? 4 * mT * nT + 2 * big * uint64_t(p.dim) + 2 * big : 2 * mT * nT + 2 * mT * uint64_t(p.dim);
  t.workspaceBytes = empty ? 0 : blocks * floats * 4;
  return t;
}

}  // namespace ms_ops

#endif  // MS_OPS_FLASH_ATTENTION_TILING_H_
