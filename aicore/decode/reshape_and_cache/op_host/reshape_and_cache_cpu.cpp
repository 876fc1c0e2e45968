// MindSpore CPU entry of reshape_and_cache: checks shapes, dtypes and every slot (in range, none
// written twice) before anything is written, then runs the kernel on the twin, which writes the
// caches in place.
// Inputs: key, value [T, N_kv, D] or [T, N_kv * D]; key_cache, value_cache
// [num_blocks, block_size, N_kv, D]; slot_mapping [T] int32. Output: written_tokens [1] int32.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "host_entry.h"
#include "platform.h"
#include "reshape_and_cache_tiling.h"
#include "twin_runtime.h"

extern "C" void reshape_and_cache(uint8_t *key, uint8_t *value, uint8_t *keyCache, uint8_t *valueCache,
                                  uint8_t *slotMapping, uint8_t *written, uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "reshape_and_cache";
const char *const kNames[] = {"key", "value", "key_cache", "value_cache", "slot_mapping", "written_tokens"};

void CheckSlots(const int32_t *slots, int64_t tokens, int64_t numSlots) {
  std::unordered_map<int32_t, int64_t> first;
  for (int64_t t = 0; t < tokens; ++t) {
    const int32_t s = slots[t];
    if (s < 0) continue;
    Require(s < numSlots, "slot_mapping",
            "entry " + std::to_string(t) + " is slot " + std::to_string(s) + ", beyond the caches' " +
                std::to_string(numSlots) + " slots (num_blocks * block_size); use -1 to skip a token");
    const auto seen = first.emplace(s, t);
    Require(seen.second, "slot_mapping",
            "entries " + std::to_string(seen.first->second) + " and " + std::to_string(t) + " both write slot " +
                std::to_string(s));
  }
}

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes) {
  Require(nparam == kRacNumInputs + 1, "params",
          "expected 5 inputs and 1 output, got " + std::to_string(nparam) + " tensors");
  const std::vector<Arg> a = Args(nparam, params, ndims, shapes, dtypes, kNames);
  const Arg &key = a[kRacKey], &cache = a[kRacKeyCache];
  RequireFloat(cache);
  Require(cache.shape.size() == 4, "key_cache",
          "must be 4-D [num_blocks, block_size, N_kv, D], got " + ShapeStr(cache.shape));
  RequireShape(a[kRacValueCache], cache.shape, "key_cache's shape");
  RequireDType(a[kRacValueCache], cache.dtype, cache.dtypeName);
  const int64_t row = cache.shape[2] * cache.shape[3];
  Require(key.shape.size() == 2 || key.shape.size() == 3, "key",
          "must be [T, N_kv, D] or [T, N_kv * D], got " + ShapeStr(key.shape));
  const Shape want = key.shape.size() == 3 ? Shape{key.shape[0], cache.shape[2], cache.shape[3]} : Shape{key.shape[0], row};
  RequireShape(key, want, "the caches' heads and head dim");
  RequireShape(a[kRacValue], key.shape, "key's shape");
  RequireDType(key, cache.dtype, cache.dtypeName);
  RequireDType(a[kRacValue], cache.dtype, cache.dtypeName);
  RequireDType(a[kRacSlotMapping], DType::kI32, "int32");
  RequireShape(a[kRacSlotMapping], {key.shape[0]}, "one slot per token");
  RequireOutput(kNames[kRacNumInputs], kRacNumInputs, ndims, shapes, dtypes, {1}, DType::kI32);

  ReshapeAndCacheProblem p;
  p.tokens = key.shape[0];
  p.rowElems = row;
  p.slots = cache.shape[0] * cache.shape[1];
  p.dataType = ToFloatEnum<DecodeFloat>(cache.dtype);
  CheckSlots(reinterpret_cast<const int32_t *>(a[kRacSlotMapping].data), p.tokens, p.slots);
  ReshapeAndCacheTiling t = ComputeReshapeAndCacheTiling(p, kAtlasA2);
  if (!t.error.empty()) Reject("tiling", t.error);
  return twin::Launch(kOp, t.blockDim, t.tilingKey, [&] {
    reshape_and_cache(a[0].data, a[1].data, a[2].data, a[3].data, a[4].data, a[5].data, nullptr,
                      reinterpret_cast<uint8_t *>(&t.data));
  });
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int ReshapeAndCache(int nparam, void **params, int *ndims,
                                                                     int64_t **shapes, const char **dtypes,
                                                                     void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes); });
}

extern "C" __attribute__((visibility("default"))) std::vector<int64_t> ReshapeAndCacheInferShape(
    int *, int64_t **, mindspore::AotExtra *) {
  return {1};
}

extern "C" __attribute__((visibility("default"))) mindspore::TypeId ReshapeAndCacheInferType(
    std::vector<mindspore::TypeId>, mindspore::AotExtra *) {
  return mindspore::kNumberTypeInt32;
}
