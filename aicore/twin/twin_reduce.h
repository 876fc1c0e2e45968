// Per-repeat reductions (level-0, twin_mask.h): WholeReduceMax/Min/Sum reduce each repeat's active
// lanes to one value (Max/Min also give the lane index of the first extremum), BlockReduceMax/
// Min/Sum each data block of a repeat (8 results a repeat), PairReduceSum each pair of adjacent
// lanes. The destination needs only element alignment; its repeat stride is in units of one
// repeat's result: WholeReduce one result (a value-index pair when both are written, 4 bytes for
// ORDER_ONLY_INDEX),
// BlockReduce 8 elements, PairReduce 128 bytes. A data block or pair with no active lane leaves
// its destination element unchanged.
#ifndef MS_OPS_TWIN_REDUCE_H_
#define MS_OPS_TWIN_REDUCE_H_

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "twin_mask.h"
#include "twin_vector.h"

namespace AscendC {
namespace twin_detail {

// n elements of T from dst's element `first` on, written by the V pipe; dst element-aligned.
template <typename T>
inline T *ReduceOut(const char *call, const LocalTensor<T> &dst, uint64_t first, uint64_t n) {
  if (first + n > dst.TwinCap()) UbOutOfRange(call, first + n, dst.TwinCap());
  UbWrite(kPipeV, call, dst.TwinData() + first, n * sizeof(T));
  return dst.TwinData() + first;
}

// The lane index as WholeReduceMax stores it: an unsigned integer of T's width.
template <typename T>
inline T IndexAs(uint32_t lane) {
  T v;
  if constexpr (sizeof(T) == 2) {
    const uint16_t i = static_cast<uint16_t>(lane);
    std::memcpy(&v, &i, 2);
  } else {
    std::memcpy(&v, &lane, sizeof(T));
  }
  return v;
}

template <typename T, class Better>
inline void WholeBest(const char *call, const LocalTensor<T> &dst, const LocalTensor<T> &src, const Lanes &l,
                      int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride, ReduceOrder order,
                      Better better) {
  const Strided<T> x = Operand(call, src, l, srcBlkStride, srcRepStride, false);
  const bool pair = order == ReduceOrder::ORDER_VALUE_INDEX || order == ReduceOrder::ORDER_INDEX_VALUE;
  // Elements of T per result: ORDER_ONLY_INDEX stores the index as a uint32_t.
  const uint64_t width = pair ? 2 : (order == ReduceOrder::ORDER_ONLY_INDEX ? 4 / sizeof(T) : 1);
  for (uint32_t r = 0; r < l.repeats; ++r) {
    bool any = false;
    Calc<T> best{};
    uint32_t at = 0;
    for (uint32_t e = 0; e < l.lanes; ++e) {
      if (!l.On(r, e)) continue;
      const Calc<T> v = static_cast<Calc<T>>(x.At(r, e));
      if (!any || better(v, best)) best = v, at = e, any = true;
    }
    if (!any) continue;
    T *d = ReduceOut(call, dst, uint64_t(r) * dstRepStride * width, width);
    switch (order) {
      case ReduceOrder::ORDER_VALUE_INDEX: d[0] = static_cast<T>(best), d[1] = IndexAs<T>(at); break;
      case ReduceOrder::ORDER_INDEX_VALUE: d[0] = IndexAs<T>(at), d[1] = static_cast<T>(best); break;
      case ReduceOrder::ORDER_ONLY_VALUE: d[0] = static_cast<T>(best); break;
      default: std::memcpy(d, &at, 4); break;
    }
  }
}

template <typename T>
inline void WholeSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const Lanes &l, int32_t dstRepStride,
                     int32_t srcBlkStride, int32_t srcRepStride) {
  const char *call = "WholeReduceSum";
  const Strided<T> x = Operand(call, src, l, srcBlkStride, srcRepStride, false);
  for (uint32_t r = 0; r < l.repeats; ++r) {
    bool any = false;
    Calc<T> acc = 0;
    for (uint32_t e = 0; e < l.lanes; ++e)
      if (l.On(r, e)) acc += static_cast<Calc<T>>(x.At(r, e)), any = true;
    if (any) *ReduceOut(call, dst, uint64_t(r) * dstRepStride, 1) = static_cast<T>(acc);
  }
}

// Groups of `group` adjacent lanes reduced by f(acc, v); result k of repeat r at
// r * dstRepStride * unit + k.
template <typename T, class F>
inline void Grouped(const char *call, const LocalTensor<T> &dst, const LocalTensor<T> &src, const Lanes &l,
                    uint32_t group, uint64_t unit, int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride,
                    F f) {
  const Strided<T> x = Operand(call, src, l, srcBlkStride, srcRepStride, false);
  for (uint32_t r = 0; r < l.repeats; ++r)
    for (uint32_t k = 0; k < l.lanes / group; ++k) {
      bool any = false;
      Calc<T> acc{};
      for (uint32_t e = k * group; e < (k + 1) * group; ++e) {
        if (!l.On(r, e)) continue;
        const Calc<T> v = static_cast<Calc<T>>(x.At(r, e));
        acc = any ? f(acc, v) : v;
        any = true;
      }
      if (any) *ReduceOut(call, dst, uint64_t(r) * dstRepStride * unit + k, 1) = static_cast<T>(acc);
    }
}

}  // namespace twin_detail

#define MS_OPS_TWIN_WHOLE_BEST(Name, cmp)                                                                        \
  template <typename T, bool isSetMask = true>                                                                   \
  inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask[],                  \
                   const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,             \
                   const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX) {             \
    twin_detail::WholeBest(#Name, dst, src, twin_detail::MaskOf<T, isSetMask>(#Name, mask, repeatTime),          \
                           dstRepStride, srcBlkStride, srcRepStride, order, [](auto a, auto b) { return cmp; }); \
  }                                                                                                              \
  template <typename T, bool isSetMask = true>                                                                   \
  inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t mask,                     \
                   const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,             \
                   const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX) {             \
    twin_detail::WholeBest(#Name, dst, src,                                                                      \
                           twin_detail::MaskOf<T, isSetMask>(#Name, static_cast<uint64_t>(mask), repeatTime),   \
                           dstRepStride, srcBlkStride, srcRepStride, order, [](auto a, auto b) { return cmp; }); \
  }
MS_OPS_TWIN_WHOLE_BEST(WholeReduceMax, a > b)
MS_OPS_TWIN_WHOLE_BEST(WholeReduceMin, a < b)
#undef MS_OPS_TWIN_WHOLE_BEST

template <typename T, bool isSetMask = true>
inline void WholeReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask[],
                           const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride) {
  twin_detail::WholeSum(dst, src, twin_detail::MaskOf<T, isSetMask>("WholeReduceSum", mask, repeatTime), dstRepStride,
                        srcBlkStride, srcRepStride);
}
template <typename T, bool isSetMask = true>
inline void WholeReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t mask,
                           const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride) {
  twin_detail::WholeSum(dst, src,
                        twin_detail::MaskOf<T, isSetMask>("WholeReduceSum", static_cast<uint64_t>(mask), repeatTime),
                        dstRepStride, srcBlkStride, srcRepStride);
}

// BlockReduce*: one result per data block (8 per repeat, dstRepStride in units of 8 elements).
// PairReduceSum: one per lane pair (dstRepStride in units of 128 bytes). Note the argument order:
// repeatTime before mask.
#define MS_OPS_TWIN_GROUPED(Name, group, unit, expr)                                                             \
  template <typename T, bool isSetMask = true>                                                                   \
  inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t repeatTime,               \
                   const uint64_t mask[], const int32_t dstRepStride, const int32_t srcBlkStride,                \
                   const int32_t srcRepStride) {                                                                 \
    twin_detail::Grouped(#Name, dst, src, twin_detail::MaskOf<T, isSetMask>(#Name, mask, repeatTime), group, unit, \
                         dstRepStride, srcBlkStride, srcRepStride, [](auto a, auto b) { return expr; });         \
  }                                                                                                              \
  template <typename T, bool isSetMask = true>                                                                   \
  inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t repeatTime,               \
                   const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,                   \
                   const int32_t srcRepStride) {                                                                 \
    twin_detail::Grouped(#Name, dst, src,                                                                        \
                         twin_detail::MaskOf<T, isSetMask>(#Name, static_cast<uint64_t>(mask), repeatTime), group, \
                         unit, dstRepStride, srcBlkStride, srcRepStride, [](auto a, auto b) { return expr; });   \
  }
MS_OPS_TWIN_GROUPED(BlockReduceMax, ONE_BLK_SIZE / sizeof(T), 8, a > b ? a : b)
MS_OPS_TWIN_GROUPED(BlockReduceMin, ONE_BLK_SIZE / sizeof(T), 8, a < b ? a : b)
MS_OPS_TWIN_GROUPED(BlockReduceSum, ONE_BLK_SIZE / sizeof(T), 8, a + b)
MS_OPS_TWIN_GROUPED(PairReduceSum, 2, 128 / sizeof(T), a + b)
#undef MS_OPS_TWIN_GROUPED

}  // namespace AscendC

#endif  // MS_OPS_TWIN_REDUCE_H_
