// The level-0 ("high-dimensional") forms of Compare, CompareScalar and Select, and the 128-bit
// CMPMASK register they share with SetCmpMask / GetCmpMask (CANN 8.x signatures, Atlas A2 rules).
//   Compare / CompareScalar into a tensor: on Atlas A2 the mask argument is reserved and has no
//     effect (every lane of every repeat is compared, whatever the mask register holds, counter
//     mode too); repeat r's 256 / sizeof(T) result bits land end to end at byte r * lanes / 8 of
//     dst (CANN's own count form relies on this with the default dstRepStride), so only the source
//     strides apply. T: half, float, or int32_t with CMPMODE::EQ only; dst: int8_t or uint8_t.
//   Compare into CMPMASK (no dst, one repeat): the mask applies; lane e's result is bit e of the
//     register, a masked-off lane (and any bit past the repeat's lanes) reads 0.
//   Select: a set bit takes src0, a clear bit src1 (a tensor, or in mode 1 a scalar); masked-off
//     lanes keep dst. Mode 0 (VSEL_CMPMASK_SPR) loads selMask's first 16 bytes into CMPMASK and
//     every repeat uses its first lanes bits; modes 1 and 2 consume selMask end to end, repeat r
//     using bits [r * lanes, (r + 1) * lanes). The register forms (no mask argument) use the mask
//     register as SetVectorMask left it, and CMPMASK as the last Compare / SetCmpMask / mode 0 or
//     mode 1 Select left it (mode 1 leaves its scalar there, mode 2 the address of selMask).
#ifndef MS_OPS_TWIN_CMPSEL0_H_
#define MS_OPS_TWIN_CMPSEL0_H_

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <type_traits>

#include "twin_mask.h"
#include "twin_select.h"

namespace AscendC {
namespace twin_detail {

constexpr uint32_t kCmpMaskBytes = 16;

template <typename T>
inline void CompareTypes(const char *call, CMPMODE m) {
  static_assert(std::is_same_v<T, half> || std::is_same_v<T, float> || std::is_same_v<T, int32_t>,
                "Compare: Atlas A2 compares half, float or int32_t");
  if constexpr (std::is_same_v<T, int32_t>)
    if (m != CMPMODE::EQ) Fail(call, "int32_t operands compare only with CMPMODE::EQ on Atlas A2");
}

template <typename T, typename U>
constexpr void SelectTypes() {
  static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "Select: Atlas A2 selects half or float");
  static_assert(std::is_same_v<U, uint8_t> || std::is_same_v<U, uint16_t> || std::is_same_v<U, uint32_t> ||
                    std::is_same_v<U, uint64_t>,
                "Select: selMask is uint8_t, uint16_t, uint32_t or uint64_t");
}

// Every lane of `repeats` repeats of T: what the tensor form of Compare works on.
template <typename T>
inline Lanes AllLanes(uint8_t repeats) {
  constexpr uint32_t lanes = ONE_REPEAT_BYTE_SIZE / sizeof(T);
  ::ms_ops::twin::ProfileVecRepeats(repeats);
  return Lanes{lanes, repeats, false, {~0ull, lanes > 64 ? ~0ull : 0ull}, 0};
}

template <typename T>
constexpr uint32_t kBitBytes = ONE_REPEAT_BYTE_SIZE / sizeof(T) / 8;  // one repeat's result bits

// The repeats' result bits, end to end from dst's start (checked against each source first);
// on(r, e) is lane e of repeat r's result.
template <typename T, typename U, class On>
inline void PackRepeats(const char *call, const LocalTensor<U> &dst, const Lanes &l,
                        std::initializer_list<Strided<T>> srcs, On on) {
  static_assert(std::is_same_v<U, int8_t> || std::is_same_v<U, uint8_t>, "Compare: dst is int8_t or uint8_t");
  constexpr uint32_t bytes = kBitBytes<T>;
  UbAligned(call, dst.TwinData());
  const uint64_t total = uint64_t(l.repeats) * bytes;
  if (total > dst.TwinCap()) UbOutOfRange(call, total, dst.TwinCap());
  if (total == 0) return;
  for (const Strided<T> &s : srcs) Disjoint(call, dst.TwinData(), total, s.base, s.end * sizeof(T));
  UbWrite(kPipeV, call, dst.TwinData(), total);
  uint8_t *d = reinterpret_cast<uint8_t *>(dst.TwinData());
  for (uint32_t r = 0; r < l.repeats; ++r)
    for (uint32_t k = 0; k < bytes; ++k) {
      uint8_t v = 0;
      for (uint32_t j = 0; j < 8; ++j) v |= static_cast<uint8_t>(on(r, k * 8 + j)) << j;
      d[uint64_t(r) * bytes + k] = v;
    }
}

template <typename T, typename U>
inline void Compare0(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, CMPMODE m,
                     uint8_t repeatTime, const BinaryRepeatParams &p) {
  CompareTypes<T>("Compare", m);
  const Lanes l = AllLanes<T>(repeatTime);
  const Strided<T> x = Operand("Compare", src0, l, p.src0BlkStride, p.src0RepStride, false);
  const Strided<T> y = Operand("Compare", src1, l, p.src1BlkStride, p.src1RepStride, false);
  WithCmp(m, [&](auto cmp) {
    PackRepeats<T>("Compare", dst, l, {x, y}, [&](uint32_t r, uint32_t e) { return cmp(x.At(r, e), y.At(r, e)); });
  });
}

template <typename T, typename U>
inline void CompareScalar0(const LocalTensor<U> &dst, const LocalTensor<T> &src0, T s, CMPMODE m, uint8_t repeatTime,
                           const UnaryRepeatParams &p) {
  CompareTypes<T>("CompareScalar", m);
  const Lanes l = AllLanes<T>(repeatTime);
  const Strided<T> x = Operand("CompareScalar", src0, l, p.srcBlkStride, p.srcRepStride, false);
  WithCmp(m, [&](auto cmp) {
    PackRepeats<T>("CompareScalar", dst, l, {x}, [&](uint32_t r, uint32_t e) { return cmp(x.At(r, e), s); });
  });
}

// The register form: one repeat, the mask applied, the result into CMPMASK.
template <typename T>
inline void CompareToRegister(const LocalTensor<T> &src0, const LocalTensor<T> &src1, CMPMODE m, Lanes l,
                              const BinaryRepeatParams &p) {
  CompareTypes<T>("Compare", m);
  if (l.repeats != 1) Fail("Compare", "the CMPMASK form compares one repeat; counter mode asks for " + Str(l.repeats));
  const Strided<T> x = Operand("Compare", src0, l, p.src0BlkStride, p.src0RepStride, false);
  const Strided<T> y = Operand("Compare", src1, l, p.src1BlkStride, p.src1RepStride, false);
  ::ms_ops::twin::Block &b = ::ms_ops::twin::Current();
  std::memset(b.cmpMask, 0, kCmpMaskBytes);
  b.cmpMaskAddress = false;
  WithCmp(m, [&](auto cmp) {
    ForLanes(l, [&](uint32_t r, uint32_t e) {
      if (cmp(x.At(r, e), y.At(r, e))) b.cmpMask[e >> 3] |= static_cast<uint8_t>(1u << (e & 7));
    });
  });
}

// What the register form of Select reads from CMPMASK.
inline const uint8_t *CmpMaskBits(const char *what) {
  ::ms_ops::twin::Block &b = ::ms_ops::twin::Current();
  if (b.cmpMaskAddress)
    Fail("Select", std::string(what) + " reads CMPMASK, which holds a selMask address since a mode 2 Select "
                                       "(call SetCmpMask or Compare first)");
  return b.cmpMask;
}

// selMask as bits: mode 0 its first 16 bytes through CMPMASK, modes 1/2 the bits of every repeat.
template <typename U>
inline const uint8_t *SelBits(const LocalTensor<U> &selMask, SELMODE mode, const Lanes &l) {
  UbAligned("Select", selMask.TwinData());
  const uint64_t have = uint64_t(selMask.TwinCap()) * sizeof(U);
  ::ms_ops::twin::Block &b = ::ms_ops::twin::Current();
  if (mode == SELMODE::VSEL_CMPMASK_SPR) {
    if (have < kCmpMaskBytes) UbOutOfRange("Select", kCmpMaskBytes / sizeof(U), selMask.TwinCap());
    UbRead(kPipeV, "Select", selMask.TwinData(), kCmpMaskBytes);
    std::memcpy(b.cmpMask, selMask.TwinData(), kCmpMaskBytes);
    b.cmpMaskAddress = false;
    return b.cmpMask;
  }
  const uint64_t bits = l.counter ? l.count : uint64_t(l.repeats) * l.lanes, need = (bits + 7) / 8;
  if (need > have) UbOutOfRange("Select", (need + sizeof(U) - 1) / sizeof(U), selMask.TwinCap());
  if (need != 0) UbRead(kPipeV, "Select", selMask.TwinData(), need);
  return reinterpret_cast<const uint8_t *>(selMask.TwinData());
}

// dst = bit ? src0 : (src1 or the scalar) on the active lanes; `sel(r, e)` is lane e's bit.
template <typename T, class Sel>
inline void Select0(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> *src1, T scalar,
                    const Lanes &l, const BinaryRepeatParams &p, Sel sel) {
  const Strided<T> x = Operand("Select", src0, l, p.src0BlkStride, p.src0RepStride, false);
  const Strided<T> y = src1 != nullptr ? Operand("Select", *src1, l, p.src1BlkStride, p.src1RepStride, false) : x;
  const Strided<T> d = Operand("Select", dst, l, p.dstBlkStride, p.dstRepStride, true);
  Disjoint("Select", d.base, d.end * sizeof(T), x.base, x.end * sizeof(T));
  Disjoint("Select", d.base, d.end * sizeof(T), y.base, y.end * sizeof(T));
  if (src1 != nullptr) ForLanes(l, [&](uint32_t r, uint32_t e) { d.At(r, e) = sel(r, e) ? x.At(r, e) : y.At(r, e); });
  else ForLanes(l, [&](uint32_t r, uint32_t e) { d.At(r, e) = sel(r, e) ? x.At(r, e) : scalar; });
}

inline bool BitAt(const uint8_t *m, uint64_t i) { return (m[i >> 3] >> (i & 7)) & 1; }

template <typename T, typename U>
inline void SelectTensors0(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0,
                           const LocalTensor<T> &src1, SELMODE mode, const Lanes &l, const BinaryRepeatParams &p) {
  SelectTypes<T, U>();
  if (mode == SELMODE::VSEL_TENSOR_SCALAR_MODE)
    Fail("Select", "SELMODE::VSEL_TENSOR_SCALAR_MODE selects against a scalar src1, not a tensor");
  const uint8_t *m = SelBits(selMask, mode, l);
  if (mode == SELMODE::VSEL_CMPMASK_SPR) {
    Select0(dst, src0, &src1, T(), l, p, [m](uint32_t, uint32_t e) { return BitAt(m, e); });
    return;
  }
  const uint32_t lanes = l.lanes;
  Select0(dst, src0, &src1, T(), l, p,
          [m, lanes](uint32_t r, uint32_t e) { return BitAt(m, uint64_t(r) * lanes + e); });
  ::ms_ops::twin::Current().cmpMaskAddress = true;
}

template <typename T, typename U>
inline void SelectScalar0(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0, T src1,
                          SELMODE mode, const Lanes &l, const BinaryRepeatParams &p) {
  SelectTypes<T, U>();
  if (mode != SELMODE::VSEL_TENSOR_SCALAR_MODE)
    Fail("Select", "a scalar src1 needs SELMODE::VSEL_TENSOR_SCALAR_MODE");
  const uint8_t *m = SelBits(selMask, mode, l);
  const uint32_t lanes = l.lanes;
  Select0<T>(dst, src0, nullptr, src1, l, p,
             [m, lanes](uint32_t r, uint32_t e) { return BitAt(m, uint64_t(r) * lanes + e); });
  CmpMaskHolds(src1);
}

}  // namespace twin_detail

template <typename T, typename U, bool isSetMask = true>
inline void Compare(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, CMPMODE cmpMode,
                    const uint64_t mask[], uint8_t repeatTime, const BinaryRepeatParams &repeatParams) {
  twin_detail::Compare0(dst, src0, src1, cmpMode, repeatTime, repeatParams);
}
template <typename T, typename U, bool isSetMask = true>
inline void Compare(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, CMPMODE cmpMode,
                    const uint64_t mask, uint8_t repeatTime, const BinaryRepeatParams &repeatParams) {
  twin_detail::Compare0(dst, src0, src1, cmpMode, repeatTime, repeatParams);
}

template <typename T, bool isSetMask = true>
inline void Compare(const LocalTensor<T> &src0, const LocalTensor<T> &src1, CMPMODE cmpMode, const uint64_t mask[],
                    const BinaryRepeatParams &repeatParams) {
  twin_detail::CompareToRegister(src0, src1, cmpMode, twin_detail::MaskOf<T, isSetMask>("Compare", mask, 1),
                                 repeatParams);
}
template <typename T, bool isSetMask = true>
inline void Compare(const LocalTensor<T> &src0, const LocalTensor<T> &src1, CMPMODE cmpMode, const uint64_t mask,
                    const BinaryRepeatParams &repeatParams) {
  twin_detail::CompareToRegister(src0, src1, cmpMode, twin_detail::MaskOf<T, isSetMask>("Compare", mask, 1),
                                 repeatParams);
}

template <typename T, typename U, bool isSetMask = true>
inline void CompareScalar(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const T src1Scalar, CMPMODE cmpMode,
                          const uint64_t mask[], uint8_t repeatTime, const UnaryRepeatParams &repeatParams) {
  twin_detail::CompareScalar0(dst, src0, src1Scalar, cmpMode, repeatTime, repeatParams);
}
template <typename T, typename U, bool isSetMask = true>
inline void CompareScalar(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const T src1Scalar, CMPMODE cmpMode,
                          const uint64_t mask, uint8_t repeatTime, const UnaryRepeatParams &repeatParams) {
  twin_detail::CompareScalar0(dst, src0, src1Scalar, cmpMode, repeatTime, repeatParams);
}

// Compares: CANN's newer name of CompareScalar, with its three forms (messages name CompareScalar).
template <typename T, typename U>
inline void Compares(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const T src1Scalar, CMPMODE cmpMode,
                     uint32_t count) {
  CompareScalar(dst, src0, src1Scalar, cmpMode, count);
}
template <typename T, typename U, bool isSetMask = true>
inline void Compares(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const T src1Scalar, CMPMODE cmpMode,
                     const uint64_t mask[], uint8_t repeatTime, const UnaryRepeatParams &repeatParams) {
  CompareScalar<T, U, isSetMask>(dst, src0, src1Scalar, cmpMode, mask, repeatTime, repeatParams);
}
template <typename T, typename U, bool isSetMask = true>
inline void Compares(const LocalTensor<U> &dst, const LocalTensor<T> &src0, const T src1Scalar, CMPMODE cmpMode,
                     const uint64_t mask, uint8_t repeatTime, const UnaryRepeatParams &repeatParams) {
  CompareScalar<T, U, isSetMask>(dst, src0, src1Scalar, cmpMode, mask, repeatTime, repeatParams);
}

// CMPMASK from / to the first 16 bytes of a UB tensor.
template <typename T>
inline void SetCmpMask(const LocalTensor<T> &src) {
  const uint8_t *p = reinterpret_cast<const uint8_t *>(
      twin_detail::VecIn("SetCmpMask", src, (twin_detail::kCmpMaskBytes + sizeof(T) - 1) / sizeof(T)));
  ::ms_ops::twin::Block &b = ::ms_ops::twin::Current();
  std::memcpy(b.cmpMask, p, twin_detail::kCmpMaskBytes);
  b.cmpMaskAddress = false;
}
template <typename T>
inline void GetCmpMask(const LocalTensor<T> &dst) {
  uint8_t *p = reinterpret_cast<uint8_t *>(
      twin_detail::VecOut("GetCmpMask", dst, (twin_detail::kCmpMaskBytes + sizeof(T) - 1) / sizeof(T)));
  std::memcpy(p, twin_detail::CmpMaskBits("GetCmpMask"), twin_detail::kCmpMaskBytes);
}

template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0,
                   const LocalTensor<T> &src1, SELMODE selMode, const uint64_t mask[], uint8_t repeatTime,
                   const BinaryRepeatParams &repeatParams) {
  twin_detail::SelectTensors0(dst, selMask, src0, src1, selMode,
                              twin_detail::MaskOf<T, isSetMask>("Select", mask, repeatTime), repeatParams);
}
template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0,
                   const LocalTensor<T> &src1, SELMODE selMode, uint64_t mask, uint8_t repeatTime,
                   const BinaryRepeatParams &repeatParams) {
  twin_detail::SelectTensors0(dst, selMask, src0, src1, selMode,
                              twin_detail::MaskOf<T, isSetMask>("Select", mask, repeatTime), repeatParams);
}
template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0, T src1,
                   SELMODE selMode, const uint64_t mask[], uint8_t repeatTime, const BinaryRepeatParams &repeatParams) {
  twin_detail::SelectScalar0(dst, selMask, src0, src1, selMode,
                             twin_detail::MaskOf<T, isSetMask>("Select", mask, repeatTime), repeatParams);
}
template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0, T src1,
                   SELMODE selMode, uint64_t mask, uint8_t repeatTime, const BinaryRepeatParams &repeatParams) {
  twin_detail::SelectScalar0(dst, selMask, src0, src1, selMode,
                             twin_detail::MaskOf<T, isSetMask>("Select", mask, repeatTime), repeatParams);
}

// Register forms: mode 0 selects by CMPMASK's bits (mode 2 would need selMask's address in it,
// which only a mode 2 Select with a selMask puts there); mode 1 takes its scalar from CMPMASK.
template <typename T, SELMODE selMode>
inline void Select(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,
                   uint8_t repeatTime, const BinaryRepeatParams &repeatParams) {
  twin_detail::SelectTypes<T, uint8_t>();
  static_assert(selMode != SELMODE::VSEL_TENSOR_SCALAR_MODE, "Select: this register form takes two tensors");
  if (selMode == SELMODE::VSEL_TENSOR_TENSOR_MODE)
    twin_detail::Fail("Select", "the register form of SELMODE::VSEL_TENSOR_TENSOR_MODE reads selMask's address from "
                                "CMPMASK, which the twin does not model: pass selMask");
  const uint8_t *m = twin_detail::CmpMaskBits("Select");
  twin_detail::Select0(dst, src0, &src1, T(), twin_detail::MaskOf<T, false>("Select", MASK_PLACEHOLDER, repeatTime),
                       repeatParams, [m](uint32_t, uint32_t e) { return twin_detail::BitAt(m, e); });
}
template <typename T, typename U>
inline void Select(const LocalTensor<T> &dst, const LocalTensor<U> &selMask, const LocalTensor<T> &src0,
                   uint8_t repeatTime, const BinaryRepeatParams &repeatParams) {
  twin_detail::SelectTypes<T, U>();
  T scalar;
  std::memcpy(&scalar, twin_detail::CmpMaskBits("Select"), sizeof(T));
  const twin_detail::Lanes l = twin_detail::MaskOf<T, false>("Select", MASK_PLACEHOLDER, repeatTime);
  const uint8_t *m = twin_detail::SelBits(selMask, SELMODE::VSEL_TENSOR_SCALAR_MODE, l);
  const uint32_t lanes = l.lanes;
  twin_detail::Select0<T>(dst, src0, nullptr, scalar, l, repeatParams,
                       [m, lanes](uint32_t r, uint32_t e) { return twin_detail::BitAt(m, uint64_t(r) * lanes + e); });
}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_CMPSEL0_H_
