// Tiling of fused_linear_cross_entropy_grad_in_forward as a pure function of shapes, attributes,
// dtypes and the platform, shared by the CANN TilingFunc and the CPU entry.
//
// V is cut into tiles of nt vocabulary entries, the tokens into row chunks of mt and those into
// token blocks of c = blockChunks * mt rows: the largest multiple of mt whose fp32 logits
// (c * V * 4 bytes) fit block_bytes, at least one chunk and no more chunks than N has. The kernel
// runs the token blocks one after the other; within one, the units of each phase (a (V tile, row
// chunk) pair, a V tile, or a (row chunk, H slice) pair) go round-robin over the blocks.
//
// Workspace: the token block's logits [tiles][tileRows][tile cols] fp32 (each (tile, chunk) part
// contiguous, so that G can replace it in place in the input dtype), the per-(tile, row) partials
// [tiles][4][tileRows] and the row max / exp-sum [2][tileRows]; for fp16/bf16 also an fp32
// [tileRows, H] input_grad accumulator, an fp32 [rs, H] weight_grad product scratch per block and,
// with more than one token block, the [V, H] remainders lo of the hi/lo running sums (input dtype;
// see the kernel): half the bytes of an fp32 [V, H] accumulator. fp32 accumulates in the outputs.
#ifndef MS_OPS_FUSED_LINEAR_CROSS_ENTROPY_GRAD_IN_FORWARD_TILING_H_
#define MS_OPS_FUSED_LINEAR_CROSS_ENTROPY_GRAD_IN_FORWARD_TILING_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "../../cross_entropy_common.h"
#include "../../../common/platform.h"
#include "../../fused_linear_cross_entropy_loss_grad/op_host/fused_linear_cross_entropy_loss_grad_tiling.h"
#include "../op_kernel/fused_linear_cross_entropy_grad_in_forward_tiling_data.h"

namespace ms_ops {

struct FlceGradInForwardProblem {
  int64_t rows = 0;    // N
  int64_t hidden = 0;  // H
  int64_t vocab = 0;   // V
  int64_t ignoreIndex = -100;
  float labelSmoothing = 0.0f;
  uint64_t blockBytes = 0;  // budget of one token block's fp32 logits
  CeFloat dataType = CeFloat::kF32;
  bool int64Target = false;
};

struct FlceGradInForwardTiling {
  FusedLinearCrossEntropyGradInForwardTilingData data{};
  uint32_t blockDim = 0;
  uint64_t tilingKey = 0;
  uint64_t workspaceBytes = 0;  // user workspace the kernel needs
  std::string error;            // why the problem cannot run; empty when it can
};

// Row chunks of up to 512 tokens, as many as the budget holds (at least 16): each (tile, chunk)
// logits product is mt x nt x H, each weight_grad step nt x H x mt and each input_grad unit
// mt x hs x V. Each of those streams a whole [V, H] operand per chunk (the weight read twice, the
// fp32 weight_grad read and written), so the chunk sets how often the token loop passes over
// them: at BT = 4096, H = 2048, V = 32000 on the CPU twin, 128-row chunks spent a fifth of the time
// re-packing the weight for the input_grad products. V tiles of up to 1024 columns (the gradient
// kernel's 256 bound its per-block workspace; here the logits live in the token block's workspace
// anyway): each input_grad step's K and each logits product's N four times larger, about 8% of the
// time on the CPU twin at BT = 4096, H = 1024, V = 32000. input_grad products are cut into H
// slices of at most 512 columns.
constexpr int64_t kFlceGifMaxChunkRows = 512;
constexpr int64_t kFlceGifMinChunkRows = 16;
constexpr int64_t kFlceGifMaxTileCols = 1024;
constexpr int64_t kFlceGifMaxSliceCols = 512;
// fp16/bf16 weight_grad units of at most 256 rows of a V tile: the scratch of all blocks is
// blocks * 256 * H * 4 bytes (24 MiB at H = 1024 on 24 blocks), and 1024-column tiles give 4
// units each. Each unit reads its chunks of X again, so larger units read X less often; 256 keeps
// the extra memory of bf16 at BT = 4096, H = 1024, V = 32000 under a quarter of PyTorch's.
constexpr int64_t kFlceGifWeightPartRows = 256;
constexpr uint32_t kFlceGifStats = 4;        // per-(tile, row) partials: max, exp-sum, target logit, sum
constexpr uint32_t kFlceGifReduceSlots = 3;  // reduction results, one 32-byte block each

// UB bytes besides the four row buffers: the row arrays of a chunk (four fp32 partials, reused as
// the combine's accumulators), its targets, an exp row / combine scratch, the reduction scratch and
// results. The kernel's InitBuffer calls follow this formula.
inline uint64_t FlceGifUbFixed(uint64_t mt, uint64_t nt, uint32_t targetBytes) {
  return kFlceGifStats * AlignUp(mt * 4, kBlockBytes) + AlignUp(mt * targetBytes, kBlockBytes) +
         AlignUp(std::max(mt, nt) * 4, kBlockBytes) + AlignUp(nt * 4, kBlockBytes) + kFlceGifReduceSlots * kBlockBytes;
}

inline FlceGradInForwardTiling ComputeFlceGradInForwardTiling(const FlceGradInForwardProblem &p,
                                                              const PlatformInfo &platform) {
  FlceGradInForwardTiling t;
  if (p.rows < 0 || p.hidden < 1 || p.vocab < 1) {
    t.error = "needs N >= 0, H >= 1 and V >= 1 (got N=" + std::to_string(p.rows) + ", H=" + std::to_string(p.hidden) +
              ", V=" + std::to_string(p.vocab) + ")";
    return t;
  }
  if (!(p.labelSmoothing >= 0.0f && p.labelSmoothing < 1.0f)) {
    t.error = "label_smoothing " + std::to_string(p.labelSmoothing) + " is outside [0, 1)";
    return t;
  }
  if (p.rows > INT32_MAX || p.hidden > INT32_MAX || p.vocab > INT32_MAX) {
    t.error = "N, H and V must fit the int32 shapes of the Matmul tiling";
    return t;
  }
  const uint32_t elemBytes = p.dataType == CeFloat::kF32 ? 4u : 2u;
  const uint32_t targetBytes = p.int64Target ? 8u : 4u;
  const uint64_t rows = uint64_t(p.rows), hidden = uint64_t(p.hidden), vocab = uint64_t(p.vocab);

  const uint64_t tiles0 = CeilDiv(vocab, kFlceGifMaxTileCols);
  const uint64_t nt = AlignUp(CeilDiv(vocab, tiles0), 16);
  const uint64_t tiles = CeilDiv(vocab, nt);
  const uint64_t budgetRows = p.blockBytes / (vocab * 4);
  const uint64_t mt = std::min<uint64_t>({kFlceGifMaxChunkRows, AlignUp(std::max<uint64_t>(rows, 1), 16),
                                          std::max<uint64_t>(kFlceGifMinChunkRows, budgetRows / 16 * 16)});
  const uint64_t chunks = CeilDiv(rows, mt);
  const uint64_t fit = budgetRows / mt;
  const uint64_t blockChunks = std::clamp<uint64_t>(fit, 1, std::max<uint64_t>(chunks, 1));
  const uint64_t blockRows = blockChunks * mt;
  const uint64_t tokenBlocks = CeilDiv(rows, blockRows);
  const uint64_t tileRows = std::min(blockRows, rows);
  const uint64_t slices0 = CeilDiv(hidden, kFlceGifMaxSliceCols);
  const uint64_t hs = AlignUp(CeilDiv(hidden, slices0), 16);
  const uint64_t blocks = std::max<uint64_t>(
      1, std::min<uint64_t>(platform.aicCoreNum, rows == 0 ? tiles : tiles * blockChunks));

  const uint64_t fixed = FlceGifUbFixed(mt, nt, targetBytes);
  const uint64_t ubChunk = fixed >= platform.ubSize ? 0 : (platform.ubSize - fixed) / 4 / kBlockBytes * kBlockBytes;
  const uint64_t ubRow = AlignUp(nt * 4, kBlockBytes);
  if (ubChunk < std::max<uint64_t>(ubRow, kFlceGifStats * AlignUp(mt * 4, kBlockBytes))) {
    t.error = "the " + std::to_string(platform.ubSize) + "-byte UB cannot hold a " + std::to_string(nt) + "-column row";
    return t;
  }

  FusedLinearCrossEntropyGradInForwardTilingData &d = t.data;
  const bool f32 = p.dataType == CeFloat::kF32;
  const uint64_t rs = std::min<uint64_t>(kFlceGifWeightPartRows, nt);
  uint64_t ws = 0;
  d.logitsOffset = ws;
  ws += AlignUp(tileRows * vocab * 4, kFlceWorkspaceAlign);
  d.statsOffset = ws;
  ws += AlignUp(uint64_t(tiles) * kFlceGifStats * tileRows * 4, kFlceWorkspaceAlign);
  d.rowStatsOffset = ws;
  ws += AlignUp(2 * tileRows * 4, kFlceWorkspaceAlign);
  d.inputAccOffset = ws;
  if (!f32) ws += AlignUp(tileRows * hidden * 4, kFlceWorkspaceAlign);
  d.weightAccOffset = ws;
  if (!f32 && rows > 0) ws += AlignUp(blocks * rs * hidden * 4, kFlceWorkspaceAlign);
  d.weightLoOffset = ws;
  if (!f32 && tokenBlocks > 1) ws += AlignUp(vocab * hidden * elemBytes, kFlceWorkspaceAlign);

  d.rows = p.rows;
  d.hidden = p.hidden;
  d.vocab = p.vocab;
  d.ignoreIndex = p.ignoreIndex;
  d.chunkRows = int64_t(mt);
  d.tileCols = int64_t(nt);
  d.tiles = int64_t(tiles);
  d.blockChunks = int64_t(blockChunks);
  d.blockRows = int64_t(blockRows);
  d.tokenBlocks = int64_t(tokenBlocks);
  d.tileRows = int64_t(tileRows);
  d.sliceCols = int64_t(hs);
  d.slices = int64_t(CeilDiv(hidden, hs));
  d.weightPartRows = int64_t(rs);
  d.targetWeight = 1.0f - p.labelSmoothing;
  d.smoothPerClass = static_cast<float>(double(p.labelSmoothing) / double(p.vocab));
  d.ubChunkBytes = static_cast<uint32_t>(ubChunk);
  d.batchRows = static_cast<uint32_t>(std::min<uint64_t>(mt, ubChunk / ubRow));
  // Per pass the fp32 part, the hi/lo pair, the fp32 sum and the output pair: a buffer each.
  d.pairElems = static_cast<uint32_t>(ubChunk / 4 / 16 * 16);
  d.mmLogits = FlceCube(int64_t(mt), int64_t(nt), p.hidden, elemBytes, uint32_t(blocks));
  d.mmWeight = FlceCube(int64_t(f32 ? nt : rs), p.hidden, int64_t(mt), elemBytes, uint32_t(blocks));
  d.mmInput = FlceCube(int64_t(mt), int64_t(hs), int64_t(nt), elemBytes, uint32_t(blocks));
  t.blockDim = static_cast<uint32_t>(blocks);
  t.tilingKey = CrossEntropyKey(p.dataType, p.int64Target);
  t.workspaceBytes = ws;
  return t;
}

}  // namespace ms_ops

#endif  // MS_OPS_FUSED_LINEAR_CROSS_ENTROPY_GRAD_IN_FORWARD_TILING_H_
