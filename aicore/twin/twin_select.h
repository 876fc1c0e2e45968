// Compare (to a one-bit-per-element mask, little-endian within each byte), Select by such a mask,
// and the whole-vector reductions ReduceMax / ReduceMin / ReduceSum.
#ifndef MS_OPS_TWIN_SELECT_H_
#define MS_OPS_TWIN_SELECT_H_

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "twin_vector.h"

namespace AscendC {
namespace twin_detail {

// Calls f with the comparison of mode m as a callable, so the element loop has no switch in it.
template <class F>
inline void WithCmp(CMPMODE m, F f) {
  switch (m) {
    case CMPMODE::LT: return f([](auto a, auto b) { return a < b; });
    case CMPMODE::GT: return f([](auto a, auto b) { return a > b; });
    case CMPMODE::EQ: return f([](auto a, auto b) { return a == b; });
    case CMPMODE::LE: return f([](auto a, auto b) { return a <= b; });
    case CMPMODE::GE: return f([](auto a, auto b) { return a >= b; });
    default: return f([](auto a, auto b) { return a != b; });
  }
}

// Bits of 8 elements per byte; `pred(i)` decides element i. Mask bytes past count are untouched.
template <class P>
inline void PackBits(uint8_t *d, uint32_t count, P pred) {
  for (uint32_t byte = 0; byte < count / 8; ++byte) {
    uint8_t bits = 0;
    for (uint32_t k = 0; k < 8; ++k) bits |= static_cast<uint8_t>(pred(byte * 8 + k)) << k;
    d[byte] = bits;
  }
  if (count % 8 != 0) {
    uint8_t bits = 0;
    for (uint32_t k = 0; k < count % 8; ++k) bits |= static_cast<uint8_t>(pred(count / 8 * 8 + k)) << k;
    d[count / 8] = bits;
  }
}

template <typename U, class P>
inline void CompareTo(const char *call, const LocalTensor<U> &dst, uint32_t count, P pred) {
  UbAligned(call, dst.TwinData());
  const uint64_t maskBytes = (uint64_t(count) + 7) / 8;
  if (maskBytes > uint64_t(dst.TwinCap()) * sizeof(U)) UbOutOfRange(call, maskBytes / sizeof(U), dst.TwinCap());
  UbWrite(kPipeV, call, dst.TwinData(), maskBytes);
  ::ms_ops::twin::ProfileVec(maskBytes);
  PackBits(reinterpret_cast<uint8_t *>(dst.TwinData()), count, pred);
}

}  // namespace twin_detail

// count * sizeof(T) must be a multiple of 256 bytes; the hardware skips an unaligned tail.
template <typename T, typename U>
inline void Compare(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, CMPMODE cmpMode,
                    uint32_t count) {
  using namespace twin_detail;
  const uint64_t bytes = uint64_t(count) * sizeof(T);
  if (bytes % 256 != 0) {
    CountRule("Compare", count, sizeof(T), 256);
    count = static_cast<uint32_t>(bytes / 256 * 256 / sizeof(T));
  }
  const T *a = VecIn("Compare", src0, count), *b = VecIn("Compare", src1, count);
  WithCmp(cmpMode, [&](auto cmp) { CompareTo("Compare", dst, count, [&](uint32_t i) { return cmp(a[i], b[i]); }); });
}

template <typename T, typename U>
inline void CompareScalar(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const T src1Scalar, CMPMODE cmpMode,
                          uint32_t count) {
  using namespace twin_detail;
  const T *a = VecIn("CompareScalar", src0, count);
  WithCmp(cmpMode,
          [&](auto cmp) { CompareTo("CompareScalar", dst, count, [&](uint32_t i) { return cmp(a[i], src1Scalar); }); });
}

namespace twin_detail {

template <typename U>
inline const uint8_t *MaskArg(const char *call, const LocalTensor<U> &mask, uint32_t count) {
  UbAligned(call, mask.TwinData());
  const uint64_t maskBytes = (uint64_t(count) + 7) / 8;
  if (maskBytes > uint64_t(mask.TwinCap()) * sizeof(U)) UbOutOfRange(call, maskBytes / sizeof(U), mask.TwinCap());
  UbRead(kPipeV, call, mask.TwinData(), maskBytes);
  return reinterpret_cast<const uint8_t *>(mask.TwinData());
}

inline bool Bit(const uint8_t *m, uint32_t i) { return (m[i >> 3] >> (i & 7)) & 1; }

// CMPMASK (twin_cmpsel0.h) filled with copies of a Select's scalar, which passes through it.
template <typename T>
inline void CmpMaskHolds(T v) {
  ::ms_ops::twin::Block &b = ::ms_ops::twin::Current();
  for (uint32_t k = 0; k < sizeof(b.cmpMask) / sizeof(T); ++k) std::memcpy(b.cmpMask + k * sizeof(T), &v, sizeof(T));
  b.cmpMaskAddress = false;
}

}  // namespace twin_detail

// A set mask bit selects src0, a clear bit src1. Mode 2 consumes selMask's bits end to end; mode 0
// loads its first 16 bytes into CMPMASK and every 256-byte repeat uses their first
// 256 / sizeof(T) bits again (twin_cmpsel0.h has the register).
template <typename T, typename U>
inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0,
                   const LocalTensor<T> &src1, SELMODE selMode, uint32_t count) {
  using namespace twin_detail;
  if (selMode == SELMODE::VSEL_TENSOR_SCALAR_MODE)
    Fail("Select", "SELMODE::VSEL_TENSOR_SCALAR_MODE selects against a scalar src1, not a tensor");
  const T *a = VecIn("Select", src0, count), *b = VecIn("Select", src1, count);
  const bool spr = selMode == SELMODE::VSEL_CMPMASK_SPR;
  const uint8_t *m = MaskArg("Select", selMask, spr ? 128 : count);
  T *d = VecOut("Select", dst, count);
  if (spr) {
    ::ms_ops::twin::Block &blk = ::ms_ops::twin::Current();
    std::memcpy(blk.cmpMask, m, sizeof(blk.cmpMask));
    blk.cmpMaskAddress = false;
    constexpr uint32_t lanes = ONE_REPEAT_BYTE_SIZE / sizeof(T);
    for (uint32_t i = 0; i < count; ++i) d[i] = Bit(m, i % lanes) ? a[i] : b[i];
    return;
  }
  for (uint32_t i = 0; i < count; ++i) d[i] = Bit(m, i) ? a[i] : b[i];
  ::ms_ops::twin::Current().cmpMaskAddress = true;  // mode 2 passes selMask's address through CMPMASK
}

// The scalar goes through CMPMASK, where it stays.
template <typename T, typename U>
inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0, T src1,
                   SELMODE selMode, uint32_t count) {
  using namespace twin_detail;
  if (selMode != SELMODE::VSEL_TENSOR_SCALAR_MODE)
    Fail("Select", "the tensor/scalar form needs SELMODE::VSEL_TENSOR_SCALAR_MODE");
  const T *a = VecIn("Select", src0, count);
  const uint8_t *m = MaskArg("Select", selMask, count);
  T *d = VecOut("Select", dst, count);
  for (uint32_t i = 0; i < count; ++i) d[i] = Bit(m, i) ? a[i] : src1;
  CmpMaskHolds(src1);
}

namespace twin_detail {

constexpr int kLanes = 64;  // one 256-byte repeat of floats: partial results per lane vectorize

template <typename T>
inline Calc<T> SumOf(const T *x, int32_t n) {
  Calc<T> acc[kLanes] = {};
  int32_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] += static_cast<Calc<T>>(x[i + k]);
  for (int k = 0; i < n; ++i, ++k) acc[k] += static_cast<Calc<T>>(x[i]);
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int k = 0; k < w; ++k) acc[k] += acc[k + w];
  return acc[0];
}

// The documented minimum of ReduceMax/ReduceMin's sharedTmpBuffer, in elements, for the count
// form on Atlas A2: the first pass leaves a (value, index) pair per 256-byte repeat (a partial last
// repeat too), rounded up to 32 bytes; with calIndex the later passes keep their pairs as well.
template <typename T>
inline uint64_t ReduceScratch(int32_t count, bool calIndex) {
  const uint64_t perBlock = ONE_BLK_SIZE / sizeof(T), perRepeat = ONE_REPEAT_BYTE_SIZE / sizeof(T);
  auto up = [](uint64_t a, uint64_t b) { return (a + b - 1) / b; };
  const uint64_t iter1 = up(uint64_t(count), perRepeat) * 2, iter1End = up(iter1, perBlock) * perBlock;
  if (!calIndex) return iter1End;
  const uint64_t iter2 = up(iter1, perRepeat) * 2, iter2End = up(iter2, perBlock) * perBlock;
  if (iter2 <= 2) return iter1End + iter2End;
  const uint64_t iter3 = up(iter2, perRepeat) * 2;
  return iter1End + iter2End + up(iter3, perBlock) * perBlock;
}

[[noreturn]] __attribute__((noinline, cold)) inline void ScratchTooSmall(const char *call, uint64_t have,
                                                                         uint64_t need, int32_t count, bool calIndex) {
  Fail(call, "sharedTmpBuffer holds " + Str(have) + " elements, below the documented minimum of " + Str(need) +
                 " for count " + Str(uint64_t(count)) + (calIndex ? " with calIndex" : "") +
                 " (the NPU keeps each pass's per-repeat results there)");
}

template <typename T, class Better>
inline void ReduceBest(const char *call, const LocalTensor<T> &dst, const LocalTensor<T> &src,
                       const LocalTensor<T> &tmp, int32_t count, bool calIndex, Better better) {
  VecCount(call, count);
  if (count == 0) Fail(call, "count is 0");
  const T *x = VecIn(call, src, count);
  T *d = VecOut(call, dst, calIndex ? 2 : 1);
  UbAligned(call, tmp.TwinData());
  const uint64_t need = ReduceScratch<T>(count, calIndex);
  if (__builtin_expect(tmp.TwinCap() < need, 0)) ScratchTooSmall(call, tmp.TwinCap(), need, count, calIndex);
  Calc<T> lane[kLanes];
  for (int k = 0; k < kLanes; ++k) lane[k] = static_cast<Calc<T>>(x[0]);
  int32_t i = 0;
  for (; i + kLanes <= count; i += kLanes)
    for (int k = 0; k < kLanes; ++k) {
      const Calc<T> v = static_cast<Calc<T>>(x[i + k]);
      lane[k] = better(v, lane[k]) ? v : lane[k];
    }
  Calc<T> best = lane[0];
  for (int k = 1; k < kLanes; ++k) best = better(lane[k], best) ? lane[k] : best;
  for (; i < count; ++i) best = better(static_cast<Calc<T>>(x[i]), best) ? static_cast<Calc<T>>(x[i]) : best;
  d[0] = static_cast<T>(best);
  if (!calIndex) return;
  // The index of the first occurrence, stored in dst[1] as an integer of T's width.
  using Index = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;
  Index idx = 0;
  auto same = [best](Calc<T> v) { return v == best || (v != v && best != best); };
  while (!same(static_cast<Calc<T>>(x[idx]))) ++idx;
  std::memcpy(&d[1], &idx, sizeof(T));
}

}  // namespace twin_detail

// Result in dst[0]; with calIndex the index of the (first) extremum in dst[1], reinterpreted as
// an unsigned integer of the element width. The scratch tensor is not used, but must have the
// size the NPU needs.
template <typename T>
inline void ReduceMax(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &sharedTmpBuffer,
                      const int32_t count, bool calIndex = false) {
  twin_detail::ReduceBest("ReduceMax", dst, src, sharedTmpBuffer, count, calIndex, [](auto a, auto b) { return a > b; });
}

template <typename T>
inline void ReduceMin(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &sharedTmpBuffer,
                      const int32_t count, bool calIndex = false) {
  twin_detail::ReduceBest("ReduceMin", dst, src, sharedTmpBuffer, count, calIndex, [](auto a, auto b) { return a < b; });
}

template <typename T>
inline void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &sharedTmpBuffer,
                      const int32_t count) {
  using namespace twin_detail;
  VecCount("ReduceSum", count);
  const T *x = VecIn("ReduceSum", src, count);
  T *d = VecOut("ReduceSum", dst, 1);
  // Atlas A2's count form adds the repeats' sums in order and leaves sharedTmpBuffer unused
  // (any size is documented to do).
  UbAligned("ReduceSum", sharedTmpBuffer.TwinData());
  d[0] = static_cast<T>(SumOf(x, count));
  // The sum is also left in the ACC_VAL register, where kernels read it with GetAccVal.
  uint64_t bits = 0;
  std::memcpy(&bits, &d[0], sizeof(T));
  ::ms_ops::twin::Current().accVal = bits;
}

// The ACC_VAL register as a T: the last count-form ReduceSum's result. GetReduceRepeatSumSpr is
// its current name; GetAccVal() without a type, the register's 64 bits.
template <typename T>
inline T GetReduceRepeatSumSpr() {
  static_assert(sizeof(T) <= sizeof(uint64_t), "the ACC_VAL register has 64 bits");
  T v;
  const uint64_t bits = ::ms_ops::twin::Current().accVal;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}
template <typename T>
inline T GetAccVal() {
  return GetReduceRepeatSumSpr<T>();
}
inline uint64_t GetAccVal() { return ::ms_ops::twin::Current().accVal; }

}  // namespace AscendC

#endif  // MS_OPS_TWIN_SELECT_H_
