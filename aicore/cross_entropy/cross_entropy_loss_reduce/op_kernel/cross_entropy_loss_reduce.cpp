// cross_entropy_loss_reduce (ms_ops only: the reduction of fused_linear_cross_entropy's per-token
// losses). With kept[r] = (target[r] != ignore_index) and K = Σ_r kept[r]:
//   "none": out[r] = loss[r] if kept[r], else 0                     ([N])
//   "sum":  out    = Σ_r (loss[r] if kept[r], else 0)               ([1]; 0 for N = 0)
//   "mean": out    = that sum / K, NaN when K = 0 (also N = 0)      ([1]; PyTorch's 0/0)
//   count  = K as float32 ([1]), which the gradient of "mean" divides by.
// An ignored token is selected away, not multiplied by 0, so a non-finite loss on it cannot leak.
//
// One block walks the tokens in chunks; each chunk's sum is added to the total in chunk order, so
// the result is bitwise the same on every run.
#include "../../../common/kernel_utils.h"
#include "cross_entropy_loss_reduce_tiling_data.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

constexpr uint32_t kMean = 0, kNone = 2;  // CeReduction values
constexpr uint32_t kQuietNaN = 0x7FC00000u;
constexpr uint32_t kCountAt = 8;  // float offset of count in the results buffer (its own 32-byte block)

// G: dtype of target.
template <typename G>
class CrossEntropyLossReduceKernel {
 public:
  __aicore__ inline CrossEntropyLossReduceKernel() {}

  __aicore__ inline void Init(GM_ADDR loss, GM_ADDR target, GM_ADDR out, GM_ADDR count,
                              const CrossEntropyLossReduceTilingData &td) {
    rows_ = td.rows;
    ignoreIndex_ = td.ignoreIndex;
    chunkRows_ = td.chunkRows;
    reduction_ = td.reduction;
    lossGm_.SetGlobalBuffer((__gm__ float *)loss, rows_);
    targetGm_.SetGlobalBuffer((__gm__ G *)target, rows_);
    outGm_.SetGlobalBuffer((__gm__ float *)out, reduction_ == kNone ? rows_ : 1);
    countGm_.SetGlobalBuffer((__gm__ float *)count, 1);
    // Within CelrUbBytes of the host tiling.
    pipe_.InitBuffer(lossQ_, 1, UbBytes(chunkRows_, 4));
    pipe_.InitBuffer(targetQ_, 1, UbBytes(chunkRows_, sizeof(G)));
    pipe_.InitBuffer(keptQ_, 1, UbBytes(chunkRows_, 4));
    pipe_.InitBuffer(reduceTmp_, UbBytes(chunkRows_, 4));
    pipe_.InitBuffer(reduceOut_, kUbAlign);
    pipe_.InitBuffer(resultQ_, 1, 2 * kUbAlign);
  }

  __aicore__ inline void Process() {
    float total = 0.0f;
    int64_t counted = 0;
    for (int64_t c0 = 0; c0 < rows_; c0 += chunkRows_) {
      const uint32_t n = static_cast<uint32_t>(Min64(rows_ - c0, chunkRows_));
      LocalTensor<float> loss = lossQ_.AllocTensor<float>();
      LocalTensor<G> target = targetQ_.AllocTensor<G>();
      CopyIn(loss, lossGm_[c0], n);
      CopyIn(target, targetGm_[c0], n);
      lossQ_.EnQue(loss);
      targetQ_.EnQue(target);
      loss = lossQ_.DeQue<float>();
      target = targetQ_.DeQue<G>();
      OrderPipes<HardEvent::MTE2_S>(&pipe_);
      // Targets are int32 or int64: compared on the scalar unit (the vector compares take
      // neither int64 nor exact float images of every int32).
      LocalTensor<float> kept = keptQ_.AllocTensor<float>();
      // The scalar unit fills it: a VECOUT AllocTensor only makes V wait for MTE3 to finish
      // copying out the buffer's previous chunk.
      OrderPipes<HardEvent::MTE3_S>(&pipe_);
      for (uint32_t i = 0; i < n; ++i) {
        const bool keep = static_cast<int64_t>(target.GetValue(i)) != ignoreIndex_;
        kept.SetValue(i, keep ? loss.GetValue(i) : 0.0f);
        counted += keep ? 1 : 0;
      }
      lossQ_.FreeTensor(loss);
      targetQ_.FreeTensor(target);
      if (reduction_ == kNone) {
        keptQ_.EnQue(kept);
        kept = keptQ_.DeQue<float>();
        OrderPipes<HardEvent::S_MTE3>(&pipe_);
        CopyOut(outGm_[c0], kept, n);
      } else {
        OrderPipes<HardEvent::S_V>(&pipe_);
        LocalTensor<float> sum = reduceOut_.Get<float>();
        ReduceSum(sum, kept, reduceTmp_.Get<float>(), n);
        OrderPipes<HardEvent::V_S>(&pipe_);
        total += sum.GetValue(0);
      }
      keptQ_.FreeTensor(kept);
    }
    WriteResults(total, counted);
  }

 private:
  __aicore__ inline void WriteResults(float total, int64_t counted) {
    LocalTensor<float> res = resultQ_.AllocTensor<float>();
    if (reduction_ == kMean && counted == 0) {
      res.ReinterpretCast<uint32_t>().SetValue(0, kQuietNaN);
    } else {
      res.SetValue(0, reduction_ == kMean ? total / static_cast<float>(counted) : total);
    }
    res.SetValue(kCountAt, static_cast<float>(counted));
    resultQ_.EnQue(res);
    res = resultQ_.DeQue<float>();
    OrderPipes<HardEvent::S_MTE3>(&pipe_);
    if (reduction_ != kNone) CopyOut(outGm_, res, 1);
    CopyOut(countGm_, res[kCountAt], 1);
    resultQ_.FreeTensor(res);
  }

  TPipe pipe_;
  TQue<QuePosition::VECIN, 1> lossQ_, targetQ_;
  TQue<QuePosition::VECOUT, 1> keptQ_, resultQ_;
  TBuf<TPosition::VECCALC> reduceTmp_, reduceOut_;
  GlobalTensor<float> lossGm_, outGm_, countGm_;
  GlobalTensor<G> targetGm_;
  int64_t rows_ = 0, ignoreIndex_ = 0;
  uint32_t chunkRows_ = 8, reduction_ = kMean;
};

template <typename G>
__aicore__ inline void Run(GM_ADDR loss, GM_ADDR target, GM_ADDR out, GM_ADDR count,
                           const CrossEntropyLossReduceTilingData &td) {
  CrossEntropyLossReduceKernel<G> op;
  op.Init(loss, target, out, count, td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void cross_entropy_loss_reduce(GM_ADDR loss, GM_ADDR target, GM_ADDR out,
                                                                GM_ADDR count, GM_ADDR workspace, GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  REGISTER_TILING_DEFAULT(CrossEntropyLossReduceTilingData);
  GET_TILING_DATA(td, tiling);
  // Literal keys, kCelrKey* in the tiling data header: the dtype of target.
  if (TILING_KEY_IS(1)) {
    Run<int32_t>(loss, target, out, count, td);
  } else if (TILING_KEY_IS(2)) {
    Run<int64_t>(loss, target, out, count, td);
  }
}
