// The scalar unit's data cache (CANN 8.x kernel_operator_cache_intf.h): DataCacheCleanAndInvalid
// writes back and drops the cache lines of a GM (or UB) address, so scalar GetValue / SetValue
// see what DMA or other cores wrote and the others see the scalar's writes. The twin's scalar
// accesses go straight to memory, so there is nothing to flush; the calls check their template
// arguments and are otherwise no-ops.
#ifndef MS_OPS_TWIN_CACHE_H_
#define MS_OPS_TWIN_CACHE_H_

#include <cstdint>

#include "twin_tensor.h"

namespace AscendC {

enum class CacheLine : uint64_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };

enum class DcciDst : uint64_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };

template <typename T, CacheLine entireType, DcciDst dcciDst>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T> &dst) {}

template <typename T, CacheLine entireType, DcciDst dcciDst>
inline void DataCacheCleanAndInvalid(const LocalTensor<T> &dst) {}

template <typename T, CacheLine entireType>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T> &dst) {}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_CACHE_H_
