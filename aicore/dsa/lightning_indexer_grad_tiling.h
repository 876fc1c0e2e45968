// Tiling of lightning_indexer_grad as a pure function of the problem and the platform.
#ifndef MS_OPS_DSA_LIGHTNING_INDEXER_GRAD_TILING_H_
#define MS_OPS_DSA_LIGHTNING_INDEXER_GRAD_TILING_H_

#include <cstdint>
#include <limits>
#include <string>

#include "../common/platform.h"
#include "lightning_indexer_grad_tiling_data.h"
#include "lightning_indexer_tiling.h"

namespace ms_ops {

// Every block keeps a key-gradient partial of the whole key: fewer blocks when the key is large.
constexpr uint64_t kLigPartialBudget = 256ull << 20;

struct LightningIndexerGradTiling {
  LightningIndexerGradTilingData data{};
  uint32_t blockDim = 0;
  uint64_t tilingKey = 0;
  uint64_t workspaceBytes = 0;
  std::string error;
};

// The main attention of the KL-loss kernel: heads, head dim, rope dim, scale (all 0 otherwise).
struct DsaMainAttention {
  int64_t n1 = 0, n2 = 0, dim = 0, ropeDim = 0;
  float scale = 1.0f;
};

inline LightningIndexerGradTiling ComputeLightningIndexerGradTiling(const LightningIndexerProblem &p,
                                                                    int64_t tokens2, const PlatformInfo &platform,
                                                                    const DsaMainAttention &main = {}) {
  LightningIndexerGradTiling t;
  // The KL losses (a main attention) walk a token's keys in runs of at most kLiMaxTopK; the
  // indexer's gradient takes them at once.
  const bool kl = main.n1 > 0;
  if (p.n1 < 1 || p.n2 < 1 || p.n1 % p.n2 != 0 || p.dim < 1 || p.topK < 1 || (!kl && p.topK > kLiMaxTopK)) {
    t.error = "needs N1 a multiple of N2 >= 1, D >= 1 and k >= 1 (at most 2048 for the indexer's gradient)";
    return t;
  }
  LightningIndexerGradTilingData &d = t.data;
  d.batch = p.batch;
  d.seq1 = p.seq1;
  d.seq2 = p.seq2;
  d.qLenMode = p.qLenMode;
  d.kLenMode = p.kLenMode;
  d.n1 = p.n1;
  d.n2 = p.n2;
  d.group = p.n1 / p.n2;
  d.dim = p.dim;
  d.topK = p.topK;
  d.sparseMode = p.sparseMode;
  d.kPad = static_cast<uint32_t>(AlignUp(uint64_t(p.topK < kLiMaxTopK ? p.topK : kLiMaxTopK), 64));
  d.keyRows = tokens2 * p.n2;
  const uint64_t g = uint64_t(d.group), dim = uint64_t(p.dim), kp = d.kPad;
  uint64_t at = 0;
  auto carve = [&at](uint64_t floats) {
    const uint64_t off = at;
    at += AlignUp(floats, kLiAlignFloats);
    return off;
  };
  d.offQ = carve(g * dim);
  d.offK = carve(kp * dim);
  d.offS = carve(g * kp);
  d.offDs = carve(g * kp);
  d.offDq = carve(g * dim);
  d.offDk = carve(kp * dim);
  d.offPart = carve(uint64_t(d.keyRows) * dim);
  d.tokens1 = p.tokens1;
  d.mainN1 = main.n1;
  d.mainN2 = main.n2;
  d.mainGroup = main.n2 > 0 ? main.n1 / main.n2 : 0;
  d.mainDim = main.dim;
  d.ropeDim = main.ropeDim;
  d.scale = main.scale;
  const uint64_t mg = uint64_t(d.mainGroup), md = uint64_t(main.dim + main.ropeDim);
  d.offMq = carve(mg * md);
  d.offMk = carve(kp * md);
  d.offMs = carve(mg * kp);
  d.offIp = kl ? carve(2 * AlignUp(uint64_t(p.topK), kp)) : 0;
  d.blockFloats = at;
  const uint64_t items = uint64_t(p.tokens1) * uint64_t(p.n2);
  uint64_t blocks = items < platform.aicCoreNum ? items : platform.aicCoreNum;
  const uint64_t fit = kLigPartialBudget / (d.blockFloats * 4);
  if (blocks > fit) blocks = fit > 0 ? fit : 1;
  const bool empty = items == 0;
  t.blockDim = empty ? 0 : static_cast<uint32_t>(blocks);
  d.offLoss = blocks * d.blockFloats;
  const int64_t rowsNT = int64_t(g > mg ? g : mg), depthNT = p.dim > int64_t(md) ? p.dim : int64_t(md);
  d.mmNT = SingleShapeCubeTiling(t.blockDim, rowsNT, int64_t(kp), depthNT, 128, 128, 32, 2);
  d.mmNN = SingleShapeCubeTiling(t.blockDim, int64_t(g), p.dim, int64_t(kp), 128, 128, 32, 2);
  d.mmTN = SingleShapeCubeTiling(t.blockDim, int64_t(kp), p.dim, int64_t(g), 128, 128, 32, 2);
  t.tilingKey = p.dataType == LiFloat::kF32 ? 1 : p.dataType == LiFloat::kF16 ? 2 : 3;
  t.workspaceBytes = empty ? 0 : (blocks * d.blockFloats + AlignUp(items, kLiAlignFloats)) * 4;
  return t;
}

// The KL losses' pre_tokens/next_tokens into the tiling: a band unless both are the default
// 2^63-1, each clamped to +-2^62 so that the kernel's anchor +- them cannot overflow.
inline void DsaSetBand(LightningIndexerGradTilingData &d, int64_t pre, int64_t next) {
  constexpr int64_t kFarTokens = int64_t(1) << 62;
  auto clamp = [](int64_t v) { return v < -kFarTokens ? -kFarTokens : v > kFarTokens ? kFarTokens : v; };
  d.band = pre != std::numeric_limits<int64_t>::max() || next != std::numeric_limits<int64_t>::max() ? 1 : 0;
  d.preTokens = clamp(pre);
  d.nextTokens = clamp(next);
}

}  // namespace ms_ops

#endif  // MS_OPS_DSA_LIGHTNING_INDEXER_GRAD_TILING_H_
