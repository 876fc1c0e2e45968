// Store atomics of MTE3: after SetAtomicAdd<T> / SetAtomicMax<T> / SetAtomicMin<T>, every UB -> GM
// DataCopy / DataCopyPad of this core combines each element with what global memory holds instead
// of overwriting it, until SetAtomicNone; Matmul's enAtomic stores combine the same way. The
// blocks of a launch run on concurrent threads, so the twin combines holding the bytes it combines
// into (twin_runtime.h's AtomicSpan): concurrent blocks accumulating into the same bytes give the
// exact combination, as on the NPU (for Add the order of the additions, and so the rounding, is
// not fixed, as it is not there).
#ifndef MS_OPS_TWIN_ATOMIC_H_
#define MS_OPS_TWIN_ATOMIC_H_

#include <cstdint>
#include <type_traits>

#include "twin_tensor.h"

namespace AscendC {
namespace twin_detail {

enum AtomicOp : uint8_t { kAtomicNone = 0, kAtomicAdd, kAtomicMax, kAtomicMin };

// A tag per element type the store atomics support (0: none), and its name for messages.
template <typename T>
constexpr uint8_t AtomicTag() {
  if constexpr (std::is_same_v<T, float>) return 1;
  else if constexpr (std::is_same_v<T, half>) return 2;
  else if constexpr (std::is_same_v<T, bfloat16_t>) return 3;
  else if constexpr (std::is_same_v<T, int32_t>) return 4;
  else if constexpr (std::is_same_v<T, int16_t>) return 5;
  else if constexpr (std::is_same_v<T, int8_t>) return 6;
  else return 0;
}
inline const char *AtomicTypeName(uint8_t tag) {
  static const char *const names[] = {"?", "float", "half", "bfloat16_t", "int32_t", "int16_t", "int8_t"};
  return tag < 7 ? names[tag] : "?";
}

template <typename T>
inline void SetAtomic(AtomicOp op) {
  static_assert(AtomicTag<T>() != 0, "store atomics support float, half, bfloat16_t, int32_t, int16_t, int8_t");
  ::ms_ops::twin::Block &b = ::ms_ops::twin::Current();
  b.atomicOp = op;
  b.atomicType = AtomicTag<T>();
}

template <typename T>
inline T Combine(AtomicOp op, T old, T v) {
  using C = std::conditional_t<std::is_integral_v<T>, int64_t, float>;
  const C a = static_cast<C>(old), b = static_cast<C>(v);
  switch (op) {
    case kAtomicAdd: return static_cast<T>(a + b);
    case kAtomicMax: return static_cast<T>(a > b ? a : b);
    default: return static_cast<T>(a < b ? a : b);
  }
}

// n elements of src combined into dst, holding dst's bytes (twin_runtime.h).
template <typename T>
inline void AtomicStore(AtomicOp op, T *dst, const T *src, uint64_t n) {
  const ::ms_ops::twin::AtomicSpan held({reinterpret_cast<uintptr_t>(dst), 1, n * sizeof(T), 0});
  if constexpr (std::is_same_v<T, float>) {
    if (op == kAtomicAdd) {
      // Combine's float add with the operation out of the loop, so that it vectorises (a UB
      // source never overlaps global memory). Scattered gradient rows add this way.
      float *__restrict d = dst;
      const float *__restrict s = src;
      for (uint64_t i = 0; i < n; ++i) d[i] += s[i];
      return;
    }
  }
  for (uint64_t i = 0; i < n; ++i) dst[i] = Combine(op, dst[i], src[i]);
}

// The atomic operation a UB -> GM copy of T elements does (kAtomicNone: a plain store). The
// setting is per type on the NPU: a copy of another type than the one set is an error.
template <typename T>
inline AtomicOp StoreAtomic(const char *call) {
  const ::ms_ops::twin::Block &b = ::ms_ops::twin::Current();
  if (b.atomicOp == kAtomicNone) return kAtomicNone;
  if (b.atomicType != AtomicTag<T>())
    Fail(call, std::string("the store atomic is set for ") + AtomicTypeName(b.atomicType) + " but the copy moves " +
                   (AtomicTag<T>() ? AtomicTypeName(AtomicTag<T>()) : "another type"));
  return static_cast<AtomicOp>(b.atomicOp);
}

}  // namespace twin_detail

template <typename T>
inline void SetAtomicAdd() {
  twin_detail::SetAtomic<T>(twin_detail::kAtomicAdd);
}
template <typename T>
inline void SetAtomicMax() {
  twin_detail::SetAtomic<T>(twin_detail::kAtomicMax);
}
template <typename T>
inline void SetAtomicMin() {
  twin_detail::SetAtomic<T>(twin_detail::kAtomicMin);
}
inline void SetAtomicNone() {
  ::ms_ops::twin::Block &b = ::ms_ops::twin::Current();
  b.atomicOp = twin_detail::kAtomicNone;
  b.atomicType = 0;
}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_ATOMIC_H_
