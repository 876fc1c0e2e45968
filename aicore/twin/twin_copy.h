// DataCopy and DataCopyPad between GM and UB (and UB to UB) with the NPU's rules: UB addresses
// 32-byte aligned, contiguous DataCopy counts a multiple of 32 bytes (the hardware rounds down),
// every byte moved inside its GM buffer and its UB tensor.
#ifndef MS_OPS_TWIN_COPY_H_
#define MS_OPS_TWIN_COPY_H_

#include <cstdint>
#include <cstring>
#include "twin_atomic.h"
#include "twin_intrin.h"
#include "twin_tensor.h"

namespace AscendC {

struct DataCopyParams {
  uint16_t blockCount = 1;
  uint16_t blockLen = 0;   // 32-byte blocks (bytes in DataCopyPad)
  uint16_t srcStride = 0;  // gap after each block, same unit
  uint16_t dstStride = 0;
  DataCopyParams() = default;
  DataCopyParams(uint16_t count, uint16_t len, uint16_t srcStrideIn, uint16_t dstStrideIn)
      : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
};

// blockLen in bytes; the GM-side stride in bytes, the UB-side stride in 32-byte blocks.
struct DataCopyExtParams {
  uint16_t blockCount = 1;
  uint32_t blockLen = 0;
  uint32_t srcStride = 0;
  uint32_t dstStride = 0;
  uint32_t rsv = 0;
  DataCopyExtParams() = default;
  DataCopyExtParams(uint16_t count, uint32_t len, uint32_t srcStrideIn, uint32_t dstStrideIn, uint32_t rsvIn)
      : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn) {}
};

template <typename T>
struct DataCopyPadExtParams {
  bool isPad = false;
  uint8_t leftPadding = 0;   // elements
  uint8_t rightPadding = 0;  // elements
  T paddingValue{};
  DataCopyPadExtParams() = default;
  DataCopyPadExtParams(bool isPadIn, uint8_t left, uint8_t right, T value)
      : isPad(isPadIn), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

struct DataCopyPadParams {
  bool isPad = false;
  uint8_t leftPadding = 0;
  uint8_t rightPadding = 0;
  uint64_t paddingValue = 0;  // bit pattern, low sizeof(T) bytes used
  DataCopyPadParams() = default;
  DataCopyPadParams(bool isPadIn, uint8_t left, uint8_t right, uint64_t value)
      : isPad(isPadIn), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

namespace twin_detail {

constexpr uint64_t kBlk = ::ms_ops::kBlockBytes;

[[noreturn]] __attribute__((noinline, cold)) inline void Misaligned(const char *call, const void *p) {
  Fail(call, "UB address " + Str(UbOffset(p)) + " is not 32-byte aligned");
}

inline void UbAligned(const char *call, const void *p) {
  if (__builtin_expect((reinterpret_cast<uintptr_t>(p) & (kBlk - 1)) != 0, 0)) Misaligned(call, p);
}

// count elements of `size` bytes break a rule of whole `unit`-byte units (tolerated: rounded down).
__attribute__((noinline, cold)) inline void CountRule(const char *call, uint64_t count, uint64_t size, uint64_t unit) {
  ::ms_ops::twin::Tolerated(call, "count " + Str(count) + " x " + Str(size) + " bytes = " + Str(count * size) +
                                      " bytes is not a multiple of " + Str(unit) + " bytes");
}

// `bytes` bytes from the start of UB tensor t must lie in its buffer.
template <typename T>
inline void UbSpan(const char *call, const LocalTensor<T> &t, uint64_t bytes) {
  if (__builtin_expect(bytes > uint64_t(t.TwinCap()) * sizeof(T), 0))
    UbOutOfRange(call, (bytes + sizeof(T) - 1) / sizeof(T), t.TwinCap());
}

template <typename T>
inline void GmSpan(const char *call, const GlobalTensor<T> &g, uint64_t bytes) {
  g.TwinCheck(call, 0, (bytes + sizeof(T) - 1) / sizeof(T));
}

// The count of a contiguous DataCopy as the hardware moves it: whole 32-byte blocks.
template <typename T>
inline uint64_t CopyCount(uint32_t count) {
  const uint64_t bytes = uint64_t(count) * sizeof(T);
  if (__builtin_expect(bytes % kBlk != 0, 0)) CountRule("DataCopy", count, sizeof(T), kBlk);
  return bytes / kBlk * kBlk / sizeof(T);
}

// blockCount rows of rowBytes bytes, rows srcPitch / dstPitch bytes apart.
inline void CopyRows(uint8_t *dst, const uint8_t *src, uint64_t rows, uint64_t rowBytes, uint64_t dstPitch,
                     uint64_t srcPitch) {
  for (uint64_t r = 0; r < rows; ++r) std::memcpy(dst + r * dstPitch, src + r * srcPitch, rowBytes);
}

// A UB -> GM move. The NPU's MTE3 writes global memory without reading it first; a CPU store
// does read each line before writing it, which costs a third of the bandwidth on the large row
// copies the kernels make. Rows of a few KiB therefore go out with streaming stores (they bypass
// the cache; Launch fences them before the kernel is reported done). Short rows are copied plainly.
inline void ToGm(uint8_t *dst, const uint8_t *src, uint64_t bytes) {
#if defined(__AVX__)
  constexpr uint64_t kStreamFrom = 4096;
  if (bytes >= kStreamFrom) {
    const uint64_t head = (kBlk - (reinterpret_cast<uintptr_t>(dst) & (kBlk - 1))) & (kBlk - 1);
    std::memcpy(dst, src, head);
    uint64_t i = head;
    for (; i + kBlk <= bytes; i += kBlk)
      _mm256_stream_si256(reinterpret_cast<__m256i *>(dst + i),
                          _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + i)));
    std::memcpy(dst + i, src + i, bytes - i);
    return;
  }
#endif
  std::memcpy(dst, src, bytes);
}

inline void CopyRowsToGm(uint8_t *dst, const uint8_t *src, uint64_t rows, uint64_t rowBytes, uint64_t dstPitch,
                         uint64_t srcPitch) {
  for (uint64_t r = 0; r < rows; ++r) ToGm(dst + r * dstPitch, src + r * srcPitch, rowBytes);
}

inline uint64_t Span(uint64_t rows, uint64_t rowBytes, uint64_t pitch) {
  return rows == 0 ? 0 : (rows - 1) * pitch + rowBytes;
}

// A UB -> GM copy of T rows: plain stores, or the store atomic SetAtomicAdd/Max/Min set.
// The written rows are logged for the GM race checks: those within the block (twin_races.h) and
// those between blocks (twin_gm_writes.h).
template <typename T>
inline void StoreRows(const char *call, const GlobalTensor<T> &g, const uint8_t *src, uint64_t rows, uint64_t rowBytes,
                      uint64_t dstPitch, uint64_t srcPitch) {
  uint8_t *dst = reinterpret_cast<uint8_t *>(g.TwinData());
  const AtomicOp op = StoreAtomic<T>(call);
  Races().GmWrite(call, dst, rows, rowBytes, dstPitch);
  if (dstPitch == rowBytes || rows <= 1) {
    ::ms_ops::twin::GmWritten(call, g.TwinBase(), dst, rows * rowBytes, op != kAtomicNone);
  } else if (::ms_ops::twin::Current().gmMine != nullptr) {
    for (uint64_t r = 0; r < rows; ++r)
      ::ms_ops::twin::GmWritten(call, g.TwinBase(), dst + r * dstPitch, rowBytes, op != kAtomicNone);
  }
  if (op == kAtomicNone) return CopyRowsToGm(dst, src, rows, rowBytes, dstPitch, srcPitch);
  if constexpr (AtomicTag<T>() != 0)
    for (uint64_t r = 0; r < rows; ++r)
      AtomicStore(op, reinterpret_cast<T *>(dst + r * dstPitch), reinterpret_cast<const T *>(src + r * srcPitch),
                  rowBytes / sizeof(T));
}

// The UB side of a row copy as pipe accesses: one span when the rows are adjacent, else row by row
// (the gaps between rows are not touched).
inline void UbRows(Pipe pipe, const char *call, const void *p, uint64_t rows, uint64_t rowBytes, uint64_t pitch,
                   bool write) {
  ::ms_ops::twin::Races &r = Races();
  ::ms_ops::twin::ProfileUb(pipe, rows * rowBytes);
  const uint8_t *b = static_cast<const uint8_t *>(p);
  if (pitch == rowBytes || rows <= 1) {
    write ? r.Write(pipe, call, b, rows * rowBytes) : r.Read(pipe, call, b, rows * rowBytes);
    return;
  }
  for (uint64_t i = 0; i < rows; ++i)
    write ? r.Write(pipe, call, b + i * pitch, rowBytes) : r.Read(pipe, call, b + i * pitch, rowBytes);
}

// blockCount's documented range is [0, 4095]: the field is 12 bits wide in the instruction.
inline void BlockCount(const char *call, uint32_t count) {
  if (__builtin_expect(count > 4095, 0))
    Fail(call, "blockCount " + Str(count) + " exceeds 4095 (split the copy into several calls)");
}

}  // namespace twin_detail

template <typename T>
inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, uint32_t count) {
  twin_detail::UbAligned("DataCopy", dst.TwinData());
  const uint64_t n = twin_detail::CopyCount<T>(count);
  twin_detail::UbSpan("DataCopy", dst, n * sizeof(T));
  src.TwinCheck("DataCopy", 0, n);
  twin_detail::Races().GmRead(twin_detail::kPipeMte2, "DataCopy", src.TwinData(), n * sizeof(T));
  twin_detail::UbWrite(twin_detail::kPipeMte2, "DataCopy", dst.TwinData(), n * sizeof(T));
  std::memcpy(dst.TwinData(), src.TwinData(), n * sizeof(T));
}

template <typename T>
inline void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count) {
  twin_detail::UbAligned("DataCopy", src.TwinData());
  const uint64_t n = twin_detail::CopyCount<T>(count);
  twin_detail::UbSpan("DataCopy", src, n * sizeof(T));
  dst.TwinCheck("DataCopy", 0, n);
  twin_detail::UbRead(twin_detail::kPipeMte3, "DataCopy", src.TwinData(), n * sizeof(T));
  twin_detail::StoreRows<T>("DataCopy", dst, reinterpret_cast<const uint8_t *>(src.TwinData()), 1, n * sizeof(T), 0,
                            0);
}

namespace twin_detail {

// The pipe of a local -> local copy: the vector unit's within UB, MTE1's where a cube memory takes
// part (L1 -> the bias table, say).
inline Pipe LocalCopyPipe(const void *dst, const void *src) {
  return LocalMemOf(dst) == ::ms_ops::twin::kMemUb && LocalMemOf(src) == ::ms_ops::twin::kMemUb
             ? kPipeV
             : ::ms_ops::twin::kPipeMte1;
}

}  // namespace twin_detail

template <typename T>
inline void DataCopy(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count) {
  twin_detail::UbAligned("DataCopy", dst.TwinData());
  twin_detail::UbAligned("DataCopy", src.TwinData());
  const uint64_t n = twin_detail::CopyCount<T>(count);
  twin_detail::UbSpan("DataCopy", dst, n * sizeof(T));
  twin_detail::UbSpan("DataCopy", src, n * sizeof(T));
  const twin_detail::Pipe pipe = twin_detail::LocalCopyPipe(dst.TwinData(), src.TwinData());
  twin_detail::UbRead(pipe, "DataCopy", src.TwinData(), n * sizeof(T));
  twin_detail::UbWrite(pipe, "DataCopy", dst.TwinData(), n * sizeof(T));
  if (pipe == twin_detail::kPipeV) ::ms_ops::twin::ProfileVec(n * sizeof(T));
  std::memmove(dst.TwinData(), src.TwinData(), n * sizeof(T));
}

// Strided forms: blockLen and both gaps in 32-byte blocks on either side.
template <typename T>
inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const DataCopyParams &p) {
  using namespace twin_detail;
  UbAligned("DataCopy", dst.TwinData());
  const uint64_t row = p.blockLen * kBlk, sp = (p.blockLen + p.srcStride) * kBlk, dp = (p.blockLen + p.dstStride) * kBlk;
  BlockCount("DataCopy", p.blockCount);
  UbSpan("DataCopy", dst, Span(p.blockCount, row, dp));
  GmSpan("DataCopy", src, Span(p.blockCount, row, sp));
  Races().GmRead(kPipeMte2, "DataCopy", src.TwinData(), Span(p.blockCount, row, sp));
  UbRows(kPipeMte2, "DataCopy", dst.TwinData(), p.blockCount, row, dp, true);
  CopyRows(reinterpret_cast<uint8_t *>(dst.TwinData()), reinterpret_cast<const uint8_t *>(src.TwinData()),
           p.blockCount, row, dp, sp);
}

template <typename T>
inline void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyParams &p) {
  using namespace twin_detail;
  UbAligned("DataCopy", src.TwinData());
  const uint64_t row = p.blockLen * kBlk, sp = (p.blockLen + p.srcStride) * kBlk, dp = (p.blockLen + p.dstStride) * kBlk;
  BlockCount("DataCopy", p.blockCount);
  UbSpan("DataCopy", src, Span(p.blockCount, row, sp));
  GmSpan("DataCopy", dst, Span(p.blockCount, row, dp));
  UbRows(kPipeMte3, "DataCopy", src.TwinData(), p.blockCount, row, sp, false);
  StoreRows<T>("DataCopy", dst, reinterpret_cast<const uint8_t *>(src.TwinData()), p.blockCount, row, dp, sp);
}

// Local -> local: blockLen and gaps in 32-byte blocks, or 64-byte ones into the bias table (L1 ->
// C2, as Atlas A2 counts them).
template <typename T>
inline void DataCopy(const LocalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyParams &p) {
  using namespace twin_detail;
  UbAligned("DataCopy", dst.TwinData());
  UbAligned("DataCopy", src.TwinData());
  const uint64_t unit = LocalMemOf(dst.TwinData()) == ::ms_ops::twin::kMemBt ? 2 * kBlk : kBlk;
  const uint64_t row = p.blockLen * unit, sp = (p.blockLen + p.srcStride) * unit, dp = (p.blockLen + p.dstStride) * unit;
  BlockCount("DataCopy", p.blockCount);
  UbSpan("DataCopy", src, Span(p.blockCount, row, sp));
  UbSpan("DataCopy", dst, Span(p.blockCount, row, dp));
  const Pipe pipe = LocalCopyPipe(dst.TwinData(), src.TwinData());
  UbRows(pipe, "DataCopy", src.TwinData(), p.blockCount, row, sp, false);
  UbRows(pipe, "DataCopy", dst.TwinData(), p.blockCount, row, dp, true);
  if (pipe == kPipeV) ::ms_ops::twin::ProfileVec(p.blockCount * row);
  CopyRows(reinterpret_cast<uint8_t *>(dst.TwinData()), reinterpret_cast<const uint8_t *>(src.TwinData()),
           p.blockCount, row, dp, sp);
}

// GM -> UB without alignment needs. Each UB row is [left pad][blockLen bytes][right pad] rounded up
// to 32 bytes, then dstStride blocks of gap. The round-up tail holds the row's first element when
// there is no padding; otherwise the hardware leaves it undefined, and so does the twin.
template <typename T>
inline void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const DataCopyExtParams &p,
                        const DataCopyPadExtParams<T> &pad) {
  using namespace twin_detail;
  const char *call = "DataCopyPad";
  UbAligned(call, dst.TwinData());
  if (p.blockCount == 0 || p.blockLen == 0) return;
  if (p.blockLen % sizeof(T) != 0)
    Fail(call, "blockLen " + Str(p.blockLen) + " bytes is not a multiple of the element size " + Str(sizeof(T)));
  const uint64_t left = pad.leftPadding * sizeof(T), right = pad.rightPadding * sizeof(T);
  if (left > kBlk || right > kBlk) Fail(call, "left/right padding beyond 32 bytes");
  const uint64_t row = ::ms_ops::AlignUp(left + p.blockLen + right, kBlk);
  const uint64_t dp = row + uint64_t(p.dstStride) * kBlk, sp = uint64_t(p.blockLen) + p.srcStride;
  BlockCount(call, p.blockCount);
  UbSpan(call, dst, Span(p.blockCount, row, dp));
  GmSpan(call, src, Span(p.blockCount, p.blockLen, sp));
  Races().GmRead(kPipeMte2, call, src.TwinData(), Span(p.blockCount, p.blockLen, sp));
  UbRows(kPipeMte2, call, dst.TwinData(), p.blockCount, row, dp, true);
  uint8_t *d = reinterpret_cast<uint8_t *>(dst.TwinData());
  const uint8_t *s = reinterpret_cast<const uint8_t *>(src.TwinData());
  for (uint64_t r = 0; r < p.blockCount; ++r) {
    uint8_t *out = d + r * dp;
    std::memcpy(out + left, s + r * sp, p.blockLen);
    T *e = reinterpret_cast<T *>(out);
    const uint64_t n = left / sizeof(T), m = p.blockLen / sizeof(T);
    if (pad.isPad) {
      for (uint64_t i = 0; i < n; ++i) e[i] = pad.paddingValue;
      for (uint64_t i = 0; i < pad.rightPadding; ++i) e[n + m + i] = pad.paddingValue;
    }
    if (left == 0 && right == 0)
      for (uint64_t i = m; i < row / sizeof(T); ++i) e[i] = e[0];
  }
}

template <typename T>
inline void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const DataCopyParams &p,
                        const DataCopyPadParams &pad) {
  T value;
  std::memcpy(&value, &pad.paddingValue, sizeof(T));
  DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0),
              DataCopyPadExtParams<T>(pad.isPad, pad.leftPadding, pad.rightPadding, value));
}

// UB -> GM: UB rows start 32-byte aligned (AlignUp(blockLen, 32) plus srcStride blocks apart),
// GM rows are blockLen + dstStride bytes apart.
template <typename T>
inline void DataCopyPad(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyExtParams &p) {
  using namespace twin_detail;
  const char *call = "DataCopyPad";
  UbAligned(call, src.TwinData());
  if (p.blockCount == 0 || p.blockLen == 0) return;
  if (p.blockLen % sizeof(T) != 0)
    Fail(call, "blockLen " + Str(p.blockLen) + " bytes is not a multiple of the element size " + Str(sizeof(T)));
  const uint64_t sp = ::ms_ops::AlignUp(p.blockLen, kBlk) + uint64_t(p.srcStride) * kBlk;
  const uint64_t dp = uint64_t(p.blockLen) + p.dstStride;
  BlockCount(call, p.blockCount);
  UbSpan(call, src, Span(p.blockCount, p.blockLen, sp));
  GmSpan(call, dst, Span(p.blockCount, p.blockLen, dp));
  UbRows(kPipeMte3, call, src.TwinData(), p.blockCount, p.blockLen, sp, false);
  StoreRows<T>(call, dst, reinterpret_cast<const uint8_t *>(src.TwinData()), p.blockCount, p.blockLen, dp, sp);
}

template <typename T>
inline void DataCopyPad(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyParams &p) {
  DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0));
}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_COPY_H_
