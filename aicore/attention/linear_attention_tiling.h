// Tiling of linear_attention and linear_attention_grad as a pure function of the problem and the
// platform, shared by the CANN TilingFuncs and the CPU entries.
//
// A work item is one (batch, head); items are dealt round-robin to the blocks (one per cube
// core). Within a head the sequence is walked in chunks of kLaChunk rows, so the only
// sequence-sized buffers are the inputs and outputs: the block's workspace holds chunk tiles and
// the [D, Dv + 1] state (O(S·D·Dv) work, never an S x S buffer).
#ifndef MS_OPS_LINEAR_ATTENTION_TILING_H_
#define MS_OPS_LINEAR_ATTENTION_TILING_H_

#include <cstdint>
#include <string>

#include "../common/platform.h"
#include "linear_attention_tiling_data.h"

namespace ms_ops {

enum class LaLayout { kBNSD, kBSND };
enum class LaFloat { kF32, kF16, kBF16 };

constexpr int64_t kLaMaxDim = 512;
constexpr uint64_t kLaChunk = 64;
// GM tiles start on 256-byte boundaries, the cube's preferred alignment.
constexpr uint64_t kLaAlignFloats = 64;

struct LinearAttentionProblem {
  int64_t batch = 0, heads = 0, seq = 0, dim = 0, vdim = 0;
  LaLayout layout = LaLayout::kBNSD;
  LaFloat dataType = LaFloat::kF32;
  bool causal = false;
  float eps = 1e-6f;
};

struct LinearAttentionTiling {
  LinearAttentionTilingData data{};
  uint32_t blockDim = 0;        // 0: nothing to compute
  uint64_t tilingKey = 0;       // 1 fp32, 2 fp16, 3 bf16
  uint64_t workspaceBytes = 0;  // all blocks' workspaces
  std::string error;
};

// The cube runs fp32 operands (the vector pass writes the feature rows in fp32).
inline TCubeTiling LaCubeTiling(uint32_t blockDim, int64_t m, int64_t n, int64_t k) {
  return SingleShapeCubeTiling(blockDim, m, n, k, 128, 128, 32, 2);
}

inline void LaStrides(LaLayout l, int64_t s, int64_t n, int64_t d, int64_t &sb, int64_t &sn, int64_t &row) {
  if (l == LaLayout::kBNSD) {
    sb = n * s * d;
    sn = s * d;
    row = d;
  } else {
    sb = s * n * d;
    sn = d;
    row = n * d;
  }
}

inline LinearAttentionTiling ComputeLinearAttentionTiling(const LinearAttentionProblem &p,
                                                          const PlatformInfo &platform) {
  LinearAttentionTiling t;
  if (p.batch < 0 || p.heads < 0 || p.seq < 0 || p.dim < 1 || p.dim > kLaMaxDim || p.vdim < 1 ||
      p.vdim > kLaMaxDim) {
    t.error = "needs 1 <= D, Dv <= 512";
    return t;
  }
  if (!(p.eps > 0.0f)) {
    t.error = "eps must be > 0";
    return t;
  }
  LinearAttentionTilingData &d = t.data;
  d.batch = p.batch;
  d.heads = p.heads;
  d.seq = p.seq;
  d.dim = p.dim;
  d.vdim = p.vdim;
  LaStrides(p.layout, p.seq, p.heads, p.dim, d.qStrideB, d.qStrideN, d.qRow);
  LaStrides(p.layout, p.seq, p.heads, p.vdim, d.vStrideB, d.vStrideN, d.vRow);
  d.eps = p.eps;
  d.causal = p.causal ? 1u : 0u;
  const uint64_t c = p.seq < int64_t(kLaChunk) ? uint64_t(p.seq > 0 ? p.seq : 1) : kLaChunk;
  const uint64_t dim = uint64_t(p.dim), ve = uint64_t(p.vdim) + 1;
  d.chunk = static_cast<uint32_t>(c);
  d.vdimExt = static_cast<uint32_t>(ve);
  uint64_t at = 0;
  auto carve = [&at](uint64_t floats) {
    const uint64_t off = at;
    at += AlignUp(floats, kLaAlignFloats);
    return off;
  };
  const uint64_t wide = dim > ve ? dim : ve;
  d.offQf = carve(c * dim);
  d.offKf = carve(c * dim);
  d.offVf = carve(c * ve);
  d.offG = carve(c * ve);
  d.offA = carve(c * c);
  d.offB = carve(c * c);
  d.offO = carve(c * wide);
  d.offO2 = carve(c * ve);
  d.offState = carve(dim * ve);
  d.offGradState = carve(dim * ve);
  d.blockFloats = at;
  const uint64_t items = uint64_t(p.batch) * uint64_t(p.heads);
  const bool empty = items == 0 || p.seq == 0;
  const uint64_t blocks = items < platform.aicCoreNum ? items : platform.aicCoreNum;
  t.blockDim = empty ? 0 : static_cast<uint32_t>(blocks);
  d.mmNT = LaCubeTiling(t.blockDim, c, wide > c ? wide : c, wide);
  d.mmNN = LaCubeTiling(t.blockDim, wide > c ? wide : c, wide, wide > c ? wide : c);
  d.mmTN = LaCubeTiling(t.blockDim, wide > c ? wide : c, wide, c);
  t.tilingKey = p.dataType == LaFloat::kF32 ? 1 : p.dataType == LaFloat::kF16 ? 2 : 3;
  t.workspaceBytes = empty ? 0 : blocks * d.blockFloats * 4;
  return t;
}

}  // namespace ms_ops

#endif  // MS_OPS_LINEAR_ATTENTION_TILING_H_
