// The level-0 forms of Cast (mask, repeatTime, UnaryRepeatParams, isSetMask), with the count
// form's pairs and round modes (twin_cast.h). The lanes of a repeat are set by the wider of the two
// types (CANN: "the mask follows the larger sizeof"): half -> float works on 64 lanes a repeat,
// the half source covering 128 bytes of it, so contiguous operands take srcRepStride 4 and
// dstRepStride 8. Strides are in 32-byte blocks of each operand's own type.
#ifndef MS_OPS_TWIN_CAST0_H_
#define MS_OPS_TWIN_CAST0_H_

#include <cstdint>
#include <type_traits>
#include <vector>

#include "twin_cast.h"
#include "twin_mask.h"

namespace AscendC {
namespace twin_detail {

template <typename T, typename U>
using Wider = std::conditional_t<(sizeof(T) >= sizeof(U)), T, U>;

// The active source elements gathered in lane order, converted as one run, scattered to dst.
template <typename T, typename U>
inline void Cast0(const LocalTensor<T> &dst, const LocalTensor<U> &src, RoundMode m, const Lanes &l,
                  const UnaryRepeatParams &p) {
  const Strided<U> x = Operand("Cast", src, l, p.srcBlkStride, p.srcRepStride, false);
  const Strided<T> d = Operand("Cast", dst, l, p.dstBlkStride, p.dstRepStride, true);
  Disjoint("Cast", d.base, d.end * sizeof(T), x.base, x.end * sizeof(U));
  std::vector<U> in;
  in.reserve(uint64_t(l.repeats) * l.lanes);
  ForLanes(l, [&](uint32_t r, uint32_t e) { in.push_back(x.At(r, e)); });
  std::vector<T> out(in.size());
  Convert(out.data(), in.data(), static_cast<uint32_t>(in.size()), m);
  size_t i = 0;
  ForLanes(l, [&](uint32_t r, uint32_t e) { d.At(r, e) = out[i++]; });
}

}  // namespace twin_detail

template <typename T, typename U, bool isSetMask = true>
inline void Cast(const LocalTensor<T> &dst, const LocalTensor<U> &src, const RoundMode &roundMode,
                 const uint64_t mask[], const uint8_t repeatTime, const UnaryRepeatParams &repeatParams) {
  using W = twin_detail::Wider<T, U>;
  twin_detail::Cast0(dst, src, roundMode, twin_detail::MaskOf<W, isSetMask>("Cast", mask, repeatTime), repeatParams);
}
template <typename T, typename U, bool isSetMask = true>
inline void Cast(const LocalTensor<T> &dst, const LocalTensor<U> &src, const RoundMode &roundMode, const uint64_t mask,
                 const uint8_t repeatTime, const UnaryRepeatParams &repeatParams) {
  using W = twin_detail::Wider<T, U>;
  twin_detail::Cast0(dst, src, roundMode, twin_detail::MaskOf<W, isSetMask>("Cast", mask, repeatTime), repeatParams);
}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_CAST0_H_
