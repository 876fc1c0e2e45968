// Store atomics of MTE3: after SetAtomicAdd<T> / SetAtomicMax<T> / SetAtomicMin<T>, every UB -> GM
// DataCopy / DataCopyPad of this core combines each element with what global memory holds instead
// of overwriting it, until SetAtomicNone. The blocks of a launch run on concurrent threads, so the
// twin combines element by element with a compare-and-swap on the element's bits: concurrent
// blocks accumulating into the same bytes give the exact combination, as on the NPU (for Add the
// order of the additions, and so the rounding, is not fixed, as it is not there).
#ifndef MS_OPS_TWIN_ATOMIC_H_
#define MS_OPS_TWIN_ATOMIC_H_

#include <cstdint>
#include <cstring>
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
using AtomicBits = std::conditional_t<sizeof(T) == 1, uint8_t,
                                      std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>>;

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

// n elements of src combined into dst, each with a compare-and-swap loop on its bits.
template <typename T>
inline void AtomicStore(AtomicOp op, T *dst, const T *src, uint64_t n) {
  using B = AtomicBits<T>;
  for (uint64_t i = 0; i < n; ++i) {
    B *p = reinterpret_cast<B *>(dst + i);
    B seen = __atomic_load_n(p, __ATOMIC_RELAXED);
    for (;;) {
      T old, next;
      std::memcpy(&old, &seen, sizeof(T));
      next = Combine(op, old, src[i]);
      B want;
      std::memcpy(&want, &next, sizeof(T));
      if (__atomic_compare_exchange_n(p, &seen, want, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) break;
    }
  }
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
