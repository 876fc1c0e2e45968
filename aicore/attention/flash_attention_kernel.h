// Kernel-side pieces shared by flash_attention_score and flash_attention_score_grad: the visible
// key range of a query row, a head's GM offsets, and the recomputation of one probability tile
// P = exp(scale * Q Kᵀ - max) (rows of visible keys only; the rest 0) written to GM as T for the
// cube. Kernel code only (includes kernel_operator.h through kernel_utils.h).
#ifndef MS_OPS_FLASH_ATTENTION_KERNEL_H_
#define MS_OPS_FLASH_ATTENTION_KERNEL_H_

#include "../common/kernel_utils.h"
#include "flash_attention_tiling_data.h"

namespace ms_ops {
namespace kernel {

// Start of every running max: the most negative finite float, so that exp(old - new) is 0 or 1,
// never the NaN of exp(-inf - (-inf)).
constexpr float kFaLowest = -3.40282347e+38f;

// Keys [lo, hi) of tile [k0, k0 + n) that query row s sees, relative to k0; lo >= hi when none.
__aicore__ inline void FaVisible(const FlashAttentionTilingData &td, int64_t s, int64_t k0, int64_t n, int64_t &lo,
                                 int64_t &hi) {
  int64_t a = s + td.lowOffset, b = s + td.highOffset + 1;
  if (a < 0) a = 0;
  if (b > td.seq2) b = td.seq2;
  a -= k0;
  b -= k0;
  lo = a < 0 ? 0 : (a > n ? n : a);
  hi = b < 0 ? 0 : (b > n ? n : b);
}

// Whether any of query rows [q0, q0 + m) sees a key of [k0, k0 + n).
__aicore__ inline bool FaTileVisible(const FlashAttentionTilingData &td, int64_t q0, int64_t m, int64_t k0, int64_t n) {
  const int64_t first = q0 + td.lowOffset, last = q0 + m - 1 + td.highOffset;
  return last >= k0 && first <= k0 + n - 1 && last >= 0 && first <= td.seq2 - 1;
}

// Elements of a tensor with `heads` heads of `seq` rows.
__aicore__ inline uint64_t FaElems(const FlashAttentionTilingData &td, int64_t heads, int64_t seq) {
  return uint64_t(td.batch) * heads * seq * td.dim;
}

__aicore__ inline int64_t FaQBase(const FlashAttentionTilingData &td, int64_t b, int64_t n1) {
  return b * td.qStrideB + n1 * td.qStrideN;
}

__aicore__ inline int64_t FaKBase(const FlashAttentionTilingData &td, int64_t b, int64_t n1) {
  return b * td.kStrideB + (n1 / (td.heads1 / td.heads2)) * td.kStrideN;
}

// fp32 UB row into a T row (a copy for float).
template <typename T>
__aicore__ inline void FaNarrow(const AscendC::LocalTensor<T> &out, const AscendC::LocalTensor<float> &in,
                                uint32_t len) {
  if constexpr (IsSame<T, float>::value) {
    AscendC::Adds(out, in, 0.0f, len);
  } else {
    AscendC::Cast(out, in, AscendC::RoundMode::CAST_RINT, len);
  }
}

// `len` elements of a UB row into GM, any byte length.
template <typename T>
__aicore__ inline void FaCopyOut(const AscendC::GlobalTensor<T> &dst, const AscendC::LocalTensor<T> &src,
                                 uint32_t len) {
  if (len > 0) AscendC::DataCopyPad(dst, src, AscendC::DataCopyExtParams(1, len * sizeof(T), 0, 0, 0));
}

template <typename T>
__aicore__ inline void FaCopyIn(const AscendC::LocalTensor<T> &dst, const AscendC::GlobalTensor<T> &src, uint32_t len) {
  AscendC::DataCopyPad(dst, src, AscendC::DataCopyExtParams(1, len * sizeof(T), 0, 0, 0),
                       AscendC::DataCopyPadExtParams<T>(false, 0, 0, 0));
}

}  // namespace kernel
}  // namespace ms_ops

#endif  // MS_OPS_FLASH_ATTENTION_KERNEL_H_
