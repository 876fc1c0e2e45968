// cross_entropy_loss_reduce_grad (ms_ops only): the gradient of cross_entropy_loss_reduce w.r.t. the
// per-token losses. With kept[r] = (target[r] != ignore_index) and K = count (the forward's):
//   grad[r] = 0 where not kept[r], else
//             dout[r]      ("none": dout is [N])
//             dout[0]      ("sum":  dout is [1])
//             dout[0] / K  ("mean": dout is [1]; K > 0 whenever some token is kept, so nothing
//                           divides by 0 when none is: all N gradients are then 0, also for N = 0)
// One block writes every element once.
#include "../../../common/kernel_utils.h"
#include "cross_entropy_loss_reduce_grad_tiling_data.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

constexpr uint32_t kMean = 0, kNone = 2;  // CeReduction values
constexpr uint32_t kCountAt = 8;          // float offset of count in the single-values buffer

// G: dtype of target.
template <typename G>
class CrossEntropyLossReduceGradKernel {
 public:
  __aicore__ inline CrossEntropyLossReduceGradKernel() {}

  __aicore__ inline void Init(GM_ADDR dout, GM_ADDR target, GM_ADDR count, GM_ADDR grad,
                              const CrossEntropyLossReduceTilingData &td) {
    rows_ = td.rows;
    ignoreIndex_ = td.ignoreIndex;
    chunkRows_ = td.chunkRows;
    reduction_ = td.reduction;
    doutGm_.SetGlobalBuffer((__gm__ float *)dout, reduction_ == kNone ? rows_ : 1);
    targetGm_.SetGlobalBuffer((__gm__ G *)target, rows_);
    countGm_.SetGlobalBuffer((__gm__ float *)count, 1);
    gradGm_.SetGlobalBuffer((__gm__ float *)grad, rows_);
    // Within CelrUbBytes of the host tiling.
    pipe_.InitBuffer(targetQ_, 1, UbBytes(chunkRows_, sizeof(G)));
    pipe_.InitBuffer(doutQ_, 1, UbBytes(chunkRows_, 4));
    pipe_.InitBuffer(gradQ_, 1, UbBytes(chunkRows_, 4));
    pipe_.InitBuffer(scalarQ_, 1, 2 * kUbAlign);
  }

  __aicore__ inline void Process() {
    const float scale = reduction_ == kNone ? 0.0f : Scale();
    for (int64_t c0 = 0; c0 < rows_; c0 += chunkRows_) {
      const uint32_t n = static_cast<uint32_t>(Min64(rows_ - c0, chunkRows_));
      LocalTensor<G> target = targetQ_.AllocTensor<G>();
      CopyIn(target, targetGm_[c0], n);
      targetQ_.EnQue(target);
      target = targetQ_.DeQue<G>();
      LocalTensor<float> dout;
      if (reduction_ == kNone) {
        dout = doutQ_.AllocTensor<float>();
        CopyIn(dout, doutGm_[c0], n);
        doutQ_.EnQue(dout);
        dout = doutQ_.DeQue<float>();
      }
      OrderPipes<HardEvent::MTE2_S>(&pipe_);
      // Targets are int32 or int64: compared on the scalar unit, as in the forward.
      LocalTensor<float> grad = gradQ_.AllocTensor<float>();
      // The scalar unit fills it: a VECOUT AllocTensor only makes V wait for MTE3 to finish
      // copying out the buffer's previous chunk.
      OrderPipes<HardEvent::MTE3_S>(&pipe_);
      for (uint32_t i = 0; i < n; ++i) {
        const bool keep = static_cast<int64_t>(target.GetValue(i)) != ignoreIndex_;
        grad.SetValue(i, keep ? (reduction_ == kNone ? dout.GetValue(i) : scale) : 0.0f);
      }
      targetQ_.FreeTensor(target);
      if (reduction_ == kNone) doutQ_.FreeTensor(dout);
      gradQ_.EnQue(grad);
      grad = gradQ_.DeQue<float>();
      OrderPipes<HardEvent::S_MTE3>(&pipe_);
      CopyOut(gradGm_[c0], grad, n);
      gradQ_.FreeTensor(grad);
    }
  }

 private:
  // The gradient of every kept token for "sum" and "mean".
  __aicore__ inline float Scale() {
    LocalTensor<float> s = scalarQ_.AllocTensor<float>();
    CopyIn(s, doutGm_, 1);
    CopyIn(s[kCountAt], countGm_, 1);
    scalarQ_.EnQue(s);
    s = scalarQ_.DeQue<float>();
    OrderPipes<HardEvent::MTE2_S>(&pipe_);
    float scale = s.GetValue(0);
    const float counted = s.GetValue(kCountAt);
    if (reduction_ == kMean && counted > 0.0f) scale = scale / counted;
    scalarQ_.FreeTensor(s);
    return scale;
  }

  TPipe pipe_;
  TQue<QuePosition::VECIN, 1> targetQ_, doutQ_, scalarQ_;
  TQue<QuePosition::VECOUT, 1> gradQ_;
  GlobalTensor<float> doutGm_, countGm_, gradGm_;
  GlobalTensor<G> targetGm_;
  int64_t rows_ = 0, ignoreIndex_ = 0;
  uint32_t chunkRows_ = 8, reduction_ = kMean;
};

template <typename G>
__aicore__ inline void Run(GM_ADDR dout, GM_ADDR target, GM_ADDR count, GM_ADDR grad,
                           const CrossEntropyLossReduceTilingData &td) {
  CrossEntropyLossReduceGradKernel<G> op;
  op.Init(dout, target, count, grad, td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void cross_entropy_loss_reduce_grad(GM_ADDR dout, GM_ADDR target, GM_ADDR count,
                                                                     GM_ADDR grad, GM_ADDR workspace,
                                                                     GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  REGISTER_TILING_DEFAULT(CrossEntropyLossReduceTilingData);
  GET_TILING_DATA(td, tiling);
  // Literal keys, kCelrKey* in the forward's tiling data header: the dtype of target.
  if (TILING_KEY_IS(1)) {
    Run<int32_t>(dout, target, count, grad, td);
  } else if (TILING_KEY_IS(2)) {
    Run<int64_t>(dout, target, count, grad, td);
  }
}
