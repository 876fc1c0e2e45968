// moe_init_routing: the MoeInitRoutingV2 forward.
//
// The flattened expert ids (flat i = r*K + k) are stably sorted by expert with a counting sort:
// dest(i) = start[e_i] + #{i' < i : e_i' = e_i}. No block waits for another: every block
// histograms all ids itself (the totals give start[e]), keeping apart the ids before its own rows
// (what its first row must skip). It then routes its rows: a row of x enters UB once and leaves
// once per kept destination, so the data moved is one read and up to K writes per row.
//
// On the NPU, ids outside [0, histCapacity) are dropped (expanded_row_idx -1); the CPU entry
// rejects them before launch.
#include "../../../common/kernel_utils.h"
#include "moe_init_routing_tiling_data.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

template <typename T>
class MoeInitRoutingKernel {
 public:
  __aicore__ inline MoeInitRoutingKernel() {}

  __aicore__ inline void Init(GM_ADDR x, GM_ADDR expertIdx, GM_ADDR expandedX, GM_ADDR expandedRowIdx,
                              GM_ADDR tokensCount, GM_ADDR tokensBeforeCapacity,
                              const MoeInitRoutingTilingData &tiling, TPipe *pipe) {
    t_ = tiling;
    pipe_ = pipe;
    flat_ = t_.rows * t_.topK;
    dropPad_ = t_.dropPadMode == 1;
    xGm_.SetGlobalBuffer((__gm__ T *)x, t_.rows * t_.hidden);
    idsGm_.SetGlobalBuffer((__gm__ int32_t *)expertIdx, flat_);
    expandedXGm_.SetGlobalBuffer((__gm__ T *)expandedX, t_.expandedRows * t_.hidden);
    rowIdxGm_.SetGlobalBuffer((__gm__ int32_t *)expandedRowIdx, flat_);
    if (t_.countMode != 0) countsGm_.SetGlobalBuffer((__gm__ int32_t *)tokensCount, t_.expertNum);
    if (t_.writeBeforeCapacity != 0) countsGm_.SetGlobalBuffer((__gm__ int32_t *)tokensBeforeCapacity, t_.expertNum);

    histEntries_ = UbBytes(t_.histCapacity, sizeof(int32_t)) / sizeof(int32_t);
    pipe_->InitBuffer(totalBuf_, histEntries_ * sizeof(int32_t));
    pipe_->InitBuffer(cursorBuf_, histEntries_ * sizeof(int32_t));
    pipe_->InitBuffer(idsBuf_, UbBytes(t_.idxChunk, sizeof(int32_t)));
    pipe_->InitBuffer(rowIdxBuf_, UbBytes(t_.idxChunk, sizeof(int32_t)));
    rowBytes_ = UbBytes(t_.hiddenChunk > 0 ? t_.hiddenChunk : 1, sizeof(T));
    pipe_->InitBuffer(rowQue_, 2, rowBytes_);
    if (dropPad_) pipe_->InitBuffer(zeroBuf_, rowBytes_);
    total_ = totalBuf_.Get<int32_t>();
    cursor_ = cursorBuf_.Get<int32_t>();
    ids_ = idsBuf_.Get<int32_t>();
    rowIdx_ = rowIdxBuf_.Get<int32_t>();

    const int64_t block = GetBlockIdx();
    rowBegin_ = Min64(t_.rows, block * t_.rowsPerBlock);
    rowEnd_ = Min64(t_.rows, rowBegin_ + t_.rowsPerBlock);
    if (dropPad_) {
      expertBegin_ = Min64(t_.expertNum, block * t_.expertsPerBlock);
      expertEnd_ = Min64(t_.expertNum, expertBegin_ + t_.expertsPerBlock);
    }
  }

  __aicore__ inline void Process() {
    CountIds();
    PlaceCursors();
    RouteRows();
    if (dropPad_) ZeroEmptySlots();
    if (GetBlockIdx() == 0 && (t_.countMode != 0 || t_.writeBeforeCapacity != 0)) WriteCounts();
  }

 private:
  // cursor_ gets the histogram of the ids before this block's rows, total_ that of the rest.
  __aicore__ inline void CountIds() {
    Duplicate(total_, 0, histEntries_);
    Duplicate(cursor_, 0, histEntries_);
    OrderPipes<HardEvent::V_S>(pipe_);
    const int64_t own = rowBegin_ * t_.topK;
    Histogram(0, own, cursor_);
    Histogram(own, flat_, total_);
    histSize_ = t_.expertNum > 0 ? t_.expertNum : maxId_ + 1;
  }

  // The hot scalar loop of the kernel: every block runs it over all R*K ids. Locals, not members,
  // so that the histogram stores cannot be taken to alias the loop's state.
  __aicore__ inline void Histogram(int64_t begin, int64_t end, const LocalTensor<int32_t> &histogram) {
    const LocalTensor<int32_t> ids = ids_, hist = histogram;
    const uint32_t limit = static_cast<uint32_t>(t_.histCapacity);
    const int64_t chunk = t_.idxChunk;
    int32_t maxId = maxId_;
    for (int64_t base = begin; base < end; base += chunk) {
      const uint32_t n = static_cast<uint32_t>(Min64(chunk, end - base));
      LoadIds(base, n);
      for (uint32_t i = 0; i < n; ++i) {
        const int32_t e = ids.GetValue(i);
        if (static_cast<uint32_t>(e) >= limit) continue;
        hist.SetValue(e, hist.GetValue(e) + 1);
        maxId = e > maxId ? e : maxId;
      }
    }
    maxId_ = maxId;
  }

  __aicore__ inline void LoadIds(int64_t flatBegin, uint32_t n) {
    OrderPipes<HardEvent::S_MTE2>(pipe_);
    CopyIn(ids_, idsGm_[flatBegin], n);
    OrderPipes<HardEvent::MTE2_S>(pipe_);
  }

  // Turns the two histograms into totals (total_) and this block's next free slot per expert
  // (cursor_): in dropless mode a position in expanded_x, in drop/pad mode a rank in the expert.
  __aicore__ inline void PlaceCursors() {
    int32_t start = 0;
    for (int64_t e = 0; e < histSize_; ++e) {
      const int32_t before = cursor_.GetValue(e);
      const int32_t count = total_.GetValue(e) + before;
      total_.SetValue(e, count);
      cursor_.SetValue(e, (dropPad_ ? 0 : start) + before);
      start += count;
    }
  }

  __aicore__ inline int32_t Destination(int32_t e) {
    if (e < 0 || e >= static_cast<int32_t>(t_.histCapacity)) return -1;
    const int32_t slot = cursor_.GetValue(e);
    cursor_.SetValue(e, slot + 1);
    if (!dropPad_) return slot;
    return slot < t_.capacity ? static_cast<int32_t>(e * t_.capacity + slot) : -1;
  }

  __aicore__ inline bool Kept(int32_t dest) const { return dest >= 0 && dest < t_.expandedRows; }

  __aicore__ inline void RouteRows() {
    const int64_t rowsPerChunk = t_.idxChunk / t_.topK;
    for (int64_t r = rowBegin_; r < rowEnd_; r += rowsPerChunk) {
      const int64_t rows = Min64(rowsPerChunk, rowEnd_ - r);
      const uint32_t n = static_cast<uint32_t>(rows * t_.topK);
      LoadIds(r * t_.topK, n);
      OrderPipes<HardEvent::MTE3_S>(pipe_);
      for (uint32_t i = 0; i < n; ++i) rowIdx_.SetValue(i, Destination(ids_.GetValue(i)));
      OrderPipes<HardEvent::S_MTE3>(pipe_);
      CopyOut(rowIdxGm_[r * t_.topK], rowIdx_, n);
      for (int64_t j = 0; j < rows; ++j) CopyRow(r + j, static_cast<uint32_t>(j * t_.topK));
    }
  }

  // Row r of x to each kept destination listed at rowIdx_[first .. first + K).
  __aicore__ inline void CopyRow(int64_t r, uint32_t first) {
    bool any = false;
    for (int64_t k = 0; k < t_.topK && !any; ++k) any = Kept(rowIdx_.GetValue(first + k));
    if (!any) return;
    for (int64_t h = 0; h < t_.hidden; h += t_.hiddenChunk) {
      const uint32_t len = static_cast<uint32_t>(Min64(t_.hiddenChunk, t_.hidden - h));
      LocalTensor<T> row = rowQue_.template AllocTensor<T>();
      CopyIn(row, xGm_[r * t_.hidden + h], len);
      rowQue_.EnQue(row);
      row = rowQue_.template DeQue<T>();
      for (int64_t k = 0; k < t_.topK; ++k) {
        const int32_t dest = rowIdx_.GetValue(first + k);
        if (Kept(dest)) CopyOut(expandedXGm_[dest * t_.hidden + h], row, len);
      }
      rowQue_.FreeTensor(row);
    }
  }

  // Drop/pad mode: slots [e, c] with c >= min(count_e, C) of this block's experts become zero.
  __aicore__ inline void ZeroEmptySlots() {
    // All-zero bits are 0.0 in every element type, so half fills bf16 too.
    LocalTensor<T> zero = zeroBuf_.Get<T>();
    if constexpr (sizeof(T) == sizeof(float)) {
      Duplicate(zero.template ReinterpretCast<float>(), 0.0f, rowBytes_ / sizeof(float));
    } else {
      Duplicate(zero.template ReinterpretCast<half>(), static_cast<half>(0), rowBytes_ / sizeof(half));
    }
    OrderPipes<HardEvent::V_MTE3>(pipe_);
    const int64_t zeroElems = rowBytes_ / sizeof(T);
    for (int64_t e = expertBegin_; e < expertEnd_; ++e) {
      const int64_t filled = Min64(total_.GetValue(e), t_.capacity);
      int64_t pos = (e * t_.capacity + filled) * t_.hidden;
      const int64_t end = (e + 1) * t_.capacity * t_.hidden;
      for (; pos < end; pos += zeroElems)
        CopyOut(expandedXGm_[pos], zero, static_cast<uint32_t>(Min64(zeroElems, end - pos)));
    }
  }

  // Block 0: per-expert counts (or their inclusive cumsum) staged in cursor_, no longer needed.
  __aicore__ inline void WriteCounts() {
    int32_t running = 0;
    for (int64_t e = 0; e < t_.expertNum; ++e) {
      const int32_t count = total_.GetValue(e);
      running += count;
      cursor_.SetValue(e, t_.countMode == 1 ? running : count);
    }
    OrderPipes<HardEvent::S_MTE3>(pipe_);
    CopyOut(countsGm_, cursor_, static_cast<uint32_t>(t_.expertNum));
  }

  MoeInitRoutingTilingData t_;
  TPipe *pipe_ = nullptr;
  GlobalTensor<T> xGm_, expandedXGm_;
  GlobalTensor<int32_t> idsGm_, rowIdxGm_, countsGm_;
  TBuf<TPosition::VECCALC> totalBuf_, cursorBuf_, idsBuf_, rowIdxBuf_, zeroBuf_;
  TQueBind<TPosition::VECIN, TPosition::VECOUT, 2> rowQue_;
  LocalTensor<int32_t> total_, cursor_, ids_, rowIdx_;
  int64_t flat_ = 0, rowBegin_ = 0, rowEnd_ = 0, expertBegin_ = 0, expertEnd_ = 0, histSize_ = 0;
  int32_t maxId_ = -1;
  uint32_t histEntries_ = 0, rowBytes_ = 0;
  bool dropPad_ = false;
};

template <typename T>
__aicore__ inline void Run(GM_ADDR x, GM_ADDR expertIdx, GM_ADDR expandedX, GM_ADDR expandedRowIdx, GM_ADDR count,
                           GM_ADDR beforeCapacity, const MoeInitRoutingTilingData &tiling) {
  TPipe pipe;
  MoeInitRoutingKernel<T> op;
  op.Init(x, expertIdx, expandedX, expandedRowIdx, count, beforeCapacity, tiling, &pipe);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void moe_init_routing(GM_ADDR x, GM_ADDR expertIdx, GM_ADDR expandedX,
                                                       GM_ADDR expandedRowIdx, GM_ADDR expertTokensCountOrCumsum,
                                                       GM_ADDR expertTokensBeforeCapacity, GM_ADDR workspace,
                                                       GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  GET_TILING_DATA_WITH_STRUCT(MoeInitRoutingTilingData, tilingData, tiling);
  if (TILING_KEY_IS(kMoeInitRoutingKeyFloat)) {
    Run<float>(x, expertIdx, expandedX, expandedRowIdx, expertTokensCountOrCumsum, expertTokensBeforeCapacity,
               tilingData);
  } else if (TILING_KEY_IS(kMoeInitRoutingKeyHalf)) {
    Run<half>(x, expertIdx, expandedX, expandedRowIdx, expertTokensCountOrCumsum, expertTokensBeforeCapacity,
              tilingData);
  } else if (TILING_KEY_IS(kMoeInitRoutingKeyBFloat16)) {
    Run<bfloat16_t>(x, expertIdx, expandedX, expandedRowIdx, expertTokensCountOrCumsum, expertTokensBeforeCapacity,
                    tilingData);
  }
}
