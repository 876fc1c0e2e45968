// fused_cross_entropy_loss_with_max_sum (ops-nn FusedCrossEntropyLossWithMaxSum, plus label
// smoothing): from the global per-row statistics M = logits_max, S = sum_exp_logits (relative to
// M), P = predicted_logits (relative to M) and Z = sum_logits (of the raw logits),
//   loss[r]       = ln S[r] − (1 − α) P[r] − α (Z[r] / vocab_size − M[r])   (Z unused when α = 0)
//   softmax[r, j] = exp(logits[r, j] − M[r]) / S[r]                          (with the logits)
// The logits may be fp32, fp16 or bf16 (T); loss and softmax are fp32, computed in fp32.
//
// Blocks own contiguous rows; every output element is written once, by one block.
#include "../../../common/kernel_utils.h"
#include "fused_cross_entropy_loss_with_max_sum_tiling_data.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

// T: dtype of vocab_parallel_logits.
template <typename T>
class FusedCrossEntropyLossWithMaxSumKernel {
 public:
  __aicore__ inline FusedCrossEntropyLossWithMaxSumKernel() {}

  __aicore__ inline void Init(GM_ADDR logitsMax, GM_ADDR sumExp, GM_ADDR predicted, GM_ADDR sumLogits,
                              GM_ADDR logits, GM_ADDR loss, GM_ADDR softmax,
                              const FusedCrossEntropyLossWithMaxSumTilingData &td) {
    rows_ = td.rows;
    vocab_ = td.vocab;
    alpha_ = td.labelSmoothing;
    invVocabSize_ = td.invVocabSize;
    statRows_ = td.statRows;
    tileRows_ = td.tileRows;
    tileCols_ = td.tileCols;
    hasLogits_ = td.hasLogits != 0 && td.vocab > 0;
    const int64_t block = GetBlockIdx();
    const int64_t extra = block < td.rowsRemainder ? block : td.rowsRemainder;
    rowBegin_ = block * td.rowsPerBlock + extra;
    rowEnd_ = rowBegin_ + td.rowsPerBlock + (block < td.rowsRemainder ? 1 : 0);

    maxGm_.SetGlobalBuffer((__gm__ float *)logitsMax, rows_);
    sumExpGm_.SetGlobalBuffer((__gm__ float *)sumExp, rows_);
    predGm_.SetGlobalBuffer((__gm__ float *)predicted, rows_);
    sumLogitsGm_.SetGlobalBuffer((__gm__ float *)sumLogits, rows_);
    lossGm_.SetGlobalBuffer((__gm__ float *)loss, rows_);
    if (hasLogits_) {
      logitsGm_.SetGlobalBuffer((__gm__ T *)logits, uint64_t(rows_) * vocab_);
      softmaxGm_.SetGlobalBuffer((__gm__ float *)softmax, uint64_t(rows_) * vocab_);
    }

    // Same sizes as FcelUbStats / FcelUbTiles in the host tiling.
    pipe_.InitBuffer(statsQ_, 1, 4 * statRows_ * 4);
    pipe_.InitBuffer(lossQ_, 1, statRows_ * 4);
    pipe_.InitBuffer(inQ_, 2, tileRows_ * UbBytes(tileCols_, sizeof(T)));
    pipe_.InitBuffer(outQ_, 2, tileRows_ * UbBytes(tileCols_, 4));
  }

  __aicore__ inline void Process() {
    for (int64_t s0 = rowBegin_; s0 < rowEnd_; s0 += statRows_) {
      const uint32_t sr = static_cast<uint32_t>(Min64(rowEnd_ - s0, statRows_));
      LocalTensor<float> stats = statsQ_.AllocTensor<float>();
      CopyIn(stats[kM * statRows_], maxGm_[s0], sr);
      CopyIn(stats[kS * statRows_], sumExpGm_[s0], sr);
      CopyIn(stats[kP * statRows_], predGm_[s0], sr);
      if (alpha_ > 0.0f) CopyIn(stats[kZ * statRows_], sumLogitsGm_[s0], sr);
      statsQ_.EnQue(stats);
      stats = statsQ_.DeQue<float>();
      Loss(stats, s0, sr);
      if (hasLogits_) Softmax(stats, s0, sr);
      statsQ_.FreeTensor(stats);
    }
  }

 private:
  // Segments of the statistics buffer, statRows_ floats each.
  enum Stat : uint32_t { kM, kS, kP, kZ };

  __aicore__ inline void Loss(const LocalTensor<float> &stats, int64_t s0, uint32_t sr) {
    LocalTensor<float> loss = lossQ_.AllocTensor<float>();
    LocalTensor<float> p = stats[kP * statRows_], z = stats[kZ * statRows_];
    Ln(loss, stats[kS * statRows_], sr);
    if (alpha_ > 0.0f) Muls(p, p, 1.0f - alpha_, sr);
    Sub(loss, loss, p, sr);
    if (alpha_ > 0.0f) {
      Muls(z, z, invVocabSize_, sr);
      Sub(z, z, stats[kM * statRows_], sr);
      Muls(z, z, alpha_, sr);
      Sub(loss, loss, z, sr);
    }
    lossQ_.EnQue(loss);
    loss = lossQ_.DeQue<float>();
    CopyOut(lossGm_[s0], loss, sr);
    lossQ_.FreeTensor(loss);
  }

  // softmax of rows [s0, s0 + sr) in tiles of tileRows_ whole rows, or of tileCols_ columns. Each
  // row starts on a 32-byte block in UB: inPitch elements apart in the input tile, pitch apart in
  // the output tile.
  __aicore__ inline void Softmax(const LocalTensor<float> &stats, int64_t s0, uint32_t sr) {
    OrderPipes<HardEvent::MTE2_S>(&pipe_);
    for (uint32_t i0 = 0; i0 < sr; i0 += tileRows_) {
      const uint32_t tr = sr - i0 < tileRows_ ? sr - i0 : tileRows_;
      for (int64_t c0 = 0; c0 < vocab_; c0 += tileCols_) {
        const uint32_t tc = static_cast<uint32_t>(Min64(vocab_ - c0, tileCols_));
        const uint64_t at = uint64_t(s0 + i0) * vocab_ + c0;
        const uint32_t pitch = UbBytes(tc, 4) / 4, inPitch = UbBytes(tc, sizeof(T)) / sizeof(T);
        LocalTensor<T> in = inQ_.AllocTensor<T>();
        DataCopyPad(in, logitsGm_[at], DataCopyExtParams(tr, tc * sizeof(T), uint32_t(vocab_ - tc) * sizeof(T), 0, 0),
                    DataCopyPadExtParams<T>(false, 0, 0, T(0)));
        inQ_.EnQue(in);
        in = inQ_.DeQue<T>();
        LocalTensor<float> out = outQ_.AllocTensor<float>();
        for (uint32_t i = 0; i < tr; ++i) {
          const float m = stats.GetValue(kM * statRows_ + i0 + i);
          const float inv = 1.0f / stats.GetValue(kS * statRows_ + i0 + i);
          if constexpr (AscendC::IsSameType<T, float>::value) {
            Adds(out[i * pitch], in[i * pitch], -m, tc);
          } else {
            Cast(out[i * pitch], in[i * inPitch], RoundMode::CAST_NONE, tc);
            Adds(out[i * pitch], out[i * pitch], -m, tc);
          }
          Exp(out[i * pitch], out[i * pitch], tc);
          Muls(out[i * pitch], out[i * pitch], inv, tc);
        }
        inQ_.FreeTensor(in);
        outQ_.EnQue(out);
        out = outQ_.DeQue<float>();
        DataCopyPad(softmaxGm_[at], out, DataCopyExtParams(tr, tc * 4, 0, uint32_t(vocab_ - tc) * 4, 0));
        outQ_.FreeTensor(out);
      }
    }
  }

  TPipe pipe_;
  TQue<QuePosition::VECIN, 1> statsQ_;
  TQue<QuePosition::VECOUT, 1> lossQ_;
  TQue<QuePosition::VECIN, 2> inQ_;
  TQue<QuePosition::VECOUT, 2> outQ_;
  GlobalTensor<float> maxGm_, sumExpGm_, predGm_, sumLogitsGm_, lossGm_, softmaxGm_;
  GlobalTensor<T> logitsGm_;

  int64_t rows_ = 0, vocab_ = 0, rowBegin_ = 0, rowEnd_ = 0;
  float alpha_ = 0.0f, invVocabSize_ = 0.0f;
  uint32_t statRows_ = 8, tileRows_ = 1, tileCols_ = 1;
  bool hasLogits_ = false;
};

template <typename T>
__aicore__ inline void Run(GM_ADDR logitsMax, GM_ADDR sumExp, GM_ADDR predicted, GM_ADDR sumLogits, GM_ADDR logits,
                           GM_ADDR loss, GM_ADDR softmax, const FusedCrossEntropyLossWithMaxSumTilingData &td) {
  FusedCrossEntropyLossWithMaxSumKernel<T> op;
  op.Init(logitsMax, sumExp, predicted, sumLogits, logits, loss, softmax, td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void fused_cross_entropy_loss_with_max_sum(GM_ADDR logitsMax, GM_ADDR sumExp,
                                                                            GM_ADDR predicted, GM_ADDR sumLogits,
                                                                            GM_ADDR logits, GM_ADDR loss,
                                                                            GM_ADDR softmax, GM_ADDR workspace,
                                                                            GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  REGISTER_TILING_DEFAULT(FusedCrossEntropyLossWithMaxSumTilingData);
  GET_TILING_DATA(td, tiling);
  // Literal keys, kFcelKey* in the tiling data header: the dtype of the logits.
  if (TILING_KEY_IS(1)) {
    Run<float>(logitsMax, sumExp, predicted, sumLogits, logits, loss, softmax, td);
  } else if (TILING_KEY_IS(2)) {
    Run<half>(logitsMax, sumExp, predicted, sumLogits, logits, loss, softmax, td);
  } else if (TILING_KEY_IS(3)) {
    Run<bfloat16_t>(logitsMax, sumExp, predicted, sumLogits, logits, loss, softmax, td);
  }
}
