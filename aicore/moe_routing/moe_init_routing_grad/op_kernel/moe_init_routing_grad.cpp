// moe_init_routing_grad: the MoeInitRoutingV2Grad backward.
//
// grad_x[r] = sum over k < K of grad_expanded_x[expanded_row_idx[r*K + k]], skipping -1 (dropped)
// and indices at or past the rows of grad_expanded_x (dropless active truncation). Each block owns
// a contiguous range of rows; a row gathers its K source rows through UB and accumulates them in
// fp32 in k order, so the result does not depend on the tiling.
#include "../../../common/kernel_utils.h"
#include "moe_init_routing_grad_tiling_data.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

template <typename T>
class MoeInitRoutingGradKernel {
  // fp32 accumulates in the output buffer itself; fp16/bf16 need an fp32 accumulator and a cast.
  static constexpr bool kFloat = AscendC::IsSameType<T, float>::value;

 public:
  __aicore__ inline MoeInitRoutingGradKernel() {}

  __aicore__ inline void Init(GM_ADDR gradExpandedX, GM_ADDR expandedRowIdx, GM_ADDR gradX,
                              const MoeInitRoutingGradTilingData &tiling, TPipe *pipe) {
    t_ = tiling;
    pipe_ = pipe;
    gradGm_.SetGlobalBuffer((__gm__ T *)gradExpandedX, t_.gradRows * t_.hidden);
    idsGm_.SetGlobalBuffer((__gm__ int32_t *)expandedRowIdx, t_.rows * t_.topK);
    outGm_.SetGlobalBuffer((__gm__ T *)gradX, t_.rows * t_.hidden);

    const int64_t chunk = t_.hiddenChunk > 0 ? t_.hiddenChunk : 1;
    pipe_->InitBuffer(idsBuf_, UbBytes(t_.rowsPerChunk * t_.topK, sizeof(int32_t)));
    pipe_->InitBuffer(inQue_, 2, UbBytes(chunk, sizeof(T)));
    pipe_->InitBuffer(outQue_, 2, UbBytes(chunk, sizeof(T)));
    if constexpr (!kFloat) {
      pipe_->InitBuffer(accBuf_, UbBytes(chunk, sizeof(float)));
      pipe_->InitBuffer(castBuf_, UbBytes(chunk, sizeof(float)));
    }
    ids_ = idsBuf_.Get<int32_t>();

    rowBegin_ = Min64(t_.rows, GetBlockIdx() * t_.rowsPerBlock);
    rowEnd_ = Min64(t_.rows, rowBegin_ + t_.rowsPerBlock);
  }

  __aicore__ inline void Process() {
    for (int64_t r = rowBegin_; r < rowEnd_; r += t_.rowsPerChunk) {
      const int64_t rows = Min64(t_.rowsPerChunk, rowEnd_ - r);
      OrderPipes<HardEvent::S_MTE2>(pipe_);
      CopyIn(ids_, idsGm_[r * t_.topK], static_cast<uint32_t>(rows * t_.topK));
      OrderPipes<HardEvent::MTE2_S>(pipe_);
      for (int64_t j = 0; j < rows; ++j)
        for (int64_t h = 0; h < t_.hidden; h += t_.hiddenChunk)
          ReduceRow(r + j, static_cast<uint32_t>(j * t_.topK), h, static_cast<int32_t>(Min64(t_.hiddenChunk, t_.hidden - h)));
    }
  }

 private:
  // Elements [h, h + len) of grad_x row r from the sources listed at ids_[first .. first + K).
  __aicore__ inline void ReduceRow(int64_t r, uint32_t first, int64_t h, int32_t len) {
    LocalTensor<T> out = outQue_.template AllocTensor<T>();
    LocalTensor<float> acc;
    if constexpr (kFloat) {
      acc = out;
    } else {
      acc = accBuf_.Get<float>();
    }
    Duplicate(acc, 0.0f, len);
    for (int64_t k = 0; k < t_.topK; ++k) {
      const int32_t src = ids_.GetValue(first + k);
      if (src < 0 || src >= t_.gradRows) continue;
      LocalTensor<T> in = inQue_.template AllocTensor<T>();
      CopyIn(in, gradGm_[src * t_.hidden + h], len);
      inQue_.EnQue(in);
      in = inQue_.template DeQue<T>();
      PipeBarrier<PIPE_V>();
      if constexpr (kFloat) {
        Add(acc, acc, in, len);
      } else {
        LocalTensor<float> wide = castBuf_.Get<float>();
        Cast(wide, in, RoundMode::CAST_NONE, len);
        PipeBarrier<PIPE_V>();
        Add(acc, acc, wide, len);
      }
      inQue_.FreeTensor(in);
    }
    if constexpr (!kFloat) {
      PipeBarrier<PIPE_V>();
      Cast(out, acc, RoundMode::CAST_RINT, len);
    }
    outQue_.EnQue(out);
    out = outQue_.template DeQue<T>();
    CopyOut(outGm_[r * t_.hidden + h], out, len);
    outQue_.FreeTensor(out);
  }

  MoeInitRoutingGradTilingData t_;
  TPipe *pipe_ = nullptr;
  GlobalTensor<T> gradGm_, outGm_;
  GlobalTensor<int32_t> idsGm_;
  TBuf<TPosition::VECCALC> idsBuf_, accBuf_, castBuf_;
  TQue<TPosition::VECIN, 2> inQue_;
  TQue<TPosition::VECOUT, 2> outQue_;
  LocalTensor<int32_t> ids_;
  int64_t rowBegin_ = 0, rowEnd_ = 0;
};

template <typename T>
__aicore__ inline void Run(GM_ADDR gradExpandedX, GM_ADDR expandedRowIdx, GM_ADDR gradX,
                           const MoeInitRoutingGradTilingData &tiling) {
  TPipe pipe;
  MoeInitRoutingGradKernel<T> op;
  op.Init(gradExpandedX, expandedRowIdx, gradX, tiling, &pipe);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void moe_init_routing_grad(GM_ADDR gradExpandedX, GM_ADDR expandedRowIdx,
                                                            GM_ADDR gradX, GM_ADDR workspace, GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  REGISTER_TILING_DEFAULT(MoeInitRoutingGradTilingData);
  GET_TILING_DATA(tilingData, tiling);
  if (TILING_KEY_IS(kMoeInitRoutingGradKeyFloat)) {
    Run<float>(gradExpandedX, expandedRowIdx, gradX, tilingData);
  } else if (TILING_KEY_IS(kMoeInitRoutingGradKeyHalf)) {
    Run<half>(gradExpandedX, expandedRowIdx, gradX, tilingData);
  } else if (TILING_KEY_IS(kMoeInitRoutingGradKeyBFloat16)) {
    Run<bfloat16_t>(gradExpandedX, expandedRowIdx, gradX, tilingData);
  }
}
