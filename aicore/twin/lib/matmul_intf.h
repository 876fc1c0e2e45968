// The high-level Matmul API of the twin: C = A * B (+ bias) for one core's single shape, whole
// (IterateAll) or baseM x baseN tile by tile (Iterate / GetTensorC). The arithmetic is sgemm in
// fp32 (fp16/bf16 operands are widened first, as the cube accumulates in fp32); GM extents are
// checked like every other GM access of the twin, and the GM writes enter the check of blocks
// writing the same bytes (twin_gm_writes.h). enAtomic 1, 2 and 3 add into C, or take the maximum
// or minimum with it, by the store atomic of DataCopy (twin_atomic.h), exact when several blocks
// combine into the same C at once.
#ifndef MS_OPS_TWIN_LIB_MATMUL_INTF_H_
#define MS_OPS_TWIN_LIB_MATMUL_INTF_H_

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernel_operator.h"
#include "twin_bgemm.h"
#include "twin_blas.h"
#include "twin_cube_tiling.h"
#include "twin_matmul_config.h"
#include "twin_memory.h"

namespace AscendC {

template <TPosition POSITION, CubeFormat FORMAT, typename TYPE, bool ISTRANS = false,
          LayoutMode LAYOUT = LayoutMode::NONE, bool IBSHARE = false, TPosition SRCPOS = TPosition::GM>
struct MatmulType {
  constexpr static TPosition pos = POSITION;
  constexpr static CubeFormat format = FORMAT;
  using T = TYPE;
  constexpr static bool isTrans = ISTRANS;
  constexpr static LayoutMode layout = LAYOUT;
  constexpr static bool ibShare = IBSHARE;
  constexpr static TPosition srcPos = SRCPOS;
};

namespace twin_detail {

// L0 buffer sizes of Atlas A2 that one base tile must fit (L0C holds the fp32 baseM x baseN).
constexpr uint64_t kL0ABytes = 64 * 1024, kL0BBytes = 64 * 1024, kL0CBytes = 128 * 1024;
// K columns of fp16/bf16 operands widened to fp32 per sgemm call.
constexpr int kWidenPanel = 256;

// rows x cols of a row-major operand with row stride ld must lie in g.
template <typename T>
inline void GmMatrix(const char *call, const GlobalTensor<T> &g, uint64_t offset, uint64_t rows, uint64_t cols,
                     uint64_t ld) {
  if (rows != 0 && cols != 0) g.TwinCheck(call, 0, offset + (rows - 1) * ld + cols);
}

// Operand rows x cols (row stride ld) as fp32: the GM memory itself for float, else a widened copy
// in the unit's scratch.
template <typename T>
inline const float *AsFloat(::ms_ops::twin::CubeUnit &unit, const T *p, int rows, int cols, int ld, int slot,
                            int &ldOut) {
  if constexpr (std::is_same_v<T, float>) {
    ldOut = ld;
    return p;
  } else {
    float *f = unit.Scratch(slot, size_t(rows) * cols);
    // The casts' vector loops: element by element, GCC leaves the fp16 conversion scalar (the
    // widening took 12.6% of an fp16 flash-attention forward, 118.8 ms against fp32's 102.9).
    for (int r = 0; r < rows; ++r) {
      float *dst = f + size_t(r) * cols;
      const T *src = p + size_t(r) * ld;
      if constexpr (std::is_same_v<T, half>) {
        HalfToFloat(dst, src, uint32_t(cols));
      } else if constexpr (std::is_same_v<T, bfloat16_t>) {
        Bf16ToFloat(dst, src, uint32_t(cols));
      } else {
        for (int c = 0; c < cols; ++c) dst[c] = static_cast<float>(src[c]);
      }
    }
    ldOut = cols;
    return f;
  }
}

// Where a Matmul's operand or bias lives: GM (SetTensorA/B(GlobalTensor)), a LocalTensor in UB or
// L1 (VECIN/VECOUT/VECCALC/TSCM: the cube reads it where it is), or a scalar standing for a matrix
// of that value (SetTensorA/B(scalar)).
template <typename T>
class CubeIn {
 public:
  void Set(const GlobalTensor<T> &g) {
    gm_ = g;
    local_ = nullptr;
    scalar_ = false;
  }
  void Set(const LocalTensor<T> &t) {
    local_ = t.TwinData();
    cap_ = t.TwinCap();
    scalar_ = false;
  }
  void SetScalar(T v) {
    value_ = v;
    scalar_ = true;
    local_ = nullptr;
  }
  bool Ready() const { return scalar_ || local_ != nullptr || gm_.TwinData() != nullptr; }

  // The first element of the rows x cols block at `off` (row stride ld), which must lie in the
  // operand: GM extents as every GM access, a LocalTensor's elements, or a scalar's matrix.
  const T *At(const char *call, uint64_t off, uint64_t rows, uint64_t cols, uint64_t ld) {
    const uint64_t end = rows == 0 || cols == 0 ? off : off + (rows - 1) * ld + cols;
    if (scalar_) {
      filled_.assign(end, value_);
      return filled_.data() + off;
    }
    if (local_ != nullptr) {
      if (end > cap_) UbOutOfRange(call, end, cap_);
      return local_ + off;
    }
    GmMatrix(call, gm_, off, rows, cols, ld);
    return gm_.TwinData() + off;
  }

 private:
  GlobalTensor<T> gm_;
  const T *local_ = nullptr;
  uint64_t cap_ = 0;
  bool scalar_ = false;
  T value_{};
  std::vector<T> filled_;
};

// Positions a LocalTensor operand may come from, and where IterateAll may put C in UB.
constexpr bool CubeLocalSource(TPosition p) {
  return p == TPosition::VECIN || p == TPosition::VECOUT || p == TPosition::VECCALC || p == TPosition::TSCM;
}
constexpr bool UbPosition(TPosition p) {
  return p == TPosition::VECIN || p == TPosition::VECOUT || p == TPosition::VECCALC;
}

}  // namespace twin_detail

// CANN's template parameters: the four MatmulTypes, the MatmulConfig, the callbacks and a policy
// (the twin computes every configuration alike).
template <class A_TYPE, class B_TYPE, class C_TYPE, class BIAS_TYPE = C_TYPE, const auto &MM_CFG = CFG_NORM,
          class MM_CB = MatmulCallBackFunc<nullptr, nullptr, nullptr>, class MM_POLICY = void>
class Matmul {
  using SrcAT = typename A_TYPE::T;
  using SrcBT = typename B_TYPE::T;
  using DstT = typename C_TYPE::T;
  using BiasT = typename BIAS_TYPE::T;
  static_assert(std::is_same_v<SrcAT, SrcBT>, "Matmul: A_TYPE::T and B_TYPE::T must be the same type: the cube "
                                               "multiplies A and B of one dtype only");

 public:
  void Init(const TCubeTiling *tiling, TPipe *tpipe = nullptr) {
    const char *call = "Matmul::Init";
    if (tiling == nullptr) twin_detail::Fail(call, "tiling is null");
    t_ = *tiling;
    if (t_.baseM <= 0 || t_.baseN <= 0 || t_.baseK <= 0) twin_detail::Fail(call, "baseM/baseN/baseK must be positive");
    const uint64_t l0a = uint64_t(t_.baseM) * t_.baseK * sizeof(SrcAT), l0b = uint64_t(t_.baseK) * t_.baseN * sizeof(SrcBT);
    const uint64_t l0c = uint64_t(t_.baseM) * t_.baseN * sizeof(float);
    if (l0a > twin_detail::kL0ABytes || l0b > twin_detail::kL0BBytes || l0c > twin_detail::kL0CBytes)
      twin_detail::Fail(call, "base tile " + twin_detail::Str(t_.baseM) + "x" + twin_detail::Str(t_.baseN) + "x" +
                                  twin_detail::Str(t_.baseK) + " does not fit L0A/L0B (64 KB) and L0C (128 KB)");
    SetOrgShape(t_.M, t_.N, t_.Ka, t_.Kb > 0 ? t_.Kb : t_.Ka);
    SetSingleShape(t_.singleCoreM, t_.singleCoreN, t_.singleCoreK);
    init_ = true;
    hasBias_ = false;
    End();
  }

  void SetOrgShape(int orgM, int orgN, int orgK) { SetOrgShape(orgM, orgN, orgK, orgK); }
  // orgKc: C's row stride when it differs from B's N (0: B's N).
  void SetOrgShape(int orgM, int orgN, int orgKa, int orgKb, int orgKc = 0) {
    M_ = orgM;
    N_ = orgN;
    Ka_ = orgKa;
    Kb_ = orgKb;
    Kc_ = orgKc > 0 ? orgKc : orgN;
  }
  void SetSingleShape(int singleM, int singleN, int singleK) {
    m_ = singleM;
    n_ = singleN;
    k_ = singleK;
  }
  // A negative value keeps the current single-shape value.
  void SetTail(int tailM = -1, int tailN = -1, int tailK = -1) {
    SetSingleShape(tailM >= 0 ? tailM : m_, tailN >= 0 ? tailN : n_, tailK >= 0 ? tailK : k_);
  }

  void SetTensorA(const GlobalTensor<SrcAT> &gm, bool isTransposeA = false) {
    if (isTransposeA && !A_TYPE::isTrans) twin_detail::Fail("SetTensorA", "transposed A needs MatmulType ISTRANS=true");
    a_.Set(gm);
    transA_ = isTransposeA;
  }
  // A in UB (VECIN/VECOUT/VECCALC) or L1 (TSCM), as the MatmulType's position says.
  void SetTensorA(const LocalTensor<SrcAT> &local, bool isTransposeA = false) {
    LocalSource<A_TYPE>("SetTensorA", local.TwinData());
    SetTensorA(GlobalTensor<SrcAT>(), isTransposeA);
    a_.Set(local);
  }
  // Every element of A is aScalar.
  void SetTensorA(SrcAT aScalar) {
    a_.SetScalar(aScalar);
    transA_ = false;
  }
  void SetTensorB(const GlobalTensor<SrcBT> &gm, bool isTransposeB = false) {
    if (isTransposeB && !B_TYPE::isTrans) twin_detail::Fail("SetTensorB", "transposed B needs MatmulType ISTRANS=true");
    b_.Set(gm);
    transB_ = isTransposeB;
  }
  void SetTensorB(const LocalTensor<SrcBT> &local, bool isTransposeB = false) {
    LocalSource<B_TYPE>("SetTensorB", local.TwinData());
    SetTensorB(GlobalTensor<SrcBT>(), isTransposeB);
    b_.Set(local);
  }
  void SetTensorB(SrcBT bScalar) {
    b_.SetScalar(bScalar);
    transB_ = false;
  }
  void SetBias(const GlobalTensor<BiasT> &biasGlobal) {
    bias_.Set(biasGlobal);
    hasBias_ = true;
  }
  void SetBias(const LocalTensor<BiasT> &biasLocal) {
    LocalSource<BIAS_TYPE>("SetBias", biasLocal.TwinData());
    bias_.Set(biasLocal);
    hasBias_ = true;
  }
  void DisableBias() { hasBias_ = false; }
  void ClearBias() { DisableBias(); }  // the older name of DisableBias

  // Workspaces and settings the NPU's client passes on to the cube core; the twin computes without
  // them. HF32 (fp32 operands rounded to the cube's hf32 on the NPU, a precision loss) is not
  // modelled: the twin's products stay fp32.
  template <class T>
  void SetWorkspace(const GlobalTensor<T> &) {}
  template <class T>
  void SetWorkspace(__gm__ const T *, int) {}
  void SetLocalWorkspace(const LocalTensor<uint8_t> &) {}
  void SetHF32(bool = false, int32_t transMode = 0) {
    if (transMode != 0 && transMode != 1)
      twin_detail::Fail("SetHF32", "transMode must be 0 (ties to even) or 1 (ties away from zero), got " +
                                       twin_detail::Str(transMode));
  }
  // The data the NPU hands to the MatmulCallBackFunc callbacks, which the twin does not call.
  void SetSelfDefineData(uint64_t) {}
  void SetUserDefInfo(uint64_t) {}
  // Which AIV of the group a cube-side Matmul serves (a mixed kernel whose vector cores issue the
  // Matmul calls themselves). The twin runs a Matmul on the calling core: nothing to route.
  void SetSubBlockIdx(uint8_t) {}

  // C (this core's singleM x singleN block, row stride orgKc or N) = or += A * B + bias.
  template <bool sync = true>
  void IterateAll(const GlobalTensor<DstT> &gm, uint8_t enAtomic = 0, bool enSequentialWrite = false,
                  bool waitIterateAll = false, bool fakeMsg = false) {
    const char *call = "Matmul::IterateAll";
    Check(call, enAtomic);
    const int ldc = enSequentialWrite ? n_ : Kc_;
    twin_detail::GmMatrix(call, gm, 0, m_, n_, ldc);
    Written(call, gm, 0, m_, n_, ldc, enAtomic != 0);
    ::ms_ops::twin::CubeUnit unit;
    if constexpr (std::is_same_v<DstT, float>) {
      // fp32 C without bias: sgemm overwrites it in place or, with enAtomic 1, adds into it in place
      // holding C's bytes as the store atomic does; no accumulator round trip either way.
      if (!hasBias_ && enAtomic == 0) return Product(unit, call, 0, 0, m_, n_, gm.TwinData(), ldc, false);
      if (!hasBias_ && enAtomic == 1) {
        const ::ms_ops::twin::AtomicSpan held({reinterpret_cast<uintptr_t>(gm.TwinData()), uint64_t(m_),
                                               uint64_t(n_) * sizeof(float), uint64_t(ldc) * sizeof(float)});
        return Product(unit, call, 0, 0, m_, n_, gm.TwinData(), ldc, true);
      }
    }
    float *acc = unit.Scratch(2, size_t(m_) * n_);
    Product(unit, call, 0, 0, m_, n_, acc, n_, false);
    Store(gm.TwinData(), ldc, acc, m_, n_, enAtomic);
  }

  // C (singleM x singleN, row stride singleN) into UB, as the C MatmulType's position says.
  template <bool sync = true>
  void IterateAll(const LocalTensor<DstT> &ubCmatrix, uint8_t enAtomic = 0) {
    const char *call = "Matmul::IterateAll";
    Check(call, enAtomic);
    if constexpr (!twin_detail::UbPosition(C_TYPE::pos))
      twin_detail::Fail(call, "C into a LocalTensor needs the C MatmulType at VECIN, VECOUT or VECCALC");
    twin_detail::UbAligned(call, ubCmatrix.TwinData());
    if (uint64_t(ubCmatrix.TwinCap()) < uint64_t(m_) * n_)
      twin_detail::UbOutOfRange(call, uint64_t(m_) * n_, ubCmatrix.TwinCap());
    ::ms_ops::twin::CubeUnit unit;
    // fp32 C without bias or atomic: the product straight into UB, as into GM above.
    if constexpr (std::is_same_v<DstT, float>)
      if (!hasBias_ && enAtomic == 0) return Product(unit, call, 0, 0, m_, n_, ubCmatrix.TwinData(), n_, false);
    float *acc = unit.Scratch(2, size_t(m_) * n_);
    Product(unit, call, 0, 0, m_, n_, acc, n_, false);
    Store(ubCmatrix.TwinData(), n_, acc, m_, n_, enAtomic);
  }
  // The twin's IterateAll is done when it returns, asynchronous (sync = false) or not.
  void WaitIterateAll() {}

  // Computes the next baseM x baseN tile (iterateOrder 0: M index moves first); false when done.
  template <bool sync = true>
  bool Iterate(bool enPartialSum = false) {
    const char *call = "Matmul::Iterate";
    Check(call, 0);
    const int tilesM = CeilDiv(m_, t_.baseM), tilesN = CeilDiv(n_, t_.baseN);
    if (!iterating_) {
      tm_ = tn_ = 0;
      iterating_ = tilesM > 0 && tilesN > 0;
    } else {
      iterating_ = Advance(tilesM, tilesN);
    }
    if (!iterating_) return false;
    tileM_ = std::min(t_.baseM, m_ - tm_ * t_.baseM);
    tileN_ = std::min(t_.baseN, n_ - tn_ * t_.baseN);
    tile_.Reserve(size_t(tileM_) * tileN_ * sizeof(float));
    ::ms_ops::twin::CubeUnit unit;
    Product(unit, call, tm_ * t_.baseM, tn_ * t_.baseN, tileM_, tileN_, tile_.as<float>(), tileN_, false);
    return true;
  }

  // The current tile into C at its place in the block (row stride orgKc or N), or with enSequentialWrite
  // at gm's start with row stride baseN.
  template <bool sync = true>
  void GetTensorC(const GlobalTensor<DstT> &gm, uint8_t enAtomic = 0, bool enSequentialWrite = false) {
    const char *call = "Matmul::GetTensorC";
    CheckTile(call, enAtomic);
    const uint64_t off = enSequentialWrite ? 0 : uint64_t(tm_) * t_.baseM * Kc_ + uint64_t(tn_) * t_.baseN;
    const int ldc = enSequentialWrite ? t_.baseN : Kc_;
    twin_detail::GmMatrix(call, gm, off, tileM_, tileN_, ldc);
    Written(call, gm, off, tileM_, tileN_, ldc, enAtomic != 0);
    Store(gm.TwinData() + off, ldc, tile_.as<float>(), tileM_, tileN_, enAtomic);
  }
  // The current tile into UB, baseM x baseN row-major (row stride baseN).
  template <bool sync = true>
  void GetTensorC(const LocalTensor<DstT> &c, uint8_t enAtomic = 0, bool enSequentialWrite = false) {
    const char *call = "Matmul::GetTensorC";
    CheckTile(call, enAtomic);
    twin_detail::UbAligned(call, c.TwinData());
    if (uint64_t(c.TwinCap()) < uint64_t(t_.baseM) * t_.baseN)
      twin_detail::UbOutOfRange(call, uint64_t(t_.baseM) * t_.baseN, c.TwinCap());
    Store(c.TwinData(), t_.baseN, tile_.as<float>(), tileM_, tileN_, enAtomic);
  }

  void End() {
    iterating_ = false;
    tm_ = tn_ = tileM_ = tileN_ = 0;
  }

  // Set when the REGIST_MATMUL_OBJ that registered this object goes out of scope.
  bool *TwinClientEnded() { return &clientEnded_; }

 private:
  static int CeilDiv(int a, int b) { return (a + b - 1) / b; }

  bool Advance(int tilesM, int tilesN) {
    const bool mFirst = t_.iterateOrder == 0;
    int &inner = mFirst ? tm_ : tn_, &outer = mFirst ? tn_ : tm_;
    if (++inner < (mFirst ? tilesM : tilesN)) return true;
    inner = 0;
    return ++outer < (mFirst ? tilesN : tilesM);
  }

  void Check(const char *call, uint8_t enAtomic) {
    if (!init_) twin_detail::Fail(call, "Matmul used before Init / REGIST_MATMUL_OBJ with a tiling");
    if (clientEnded_)
      twin_detail::Fail(call, "Matmul used after the scope of its REGIST_MATMUL_OBJ ended: on the NPU the vector "
                              "core's registration is a local object whose destructor tells the cube core to stop "
                              "serving, so register at kernel scope, outside any braces, before any InitBuffer");
    if (!a_.Ready() || !b_.Ready()) twin_detail::Fail(call, "SetTensorA/SetTensorB not called");
    if constexpr (A_TYPE::format != CubeFormat::ND || B_TYPE::format != CubeFormat::ND ||
                  C_TYPE::format != CubeFormat::ND)
      twin_detail::Fail(call, "only ND operands are modelled by the twin (A, B and C MatmulTypes must be "
                              "CubeFormat::ND, not NZ or ND_ALIGN)");
    CheckAtomic(call, enAtomic);
    if (m_ < 0 || n_ < 0 || k_ <= 0 || m_ > M_ || n_ > N_ || n_ > Kc_ || k_ > Ka_ || k_ > Kb_)
      twin_detail::Fail(call, "single shape " + twin_detail::Str(m_) + "x" + twin_detail::Str(n_) + "x" +
                                  twin_detail::Str(k_) + " does not fit the org shape M=" + twin_detail::Str(M_) +
                                  " N=" + twin_detail::Str(N_) + " Ka=" + twin_detail::Str(Ka_) +
                                  " Kb=" + twin_detail::Str(Kb_) + " Kc=" + twin_detail::Str(Kc_));
  }
  static void CheckAtomic(const char *call, uint8_t enAtomic) {
    if (enAtomic > 3)
      twin_detail::Fail(call, "enAtomic must be 0 (overwrite), 1 (add), 2 (max) or 3 (min), got " +
                                  twin_detail::Str(int(enAtomic)));
  }
  // A LocalTensor operand needs its MatmulType at a local position, in UB 32-byte aligned.
  template <class TYPE>
  static void LocalSource(const char *call, const void *p) {
    if constexpr (!twin_detail::CubeLocalSource(TYPE::pos))
      twin_detail::Fail(call, "a LocalTensor operand needs its MatmulType at VECIN, VECOUT, VECCALC or TSCM (this "
                              "one is at another position: pass a GlobalTensor)");
    twin_detail::UbAligned(call, p);
  }
  void CheckTile(const char *call, uint8_t enAtomic) {
    if (!iterating_) twin_detail::Fail(call, "no current tile (GetTensorC without a successful Iterate)");
    CheckAtomic(call, enAtomic);
  }

  // c[rows x cols] (row stride ldc) = (with `add`: c +) A[row0.., :k] * B[:k, col0..] + bias[col0..],
  // in fp32.
  void Product(::ms_ops::twin::CubeUnit &unit, const char *call, int row0, int col0, int rows, int cols, float *c,
               int ldc, bool add) {
    if (rows == 0 || cols == 0) return;
    // Stored shapes: A is M x Ka (transposed: Ka x M), B is Kb x N (transposed: N x Kb).
    const int lda = transA_ ? M_ : Ka_, ldb = transB_ ? Kb_ : N_;
    const uint64_t aOff = transA_ ? row0 : uint64_t(row0) * lda, bOff = transB_ ? uint64_t(col0) * ldb : col0;
    const int aRows = transA_ ? k_ : rows, aCols = transA_ ? rows : k_;
    const int bRows = transB_ ? cols : k_, bCols = transB_ ? k_ : cols;
    const SrcAT *a = a_.At(call, aOff, aRows, aCols, lda);
    const SrcBT *b = b_.At(call, bOff, bRows, bCols, ldb);
    ::ms_ops::twin::ProfileCube(rows, cols, k_, sizeof(SrcAT), sizeof(SrcBT), sizeof(DstT));
    if constexpr (std::is_same_v<SrcAT, bfloat16_t> && ::ms_ops::twin::kBgemm) {
      // bf16 operands are read in place by the bf16 GEMM, packed into the unit's scratch.
      static_assert(sizeof(bfloat16_t) == sizeof(uint16_t) && sizeof(float) == sizeof(uint32_t));
      ::ms_ops::twin::Bgemm(transA_, transB_, rows, cols, k_, reinterpret_cast<const uint16_t *>(a), lda,
                            reinterpret_cast<const uint16_t *>(b), ldb, c, ldc, add,
                            reinterpret_cast<uint32_t *>(unit.Scratch(0, ::ms_ops::twin::kBgemmPackAWords)),
                            reinterpret_cast<uint32_t *>(unit.Scratch(1, ::ms_ops::twin::kBgemmPackBWords)));
    } else {
      ProductWidened(unit, rows, cols, lda, ldb, a, b, c, ldc, add);
    }
    if (!hasBias_) return;
    const BiasT *bias = bias_.At(call, col0, 1, cols, cols);
    for (int r = 0; r < rows; ++r)
      for (int j = 0; j < cols; ++j) c[size_t(r) * ldc + j] += static_cast<float>(bias[j]);
  }

  // Product's fp32 path: fp32 operands are read in place by one sgemm; fp16/bf16 ones are widened
  // kWidenPanel columns of K at a time, so a unit's scratch stays (rows + cols) x kWidenPanel floats.
  void ProductWidened(::ms_ops::twin::CubeUnit &unit, int rows, int cols, int lda, int ldb, const SrcAT *aAt,
                      const SrcBT *bAt, float *c, int ldc, bool add) {
    const int panel = std::is_same_v<SrcAT, float> ? k_ : std::min(k_, twin_detail::kWidenPanel);
    for (int k0 = 0; k0 < k_; k0 += panel) {
      const int kk = std::min(panel, k_ - k0);
      // Column k0 of op(A): element k0 of each row of A, or row k0 of a transposed A (Ka x M).
      const uint64_t aK = transA_ ? uint64_t(k0) * lda : uint64_t(k0), bK = transB_ ? uint64_t(k0) : uint64_t(k0) * ldb;
      const int aR = transA_ ? kk : rows, aC = transA_ ? rows : kk;
      const int bR = transB_ ? cols : kk, bC = transB_ ? kk : cols;
      int la, lb;
      const float *a = twin_detail::AsFloat(unit, aAt + aK, aR, aC, lda, 0, la);
      const float *b = twin_detail::AsFloat(unit, bAt + bK, bR, bC, ldb, 1, lb);
      ::ms_ops::twin::Sgemm(transA_, transB_, rows, cols, kk, a, la, b, lb, c, ldc, k0 == 0 && !add ? 0.0f : 1.0f);
    }
  }

  // The rows x cols block of C at `off` (row stride ldc), logged as the running block's GM writes.
  static void Written(const char *call, const GlobalTensor<DstT> &gm, uint64_t off, int rows, int cols, int ldc,
                      bool atomic) {
    if (::ms_ops::twin::Current().gmMine == nullptr || rows == 0 || cols == 0) return;
    const DstT *c = gm.TwinData() + off;
    const uint64_t rowBytes = uint64_t(cols) * sizeof(DstT);
    if (ldc == cols) return ::ms_ops::twin::GmWritten(call, gm.TwinBase(), c, rows * rowBytes, atomic);
    for (int r = 0; r < rows; ++r)
      ::ms_ops::twin::GmWritten(call, gm.TwinBase(), c + size_t(r) * ldc, rowBytes, atomic);
  }

  // acc (rows x cols, fp32) into C: converted to C's type, as FIXPIPE does on its way out of L0C,
  // then stored or, with enAtomic 1/2/3, combined by the store atomic (add, max, min; the values of
  // twin_detail::AtomicOp). The atomic works in C's type (CANN's Matmul sets SetAtomicAdd<DstT>
  // and its kin), so an fp16 or bf16 C is rounded twice: conversion, then add.
  static void Store(DstT *c, int ldc, const float *acc, int rows, int cols, uint8_t enAtomic) {
    const auto op = static_cast<twin_detail::AtomicOp>(enAtomic);
    for (int r = 0; r < rows; ++r) {
      DstT *row = c + size_t(r) * ldc;
      const float *src = acc + size_t(r) * cols;
      if (op == twin_detail::kAtomicNone) {
        Narrow(row, src, cols);
      } else if constexpr (std::is_same_v<DstT, float>) {
        twin_detail::AtomicStore(op, row, src, cols);
      } else {
        constexpr int kPiece = 256;
        DstT piece[kPiece];
        for (int j0 = 0; j0 < cols; j0 += kPiece) {
          const int n = std::min(kPiece, cols - j0);
          Narrow(piece, src + j0, n);
          twin_detail::AtomicStore(op, row + j0, piece, n);
        }
      }
    }
  }

  // n floats converted to C's type, through the casts' vector loops for fp16/bf16 (AsFloat's
  // reason: GCC leaves the fp16 conversion scalar).
  static void Narrow(DstT *d, const float *s, int n) {
    if constexpr (std::is_same_v<DstT, half>) {
      twin_detail::FloatToHalf(d, s, uint32_t(n));
    } else if constexpr (std::is_same_v<DstT, bfloat16_t>) {
      twin_detail::FloatToBf16(d, s, uint32_t(n));
    } else {
      for (int j = 0; j < n; ++j) d[j] = static_cast<DstT>(s[j]);
    }
  }

  TCubeTiling t_{};
  bool init_ = false, transA_ = false, transB_ = false, hasBias_ = false, iterating_ = false, clientEnded_ = false;
  int M_ = 0, N_ = 0, Ka_ = 0, Kb_ = 0, Kc_ = 0, m_ = 0, n_ = 0, k_ = 0;
  int tm_ = 0, tn_ = 0, tileM_ = 0, tileN_ = 0;
  twin_detail::CubeIn<SrcAT> a_;
  twin_detail::CubeIn<SrcBT> b_;
  twin_detail::CubeIn<BiasT> bias_;
  ::ms_ops::twin::Pages tile_;  // the current tile (L0C on the NPU), page-backed: see twin_memory.h
};

namespace twin_detail {

inline void RegistMatmulObj(TPipe *) {}
template <class MM, class Tiling, class... Rest>
inline void RegistMatmulObj(TPipe *pipe, MM &mm, Tiling &&tiling, Rest &&...rest) {
  static_assert(sizeof...(Rest) <= 6, "REGIST_MATMUL_OBJ takes at most 4 Matmul objects");
  if (tiling != nullptr) mm.Init(tiling, pipe);
  RegistMatmulObj(pipe, std::forward<Rest>(rest)...);
}

// What REGIST_MATMUL_OBJ declares: registers its Matmul objects and, when it goes out of scope,
// marks them unusable, as the NPU's cube core stops serving when the vector core's client ends.
class MatmulClient {
 public:
  template <class... Args>
  explicit MatmulClient(TPipe *pipe, Args &&...args) {
    // The AIC of a mixed launch serves the AIVs' requests from here to the kernel's end (the twin's
    // AIVs compute their Matmul themselves), so it leaves the kernel body.
    if (::ms_ops::twin::Current().coreType == ::ms_ops::twin::kAic) throw ::ms_ops::twin::AicServed{};
    Collect(args...);
    RegistMatmulObj(pipe, std::forward<Args>(args)...);
  }
  ~MatmulClient() {
    for (int i = 0; i < count_; ++i) *ended_[i] = true;
  }
  MatmulClient(const MatmulClient &) = delete;
  MatmulClient &operator=(const MatmulClient &) = delete;

 private:
  void Collect() {}
  template <class MM, class Tiling, class... Rest>
  void Collect(MM &mm, Tiling &&, Rest &&...rest) {
    ended_[count_++] = mm.TwinClientEnded();
    Collect(rest...);
  }

  bool *ended_[4] = {};
  int count_ = 0;
};

}  // namespace twin_detail
}  // namespace AscendC

namespace AscendC {
// The class Matmul wraps on the NPU (kernels that drive the cube side themselves use it directly).
template <class A_TYPE, class B_TYPE, class C_TYPE, class BIAS_TYPE = C_TYPE, const auto &MM_CFG = CFG_NORM,
          class MM_CB = MatmulCallBackFunc<nullptr, nullptr, nullptr>, class MM_POLICY = void>
using MatmulImpl = Matmul<A_TYPE, B_TYPE, C_TYPE, BIAS_TYPE, MM_CFG, MM_CB, MM_POLICY>;
}  // namespace AscendC

namespace matmul = AscendC;

// REGIST_MATMUL_OBJ(&pipe, workspace, mm1, &tiling1[, mm2, &tiling2 ...]): Init with each tiling;
// the objects stay usable until the end of the enclosing scope.
#define MS_OPS_TWIN_CAT2(a, b) a##b
#define MS_OPS_TWIN_CAT(a, b) MS_OPS_TWIN_CAT2(a, b)
#define REGIST_MATMUL_OBJ(tpipe, workspace, ...) \
  ::AscendC::twin_detail::MatmulClient MS_OPS_TWIN_CAT(twinMatmulClient, __LINE__)(tpipe, __VA_ARGS__)

#endif  // MS_OPS_TWIN_LIB_MATMUL_INTF_H_
