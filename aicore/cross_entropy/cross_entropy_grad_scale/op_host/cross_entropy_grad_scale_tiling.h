// Tiling of cross_entropy_grad_scale as a pure function of the two element counts, the dtype and
// the reduction, shared by the CANN TilingFunc and the CPU entry.
//
// The two gradients are one sequence of chunks of chunkElems elements (input_grad's, then
// weight_grad's); the blocks take even runs of consecutive chunks. Every element is read and
// written once by one block, so the result is the same on every run and for any block count; the
// one ordering is that every block reads count before block 0 marks it consumed (SyncAll: the
// blocks must run at once, so blockDim stays within the vector cores). weight_grad alone is V * H elements (32000 x 4096 is 131 M), so the
// work is spread over every vector core.
#ifndef MS_OPS_CROSS_ENTROPY_GRAD_SCALE_TILING_H_
#define MS_OPS_CROSS_ENTROPY_GRAD_SCALE_TILING_H_

#include <cstdint>
#include <string>

#include "../../cross_entropy_common.h"
#include "../../../common/platform.h"
#include "../op_kernel/cross_entropy_grad_scale_tiling_data.h"

namespace ms_ops {

struct CrossEntropyGradScaleProblem {
  int64_t inputElems = 0;
  int64_t weightElems = 0;
  CeFloat dataType = CeFloat::kF32;
  CeReduction reduction = CeReduction::kMean;
};

struct CrossEntropyGradScaleTiling {
  CrossEntropyGradScaleTilingData data{};
  uint32_t blockDim = 1;
  uint64_t tilingKey = 0;
  std::string error;  // why the problem cannot run; empty when it can
};

// 16 Ki elements per pass: 64 KiB of fp32, long enough that the per-chunk copy setup is small
// against the transfer, and 2000 chunks for a 32000 x 1024 weight_grad to spread over the cores.
constexpr uint64_t kCegsChunkElems = 16384;
constexpr uint64_t kCegsScalarBytes = 2 * kBlockBytes;  // d loss and count, one block each

// UB bytes the kernel allocates: a chunk in and a chunk out in the gradients' dtype, an fp32
// chunk for the arithmetic of fp16/bf16, and the two single values.
inline uint64_t CegsUbBytes(uint64_t chunkElems, uint32_t elemBytes) {
  return 2 * AlignUp(chunkElems * elemBytes, kBlockBytes) + (elemBytes == 4 ? 0 : AlignUp(chunkElems * 4, kBlockBytes)) +
         kCegsScalarBytes;
}

inline CrossEntropyGradScaleTiling ComputeCrossEntropyGradScaleTiling(const CrossEntropyGradScaleProblem &p,
                                                                      const PlatformInfo &platform) {
  CrossEntropyGradScaleTiling t;
  if (p.inputElems < 0 || p.weightElems < 0) {
    t.error = "needs element counts >= 0, got " + std::to_string(p.inputElems) + " and " + std::to_string(p.weightElems);
    return t;
  }
  if (p.reduction == CeReduction::kNone) {
    t.error = "reduction 'none' has no single d loss to scale by";
    return t;
  }
  const uint32_t elemBytes = p.dataType == CeFloat::kF32 ? 4u : 2u;
  if (CegsUbBytes(kCegsChunkElems, elemBytes) > platform.ubSize) {
    t.error = "the " + std::to_string(platform.ubSize) + "-byte UB cannot hold a chunk of " +
              std::to_string(kCegsChunkElems) + " elements";
    return t;
  }
  const uint64_t inputChunks = CeilDiv(uint64_t(p.inputElems), kCegsChunkElems);
  const uint64_t chunks = inputChunks + CeilDiv(uint64_t(p.weightElems), kCegsChunkElems);
  t.data.inputElems = p.inputElems;
  t.data.weightElems = p.weightElems;
  t.data.inputChunks = int64_t(inputChunks);
  t.data.chunks = int64_t(chunks);
  t.data.chunkElems = static_cast<uint32_t>(kCegsChunkElems);
  t.data.reduction = static_cast<uint32_t>(p.reduction);
  // At least one block, also with nothing to scale: the launch then writes nothing.
  t.blockDim = static_cast<uint32_t>(chunks == 0 ? 1 : (chunks < platform.aivCoreNum ? chunks : platform.aivCoreNum));
  t.tilingKey = p.dataType == CeFloat::kF32 ? kCegsKeyF32 : p.dataType == CeFloat::kF16 ? kCegsKeyF16 : kCegsKeyBF16;
  return t;
}

}  // namespace ms_ops

#endif  // MS_OPS_CROSS_ENTROPY_GRAD_SCALE_TILING_H_
