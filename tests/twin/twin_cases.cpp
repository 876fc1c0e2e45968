// Small AscendC kernels that exercise the CPU twin, with C entry points for tests/test_twin.py.
// Each entry launches its kernel through ms_ops::twin::Launch (LaunchCooperative for the SyncAll
// kernels) over host buffers and returns the launch's status (0, or 1 after a twin violation,
// which it prints on stderr as `ms_ops <kernel>: block <b>: <call>: <what>`).
#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "case_utils.h"
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
#include "twin_memory.h"

using namespace AscendC;
using namespace twin_cases;

namespace {

uint32_t Bytes32(uint64_t bytes) { return static_cast<uint32_t>(ms_ops::AlignUp(bytes, 32)); }

template <typename T>
void Load(const LocalTensor<T> &dst, const GlobalTensor<T> &src, uint32_t n) {
  DataCopyPad(dst, src, DataCopyExtParams(1, n * sizeof(T), 0, 0, 0), DataCopyPadExtParams<T>(false, 0, 0, T(0)));
}

template <typename T>
void Store(const GlobalTensor<T> &dst, const LocalTensor<T> &src, uint32_t n) {
  DataCopyPad(dst, src, DataCopyExtParams(1, n * sizeof(T), 0, 0, 0));
}

// Orders pipe X before pipe Y of this core (the kernels' OrderPipes).
template <HardEvent EVT>
void Order() {
  SetFlag<EVT>(0);
  WaitFlag<EVT>(0);
}

using F32 = MatmulType<TPosition::GM, CubeFormat::ND, float>;

// The tiling of an n x n x n fp32 product on one core.
TCubeTiling SquareTiling(int n) {
  TCubeTiling t{};
  t.M = t.N = t.Ka = t.Kb = n;
  t.singleCoreM = t.singleCoreN = t.singleCoreK = n;
  t.baseM = t.baseN = t.baseK = 16;
  return t;
}

// ---- vector ops: dst = op(x, y) / op(x) / op(x, s) for n elements ----

template <typename T>
void VecKernel(int kind, int op, void *x, void *y, void *z, uint32_t n, float s) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  const uint32_t len = Bytes32(n * sizeof(T)) / sizeof(T);
  pipe.InitBuffer(buf, 3 * len * sizeof(T));
  LocalTensor<T> a = buf.Get<T>(), b = a[len], c = a[2 * len];
  Load(a, Gm<T>(x, n), n);
  Load(b, Gm<T>(y, n), n);
  Order<HardEvent::MTE2_V>();
  const T k = static_cast<T>(s);
  const int32_t cnt = static_cast<int32_t>(n);
  if (kind == 0) {
    switch (op) {
      case 0: Add(c, a, b, cnt); break;
      case 1: Sub(c, a, b, cnt); break;
      case 2: Mul(c, a, b, cnt); break;
      case 3: Div(c, a, b, cnt); break;
      case 4: Max(c, a, b, cnt); break;
      default: Min(c, a, b, cnt); break;
    }
  } else if (kind == 1) {
    switch (op) {
      case 0: Exp(c, a, cnt); break;
      case 1: Ln(c, a, cnt); break;
      case 2: Abs(c, a, cnt); break;
      case 3: Relu(c, a, cnt); break;
      default: Sqrt(c, a, cnt); break;
    }
  } else {
    switch (op) {
      case 0: Adds(c, a, k, cnt); break;
      case 1: Muls(c, a, k, cnt); break;
      case 2: Maxs(c, a, k, cnt); break;
      case 3: Mins(c, a, k, cnt); break;
      default: Duplicate(c, k, cnt); break;
    }
  }
  Order<HardEvent::V_MTE3>();
  Store(Gm<T>(z, n), c, n);
}

// ---- reductions: vals = {max, min, sum}, idx = {argmax, argmin} ----

template <typename T>
void ReduceKernel(void *x, void *vals, uint32_t *idx, uint32_t n) {
  using Index = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;
  TPipe pipe;
  TBuf<TPosition::VECCALC> src, dst, tmp;
  pipe.InitBuffer(src, n * sizeof(T) + 32);
  pipe.InitBuffer(dst, 3 * 32);
  pipe.InitBuffer(tmp, n * sizeof(T) + 32);
  LocalTensor<T> s = src.Get<T>(), d = dst.Get<T>(), t = tmp.Get<T>();
  Load(s, Gm<T>(x, n), n);
  GlobalTensor<T> v = Gm<T>(vals, 3);
  GlobalTensor<uint32_t> ix = Gm<uint32_t>(idx, 2);
  const uint32_t step = 32 / sizeof(T);
  Order<HardEvent::MTE2_V>();
  ReduceMax(d, s, t, n, true);
  ReduceMin(d[step], s, t, n, true);
  ReduceSum(d[2 * step], s, t, n);
  Order<HardEvent::V_S>();
  v.SetValue(0, d.GetValue(0));
  v.SetValue(1, d.GetValue(step));
  v.SetValue(2, d.GetValue(2 * step));
  ix.SetValue(0, d.template ReinterpretCast<Index>().GetValue(1));
  ix.SetValue(1, d[step].template ReinterpretCast<Index>().GetValue(1));
}

// ---- Cast ----

template <typename D, typename S>
void CastKernel(int mode, void *x, void *out, uint32_t n) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  const uint32_t srcBytes = Bytes32(n * sizeof(S));
  pipe.InitBuffer(buf, srcBytes + Bytes32(n * sizeof(D)));
  LocalTensor<S> s = buf.Get<S>(n);
  LocalTensor<D> d = buf.GetWithOffset<D>(n, srcBytes);
  Load(s, Gm<S>(x, n), n);
  Order<HardEvent::MTE2_V>();
  Cast(d, s, static_cast<RoundMode>(mode), n);
  Order<HardEvent::V_MTE3>();
  Store(Gm<D>(out, n), d, n);
}

template <typename D>
int CastFromF32(const char *name, int mode, void *x, void *out, uint32_t n) {
  return Run(name, 1, [&] { CastKernel<D, float>(mode, x, out, n); });
}

}  // namespace

TWIN_EXPORT int twin_vec_f32(int kind, int op, float *x, float *y, float *z, uint32_t n, float s) {
  return Run("twin_vec_f32", 1, [&] { VecKernel<float>(kind, op, x, y, z, n, s); });
}

TWIN_EXPORT int twin_vec_f16(int kind, int op, half *x, half *y, half *z, uint32_t n, float s) {
  return Run("twin_vec_f16", 1, [&] { VecKernel<half>(kind, op, x, y, z, n, s); });
}

TWIN_EXPORT int twin_reduce_f32(float *x, float *vals, uint32_t *idx, uint32_t n) {
  return Run("twin_reduce_f32", 1, [&] { ReduceKernel<float>(x, vals, idx, n); });
}

TWIN_EXPORT int twin_reduce_f16(half *x, half *vals, uint32_t *idx, uint32_t n) {
  return Run("twin_reduce_f16", 1, [&] { ReduceKernel<half>(x, vals, idx, n); });
}

// dst: 0 half, 1 bfloat16, 2 int32, 3 float (rounded to integral values).
TWIN_EXPORT int twin_cast_from_f32(int dst, int mode, float *x, void *out, uint32_t n) {
  switch (dst) {
    case 0: return CastFromF32<half>("twin_cast", mode, x, out, n);
    case 1: return CastFromF32<bfloat16_t>("twin_cast", mode, x, out, n);
    case 2: return CastFromF32<int32_t>("twin_cast", mode, x, out, n);
    default: return CastFromF32<float>("twin_cast", mode, x, out, n);
  }
}

// src: 0 half, 1 bfloat16, 2 int32.
TWIN_EXPORT int twin_cast_to_f32(int src, int mode, void *x, float *out, uint32_t n) {
  return Run("twin_cast", 1, [&] {
    if (src == 0) CastKernel<float, half>(mode, x, out, n);
    else if (src == 1) CastKernel<float, bfloat16_t>(mode, x, out, n);
    else CastKernel<float, int32_t>(mode, x, out, n);
  });
}

// uint8 -> half (attn_mask bytes on their way to fp32).
TWIN_EXPORT int twin_cast_u8_to_f16(int mode, void *x, void *out, uint32_t n) {
  return Run("twin_cast", 1, [&] { CastKernel<half, uint8_t>(mode, x, out, n); });
}

// mask = a <mode> b, sel = mask ? a : b; smask = a <mode> s, ssel = smask ? a : s.
TWIN_EXPORT int twin_cmp_select(int mode, float *a, float *b, float s, uint8_t *mask, float *sel, uint8_t *smask,
                                float *ssel, uint32_t n) {
  return Run("twin_cmp_select", 1, [&] {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf, mbuf;
    pipe.InitBuffer(buf, 4 * n * sizeof(float));
    pipe.InitBuffer(mbuf, 2 * Bytes32(n / 8));
    LocalTensor<float> x = buf.Get<float>(), y = x[n], o1 = x[2 * n], o2 = x[3 * n];
    LocalTensor<uint8_t> m1 = mbuf.Get<uint8_t>(), m2 = m1[Bytes32(n / 8)];
    DataCopy(x, Gm<float>(a, n), n);
    DataCopy(y, Gm<float>(b, n), n);
    Order<HardEvent::MTE2_V>();
    Compare(m1, x, y, static_cast<CMPMODE>(mode), n);
    Select(o1, m1, x, y, SELMODE::VSEL_TENSOR_TENSOR_MODE, n);
    CompareScalar(m2, x, s, static_cast<CMPMODE>(mode), n);
    Select(o2, m2, x, s, SELMODE::VSEL_TENSOR_SCALAR_MODE, n);
    Order<HardEvent::V_MTE3>();
    DataCopy(Gm<float>(sel, n), o1, n);
    DataCopy(Gm<float>(ssel, n), o2, n);
    Store(Gm<uint8_t>(mask, n / 8), m1, n / 8);
    Store(Gm<uint8_t>(smask, n / 8), m2, n / 8);
  });
}

// GM x (rows x ld) -> UB rows with padding and a UB gap of `gap` blocks; the whole UB image goes
// to img (pre-filled in UB with 7.0) and, when left == 0, the rows go back to out (rows x outLd).
TWIN_EXPORT int twin_copy_pad(float *x, float *out, float *img, uint32_t rows, uint32_t cols, uint32_t ld,
                              uint32_t outLd, uint32_t left, uint32_t right, int isPad, float padValue, uint32_t gap,
                              int oldApi) {
  return Run("twin_copy_pad", 1, [&] {
    const uint32_t row = Bytes32((left + cols + right) * 4), pitch = row + gap * 32, total = rows * pitch / 4;
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, rows * pitch);
    LocalTensor<float> ub = buf.Get<float>();
    Duplicate(ub, 7.0f, total);
    Order<HardEvent::V_MTE2>();
    GlobalTensor<float> xg = Gm<float>(x, uint64_t(rows - 1) * ld + cols);
    if (oldApi) {
      uint32_t bits;
      std::memcpy(&bits, &padValue, 4);
      DataCopyPad(ub, xg, DataCopyParams(rows, cols * 4, (ld - cols) * 4, gap),
                  DataCopyPadParams(isPad != 0, left, right, bits));
    } else {
      DataCopyPad(ub, xg, DataCopyExtParams(rows, cols * 4, (ld - cols) * 4, gap, 0),
                  DataCopyPadExtParams<float>(isPad != 0, left, right, padValue));
    }
    Order<HardEvent::MTE2_MTE3>();
    DataCopy(Gm<float>(img, total), ub, total);
    if (left != 0) return;
    GlobalTensor<float> og = Gm<float>(out, uint64_t(rows - 1) * outLd + cols);
    const uint32_t srcGap = (pitch - Bytes32(cols * 4)) / 32;
    if (oldApi)
      DataCopyPad(og, ub, DataCopyParams(rows, cols * 4, srcGap, (outLd - cols) * 4));
    else
      DataCopyPad(og, ub, DataCopyExtParams(rows, cols * 4, srcGap, (outLd - cols) * 4, 0));
  });
}

// Strided DataCopy (units of 32-byte blocks): rows of cols floats from x (row stride ld) packed in
// UB, then written to out with row stride outLd. cols, ld, outLd are multiples of 8.
TWIN_EXPORT int twin_strided_copy(float *x, float *out, uint32_t rows, uint32_t cols, uint32_t ld, uint32_t outLd) {
  return Run("twin_strided_copy", 1, [&] {
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> q;  // MTE2 in, MTE3 out
    pipe.InitBuffer(q, 1, rows * cols * 4);
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, Gm<float>(x, rows * ld), DataCopyParams(rows, cols / 8, (ld - cols) / 8, 0));
    q.EnQue(t);
    t = q.DeQue<float>();
    DataCopy(Gm<float>(out, rows * outLd), t, DataCopyParams(rows, cols / 8, 0, (outLd - cols) / 8));
    q.FreeTensor(t);
  });
}

// Block b writes {b, blockNum} to out[8 b], out[8 b + 1] through UB.
TWIN_EXPORT int twin_block_ids(int32_t *out, uint32_t blocks) {
  return Run("twin_block_ids", blocks, [&] {
    TPipe pipe;
    TQue<QuePosition::VECOUT, 2> q;
    pipe.InitBuffer(q, 2, 32);
    LocalTensor<int32_t> t = q.AllocTensor<int32_t>();
    Duplicate(t, static_cast<int32_t>(GetBlockNum()), 8);
    Order<HardEvent::V_S>();
    t.SetValue(0, GetBlockIdx());
    Order<HardEvent::S_V>();  // the queue hands V's work (now after S's) to MTE3
    q.EnQue(t);
    t = q.DeQue<int32_t>();
    GlobalTensor<int32_t> g = Gm<int32_t>(out, 8 * blocks);
    DataCopy(g[8 * GetBlockIdx()], t, 8);
    q.FreeTensor(t);
  });
}

// One rule broken by the last block of a two-block launch (the first block runs cleanly).
// which: 0 misaligned DataCopy, 1 DataCopy count of 10 floats (non-strict: rounds down to 8),
// 2 UB over budget, 3 double FreeTensor, 4 DeQue of an empty queue, 5 AllocTensor beyond the
// buffer count, 6 GM out of bounds, 7 EnQue beyond depth, 8 UB index out of range, 9 misaligned
// vector operand, 10 Compare count not a multiple of 256 bytes, 11 accumulating Matmul into a C
// too small for its 4 x 4 result, 12 DataCopyPad of 4096 rows (blockCount is at most 4095), 13 use
// after FreeTensor, 14 a tensor still allocated at kernel end (a note, not an error), 15 a vector op whose destination
// is its source shifted by 8 elements.
TWIN_EXPORT int twin_violation(int which, float *x, float *out) {
  return Run("twin_violation", 2, [&] {
    const bool bad = GetBlockIdx() == GetBlockNum() - 1;
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(q, 2, 256);
    pipe.InitBuffer(buf, 256);
    GlobalTensor<float> xg = Gm<float>(x, 16), og = Gm<float>(out, 16);
    LocalTensor<float> t = buf.Get<float>();
    if (!bad) {
      DataCopy(t, xg, 16);
      return;
    }
    switch (which) {
      case 0: DataCopy(t[3], xg, 8); break;
      case 1:
        Duplicate(t, 0.0f, 16);
        Order<HardEvent::V_MTE2>();
        DataCopy(t, xg, 10);
        Order<HardEvent::MTE2_MTE3>();
        DataCopy(og, t, 16);
        break;
      case 2: pipe.InitBuffer(buf, ms_ops::twin::kUbBytes); break;
      case 3: {
        LocalTensor<float> a = q.AllocTensor<float>();
        q.FreeTensor(a);
        q.FreeTensor(a);
        break;
      }
      case 4: q.DeQue<float>(); break;
      case 5:
        q.AllocTensor<float>();
        q.AllocTensor<float>();
        q.AllocTensor<float>();
        break;
      case 6: DataCopy(t, xg[8], 16); break;
      case 7: {
        LocalTensor<float> a = q.AllocTensor<float>(), b = q.AllocTensor<float>();
        q.EnQue(a);
        q.EnQue(b);
        break;
      }
      case 8: t.GetValue(64); break;
      case 9: Add(t[1], t, t, 8); break;
      case 11: {
        const TCubeTiling tiling = SquareTiling(4);
        Matmul<F32, F32, F32> mm;
        REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &tiling);
        mm.SetTensorA(xg);
        mm.SetTensorB(xg);
        mm.IterateAll(og[8], 1);
        break;
      }
      case 16: {
        // Registered in an inner scope that ends before the Matmul is used (it was inside a
        // kernel's Init once): the NPU's cube core stops serving when the registration ends.
        const TCubeTiling tiling = SquareTiling(2);
        Matmul<F32, F32, F32> mm;
        {
          REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &tiling);
        }
        mm.SetTensorA(xg);
        mm.SetTensorB(xg);
        mm.IterateAll(og, 0);
        break;
      }
      case 13: {
        LocalTensor<float> a = q.AllocTensor<float>();
        q.FreeTensor(a);
        Duplicate(a, 0.0f, 8);
        break;
      }
      case 14: q.AllocTensor<float>(); break;
      case 15:
        Duplicate(t, 1.0f, 64);
        Adds(t[8], t, 1.0f, 16);
        break;
      case 12:
        DataCopyPad(t, xg, DataCopyExtParams(4096, 4, 0, 0, 0), DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
        break;
      default: {
        LocalTensor<uint8_t> m = buf.Get<uint8_t>();
        Compare(m, t, t, CMPMODE::EQ, 48);
        break;
      }
    }
  });
}

// ---- pipe races ----

// out[0:8] = x[0:8] + 1 through one 32-byte UB block, with or without what orders the pipes.
// Races (the NPU may overlap the two accesses): 0 MTE2 writes, V reads (read-after-write);
// 4 V reads, MTE2 writes again (write-after-read); 7 V writes, MTE2 overwrites (write-after-write);
// 9 MTE2 writes, S reads; 10 PipeBarrier<PIPE_V> (orders V with itself only) in place of a flag;
// 11 a VECIN queue (it orders MTE2 before V) read out by MTE3; 12 SetFlag before the copy instead
// of after it; 13 V writes, MTE3 reads. 14 is a WaitFlag with no SetFlag (the NPU hangs). Ordered: 1 SetFlag/WaitFlag, 2 EnQue/DeQue,
// 3 PipeBarrier<PIPE_ALL>, 5 SetFlag<V_MTE2>, 6 FreeTensor/AllocTensor of a VECIN queue,
// 8 PipeBarrier<PIPE_ALL>.
TWIN_EXPORT int twin_race(int which, float *x, float *out) {
  return Run("twin_race", 1, [&] {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    TQue<QuePosition::VECIN, 1> inQ;
    pipe.InitBuffer(buf, 64);
    pipe.InitBuffer(inQ, 1, 32);
    GlobalTensor<float> xg = Gm<float>(x, 8), og = Gm<float>(out, 8);
    LocalTensor<float> a = buf.Get<float>(8), b = buf.GetWithOffset<float>(8, 32);
    auto finish = [&](const LocalTensor<float> &src) {  // out = src + 1, ordered
      Adds(b, src, 1.0f, 8);
      Order<HardEvent::V_MTE3>();
      DataCopy(og, b, 8);
      Order<HardEvent::MTE3_V>();  // b may be written again
    };
    switch (which) {
      case 14:
        WaitFlag<HardEvent::MTE2_V>(2);
        return;
      case 0: case 1: case 3: case 10: case 12:
        if (which == 12) SetFlag<HardEvent::MTE2_V>(0);  // before the copy: it orders nothing
        DataCopy(a, xg, 8);
        if (which == 12) WaitFlag<HardEvent::MTE2_V>(0);
        if (which == 1) Order<HardEvent::MTE2_V>();
        if (which == 3) PipeBarrier<PIPE_ALL>();
        if (which == 10) PipeBarrier<PIPE_V>();
        return finish(a);
      case 2: case 11: {
        LocalTensor<float> t = inQ.AllocTensor<float>();
        DataCopy(t, xg, 8);
        inQ.EnQue(t);
        t = inQ.DeQue<float>();
        if (which == 11) DataCopy(og, t, 8);
        else finish(t);
        return inQ.FreeTensor(t);
      }
      case 4: case 5:
        DataCopy(a, xg, 8);
        Order<HardEvent::MTE2_V>();
        Adds(b, a, 1.0f, 8);  // reads a
        if (which == 5) Order<HardEvent::V_MTE2>();
        DataCopy(a, xg, 8);
        Order<HardEvent::MTE2_V>();
        return finish(a);
      case 6: {
        for (int round = 0; round < 2; ++round) {
          LocalTensor<float> t = inQ.AllocTensor<float>();
          DataCopy(t, xg, 8);
          inQ.EnQue(t);
          t = inQ.DeQue<float>();
          finish(t);
          inQ.FreeTensor(t);
        }
        return;
      }
      case 7: case 8:
        Duplicate(a, 0.0f, 8);
        if (which == 8) PipeBarrier<PIPE_ALL>();
        DataCopy(a, xg, 8);
        Order<HardEvent::MTE2_V>();
        return finish(a);
      case 9:
        DataCopy(a, xg, 8);
        og.SetValue(0, a.GetValue(0));
        return;
      default:
        DataCopy(a, xg, 8);
        Order<HardEvent::MTE2_V>();
        Adds(b, a, 1.0f, 8);
        DataCopy(og, b, 8);
        return;
    }
  });
}

// ---- global memory, flags at kernel end, reduce scratch, level-0 overlap ----

// Two blocks launched together (LaunchCooperative) over x[0:16] and out[0:16]. Each block loads
// x[0:8] into UB; then, by `which`:
// 0 both store it to out[0:8] (a race between blocks); 1 block b stores to out[8b:8b+8]; 2 both
// add it into out[0:8] with SetAtomicAdd; 3 block 0 stores, SyncAll, block 1 stores; 4 block 0
// stores twice, block 1 nothing; 5 block 0 plain, block 1 atomic into out[0:8] (a race);
// 6 block 0 stores out[0:8] and loads it back with no flag (a race within the block); 7 the same
// with SetFlag/WaitFlag<MTE3_MTE2>; 8 a SetFlag<V_MTE3> never waited (block 1); 9 ReduceMax of
// 16 floats with calIndex into a 16-float scratch; 10 the same with an 8-float scratch (below the
// minimum); 11 a level-0 Adds whose destination is its source shifted by 8 floats (block 1).
// Unless said otherwise only block 0 stores, and out[0:8] = x[0:8] (+ x for atomics).
TWIN_EXPORT int twin_gm_check(int which, float *x, float *out) {
  return Reported(ms_ops::twin::LaunchCooperative("twin_gm_check", 2, 0, [&] {
    const int64_t b = GetBlockIdx();
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 256);
    GlobalTensor<float> xg = Gm<float>(x, 16), og = Gm<float>(out, 16);
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, xg, 8);
    Order<HardEvent::MTE2_MTE3>();
    switch (which) {
      case 0: DataCopy(og, t, 8); break;
      case 1: DataCopy(og[8 * b], t, 8); break;
      case 2: case 5:
        if (which == 2 || b == 1) SetAtomicAdd<float>();
        DataCopy(og, t, 8);
        SetAtomicNone();
        break;
      case 3:
        if (b == 0) DataCopy(og, t, 8);
        SyncAll();
        if (b == 1) DataCopy(og, t, 8);
        break;
      case 4:
        if (b == 0) DataCopy(og, t, 8);
        if (b == 0) DataCopy(og, t, 8);
        break;
      case 6: case 7:
        if (b != 0) break;
        DataCopy(og, t, 8);
        if (which == 7) Order<HardEvent::MTE3_MTE2>();
        DataCopy(t[16], og, 8);
        break;
      case 8:
        if (b == 0) DataCopy(og, t, 8);
        if (b == 1) SetFlag<HardEvent::V_MTE3>(3);
        break;
      case 9: case 10: {
        Order<HardEvent::MTE2_V>();
        LocalTensor<float> src = buf.Get<float>(16), dst = buf.GetWithOffset<float>(8, 64);
        TBuf<TPosition::VECCALC> scratch;
        pipe.InitBuffer(scratch, which == 9 ? 64 : 32);
        LocalTensor<float> tmp = scratch.Get<float>();
        Duplicate(src[8], -1.0f, 8);
        ReduceMax(dst, src, tmp, 16, true);
        Order<HardEvent::V_MTE3>();
        if (b == 0) DataCopy(og, dst, 8);
        break;
      }
      case 11:
        Order<HardEvent::MTE2_V>();
        if (b == 1) {
          const uint64_t mask = 16;
          Adds(t[8], t, 1.0f, mask, 1, UnaryRepeatParams(1, 1, 8, 8));
        }
        Order<HardEvent::V_MTE3>();
        if (b == 0) DataCopy(og, t, 8);
        break;
      default: break;
    }
  }));
}

// A mixed launch of one group: the AIC and the AIVs store their own value (AIC 1, AIV b 10 + b)
// into out[0] with SetValue, by `which`: 0 the AIC and AIV 0, nothing between (a race); 1 the
// AIC, then CrossCoreSetFlag<2> to its AIVs, AIV 0 after its wait (ordered); 2 both AIVs after
// that wait (they race with each other); 3 AIV 0, then both AIVs' flags to the AIC, whose own flag
// after its wait releases AIV 1 to store (ordered through the AIC); 4 the same with AIV 1 storing
// before its wait (a race); 5 the AIC, SyncAll<false>, AIV 0 (ordered).
TWIN_EXPORT int twin_gm_mixed(int which, float *out) {
  return Reported(ms_ops::twin::LaunchMixed("twin_gm_mixed", 1, 0, [&] {
    const GlobalTensor<float> o = Gm<float>(out, 8);
    const bool aic = ASCEND_IS_AIC;
    const int64_t sub = GetSubBlockIdx();
    auto store = [&] { o.SetValue(0, aic ? 1.0f : 10.0f + float(sub)); };
    switch (which) {
      case 0:
        if (aic || sub == 0) store();
        break;
      case 1: case 2:
        if (aic) {
          store();
          CrossCoreSetFlag<2, PIPE_S>(0);
        } else {
          CrossCoreWaitFlag(0);
          if (which == 2 || sub == 0) store();
        }
        break;
      case 3: case 4:
        if (aic) {
          CrossCoreWaitFlag(1);
          CrossCoreSetFlag<2, PIPE_S>(0);
          break;
        }
        if (sub == 0 || (which == 4 && sub == 1)) store();
        CrossCoreSetFlag<2, PIPE_S>(1);
        CrossCoreWaitFlag(0);
        if (which == 3 && sub == 1) store();
        break;
      default:
        if (aic) store();
        SyncAll<false>();
        if (!aic && sub == 0) store();
        break;
    }
  }));
}

// Every block writes (atomic 0) or adds (atomic 1) the same C = A * B, n x n x n floats, with
// Matmul: IterateAll (mode 0) or Iterate + GetTensorC (mode 1); the blocks run concurrently.
TWIN_EXPORT int twin_matmul_shared(int atomic, int mode, float *a, float *b, float *c, int n, uint32_t blocks) {
  const TCubeTiling t = SquareTiling(n);
  return Run("twin_matmul_shared", blocks, [&] {
    TPipe pipe;
    Matmul<F32, F32, F32> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
    mm.SetTensorA(Gm<float>(a, uint64_t(n) * n));
    mm.SetTensorB(Gm<float>(b, uint64_t(n) * n));
    const GlobalTensor<float> cg = Gm<float>(c, uint64_t(n) * n);
    if (mode == 0) {
      mm.IterateAll(cg, atomic);
    } else {
      while (mm.Iterate()) mm.GetTensorC(cg, atomic);
    }
    mm.End();
  });
}

// SpansOverlap of the spans {at, rows, bytes, pitch} a[0..3] and b[0..3]: 1 if they share a byte.
TWIN_EXPORT int twin_spans_overlap(const uint64_t *a, const uint64_t *b) {
  return ms_ops::twin::SpansOverlap({a[0], a[1], a[2], a[3]}, {b[0], b[1], b[2], b[3]}) ? 1 : 0;
}

// One block: C += A * B with enAtomic 1, all three n x n in fp16.
TWIN_EXPORT int twin_matmul_atomic_f16(void *a, void *b, void *c, int n) {
  const TCubeTiling t = SquareTiling(n);
  return Run("twin_matmul_atomic_f16", 1, [&] {
    using F16 = MatmulType<TPosition::GM, CubeFormat::ND, half>;
    TPipe pipe;
    Matmul<F16, F16, F16> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
    mm.SetTensorA(Gm<half>(a, uint64_t(n) * n));
    mm.SetTensorB(Gm<half>(b, uint64_t(n) * n));
    mm.IterateAll(Gm<half>(c, uint64_t(n) * n), 1);
    mm.End();
  });
}

// SetOrgShape's orgKc: C [M x N] += A [M x K] * B [K x N] into rows ldc apart (ldc > N), whole
// (mode 0: IterateAll) or tile by tile (mode 1: Iterate + GetTensorC into GM).
TWIN_EXPORT int twin_matmul_org_kc(float *a, float *b, float *c, int M, int N, int K, int ldc, int mode) {
  TCubeTiling t{};
  t.M = M;
  t.N = N;
  t.Ka = t.Kb = K;
  t.singleCoreM = M;
  t.singleCoreN = N;
  t.singleCoreK = K;
  t.baseM = t.baseN = t.baseK = 32;
  t.usedCoreNum = 1;
  return Run("twin_matmul_org_kc", 1, [&] {
    using F32 = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    TPipe pipe;
    Matmul<F32, F32, F32> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
    mm.SetOrgShape(M, N, K, K, ldc);
    mm.SetTensorA(Gm<float>(a, uint64_t(M) * K));
    mm.SetTensorB(Gm<float>(b, uint64_t(K) * N));
    const GlobalTensor<float> cg = Gm<float>(c, uint64_t(M) * ldc);
    if (mode == 0) {
      mm.IterateAll(cg, 1);
    } else {
      while (mm.Iterate()) mm.GetTensorC(cg, 1);
    }
    mm.End();
  });
}

// ---- Matmul: C[M x N] (=|+=) A[M x K] * B[K x N] (+ bias), rows split over blocks ----

namespace {

// Block b computes the C block (b / blocksN, b % blocksN) of singleCoreM x singleCoreN: C's row
// stride N exceeds the block's width when blocksN > 1.
template <typename T, bool kTransA, bool kTransB>
void MatmulKernel(int mode, int useBias, int atomic, void *a, void *b, float *bias, float *c, const TCubeTiling &tiling,
                  int blocksN) {
  using AType = MatmulType<TPosition::GM, CubeFormat::ND, T, kTransA>;
  using BType = MatmulType<TPosition::GM, CubeFormat::ND, T, kTransB>;
  using CType = MatmulType<TPosition::GM, CubeFormat::ND, float>;
  using BiasType = MatmulType<TPosition::GM, CubeFormat::ND, float>;
  const int M = tiling.M, N = tiling.N, K = tiling.Ka, sm = tiling.singleCoreM, sn = tiling.singleCoreN;
  const int idx = static_cast<int>(GetBlockIdx()), row0 = idx / blocksN * sm, col0 = idx % blocksN * sn;
  if (row0 >= M || col0 >= N) return;
  TPipe pipe;
  Matmul<AType, BType, CType, BiasType> mm;
  REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &tiling);
  const int rows = std::min(sm, M - row0), cols = std::min(sn, N - col0);
  mm.SetTail(rows, cols);
  mm.SetTensorA(Gm<T>(a, uint64_t(M) * K)[kTransA ? uint64_t(row0) : uint64_t(row0) * K], kTransA);
  mm.SetTensorB(Gm<T>(b, uint64_t(K) * N)[kTransB ? uint64_t(col0) * K : col0], kTransB);
  if (useBias) mm.SetBias(Gm<float>(bias, N)[col0]);
  GlobalTensor<float> cg = Gm<float>(c, uint64_t(M) * N)[uint64_t(row0) * N + col0];
  if (mode == 0) {
    mm.IterateAll(cg, atomic);
  } else if (mode == 1) {
    while (mm.Iterate()) mm.GetTensorC(cg, atomic);
  } else {
    // Tiles through UB, placed by the kernel itself (iterateOrder 0: the M index moves first).
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, tiling.baseM * tiling.baseN * 4);
    const int tilesM = (rows + tiling.baseM - 1) / tiling.baseM;
    for (int i = 0; mm.Iterate(); ++i) {
      LocalTensor<float> t = q.AllocTensor<float>();
      mm.GetTensorC(t, 0);
      q.EnQue(t);
      t = q.DeQue<float>();
      const int tm = i % tilesM, tn = i / tilesM;
      const int h = std::min(tiling.baseM, rows - tm * tiling.baseM);
      const int w = std::min(tiling.baseN, cols - tn * tiling.baseN);
      const uint32_t gap = (tiling.baseN * 4 - Bytes32(w * 4)) / 32;
      DataCopyPad(cg[uint64_t(tm) * tiling.baseM * N + tn * tiling.baseN], t,
                  DataCopyExtParams(h, w * 4, gap, (N - w) * 4, 0));
      q.FreeTensor(t);
    }
  }
  mm.End();
}

}  // namespace

// dtype: 0 float, 1 half. mode: 0 IterateAll, 1 Iterate + GetTensorC(GM), 2 Iterate + GetTensorC(UB).
// blocksM x blocksN blocks, launched cooperatively when coop != 0.
template <typename T>
void MatmulKernelOf(int trans, int mode, int useBias, int atomic, void *a, void *b, float *bias, float *c,
                    const TCubeTiling &tiling, int blocksN) {
  switch (trans) {
    case 0: return MatmulKernel<T, false, false>(mode, useBias, atomic, a, b, bias, c, tiling, blocksN);
    case 1: return MatmulKernel<T, false, true>(mode, useBias, atomic, a, b, bias, c, tiling, blocksN);
    case 2: return MatmulKernel<T, true, false>(mode, useBias, atomic, a, b, bias, c, tiling, blocksN);
    default: return MatmulKernel<T, true, true>(mode, useBias, atomic, a, b, bias, c, tiling, blocksN);
  }
}

// trans: bit 0 = B stored transposed (N x K), bit 1 = A stored transposed (K x M).
TWIN_EXPORT int twin_matmul(int dtype, int trans, int mode, int useBias, int atomic, void *a, void *b, float *bias,
                            float *c, int M, int N, int K, uint32_t blocksM, uint32_t blocksN, int coop) {
  TCubeTiling t{};
  t.M = M;
  t.N = N;
  t.Ka = t.Kb = K;
  t.singleCoreM = (M + blocksM - 1) / blocksM;
  t.singleCoreN = (N + blocksN - 1) / blocksN;
  t.singleCoreK = K;
  t.baseM = 64;
  t.baseN = 64;
  t.baseK = 64;
  t.usedCoreNum = blocksM * blocksN;
  const int bn = static_cast<int>(blocksN);
  auto body = [&] {
    if (dtype == 0) MatmulKernelOf<float>(trans, mode, useBias, atomic, a, b, bias, c, t, bn);
    else MatmulKernelOf<half>(trans, mode, useBias, atomic, a, b, bias, c, t, bn);
  };
  if (coop) return Reported(ms_ops::twin::LaunchCooperative("twin_matmul", blocksM * blocksN, 0, body));
  return Run("twin_matmul", blocksM * blocksN, body);
}

// GET_TILING_DATA_WITH_STRUCT and TILING_KEY_IS: out = {a, b, key is 7, key is 8, pipe ptr set}.
namespace {
struct CaseTiling {
  int32_t a;
  float b;
};
}  // namespace

TWIN_EXPORT int twin_tiling(uint64_t key, void *tiling, float *out) {
  return Reported(ms_ops::twin::Launch("twin_tiling", 1, key, [&] {
    GET_TILING_DATA_WITH_STRUCT(CaseTiling, td, reinterpret_cast<GM_ADDR>(tiling));
    TPipe pipe;
    GlobalTensor<float> o = Gm<float>(out, 5);
    o.SetValue(0, static_cast<float>(td.a));
    o.SetValue(1, td.b);
    o.SetValue(2, TILING_KEY_IS(7) ? 1.0f : 0.0f);
    o.SetValue(3, TILING_KEY_IS(8) ? 1.0f : 0.0f);
    o.SetValue(4, GetTPipePtr() == &pipe ? 1.0f : 0.0f);
  }));
}

namespace {
struct InnerTiling {
  int32_t n;
  float scale;
};
struct NestedTiling {
  int64_t id;
  InnerTiling inner;
};
}  // namespace

// The registered default struct through GET_TILING_DATA, the tiling in place through
// GET_TILING_DATA_PTR_WITH_STRUCT, and a nested member copied onto the stack by
// COPY_TILING_WITH_STRUCT from the member itself and from a pointer to it.
TWIN_EXPORT int twin_tiling_default(void *tiling, float *out) {
  return Reported(ms_ops::twin::Launch("twin_tiling_default", 1, 0, [&] {
    REGISTER_TILING_DEFAULT(NestedTiling);
    GET_TILING_DATA(td, reinterpret_cast<GM_ADDR>(tiling));
    GET_TILING_DATA_PTR_WITH_STRUCT(NestedTiling, ptr, reinterpret_cast<GM_ADDR>(tiling));
    COPY_TILING_WITH_STRUCT(InnerTiling, ptr->inner, fromMember);
    COPY_TILING_WITH_STRUCT(InnerTiling, &td.inner, fromPointer);
    GlobalTensor<float> o = Gm<float>(out, 6);
    o.SetValue(0, static_cast<float>(td.id));
    o.SetValue(1, static_cast<float>(td.inner.n));
    o.SetValue(2, td.inner.scale);
    o.SetValue(3, static_cast<float>(ptr->id));
    o.SetValue(4, static_cast<float>(fromMember->n) + fromMember->scale);
    o.SetValue(5, static_cast<float>(fromPointer->n) * fromPointer->scale);
  }));
}

// ---- SyncAll ----

// rounds x (block b < active writes b * rounds + r to slot b; SyncAll; sums[r][b] = sum of the
// active slots; SyncAll so that no slot is rewritten before every block has read it). Blocks from
// active on return at once. aivOnly selects SyncAll<true> / SyncAll<false>.
TWIN_EXPORT int twin_sync_sum(int aivOnly, int32_t *slots, int32_t *sums, uint32_t blocks, uint32_t active,
                              uint32_t rounds) {
  return Reported(ms_ops::twin::LaunchCooperative("twin_sync_sum", blocks, 0, [&] {
    const int64_t b = GetBlockIdx();
    if (b >= active) return;
    SlotRounds(b, active, blocks, rounds, slots, sums, [&] { aivOnly ? SyncAll<true>() : SyncAll<false>(); });
  }));
}

// The software SyncAll (GM and UB workspaces): each block writes b + 1 to slots[b], meets the
// others, and writes the sum of all slots to sums[b]. flags: the gmWorkspace (flagInts int32),
// ubInts: the ubWorkspace's size, usedCores: its argument.
TWIN_EXPORT int twin_sync_soft(int32_t *slots, int32_t *sums, int32_t *flags, uint32_t flagInts, uint32_t blocks,
                               uint32_t ubInts, int32_t usedCores) {
  return Reported(ms_ops::twin::LaunchCooperative("twin_sync_soft", blocks, 0, [&] {
    const int64_t b = GetBlockIdx();
    TPipe pipe;
    TBuf<TPosition::VECCALC> ub;
    pipe.InitBuffer(ub, ubInts * sizeof(int32_t));
    GlobalTensor<int32_t> slot = Gm<int32_t>(slots, blocks), sum = Gm<int32_t>(sums, blocks);
    slot.SetValue(b, static_cast<int32_t>(b + 1));
    LocalTensor<int32_t> work = ub.Get<int32_t>();
    work.SetSize(ubInts);
    SyncAll(Gm<int32_t>(flags, flagInts), work, usedCores);
    int32_t total = 0;
    for (uint32_t i = 0; i < blocks; ++i) total += slot.GetValue(i);
    sum.SetValue(b, total);
  }));
}

// rounds x SyncAll, each block counting in done[b] the ones it passed; block `bad` fails before
// round failAt: kind 0 reads past its GM buffer, 1 throws a C++ exception.
TWIN_EXPORT int twin_sync_fail(int kind, int32_t *done, uint32_t blocks, uint32_t bad, uint32_t failAt,
                               uint32_t rounds) {
  return Reported(ms_ops::twin::LaunchCooperative("twin_sync_fail", blocks, 0, [&] {
    const int64_t b = GetBlockIdx();
    GlobalTensor<int32_t> d = Gm<int32_t>(done, blocks);
    for (uint32_t r = 0; r < rounds; ++r) {
      if (b == bad && r == failAt) {
        if (kind == 0) d.GetValue(blocks);
        else throw std::runtime_error("kernel bug");
      }
      SyncAll();
      d.SetValue(b, static_cast<int32_t>(r + 1));
    }
  }));
}

// rounds x (each block fills its UB buffer of n int32 with (b << 16) | r, SyncAll, and counts in
// bad[b] the elements that no longer hold it): the blocks take turns on the cores while they wait,
// and each must find its own UB as it left it.
TWIN_EXPORT int twin_sync_keeps_ub(int32_t *bad, uint32_t blocks, uint32_t n, uint32_t rounds) {
  return Reported(ms_ops::twin::LaunchCooperative("twin_sync_keeps_ub", blocks, 0, [&] {
    const int64_t b = GetBlockIdx();
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, Bytes32(uint64_t(n) * 4));
    const LocalTensor<int32_t> x = buf.Get<int32_t>();
    int32_t wrong = 0;
    for (uint32_t r = 0; r < rounds; ++r) {
      const int32_t mark = static_cast<int32_t>(b << 16 | r);
      Duplicate(x, mark, static_cast<int32_t>(n));
      Order<HardEvent::V_S>();
      SyncAll();
      for (uint32_t i = 0; i < n; ++i) wrong += x.GetValue(i) != mark;
      Order<HardEvent::S_V>();
    }
    Gm<int32_t>(bad, blocks).SetValue(b, wrong);
  }));
}

// SyncAll under the ordinary launcher.
TWIN_EXPORT int twin_sync_plain(uint32_t blocks) { return Run("twin_sync_plain", blocks, [] { SyncAll(); }); }

// A launch's GM workspace of `bytes` (twin_memory.h: one spare mapping kept between launches):
// stale[0] counts its bytes that are not 0xFF when the kernel starts; the kernel then zeroes it, as
// a kernel that uses its workspace leaves it written.
TWIN_EXPORT int twin_workspace(uint32_t bytes, uint32_t *stale) {
  const ms_ops::twin::Workspace ws(bytes);
  return Run("twin_workspace", 1, [&] {
    GlobalTensor<uint8_t> g = Gm<uint8_t>(ws.data(), bytes);
    uint32_t count = 0;
    for (uint32_t i = 0; i < bytes; ++i) count += g.GetValue(i) != 0xFF;
    stale[0] = count;
    for (uint32_t i = 0; i < bytes; ++i) g.SetValue(i, 0);
  });
}

// ---- Matmul with operands in UB (and a scalar A), C into UB ----

// n x n x n fp32 (n a multiple of 8, so that every UB row block is 32-byte aligned). mode 0: A, B
// and bias loaded into VECOUT, C by IterateAll into VECIN, with the settings a CANN kernel makes
// (SetHF32, workspaces, SetSelfDefineData, the asynchronous IterateAll and WaitIterateAll); mode 1:
// A the scalar s, B and C in GM; mode 2: A in UB through a MatmulType at GM (refused); mode 3: C
// into a UB tensor one row short (refused); mode 4: an NZ B (refused).
TWIN_EXPORT int twin_matmul_local(int mode, float *a, float *b, float *bias, float *c, int n, float s) {
  const TCubeTiling t = SquareTiling(n);
  return Run("twin_matmul_local", 1, [&] {
    using Ub = MatmulType<TPosition::VECOUT, CubeFormat::ND, float>;
    using UbC = MatmulType<TPosition::VECIN, CubeFormat::ND, float>;
    const uint32_t nn = uint32_t(n) * n;
    TPipe pipe;
    TQue<QuePosition::VECOUT, 1> inA, inB, inBias;
    TQue<QuePosition::VECIN, 1> outC;
    TBuf<TPosition::VECCALC> work;
    pipe.InitBuffer(inA, 1, nn * 4);
    pipe.InitBuffer(inB, 1, nn * 4);
    pipe.InitBuffer(inBias, 1, Bytes32(uint64_t(n) * 4));
    pipe.InitBuffer(outC, 1, nn * 4);
    pipe.InitBuffer(work, 1024);
    // UB operands as a kernel makes them: in through MTE2, handed on by the vector unit.
    auto load = [&](TQue<QuePosition::VECOUT, 1> &q, float *p, uint32_t count) {
      LocalTensor<float> x = q.AllocTensor<float>();
      Load(x, Gm<float>(p, count), count);
      Order<HardEvent::MTE2_V>();
      Adds(x, x, 0.0f, static_cast<int32_t>(count));
      q.EnQue(x);
      return q.DeQue<float>();
    };
    if (mode == 0) {
      Matmul<Ub, Ub, UbC, Ub> mm;
      REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
      LocalTensor<float> la = load(inA, a, nn), lb = load(inB, b, nn), lbias = load(inBias, bias, uint32_t(n));
      mm.SetWorkspace(Gm<float>(c, nn));
      mm.SetLocalWorkspace(work.Get<uint8_t>());
      mm.SetHF32(true, 1);
      mm.SetSelfDefineData(7);
      mm.SetUserDefInfo(9);
      mm.SetTensorA(la);
      mm.SetTensorB(lb);
      mm.SetBias(lbias);
      LocalTensor<float> lc = outC.AllocTensor<float>();
      mm.IterateAll<false>(lc);
      mm.WaitIterateAll();
      mm.End();
      outC.EnQue(lc);
      lc = outC.DeQue<float>();
      Store(Gm<float>(c, nn), lc, nn);
      outC.FreeTensor(lc);
      inA.FreeTensor(la);
      inB.FreeTensor(lb);
      inBias.FreeTensor(lbias);
    } else if (mode == 1) {
      Matmul<F32, F32, F32> mm;
      REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
      mm.SetTensorA(s);
      mm.SetTensorB(Gm<float>(b, nn));
      mm.IterateAll(Gm<float>(c, nn));
      mm.End();
    } else if (mode == 2) {
      Matmul<F32, F32, F32> mm;
      REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
      LocalTensor<float> la = load(inA, a, nn);
      mm.SetTensorA(la);
      inA.FreeTensor(la);
    } else if (mode == 3) {
      Matmul<Ub, Ub, UbC> mm;
      REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
      LocalTensor<float> la = load(inA, a, nn), lb = load(inB, b, nn);
      mm.SetTensorA(la);
      mm.SetTensorB(lb);
      LocalTensor<float> lc = outC.AllocTensor<float>();
      mm.IterateAll(lc[n]);
      outC.FreeTensor(lc);
      inA.FreeTensor(la);
      inB.FreeTensor(lb);
    } else {
      using Nz = MatmulType<TPosition::GM, CubeFormat::NZ, float>;
      Matmul<F32, Nz, F32> mm;
      REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t);
      mm.SetTensorA(Gm<float>(a, nn));
      mm.SetTensorB(Gm<float>(b, nn));
      mm.IterateAll(Gm<float>(c, nn));
    }
  });
}
