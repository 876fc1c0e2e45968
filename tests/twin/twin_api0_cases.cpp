// AscendC kernels for the twin's level-0 Compare / Select / Cast, SoftmaxFlash and LogSoftMax,
// tiling-key templates and the cross-core flag modes, with C entry points for
// tests/test_twin_api.py. Each returns the launch's status (0, or 1 after a twin violation, printed
// on stderr as `ms_ops <kernel>: block <b>: <call>: <what>`).
#include <cstdint>
#include <vector>

#include "case_utils.h"
#include "kernel_operator.h"
#include "twin_api0_tiling_key.h"

using namespace AscendC;
using namespace twin_cases;

namespace {

constexpr uint32_t kBuf = 16384;  // bytes of every UB buffer

// Four VECIN buffers (x, y, a byte mask, z's old contents) and one VECOUT, each kBuf bytes.
struct Bufs {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> qx, qy, qm, qz;
  TQue<QuePosition::VECOUT, 1> qo;
  Bufs() {
    pipe.InitBuffer(qx, 1, kBuf);
    pipe.InitBuffer(qy, 1, kBuf);
    pipe.InitBuffer(qm, 1, kBuf);
    pipe.InitBuffer(qz, 1, kBuf);
    pipe.InitBuffer(qo, 1, kBuf);
  }
};

// form 0: Compare into dst (mask argument m0, which Atlas A2 ignores); 1: CompareScalar with s;
// 2: Compare into CMPMASK under the bitwise mask (m0, m1), read back with GetCmpMask (16 bytes).
// s: src0Blk, src1Blk, src0Rep, src1Rep. z: the result bytes (kBuf of them, old contents kept).
template <typename T>
int Cmp0(int form, int mode, void *x, void *y, void *z, uint32_t repeat, const uint32_t *s, uint64_t m0, uint64_t m1,
         float scalar) {
  return Run("twin_cmp0", 1, [&] {
    Bufs b;
    LocalTensor<T> a = LoadIn<T>(b.qx, x, kBuf), c = LoadIn<T>(b.qy, y, kBuf);
    LocalTensor<uint8_t> old = LoadIn<uint8_t>(b.qz, z, kBuf);
    LocalTensor<uint8_t> out = b.qo.AllocTensor<uint8_t>();
    DataCopy(out, old, kBuf);
    const CMPMODE m = static_cast<CMPMODE>(mode);
    const uint64_t bits[2] = {m0, m1};
    if (form == 0) {
      Compare(out, a, c, m, bits, static_cast<uint8_t>(repeat), BinaryRepeatParams(1, s[0], s[1], 8, s[2], s[3]));
    } else if (form == 1) {
      CompareScalar(out, a, static_cast<T>(scalar), m, m0, static_cast<uint8_t>(repeat),
                    UnaryRepeatParams(1, s[0], 8, s[2]));
    } else {
      Compare(a, c, m, bits, BinaryRepeatParams(1, s[0], s[1], 8, s[2], s[3]));
      GetCmpMask(out);
    }
    b.qx.FreeTensor(a);
    b.qy.FreeTensor(c);
    b.qz.FreeTensor(old);
    StoreOut(b.qo, out, z, kBuf);
  });
}

// mode: the SELMODE (1: scalar src1, else a tensor), or 10 a scalar src1 with SELMODE 2, 11 a tensor
// src1 with SELMODE 1 (both wrong); kind 0 bitwise mask (m0, m1), 1 contiguous `len`, 2 counter mode of `len`
// elements (isSetMask false), 3 the register form (SetCmpMask from sel for mode 0; for mode 1 the
// scalar through SetCmpMask of a block of it), mask bits (m0, m1) set with SetVectorMask.
// s: dstBlk, src0Blk, src1Blk, dstRep, src0Rep, src1Rep. z: old contents in, result out.
template <typename T>
int Sel0(int mode, int kind, void *x, void *y, void *sel, void *z, uint64_t m0, uint64_t m1, uint64_t len,
         uint32_t repeat, const uint32_t *s, float scalar) {
  return Run("twin_sel0", 1, [&] {
    Bufs b;
    TBuf<TPosition::VECCALC> scal;
    b.pipe.InitBuffer(scal, 32);
    LocalTensor<T> a = LoadIn<T>(b.qx, x, kBuf), c = LoadIn<T>(b.qy, y, kBuf), old = LoadIn<T>(b.qz, z, kBuf);
    LocalTensor<uint8_t> m = LoadIn<uint8_t>(b.qm, sel, kBuf);
    LocalTensor<T> out = b.qo.AllocTensor<T>();
    DataCopy(out, old, kBuf / sizeof(T));
    const bool scalarForm = mode == 1 || mode == 10;
    const SELMODE sm = static_cast<SELMODE>(mode == 10 ? 2 : (mode == 11 ? 1 : mode));
    const BinaryRepeatParams p(s[0], s[1], s[2], s[3], s[4], s[5]);
    const uint8_t r = static_cast<uint8_t>(repeat);
    const T v = static_cast<T>(scalar);
    const uint64_t bits[2] = {m0, m1};
    if (kind == 0) {
      scalarForm ? Select(out, m, a, v, sm, bits, r, p) : Select(out, m, a, c, sm, bits, r, p);
    } else if (kind == 1) {
      scalarForm ? Select(out, m, a, v, sm, len, r, p) : Select(out, m, a, c, sm, len, r, p);
    } else if (kind == 2) {
      SetMaskCount();
      SetVectorMask<T, MaskMode::COUNTER>(0, len);
      scalarForm ? Select<T, uint8_t, false>(out, m, a, v, sm, MASK_PLACEHOLDER, r, p)
                : Select<T, uint8_t, false>(out, m, a, c, sm, MASK_PLACEHOLDER, r, p);
      SetMaskNorm();
    } else {
      SetVectorMask<T>(m1, m0);
      if (mode == 1) {
        LocalTensor<T> t = scal.Get<T>();
        Duplicate(t, v, 32 / sizeof(T));
        PipeBarrier<PIPE_V>();
        SetCmpMask(t);
        Select(out, m, a, r, p);
      } else if (mode == 0) {
        SetCmpMask(m);
        Select<T, SELMODE::VSEL_CMPMASK_SPR>(out, a, c, r, p);
      } else {
        Select<T, SELMODE::VSEL_TENSOR_TENSOR_MODE>(out, a, c, r, p);
      }
      ResetMask();
    }
    b.qx.FreeTensor(a);
    b.qy.FreeTensor(c);
    b.qz.FreeTensor(old);
    b.qm.FreeTensor(m);
    StoreOut(b.qo, out, z, kBuf);
  });
}

// Level-0 Cast of x (U) into z (T, old contents kept on masked-off lanes); kind as Sel0's 0..2.
// s: dstBlk, srcBlk, dstRep, srcRep.
template <typename T, typename U>
int Cast0Case(int mode, int kind, void *x, void *z, uint64_t m0, uint64_t m1, uint64_t len, uint32_t repeat,
              const uint32_t *s) {
  return Run("twin_cast0", 1, [&] {
    Bufs b;
    LocalTensor<U> a = LoadIn<U>(b.qx, x, kBuf);
    LocalTensor<T> old = LoadIn<T>(b.qz, z, kBuf);
    LocalTensor<T> out = b.qo.AllocTensor<T>();
    DataCopy(out, old, kBuf / sizeof(T));
    const RoundMode rm = static_cast<RoundMode>(mode);
    const UnaryRepeatParams p(s[0], s[1], s[2], s[3]);
    const uint8_t r = static_cast<uint8_t>(repeat);
    const uint64_t bits[2] = {m0, m1};
    if (kind == 0) {
      Cast(out, a, rm, bits, r, p);
    } else if (kind == 1) {
      Cast(out, a, rm, len, r, p);
    } else {
      SetMaskCount();
      SetVectorMask<T, MaskMode::COUNTER>(0, len);
      Cast<T, U, false>(out, a, rm, MASK_PLACEHOLDER, r, p);
      SetMaskNorm();
    }
    b.qx.FreeTensor(a);
    b.qz.FreeTensor(old);
    StoreOut(b.qo, out, z, kBuf);
  });
}

}  // namespace

TWIN_EXPORT int twin_cmp0(int half, int form, int mode, void *x, void *y, void *z, uint32_t repeat,
                          const uint32_t *strides, uint64_t m0, uint64_t m1, float scalar) {
  return half ? Cmp0<::half>(form, mode, x, y, z, repeat, strides, m0, m1, scalar)
              : Cmp0<float>(form, mode, x, y, z, repeat, strides, m0, m1, scalar);
}

TWIN_EXPORT int twin_cmp0_int32(int mode, void *x, void *y, void *z) {
  const uint32_t s[4] = {1, 1, 8, 8};
  return Cmp0<int32_t>(0, mode, x, y, z, 1, s, 0, 0, 0);
}

TWIN_EXPORT int twin_sel0(int half, int mode, int kind, void *x, void *y, void *sel, void *z, uint64_t m0, uint64_t m1,
                          uint64_t len, uint32_t repeat, const uint32_t *strides, float scalar) {
  return half ? Sel0<::half>(mode, kind, x, y, sel, z, m0, m1, len, repeat, strides, scalar)
              : Sel0<float>(mode, kind, x, y, sel, z, m0, m1, len, repeat, strides, scalar);
}

// The count form of Select in mode 0: every repeat takes its bits from sel's first 16 bytes.
TWIN_EXPORT int twin_sel_count0(void *x, void *y, void *sel, void *z, uint32_t n) {
  return Run("twin_sel_count0", 1, [&] {
    Bufs b;
    LocalTensor<float> a = LoadIn<float>(b.qx, x, kBuf), c = LoadIn<float>(b.qy, y, kBuf);
    LocalTensor<uint8_t> m = LoadIn<uint8_t>(b.qm, sel, kBuf);
    LocalTensor<float> out = b.qo.AllocTensor<float>();
    Select(out, m, a, c, SELMODE::VSEL_CMPMASK_SPR, n);
    b.qx.FreeTensor(a);
    b.qy.FreeTensor(c);
    b.qm.FreeTensor(m);
    StoreOut(b.qo, out, z, kBuf);
  });
}

// pair: 0 half -> float, 1 float -> half, 2 float -> int32_t, 3 int32_t -> float, 4 half -> int32_t.
TWIN_EXPORT int twin_cast0(int pair, int mode, int kind, void *x, void *z, uint64_t m0, uint64_t m1, uint64_t len,
                           uint32_t repeat, const uint32_t *strides) {
  switch (pair) {
    case 0: return Cast0Case<float, half>(mode, kind, x, z, m0, m1, len, repeat, strides);
    case 1: return Cast0Case<half, float>(mode, kind, x, z, m0, m1, len, repeat, strides);
    case 2: return Cast0Case<int32_t, float>(mode, kind, x, z, m0, m1, len, repeat, strides);
    case 3: return Cast0Case<float, int32_t>(mode, kind, x, z, m0, m1, len, repeat, strides);
    default: return Cast0Case<int32_t, half>(mode, kind, x, z, m0, m1, len, repeat, strides);
  }
}

// which: 0 SoftmaxFlash, 1 SoftmaxFlash with isUpdate, 2 LogSoftMax, on float x [m, k] (the first
// `valid` columns data). stats: max, sum, expMax, m x 8 floats each (max and sum in for which 1).
TWIN_EXPORT int twin_softmax_flash(int which, float *x, float *z, float *stats, uint32_t m, uint32_t k,
                                   uint32_t valid) {
  return Run("twin_softmax_flash", 1, [&] {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx, qs;
    TQue<QuePosition::VECOUT, 1> qo, qt;
    TBuf<TPosition::VECCALC> tmp;
    pipe.InitBuffer(qx, 1, kBuf);
    pipe.InitBuffer(qs, 1, kBuf);
    pipe.InitBuffer(qo, 1, kBuf);
    pipe.InitBuffer(qt, 1, kBuf);
    pipe.InitBuffer(tmp, 1024);
    const uint32_t n = m * k, sn = m * 8;
    LocalTensor<float> s = LoadIn<float>(qx, x, n * 4), in = LoadIn<float>(qs, stats, 3 * sn * 4);
    LocalTensor<float> o = qo.AllocTensor<float>(), st = qt.AllocTensor<float>();
    DataCopy(st, in, 3 * sn);
    const SoftMaxShapeInfo shape{m, k, m, valid};
    LocalTensor<float> mx = st, sum = st[sn], expMax = st[2 * sn];
    if (which == 2) {
      LogSoftMaxTiling tiling{};
      LogSoftMax(o, sum, mx, s, tmp.Get<uint8_t>(), tiling, shape);
    } else {
      SoftMaxTiling tiling{};
      SoftmaxFlash(o, sum, mx, s, expMax, sum, mx, tiling, which == 1, shape);
    }
    qx.FreeTensor(s);
    qs.FreeTensor(in);
    StoreOut(qo, o, z, n * 4);
    StoreOut(qt, st, stats, 3 * sn * 4);
  });
}

// SoftmaxFlash on half x [m, k] with float statistics: stats holds max and sum (m x 8 floats
// each, in for update), e the half expMax (m x 16).
TWIN_EXPORT int twin_softmax_flash_f16(void *x, void *z, float *stats, void *e, uint32_t m, uint32_t k, int update) {
  return Run("twin_softmax_flash_f16", 1, [&] {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx, qs;
    TQue<QuePosition::VECOUT, 1> qo, qt, qe;
    pipe.InitBuffer(qx, 1, kBuf);
    pipe.InitBuffer(qs, 1, kBuf);
    pipe.InitBuffer(qo, 1, kBuf);
    pipe.InitBuffer(qt, 1, kBuf);
    pipe.InitBuffer(qe, 1, kBuf);
    const uint32_t n = m * k, sn = m * 8;
    LocalTensor<half> s = LoadIn<half>(qx, x, n * 2);
    LocalTensor<float> in = LoadIn<float>(qs, stats, 2 * sn * 4);
    LocalTensor<half> o = qo.AllocTensor<half>(), ex = qe.AllocTensor<half>();
    LocalTensor<float> st = qt.AllocTensor<float>();
    DataCopy(st, in, 2 * sn);
    SoftmaxFlash<half>(o, st[sn], st, s, ex, st[sn], st, SoftMaxTiling{}, update != 0, SoftMaxShapeInfo{m, k, m, k});
    qx.FreeTensor(s);
    qs.FreeTensor(in);
    StoreOut(qo, o, z, n * 2);
    StoreOut(qt, st, stats, 2 * sn * 4);
    StoreOut(qe, ex, e, m * 32);
  });
}

// z[0..n) = value by InitGlobalMemory (accumulated into z under SetAtomicAdd when atomic), the
// scalar cache then flushed as CANN kernels do before reading it back with GetValue.
TWIN_EXPORT int twin_init_gm(float *z, uint32_t n, float value, int atomic) {
  return Run("twin_init_gm", 1, [&] {
    GlobalTensor<float> g = Gm<float>(z, n);
    if (atomic) SetAtomicAdd<float>();
    InitGlobalMemory(g, n, value);
    if (atomic) SetAtomicNone();
    DataCacheCleanAndInvalid<float, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(g);
    if (g.GetValue(n - 1) != (atomic ? 2 * value : value)) ms_ops::twin::Fail("twin_init_gm", "GetValue disagrees");
  });
}

// ---- tiling-key templates ----

namespace {

// z = x * TILE_NUM (+ 1 when IS_SPLIT), computed in the dtype D_T names (float or half).
template <uint64_t D_T, uint64_t TILE_NUM, uint64_t IS_SPLIT>
void TplKernel(GM_ADDR x, GM_ADDR z, uint32_t n) {
  using T = typename TypeFromId<static_cast<int>(D_T)>::type;
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> qx;
  TQue<QuePosition::VECOUT, 1> qo;
  pipe.InitBuffer(qx, 1, kBuf);
  pipe.InitBuffer(qo, 1, kBuf);
  LocalTensor<T> a = LoadIn<T>(qx, x, n * sizeof(T));
  LocalTensor<T> o = qo.AllocTensor<T>();
  Muls(o, a, static_cast<T>(TILE_NUM), n);
  if constexpr (IS_SPLIT != 0) {
    PipeBarrier<PIPE_V>();
    Adds(o, o, static_cast<T>(1), n);
  }
  qx.FreeTensor(a);
  StoreOut(qo, o, z, n * sizeof(T));
}

// What a CANN build generates from ASCENDC_TPL_SEL: one instance per selected combination, chosen
// by the launch's key.
template <uint64_t D_T>
void TplByTile(uint64_t tile, uint64_t split, GM_ADDR x, GM_ADDR z, uint32_t n) {
  if (tile == 1) split ? TplKernel<D_T, 1, 1>(x, z, n) : TplKernel<D_T, 1, 0>(x, z, n);
  else if (tile == 2) split ? TplKernel<D_T, 2, 1>(x, z, n) : TplKernel<D_T, 2, 0>(x, z, n);
  else if (tile == 3) split ? TplKernel<D_T, 3, 1>(x, z, n) : TplKernel<D_T, 3, 0>(x, z, n);
  else split ? TplKernel<D_T, 8, 1>(x, z, n) : TplKernel<D_T, 8, 0>(x, z, n);
}

}  // namespace

// The key GET_TPL_TILING_KEY makes of (dtype, tile, split), into *key; with run, the kernel instance
// that key selects on x -> z. 2 when the key is CANN's invalid one.
TWIN_EXPORT int twin_tpl(uint64_t dtype, uint64_t tile, uint64_t split, void *x, void *z, uint32_t n, uint64_t *key,
                         int run) {
  *key = GET_TPL_TILING_KEY(dtype, tile, split);
  if (*key == ~0ull) return 2;
  if (!run) return 0;
  const uint64_t k = *key;
  return Run("twin_tpl", 1, [&] {
    const std::vector<uint64_t> v = ms_ops::twin::DecodeTplTilingKey(g_tilingDeclareParams, g_tilingSelectParams, k);
    GM_ADDR gx = reinterpret_cast<GM_ADDR>(x);
    GM_ADDR gz = reinterpret_cast<GM_ADDR>(z);
    if (v[0] == 0) TplByTile<0>(v[1], v[2], gx, gz, n);
    else TplByTile<1>(v[1], v[2], gx, gz, n);
  });
}

// A key decoded in a launch (the dispatching entry's side).
TWIN_EXPORT int twin_tpl_decode(uint64_t key, uint64_t *vals) {
  return Run("twin_tpl_decode", 1, [&] {
    const std::vector<uint64_t> v = ms_ops::twin::DecodeTplTilingKey(g_tilingDeclareParams, g_tilingSelectParams, key);
    for (size_t i = 0; i < v.size(); ++i) vals[i] = v[i];
  });
}

// ---- cross-core flag modes ----

// which 0: the AIC sets flag 0 in mode `mode` for its AIVs, which wait for it; 1: the AIC sets
// flag 0 (mode 2) sixteen times and the AIVs never wait; 2: fifteen sets, fifteen waits on each AIV.
TWIN_EXPORT int twin_crosscore_modes(int which, int mode) {
  return Reported(ms_ops::twin::LaunchMixed("twin_crosscore_modes", 1, 0, [&] {
    if (which == 0) {
      if ASCEND_IS_AIC {
        if (mode == 4) CrossCoreSetFlag<4, PIPE_S>(0);
        else CrossCoreSetFlag<2, PIPE_S>(0);
      } else {
        CrossCoreWaitFlag(0);
      }
      return;
    }
    if ASCEND_IS_AIC {
      for (int i = 0; i < (which == 1 ? 16 : 15); ++i) CrossCoreSetFlag<2, PIPE_S>(0);
    } else if (which == 2) {
      for (int i = 0; i < 15; ++i) CrossCoreWaitFlag(0);
    }
  }));
}
