// Tiling of cross_entropy_loss_reduce and cross_entropy_loss_reduce_grad as a pure function of the
// token count, the target dtype and the attributes, shared by the CANN TilingFuncs and the CPU
// entries.
//
// One block: the reduction is over N per-token values (N is the token count of a step, thousands
// to a few hundred thousand), a few microseconds of one vector core, and a single block adds the
// chunks' partial sums in one fixed order, so the result is the same on every run. The block
// walks the tokens in chunks of chunkRows. It runs for N = 0 too: the single-value results (0 for
// "sum", NaN for "mean", count 0) are written whatever N is.
#ifndef MS_OPS_CROSS_ENTROPY_LOSS_REDUCE_TILING_H_
#define MS_OPS_CROSS_ENTROPY_LOSS_REDUCE_TILING_H_

#include <cstdint>
#include <string>

#include "../../cross_entropy_common.h"
#include "../../../common/platform.h"
#include "../op_kernel/cross_entropy_loss_reduce_tiling_data.h"

namespace ms_ops {

struct CrossEntropyLossReduceProblem {
  int64_t rows = 0;
  int64_t ignoreIndex = -100;
  CeReduction reduction = CeReduction::kMean;
  bool int64Target = false;
};

struct CrossEntropyLossReduceTiling {
  CrossEntropyLossReduceTilingData data{};
  uint32_t blockDim = 1;
  uint64_t tilingKey = 0;
  std::string error;  // why the problem cannot run; empty when it can
};

constexpr uint64_t kCelrMaxChunkRows = 4096;
constexpr uint64_t kCelrScalarBytes = 3 * kBlockBytes;  // a chunk's sum and the two single values

// UB bytes either kernel allocates: per chunk row three fp32 values (the forward's losses, kept
// values and reduction scratch; the gradient's upstream values and gradients, and room to spare)
// and a target, plus a block per single value. The kernels' InitBuffer calls stay within this.
inline uint64_t CelrUbBytes(uint64_t chunkRows, uint32_t targetBytes) {
  return 3 * AlignUp(chunkRows * 4, kBlockBytes) + AlignUp(chunkRows * targetBytes, kBlockBytes) + kCelrScalarBytes;
}

inline CrossEntropyLossReduceTiling ComputeCrossEntropyLossReduceTiling(const CrossEntropyLossReduceProblem &p,
                                                                        const PlatformInfo &platform) {
  CrossEntropyLossReduceTiling t;
  if (p.rows < 0) {
    t.error = "needs N >= 0, got " + std::to_string(p.rows);
    return t;
  }
  const uint64_t rows = uint64_t(p.rows);
  const uint64_t chunk = AlignUp(rows == 0 ? 1 : (rows < kCelrMaxChunkRows ? rows : kCelrMaxChunkRows), 8);
  if (CelrUbBytes(chunk, p.int64Target ? 8 : 4) > platform.ubSize) {
    t.error = "the " + std::to_string(platform.ubSize) + "-byte UB cannot hold a chunk of " + std::to_string(chunk) +
              " tokens";
    return t;
  }
  t.data.rows = p.rows;
  t.data.ignoreIndex = p.ignoreIndex;
  t.data.chunkRows = static_cast<uint32_t>(chunk);
  t.data.reduction = static_cast<uint32_t>(p.reduction);
  t.tilingKey = p.int64Target ? kCelrKeyI64 : kCelrKeyI32;
  return t;
}

}  // namespace ms_ops

#endif  // MS_OPS_CROSS_ENTROPY_LOSS_REDUCE_TILING_H_
