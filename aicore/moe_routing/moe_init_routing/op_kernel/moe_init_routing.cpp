// moe_init_routing: the MoeInitRoutingV2 forward.
//
// The flattened expert ids (flat i = r*K + k) are stably sorted by expert with a counting sort:
// dest(i) = start[e_i] + #{i' < i : e_i' = e_i}. Each block counts the ids of its own rows on the
// vector unit (per expert: compare, select 1/0, sum) and publishes the counts in the workspace;
// after SyncAll every block adds up the published histograms, those of the blocks before it
// apart (what its first row must skip). Without expert_num the blocks first agree on the largest
// id the same way. Every block then routes its rows: a row of x enters UB once and leaves once per
// kept destination, so the data moved is one read and up to K writes per row.
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
                              GM_ADDR tokensCount, GM_ADDR tokensBeforeCapacity, GM_ADDR workspace,
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
    // The workspace as MoeInitRoutingWorkspace lays it out: the histograms, then the largest ids.
    GM_ADDR ws = GetUserWorkspace(workspace);
    const int64_t blocks = GetBlockNum();
    histsGm_.SetGlobalBuffer((__gm__ int32_t *)ws, blocks * histEntries_);
    maxIdsGm_.SetGlobalBuffer((__gm__ int32_t *)(ws + blocks * histEntries_ * sizeof(int32_t)), blocks * 8);

    pipe_->InitBuffer(totalBuf_, histEntries_ * sizeof(int32_t));
    pipe_->InitBuffer(cursorBuf_, histEntries_ * sizeof(int32_t));
    pipe_->InitBuffer(countsBuf_, histEntries_ * sizeof(int32_t));
    // Exactly the buffers MoeInitRoutingChunkUb counts.
    const uint32_t chunkBytes = UbBytes(t_.idxChunk, sizeof(int32_t));
    pipe_->InitBuffer(idsBuf_, chunkBytes);
    pipe_->InitBuffer(rowIdxBuf_, chunkBytes);
    pipe_->InitBuffer(idsFBuf_, chunkBytes);
    pipe_->InitBuffer(selBuf_, chunkBytes);
    pipe_->InitBuffer(onesBuf_, chunkBytes);
    pipe_->InitBuffer(maskBuf_, UbBytes(t_.idxChunk / 8, 1));
    pipe_->InitBuffer(scratchBuf_, UbBytes(2 * (t_.idxChunk / kMoeInitRoutingIdLanes) + 8, sizeof(float)));
    pipe_->InitBuffer(sumsBuf_, kMoeInitRoutingHistGroup * kUbAlign);
    rowBytes_ = UbBytes(t_.hiddenChunk > 0 ? t_.hiddenChunk : 1, sizeof(T));
    pipe_->InitBuffer(rowQue_, 2, rowBytes_);
    if (dropPad_) pipe_->InitBuffer(zeroBuf_, rowBytes_);
    total_ = totalBuf_.Get<int32_t>();
    cursor_ = cursorBuf_.Get<int32_t>();
    counts_ = countsBuf_.Get<int32_t>();
    ids_ = idsBuf_.Get<int32_t>();
    rowIdx_ = rowIdxBuf_.Get<int32_t>();
    idsF_ = idsFBuf_.Get<float>();
    sel_ = selBuf_.Get<float>();
    ones_ = onesBuf_.Get<float>();
    mask_ = maskBuf_.Get<uint8_t>();
    scratch_ = scratchBuf_.Get<float>();
    sums_ = sumsBuf_.Get<float>();

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
  // total_ gets the histogram of all ids, cursor_ that of the ids before this block's rows.
  __aicore__ inline void CountIds() {
    const int64_t ownBegin = rowBegin_ * t_.topK, ownEnd = rowEnd_ * t_.topK;
    Duplicate(ones_, 1.0f, static_cast<int32_t>(t_.idxChunk));
    histSize_ = t_.expertNum > 0 ? t_.expertNum : AgreeOnMaxId(ownBegin, ownEnd) + 1;
    Duplicate(counts_, 0, histEntries_);
    if (histSize_ > 0) {
      OrderPipes<HardEvent::V_S>(pipe_);
      for (int64_t base = ownBegin; base < ownEnd; base += t_.idxChunk) {
        const uint32_t n = static_cast<uint32_t>(Min64(t_.idxChunk, ownEnd - base));
        LoadIdsAsFloat(base, n);
        CountChunk(n);
      }
    }
    // Publish this block's counts, then add up everyone's once all are there.
    OrderPipes<HardEvent::V_MTE3>(pipe_);
    OrderPipes<HardEvent::S_MTE3>(pipe_);
    CopyOut(histsGm_[GetBlockIdx() * histEntries_], counts_, histEntries_);
    PipeBarrier<PIPE_ALL>();
    SyncAll();
    Duplicate(total_, 0, histEntries_);
    Duplicate(cursor_, 0, histEntries_);
    const int64_t size = histSize_;
    for (int64_t b = 0; size > 0 && b < GetBlockNum(); ++b) {
      OrderPipes<HardEvent::V_MTE2>(pipe_);
      CopyIn(counts_, histsGm_[b * histEntries_], static_cast<uint32_t>(size));
      OrderPipes<HardEvent::MTE2_V>(pipe_);
      Add(total_, total_, counts_, static_cast<int32_t>(size));
      if (b < GetBlockIdx()) Add(cursor_, cursor_, counts_, static_cast<int32_t>(size));
    }
    OrderPipes<HardEvent::V_S>(pipe_);
  }

  // Without expert_num: the largest id of all blocks (ids at or above histCapacity count as
  // histCapacity - 1, where the NPU drops them), -1 if there is none.
  __aicore__ inline int32_t AgreeOnMaxId(int64_t ownBegin, int64_t ownEnd) {
    int32_t maxId = -1;
    for (int64_t base = ownBegin; base < ownEnd; base += t_.idxChunk) {
      const uint32_t n = static_cast<uint32_t>(Min64(t_.idxChunk, ownEnd - base));
      LoadIdsAsFloat(base, n);
      const uint32_t padded = Lanes(n);
      Mins(sel_, idsF_, static_cast<float>(t_.histCapacity - 1), static_cast<int32_t>(padded));
      ReduceMax(sums_, sel_, scratch_, static_cast<int32_t>(padded));
      OrderPipes<HardEvent::V_S>(pipe_);
      const int32_t chunkMax = static_cast<int32_t>(sums_.GetValue(0));
      maxId = chunkMax > maxId ? chunkMax : maxId;
      OrderPipes<HardEvent::S_V>(pipe_);
    }
    counts_.SetValue(0, maxId);
    OrderPipes<HardEvent::S_MTE3>(pipe_);
    CopyOut(maxIdsGm_[GetBlockIdx() * 8], counts_, 1);
    PipeBarrier<PIPE_ALL>();
    SyncAll();
    const uint32_t slots = static_cast<uint32_t>(GetBlockNum() * 8);
    CopyIn(counts_, maxIdsGm_, slots);
    OrderPipes<HardEvent::MTE2_S>(pipe_);
    for (uint32_t b = 0; b < slots; b += 8) {
      const int32_t m = counts_.GetValue(b);
      maxId = m > maxId ? m : maxId;
    }
    // counts_ is zero-filled by the vector unit next.
    OrderPipes<HardEvent::S_V>(pipe_);
    return maxId;
  }

  __aicore__ inline uint32_t Lanes(uint32_t n) const {
    return static_cast<uint32_t>((n + kMoeInitRoutingIdLanes - 1) / kMoeInitRoutingIdLanes * kMoeInitRoutingIdLanes);
  }

  // ids [base, base + n) into idsF_ as float, padded to whole repeats with -1 (no expert).
  __aicore__ inline void LoadIdsAsFloat(int64_t base, uint32_t n) {
    OrderPipes<HardEvent::V_MTE2>(pipe_);
    CopyIn(ids_, idsGm_[base], n);
    OrderPipes<HardEvent::MTE2_V>(pipe_);
    Duplicate(idsF_, -1.0f, static_cast<int32_t>(Lanes(n)));
    Cast(idsF_, ids_, RoundMode::CAST_NONE, n);
  }

  // counts_[e] += #{ids of the chunk equal to e} for every e < histSize_: one compare, select and
  // sum per expert on the vector unit; the scalar unit only collects the sums, a group at a time.
  __aicore__ inline void CountChunk(uint32_t n) {
    const uint32_t padded = Lanes(n);
    for (int64_t e0 = 0; e0 < histSize_; e0 += kMoeInitRoutingHistGroup) {
      const int64_t group = Min64(kMoeInitRoutingHistGroup, histSize_ - e0);
      for (int64_t g = 0; g < group; ++g) {
        CompareScalar(mask_, idsF_, static_cast<float>(e0 + g), CMPMODE::EQ, padded);
        Select(sel_, mask_, ones_, 0.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, padded);
        ReduceSum(sums_[static_cast<uint32_t>(g * 8)], sel_, scratch_, static_cast<int32_t>(padded));
      }
      OrderPipes<HardEvent::V_S>(pipe_);
      for (int64_t g = 0; g < group; ++g) {
        const int32_t c = static_cast<int32_t>(sums_.GetValue(static_cast<uint32_t>(g * 8)));
        counts_.SetValue(e0 + g, counts_.GetValue(e0 + g) + c);
      }
      // The next group's sums overwrite these.
      OrderPipes<HardEvent::S_V>(pipe_);
    }
  }

  __aicore__ inline void LoadIds(int64_t flatBegin, uint32_t n) {
    OrderPipes<HardEvent::S_MTE2>(pipe_);
    CopyIn(ids_, idsGm_[flatBegin], n);
    OrderPipes<HardEvent::MTE2_S>(pipe_);
  }

  // Turns the histograms into this block's next free slot per expert (cursor_): in dropless mode
  // a position in expanded_x, in drop/pad mode a rank in the expert.
  __aicore__ inline void PlaceCursors() {
    int32_t start = 0;
    for (int64_t e = 0; e < histSize_; ++e) {
      cursor_.SetValue(e, (dropPad_ ? 0 : start) + cursor_.GetValue(e));
      start += total_.GetValue(e);
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
  GlobalTensor<int32_t> idsGm_, rowIdxGm_, countsGm_, histsGm_, maxIdsGm_;
  TBuf<TPosition::VECCALC> totalBuf_, cursorBuf_, countsBuf_, idsBuf_, rowIdxBuf_, idsFBuf_, selBuf_, onesBuf_,
      maskBuf_, scratchBuf_, sumsBuf_, zeroBuf_;
  TQueBind<TPosition::VECIN, TPosition::VECOUT, 2> rowQue_;
  LocalTensor<int32_t> total_, cursor_, counts_, ids_, rowIdx_;
  LocalTensor<float> idsF_, sel_, ones_, scratch_, sums_;
  LocalTensor<uint8_t> mask_;
  int64_t flat_ = 0, rowBegin_ = 0, rowEnd_ = 0, expertBegin_ = 0, expertEnd_ = 0, histSize_ = 0;
  uint32_t histEntries_ = 0, rowBytes_ = 0;
  bool dropPad_ = false;
};

template <typename T>
__aicore__ inline void Run(GM_ADDR x, GM_ADDR expertIdx, GM_ADDR expandedX, GM_ADDR expandedRowIdx, GM_ADDR count,
                           GM_ADDR beforeCapacity, GM_ADDR workspace, const MoeInitRoutingTilingData &tiling) {
  TPipe pipe;
  MoeInitRoutingKernel<T> op;
  op.Init(x, expertIdx, expandedX, expandedRowIdx, count, beforeCapacity, workspace, tiling, &pipe);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void moe_init_routing(GM_ADDR x, GM_ADDR expertIdx, GM_ADDR expandedX,
                                                       GM_ADDR expandedRowIdx, GM_ADDR expertTokensCountOrCumsum,
                                                       GM_ADDR expertTokensBeforeCapacity, GM_ADDR workspace,
                                                       GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  REGISTER_TILING_DEFAULT(MoeInitRoutingTilingData);
  GET_TILING_DATA(tilingData, tiling);
  if (TILING_KEY_IS(kMoeInitRoutingKeyFloat)) {
    Run<float>(x, expertIdx, expandedX, expandedRowIdx, expertTokensCountOrCumsum, expertTokensBeforeCapacity, workspace,
               tilingData);
  } else if (TILING_KEY_IS(kMoeInitRoutingKeyHalf)) {
    Run<half>(x, expertIdx, expandedX, expandedRowIdx, expertTokensCountOrCumsum, expertTokensBeforeCapacity, workspace,
              tilingData);
  } else if (TILING_KEY_IS(kMoeInitRoutingKeyBFloat16)) {
    Run<bfloat16_t>(x, expertIdx, expandedX, expandedRowIdx, expertTokensCountOrCumsum, expertTokensBeforeCapacity,
                    workspace, tilingData);
  }
}
