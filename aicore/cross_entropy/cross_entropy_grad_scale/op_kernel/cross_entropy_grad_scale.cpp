// cross_entropy_grad_scale (ms_ops only): the backward of fused_linear_cross_entropy in
// grad_in_forward mode. The forward already holds input_grad and weight_grad, the gradients of
// sum_r loss_r over the K tokens that count; the backward scales both, in place, by s:
//   s = dout[0]       ("sum")
//   s = dout[0] / K   ("mean", K = count[0])
// and writes 0 everywhere when K = 0 (no token counts: the stored gradients are 0, and a mean's
// 1/K must not turn them into NaN). fp32 arithmetic; fp16/bf16 are widened in UB and the product
// rounded once to their dtype.
//
// In place, because a scaled copy would double the memory of the gradients at the backward's
// peak, and saving that memory is the point of the mode. The stored gradients are then consumed:
// block 0 sets count to -1 once every block has read it (SyncAll), and a second backward of the
// same forward (a vjp function called twice) scales by NaN, so it cannot pass unnoticed; the CPU
// entry rejects it before launch. applied_scale[0] = s.
//
// The two gradients form one sequence of chunks (input_grad's first); each block takes an even run
// of consecutive chunks and reads and writes each element once.
#include "../../flce_grad_common.h"
#include "cross_entropy_grad_scale_tiling_data.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

constexpr uint32_t kMean = 0;     // CeReduction value
constexpr uint32_t kCountAt = 8;  // float offset of count in the single-values buffer
constexpr float kConsumed = -1.0f;  // count after a backward: the gradients are scaled already
constexpr float kNaN = __builtin_nanf("");

// T: dtype of the gradients.
template <typename T>
class CrossEntropyGradScaleKernel {
  static constexpr bool kF32 = AscendC::IsSameType<T, float>::value;

 public:
  __aicore__ inline CrossEntropyGradScaleKernel() {}

  __aicore__ inline void Init(GM_ADDR inputGrad, GM_ADDR weightGrad, GM_ADDR dout, GM_ADDR count,
                              GM_ADDR appliedScale, const CrossEntropyGradScaleTilingData &td) {
    td_ = td;
    gradGm_[0].SetGlobalBuffer((__gm__ T *)inputGrad, td.inputElems);
    gradGm_[1].SetGlobalBuffer((__gm__ T *)weightGrad, td.weightElems);
    doutGm_.SetGlobalBuffer((__gm__ float *)dout, 1);
    countGm_.SetGlobalBuffer((__gm__ float *)count, 1);
    appliedGm_.SetGlobalBuffer((__gm__ float *)appliedScale, 1);
    // Within CegsUbBytes of the host tiling.
    pipe_.InitBuffer(inQ_, 1, UbBytes(td.chunkElems, sizeof(T)));
    pipe_.InitBuffer(outQ_, 1, UbBytes(td.chunkElems, sizeof(T)));
    if constexpr (!kF32) pipe_.InitBuffer(wide_, UbBytes(td.chunkElems, 4));
    pipe_.InitBuffer(scalarQ_, 1, 2 * kUbAlign);
  }

  __aicore__ inline void Process() {
    bool zero = false;
    const float scale = Scale(&zero);
    SyncAll();
    if (GetBlockIdx() == 0) MarkConsumed(scale);
    int64_t c0 = 0, c1 = 0;
    BlockShare(td_.chunks, GetBlockIdx(), GetBlockNum(), c0, c1);
    for (int64_t c = c0; c < c1; ++c) {
      const int which = c < td_.inputChunks ? 0 : 1;
      const int64_t elems = which == 0 ? td_.inputElems : td_.weightElems;
      const int64_t at = (which == 0 ? c : c - td_.inputChunks) * int64_t(td_.chunkElems);
      const uint32_t len = static_cast<uint32_t>(Min64(elems - at, td_.chunkElems));
      if (zero) {
        ZeroChunk(gradGm_[which][at], len);
      } else {
        ScaleChunk(gradGm_[which][at], len, scale);
      }
    }
  }

 private:
  // s, or *zero = true when no token counts.
  __aicore__ inline float Scale(bool *zero) {
    LocalTensor<float> s = scalarQ_.AllocTensor<float>();
    CopyIn(s, doutGm_, 1);
    CopyIn(s[kCountAt], countGm_, 1);
    scalarQ_.EnQue(s);
    s = scalarQ_.DeQue<float>();
    OrderPipes<HardEvent::MTE2_S>(&pipe_);
    float scale = s.GetValue(0);
    const float counted = s.GetValue(kCountAt);
    scalarQ_.FreeTensor(s);
    if (counted < 0.0f) return kNaN;  // consumed by an earlier backward
    *zero = !(counted > 0.0f);
    if (*zero) return 0.0f;
    if (td_.reduction == kMean) scale = scale / counted;
    return scale;
  }

  // count := kConsumed, applied_scale := s.
  __aicore__ inline void MarkConsumed(float scale) {
    LocalTensor<float> s = scalarQ_.AllocTensor<float>();
    s.SetValue(0, kConsumed);
    s.SetValue(kCountAt, scale);
    OrderPipes<HardEvent::S_MTE3>(&pipe_);
    CopyOut(countGm_, s, 1);
    CopyOut(appliedGm_, s[kCountAt], 1);
    scalarQ_.FreeTensor(s);
  }

  __aicore__ inline void ScaleChunk(const GlobalTensor<T> &grad, uint32_t len, float scale) {
    LocalTensor<T> in = inQ_.AllocTensor<T>();
    CopyIn(in, grad, len);
    inQ_.EnQue(in);
    in = inQ_.DeQue<T>();
    LocalTensor<T> out = outQ_.AllocTensor<T>();
    if constexpr (kF32) {
      Muls(out, in, scale, int32_t(len));
    } else {
      LocalTensor<float> wide = wide_.Get<float>();
      Cast(wide, in, RoundMode::CAST_NONE, len);
      Muls(wide, wide, scale, int32_t(len));
      Cast(out, wide, RoundMode::CAST_RINT, len);
    }
    inQ_.FreeTensor(in);
    outQ_.EnQue(out);
    out = outQ_.DeQue<T>();
    CopyOut(grad, out, len);
    outQ_.FreeTensor(out);
  }

  __aicore__ inline void ZeroChunk(const GlobalTensor<T> &dst, uint32_t len) {
    LocalTensor<T> out = outQ_.AllocTensor<T>();
    // Zero bits are zero in every dtype; 16-bit lanes fill any of them.
    Duplicate(out.template ReinterpretCast<uint16_t>(), uint16_t(0), int32_t(len * sizeof(T) / 2));
    outQ_.EnQue(out);
    out = outQ_.DeQue<T>();
    CopyOut(dst, out, len);
    outQ_.FreeTensor(out);
  }

  TPipe pipe_;
  TQue<QuePosition::VECIN, 1> inQ_, scalarQ_;
  TQue<QuePosition::VECOUT, 1> outQ_;
  TBuf<TPosition::VECCALC> wide_;
  GlobalTensor<T> gradGm_[2];
  GlobalTensor<float> doutGm_, countGm_, appliedGm_;
  CrossEntropyGradScaleTilingData td_{};
};

template <typename T>
__aicore__ inline void Run(GM_ADDR inputGrad, GM_ADDR weightGrad, GM_ADDR dout, GM_ADDR count, GM_ADDR appliedScale,
                           const CrossEntropyGradScaleTilingData &td) {
  CrossEntropyGradScaleKernel<T> op;
  op.Init(inputGrad, weightGrad, dout, count, appliedScale, td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void cross_entropy_grad_scale(GM_ADDR inputGrad, GM_ADDR weightGrad, GM_ADDR dout,
                                                               GM_ADDR count, GM_ADDR appliedScale, GM_ADDR workspace,
                                                               GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  REGISTER_TILING_DEFAULT(CrossEntropyGradScaleTilingData);
  GET_TILING_DATA(td, tiling);
  // Literal keys, kCegsKey* in the tiling data header: the dtype of the gradients.
  if (TILING_KEY_IS(1)) {
    Run<float>(inputGrad, weightGrad, dout, count, appliedScale, td);
  } else if (TILING_KEY_IS(2)) {
    Run<half>(inputGrad, weightGrad, dout, count, appliedScale, td);
  } else if (TILING_KEY_IS(3)) {
    Run<bfloat16_t>(inputGrad, weightGrad, dout, count, appliedScale, td);
  }
}
