// Kernel helpers shared by the cross-entropy gradient kernels (fused_linear_cross_entropy_loss_grad
// and fused_linear_cross_entropy_grad_in_forward): zeroing or fp32-to-T rounding of GM ranges
// through a kernel's own UB queues. Kernel code only.
#ifndef MS_OPS_CROSS_ENTROPY_FLCE_GRAD_COMMON_H_
#define MS_OPS_CROSS_ENTROPY_FLCE_GRAD_COMMON_H_

#include "../common/kernel_utils.h"

namespace ms_ops {
namespace kernel {

// dst[0, count) = 0, through one `bufBytes` buffer of the VECOUT queue `outQ`.
template <typename U, class Q>
__aicore__ inline void ZeroGm(const AscendC::GlobalTensor<U> &dst, uint64_t count, Q &outQ, uint32_t bufBytes) {
  const uint64_t step = bufBytes / sizeof(U);
  AscendC::LocalTensor<U> zeros = outQ.template AllocTensor<U>();
  // Zero bits are zero in every dtype; 16-bit lanes fill any of them.
  AscendC::Duplicate(zeros.template ReinterpretCast<uint16_t>(), uint16_t(0), int32_t(bufBytes / 2));
  outQ.EnQue(zeros);
  zeros = outQ.template DeQue<U>();
  for (uint64_t i = 0; i < count; i += step)
    CopyOut(dst[i], zeros, static_cast<uint32_t>(count - i < step ? count - i : step));
  outQ.FreeTensor(zeros);
}

// dst[0, count) = src[0, count) rounded from fp32 to T, `bufBytes` of fp32 per pass through the
// VECIN queue `inQ` and the VECOUT queue `outQ`.
template <typename T, class QIn, class QOut>
__aicore__ inline void CastGm(const AscendC::GlobalTensor<T> &dst, const AscendC::GlobalTensor<float> &src,
                              uint64_t count, QIn &inQ, QOut &outQ, uint32_t bufBytes) {
  const uint64_t step = bufBytes / 4;
  for (uint64_t i = 0; i < count; i += step) {
    const uint32_t len = static_cast<uint32_t>(count - i < step ? count - i : step);
    AscendC::LocalTensor<float> in = inQ.template AllocTensor<float>();
    CopyIn(in, src[i], len);
    inQ.EnQue(in);
    in = inQ.template DeQue<float>();
    AscendC::LocalTensor<T> out = outQ.template AllocTensor<T>();
    AscendC::Cast(out, in, AscendC::RoundMode::CAST_RINT, len);
    inQ.FreeTensor(in);
    outQ.EnQue(out);
    out = outQ.template DeQue<T>();
    CopyOut(dst[i], out, len);
    outQ.FreeTensor(out);
  }
}

}  // namespace kernel
}  // namespace ms_ops

#endif  // MS_OPS_CROSS_ENTROPY_FLCE_GRAD_COMMON_H_
