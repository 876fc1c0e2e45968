// paged_attention: each query token against its sequence's cached keys and values, read through
// the sequence's block table. For sequence b with context length c_b (tokens in the cache, its
// new ones included) and q_b query tokens (1 without q_seq_lens; the tokens of all sequences are
// concatenated in query's first dim), query token j of b sits at position p = c_b - q_b + j and
// sees the cache positions 0..p (causal within the new tokens). For query head n, kv head
// n / group:
//   s_k = scale * q . K_k + slope_n * (k - p)   (the ALiBi term only with alibi_slopes)
//   out = sum_k softmax(s)_k V_k,   k = 0..p,   K_k = key_cache[table[b][k / bs], k % bs, n / group]
// A row that sees no position (c_b = 0) is 0.
//
// Work item (b, kv head h): its q_b * group query rows in tiles of queryRows; for each tile the
// cache rows stream keyChunk at a time (DataCopyPad of the rows of head h, strided by N_kv * D),
// and each row keeps an online softmax (running max m, sum l, fp32 accumulator): never an S x S
// buffer, and each chunk of K/V is read once per tile for all of the group's heads.
// Scores: one strided Mul per 64 lanes of D (the query row broadcast over the chunk's rows by a
// zero repeat stride) and Sum over each row. Values: the probabilities broadcast to one block a
// row (Brcb), a strided Mul, and a pairwise tree of Adds over the rows.
#include "../../../common/kernel_utils.h"
#include "paged_attention_tiling_data.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

constexpr uint32_t kLanes = 64;        // fp32 lanes of one repeat
constexpr uint32_t kMaxAt = 0;         // stats_ offsets, one data block apart (the scalar unit
                                       // reads and writes them between vector ops)
constexpr uint32_t kSumAt = 8;
constexpr uint32_t kAlphaAt = 16;
constexpr float kNoMax = -3.0e38f;     // the running max before any score: exp(kNoMax - m) = 0

template <typename T>
class PagedAttentionKernel {
  static constexpr bool kF32 = AscendC::IsSameType<T, float>::value;

 public:
  __aicore__ inline void Init(GM_ADDR query, GM_ADDR keyCache, GM_ADDR valueCache, GM_ADDR blockTables,
                              GM_ADDR contextLens, GM_ADDR qSeqLens, GM_ADDR alibi, GM_ADDR out,
                              const PagedAttentionTilingData &td) {
    td_ = td;
    const uint64_t rows = uint64_t(td.numTokens) * td.heads * td.dim;
    const uint64_t cache = uint64_t(td.numBlocks) * td.blockSize * td.kvHeads * td.dim;
    queryGm_.SetGlobalBuffer((__gm__ T *)query, rows);
    outGm_.SetGlobalBuffer((__gm__ T *)out, rows);
    keyGm_.SetGlobalBuffer((__gm__ T *)keyCache, cache);
    valueGm_.SetGlobalBuffer((__gm__ T *)valueCache, cache);
    tableGm_.SetGlobalBuffer((__gm__ int32_t *)blockTables, uint64_t(td.batch) * td.maxBlocks);
    ctxGm_.SetGlobalBuffer((__gm__ int32_t *)contextLens, td.batch);
    qLenGm_.SetGlobalBuffer((__gm__ int32_t *)qSeqLens, td.hasQSeqLens ? td.batch : 1);
    slopeGm_.SetGlobalBuffer((__gm__ float *)alibi, td.hasAlibi ? td.heads : 1);
    p_ = td.pitch;
    const uint32_t chunk = td.keyChunk * p_;
    // Within PaUbBytes of the host tiling.
    pipe_.InitBuffer(kQ_, 1, UbBytes(chunk, sizeof(T)));
    pipe_.InitBuffer(vQ_, 1, UbBytes(chunk, sizeof(T)));
    if constexpr (!kF32) {
      pipe_.InitBuffer(kF_, chunk * 4);
      pipe_.InitBuffer(vF_, chunk * 4);
    }
    pipe_.InitBuffer(work_, chunk * 4);
    pipe_.InitBuffer(probB_, UbBytes(AlignUp8(td.keyChunk), kUbAlign));
    pipe_.InitBuffer(score_, kPaMaxKeyChunk * 4);
    pipe_.InitBuffer(index_, kPaMaxKeyChunk * 4);
    pipe_.InitBuffer(bias_, kPaMaxKeyChunk * 4);
    pipe_.InitBuffer(red_, 4 * kUbAlign);
    pipe_.InitBuffer(qIn_, 1, UbBytes(p_, sizeof(T)));
    pipe_.InitBuffer(outQ_, 1, UbBytes(p_, sizeof(T)));
    pipe_.InitBuffer(qF_, td.queryRows * p_ * 4);
    pipe_.InitBuffer(acc_, td.queryRows * p_ * 4);
    stats_ = red_.Get<float>();
    Duplicate(stats_, 0.0f, int32_t(4 * kUbAlign / 4));
    Duplicate(work_.Get<float>(), 0.0f, int32_t(chunk));
    ArithProgression(index_.Get<float>(), 0.0f, 1.0f, int32_t(kPaMaxKeyChunk));
  }

  __aicore__ inline void Process() {
    const int64_t items = td_.batch * td_.kvHeads;
    // Items run in sequence order on each block, so the query offset of sequence b (the sum of
    // the earlier sequences' query tokens) is a running sum.
    int64_t seq = 0, qStart = 0;
    for (int64_t it = GetBlockIdx(); it < items; it += GetBlockNum()) {
      const int64_t b = it / td_.kvHeads;
      for (; seq < b; ++seq) qStart += QueryLen(seq);
      Item(b, it % td_.kvHeads, qStart);
    }
  }

 private:
  __aicore__ static inline uint32_t AlignUp8(uint32_t n) { return (n + 7) / 8 * 8; }

  __aicore__ inline int64_t QueryLen(int64_t b) { return td_.hasQSeqLens ? qLenGm_.GetValue(b) : 1; }

  __aicore__ inline void Item(int64_t b, int64_t h, int64_t qStart) {
    const int64_t ctx = ctxGm_.GetValue(b), qLen = QueryLen(b);
    const int64_t rows = qLen * td_.group;
    for (int64_t r0 = 0; r0 < rows; r0 += td_.queryRows)
      Tile(b, h, qStart, ctx, qLen, r0, static_cast<uint32_t>(Min64(td_.queryRows, rows - r0)));
  }

  // Rows r0.. of item (b, h): row r is query token qStart + r / group, head h * group + r % group.
  __aicore__ inline void Tile(int64_t b, int64_t h, int64_t qStart, int64_t ctx, int64_t qLen, int64_t r0,
                              uint32_t nRows) {
    LocalTensor<float> acc = acc_.Get<float>();
    for (uint32_t i = 0; i < nRows; ++i) {
      const int64_t r = r0 + i, j = r / td_.group;
      token_[i] = qStart + j;
      head_[i] = h * td_.group + r % td_.group;
      visible_[i] = ctx - qLen + j + 1;
      slope_[i] = td_.hasAlibi ? slopeGm_.GetValue(head_[i]) : 0.0f;
      max_[i] = kNoMax;
      sum_[i] = 0.0f;
      LoadQuery(i);
    }
    Duplicate(acc, 0.0f, int32_t(nRows * p_));
    const int64_t seen = visible_[nRows - 1];  // rows are in token order: the last sees the most
    const int64_t bs = td_.blockSize;
    for (int64_t kb = 0; kb * bs < seen; ++kb) {
      const int64_t block = tableGm_.GetValue(b * td_.maxBlocks + kb);
      // The host rejects such tables; never read outside the pool.
      if (block < 0 || block >= td_.numBlocks) continue;
      for (int64_t c0 = 0; c0 < bs && kb * bs + c0 < seen; c0 += td_.keyChunk) {
        const int64_t pos0 = kb * bs + c0;
        const uint32_t n = static_cast<uint32_t>(Min64(Min64(td_.keyChunk, bs - c0), seen - pos0));
        const int64_t at = ((block * bs + c0) * td_.kvHeads + h) * td_.dim;
        LocalTensor<T> kT = LoadRows(kQ_, keyGm_[at], n);
        LocalTensor<T> vT = LoadRows(vQ_, valueGm_[at], n);
        LocalTensor<float> kf = ToFloat(kT, kF_, n * p_);
        LocalTensor<float> vf = ToFloat(vT, vF_, n * p_);
        for (uint32_t i = 0; i < nRows; ++i) {
          const int64_t m = Min64(n, visible_[i] - pos0);
          if (m > 0) RowChunk(i, kf, vf, static_cast<uint32_t>(m), pos0);
        }
        kQ_.FreeTensor(kT);
        vQ_.FreeTensor(vT);
      }
    }
    for (uint32_t i = 0; i < nRows; ++i) StoreRow(i);
  }

  // query row -> qF_ row i, fp32, times scale.
  __aicore__ inline void LoadQuery(uint32_t i) {
    const uint32_t d = static_cast<uint32_t>(td_.dim);
    LocalTensor<T> q = qIn_.AllocTensor<T>();
    CopyIn(q, queryGm_[(token_[i] * td_.heads + head_[i]) * td_.dim], d);
    qIn_.EnQue(q);
    q = qIn_.DeQue<T>();
    LocalTensor<float> qf = qF_.Get<float>()[i * p_];
    if constexpr (kF32) {
      Muls(qf, q, td_.scale, int32_t(d));
    } else {
      Cast(qf, q, RoundMode::CAST_NONE, d);
      Muls(qf, qf, td_.scale, int32_t(d));
    }
    qIn_.FreeTensor(q);
  }

  // n cache rows of one kv head (D elements, N_kv * D apart in GM) -> n rows of pitch p_.
  __aicore__ inline LocalTensor<T> LoadRows(TQue<QuePosition::VECIN, 1> &que, const GlobalTensor<T> &src,
                                            uint32_t n) {
    const uint32_t rowBytes = static_cast<uint32_t>(td_.dim * sizeof(T));
    const uint32_t gap = static_cast<uint32_t>((td_.kvHeads - 1) * td_.dim * sizeof(T));
    const uint32_t padBlocks = (p_ * sizeof(T) - (rowBytes + kUbAlign - 1) / kUbAlign * kUbAlign) / kUbAlign;
    LocalTensor<T> x = que.AllocTensor<T>();
    DataCopyPad(x, src, DataCopyExtParams(uint16_t(n), rowBytes, gap, padBlocks, 0),
                DataCopyPadExtParams<T>(false, 0, 0, 0));
    que.EnQue(x);
    return que.DeQue<T>();
  }

  // Online softmax step of row i over m cache rows starting at position pos0.
  __aicore__ inline void RowChunk(uint32_t i, const LocalTensor<float> &kf, const LocalTensor<float> &vf, uint32_t m,
                                  int64_t pos0) {
    const uint32_t d = static_cast<uint32_t>(td_.dim);
    const uint8_t stride = static_cast<uint8_t>(p_ / 8);
    LocalTensor<float> q = qF_.Get<float>()[i * p_], acc = acc_.Get<float>()[i * p_];
    LocalTensor<float> work = work_.Get<float>(), s = score_.Get<float>(), prob = probB_.Get<float>();
    for (uint32_t c = 0; c < d; c += kLanes) {
      const uint64_t lanes = d - c < kLanes ? d - c : kLanes;
      Mul(work[c], kf[c], q[c], lanes, uint8_t(m), BinaryRepeatParams(1, 1, 1, stride, stride, 0));
    }
    Sum(s, work, SumParams{m, p_, d});
    if (td_.hasAlibi) {
      LocalTensor<float> bias = bias_.Get<float>();
      const float slope = slope_[i];
      Muls(bias, index_.Get<float>(), slope, int32_t(m));
      Adds(bias, bias, slope * static_cast<float>(pos0 - (visible_[i] - 1)), int32_t(m));
      Add(s, s, bias, int32_t(m));
    }
    WholeReduceMax(stats_[kMaxAt], s, int32_t(m), 1, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);
    OrderPipes<HardEvent::V_S>(&pipe_);
    const float mx = stats_.GetValue(kMaxAt);
    const float mNew = mx > max_[i] ? mx : max_[i];
    stats_.SetValue(kAlphaAt, max_[i] - mNew);
    OrderPipes<HardEvent::S_V>(&pipe_);
    Exp(stats_[kAlphaAt], stats_[kAlphaAt], 8);
    Adds(s, s, -mNew, int32_t(m));
    Exp(s, s, m);
    WholeReduceSum(stats_[kSumAt], s, int32_t(m), 1, 1, 1, 8);
    Brcb(prob, s, uint8_t((m + 7) / 8), BrcbRepeatParams(1, 8));
    for (uint32_t c = 0; c < d; c += kLanes) {
      const uint64_t lanes = d - c < kLanes ? d - c : kLanes;
      Mul(work[c], vf[c], prob, lanes, uint8_t(m), BinaryRepeatParams(1, 1, 0, stride, stride, 1));
    }
    for (uint32_t rows = m; rows > 1;) {
      const uint32_t half = rows / 2;
      Add(work, work, work[(rows - half) * p_], int32_t(half * p_));
      rows -= half;
    }
    OrderPipes<HardEvent::V_S>(&pipe_);
    const float alpha = stats_.GetValue(kAlphaAt);
    sum_[i] = sum_[i] * alpha + stats_.GetValue(kSumAt);
    max_[i] = mNew;
    Muls(acc, acc, alpha, int32_t(d));
    Add(acc, acc, work, int32_t(d));
  }

  __aicore__ inline void StoreRow(uint32_t i) {
    const uint32_t d = static_cast<uint32_t>(td_.dim);
    LocalTensor<float> acc = acc_.Get<float>()[i * p_];
    const float inv = sum_[i] > 0.0f ? 1.0f / sum_[i] : 0.0f;
    LocalTensor<T> y = outQ_.AllocTensor<T>();
    if constexpr (kF32) {
      Muls(y, acc, inv, int32_t(d));
    } else {
      Muls(acc, acc, inv, int32_t(d));
      Cast(y, acc, RoundMode::CAST_RINT, d);
    }
    outQ_.EnQue(y);
    y = outQ_.DeQue<T>();
    CopyOut(outGm_[(token_[i] * td_.heads + head_[i]) * td_.dim], y, d);
    outQ_.FreeTensor(y);
  }

  TPipe pipe_;
  TQue<QuePosition::VECIN, 1> kQ_, vQ_, qIn_;
  TQue<QuePosition::VECOUT, 1> outQ_;
  TBuf<TPosition::VECCALC> kF_, vF_, work_, probB_, score_, index_, bias_, red_, qF_, acc_;
  LocalTensor<float> stats_;
  GlobalTensor<T> queryGm_, keyGm_, valueGm_, outGm_;
  GlobalTensor<int32_t> tableGm_, ctxGm_, qLenGm_;
  GlobalTensor<float> slopeGm_;
  PagedAttentionTilingData td_{};
  uint32_t p_ = 0;
  int64_t token_[kPaMaxQueryRows], head_[kPaMaxQueryRows], visible_[kPaMaxQueryRows];
  float slope_[kPaMaxQueryRows], max_[kPaMaxQueryRows], sum_[kPaMaxQueryRows];
};

template <typename T>
__aicore__ inline void Run(GM_ADDR query, GM_ADDR keyCache, GM_ADDR valueCache, GM_ADDR blockTables,
                           GM_ADDR contextLens, GM_ADDR qSeqLens, GM_ADDR alibi, GM_ADDR out,
                           const PagedAttentionTilingData &td) {
  PagedAttentionKernel<T> op;
  op.Init(query, keyCache, valueCache, blockTables, contextLens, qSeqLens, alibi, out, td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void paged_attention(GM_ADDR query, GM_ADDR keyCache, GM_ADDR valueCache,
                                                      GM_ADDR blockTables, GM_ADDR contextLens, GM_ADDR qSeqLens,
                                                      GM_ADDR alibiSlopes, GM_ADDR attentionOut, GM_ADDR workspace,
                                                      GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  REGISTER_TILING_DEFAULT(PagedAttentionTilingData);
  GET_TILING_DATA(td, tiling);
  // Literal keys (kPaKey*): 1 fp32, 2 fp16, 3 bf16.
  if (TILING_KEY_IS(1)) {
    Run<float>(query, keyCache, valueCache, blockTables, contextLens, qSeqLens, alibiSlopes, attentionOut, td);
  } else if (TILING_KEY_IS(2)) {
    Run<half>(query, keyCache, valueCache, blockTables, contextLens, qSeqLens, alibiSlopes, attentionOut, td);
  } else if (TILING_KEY_IS(3)) {
    Run<bfloat16_t>(query, keyCache, valueCache, blockTables, contextLens, qSeqLens, alibiSlopes, attentionOut, td);
  }
}
