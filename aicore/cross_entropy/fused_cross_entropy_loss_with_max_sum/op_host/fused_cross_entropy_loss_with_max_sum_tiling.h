// Tiling of fused_cross_entropy_loss_with_max_sum as a pure function of shapes, attributes and
// the platform, shared by the CANN TilingFunc and the CPU entry.
//
// Blocks (vector cores) split the BT rows evenly. A block loads the statistics (max, sum of
// exponentials, predicted logit, sum of logits) of statRows rows at a time, writes their losses
// and, with logits, streams the rows' logits through UB in [tileRows, tileCols] tiles (whole
// rows when V fits one tile, else column pieces of one row), double-buffered in and out. fp16 and
// bf16 logits arrive in their own dtype and are widened row by row into the fp32 output tile.
#ifndef MS_OPS_FUSED_CROSS_ENTROPY_LOSS_WITH_MAX_SUM_TILING_H_
#define MS_OPS_FUSED_CROSS_ENTROPY_LOSS_WITH_MAX_SUM_TILING_H_

#include <cstdint>
#include <string>

#include "../../cross_entropy_common.h"
#include "../../../common/platform.h"
#include "../op_kernel/fused_cross_entropy_loss_with_max_sum_tiling_data.h"

namespace ms_ops {

struct FusedCrossEntropyLossWithMaxSumProblem {
  int64_t rows = 0;   // BT
  int64_t vocab = 0;  // V (columns of the logits), ignored without them
  bool hasLogits = false;
  CeFloat logitsType = CeFloat::kF32;  // dtype of vocab_parallel_logits, read with the logits
  double labelSmoothing = 0.0;
  int64_t vocabSize = 0;  // global V, used when labelSmoothing > 0
};

struct FusedCrossEntropyLossWithMaxSumTiling {
  FusedCrossEntropyLossWithMaxSumTilingData data{};
  uint32_t blockDim = 0;  // 0: nothing to compute (BT == 0)
  uint64_t tilingKey = kFcelKeyF32;
  std::string error;      // why the problem cannot run; empty when it can
};

constexpr uint64_t kFcelStatRows = 1024;    // statistics rows per load
constexpr uint64_t kFcelTileElems = 8192;   // fp32 elements of one softmax tile buffer (32 KiB)
constexpr uint64_t kFcelMaxTileRows = 4095;  // rows one strided DataCopyPad moves

// UB bytes the kernel allocates: the four statistics and the loss of statRows rows, and two input
// tiles (rows of logits in their dtype, each row 32-byte aligned) plus two fp32 output tiles. The
// kernel's InitBuffer calls follow these formulas exactly.
inline uint64_t FcelUbStats(uint64_t statRows) { return 5 * statRows * 4; }
inline uint64_t FcelUbTiles(uint64_t tileRows, uint64_t tileCols, uint32_t logitsBytes) {
  return 2 * tileRows * (AlignUp(tileCols * logitsBytes, kBlockBytes) + AlignUp(tileCols * 4, kBlockBytes));
}

inline uint32_t FcelLogitsBytes(CeFloat t) { return t == CeFloat::kF32 ? 4 : 2; }

inline uint64_t FcelKey(CeFloat t) {
  return t == CeFloat::kF32 ? kFcelKeyF32 : t == CeFloat::kF16 ? kFcelKeyF16 : kFcelKeyBF16;
}

inline FusedCrossEntropyLossWithMaxSumTiling ComputeFusedCrossEntropyLossWithMaxSumTiling(
    const FusedCrossEntropyLossWithMaxSumProblem &p, const PlatformInfo &platform) {
  FusedCrossEntropyLossWithMaxSumTiling t;
  if (!(p.labelSmoothing >= 0.0 && p.labelSmoothing < 1.0)) {
    t.error = "label_smoothing must be in [0, 1), got " + std::to_string(p.labelSmoothing);
    return t;
  }
  if (p.labelSmoothing > 0.0 && p.vocabSize < 1) {
    t.error = "vocab_size must be >= 1 with label smoothing, got " + std::to_string(p.vocabSize);
    return t;
  }
  if (p.rows < 0 || (p.hasLogits && p.vocab < 0)) {
    t.error = "needs BT >= 0 and V >= 0";
    return t;
  }
  const uint64_t rows = uint64_t(p.rows), vocab = p.hasLogits ? uint64_t(p.vocab) : 0;
  const uint64_t statRows = AlignUp(rows < kFcelStatRows ? (rows > 0 ? rows : 1) : kFcelStatRows, 8);
  uint64_t tileCols = vocab < kFcelTileElems ? vocab : kFcelTileElems;
  uint64_t tileRows = 1;
  if (tileCols == vocab && vocab > 0) {
    tileRows = kFcelTileElems / AlignUp(vocab, kBlockBytes / 4);
    if (tileRows > statRows) tileRows = statRows;
    if (tileRows > kFcelMaxTileRows) tileRows = kFcelMaxTileRows;
  }
  if (tileCols == 0) tileCols = 1;  // no softmax: a nominal tile that the kernel never uses
  if (FcelUbStats(statRows) + FcelUbTiles(tileRows, tileCols, FcelLogitsBytes(p.logitsType)) > platform.ubSize) {
    t.error = "the " + std::to_string(platform.ubSize) + "-byte UB cannot hold the statistics and softmax tiles";
    return t;
  }
  const uint64_t blocks = rows < platform.aivCoreNum ? rows : platform.aivCoreNum;
  FusedCrossEntropyLossWithMaxSumTilingData &d = t.data;
  d.rows = p.rows;
  d.vocab = static_cast<int64_t>(vocab);
  d.rowsPerBlock = blocks == 0 ? 0 : p.rows / int64_t(blocks);
  d.rowsRemainder = blocks == 0 ? 0 : p.rows % int64_t(blocks);
  d.labelSmoothing = static_cast<float>(p.labelSmoothing);
  d.invVocabSize = p.labelSmoothing > 0.0 ? static_cast<float>(1.0 / double(p.vocabSize)) : 0.0f;
  d.statRows = static_cast<uint32_t>(statRows);
  d.tileRows = static_cast<uint32_t>(tileRows);
  d.tileCols = static_cast<uint32_t>(tileCols);
  d.hasLogits = p.hasLogits ? 1 : 0;
  t.blockDim = static_cast<uint32_t>(blocks);
  t.tilingKey = p.hasLogits ? FcelKey(p.logitsType) : kFcelKeyF32;
  return t;
}

}  // namespace ms_ops

#endif  // MS_OPS_FUSED_CROSS_ENTROPY_LOSS_WITH_MAX_SUM_TILING_H_
