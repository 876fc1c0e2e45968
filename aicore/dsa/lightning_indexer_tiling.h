// Tiling of lightning_indexer as a pure function of the problem and the platform (shared by the
// CANN TilingFunc and the CPU entry).
#ifndef MS_OPS_DSA_LIGHTNING_INDEXER_TILING_H_
#define MS_OPS_DSA_LIGHTNING_INDEXER_TILING_H_

#include <cstdint>
#include <string>

#include "../common/platform.h"
#include "lightning_indexer_tiling_data.h"

namespace ms_ops {

enum class LiFloat { kF32, kF16, kBF16 };

// The running top-k, its merge with a key tile and the output rows share the UB.
constexpr int64_t kLiMaxTopK = 2048;
// A head dim (and a query group of weights) fits one 16 KiB tile row in fp32.
constexpr int64_t kLiMaxRow = 4096;
constexpr uint32_t kLiKeyTile = 512;
// Query rows x group of one item: a cube product of ~512 rows, so that each key tile, loaded
// once per item, serves many query rows.
constexpr int64_t kLiItemHeads = 512;
constexpr int64_t kLiMaxQueryRows = 64;
constexpr uint64_t kLiAlignFloats = 64;

struct LightningIndexerProblem {
  int64_t batch = 0, seq1 = 0, seq2 = 0, tokens1 = 0;
  uint32_t qLenMode = 0, kLenMode = 0;
  int64_t n1 = 0, n2 = 0, dim = 0, topK = 0;
  uint32_t sparseMode = 3;
  int64_t blockSize = 0, maxBlocks = 0;  // paged keys
  LiFloat dataType = LiFloat::kF32;
};

struct LightningIndexerTiling {
  LightningIndexerTilingData data{};
  uint32_t blockDim = 0;        // 0: nothing to compute
  uint64_t tilingKey = 0;       // 1 fp32, 2 fp16, 3 bf16
  uint64_t workspaceBytes = 0;  // all blocks' workspaces
  std::string error;
};

inline LightningIndexerTiling ComputeLightningIndexerTiling(const LightningIndexerProblem &p,
                                                            const PlatformInfo &platform) {
  LightningIndexerTiling t;
  if (p.n1 < 1 || p.n2 < 1 || p.n1 % p.n2 != 0 || p.dim < 1 || p.dim > kLiMaxRow || p.n1 / p.n2 > kLiMaxRow ||
      p.topK < 1 || p.topK > kLiMaxTopK) {
    t.error = "needs N1 a multiple of N2 >= 1, 1 <= D <= 4096, N1 / N2 <= 4096 and 1 <= sparse_count <= 2048";
    return t;
  }
  LightningIndexerTilingData &d = t.data;
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
  d.blockSize = p.blockSize;
  d.maxBlocks = p.maxBlocks;
  int64_t rows = kLiItemHeads / d.group;
  rows = rows < 1 ? 1 : rows > kLiMaxQueryRows ? kLiMaxQueryRows : rows;
  d.qRows = static_cast<uint32_t>(rows);
  d.keyTile = kLiKeyTile;
  const uint64_t heads = uint64_t(rows) * uint64_t(d.group), dim = uint64_t(p.dim);
  uint64_t at = 0;
  auto carve = [&at](uint64_t floats) {
    const uint64_t off = at;
    at += AlignUp(floats, kLiAlignFloats);
    return off;
  };
  d.offQ = carve(heads * dim);
  d.offK = carve(uint64_t(kLiKeyTile) * dim);
  d.offScore = carve(heads * kLiKeyTile);
  d.offTop = carve(uint64_t(rows) * uint64_t(p.topK) * 2);
  d.blockFloats = at;
  // An upper bound of the items (a TND batch adds at most one partial run); blocks beyond the
  // items found at run time have nothing to do.
  const uint64_t items = (uint64_t(p.tokens1) / uint64_t(rows) + uint64_t(p.batch)) * uint64_t(p.n2);
  const bool empty = p.tokens1 == 0 || p.batch == 0;
  const uint64_t blocks = items < platform.aicCoreNum ? items : platform.aicCoreNum;
  t.blockDim = empty ? 0 : static_cast<uint32_t>(blocks);
  d.mmNT = SingleShapeCubeTiling(t.blockDim, int64_t(heads), kLiKeyTile, p.dim, 128, 128, 32, 2);
  t.tilingKey = p.dataType == LiFloat::kF32 ? 1 : p.dataType == LiFloat::kF16 ? 2 : 3;
  t.workspaceBytes = empty ? 0 : blocks * d.blockFloats * 4;
  return t;
}

}  // namespace ms_ops

#endif  // MS_OPS_DSA_LIGHTNING_INDEXER_TILING_H_
