// AscendC kernels for the twin's level-0 vector API (masks, repeats, strides), the per-repeat
// reductions, Brcb / Gather / CreateVecIndex, store atomics and the TQueBind / TBuf extras, with C
// entry points for tests/test_twin_api.py. Each returns the launch's status (0, or 1 after a twin
// violation, printed on stderr as `ms_ops <kernel>: block <b>: <call>: <what>`).
#include <chrono>
#include <cstdint>
#include <thread>
#include <type_traits>

#include "case_utils.h"
#include "kernel_operator.h"

using namespace AscendC;
using namespace twin_cases;

namespace {

// Every UB buffer of these kernels: 16 KiB, room for the widest stride patterns the tests use.
constexpr uint32_t kBuf = 16384;

// One block, one source: x (n elements) and z's old contents (nz elements) into UB, then
// op(out, a, old, scratch) on a copy of the old contents (lanes a call leaves alone keep them, for
// the test to see), with a 1 KiB scratch buffer, and out back into z.
template <typename T, class Op>
int OverOld(const char *name, void *x, uint32_t n, void *z, uint32_t nz, Op op) {
  return Run(name, 1, [&] {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx, qz;
    TQue<QuePosition::VECOUT, 1> qo;
    TBuf<TPosition::VECCALC> tmp;
    pipe.InitBuffer(qx, 1, kBuf);
    pipe.InitBuffer(qz, 1, kBuf);
    pipe.InitBuffer(qo, 1, kBuf);
    pipe.InitBuffer(tmp, 1024);
    const GlobalTensor<T> zg = Gm<T>(z, nz);
    LocalTensor<T> a = LoadIn(qx, Gm<T>(x, n), n), old = LoadIn(qz, zg, nz);
    LocalTensor<T> out = qo.AllocTensor<T>();
    DataCopy(out, old, nz);
    op(out, a, old, tmp.Get<uint8_t>());
    qx.FreeTensor(a);
    qz.FreeTensor(old);
    StoreOut(qo, out, zg, nz);
  });
}

// How a level-0 call gets its mask: 0 bitwise argument, 1 contiguous argument, 2 bits set
// beforehand with SetVectorMask and isSetMask = false, 3 counter mode (SetMaskCount, count set
// with SetVectorMask<T, COUNTER>, isSetMask = false).
struct MaskArgs {
  int kind;
  uint64_t bits[2];
  uint64_t len;
};

// op on (x, y) into z (z's old contents in, for the masked-off lanes): 0 Add, 1 Muls by 2,
// 2 Reciprocal, 3 LeakyRelu 0.5, 4 Duplicate 7, 5 Max, 6 Rsqrt. strides: dstBlk, srcBlk,
// dstRep, srcRep (both sources alike).
template <typename T, bool set>
void Level0(int op, const LocalTensor<T> &z, const LocalTensor<T> &x, const LocalTensor<T> &y, const MaskArgs &m,
            uint8_t repeat, const uint32_t *s) {
  const BinaryRepeatParams bp(s[0], s[1], s[1], s[2], s[3], s[3]);
  const UnaryRepeatParams up(s[0], s[1], s[2], s[3]);
  const bool bits = m.kind == 0;
  const uint64_t len = set ? m.len : MASK_PLACEHOLDER;
  const uint64_t *mask = set ? m.bits : MASK_PLACEHOLDER_LIST;
  switch (op) {
    case 0: bits ? Add<T, set>(z, x, y, mask, repeat, bp) : Add<T, set>(z, x, y, len, repeat, bp); break;
    case 1: bits ? Muls<T, set>(z, x, T(2), mask, repeat, up) : Muls<T, set>(z, x, T(2), len, repeat, up); break;
    case 2: bits ? Reciprocal<T, set>(z, x, mask, repeat, up) : Reciprocal<T, set>(z, x, len, repeat, up); break;
    case 3:
      bits ? LeakyRelu<T, set>(z, x, T(0.5), mask, repeat, up) : LeakyRelu<T, set>(z, x, T(0.5), len, repeat, up);
      break;
    case 4:
      bits ? Duplicate<T, set>(z, T(7), mask, repeat, s[0], s[2]) : Duplicate<T, set>(z, T(7), len, repeat, s[0], s[2]);
      break;
    case 5: bits ? Max<T, set>(z, x, y, mask, repeat, bp) : Max<T, set>(z, x, y, len, repeat, bp); break;
    default: bits ? Rsqrt<T, set>(z, x, mask, repeat, up) : Rsqrt<T, set>(z, x, len, repeat, up); break;
  }
}

template <typename T>
int Vec0(int op, int kind, void *x, void *y, void *z, uint32_t n, uint64_t m0, uint64_t m1, uint64_t len,
         uint32_t repeat, const uint32_t *strides) {
  return Run("twin_vec0", 1, [&] {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx, qy, qz;
    TQue<QuePosition::VECOUT, 1> qo;
    pipe.InitBuffer(qx, 1, kBuf);
    pipe.InitBuffer(qy, 1, kBuf);
    pipe.InitBuffer(qz, 1, kBuf);
    pipe.InitBuffer(qo, 1, kBuf);
    const GlobalTensor<T> zg = Gm<T>(z, n);
    LocalTensor<T> a = LoadIn(qx, Gm<T>(x, n), n), b = LoadIn(qy, Gm<T>(y, n), n), old = LoadIn(qz, zg, n);
    LocalTensor<T> out = qo.AllocTensor<T>();
    DataCopy(out, old, n);
    const MaskArgs m{kind, {m0, m1}, len};
    if (kind == 2) SetVectorMask<T>(m1, m0);
    if (kind == 3) {
      SetMaskCount();
      SetVectorMask<T, MaskMode::COUNTER>(0, len);
    }
    if (kind <= 1) Level0<T, true>(op, out, a, b, m, static_cast<uint8_t>(repeat), strides);
    else Level0<T, false>(op, out, a, b, m, static_cast<uint8_t>(repeat), strides);
    if (kind == 3) SetMaskNorm();
    qx.FreeTensor(a);
    qy.FreeTensor(b);
    qz.FreeTensor(old);
    StoreOut(qo, out, zg, n);
  });
}

// which: 0 WholeReduceMax, 1 WholeReduceMin, 2 WholeReduceSum, 3 BlockReduceMax, 4 BlockReduceMin,
// 5 BlockReduceSum, 6 PairReduceSum; bitwise mask when `bits`, else contiguous `len`.
template <typename T>
void Reduce0(int which, const LocalTensor<T> &d, const LocalTensor<T> &s, bool bits, const uint64_t *mask,
             int32_t len, int32_t repeat, int32_t dstRep, int32_t srcBlk, int32_t srcRep, ReduceOrder order) {
  switch (which) {
    case 0:
      bits ? WholeReduceMax(d, s, mask, repeat, dstRep, srcBlk, srcRep, order)
           : WholeReduceMax(d, s, len, repeat, dstRep, srcBlk, srcRep, order);
      break;
    case 1:
      bits ? WholeReduceMin(d, s, mask, repeat, dstRep, srcBlk, srcRep, order)
           : WholeReduceMin(d, s, len, repeat, dstRep, srcBlk, srcRep, order);
      break;
    case 2:
      bits ? WholeReduceSum(d, s, mask, repeat, dstRep, srcBlk, srcRep)
           : WholeReduceSum(d, s, len, repeat, dstRep, srcBlk, srcRep);
      break;
    case 3:
      bits ? BlockReduceMax(d, s, repeat, mask, dstRep, srcBlk, srcRep)
           : BlockReduceMax(d, s, repeat, len, dstRep, srcBlk, srcRep);
      break;
    case 4:
      bits ? BlockReduceMin(d, s, repeat, mask, dstRep, srcBlk, srcRep)
           : BlockReduceMin(d, s, repeat, len, dstRep, srcBlk, srcRep);
      break;
    case 5:
      bits ? BlockReduceSum(d, s, repeat, mask, dstRep, srcBlk, srcRep)
           : BlockReduceSum(d, s, repeat, len, dstRep, srcBlk, srcRep);
      break;
    default:
      bits ? PairReduceSum(d, s, repeat, mask, dstRep, srcBlk, srcRep)
           : PairReduceSum(d, s, repeat, len, dstRep, srcBlk, srcRep);
      break;
  }
}

template <typename T>
int Red0(int which, int bits, void *x, void *z, uint32_t n, uint32_t nz, uint64_t m0, uint64_t m1, int32_t len,
         int32_t repeat, int32_t dstRep, int32_t srcBlk, int32_t srcRep, int order) {
  return OverOld<T>("twin_reduce0", x, n, z, nz, [&](const LocalTensor<T> &out, const LocalTensor<T> &a,
                                                     const LocalTensor<T> &, const LocalTensor<uint8_t> &) {
    const uint64_t mask[2] = {m0, m1};
    Reduce0(which, out, a, bits != 0, mask, len, repeat, dstRep, srcBlk, srcRep, static_cast<ReduceOrder>(order));
  });
}

}  // namespace

TWIN_EXPORT int twin_vec0_f32(int op, int kind, void *x, void *y, void *z, uint32_t n, uint64_t m0, uint64_t m1,
                              uint64_t len, uint32_t repeat, const uint32_t *strides) {
  return Vec0<float>(op, kind, x, y, z, n, m0, m1, len, repeat, strides);
}
TWIN_EXPORT int twin_vec0_f16(int op, int kind, void *x, void *y, void *z, uint32_t n, uint64_t m0, uint64_t m1,
                              uint64_t len, uint32_t repeat, const uint32_t *strides) {
  return Vec0<half>(op, kind, x, y, z, n, m0, m1, len, repeat, strides);
}

TWIN_EXPORT int twin_reduce0_f32(int which, int bits, void *x, void *z, uint32_t n, uint32_t nz, uint64_t m0,
                                 uint64_t m1, int32_t len, int32_t repeat, int32_t dstRep, int32_t srcBlk,
                                 int32_t srcRep, int order) {
  return Red0<float>(which, bits, x, z, n, nz, m0, m1, len, repeat, dstRep, srcBlk, srcRep, order);
}
TWIN_EXPORT int twin_reduce0_f16(int which, int bits, void *x, void *z, uint32_t n, uint32_t nz, uint64_t m0,
                                 uint64_t m1, int32_t len, int32_t repeat, int32_t dstRep, int32_t srcBlk,
                                 int32_t srcRep, int order) {
  return Red0<half>(which, bits, x, z, n, nz, m0, m1, len, repeat, dstRep, srcBlk, srcRep, order);
}

// which: 0 Brcb (repeat, dstBlk = a, dstRep = b), 1 Gather (byte offsets in off, base a),
// 2 CreateVecIndex (first a): float x in, float z out (z's old contents in).
TWIN_EXPORT int twin_fill(int which, float *x, uint32_t *off, float *z, uint32_t n, uint32_t nz, uint32_t repeat,
                          uint32_t a, uint32_t b) {
  return Run("twin_fill", 1, [&] {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx, qi, qz;
    TQue<QuePosition::VECOUT, 1> qo;
    pipe.InitBuffer(qx, 1, kBuf);
    pipe.InitBuffer(qi, 1, kBuf);
    pipe.InitBuffer(qz, 1, kBuf);
    pipe.InitBuffer(qo, 1, kBuf);
    const GlobalTensor<float> zg = Gm<float>(z, nz);
    LocalTensor<float> s = LoadIn(qx, Gm<float>(x, n), n), old = LoadIn(qz, zg, nz);
    LocalTensor<uint32_t> idx = LoadIn(qi, Gm<uint32_t>(off, nz), nz);
    LocalTensor<float> out = qo.AllocTensor<float>();
    DataCopy(out, old, nz);
    if (which == 0) Brcb(out, s, static_cast<uint8_t>(repeat), BrcbRepeatParams(a, b));
    else if (which == 1) Gather(out, s, idx, a, nz);
    else CreateVecIndex(out, static_cast<float>(a), nz);
    qx.FreeTensor(s);
    qi.FreeTensor(idx);
    qz.FreeTensor(old);
    StoreOut(qo, out, zg, nz);
  });
}

// `blocks` blocks combine their row x[b * n ..] into z with the store atomic `op` (0 Add, 1 Max,
// 2 Min), through DataCopy (pad = 0) or DataCopyPad (pad = 1: DataCopyExtParams, 2: DataCopyParams
// in braces); T: float (f16 = 0) or half.
template <typename T>
int Atomic(int op, int pad, void *x, void *z, uint32_t n, uint32_t blocks, int mismatch) {
  return Run("twin_atomic", blocks, [&] {
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, kBuf);
    LocalTensor<T> t = q.AllocTensor<T>();
    DataCopy(t, Gm<T>(x, uint64_t(n) * blocks)[uint64_t(GetBlockIdx()) * n], n);
    q.EnQue(t);
    LocalTensor<T> o = q.DeQue<T>();
    if (mismatch) SetAtomicAdd<int32_t>();
    else if (op == 0) SetAtomicAdd<T>();
    else if (op == 1) SetAtomicMax<T>();
    else SetAtomicMin<T>();
    if (pad == 1) {
      DataCopyPad(Gm<T>(z, n), o, DataCopyExtParams(1, n * sizeof(T), 0, 0, 0));
    } else if (pad == 2) {
      // Four values in braces are DataCopyParams: DataCopyExtParams takes five, as CANN's does.
      DataCopyPad(Gm<T>(z, n), o, {1, static_cast<uint16_t>(n * sizeof(T)), 0, 0});
    } else {
      DataCopy(Gm<T>(z, n), o, n);
    }
    SetAtomicNone();
    q.FreeTensor(o);
  });
}

TWIN_EXPORT int twin_atomic(int f16, int op, int pad, void *x, void *z, uint32_t n, uint32_t blocks, int mismatch) {
  return f16 ? Atomic<half>(op, pad, x, z, n, blocks, mismatch) : Atomic<float>(op, pad, x, z, n, blocks, mismatch);
}

// A TQueBind<VECIN, VECOUT> passing data GM -> UB -> GM through the user-position forms of
// EnQue / DeQue, and a TBuf handing out its tensor with AllocTensor: z = x + 1. skip = 1 leaves
// out the DeQue before the copy out (a race the checks find).
TWIN_EXPORT int twin_bind(float *x, float *z, uint32_t n, int skip) {
  return Run("twin_bind", 1, [&] {
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> q;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(q, 1, n * sizeof(float));
    pipe.InitBuffer(buf, n * sizeof(float));
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, Gm<float>(x, n), n);
    q.EnQue<TPosition::GM, TPosition::VECIN, float>(t);
    LocalTensor<float> v = q.DeQue<TPosition::GM, TPosition::VECIN, float>();
    LocalTensor<float> one = buf.AllocTensor<float>();
    Duplicate(one, 1.0f, n);
    Add(v, v, one, n);
    buf.FreeTensor(one);
    q.EnQue<TPosition::VECOUT, TPosition::GM, float>(v);
    LocalTensor<float> o = skip ? v : q.DeQue<TPosition::VECOUT, TPosition::GM, float>();
    DataCopy(Gm<float>(z, n), o, n);
    if (skip) q.DeQue<TPosition::VECOUT, TPosition::GM, float>();
    q.FreeTensor(o);
  });
}

// A TBuf over the whole 192 KiB UB (as real kernels request it) written at element `at` (floats):
// the usable part is fine, the reserved top is not.
TWIN_EXPORT int twin_reserved_ub(uint32_t at, float *z) {
  return Run("twin_reserved_ub", 1, [&] {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, ms_ops::twin::kUbBytes);
    LocalTensor<float> t = buf.Get<float>()[at];
    Duplicate(t, 3.0f, 8);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(Gm<float>(z, 8), t, 8);
  });
}

// Vector ops whose destination overlaps their source, on x (256 floats) into z (256 floats): 0 x
// narrowed to halves kept in the back half of a 1 KiB float destination and widened into it, 1 the
// same halves at the destination's start, 2 Adds(+1) writing 8 floats behind its source, 3 Adds(+1)
// writing 8 floats ahead of it.
TWIN_EXPORT int twin_overlap(int which, float *x, float *z) {
  return Run("twin_overlap", 1, [&] {
    constexpr uint32_t n = 256;
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 3 * n * sizeof(float));
    LocalTensor<float> f = buf.Get<float>(), in = which <= 1 ? f[2 * n] : f[8];
    DataCopy(in, Gm<float>(x, n), n);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    LocalTensor<float> out = f;
    if (which <= 1) {
      LocalTensor<half> h = f.ReinterpretCast<half>()[which == 0 ? n : 0];
      Cast(h, in, RoundMode::CAST_NONE, n);
      Cast(f, h, RoundMode::CAST_NONE, n);
    } else if (which == 2) {
      Adds(f, in, 1.0f, n);
    } else {
      out = f[16];
      Adds(out, in, 1.0f, n);
    }
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(Gm<float>(z, n), out, n);
  });
}

// Debug output on x (8 floats): PRINTF of the block index and a half, DumpTensor of 4 elements of
// x in UB (desc 7), and of x's 6 elements in GM as 2 x 3 (desc 9); `over` dumps 9 UB elements
// of an 8-element tensor.
TWIN_EXPORT int twin_dump(float *x, int over) {
  return Run("twin_dump", 1, [&] {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 32);
    LocalTensor<float> t = buf.Get<float>();
    GlobalTensor<float> g = Gm<float>(x, 8);
    DataCopy(t, g, 8);
    SetFlag<HardEvent::MTE2_S>(0);
    WaitFlag<HardEvent::MTE2_S>(0);
    PRINTF("block %d of %d: %f\n", static_cast<int>(GetBlockIdx()), static_cast<int>(GetBlockNum()), half(1.5f));
    DumpTensor(t, 7, over ? 9 : 4);
    const uint32_t dims[2] = {2, 3};
    DumpTensor(g, 9, 6, ShapeInfo(2, dims));
  });
}

// GetSystemCycle before and after a sleep of `us` microseconds, into c[0] and c[1].
TWIN_EXPORT int twin_cycles(uint32_t us, int64_t *c) {
  return Run("twin_cycles", 1, [&] {
    c[0] = GetSystemCycle();
    std::this_thread::sleep_for(std::chrono::microseconds(us));
    c[1] = GetSystemCycle();
  });
}

// An int4b_t tensor: 0 a UB byte buffer viewed as int4b_t, 1 a GM buffer as int4b_t. Both are
// refused; a kernel whose int4 path is not taken compiles (its half -> int4b_t Cast too, 3) and
// runs (z[0] = IsSameType of int4b_t).
TWIN_EXPORT int twin_int4(int which, float *z) {
  return Run("twin_int4", 1, [&] {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 32);
    z[0] = IsSameType<int4b_t, int4b_t>::value && !IsSameType<int8_t, int4b_t>::value ? 1.0f : 0.0f;
    if (which == 0) {
      buf.Get<int8_t>().ReinterpretCast<int4b_t>();
    } else if (which == 1) {
      GlobalTensor<int4b_t> g;
      g.SetGlobalBuffer(reinterpret_cast<__gm__ int4b_t *>(z), 8);
    } else if (which == 3) {
      // Never called: that a quantising kernel's half <-> int4b_t Cast compiles is the test.
      LocalTensor<int4b_t> q;
      Cast(q, buf.Get<half>(), RoundMode::CAST_RINT, 16);
    }
  });
}

// The advanced API and the remaining fills on float x (n elements) into z (z's old contents in):
// 0 Log, 1 Log2, 2 Log10, 3 Sigmoid (with a scratch buffer), 4 Sum over rows of 16 (first 10
// summed), 5 ArithProgression(2, 0.5), 6 level-0 Copy of lanes 0..31 (block strides 2 and 1,
// repeat strides 16 and 8, 2 repeats), 7 ASSERT on n > 1000, 8 Tanh, 9 Sign, 10 Power(x, z),
// 11 Power(x, 1.5), 12 Power(2, x) (over x's size), 13 Floor (with a scratch buffer), 14
// Compares(x > 1) into z's first n / 8 bytes, 15 Erf, 16 Atan, 17 FusedMulAdd(z, x, z): z = x z + z,
// 18 MulAddDst(z, x, z): z = x z + z, 19 z[0] = half(x[0]) and z[1] = floor(x[0]) by the scalar Cast,
// 20 Trap.
TWIN_EXPORT int twin_adv(int which, float *x, float *z, uint32_t n) {
  return OverOld<float>("twin_adv", x, n, z, n, [&](const LocalTensor<float> &out, const LocalTensor<float> &a,
                                                   const LocalTensor<float> &old,
                                                   const LocalTensor<uint8_t> &scratch) {
    switch (which) {
      case 0: Log(out, a, n); break;
      case 1: Log2(out, a, n); break;
      case 2: Log10(out, a, n); break;
      case 3: Sigmoid(out, a, scratch, n); break;
      case 4: Sum(out, a, scratch, SumParams{n / 16, 16, 10}); break;
      case 5: ArithProgression(out, 2.0f, 0.5f, static_cast<int32_t>(n)); break;
      case 6: {
        const uint64_t mask[2] = {0xFFFFFFFFull, 0};
        Copy(out, a, mask, 2, CopyRepeatParams(2, 1, 16, 8));
        break;
      }
      case 7: ASSERT(n > 1000); break;
      case 8: Tanh(out, a, n); break;
      case 9: Sign(out, a, n); break;
      case 10: Power(out, a, old, n); break;
      case 11: Power(out, a, 1.5f, scratch, n); break;
      case 12: {
        LocalTensor<float> first = a;
        first.SetSize(n);
        Power(out, 2.0f, first);
        break;
      }
      case 13: Floor(out, a, scratch, n); break;
      case 14: Compares(out.ReinterpretCast<uint8_t>(), a, 1.0f, CMPMODE::GT, n); break;
      case 15: Erf(out, a, n); break;
      case 17: FusedMulAdd(out, a, old, n); break;
      case 18: MulAddDst(out, a, old, n); break;
      case 19: {
        // Scalar conversions: x[0] to half (nearest) and to int32 (floor), back in float.
        PipeBarrier<PIPE_ALL>();
        const float v = a.GetValue(0);
        out.SetValue(0, static_cast<float>(ScalarCast<float, half, RoundMode::CAST_RINT>(v)));
        out.SetValue(1, static_cast<float>(Cast<float, int32_t, RoundMode::CAST_FLOOR>(v)));
        SetFlag<HardEvent::S_V>(EVENT_ID0);
        WaitFlag<HardEvent::S_V>(EVENT_ID0);
        break;
      }
      case 20: Trap();
      default: Atan(out, a, n); break;
    }
  });
}

// A TBuf tensor whose size reaches 128 bytes past its 256-byte buffer: writing the first `count`
// floats of it is fine up to the buffer's end (32 floats), an error beyond.
TWIN_EXPORT int twin_tbuf_past_end(int32_t count, float *z) {
  return Run("twin_tbuf_past_end", 1, [&] {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 256);
    LocalTensor<float> t = buf.GetWithOffset<float>(64, 128);
    Duplicate(t, 5.0f, count);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(Gm<float>(z, 32), t, 32);
  });
}

// Top-k building blocks on n float scores with uint32 indices; out receives the (score, index)
// structures as float pairs (index bits in the odd floats). which: 0 Sort32 of each 32; 1 Sort32
// then MrgSort of the 4 sorted queues (n = 128): a full descending sort; 2 the same merge of
// queues 1 and 2 only with ifExhaustedSuspension, counts[4] from GetMrgSortResult.
TWIN_EXPORT int twin_sort(int which, float *scores, uint32_t *index, float *out, uint32_t n, uint16_t *counts) {
  return Run("twin_sort", 1, [&] {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qs, qi;
    TQue<QuePosition::VECOUT, 1> qo;
    TBuf<TPosition::VECCALC> tmp;
    pipe.InitBuffer(qs, 1, kBuf);
    pipe.InitBuffer(qi, 1, kBuf);
    pipe.InitBuffer(qo, 1, kBuf);
    pipe.InitBuffer(tmp, kBuf);
    LocalTensor<float> s = LoadIn(qs, Gm<float>(scores, n), n);
    LocalTensor<uint32_t> i = LoadIn(qi, Gm<uint32_t>(index, n), n);
    LocalTensor<float> o = qo.AllocTensor<float>();
    if (which == 0) {
      Sort32(o, s, i, static_cast<int32_t>(n / 32));
    } else {
      LocalTensor<float> sorted = tmp.Get<float>();
      Sort32(sorted, s, i, static_cast<int32_t>(n / 32));
      const uint16_t lengths[4] = {32, 32, 32, 32};
      const MrgSortSrcList<float> queues(sorted, sorted[64], sorted[128], sorted[192]);
      MrgSort(o, queues, MrgSort4Info(lengths, which == 2, which == 2 ? 3 : 15, 1));
      if (which == 2) GetMrgSortResult(counts[0], counts[1], counts[2], counts[3]);
    }
    qs.FreeTensor(s);
    qi.FreeTensor(i);
    StoreOut(qo, o, Gm<float>(out, 2 * n), 2 * n);
  });
}

// A mixed launch of `groups` groups. Each round r < rounds: the AIC writes r * 100 + group into
// its GM slot and releases its AIVs (mode 2); each AIV reads it and writes value * 10 + sub into
// out[round][GetBlockIdx()], then both AIVs release the AIC for the next round. A final
// SyncAll<false> joins every core, SyncAll<true> the AIVs; then each AIV records GetBlockNum,
// GetTaskRation and whether ASCEND_IS_AIV holds. bad: 1 mode 1 on the AIC, 2 flag id 16.
TWIN_EXPORT int twin_mixed(uint32_t groups, uint32_t rounds, float *slots, float *out, int32_t *info, int bad) {
  return Reported(ms_ops::twin::LaunchMixed("twin_mixed", groups, 0, [&] {
    const GlobalTensor<float> slot = Gm<float>(slots, groups), o = Gm<float>(out, uint64_t(rounds) * groups * 2);
    const int64_t g = ASCEND_IS_AIC ? GetBlockIdx() : GetBlockIdx() / GetTaskRation();
    for (uint32_t r = 0; r < rounds; ++r) {
      if ASCEND_IS_AIC {
        slot.SetValue(g, float(r * 100 + g));
        if (bad == 1) CrossCoreSetFlag<1, PIPE_S>(0);
        CrossCoreSetFlag<2, PIPE_S>(bad == 2 ? 16 : 0);
        CrossCoreWaitFlag(1);
      } else {
        CrossCoreWaitFlag(0);
        o.SetValue(uint64_t(r) * groups * 2 + GetBlockIdx(), slot.GetValue(g) * 10 + float(GetSubBlockIdx()));
        CrossCoreSetFlag<2, PIPE_MTE3>(1);
      }
    }
    SyncAll<false>();
    if ASCEND_IS_AIV {
      SyncAll<true>();
      const GlobalTensor<int32_t> inf = Gm<int32_t>(info, uint64_t(groups) * 2 * 3);
      inf.SetValue(GetBlockIdx() * 3, int32_t(GetBlockNum()));
      inf.SetValue(GetBlockIdx() * 3 + 1, int32_t(GetTaskRation()));
      inf.SetValue(GetBlockIdx() * 3 + 2, ASCEND_IS_AIV ? 1 : 0);
    }
  }));
}

// Cross-core flags in a launch of vector cores only (2 blocks): 0 mode 1 (an error there), 1 mode 0
// set and waited for under Launch, whose blocks do not all run at once (an error).
TWIN_EXPORT int twin_crosscore_plain(int which) {
  return Run("twin_crosscore_plain", 2, [&] {
    if (which == 0) {
      CrossCoreSetFlag<1, PIPE_S>(0);
    } else {
      CrossCoreSetFlag<0, PIPE_S>(0);
      CrossCoreWaitFlag(0);
    }
  });
}

// Mode 0 flags among `blocks` vector cores launched together: SlotRounds meeting by a set of and a
// wait for flag 3. bad: 1 block 1 waits without having set, 2 block 0 sets 16 times.
TWIN_EXPORT int twin_aiv_flags(int32_t *slots, int32_t *sums, uint32_t blocks, uint32_t rounds, int bad) {
  return Reported(ms_ops::twin::LaunchCooperative("twin_aiv_flags", blocks, 0, [&] {
    const int64_t b = GetBlockIdx();
    SlotRounds(b, blocks, blocks, rounds, slots, sums, [&] {
      if (!(bad == 1 && b == 1)) CrossCoreSetFlag<0, PIPE_MTE3>(3);
      if (bad == 2 && b == 0)
        for (int i = 0; i < 15; ++i) CrossCoreSetFlag<0, PIPE_MTE3>(3);
      CrossCoreWaitFlag(3);
    });
  }));
}

// A TBufPool of 2 KiB: stage 1 takes a 1 KiB VECIN queue and a 512-byte TBuf from it (z[0..n) =
// x + 1), Reset, stage 2 takes a 2 KiB TBuf (z[n..2n) = x * 2) reusing the same bytes; a second
// pool shares the first's memory. over = 1 asks stage 2 for 2 KiB + 32 bytes.
TWIN_EXPORT int twin_buf_pool(float *x, float *z, uint32_t n, int over) {
  return Run("twin_buf_pool", 1, [&] {
    TPipe pipe;
    TBufPool<TPosition::VECCALC> pool, shared;
    pipe.InitBufPool(pool, 2048);
    pipe.InitBufPool(shared, 1024, pool);
    TQue<QuePosition::VECIN, 1> q;
    TBuf<TPosition::VECCALC> one, big;
    pool.InitBuffer(q, 1, 1024);
    pool.InitBuffer(one, 512);
    LocalTensor<float> t = LoadIn(q, Gm<float>(x, n), n);
    LocalTensor<float> o = one.Get<float>();
    Adds(o, t, 1.0f, n);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(Gm<float>(z, 2 * n), o, n);
    q.FreeTensor(t);
    PipeBarrier<PIPE_ALL>();
    pool.Reset();
    pool.InitBuffer(big, over ? 2048 + 32 : 2048);
    LocalTensor<float> b = big.Get<float>();
    DataCopy(b, Gm<float>(x, n), n);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Muls(b, b, 2.0f, n);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(Gm<float>(z, 2 * n)[n], b, n);
    if (reinterpret_cast<uintptr_t>(shared.TwinBase()) != reinterpret_cast<uintptr_t>(pool.TwinBase()))
      ms_ops::twin::Fail("twin_buf_pool", "the shared pool does not lie over its pool");
  });
}

namespace {

template <typename T, typename U>
void CastPair(int mode, void *x, void *z, uint32_t n) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> qx;
  TQue<QuePosition::VECOUT, 1> qo;
  pipe.InitBuffer(qx, 1, kBuf);
  pipe.InitBuffer(qo, 1, kBuf);
  LocalTensor<U> s = LoadIn(qx, Gm<U>(x, n), n);
  LocalTensor<T> o = qo.AllocTensor<T>();
  Cast(o, s, static_cast<RoundMode>(mode), n);
  qx.FreeTensor(s);
  StoreOut(qo, o, Gm<T>(z, n), n);
}

}  // namespace

// The further Cast pairs of Atlas A2 (n a multiple of 32 elements). pair: 0 half -> int8,
// 1 int32 -> float, 2 float -> int64, 3 int16 -> half, 4 int64 -> int32, 5 bfloat16 -> int32,
// 6 int32 -> int16, 7 int32 -> half after SetDeqScale(0.5), 8 int32 -> half with DEQSCALE unset.
TWIN_EXPORT int twin_cast_pair(int pair, int mode, void *x, void *z, uint32_t n) {
  return Run("twin_cast_pair", 1, [&] {
    switch (pair) {
      case 0: CastPair<int8_t, half>(mode, x, z, n); break;
      case 1: CastPair<float, int32_t>(mode, x, z, n); break;
      case 2: CastPair<int64_t, float>(mode, x, z, n); break;
      case 3: CastPair<half, int16_t>(mode, x, z, n); break;
      case 4: CastPair<int32_t, int64_t>(mode, x, z, n); break;
      case 5: CastPair<int32_t, bfloat16_t>(mode, x, z, n); break;
      case 6: CastPair<int16_t, int32_t>(mode, x, z, n); break;
      case 7:
        SetDeqScale(static_cast<half>(0.5f));
        CastPair<half, int32_t>(mode, x, z, n);
        break;
      default: CastPair<half, int32_t>(mode, x, z, n); break;
    }
  });
}

namespace {

// TransDataTo5HD of T from x (16 rows of rowBlocks data blocks each) into z (zBytes, its old
// contents in): source i is row i's first block, destination j block j of z; with the given repeat
// count, strides and halves. list: 0 uint64_t address arrays, 1 LocalTensor arrays.
template <typename T>
int TransCase(int list, void *x, uint32_t rowBlocks, void *z, uint32_t zBytes, const TransDataTo5HDParams &p) {
  return Run("twin_transdata", 1, [&] {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx, qz;
    TQue<QuePosition::VECOUT, 1> qo;
    pipe.InitBuffer(qx, 1, kBuf);
    pipe.InitBuffer(qz, 1, kBuf);
    pipe.InitBuffer(qo, 1, kBuf);
    const uint32_t per = 32 / sizeof(T), xBytes = 16 * rowBlocks * 32;
    LocalTensor<T> a = LoadIn<T>(qx, x, xBytes), old = LoadIn<T>(qz, z, zBytes);
    LocalTensor<T> out = qo.AllocTensor<T>();
    DataCopy(out, old, zBytes / sizeof(T));
    if (list == 0) {
      uint64_t dst[16], src[16];
      for (uint32_t i = 0; i < 16; ++i) {
        src[i] = a[i * rowBlocks * per].GetPhyAddr();
        dst[i] = out[i * per].GetPhyAddr();
      }
      TransDataTo5HD<T>(dst, src, p);
    } else {
      LocalTensor<T> dst[16], src[16];
      for (uint32_t i = 0; i < 16; ++i) {
        src[i] = a[i * rowBlocks * per];
        dst[i] = out[i * per];
      }
      TransDataTo5HD<T>(dst, src, p);
    }
    qx.FreeTensor(a);
    qz.FreeTensor(old);
    StoreOut(qo, out, z, zBytes);
  });
}

}  // namespace

// TransDataTo5HD: bits 8, 16 or 32 (int8 / half / float), `list` as TransCase, the parameters as given.
TWIN_EXPORT int twin_transdata(int bits, int list, void *x, uint32_t rowBlocks, void *z, uint32_t zBytes, int dstHigh,
                               int srcHigh, int repeat, int dstStride, int srcStride) {
  const TransDataTo5HDParams p(dstHigh != 0, srcHigh != 0, static_cast<uint8_t>(repeat),
                               static_cast<uint16_t>(dstStride), static_cast<uint16_t>(srcStride));
  if (bits == 8) return TransCase<int8_t>(list, x, rowBlocks, z, zBytes, p);
  if (bits == 16) return TransCase<half>(list, x, rowBlocks, z, zBytes, p);
  return TransCase<float>(list, x, rowBlocks, z, zBytes, p);
}

// The basic Transpose of x (16 x 16 half) into z; overlap 1 puts the destination 32 bytes into the
// source (an error).
TWIN_EXPORT int twin_transpose16(half *x, half *z, int overlap) {
  return Run("twin_transpose16", 1, [&] {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx;
    TQue<QuePosition::VECOUT, 1> qo;
    pipe.InitBuffer(qx, 1, kBuf);
    pipe.InitBuffer(qo, 1, kBuf);
    LocalTensor<half> a = LoadIn<half>(qx, x, 512);
    LocalTensor<half> o = qo.AllocTensor<half>();
    Transpose(overlap ? a[16] : o, a);
    if (overlap) DataCopy(o, a, 256);
    qx.FreeTensor(a);
    StoreOut(qo, o, z, 512);
  });
}

// A float tensor list through ListTensorDesc (desc: its GM descriptor, length bytes and count
// tensors given to the constructor unless 0): for tensor i, out[i] = the sum of its elements (read
// through TensorDesc::GetDataObj, sized by its shape), out[16 + i] = its dim, out[32 + i] = its
// last dimension, out[48 + i] = 1 when GetDataPtr agrees with the TensorDesc; out[64] = GetSize().
TWIN_EXPORT int twin_list_tensor(void *desc, uint32_t length, uint32_t count, float *out) {
  return Run("twin_list_tensor", 1, [&] {
    ListTensorDesc list;
    if (length != 0) list.Init(desc, length, count);
    else list.Init(desc);
    GlobalTensor<float> o = Gm<float>(out, 65);
    for (uint32_t i = 0; i < list.GetSize(); ++i) {
      TensorDesc<float> d;
      uint64_t shape[8];
      d.SetShapeAddr(shape);
      list.GetDesc(d, i);
      GlobalTensor<float> g = d.GetDataObj();
      float sum = 0.0f;
      for (uint64_t j = 0; j < g.GetSize(); ++j) sum += g.GetValue(j);
      o.SetValue(i, sum);
      o.SetValue(16 + i, static_cast<float>(d.GetDim()));
      o.SetValue(32 + i, static_cast<float>(d.GetShape(static_cast<uint32_t>(d.GetDim() - 1))));
      o.SetValue(48 + i, list.GetDataPtr<float>(i) == d.GetDataPtr() ? 1.0f : 0.0f);
    }
    o.SetValue(64, static_cast<float>(list.GetSize()));
  });
}

// AscendC's small utilities on float x (n elements) into z (z's old contents in): 0 assert(n >
// 1000, fmt, n), 1 ascendc_assert(n > 1000), 2 ReduceSum with its result read back by GetAccVal<float>
// into z[1] and by GetAccVal() (the raw register) into z[2], 3 AscendCUtils::SetMask<float>(10) and a
// level-0 Adds of 1 that takes the mask register, 4 z[0..7] = g_coreType == AIV, block_idx,
// GetC0Count(2), GetBitSize(4), AlignUp(13, 8), DivCeil(13, 8), block_num * 10 + block_idx + 7, and
// whether GetSysWorkSpacePtr is null before SetSysWorkspace(z) and z after.
TWIN_EXPORT int twin_utils(int which, float *x, float *z, uint32_t n) {
  return OverOld<float>("twin_utils", x, n, z, n, [&](const LocalTensor<float> &out, const LocalTensor<float> &a,
                                                     const LocalTensor<float> &old, const LocalTensor<uint8_t> &) {
    switch (which) {
      case 0: assert(n > 1000, "n is %u", n); break;
      case 1: ascendc_assert(n > 1000); break;
      case 2: {
        ReduceSum(out, a, old, static_cast<int32_t>(n));
        SetFlag<HardEvent::V_S>(EVENT_ID0);
        WaitFlag<HardEvent::V_S>(EVENT_ID0);
        const uint32_t low = static_cast<uint32_t>(GetAccVal());
        float raw;
        std::memcpy(&raw, &low, sizeof(raw));
        out.SetValue(1, GetAccVal<float>());
        out.SetValue(2, raw);
        SetFlag<HardEvent::S_V>(EVENT_ID0);
        WaitFlag<HardEvent::S_V>(EVENT_ID0);
        break;
      }
      case 3:
        AscendCUtils::SetMask<float>(10);
        Adds<float, false>(out, a, 1.0f, MASK_PLACEHOLDER, 1, UnaryRepeatParams());
        AscendCUtils::ResetMask();
        break;
      default: {
        PipeBarrier<PIPE_ALL>();
        // A kernel's own variable of the name hides the twin's.
        const auto shadowed = [] {
          const int64_t block_idx = 7;
          return block_idx;
        };
        const bool noSys = GetSysWorkSpacePtr() == nullptr;
        SetSysWorkspace(reinterpret_cast<GM_ADDR>(z));
        const bool sys = noSys && GetSysWorkSpacePtr() == reinterpret_cast<GM_ADDR>(z);
        const float values[8] = {g_coreType == AIV ? 1.0f : 0.0f, static_cast<float>(block_idx),
                                 static_cast<float>(AscendCUtils::GetC0Count(2)),
                                 static_cast<float>(AscendCUtils::GetBitSize(4)), static_cast<float>(AlignUp(13, 8)),
                                 static_cast<float>(DivCeil(13, 8)), static_cast<float>(block_num * 10 + block_idx + shadowed()), sys ? 1.0f : 0.0f};
        for (int i = 0; i < 8; ++i) out.SetValue(i, values[i]);
        SetFlag<HardEvent::S_V>(EVENT_ID0);
        WaitFlag<HardEvent::S_V>(EVENT_ID0);
        break;
      }
    }
  });
}

// The softmax family on float x [m, k] (its first `valid` columns are data). stats holds max, sum
// and expMax, m x 8 floats each (max and sum in: the statistics of an earlier piece for which = 3,
// the row statistics for which = 1). which: 0 SoftMax, 1 SimpleSoftMax, 2 SoftmaxFlashV2,
// 3 SoftmaxFlashV2 with isUpdate.
TWIN_EXPORT int twin_softmax(int which, float *x, float *z, float *stats, uint32_t m, uint32_t k, uint32_t valid) {
  return Run("twin_softmax", 1, [&] {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx, qs;
    TQue<QuePosition::VECOUT, 1> qo, qt;
    pipe.InitBuffer(qx, 1, kBuf);
    pipe.InitBuffer(qs, 1, kBuf);
    pipe.InitBuffer(qo, 1, kBuf);
    pipe.InitBuffer(qt, 1, kBuf);
    const uint32_t n = m * k, sn = m * 8;
    LocalTensor<float> s = LoadIn(qx, Gm<float>(x, n), n), in = LoadIn(qs, Gm<float>(stats, 3 * sn), 3 * sn);
    LocalTensor<float> o = qo.AllocTensor<float>(), st = qt.AllocTensor<float>();
    DataCopy(st, in, 3 * sn);
    const SoftMaxShapeInfo shape{m, k, m, valid};
    SoftMaxTiling tiling{};
    LocalTensor<float> mx = st, sum = st[sn], expMax = st[2 * sn];
    if (which == 0) SoftMax(o, sum, mx, s, tiling, shape);
    else if (which == 1) SimpleSoftMax(o, sum, mx, s, tiling, shape);
    else if (which == 2) SoftmaxFlashV2(o, sum, mx, s, expMax, sum, mx, tiling, shape);
    else SoftmaxFlashV2<float, true>(o, sum, mx, s, expMax, sum, mx, tiling, shape);
    qx.FreeTensor(s);
    qs.FreeTensor(in);
    StoreOut(qo, o, Gm<float>(z, n), n);
    StoreOut(qt, st, Gm<float>(stats, 3 * sn), 3 * sn);
  });
}

// ---- And / Or (uint16) and Axpy ----

namespace {

// x (U, n) and y (T, n, z's old contents) into UB; z = op: 0 And, 1 Or, 2 level-0 And of the
// first `mask` lanes of `repeat` repeats, 3 Axpy(y, x, s) count form, 4 Axpy level-0 (mask,
// repeat, default strides).
template <typename T, typename U>
int LogicAxpy(int op, void *x, void *y, void *z, uint32_t n, uint64_t mask, uint32_t repeat, float s) {
  return Run("twin_logic_axpy", 1, [&] {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx, qy;
    TQue<QuePosition::VECOUT, 1> qo;
    pipe.InitBuffer(qx, 1, kBuf);
    pipe.InitBuffer(qy, 1, kBuf);
    pipe.InitBuffer(qo, 1, kBuf);
    const GlobalTensor<T> zg = Gm<T>(z, n);
    LocalTensor<U> a = LoadIn(qx, Gm<U>(x, n), n);
    LocalTensor<T> b = LoadIn(qy, Gm<T>(y, n), n);
    LocalTensor<T> out = qo.AllocTensor<T>();
    DataCopy(out, b, n);
    if constexpr (std::is_same_v<T, U> && std::is_same_v<T, uint16_t>) {
      if (op == 0) And(out, a, b, static_cast<int32_t>(n));
      if (op == 1) Or(out, a, b, static_cast<int32_t>(n));
      if (op == 2) And(out, a, b, mask, static_cast<uint8_t>(repeat), BinaryRepeatParams(1, 1, 1, 8, 8, 8));
    } else {
      if (op == 3) Axpy(out, a, static_cast<U>(s), static_cast<int32_t>(n));
      // A repeat of half into float reads 128 bytes of the source: its repeat stride is 4 blocks.
      const uint8_t srcRep = sizeof(U) < sizeof(T) ? 4 : 8;
      if (op == 4)
        Axpy(out, a, static_cast<U>(s), mask, static_cast<uint8_t>(repeat), UnaryRepeatParams(1, 1, 8, srcRep));
    }
    qx.FreeTensor(a);
    qy.FreeTensor(b);
    StoreOut(qo, out, zg, n);
  });
}

}  // namespace

// types: 0 uint16, 1 float, 2 half, 3 half into float.
TWIN_EXPORT int twin_logic_axpy(int types, int op, void *x, void *y, void *z, uint32_t n, uint64_t mask,
                                uint32_t repeat, float s) {
  switch (types) {
    case 0: return LogicAxpy<uint16_t, uint16_t>(op, x, y, z, n, mask, repeat, s);
    case 1: return LogicAxpy<float, float>(op, x, y, z, n, mask, repeat, s);
    case 2: return LogicAxpy<half, half>(op, x, y, z, n, mask, repeat, s);
    default: return LogicAxpy<float, half>(op, x, y, z, n, mask, repeat, s);
  }
}

// ---- GatherMask (float, uint32 pattern) ----

// pattern 0: the bits in `bits` (nb words), else built-in pattern 1..7; counter: reduceMode with
// `mask` elements a repeat. z receives dst (its old contents in), cnt rsvdCnt.
TWIN_EXPORT int twin_gather_mask(int pattern, int counter, float *x, uint32_t *bits, float *z, uint32_t n,
                                 uint32_t nb, uint32_t mask, uint32_t repeat, uint32_t src0Rep, uint32_t src1Rep,
                                 uint64_t *cnt) {
  return Run("twin_gather_mask", 1, [&] {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx, qb, qz;
    TQue<QuePosition::VECOUT, 1> qo;
    pipe.InitBuffer(qx, 1, kBuf);
    pipe.InitBuffer(qb, 1, kBuf);
    pipe.InitBuffer(qz, 1, kBuf);
    pipe.InitBuffer(qo, 1, kBuf);
    const GlobalTensor<float> zg = Gm<float>(z, n);
    LocalTensor<float> a = LoadIn(qx, Gm<float>(x, n), n), old = LoadIn(qz, zg, n);
    LocalTensor<uint32_t> m = LoadIn(qb, Gm<uint32_t>(bits, nb), nb);
    LocalTensor<float> out = qo.AllocTensor<float>();
    DataCopy(out, old, n);
    const GatherMaskParams params(1, static_cast<uint16_t>(repeat), static_cast<uint16_t>(src0Rep),
                                  static_cast<uint8_t>(src1Rep));
    uint64_t kept = 0;
    if (pattern == 0) GatherMask(out, a, m, counter != 0, mask, params, kept);
    else GatherMask(out, a, static_cast<uint8_t>(pattern), counter != 0, mask, params, kept);
    cnt[0] = kept;
    qx.FreeTensor(a);
    qb.FreeTensor(m);
    qz.FreeTensor(old);
    StoreOut(qo, out, zg, n);
  });
}

// ---- Broadcast ----

// x: rows x 1 (axis 1) or 1 x cols (axis 0) floats; z: rows x cols. which: 0 axis 1, 1 axis 0,
// 2 BroadCast (old spelling) of x[0] to a 1-D tensor of cols, with a scratch buffer; 3 axis 1
// with a source of the wrong extent.
TWIN_EXPORT int twin_broadcast(int which, float *x, float *z, uint32_t rows, uint32_t cols) {
  return Run("twin_broadcast", 1, [&] {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx;
    TQue<QuePosition::VECOUT, 1> qo;
    TBuf<TPosition::VECCALC> tmp;
    pipe.InitBuffer(qx, 1, kBuf);
    pipe.InitBuffer(qo, 1, kBuf);
    pipe.InitBuffer(tmp, 1024);
    const uint32_t n = which == 1 ? cols : 8;  // whole 32-byte blocks: rows <= 8
    LocalTensor<float> a = LoadIn(qx, Gm<float>(x, n), n);
    LocalTensor<float> out = qo.AllocTensor<float>();
    const uint32_t dst2[2] = {rows, cols}, byRow[2] = {rows, 1}, byCol[2] = {1, cols}, bad[2] = {rows, 2};
    const uint32_t dst1[1] = {cols}, one[1] = {1};
    LocalTensor<uint8_t> scratch = tmp.Get<uint8_t>();
    if (which == 0) Broadcast<float, 2, 1>(out, a, dst2, byRow);
    if (which == 1) Broadcast<float, 2, 0>(out, a, dst2, byCol);
    if (which == 2) BroadCast<float, 1, 0>(out, a, dst1, one, scratch);
    if (which == 3) Broadcast<float, 2, 1>(out, a, dst2, bad);
    qx.FreeTensor(a);
    StoreOut(qo, out, Gm<float>(z, rows * cols), rows * cols);
  });
}

// ---- KERNEL_TASK_TYPE_DEFAULT ----

// out[b] = 1 where block b runs as a cube core: an AIC-only kernel (aic) or an AIV-only one.
TWIN_EXPORT int twin_task_type(int aic, int32_t *out) {
  return Run("twin_task_type", 2, [&] {
    if (aic) {
      KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    } else {
      KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    }
    Gm<int32_t>(out, 2).SetValue(GetBlockIdx(), ASCEND_IS_AIC ? 1 : 0);
  });
}

// Shifts and Not on integer x (n elements) into z (z's old contents in), by s bits: 0 ShiftLeft,
// 1 ShiftRight, 2 Not (int16_t); 3 ShiftLeft, 4 ShiftRight (int32_t); 5 level-0 ShiftRight of the
// first 40 lanes of each of 2 repeats (int32_t, 64 lanes a repeat); 6 that with roundEn (refused).
template <typename T>
int ShiftCase(int which, void *x, void *z, uint32_t n, T s) {
  return OverOld<T>("twin_shift", x, n, z, n, [&](const LocalTensor<T> &out, const LocalTensor<T> &a,
                                                const LocalTensor<T> &, const LocalTensor<uint8_t> &) {
    const int32_t count = static_cast<int32_t>(n);
    if (which == 0 || which == 3) ShiftLeft(out, a, s, count);
    if (which == 1 || which == 4) ShiftRight(out, a, s, count);
    if constexpr (sizeof(T) == 2) {
      if (which == 2) Not(out, a, count);
    }
    if (which >= 5) ShiftRight(out, a, s, uint64_t(40), 2, UnaryRepeatParams(1, 1, 8, 8), which == 6);
  });
}

TWIN_EXPORT int twin_shift(int which, void *x, void *z, uint32_t n, int32_t s) {
  if (which <= 2) return ShiftCase<int16_t>(which, x, z, n, static_cast<int16_t>(s));
  return ShiftCase<int32_t>(which, x, z, n, s);
}
