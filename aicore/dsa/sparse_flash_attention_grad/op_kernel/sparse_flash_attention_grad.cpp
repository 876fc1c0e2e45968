// sparse_flash_attention_grad: d query, d key, d value, d query_rope, d key_rope of
// sparse_flash_attention, with P rebuilt from the forward's statistics over each query row's
// visible selected keys (sparse_flash_attention.cpp), D = rowsum(dO ∘ O), dS = scale·P∘(dO Vᵀ - D):
//   d[q | q_rope] = dS [K | K_rope],  dV_j = Σ P_j dO,  d[k | k_rope]_j = Σ dS_j [q | q_rope].
// The items (query row, key head) go in rounds of roundItems per block; a SyncAll ends each round.
// In round r a block computes its item: it gathers the item's G query rows and dO rows into the
// item's slot, sorts each segment of the item's visible selected keys by the block that owns their
// key rows (runs of kSfaOwnerRows rows, dealt to the blocks in turn) and then, nTile keys at a time
// (as many as a buffer of the gather queue holds), gathers the key rows into one queue buffer and
// the value rows into the other, where the cube reads them: S and dP by the cube, P and dS in UB in
// fp32 (all rows of the tile in a few vector calls) out into the slot's tiles, and d[q | q_rope] of
// its rows accumulated by the cube from the same key rows. In round r + 1 (the slots come in two
// sets) every block, as owner, takes its keys of each of round r's items in item order: the cube
// makes their key gradients dSᵀ [Q | Q_rope] and Pᵀ dO from the slot into UB, and store atomics
// add them row by row into the fp32 accumulator of the key gradients, whose rows only their owner
// touches. At the end each owner narrows its rows into d key, d key_rope and d value.
// Deterministic: a key row's adds come from one block, in the items' order, whatever the timing.
// The cube work is that of the selected pairs alone; the workspace is one fp32 accumulator of the
// key gradients and 2 x B x roundItems slots, whatever the number of query rows.
#include "../../sparse_flash_attention/sparse_flash_attention_kernel.h"
#include "lib/matmul_intf.h"

using namespace AscendC;
using namespace ms_ops::kernel;

namespace {

// GM_ADDR is a pointer type macro: one member per declaration.
struct SfagArgs {
  GM_ADDR q;
  GM_ADDR k;
  GM_ADDR v;
  GM_ADDR idx;
  GM_ADDR dy;
  GM_ADDR attnIn;
  GM_ADDR maxIn;
  GM_ADDR sumIn;
  GM_ADDR qRope;
  GM_ADDR kRope;
  GM_ADDR cumQ;
  GM_ADDR cumKv;
  GM_ADDR dq;
  GM_ADDR dk;
  GM_ADDR dv;
  GM_ADDR dqRope;
  GM_ADDR dkRope;
  GM_ADDR workspace;
};

// The key rows a segment's bucketed list holds, in its order (row r * N2 + n2 of the key tensors).
struct SfaListedRows {
  AscendC::LocalTensor<int32_t> rows;
  __aicore__ inline int64_t operator()(uint32_t j) const { return rows.GetValue(j); }
};

template <typename T>
class SparseFlashAttentionGradKernel {
  using ND = MatmulType<TPosition::GM, CubeFormat::ND, T>;
  using NDTrans = MatmulType<TPosition::GM, CubeFormat::ND, T, true>;
  using Ub = MatmulType<TPosition::VECOUT, CubeFormat::ND, T>;
  using UbTrans = MatmulType<TPosition::VECOUT, CubeFormat::ND, T, true>;
  using Acc = MatmulType<TPosition::GM, CubeFormat::ND, float>;
  using AccUb = MatmulType<TPosition::VECIN, CubeFormat::ND, float>;

 public:
  __aicore__ inline SparseFlashAttentionGradKernel() {}

  // Registered by Run with REGIST_MATMUL_OBJ before Init's InitBuffer calls.
  TPipe pipe;
  Matmul<ND, UbTrans, Acc> mmNT;    // S = Q Kᵀ and dP = dO Vᵀ, K's and V's rows in UB
  Matmul<ND, Ub, Acc> mmNN;         // dQ += dS K, K's rows in UB
  Matmul<NDTrans, ND, AccUb> mmTN;  // an owner's dV = Pᵀ dO, dK = dSᵀ Q, into UB

  __aicore__ inline void Init(const SfagArgs &a, const SparseFlashAttentionTilingData &td) {
    td_ = &td;
    const uint64_t qRows = uint64_t(td.qRows) * td.heads1, kRows = uint64_t(td.kRows) * td.heads2;
    const uint64_t ropeQ = td.ropeDim > 0 ? qRows * td.ropeDim : 1, ropeK = td.ropeDim > 0 ? kRows * td.ropeDim : 1;
    qGm_.SetGlobalBuffer((__gm__ T *)a.q, qRows * td.dim);
    kGm_.SetGlobalBuffer((__gm__ T *)a.k, kRows * td.dim);
    vGm_.SetGlobalBuffer((__gm__ T *)a.v, kRows * td.vDim);
    qRopeGm_.SetGlobalBuffer((__gm__ T *)a.qRope, ropeQ);
    kRopeGm_.SetGlobalBuffer((__gm__ T *)a.kRope, ropeK);
    idxGm_.SetGlobalBuffer((__gm__ int32_t *)a.idx, uint64_t(td.qRows) * td.heads2 * td.topK);
    dyGm_.SetGlobalBuffer((__gm__ T *)a.dy, qRows * td.vDim);
    oGm_.SetGlobalBuffer((__gm__ T *)a.attnIn, qRows * td.vDim);
    maxGm_.SetGlobalBuffer((__gm__ float *)a.maxIn, qRows);
    sumGm_.SetGlobalBuffer((__gm__ float *)a.sumIn, qRows);
    dqGm_.SetGlobalBuffer((__gm__ T *)a.dq, qRows * td.dim);
    dkGm_.SetGlobalBuffer((__gm__ T *)a.dk, kRows * td.dim);
    dvGm_.SetGlobalBuffer((__gm__ T *)a.dv, kRows * td.vDim);
    dqRopeGm_.SetGlobalBuffer((__gm__ T *)a.dqRope, ropeQ);
    dkRopeGm_.SetGlobalBuffer((__gm__ T *)a.dkRope, ropeK);
    if (td.packed || td.lengthsQ) cumQ_.SetGlobalBuffer((__gm__ int64_t *)a.cumQ, uint64_t(td.batch));
    if (td.packed || td.lengthsKv) cumKv_.SetGlobalBuffer((__gm__ int64_t *)a.cumKv, uint64_t(td.batch));
    // The workspace, in SfaGradWorkspaceFloats' order: the blocks' own parts, the slots, the
    // accumulator.
    blocks_ = GetBlockNum();
    slot_ = ms_ops::SfaGradSlotLayout(td, blocks_);
    const uint64_t own = ms_ops::SfaWorkspaceFloats(td, true);
    const uint64_t g = uint64_t(td.group), qk = uint64_t(td.qkDim);
    tilePitch_ = static_cast<uint32_t>(ms_ops::SfaGradTilePitch(td));
    tileFloats_ = g * tilePitch_;
    segPitch_ = static_cast<uint32_t>(ms_ops::SfaGradSegPitch(td));
    segFloats_ = g * segPitch_;
    __gm__ float *ws = (__gm__ float *)GetUserWorkspace(a.workspace);
    __gm__ float *mine = ws + GetBlockIdx() * own;
    sGm_.SetGlobalBuffer(mine, tileFloats_);
    dpGm_.SetGlobalBuffer(mine + tileFloats_, tileFloats_);
    accGm_.SetGlobalBuffer(mine + 2 * tileFloats_, g * qk);
    slots_ = ws + blocks_ * own;
    perRound_ = uint64_t(blocks_) * uint64_t(td.roundItems);
    keyAccGm_.SetGlobalBuffer(slots_ + 2 * perRound_ * slot_.total, ms_ops::SfaGradKeyRows(td) * ms_ops::SfaGradPitch(td));

    // Rows of fp32 as wide as a head or 8 rows of a tile (Rebuild's least chunk).
    const int64_t wide = td.qkDim > td.vDim ? td.qkDim : td.vDim, len = wide > 8 * tilePitch_ ? wide : 8 * tilePitch_;
    const uint32_t row = UbBytes(len, 4);
    chunkRows_ = RowsIn(row, tilePitch_ * 4);
    pipe.InitBuffer(inQ_, 2, row);
    pipe.InitBuffer(addQ_, 1, row);
    pipe.InitBuffer(outQ_, 1, row);
    pipe.InitBuffer(tmp_, row);
    pipe.InitBuffer(wideA_, row);
    pipe.InitBuffer(wideB_, row);
    queBytes_ = static_cast<uint32_t>(ms_ops::SfaQueueBytes(td, sizeof(T), true));
    pipe.InitBuffer(gatherQ_, 2, queBytes_);
    pipe.InitBuffer(zero_, UbBytes(int64_t(wide), sizeof(T)));
    pipe.InitBuffer(red_, kUbAlign);
    pipe.InitBuffer(idx_, UbBytes(td.idxChunk, 4));
    const uint32_t segBytes = UbBytes(td.segKeys, 4), offBytes = UbBytes(int64_t(ms_ops::SfaGradOffsetPitch(blocks_)), 4);
    pipe.InitBuffer(segPos_, segBytes);
    pipe.InitBuffer(segRows_, segBytes);
    pipe.InitBuffer(sorted_, segBytes);
    pipe.InitBuffer(offsets_, offBytes);
    pipe.InitBuffer(fill_, offBytes);
    pipe.InitBuffer(header_, offBytes);
    pipe.InitBuffer(statMax_, UbBytes(td.group, 4));
    pipe.InitBuffer(statSum_, UbBytes(td.group, 4));
    pipe.InitBuffer(dRow_, UbBytes(td.group, 4));
    cursor_.Init(&pipe, idx_, td);
    // All-zero bytes are 0 in every float type.
    Duplicate(zero_.Get<float>(), 0.0f, static_cast<int32_t>(UbBytes(int64_t(wide), sizeof(T)) / 4));
    OrderPipes<HardEvent::V_MTE3>(&pipe);
    // The rows' padding columns of gathered Q and dO in this block's slots enter the key
    // gradients' padding columns (never copied out): zeros, so that no NaN of the fresh workspace
    // travels through the cube.
    const uint64_t qPitch = ms_ops::SfaGradQPitch(td), vPitch = ms_ops::SfaGradVPitch(td);
    for (uint64_t n = 0; n < 2 * uint64_t(td.roundItems); ++n) {
      __gm__ float *slot = SlotOf(uint32_t(n % 2), GetBlockIdx() + n / 2 * blocks_);
      const GlobalTensor<T> qg = SlotQ(slot), dout = SlotDout(slot);
      for (uint32_t h = 0; h < g; ++h) {
        CopyOut(qg[h * qPitch], zero_.Get<T>(), static_cast<uint32_t>(qPitch));
        CopyOut(dout[h * vPitch], zero_.Get<T>(), static_cast<uint32_t>(vPitch));
      }
    }
  }

  __aicore__ inline void Process() {
    const SparseFlashAttentionTilingData &td = *td_;
    // Without rope parts d query_rope / d key_rope are the [1] placeholders' zeros.
    if (td.ropeDim == 0 && GetBlockIdx() == 0) {
      CopyOut(dqRopeGm_, zero_.Get<T>(), 1);
      CopyOut(dkRopeGm_, zero_.Get<T>(), 1);
    }
    ZeroOwnRows();
    const int64_t items = td.qRows * td.heads2, per = int64_t(perRound_), rounds = (items + per - 1) / per;
    // Step r: this block's items of round r (slots b, b + B, ...: the rounds' items alternate over
    // the blocks) into slot set r % 2, then its keys of round r - 1's items, whose slots (the other
    // set) were complete at the previous SyncAll.
    for (int64_t r = 0; r <= rounds; ++r) {
      for (uint64_t i = GetBlockIdx(); r < rounds && i < perRound_ && r * per + int64_t(i) < items; i += blocks_) {
        const int64_t it = r * per + int64_t(i);
        QueryItem(it / td.heads2, it % td.heads2, SlotOf(uint32_t(r % 2), i));
      }
      if (r > 0) OwnKeys(r - 1, items);
      if (r == rounds) break;
      PipeBarrier<PIPE_ALL>();
      SyncAll();
    }
    mmNT.End();
    mmNN.End();
    mmTN.End();
    PipeBarrier<PIPE_ALL>();
    NarrowOwnRows();
  }

 private:
  // Slot i of set `set` (SfaGradSlotLayout).
  __aicore__ inline __gm__ float *SlotOf(uint32_t set, uint64_t i) const {
    return slots_ + (uint64_t(set) * perRound_ + i) * slot_.total;
  }

  // `n` elements of type U at `at` 4-byte units into a slot.
  template <typename U>
  __aicore__ inline GlobalTensor<U> Part(__gm__ float *slot, uint64_t at, uint64_t n) const {
    GlobalTensor<U> x;
    x.SetGlobalBuffer((__gm__ U *)(slot + at), n);
    return x;
  }

  // The item's gathered [q | q_rope] rows (G rows SfaGradQPitch apart) and dO rows (SfaGradVPitch
  // apart) in `slot`.
  __aicore__ inline GlobalTensor<T> SlotQ(__gm__ float *slot) const {
    return Part<T>(slot, slot_.qg, slot_.dout - slot_.qg);
  }
  __aicore__ inline GlobalTensor<T> SlotDout(__gm__ float *slot) const {
    return Part<T>(slot, slot_.dout, slot_.total - slot_.dout);
  }

  // Segment `seg`'s P (at slot_.p) or dS (at slot_.ds) from its column `col` on.
  __aicore__ inline GlobalTensor<T> SegCols(__gm__ float *slot, uint64_t part, uint64_t seg, uint64_t col) const {
    return Part<T>(slot, part + seg * segFloats_, segFloats_)[col];
  }

  // The block owning key row r.
  __aicore__ inline uint32_t OwnerOf(int64_t r) const {
    return static_cast<uint32_t>((r / ms_ops::kSfaOwnerRows) % int64_t(blocks_));
  }

  // ---- an item: the group's rows of query row t against its selected keys, into `slot` ----
  __aicore__ inline void QueryItem(int64_t t, int64_t n2, __gm__ float *slot) {
    const SparseFlashAttentionTilingData &td = *td_;
    const SfaSeq sq = SfaSequenceOfRow(td, cumQ_, cumKv_, t);
    const uint32_t g = static_cast<uint32_t>(td.group), qk = static_cast<uint32_t>(td.qkDim);
    const int64_t head0 = t * td.heads1 + n2 * td.group;
    const int64_t qPitch = int64_t(ms_ops::SfaGradQPitch(td)), vPitch = int64_t(ms_ops::SfaGradVPitch(td));
    const GlobalTensor<T> qg = SlotQ(slot), dout = SlotDout(slot);
    // The previous item's and owner pass's reads of the workspace and UB rows are done.
    PipeBarrier<PIPE_ALL>();
    const uint32_t batch = static_cast<uint32_t>(td.gatherRows);
    SfaGatherRows(gatherQ_, batch, qg, qGm_, qRopeGm_, td.dim, td.ropeDim, qPitch, g, SfaLinearRows{head0, 1});
    SfaGatherRows(gatherQ_, batch, dout, dyGm_, dyGm_, td.vDim, 0, vPitch, g, SfaLinearRows{head0, 1});
    RowStats(t, n2, SfaStatBase(td, sq, t, n2));
    cursor_.Start(idxGm_[(t * td.heads2 + n2) * td.topK], SfaVisible(td, sq, t - sq.qStart));
    const GlobalTensor<int32_t> noTable;
    const SfaSelectedRows keys{&td, &noTable, &sq, segPos_.Get<int32_t>(), n2};
    const SfaListedRows listed{sorted_.Get<int32_t>()};
    const GlobalTensor<T> dy = dyGm_[head0 * td.vDim];
    const uint32_t tile = static_cast<uint32_t>(td.nTile), segKeys = static_cast<uint32_t>(td.segKeys);
    bool started = false;
    int32_t used = 0;
    for (;;) {
      const uint32_t n = cursor_.Next(segPos_.Get<int32_t>(), segKeys);
      if (n == 0) break;
      SortByOwner(keys, n, slot, used);
      for (uint32_t j0 = 0; j0 < n; j0 += tile) {
        const uint32_t nt = n - j0 < tile ? n - j0 : tile;
        const uint64_t col = uint64_t(j0 / tile) * tilePitch_;
        // The previous tile's products and copies are done with the queue buffers and the tiles.
        PipeBarrier<PIPE_ALL>();
        LocalTensor<T> k = gatherQ_.AllocTensor<T>(), v = k;
        SfaGatherToUb(k, tile, kGm_, kRopeGm_, td.dim, td.ropeDim, j0, nt, listed);
        // When value is key, dP reads the key rows' main parts.
        if (!td.valueIsKey) {
          v = gatherQ_.AllocTensor<T>();
          SfaGatherToUb(v, tile, vGm_, vGm_, td.vDim, 0, j0, nt, listed);
        }
        // The cube reads the rows where MTE2 put them.
        PipeBarrier<PIPE_ALL>();
        ScoreRows(qg, k, nt);
        DpRows(dy, v, td.valueIsKey ? td.dim : td.vDim, nt);
        if (!td.valueIsKey) gatherQ_.FreeTensor(v);
        const GlobalTensor<T> ds = SegCols(slot, slot_.ds, used, col);
        Rebuild(SegCols(slot, slot_.p, used, col), ds);
        // The cube reads dS where the copies out put it.
        PipeBarrier<PIPE_ALL>();
        QueryGrads(ds, k, nt, started);
        gatherQ_.FreeTensor(k);
        started = true;
      }
      ++used;
      if (n < segKeys) break;
    }
    // The segments' count, for the owners.
    LocalTensor<int32_t> count = header_.Get<int32_t>();
    PipeBarrier<PIPE_ALL>();
    count.SetValue(0, used);
    OrderPipes<HardEvent::S_MTE3>(&pipe);
    CopyOut(Part<int32_t>(slot, 0, 1), count, 1);
    PipeBarrier<PIPE_ALL>();
    for (uint32_t h = 0; h < g; ++h) {
      const int64_t r = head0 + h;
      WriteRow(dqGm_[r * td.dim], accGm_[uint64_t(h) * qk], td.dim, started);
      if (td.ropeDim > 0) WriteRow(dqRopeGm_[r * td.ropeDim], accGm_[uint64_t(h) * qk + td.dim], td.ropeDim, started);
    }
  }

  // The segment's n key positions (segPos_) as key rows sorted by their owners (a counting sort,
  // stable: each owner's keys keep the index list's order) into sorted_, and with the owners'
  // offsets (offsets_) out to segment `seg` of the slot.
  __aicore__ inline void SortByOwner(const SfaSelectedRows &keys, uint32_t n, __gm__ float *slot, int32_t seg) {
    const uint64_t offPitch = ms_ops::SfaGradOffsetPitch(blocks_);
    LocalTensor<int32_t> rows = segRows_.Get<int32_t>(), sorted = sorted_.Get<int32_t>();
    LocalTensor<int32_t> off = offsets_.Get<int32_t>(), fill = fill_.Get<int32_t>();
    // The previous segment's copies out of sorted_ and offsets_ are done.
    OrderPipes<HardEvent::MTE3_S>(&pipe);
    for (uint32_t o = 0; o <= blocks_; ++o) off.SetValue(o, 0);
    for (uint32_t j = 0; j < n; ++j) {
      const int64_t r = keys(j);
      rows.SetValue(j, static_cast<int32_t>(r));
      const uint32_t o = OwnerOf(r) + 1;
      off.SetValue(o, off.GetValue(o) + 1);
    }
    for (uint32_t o = 0; o < blocks_; ++o) {
      off.SetValue(o + 1, off.GetValue(o + 1) + off.GetValue(o));
      fill.SetValue(o, off.GetValue(o));
    }
    for (uint32_t j = 0; j < n; ++j) {
      const int32_t r = rows.GetValue(j);
      const uint32_t o = OwnerOf(r);
      const int32_t at = fill.GetValue(o);
      sorted.SetValue(static_cast<uint32_t>(at), r);
      fill.SetValue(o, at + 1);
    }
    OrderPipes<HardEvent::S_MTE3>(&pipe);
    CopyOut(Part<int32_t>(slot, slot_.offsets + uint64_t(seg) * offPitch, offPitch), off, blocks_ + 1);
    CopyOut(Part<int32_t>(slot, slot_.rows + uint64_t(seg) * td_->segKeys, uint64_t(td_->segKeys)), sorted, n);
  }

  // This block's keys of round `round`'s items, item by item in order: for each segment, the
  // cube's d[k | k_rope] = dSᵀ [Q | Q_rope] and dv = Pᵀ dO of those keys (as many at a time as a
  // queue buffer holds rows, and within one tile when tiles have padding columns) into the two
  // queue buffers, and each row added into the accumulator by store atomics.
  __aicore__ inline void OwnKeys(int64_t round, int64_t items) {
    const SparseFlashAttentionTilingData &td = *td_;
    const uint32_t me = GetBlockIdx(), set = static_cast<uint32_t>(round % 2);
    const uint32_t tile = static_cast<uint32_t>(td.nTile);
    const uint32_t qPitch = static_cast<uint32_t>(ms_ops::SfaGradQPitch(td));
    const uint32_t vPitch = static_cast<uint32_t>(ms_ops::SfaGradVPitch(td));
    const uint32_t qk = static_cast<uint32_t>(td.qkDim), dv = static_cast<uint32_t>(td.vDim);
    const uint32_t per = queBytes_ / ((qPitch > vPitch ? qPitch : vPitch) * 4);
    const uint64_t pitch = ms_ops::SfaGradPitch(td), offPitch = ms_ops::SfaGradOffsetPitch(blocks_);
    LocalTensor<int32_t> head = header_.Get<int32_t>(), rows = sorted_.Get<int32_t>();
    for (uint64_t i = 0; i < perRound_ && round * int64_t(perRound_) + int64_t(i) < items; ++i) {
      __gm__ float *slot = SlotOf(set, i);
      const GlobalTensor<T> qg = SlotQ(slot), dout = SlotDout(slot);
      // Every earlier read of the header and row buffers is done.
      PipeBarrier<PIPE_ALL>();
      CopyIn(head, Part<int32_t>(slot, 0, 1), 1);
      OrderPipes<HardEvent::MTE2_S>(&pipe);
      const int32_t used = head.GetValue(0);
      for (int32_t seg = 0; seg < used; ++seg) {
        OrderPipes<HardEvent::S_MTE2>(&pipe);
        CopyIn(head, Part<int32_t>(slot, slot_.offsets + uint64_t(seg) * offPitch, offPitch), blocks_ + 1);
        OrderPipes<HardEvent::MTE2_S>(&pipe);
        const uint32_t a = static_cast<uint32_t>(head.GetValue(me)), b = static_cast<uint32_t>(head.GetValue(me + 1));
        if (a == b) continue;
        OrderPipes<HardEvent::S_MTE2>(&pipe);
        CopyIn(rows, Part<int32_t>(slot, slot_.rows + uint64_t(seg) * td.segKeys + a, b - a), b - a);
        OrderPipes<HardEvent::MTE2_S>(&pipe);
        for (uint32_t j = a; j < b;) {
          // Keys j.. stay in one tile's columns unless the tiles lie back to back.
          const uint32_t inTile = j % tile, span = tile == tilePitch_ ? b - j : tile - inTile;
          const uint32_t left = b - j < span ? b - j : span, m = left < per ? left : per;
          const uint64_t col = uint64_t(j / tile) * tilePitch_ + inTile;
          LocalTensor<float> dk = gatherQ_.AllocTensor<float>(), dvUb = gatherQ_.AllocTensor<float>();
          TileProduct(m, qPitch, SegCols(slot, slot_.ds, uint64_t(seg), col), qg, dk);
          TileProduct(m, vPitch, SegCols(slot, slot_.p, uint64_t(seg), col), dout, dvUb);
          // The cube's rows have landed in UB.
          PipeBarrier<PIPE_ALL>();
          SetAtomicAdd<float>();
          for (uint32_t x = 0; x < m; ++x) {
            const GlobalTensor<float> row = keyAccGm_[uint64_t(rows.GetValue(j - a + x)) * pitch];
            CopyOut(row, dk[x * qPitch], qk);
            CopyOut(row[qPitch], dvUb[x * vPitch], dv);
          }
          SetAtomicNone();
          // The copies out have read both buffers before the next keys' products overwrite them.
          PipeBarrier<PIPE_ALL>();
          gatherQ_.FreeTensor(dk);
          gatherQ_.FreeTensor(dvUb);
          j += m;
        }
      }
    }
  }

  // C [m x n] in UB (rows n apart) = Aᵀ B: A the columns from `a` on of a segment's [G, segment
  // pitch] P or dS, B G rows of n elements.
  __aicore__ inline void TileProduct(uint32_t m, uint32_t n, const GlobalTensor<T> &a, const GlobalTensor<T> &b,
                                     const LocalTensor<float> &c) {
    const uint32_t g = static_cast<uint32_t>(td_->group);
    mmTN.SetOrgShape(segPitch_, n, g, g);
    mmTN.SetSingleShape(m, n, g);
    mmTN.SetTensorA(a, true);
    mmTN.SetTensorB(b);
    mmTN.IterateAll(c, 0);
    mmTN.End();
  }

  // The runs of kSfaOwnerRows key rows this block owns, calling f(first row, rows) for each.
  template <typename F>
  __aicore__ inline void ForOwnRuns(const F &f) const {
    const uint64_t rows = ms_ops::SfaGradKeyRows(*td_), run = uint64_t(ms_ops::kSfaOwnerRows);
    for (uint64_t r0 = GetBlockIdx() * run; r0 < rows; r0 += blocks_ * run)
      f(r0, static_cast<uint32_t>(rows - r0 < run ? rows - r0 : run));
  }

  // This block's rows of the accumulator set to zero, a queue buffer of zeros at a time.
  __aicore__ inline void ZeroOwnRows() {
    const uint64_t pitch = ms_ops::SfaGradPitch(*td_), per = queBytes_ / 4;
    LocalTensor<float> z = gatherQ_.AllocTensor<float>();
    Duplicate(z, 0.0f, static_cast<int32_t>(per));
    OrderPipes<HardEvent::V_MTE3>(&pipe);
    ForOwnRuns([&](uint64_t r0, uint32_t n) {
      const uint64_t total = n * pitch;
      for (uint64_t e0 = 0; e0 < total; e0 += per)
        CopyOut(keyAccGm_[r0 * pitch + e0], z, static_cast<uint32_t>(total - e0 < per ? total - e0 : per));
    });
    gatherQ_.FreeTensor(z);
  }

  // d key, d key_rope and d value of this block's rows: each part narrowed from the accumulator.
  __aicore__ inline void NarrowOwnRows() {
    const SparseFlashAttentionTilingData &td = *td_;
    const uint32_t qPitch = static_cast<uint32_t>(ms_ops::SfaGradQPitch(td));
    ForOwnRuns([&](uint64_t r0, uint32_t n) {
      NarrowPart(r0, n, 0, static_cast<uint32_t>(td.dim), dkGm_);
      if (td.ropeDim > 0) NarrowPart(r0, n, static_cast<uint32_t>(td.dim), static_cast<uint32_t>(td.ropeDim), dkRopeGm_);
      NarrowPart(r0, n, qPitch, static_cast<uint32_t>(td.vDim), dvGm_);
    });
  }

  // Rows r0..r0+n-1 of columns [col, col + len) of the accumulator into rows r0.. of `out`
  // ([key rows, len], as T); up to a queue buffer of rows per pass.
  __aicore__ inline void NarrowPart(uint64_t r0, uint32_t n, uint32_t col, uint32_t len, const GlobalTensor<T> &out) {
    const uint64_t pitch = ms_ops::SfaGradPitch(*td_);
    // UB rows of 16 floats' multiples: 32-byte aligned as fp32 and as T.
    const uint32_t ubPitch = (len + 15) / 16 * 16, per = queBytes_ / (ubPitch * 4);
    const uint32_t padBlocks = (ubPitch * 4 - UbBytes(len, 4)) / kUbAlign;
    const uint32_t tGap = (ubPitch * uint32_t(sizeof(T)) - UbBytes(len, sizeof(T))) / kUbAlign;
    const uint32_t gap = static_cast<uint32_t>((pitch - len) * 4);
    const DataCopyPadExtParams<float> noPad(false, 0, 0, 0);
    LocalTensor<float> acc = gatherQ_.AllocTensor<float>(), x = gatherQ_.AllocTensor<float>();
    const LocalTensor<T> y = x.template ReinterpretCast<T>();
    for (uint32_t i0 = 0; i0 < n; i0 += per) {
      const uint32_t m = n - i0 < per ? n - i0 : per;
      // The previous pass's narrowing and copy out are done with both buffers.
      OrderPipes<HardEvent::V_MTE2>(&pipe);
      OrderPipes<HardEvent::MTE3_V>(&pipe);
      DataCopyPad(acc, keyAccGm_[(r0 + i0) * pitch + col], DataCopyExtParams(m, len * 4, gap, padBlocks, 0), noPad);
      OrderPipes<HardEvent::MTE2_V>(&pipe);
      SfaNarrow(y, acc, m * ubPitch);
      OrderPipes<HardEvent::V_MTE3>(&pipe);
      DataCopyPad(out[(r0 + i0) * len], y, DataCopyExtParams(m, static_cast<uint32_t>(len * sizeof(T)), tGap, 0, 0));
    }
    gatherQ_.FreeTensor(acc);
    gatherQ_.FreeTensor(x);
  }

  // S = Q Kᵀ of the group's G gathered query rows against the tile's nt key rows in UB (`k`, laid
  // out by SfaGatherToUb), into the S tile: its main and rope parts as two products, the forward's
  // shapes (sparse_flash_attention.cpp's Scores): the recomputed scores must equal the forward's to
  // the bit, or P drifts from the statistics.
  __aicore__ inline void ScoreRows(const GlobalTensor<T> &qg, const LocalTensor<T> &k, uint32_t nt) {
    const SparseFlashAttentionTilingData &td = *td_;
    const int32_t g = static_cast<int32_t>(td.group), n = static_cast<int32_t>(nt);
    const int32_t qPitch = static_cast<int32_t>(ms_ops::SfaGradQPitch(td)), pitch = static_cast<int32_t>(tilePitch_);
    mmNT.SetOrgShape(g, n, qPitch, static_cast<int32_t>(SfaUbPitch<T>(td.dim)), pitch);
    mmNT.SetSingleShape(g, n, static_cast<int32_t>(td.dim));
    mmNT.SetTensorA(qg);
    mmNT.SetTensorB(k, true);
    mmNT.IterateAll(sGm_, 0);
    if (td.ropeDim > 0) {
      mmNT.SetOrgShape(g, n, qPitch, static_cast<int32_t>(SfaUbPitch<T>(td.ropeDim)), pitch);
      mmNT.SetSingleShape(g, n, static_cast<int32_t>(td.ropeDim));
      mmNT.SetTensorA(qg[td.dim]);
      mmNT.SetTensorB(k[td.nTile * SfaUbPitch<T>(td.dim)], true);
      mmNT.IterateAll(sGm_, 1);
    }
    mmNT.End();
  }

  // dP = dO Vᵀ of the group's G rows (dO rows vDim apart from `dy`) against the tile's nt value
  // rows in UB (the first vDim elements of rows `width` wide: the key rows when value is key), into
  // the dP tile.
  __aicore__ inline void DpRows(const GlobalTensor<T> &dy, const LocalTensor<T> &v, int64_t width, uint32_t nt) {
    const SparseFlashAttentionTilingData &td = *td_;
    const int32_t dv = static_cast<int32_t>(td.vDim), g = static_cast<int32_t>(td.group);
    mmNT.SetOrgShape(g, static_cast<int32_t>(nt), dv, static_cast<int32_t>(SfaUbPitch<T>(width)),
                     static_cast<int32_t>(tilePitch_));
    mmNT.SetSingleShape(g, static_cast<int32_t>(nt), dv);
    mmNT.SetTensorA(dy);
    mmNT.SetTensorB(v, true);
    mmNT.IterateAll(dpGm_, 0);
    mmNT.End();
  }

  // d[q | q_rope] of the group's rows += dS K over the tile (the first tile sets them): the main
  // and rope parts of the key rows in UB as two products into the accumulator's two column ranges.
  __aicore__ inline void QueryGrads(const GlobalTensor<T> &ds, const LocalTensor<T> &k, uint32_t nt, bool started) {
    const SparseFlashAttentionTilingData &td = *td_;
    const int32_t g = static_cast<int32_t>(td.group), n = static_cast<int32_t>(nt), qk = static_cast<int32_t>(td.qkDim);
    const int32_t pitch = static_cast<int32_t>(segPitch_);
    mmNN.SetOrgShape(g, static_cast<int32_t>(SfaUbPitch<T>(td.dim)), pitch, n, qk);
    mmNN.SetSingleShape(g, static_cast<int32_t>(td.dim), n);
    mmNN.SetTensorA(ds);
    mmNN.SetTensorB(k);
    mmNN.IterateAll(accGm_, started ? 1 : 0);
    if (td.ropeDim > 0) {
      mmNN.SetOrgShape(g, static_cast<int32_t>(SfaUbPitch<T>(td.ropeDim)), pitch, n, qk);
      mmNN.SetSingleShape(g, static_cast<int32_t>(td.ropeDim), n);
      mmNN.SetTensorB(k[td.nTile * SfaUbPitch<T>(td.dim)]);
      mmNN.IterateAll(accGm_[td.dim], started ? 1 : 0);
    }
    mmNN.End();
  }

  // softmax_max and 1 / softmax_sum (0 for a row without visible keys) of the group's rows of
  // (query row t, key head n2) into UB, and D = Σ dO ∘ O per row.
  __aicore__ inline void RowStats(int64_t t, int64_t n2, int64_t statOff) {
    const SparseFlashAttentionTilingData &td = *td_;
    const uint32_t dv = static_cast<uint32_t>(td.vDim);
    LocalTensor<float> red = red_.Get<float>(), dr = dRow_.Get<float>();
    LocalTensor<float> mx = statMax_.Get<float>(), sm = statSum_.Get<float>();
    for (int64_t h = 0; h < td.group; ++h) {
      const uint32_t r = static_cast<uint32_t>(h);
      mx.SetValue(r, maxGm_.GetValue(statOff + h));
      const float sum = sumGm_.GetValue(statOff + h);
      sm.SetValue(r, sum > 0.0f ? 1.0f / sum : 0.0f);
      const int64_t off = (t * td.heads1 + n2 * td.group + h) * td.vDim;
      LocalTensor<T> dy = inQ_.AllocTensor<T>();
      CopyIn(dy, dyGm_[off], dv);
      inQ_.EnQue(dy);
      dy = inQ_.DeQue<T>();
      LocalTensor<T> o = addQ_.AllocTensor<T>();
      CopyIn(o, oGm_[off], dv);
      addQ_.EnQue(o);
      o = addQ_.DeQue<T>();
      LocalTensor<float> a = ToFloat(dy, wideA_, dv), c = ToFloat(o, wideB_, dv);
      Mul(tmp_.Get<float>(), a, c, dv);
      inQ_.FreeTensor(dy);
      addQ_.FreeTensor(o);
      ReduceSum(red, tmp_.Get<float>(), wideA_.Get<float>(), dv);
      OrderPipes<HardEvent::V_S>(&pipe);
      dr.SetValue(r, red.GetValue(0));
      OrderPipes<HardEvent::S_V>(&pipe);
    }
  }

  // P = exp(scale S - max) / sum and dS = scale P ∘ (dP - D) of the group's rows over the tile (its
  // columns past the tile's keys are never read by the cube), as T for the cube into the slot's P
  // and dS of the segment from the tile's first column on (pOut, dsOut): chunkRows_ rows at a time
  // (RowsIn), each step one call for all of them, the rows' statistics broadcast by Brcb.
  __aicore__ inline void Rebuild(const GlobalTensor<T> &pOut, const GlobalTensor<T> &dsOut) {
    const SparseFlashAttentionTilingData &td = *td_;
    const uint32_t g = static_cast<uint32_t>(td.group), pitch = tilePitch_;
    const LocalTensor<float> mx = statMax_.Get<float>(), inv = statSum_.Get<float>(), dr = dRow_.Get<float>();
    const LocalTensor<float> brc = tmp_.Get<float>();
    // The statistics' scalar writes are done.
    OrderPipes<HardEvent::S_V>(&pipe);
    for (uint32_t r0 = 0; r0 < g; r0 += chunkRows_) {
      const uint32_t rows = g - r0 < chunkRows_ ? g - r0 : chunkRows_, n = rows * pitch;
      LocalTensor<float> p = inQ_.AllocTensor<float>();
      CopyIn(p, sGm_[uint64_t(r0) * pitch], n);
      inQ_.EnQue(p);
      p = inQ_.DeQue<float>();
      LocalTensor<float> ds = addQ_.AllocTensor<float>();
      CopyIn(ds, dpGm_[uint64_t(r0) * pitch], n);
      addQ_.EnQue(ds);
      ds = addQ_.DeQue<float>();
      Muls(p, p, td.scale, n);
      RowsBy<RowOp::kSub>(p, p, mx[r0], brc, rows, pitch);
      Exp(p, p, n);
      RowsBy<RowOp::kMul>(p, p, inv[r0], brc, rows, pitch);
      EmitRows(pOut[uint64_t(r0) * segPitch_], p, rows);
      RowsBy<RowOp::kSub>(ds, ds, dr[r0], brc, rows, pitch);
      Mul(ds, ds, p, n);
      Muls(ds, ds, td.scale, n);
      inQ_.FreeTensor(p);
      EmitRows(dsOut[uint64_t(r0) * segPitch_], ds, rows);
      addQ_.FreeTensor(ds);
    }
  }

  // `rows` fp32 UB rows of a tile (tilePitch_ apart) into GM as T, segPitch_ apart.
  __aicore__ inline void EmitRows(const GlobalTensor<T> &dst, const LocalTensor<float> &src, uint32_t rows) {
    LocalTensor<T> o = outQ_.AllocTensor<T>();
    SfaNarrow(o, src, rows * tilePitch_);
    outQ_.EnQue(o);
    o = outQ_.DeQue<T>();
    const uint32_t bytes = tilePitch_ * uint32_t(sizeof(T));
    DataCopyPad(dst, o, DataCopyExtParams(static_cast<uint16_t>(rows), bytes, 0, (segPitch_ - tilePitch_) * uint32_t(sizeof(T)), 0));
    outQ_.FreeTensor(o);
  }

  // A fp32 UB row into GM as T.
  __aicore__ inline void Emit(const GlobalTensor<T> &dst, const LocalTensor<float> &src, uint32_t len) {
    LocalTensor<T> o = outQ_.AllocTensor<T>();
    SfaNarrow(o, src, len);
    outQ_.EnQue(o);
    o = outQ_.DeQue<T>();
    CopyOut(dst, o, len);
    outQ_.FreeTensor(o);
  }

  // `len` fp32 accumulator elements into GM as T, or zeros when nothing was accumulated.
  __aicore__ inline void WriteRow(const GlobalTensor<T> &dst, const GlobalTensor<float> &acc, int64_t len,
                                  bool started) {
    const uint32_t n = static_cast<uint32_t>(len);
    if (!started) {
      CopyOut(dst, zero_.Get<T>(), n);
      return;
    }
    LocalTensor<float> x = inQ_.AllocTensor<float>();
    CopyIn(x, acc, n);
    inQ_.EnQue(x);
    x = inQ_.DeQue<float>();
    Emit(dst, x, n);
    inQ_.FreeTensor(x);
  }

  TQue<QuePosition::VECIN, 2> inQ_;
  TQue<QuePosition::VECIN, 1> addQ_;
  TQue<QuePosition::VECOUT, 1> outQ_;
  SfaGatherQue gatherQ_;
  TBuf<TPosition::VECCALC> tmp_, wideA_, wideB_, zero_, red_, idx_, statMax_, statSum_, dRow_;
  // A segment's key positions, their key rows, the rows sorted by owner; the owners' offsets, the
  // sort's fill points, a slot's header read back.
  TBuf<TPosition::VECCALC> segPos_, segRows_, sorted_, offsets_, fill_, header_;
  SfaKeyCursor cursor_;
  GlobalTensor<int64_t> cumQ_, cumKv_;
  GlobalTensor<int32_t> idxGm_;
  GlobalTensor<T> qGm_, kGm_, vGm_, qRopeGm_, kRopeGm_, dyGm_, oGm_, dqGm_, dkGm_, dvGm_, dqRopeGm_, dkRopeGm_;
  uint32_t queBytes_ = 0;   // bytes of a gather queue buffer (SfaQueueBytes)
  uint32_t tilePitch_ = 0;  // columns between the rows of the S, dP, P and dS tiles (SfaGradTilePitch)
  uint32_t chunkRows_ = 0;  // rows of those tiles per vector pass of Rebuild (RowsIn)
  uint32_t blocks_ = 0;     // the launch's blocks: the owners of the key rows
  uint64_t perRound_ = 0;   // items in a round: blocks_ x roundItems
  uint32_t segPitch_ = 0;   // columns between the rows of a segment's P and dS (SfaGradSegPitch)
  uint64_t tileFloats_ = 0; // 4-byte units of a [G, tilePitch_] tile of S or dP
  uint64_t segFloats_ = 0;  // 4-byte units of a segment's P or dS
  GlobalTensor<float> maxGm_, sumGm_, sGm_, dpGm_, accGm_, keyAccGm_;
  __gm__ float *slots_ = nullptr;  // the first slot (SlotOf)
  ms_ops::SfaGradSlot slot_{};
  const SparseFlashAttentionTilingData *td_ = nullptr;
};

template <typename T>
__aicore__ inline void Run(const SfagArgs &a, const SparseFlashAttentionTilingData &td) {
  SparseFlashAttentionGradKernel<T> op;
  // At kernel scope and outside any braces, before any InitBuffer: the vector core's client of
  // the cube core must live until the kernel ends.
  REGIST_MATMUL_OBJ(&op.pipe, GetSysWorkSpacePtr(), op.mmNT, &td.mmNT, op.mmNN, &td.mmNN, op.mmTN, &td.mmTN);
  op.Init(a, td);
  op.Process();
}

}  // namespace

extern "C" __global__ __aicore__ void sparse_flash_attention_grad(
    GM_ADDR query, GM_ADDR key, GM_ADDR value, GM_ADDR sparseIndices, GM_ADDR dOut, GM_ADDR attentionIn,
    GM_ADDR softmaxMax, GM_ADDR softmaxSum, GM_ADDR queryRope, GM_ADDR keyRope, GM_ADDR actualSeqQ,
    GM_ADDR actualSeqKv, GM_ADDR dQuery, GM_ADDR dKey, GM_ADDR dValue, GM_ADDR dQueryRope, GM_ADDR dKeyRope,
    GM_ADDR workspace, GM_ADDR tiling) {
  // Cube and vector work in one kernel: one AIV per AIC, so a block is one core pair.
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);
  REGISTER_TILING_DEFAULT(SparseFlashAttentionTilingData);
  GET_TILING_DATA(td, tiling);
  const SfagArgs a{query,     key,     value,      sparseIndices, dOut,   attentionIn, softmaxMax,
                   softmaxSum, queryRope, keyRope, actualSeqQ,    actualSeqKv, dQuery, dKey,
                   dValue,    dQueryRope, dKeyRope, workspace};
  // Literal keys (one binary per TILING_KEY_IS): 1 fp32, 2 fp16, 3 bf16.
  if (TILING_KEY_IS(1)) {
    Run<float>(a, td);
  } else if (TILING_KEY_IS(2)) {
    Run<half>(a, td);
  } else if (TILING_KEY_IS(3)) {
    Run<bfloat16_t>(a, td);
  }
}
