// MindSpore CPU entry of copy_blocks: checks the caches and every (src, dst) pair (ids inside the
// pool; no dst written twice or read by another pair, so that the copies do not depend on their
// order) before anything is written, then runs the kernel on the twin, which copies in place.
// Inputs: key_cache, value_cache [num_blocks, block_size, N_kv, D]; block_mapping [n, 2] int32.
// Output: copied_blocks [1] int32.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "copy_blocks_tiling.h"
#include "host_entry.h"
#include "platform.h"
#include "twin_runtime.h"

extern "C" void copy_blocks(uint8_t *keyCache, uint8_t *valueCache, uint8_t *blockMapping, uint8_t *copied,
                            uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "copy_blocks";
const char *const kNames[] = {"key_cache", "value_cache", "block_mapping", "copied_blocks"};

void CheckMapping(const int32_t *m, int64_t pairs, int64_t numBlocks) {
  std::unordered_map<int32_t, int64_t> dsts;
  for (int64_t i = 0; i < pairs; ++i)
    for (int k = 0; k < 2; ++k) {
      const int32_t b = m[2 * i + k];
      if (b < 0 || b >= numBlocks)
        Reject("block_mapping", std::string("row ") + std::to_string(i) + (k == 0 ? " src " : " dst ") +
                                    std::to_string(b) + " is outside the pool of " + std::to_string(numBlocks) +
                                    " blocks");
    }
  for (int64_t i = 0; i < pairs; ++i) {
    const auto seen = dsts.emplace(m[2 * i + 1], i);
    if (!seen.second)
      Reject("block_mapping", "rows " + std::to_string(seen.first->second) + " and " + std::to_string(i) +
                                  " both copy into block " + std::to_string(m[2 * i + 1]));
  }
  for (int64_t i = 0; i < pairs; ++i) {
    const auto hit = dsts.find(m[2 * i]);
    if (hit != dsts.end() && hit->second != i)
      Reject("block_mapping", "row " + std::to_string(i) + " reads block " + std::to_string(m[2 * i]) + ", which row " +
                                  std::to_string(hit->second) +
                                  " overwrites: the result would depend on the copies' order");
  }
}

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes) {
  Require(nparam == kCbNumInputs + 1, "params",
          "expected 3 inputs and 1 output, got " + std::to_string(nparam) + " tensors");
  const std::vector<Arg> a = Args(nparam, params, ndims, shapes, dtypes, kNames);
  const Arg &cache = a[kCbKeyCache], &mapping = a[kCbMapping];
  RequireFloat(cache);
  Require(cache.shape.size() == 4, "key_cache",
          "must be 4-D [num_blocks, block_size, N_kv, D], got " + ShapeStr(cache.shape));
  RequireShape(a[kCbValueCache], cache.shape, "key_cache's shape");
  RequireDType(a[kCbValueCache], cache.dtype, cache.dtypeName);
  RequireDType(mapping, DType::kI32, "int32");
  Require(mapping.shape.size() == 2 && mapping.shape[1] == 2, "block_mapping",
          "must be [n, 2] (src, dst) pairs, got " + ShapeStr(mapping.shape));
  RequireOutput(kNames[kCbNumInputs], kCbNumInputs, ndims, shapes, dtypes, {1}, DType::kI32);

  CopyBlocksProblem p;
  p.pairs = mapping.shape[0];
  p.numBlocks = cache.shape[0];
  p.blockElems = cache.shape[1] * cache.shape[2] * cache.shape[3];
  p.dataType = ToFloatEnum<DecodeFloat>(cache.dtype);
  CheckMapping(reinterpret_cast<const int32_t *>(mapping.data), p.pairs, p.numBlocks);
  CopyBlocksTiling t = ComputeCopyBlocksTiling(p, kAtlasA2);
  if (!t.error.empty()) Reject("tiling", t.error);
  return twin::Launch(kOp, t.blockDim, t.tilingKey, [&] {
    copy_blocks(a[0].data, a[1].data, a[2].data, a[3].data, nullptr, reinterpret_cast<uint8_t *>(&t.data));
  });
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int CopyBlocks(int nparam, void **params, int *ndims,
                                                                int64_t **shapes, const char **dtypes, void *stream,
                                                                void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes); });
}

extern "C" __attribute__((visibility("default"))) std::vector<int64_t> CopyBlocksInferShape(int *, int64_t **,
                                                                                           mindspore::AotExtra *) {
  return {1};
}

extern "C" __attribute__((visibility("default"))) mindspore::TypeId CopyBlocksInferType(std::vector<mindspore::TypeId>,
                                                                                       mindspore::AotExtra *) {
  return mindspore::kNumberTypeInt32;
}
