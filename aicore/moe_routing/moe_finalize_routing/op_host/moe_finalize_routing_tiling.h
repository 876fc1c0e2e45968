// Tiling of moe_finalize_routing as a pure function of shapes, attributes, dtypes and the
// platform, shared by the CANN TilingFunc and the CPU entry.
//
// Blocks split the R output rows evenly. Each block walks its rows in batches of batchRows whose
// K indices, scales and expert ids are loaded together, and walks H in chunks of hChunk: the UB
// holds double-buffered input rows (expanded_x, bias), a double-buffered output row and, for
// fp16/bf16, fp32 copies for the arithmetic.
#ifndef MS_OPS_MOE_FINALIZE_ROUTING_TILING_H_
#define MS_OPS_MOE_FINALIZE_ROUTING_TILING_H_

#include <cstdint>
#include <string>

#include "../../../common/platform.h"
#include "../op_kernel/moe_finalize_routing_tiling_data.h"

namespace ms_ops {

enum class MoeFloat : uint8_t { kF32, kF16, kBF16 };

inline uint32_t MoeFloatBytes(MoeFloat t) { return t == MoeFloat::kF32 ? 4u : 2u; }

struct MoeFinalizeRoutingProblem {
  int64_t rows = 0;          // R
  int64_t topK = 1;          // K
  int64_t hidden = 0;        // H
  int64_t expandedRows = 0;  // N (E*C for drop/pad)
  int64_t biasRows = 0;
  int64_t dropPadMode = 0;
  bool hasX1 = false, hasX2 = false, hasBias = false, hasScales = false;
  MoeFloat dataType = MoeFloat::kF32;
  MoeFloat scalesType = MoeFloat::kF32;  // ignored without scales
};

struct MoeFinalizeRoutingTiling {
  MoeFinalizeRoutingTilingData data{};
  uint32_t blockDim = 0;  // 0: nothing to compute (R == 0 or H == 0)
  uint64_t tilingKey = 0;
  std::string error;      // why the problem cannot run; empty when it can
};

// The UB bytes the kernel allocates, per H element of a chunk and for the per-batch buffers.
// The kernel's InitBuffer calls follow these formulas exactly.
inline uint64_t MoeFinalizeRoutingUbPerH(uint32_t dataBytes, bool hasBias) {
  const uint64_t queues = (2 + 2 + (hasBias ? 2 : 0)) * uint64_t(dataBytes);  // rows in, out, bias in
  const uint64_t fp32 = dataBytes == 4 ? 0 : 4u * (2 + (hasBias ? 1 : 0));    // acc, row, bias in fp32
  return queues + fp32;
}

inline uint64_t MoeFinalizeRoutingUbBatch(uint64_t batchRows, uint64_t topK, bool rowMajor, uint32_t scalesBytes,
                                          bool hasScales, bool hasBias) {
  const uint64_t entries = batchRows * topK;
  // Indices: row-major they are contiguous; column-major K segments of batchRows, each 32-byte aligned.
  uint64_t bytes = rowMajor ? AlignUp(entries * 4, kBlockBytes) : topK * AlignUp(batchRows, 8) * 4;
  if (hasScales) {
    bytes += AlignUp(entries * scalesBytes, kBlockBytes);
    if (scalesBytes != 4) bytes += AlignUp(entries * 4, kBlockBytes);
  }
  if (hasBias) bytes += AlignUp(entries * 4, kBlockBytes);
  return bytes;
}

// Token rows whose routing (K indices, scales, expert ids) is loaded at once: about 1024 pairs,
// a multiple of 8 rows when possible (column-major index segments then fill whole blocks).
inline uint64_t MoeFinalizeRoutingBatchRows(int64_t rows, int64_t topK) {
  uint64_t batchRows = 1024 / uint64_t(topK);
  if (batchRows >= 8) batchRows = batchRows / 8 * 8;
  if (batchRows < 1) batchRows = 1;
  if (rows > 0 && batchRows > uint64_t(rows)) batchRows = uint64_t(rows);
  return batchRows;
}

inline uint64_t MoeFinalizeRoutingKey(MoeFloat data, MoeFloat scales) {
  if (data == MoeFloat::kF32) return kMoeFinalizeRoutingKeyF32;
  if (data == MoeFloat::kF16)
    return scales == MoeFloat::kF32 ? kMoeFinalizeRoutingKeyF16ScalesF32 : kMoeFinalizeRoutingKeyF16;
  return scales == MoeFloat::kF32 ? kMoeFinalizeRoutingKeyBF16ScalesF32 : kMoeFinalizeRoutingKeyBF16;
}

inline MoeFinalizeRoutingTiling ComputeMoeFinalizeRoutingTiling(const MoeFinalizeRoutingProblem &p,
                                                                const PlatformInfo &platform) {
  MoeFinalizeRoutingTiling t;
  const MoeFloat scalesType = p.hasScales ? p.scalesType : p.dataType;
  if (scalesType != p.dataType && scalesType != MoeFloat::kF32) {
    t.error = "scales must have the dtype of expanded_x or float32";
    return t;
  }
  if (p.rows < 0 || p.topK < 1 || p.hidden < 0 || p.expandedRows < 0 || p.biasRows < 0) {
    t.error = "needs R >= 0, K >= 1, H >= 0 (got R=" + std::to_string(p.rows) + ", K=" + std::to_string(p.topK) +
              ", H=" + std::to_string(p.hidden) + ")";
    return t;
  }
  const bool rowMajor = (p.dropPadMode & 2) != 0;
  if (!rowMajor && p.topK > 4095) {
    t.error = "K=" + std::to_string(p.topK) + " exceeds 4095, the most index columns one strided copy gathers";
    return t;
  }
  const uint32_t dataBytes = MoeFloatBytes(p.dataType), scalesBytes = MoeFloatBytes(scalesType);

  const uint64_t batchRows = MoeFinalizeRoutingBatchRows(p.rows, p.topK);
  const uint64_t batchBytes =
      MoeFinalizeRoutingUbBatch(batchRows, p.topK, rowMajor, scalesBytes, p.hasScales, p.hasBias);
  const uint64_t perH = MoeFinalizeRoutingUbPerH(dataBytes, p.hasBias);
  const uint64_t hCap = batchBytes >= platform.ubSize ? 0 : (platform.ubSize - batchBytes) / perH / 16 * 16;
  if (hCap < 16) {
    t.error = "K=" + std::to_string(p.topK) + " leaves no room in the " + std::to_string(platform.ubSize) +
              "-byte UB for a 16-element chunk of H";
    return t;
  }
  const uint64_t hidden = p.hidden > 0 ? uint64_t(p.hidden) : 1;  // chunk sizes for H = 0 stay valid
  const uint64_t chunks = CeilDiv(hidden, hCap);
  const uint64_t hChunk = AlignUp(CeilDiv(hidden, chunks), 16);

  const uint64_t blocks =
      p.hidden == 0 ? 0 : (p.rows < int64_t(platform.aivCoreNum) ? uint64_t(p.rows) : platform.aivCoreNum);
  MoeFinalizeRoutingTilingData &d = t.data;
  d.rows = p.rows;
  d.topK = p.topK;
  d.hidden = p.hidden;
  d.expandedRows = p.expandedRows;
  d.biasRows = p.hasBias ? p.biasRows : 0;
  d.rowsPerBlock = blocks == 0 ? 0 : p.rows / int64_t(blocks);
  d.rowsRemainder = blocks == 0 ? 0 : p.rows % int64_t(blocks);
  d.hChunk = static_cast<uint32_t>(hChunk);
  d.batchRows = static_cast<uint32_t>(batchRows);
  d.dropPadMode = static_cast<uint32_t>(p.dropPadMode);
  d.hasX1 = p.hasX1;
  d.hasX2 = p.hasX2;
  d.hasBias = p.hasBias;
  d.hasScales = p.hasScales;
  t.blockDim = static_cast<uint32_t>(blocks);
  t.tilingKey = MoeFinalizeRoutingKey(p.dataType, scalesType);
  return t;
}

}  // namespace ms_ops

#endif  // MS_OPS_MOE_FINALIZE_ROUTING_TILING_H_
