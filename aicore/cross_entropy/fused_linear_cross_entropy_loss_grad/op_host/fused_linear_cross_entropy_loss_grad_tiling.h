// Tiling of fused_linear_cross_entropy_loss_grad as a pure function of shapes, attributes, dtypes
// and the platform, shared by the CANN TilingFunc and the CPU entry.
//
// V is cut into tiles of nt vocabulary rows, BT into M chunks of mt tokens. In round r block b
// owns V tile r*B + b; in step s of a round it takes BT chunk (s + b) mod M, and all blocks meet
// at SyncAll after each step. Within a step the blocks touch distinct chunks and distinct tiles,
// so no two write the same input_grad or weight_grad row, and the order in which contributions
// reach a row is fixed by (round, step, block): the result is deterministic. B <= M makes the
// chunk rotation collision-free; B <= tiles leaves no block idle in the first round.
//
// Workspace: an fp32 [BT, H] input_grad accumulator (fp16/bf16 inputs only) and, per block, an
// fp32 [mt, nt] logits tile (memory-saving mode), a [mt, nt] G tile in the input dtype (the cube
// needs A and B of one dtype; for fp32 it is the logits tile itself) and an fp32 [nt, H]
// weight_grad tile accumulator (fp16/bf16 only). Nothing grows with V.
//
// fp32 with the softmax given runs no steps: block b takes its even share of the V rows
// (weight_grad = p^T X', K = BT) as one Matmul, after one SyncAll that makes X' = diag(grad) X
// (fp32 [BT, H] workspace) and the blocks' [2, H] partial sums (label smoothing) visible to all.
// p W (K = V) is cut into R row groups x Kg vocabulary groups, one per block: a group of rows
// times the whole weight would repack all of W in every block, while a vocabulary group is read by
// one block only. Group 0 writes input_grad, group j > 0 its fp32 [BT, H] partial in workspace;
// after a second SyncAll each block adds the partials of its rows in group order (deterministic).
// Kg is capped so that the partials take at most a quarter of the softmax's bytes.
#ifndef MS_OPS_FUSED_LINEAR_CROSS_ENTROPY_LOSS_GRAD_TILING_H_
#define MS_OPS_FUSED_LINEAR_CROSS_ENTROPY_LOSS_GRAD_TILING_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "../../cross_entropy_common.h"
#include "../../../common/platform.h"
#include "../op_kernel/fused_linear_cross_entropy_loss_grad_tiling_data.h"

namespace ms_ops {

struct FusedLinearCrossEntropyLossGradProblem {
  int64_t rows = 0;       // BT
  int64_t hidden = 0;     // H
  int64_t vocab = 0;      // V (local shard)
  int64_t vocabSize = 0;  // Vg (whole vocabulary), for label_smoothing / Vg
  float labelSmoothing = 0.0f;
  bool hasSoftmax = false;
  CeFloat dataType = CeFloat::kF32;
  bool int64Target = false;  // masked_target is int64 (else int32)
};

struct FusedLinearCrossEntropyLossGradTiling {
  FusedLinearCrossEntropyLossGradTilingData data{};
  uint32_t blockDim = 0;        // 0: nothing to compute (H == 0)
  uint64_t tilingKey = 0;
  uint64_t workspaceBytes = 0;  // user workspace the kernel needs
  std::string error;            // why the problem cannot run; empty when it can
};

// Tile sizes: large enough for efficient cube work per step (each block's products are
// mt x nt x H, nt x H x mt and mt x H x nt), small enough that the per-block workspace stays small:
// every block holds an [mt, nt] logits tile and, for fp16/bf16, an fp32 [nt, H] weight_grad tile
// (24 blocks x 3.5 MiB at H = 2048 with nt = 448), so those take at most 512 columns while that tile
// stays within 8 MiB (H <= 4096) and 256 beyond; fp32, which has no weight_grad tile, up to 1024,
// then re-cut to whole rounds. Measured on the CPU twin at
// BT = 4096, H = 2048, V = 32000 fp32 (memory-saving mode, forward + backward): 7.18 s with
// nt = 256, 6.77 s with 512, 6.60 s with 672 (48 tiles, two whole rounds of 24), 6.64 with 1344.
// bf16 at H = 1024 (high-performance mode, forward + backward, min of 3): with at most 256 columns
// (nt = 224) 1.47-1.58 s on a Zen 5 core pair, 3.66-3.70 s built for AVX2; with 512 (nt = 448)
// 1.34-1.39 s and 3.53-3.56 s (each product's C is read and written half as often per FLOP).
constexpr int64_t kFlceMaxTileCols = 512, kFlceWideTileCols = 256, kFlceWideHidden = 4096;
constexpr int64_t kFlceMaxTileColsF32 = 1024;
constexpr int64_t kFlceMaxChunkRows = 256;
constexpr int64_t kFlceMinChunkRows = 128;
constexpr uint64_t kFlceWorkspaceAlign = 512;  // cube-friendly GM alignment of every workspace region
// Rows per row group of the direct p W product. On the CPU twin (BT = 4096, H = 1024, V = 32000, one
// core, sgemm of one block's product): 171 rows x all of V ran at 152 GFLOP/s, 1024 rows x V / 6
// at 198 (the whole-matrix sgemm's rate, as the weight is packed once in all).
constexpr int64_t kFlceDirectGroupRows = 1024;

// (R, Kg) of the direct p W product (see the top of this file): Kg as large as the blocks allow
// with row groups of about kFlceDirectGroupRows and the partials' cap, then as many row groups
// as the blocks left allow.
inline void FlceDirectGroups(int64_t rows, int64_t hidden, int64_t vocab, int64_t blocks, int64_t &r, int64_t &kg) {
  const int64_t r0 = std::clamp<int64_t>(CeilDiv(rows, kFlceDirectGroupRows), 1, blocks);
  kg = std::clamp<int64_t>(std::min<int64_t>(blocks / r0, 1 + vocab / (4 * std::max<int64_t>(hidden, 1))), 1, vocab);
  r = std::max<int64_t>(1, blocks / kg);
}

// UB bytes of one BT chunk's row data: grad, logits_max and sum_exp_logits (memory-saving mode),
// masked_target and the target_mask bytes. The kernel's InitBuffer calls follow this formula.
inline uint64_t FlceGradUbRowData(uint64_t mt, uint32_t targetBytes, bool hasSoftmax) {
  const uint64_t f32 = AlignUp(mt * 4, kBlockBytes);
  // The mask bytes: one more, as a chunk may start inside a byte.
  return f32 * (hasSoftmax ? 1 : 3) + AlignUp(mt * targetBytes, kBlockBytes) +
         AlignUp(TargetMaskBytes(static_cast<int64_t>(mt)) + 1, kBlockBytes);
}

// The Matmul tiling of one m x n x k product (the largest a step issues; tails set smaller single
// shapes at run time). Base tiles fit L0A/L0B (64 KiB) and L0C (128 KiB) with room to double-buffer.
// The twin runs with these; the CANN TilingFunc replaces them with the tiling API's for the same shapes.
inline TCubeTiling FlceCube(int64_t m, int64_t n, int64_t k, uint32_t elemBytes, uint32_t blockDim) {
  return SingleShapeCubeTiling(blockDim, m, n, k, static_cast<int32_t>(std::min<uint64_t>(128, AlignUp(m, 16))),
                               static_cast<int32_t>(std::min<uint64_t>(128, AlignUp(n, 16))),
                               static_cast<int32_t>(std::min<uint64_t>(elemBytes == 4 ? 64 : 128, AlignUp(k, 16))), 1);
}

inline FusedLinearCrossEntropyLossGradTiling ComputeFusedLinearCrossEntropyLossGradTiling(
    const FusedLinearCrossEntropyLossGradProblem &p, const PlatformInfo &platform) {
  FusedLinearCrossEntropyLossGradTiling t;
  if (p.rows < 0 || p.hidden < 0 || p.vocab < 1) {
    t.error = "needs BT >= 0, H >= 0 and V >= 1 (got BT=" + std::to_string(p.rows) + ", H=" +
              std::to_string(p.hidden) + ", V=" + std::to_string(p.vocab) + ")";
    return t;
  }
  if (p.vocabSize < p.vocab) {
    t.error = "vocab_size " + std::to_string(p.vocabSize) + " is smaller than the shard's V=" + std::to_string(p.vocab);
    return t;
  }
  if (!(p.labelSmoothing >= 0.0f && p.labelSmoothing < 1.0f)) {
    t.error = "label_smoothing " + std::to_string(p.labelSmoothing) + " is outside [0, 1)";
    return t;
  }
  if (p.hidden > INT32_MAX || p.vocab > INT32_MAX) {
    t.error = "H and V must fit the int32 shapes of the Matmul tiling";
    return t;
  }
  const uint32_t elemBytes = p.dataType == CeFloat::kF32 ? 4u : 2u;
  const uint32_t targetBytes = p.int64Target ? 8u : 4u;

  const int64_t maxCols = p.dataType == CeFloat::kF32     ? kFlceMaxTileColsF32
                          : p.hidden <= kFlceWideHidden ? kFlceMaxTileCols
                                                          : kFlceWideTileCols;
  const int64_t tiles0 = CeilDiv(p.vocab, maxCols);
  int64_t nt = AlignUp(CeilDiv(p.vocab, tiles0), 16);
  int64_t tiles = CeilDiv(p.vocab, nt);
  // As many chunks as blocks could use, with chunks of 128..256 tokens (fewer only to give a
  // small BT two chunks), then evened out.
  const int64_t want = std::min<int64_t>(platform.aicCoreNum, tiles);
  const int64_t rows = p.rows > 0 ? p.rows : 1;
  const int64_t lo = std::min<int64_t>(kFlceMinChunkRows, AlignUp(CeilDiv(rows, 2), 16));
  int64_t mt = std::clamp<int64_t>(AlignUp(CeilDiv(rows, want), 16), lo, kFlceMaxChunkRows);
  const int64_t chunks = p.rows == 0 ? 0 : CeilDiv(p.rows, mt);
  if (chunks > 0) mt = AlignUp(CeilDiv(p.rows, chunks), 16);
  const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>({platform.aicCoreNum, tiles, chunks}));
  // Whole rounds: the tiles re-cut (narrower) to a multiple of the blocks, so that no block idles
  // in a last, partial round (the 16-column alignment may still leave it a tile or two short).
  if (tiles > blocks && tiles % blocks != 0) {
    nt = AlignUp(CeilDiv(p.vocab, CeilDiv(tiles, blocks) * blocks), 16);
    tiles = CeilDiv(p.vocab, nt);
  }

  // fp32 with the softmax: the two whole products of ProcessDirect (the kernel's kDirect).
  const bool direct = p.dataType == CeFloat::kF32 && p.hasSoftmax;
  if (direct && p.rows > INT32_MAX) {
    t.error = "BT must fit the int32 shapes of the Matmul tiling";
    return t;
  }
  // Two in and two out buffers, and ProcessDirect's running sum.
  const uint64_t buffers = direct ? 5 : 4;
  const uint64_t rowData = FlceGradUbRowData(mt, targetBytes, p.hasSoftmax);
  const uint64_t ubChunk =
      rowData >= platform.ubSize ? 0 : (platform.ubSize - rowData) / buffers / kBlockBytes * kBlockBytes;
  const uint64_t ubRow = AlignUp(uint64_t(nt) * 4, kBlockBytes);
  if (ubChunk < ubRow) {
    t.error = "the " + std::to_string(platform.ubSize) + "-byte UB cannot hold a " + std::to_string(nt) + "-column row";
    return t;
  }

  FusedLinearCrossEntropyLossGradTilingData &d = t.data;
  const bool f32 = p.dataType == CeFloat::kF32;
  uint64_t ws = 0;
  d.inputAccOffset = 0;
  if (!f32) ws += AlignUp(uint64_t(p.rows) * p.hidden * 4, kFlceWorkspaceAlign);
  d.blockOffset = ws;
  uint64_t block = 0;
  d.logitsOffset = 0;
  if (!p.hasSoftmax) block += AlignUp(uint64_t(mt) * nt * 4, kFlceWorkspaceAlign);
  d.gOffset = (f32 && !p.hasSoftmax) ? d.logitsOffset : block;
  if (!(f32 && !p.hasSoftmax)) block += AlignUp(uint64_t(mt) * nt * elemBytes, kFlceWorkspaceAlign);
  d.weightAccOffset = block;
  if (!f32) block += AlignUp(uint64_t(nt) * p.hidden * 4, kFlceWorkspaceAlign);
  d.blockBytes = block;
  ws += uint64_t(blocks) * block;
  d.scaledInputOffset = ws;
  if (direct) ws += AlignUp(uint64_t(p.rows) * p.hidden * 4, kFlceWorkspaceAlign);
  d.partialsOffset = ws;
  if (direct) ws += AlignUp(uint64_t(blocks) * 2 * p.hidden * 4, kFlceWorkspaceAlign);
  int64_t groupRows = 1, groupVocab = 1;
  if (direct) FlceDirectGroups(rows, p.hidden, p.vocab, blocks, groupRows, groupVocab);
  d.inputRowGroups = groupRows;
  d.inputVocabGroups = groupVocab;
  d.inputPartialsOffset = ws;
  ws += AlignUp(uint64_t(groupVocab - 1) * p.rows * p.hidden * 4, kFlceWorkspaceAlign);

  d.rows = p.rows;
  d.hidden = p.hidden;
  d.vocab = p.vocab;
  d.chunkRows = mt;
  d.tileCols = nt;
  d.chunks = chunks;
  d.tiles = tiles;
  d.rounds = CeilDiv(tiles, blocks);
  d.smoothPerClass = static_cast<float>(double(p.labelSmoothing) / double(p.vocabSize));
  d.targetWeight = 1.0f - p.labelSmoothing;
  d.ubChunkBytes = static_cast<uint32_t>(ubChunk);
  d.batchRows = static_cast<uint32_t>(std::min<uint64_t>(mt, ubChunk / ubRow));
  const int64_t h = p.hidden > 0 ? p.hidden : 1;  // Matmul shapes for H = 0 stay valid
  d.mmLogits = FlceCube(mt, nt, h, elemBytes, blocks);
  if (direct) {
    // The largest shares (BlockShare gives the first blocks one row more).
    d.mmWeight = FlceCube(CeilDiv(p.vocab, blocks), h, rows, elemBytes, blocks);
    d.mmInput = FlceCube(CeilDiv(rows, groupRows), h, CeilDiv(p.vocab, groupVocab), elemBytes, blocks);
  } else {
    d.mmWeight = FlceCube(nt, h, mt, elemBytes, blocks);
    d.mmInput = FlceCube(mt, h, nt, elemBytes, blocks);
  }
  t.blockDim = p.hidden == 0 ? 0 : static_cast<uint32_t>(blocks);
  t.tilingKey = CrossEntropyKey(p.dataType, p.int64Target) + (p.hasSoftmax ? kFlceGradKeySoftmaxOffset : 0);
  t.workspaceBytes = ws;
  return t;
}

}  // namespace ms_ops

#endif  // MS_OPS_FUSED_LINEAR_CROSS_ENTROPY_LOSS_GRAD_TILING_H_
