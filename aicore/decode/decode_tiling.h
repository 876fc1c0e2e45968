// Host-side facts shared by the decode ops' tilings (pure C++, no kernel headers): the dtype enum
// of the KV caches and the chunk size of the cache write kernels.
#ifndef MS_OPS_DECODE_DECODE_TILING_H_
#define MS_OPS_DECODE_DECODE_TILING_H_

#include <cstdint>

#include "../common/platform.h"

namespace ms_ops {

enum class DecodeFloat { kF32, kF16, kBF16 };

inline uint32_t DecodeElemBytes(DecodeFloat d) { return d == DecodeFloat::kF32 ? 4u : 2u; }

// The write kernels move bits only: one binary per element width (keys of their tiling data).
constexpr uint64_t kDecodeCopyKey32 = 1;
constexpr uint64_t kDecodeCopyKey16 = 2;

inline uint64_t DecodeCopyKey(DecodeFloat d) { return d == DecodeFloat::kF32 ? kDecodeCopyKey32 : kDecodeCopyKey16; }

// 32 KiB a chunk, two in flight (decode_copy.h): a cache row of 8 heads x 128 dims in fp32 (4 KiB)
// or a whole 16-token block of it moves in one or a few transfers, well inside any UB.
constexpr uint64_t kDecodeCopyChunkBytes = 32 * 1024;

inline uint32_t DecodeCopyChunkElems(DecodeFloat d) {
  return static_cast<uint32_t>(kDecodeCopyChunkBytes / DecodeElemBytes(d));
}

// One block per item up to the vector core count, and at least one, which also writes the
// kernels' count output when there is nothing to copy.
inline uint32_t DecodeCopyBlockDim(int64_t items, const PlatformInfo &plat) {
  if (items < 1) return 1;
  return static_cast<uint32_t>(items < plat.aivCoreNum ? items : plat.aivCoreNum);
}

}  // namespace ms_ops

#endif  // MS_OPS_DECODE_DECODE_TILING_H_
