// A kernel's debug output: AscendC::printf / PRINTF, DumpTensor, DumpAccChkPoint and
// GetSystemCycle, written to stdout one whole call at a time (blocks run on concurrent threads), as
// CANN's CPU build prints them; built with ASCENDC_DUMP=0 they print nothing, as CANN's switch.
// DumpTensor reads what the NPU's dump reads, after the barriers CANN's implementation inserts: it
// is no access of a pipe here.
#ifndef MS_OPS_TWIN_DEBUG_H_
#define MS_OPS_TWIN_DEBUG_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <type_traits>

#include "twin_tensor.h"

#if !defined(ASCENDC_DUMP) || ASCENDC_DUMP != 0
#define MS_OPS_TWIN_DUMP 1
#else
#define MS_OPS_TWIN_DUMP 0
#endif

namespace AscendC {

// The shape DumpTensor may print its elements by (up to 8 dimensions).
struct ShapeInfo {
  ShapeInfo() = default;
  ShapeInfo(uint8_t dims, const uint32_t *sizes) : shapeDim(dims > 8 ? 8 : dims) {
    for (uint8_t i = 0; i < shapeDim; ++i) shape[i] = sizes[i];
  }
  uint8_t shapeDim = 0;
  uint32_t shape[8] = {};
};

namespace twin_detail {

inline std::mutex &PrintLock() {
  static std::mutex mu;
  return mu;
}

// printf's arguments as C varargs take them: half and bfloat16_t as double (for %f).
template <class A>
inline auto PrintArg(const A &a) {
  if constexpr (std::is_same_v<A, half> || std::is_same_v<A, bfloat16_t>) return static_cast<double>(static_cast<float>(a));
  else return a;
}

template <typename T>
inline const char *DumpTypeName() {
  if constexpr (std::is_same_v<T, float>) return "float32";
  else if constexpr (std::is_same_v<T, half>) return "float16";
  else if constexpr (std::is_same_v<T, bfloat16_t>) return "bfloat16";
  else if constexpr (std::is_same_v<T, int32_t>) return "int32";
  else if constexpr (std::is_same_v<T, uint32_t>) return "uint32";
  else if constexpr (std::is_same_v<T, int16_t>) return "int16";
  else if constexpr (std::is_same_v<T, uint16_t>) return "uint16";
  else if constexpr (std::is_same_v<T, int8_t>) return "int8";
  else if constexpr (std::is_same_v<T, uint8_t>) return "uint8";
  else if constexpr (std::is_same_v<T, int64_t>) return "int64";
  else if constexpr (std::is_same_v<T, uint64_t>) return "uint64";
  else return "unknown";
}

template <typename T>
inline std::string DumpValue(T v) {
  char s[48];
  if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>)
    std::snprintf(s, sizeof(s), "%f", static_cast<double>(static_cast<float>(v)));
  else if constexpr (std::is_signed_v<T>)
    std::snprintf(s, sizeof(s), "%lld", static_cast<long long>(v));
  else
    std::snprintf(s, sizeof(s), "%llu", static_cast<unsigned long long>(v));
  return s;
}

// "DumpTensor: desc=.., addr=.., data_type=.., position=.., dump_size=.." and the values: one
// bracketed list, or, with a shape, nested by its last dimension.
template <typename T>
inline void Dump(const T *p, uint64_t addr, const char *position, uint32_t desc, uint32_t n, const ShapeInfo *shape) {
  std::string out = "DumpTensor: desc=" + std::to_string(desc) + ", addr=" + std::to_string(addr) +
                    ", data_type=" + DumpTypeName<T>() + ", position=" + position +
                    ", dump_size=" + std::to_string(n) + "\n";
  const uint32_t row = shape != nullptr && shape->shapeDim > 0 && shape->shape[shape->shapeDim - 1] > 0
                           ? shape->shape[shape->shapeDim - 1]
                           : n;
  for (uint32_t i = 0; i < n; ++i) {
    out += i % row == 0 ? "[" : ", ";
    out += DumpValue(p[i]);
    if (i % row == row - 1 || i + 1 == n) out += "]\n";
  }
  if (n == 0) out += "[]\n";
  std::lock_guard<std::mutex> lock(PrintLock());
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
}

// DumpTensor of a UB or GM tensor's first n elements (checked against its bounds), shape or none.
template <typename T>
inline void DumpUb(const LocalTensor<T> &tensor, uint32_t desc, uint32_t n, const ShapeInfo *shape) {
  if constexpr (MS_OPS_TWIN_DUMP) {
    if (n > tensor.TwinCap()) UbOutOfRange("DumpTensor", n, tensor.TwinCap());
    // UB, or the cube memory (L1, L0C, ...) the tensor is in, and the address within it.
    Dump(tensor.TwinData(), PhyAddr(tensor.TwinData()), ::ms_ops::twin::kLocalMemNames[LocalMemOf(tensor.TwinData())],
         desc, n, shape);
  }
}
template <typename T>
inline void DumpGm(const GlobalTensor<T> &tensor, uint32_t desc, uint32_t n, const ShapeInfo *shape) {
  if constexpr (MS_OPS_TWIN_DUMP) {
    tensor.TwinCheck("DumpTensor", 0, n);
    Dump(tensor.TwinData(), reinterpret_cast<uintptr_t>(tensor.TwinData()), "GM", desc, n, shape);
  }
}

}  // namespace twin_detail

// The system counter, which runs at 50 MHz on the NPU (cycles / 50 = microseconds): here the host's
// steady clock on that scale, so that a kernel's own timing arithmetic reads microseconds.
inline int64_t GetSystemCycle() {
  const auto since = std::chrono::steady_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(since).count() / 20;
}

template <class... Args>
inline void printf(const char *fmt, Args &&...args) {
  if constexpr (MS_OPS_TWIN_DUMP) {
    std::lock_guard<std::mutex> lock(twin_detail::PrintLock());
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-security"
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    std::printf(fmt, twin_detail::PrintArg(args)...);
#pragma GCC diagnostic pop
    std::fflush(stdout);
  }
}

template <typename T>
inline void DumpTensor(const LocalTensor<T> &tensor, uint32_t desc, uint32_t dumpSize) {
  twin_detail::DumpUb(tensor, desc, dumpSize, nullptr);
}
template <typename T>
inline void DumpTensor(const LocalTensor<T> &tensor, uint32_t desc, uint32_t dumpSize, const ShapeInfo &shapeInfo) {
  twin_detail::DumpUb(tensor, desc, dumpSize, &shapeInfo);
}
template <typename T>
inline void DumpTensor(const GlobalTensor<T> &tensor, uint32_t desc, uint32_t dumpSize) {
  twin_detail::DumpGm(tensor, desc, dumpSize, nullptr);
}
template <typename T>
inline void DumpTensor(const GlobalTensor<T> &tensor, uint32_t desc, uint32_t dumpSize, const ShapeInfo &shapeInfo) {
  twin_detail::DumpGm(tensor, desc, dumpSize, &shapeInfo);
}

// DumpTensor of dumpSize elements from element countOff of the tensor (a check point inside it).
template <typename T>
inline void DumpAccChkPoint(const LocalTensor<T> &tensor, uint32_t index, uint32_t countOff, uint32_t dumpSize) {
  twin_detail::DumpUb(tensor[countOff], index, dumpSize, nullptr);
}
template <typename T>
inline void DumpAccChkPoint(const GlobalTensor<T> &tensor, uint32_t index, uint32_t countOff, uint32_t dumpSize) {
  twin_detail::DumpGm(tensor[countOff], index, dumpSize, nullptr);
}

}  // namespace AscendC

#define PRINTF AscendC::printf

#endif  // MS_OPS_TWIN_DEBUG_H_
