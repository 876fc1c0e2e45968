// The cube core's low-level API (CANN 8.x names, Atlas A2): the ND -> NZ copy from GM into L1,
// LoadData's 2-D fractal loads into L0A / L0B, Mmad into L0C, Fixpipe out of L0C, InitConstValue.
// What a kernel that drives the cube itself (not through Matmul) calls.
//
// Layouts, as the NPU keeps them (C0 = 32 bytes of elements: 16 halves, 8 floats, 32 int8):
// - L1 holds NZ matrices: column blocks C0 wide one after another, each a run of rows of C0
//   elements (one 32-byte block a row); the ND -> NZ copy places them (Nd2NzParams).
// - A fractal is 512 bytes: 16 rows of C0 elements. LoadData copies fractals by index (optionally
//   transposing 16 x 16 ones of 16-bit types).
// - Mmad reads A [m, k] from L0A as fractals (m block, k block), m block major, each 16 m-rows of
//   C0 k-elements; B [k, n] from L0B as fractals (k block, n block), k block major, each 16
//   n-rows of C0 k-elements (B's columns are its rows: the k-contiguous layout LoadData's transpose
//   of an NZ [k, n] matrix gives); it writes C [m, n] to L0C as NZ fractals of 16 x 16 4-byte
//   elements, n block major, m rounded up to 16 rows.
// - Fixpipe reads C by the same layout, srcStride rows apart between n blocks, and writes it to GM
//   (or L1) row-major or NZ (blocks of 16 columns), converting fp32 to half / bf16 as quantPre says.
// Every operand is checked to lie in the memory its role needs, aligned as the NPU needs, and
// within its buffer; the accesses are the pipes' (MTE2, MTE1, M, FIX) for the race checks.
#ifndef MS_OPS_TWIN_CUBE_H_
#define MS_OPS_TWIN_CUBE_H_

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "twin_atomic.h"
#include "twin_copy.h"
#include "twin_profile.h"

// Fixpipe's conversion modes. The CCE compiler declares them at global scope: kernels name them
// unqualified (QuantMode_t::F322F16).
enum QuantMode_t : uint8_t {
  NoQuant = 0,
  F322F16,
  F322BF16,
  DEQF16,
  VDEQF16,
  QF322B8_PRE,
  VQF322B8_PRE,
  REQ8,
  VREQ8,
};

namespace AscendC {

struct Nd2NzParams {
  Nd2NzParams() = default;
  Nd2NzParams(uint16_t ndNumIn, uint16_t nValueIn, uint16_t dValueIn, uint16_t srcNdMatrixStrideIn,
              uint16_t srcDValueIn, uint16_t dstNzC0StrideIn, uint16_t dstNzNStrideIn, uint16_t dstNzMatrixStrideIn)
      : ndNum(ndNumIn), nValue(nValueIn), dValue(dValueIn), srcNdMatrixStride(srcNdMatrixStrideIn),
        srcDValue(srcDValueIn), dstNzC0Stride(dstNzC0StrideIn), dstNzNStride(dstNzNStrideIn),
        dstNzMatrixStride(dstNzMatrixStrideIn) {}
  uint16_t ndNum = 0, nValue = 0, dValue = 0, srcNdMatrixStride = 0, srcDValue = 0;
  uint16_t dstNzC0Stride = 0, dstNzNStride = 0, dstNzMatrixStride = 0;
};

struct LoadData2DParams;
using LoadData2dParams = LoadData2DParams;
struct LoadData2DParams {
  LoadData2DParams() = default;
  LoadData2DParams(uint16_t startIndexIn, uint8_t repeatTimesIn, uint16_t srcStrideIn, uint8_t sidIn,
                   uint16_t dstGapIn, bool ifTransposeIn, uint8_t addrModeIn)
      : startIndex(startIndexIn), dstGap(dstGapIn), srcStride(srcStrideIn), ifTranspose(ifTransposeIn),
        repeatTimes(repeatTimesIn), sid(sidIn), addrMode(addrModeIn) {}
  uint16_t startIndex = 0, dstGap = 0, srcStride = 0;
  bool ifTranspose = false;
  uint8_t repeatTimes = 0, sid = 0, addrMode = 0;  // addrMode 1: source fractals at decreasing indices
};

struct LoadData2dTransposeParams {
  LoadData2dTransposeParams() = default;
  LoadData2dTransposeParams(uint16_t startIndexIn, uint8_t repeatTimesIn, uint16_t srcStrideIn, uint16_t dstGapIn,
                            uint16_t dstFracGapIn, uint8_t addrModeIn = 0)
      : startIndex(startIndexIn), repeatTimes(repeatTimesIn), srcStride(srcStrideIn), dstGap(dstGapIn),
        dstFracGap(dstFracGapIn), addrMode(addrModeIn) {}
  uint16_t startIndex = 0;
  uint8_t repeatTimes = 0;
  uint16_t srcStride = 0, dstGap = 0, dstFracGap = 0;
  uint8_t addrMode = 0;
};

struct MmadParams {
  MmadParams() = default;
  MmadParams(uint16_t mIn, uint16_t nIn, uint16_t kIn, bool isBiasIn, int32_t fmOffsetIn, bool enSsparseIn,
             bool enWinogradAIn, bool enWinogradBIn)
      : m(mIn), n(nIn), k(kIn), isBias(isBiasIn), fmOffset(fmOffsetIn), enSsparse(enSsparseIn),
        enWinogradA(enWinogradAIn), enWinogradB(enWinogradBIn) {}
  MmadParams(uint16_t mIn, uint16_t nIn, uint16_t kIn, uint8_t unitFlagIn, bool cmatrixSourceIn, bool cmatrixInitValIn)
      : m(mIn), n(nIn), k(kIn), unitFlag(unitFlagIn), cmatrixSource(cmatrixSourceIn), cmatrixInitVal(cmatrixInitValIn) {}
  uint16_t m = 0, n = 0, k = 0;
  bool isBias = false;  // set: C's initial values are used (as cmatrixInitVal false)
  int32_t fmOffset = 0;
  bool enSsparse = false, enWinogradA = false, enWinogradB = false;
  uint8_t unitFlag = 0;
  bool kDirectionAlign = false;  // fp32: k laid out in L0A / L0B in blocks of 16, not 8
  bool cmatrixSource = false;    // C's initial values: the bias table (broadcast over rows), else L0C
  bool cmatrixInitVal = true;    // true: C = A B; false: C = initial values + A B
};

using ::QuantMode_t;

struct FixpipeParamsV220 {
  FixpipeParamsV220() = default;
  FixpipeParamsV220(uint16_t nSizeIn, uint16_t mSizeIn, uint16_t srcStrideIn, uint32_t dstStrideIn, bool reluEnIn)
      : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), reluEn(reluEnIn) {}
  FixpipeParamsV220(uint16_t nSizeIn, uint16_t mSizeIn, uint16_t srcStrideIn, uint32_t dstStrideIn, bool reluEnIn,
                    QuantMode_t quantPreIn, int64_t deqScalarIn, uint16_t ndNumIn, uint16_t srcNdStrideIn,
                    uint16_t dstNdStrideIn, uint8_t unitFlagIn, bool isChannelSplitIn = false)
      : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), quantPre(quantPreIn),
        deqScalar(static_cast<uint64_t>(deqScalarIn)), ndNum(ndNumIn), srcNdStride(srcNdStrideIn),
        dstNdStride(dstNdStrideIn), reluEn(reluEnIn), unitFlag(unitFlagIn), isChannelSplit(isChannelSplitIn) {}
  uint16_t nSize = 0, mSize = 0;
  uint16_t srcStride = 0;  // L0C rows (16 elements each) between the starts of adjacent n blocks
  uint32_t dstStride = 0;  // elements between the destination's rows
  QuantMode_t quantPre = QuantMode_t::NoQuant;
  uint64_t deqScalar = 0;
  uint16_t ndNum = 1, srcNdStride = 0;
  uint32_t dstNdStride = 0;
  bool reluEn = false;
  uint8_t unitFlag = 0;
  bool isChannelSplit = false;
};

enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR, COLUMN_MAJOR };
struct FixpipeConfig {
  constexpr FixpipeConfig(CO2Layout formatIn) : format(formatIn) {}
  constexpr FixpipeConfig(CO2Layout formatIn, bool) : format(formatIn) {}
  CO2Layout format;
};
constexpr FixpipeConfig CFG_NZ = {CO2Layout::NZ};
constexpr FixpipeConfig CFG_ROW_MAJOR = {CO2Layout::ROW_MAJOR};
constexpr FixpipeConfig CFG_COLUMN_MAJOR = {CO2Layout::COLUMN_MAJOR};

template <typename T>
struct InitConstValueParams {
  InitConstValueParams() = default;
  InitConstValueParams(uint16_t repeatTimesIn, uint16_t blockNumIn, uint16_t dstGapIn, T initValueIn)
      : repeatTimes(repeatTimesIn), blockNum(blockNumIn), dstGap(dstGapIn), initValue(initValueIn) {}
  // blockNum 0: 512 bytes a repeat, no gap.
  InitConstValueParams(uint16_t repeatTimesIn, T initValueIn) : repeatTimes(repeatTimesIn), initValue(initValueIn) {}
  uint16_t repeatTimes = 0, blockNum = 0, dstGap = 0;
  T initValue = 0;
};

namespace twin_detail {

using ::ms_ops::twin::kPipeFix;
using ::ms_ops::twin::kPipeM;
using ::ms_ops::twin::kPipeMte1;
using ::ms_ops::twin::LocalMem;

constexpr uint32_t kFractalBytes = 512;

// `what` (an operand of `call`) must start in one of the memories `a`/`b`, `align`-byte aligned there.
inline void InMemory(const char *call, const char *what, const void *p, LocalMem a, LocalMem b, uint32_t align) {
  const LocalMem m = LocalMemOf(p);
  if (m != a && m != b) {
    const std::string where = m == ::ms_ops::twin::kLocalMems ? "outside local memory" : ::ms_ops::twin::kLocalMemNames[m];
    Fail(call, std::string(what) + " is in " + where + ", not in " + ::ms_ops::twin::kLocalMemNames[a] +
                   (b != a ? std::string(" or ") + ::ms_ops::twin::kLocalMemNames[b] : std::string()) +
                   " (a buffer of a queue or TBuf at the matching TPosition)");
  }
  if (PhyAddr(p) % align != 0)
    Fail(call, std::string(what) + " at " + ::ms_ops::twin::kLocalMemNames[m] + " offset " + Str(PhyAddr(p)) +
                   " is not " + Str(align) + "-byte aligned");
}

// Elements [0, count) of local tensor t must lie in its buffer.
template <typename T>
inline void Within(const char *call, const LocalTensor<T> &t, uint64_t count) {
  if (count > t.TwinCap()) UbOutOfRange(call, count, t.TwinCap());
}

// Where element (r, c) of a [rows, cols] matrix lies in Mmad's A layout: 16-row blocks of
// `c0`-column fractals, row blocks major, `colBlocks` fractals a row block.
inline uint64_t ZzIndex(uint64_t r, uint64_t c, uint64_t colBlocks, uint32_t c0) {
  return ((r / 16) * colBlocks + c / c0) * 16 * c0 + (r % 16) * c0 + c % c0;
}

// Where element (k, n) of B lies in Mmad's B layout: `c0`-deep k blocks major, `nBlocks` fractals
// of 16 n-rows each.
inline uint64_t ZnIndex(uint64_t k, uint64_t n, uint64_t nBlocks, uint32_t c0) {
  return ((k / c0) * nBlocks + n / 16) * 16 * c0 + (n % 16) * c0 + k % c0;
}

// One 512-byte fractal (16 x 16 for 16-bit types), optionally transposed.
template <typename T>
inline void CopyFractal(T *dst, const T *src, bool transpose) {
  if (!transpose) {
    std::memcpy(dst, src, kFractalBytes);
    return;
  }
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) dst[c * 16 + r] = src[r * 16 + c];
}

// Repeat r's source index of a walk over fractals or squares (`unit`): start +- r * stride (addrMode
// 1: decreasing).
inline uint64_t RepeatSource(const char *call, const char *unit, uint16_t start, uint32_t r, uint16_t stride,
                             uint8_t addrMode) {
  const int64_t step = int64_t(r) * stride, idx = addrMode ? int64_t(start) - step : start + step;
  if (idx < 0)
    Fail(call, "repeat " + Str(r) + " reads a " + unit + " before the source (addrMode 1 past index 0)");
  return uint64_t(idx);
}

template <typename T>
inline void LoadFractals(const char *call, const LocalTensor<T> &dst, const T *src, uint64_t srcCap,
                         const LoadData2DParams &p, ::ms_ops::twin::Pipe srcPipe) {
  InMemory(call, "dst", dst.TwinData(), ::ms_ops::twin::kMemL0A, ::ms_ops::twin::kMemL0B, kFractalBytes);
  if (p.ifTranspose && sizeof(T) != 2)
    Fail(call, "ifTranspose transposes 16-bit fractals only on Atlas A2 (LoadDataWithTranspose for other types)");
  constexpr uint64_t per = kFractalBytes / sizeof(T);
  for (uint32_t r = 0; r < p.repeatTimes; ++r) {
    const uint64_t from = RepeatSource(call, "fractal", p.startIndex, r, p.srcStride, p.addrMode) * per;
    const uint64_t to = uint64_t(r) * (p.dstGap + 1u) * per;
    if (from + per > srcCap) UbOutOfRange(call, from + per, srcCap);
    Within(call, dst, to + per);
    Races().Read(srcPipe, call, src + from, kFractalBytes);
    Races().Write(kPipeMte1, call, dst.TwinData() + to, kFractalBytes);
    CopyFractal(dst.TwinData() + to, src + from, p.ifTranspose);
  }
  ::ms_ops::twin::ProfileUb(kPipeMte1, uint64_t(p.repeatTimes) * kFractalBytes);
}

// The Mmad type pairs of Atlas A2: A and B of one type, C fp32 (int32 for int8).
template <typename D, typename S>
constexpr bool MmadTypes() {
  return (std::is_same_v<D, float> && (std::is_same_v<S, half> || std::is_same_v<S, bfloat16_t> ||
                                       std::is_same_v<S, float>)) ||
         (std::is_same_v<D, int32_t> && std::is_same_v<S, int8_t>);
}

// C = A B, or C = initial values + A B (cmatrixInitVal false, or isBias): the initial values are
// L0C's own, or, with cmatrixSource, a row of n bias values from the bias table (`bias`: the bias
// tensor of Mmad's bias overload, else the table's start) added to every row.
template <typename D, typename S>
inline void MmadRun(const char *call, const LocalTensor<D> &dst, const LocalTensor<S> &fm, const LocalTensor<S> &filter,
                    const D *bias, const MmadParams &p) {
  static_assert(MmadTypes<D, S>(), "Mmad: Atlas A2 multiplies half, bfloat16_t or float into float, int8_t into int32_t");
  InMemory(call, "dst", dst.TwinData(), ::ms_ops::twin::kMemL0C, ::ms_ops::twin::kMemL0C, 64);
  InMemory(call, "fm", fm.TwinData(), ::ms_ops::twin::kMemL0A, ::ms_ops::twin::kMemL0A, kFractalBytes);
  InMemory(call, "filter", filter.TwinData(), ::ms_ops::twin::kMemL0B, ::ms_ops::twin::kMemL0B, kFractalBytes);
  if (p.enSsparse || p.enWinogradA || p.enWinogradB || p.fmOffset != 0)
    Fail(call, "sparse, Winograd and fmOffset modes are not modelled by the twin");
  if (p.m > 4095 || p.n > 4095 || p.k > 4095)
    Fail(call, "m, n and k must be at most 4095 (got " + Str(p.m) + ", " + Str(p.n) + ", " + Str(p.k) + ")");
  if (p.m == 0 || p.n == 0 || p.k == 0) return;
  const bool init = p.cmatrixInitVal && !p.isBias, fromBias = !init && p.cmatrixSource;
  const D *row = nullptr;
  if (fromBias) {
    row = bias != nullptr ? bias
                          : reinterpret_cast<const D *>(::ms_ops::twin::Current().ub +
                                                        ::ms_ops::twin::LocalMemBase(::ms_ops::twin::kMemBt));
    if (UbOffset(row) + uint64_t(p.n) * sizeof(D) > ::ms_ops::twin::LocalMemBase(::ms_ops::twin::kLocalMems))
      Fail(call, "n " + Str(p.n) + " bias values reach past the bias table");
    Races().Read(kPipeM, call, row, uint64_t(p.n) * sizeof(D));
  }
  constexpr uint32_t c0 = 32 / sizeof(S);
  // kDirectionAlign: fp32 A's k blocks of 8 come in pairs in L0A (k rounded up to 16 there, as
  // LoadDataWithTranspose leaves a transposed A); B's stay single.
  const uint32_t kAlignA = p.kDirectionAlign && sizeof(S) == 4 ? 16 : c0;
  const uint32_t kbA = (p.k + kAlignA - 1) / kAlignA * (kAlignA / c0), kb = (p.k + c0 - 1) / c0;
  const uint32_t mb = (p.m + 15) / 16, nb = (p.n + 15) / 16;
  const uint64_t aCount = uint64_t(mb) * kbA * 16 * c0, bCount = uint64_t(kb) * nb * 16 * c0, cCount = uint64_t(nb) * mb * 256;
  Within(call, fm, aCount);
  Within(call, filter, bCount);
  Within(call, dst, cCount);
  Races().Read(kPipeM, call, fm.TwinData(), aCount * sizeof(S));
  Races().Read(kPipeM, call, filter.TwinData(), bCount * sizeof(S));
  if (!init && !fromBias) Races().Read(kPipeM, call, dst.TwinData(), cCount * sizeof(D));
  Races().Write(kPipeM, call, dst.TwinData(), cCount * sizeof(D));
  using Acc = std::conditional_t<std::is_same_v<D, int32_t>, int32_t, float>;
  const S *a = fm.TwinData(), *b = filter.TwinData();
  D *c = dst.TwinData();
  for (uint32_t i = 0; i < p.m; ++i)
    for (uint32_t j = 0; j < p.n; ++j) {
      D &out = c[(uint64_t(j / 16) * mb * 16 + i) * 16 + j % 16];
      Acc s = init ? Acc(0) : fromBias ? Acc(row[j]) : Acc(out);
      for (uint32_t kk = 0; kk < p.k; ++kk) {
        const Acc x = Acc(a[ZzIndex(i, kk, kbA, c0)]);
        const Acc y = Acc(b[ZnIndex(kk, j, nb, c0)]);
        if constexpr (std::is_same_v<Acc, float>) {
          s = __builtin_fmaf(x, y, s);
        } else {
          s += x * y;
        }
      }
      out = D(s);
    }
  ::ms_ops::twin::ProfileCube(p.m, p.n, p.k, sizeof(S), sizeof(S), sizeof(D));
}

// The conversion Fixpipe applies to one L0C element.
template <typename T, typename U>
inline T FixpipeValue(const char *call, U v, const FixpipeParamsV220 &p) {
  if (p.reluEn && v < U(0)) v = U(0);
  switch (p.quantPre) {
    case QuantMode_t::NoQuant:
      if constexpr (std::is_same_v<T, U>) return v;
      break;
    case QuantMode_t::F322F16:
      if constexpr (std::is_same_v<U, float> && std::is_same_v<T, half>) return T(v);
      break;
    case QuantMode_t::F322BF16:
      if constexpr (std::is_same_v<U, float> && std::is_same_v<T, bfloat16_t>) return T(v);
      break;
    default:
      Fail(call, "quantPre " + Str(static_cast<int>(p.quantPre)) +
                     " (dequantisation / requantisation) is not modelled by the twin: NoQuant, F322F16 and F322BF16 are");
  }
  Fail(call, "quantPre " + Str(static_cast<int>(p.quantPre)) + " does not convert the source's type to the destination's "
             "(NoQuant: the same type; F322F16: float to half; F322BF16: float to bfloat16_t)");
}

// C [mSize, nSize] of L0C, converted, handed to `store(offset, values, count)` in runs of the
// destination: row-major, a row of nSize elements every dstStride elements; or NZ, runs of up to 16
// (the L0C fractal's columns) per column block, rows 16 elements apart, column blocks dstStride
// 32-byte blocks apart. Row-major (NZ2ND), ndNum matrices: matrix q from srcNdStride 16 x 16
// fractals of L0C (1 KiB) after matrix q - 1, to dstNdStride elements after it; ndNum and its
// strides are NZ2ND's parameters, and an NZ destination takes the one matrix.
template <typename T, typename U, const FixpipeConfig &config, class Store>
inline void FixpipeRun(const char *call, const LocalTensor<U> &src, const FixpipeParamsV220 &p, Store store) {
  static_assert(std::is_same_v<U, float> || std::is_same_v<U, int32_t>, "Fixpipe: L0C holds float or int32_t");
  constexpr bool nz = config.format == CO2Layout::NZ;
  if constexpr (config.format == CO2Layout::COLUMN_MAJOR)
    Fail(call, "the column-major destination is Ascend 950's (CFG_ROW_MAJOR and CFG_NZ are Atlas A2's)");
  InMemory(call, "src", src.TwinData(), ::ms_ops::twin::kMemL0C, ::ms_ops::twin::kMemL0C, 64);
  const uint32_t matrices = nz ? 1u : p.ndNum;
  if (matrices > 1 && p.srcNdStride == 0) Fail(call, "srcNdStride must be at least 1 with ndNum " + Str(p.ndNum));
  if (p.isChannelSplit) Fail(call, "isChannelSplit is not modelled by the twin");
  if (p.mSize == 0 || p.nSize == 0 || matrices == 0) return;
  if (p.srcStride < p.mSize || p.srcStride % 16 != 0)
    Fail(call, "srcStride " + Str(p.srcStride) + " must be a multiple of 16 rows and at least mSize " + Str(p.mSize));
  const uint64_t blockElems = uint64_t(p.dstStride) * 32 / sizeof(T);
  if (!nz && p.dstStride < p.nSize) Fail(call, "dstStride " + Str(p.dstStride) + " is below nSize " + Str(p.nSize));
  if (nz && blockElems < uint64_t(p.mSize) * 16)
    Fail(call, "dstStride " + Str(p.dstStride) + " (32-byte blocks between NZ column blocks) is below mSize " +
                   Str(p.mSize) + " rows of 16 elements");
  const uint64_t blocks = (p.nSize + 15u) / 16u, span = ((blocks - 1) * p.srcStride + p.mSize) * 16;
  const uint64_t srcStep = uint64_t(p.srcNdStride) * 256, total = uint64_t(matrices - 1) * srcStep + span;
  Within(call, src, total);
  Races().Read(kPipeFix, call, src.TwinData(), total * sizeof(U));
  std::vector<T> row(p.nSize);
  for (uint32_t q = 0; q < matrices; ++q) {
    const U *c = src.TwinData() + q * srcStep;
    const uint64_t out = uint64_t(q) * p.dstNdStride;
    for (uint32_t i = 0; i < p.mSize; ++i) {
      for (uint32_t j = 0; j < p.nSize; ++j)
        row[j] = FixpipeValue<T, U>(call, c[(uint64_t(j / 16) * p.srcStride + i) * 16 + j % 16], p);
      if constexpr (nz) {
        for (uint32_t j = 0; j < p.nSize; j += 16)
          store((j / 16) * blockElems + uint64_t(i) * 16, row.data() + j, p.nSize - j < 16 ? p.nSize - j : 16u);
      } else {
        store(out + uint64_t(i) * p.dstStride, row.data(), uint32_t(p.nSize));
      }
    }
  }
  ::ms_ops::twin::ProfileUb(kPipeFix, uint64_t(matrices) * p.mSize * p.nSize * sizeof(U));
}

}  // namespace twin_detail

// GM -> L1 with the ND -> NZ conversion: matrix i's row r, 32-byte block b (C0 elements; the last
// one of a row zero-filled past dValue) to element i * dstNzMatrixStride + r * dstNzNStride * C0 +
// b * dstNzC0Stride * C0 of dst, from src[i * srcNdMatrixStride + r * srcDValue + b * C0].
template <typename T>
inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const Nd2NzParams &p) {
  using namespace twin_detail;
  const char *call = "DataCopy(Nd2NzParams)";
  InMemory(call, "dst", dst.TwinData(), ::ms_ops::twin::kMemL1, ::ms_ops::twin::kMemL1, 32);
  if (p.ndNum == 0 || p.nValue == 0 || p.dValue == 0) return;
  if (p.ndNum > 4095 || p.nValue > 16384 || p.srcDValue < p.dValue || p.dstNzC0Stride == 0 || p.dstNzNStride == 0)
    Fail(call, "ndNum <= 4095, nValue <= 16384, srcDValue >= dValue, dstNzC0Stride >= 1 and dstNzNStride >= 1 (got " +
                   Str(p.ndNum) + ", " + Str(p.nValue) + ", " + Str(p.srcDValue) + " < " + Str(p.dValue) + "?, " +
                   Str(p.dstNzC0Stride) + ", " + Str(p.dstNzNStride) + ")");
  constexpr uint32_t c0 = 32 / sizeof(T);
  const uint32_t blocks = (p.dValue + c0 - 1) / c0;
  // Destination blocks must not overlap (the NPU gives no order among them): a column block's
  // rows must end before the next column block starts.
  if (blocks > 1 && uint64_t(p.dstNzC0Stride) < uint64_t(p.nValue - 1) * p.dstNzNStride + 1)
    Fail(call, "dstNzC0Stride " + Str(p.dstNzC0Stride) + " lets column blocks overlap (" + Str(p.nValue) +
                   " rows of dstNzNStride " + Str(p.dstNzNStride) + ")");
  for (uint32_t i = 0; i < p.ndNum; ++i)
    for (uint32_t r = 0; r < p.nValue; ++r) {
      const uint64_t from = uint64_t(i) * p.srcNdMatrixStride + uint64_t(r) * p.srcDValue;
      src.TwinCheck(call, from, p.dValue);
      Races().GmRead(kPipeMte2, call, src.TwinData() + from, uint64_t(p.dValue) * sizeof(T));
      for (uint32_t b = 0; b < blocks; ++b) {
        const uint64_t to = uint64_t(i) * p.dstNzMatrixStride + (uint64_t(r) * p.dstNzNStride + uint64_t(b) * p.dstNzC0Stride) * c0;
        Within(call, dst, to + c0);
        T *d = dst.TwinData() + to;
        const uint32_t n = p.dValue - b * c0 < c0 ? p.dValue - b * c0 : c0;
        Races().Write(kPipeMte2, call, d, 32);
        std::memcpy(d, src.TwinData() + from + uint64_t(b) * c0, n * sizeof(T));
        std::memset(d + n, 0, (c0 - n) * sizeof(T));
      }
    }
  ::ms_ops::twin::ProfileUb(kPipeMte2, uint64_t(p.ndNum) * p.nValue * blocks * 32);
}

// L1 -> L0A / L0B: repeatTimes fractals, the r-th from fractal startIndex +- r * srcStride of src
// to fractal r * (dstGap + 1) of dst (a 16 x 16 fractal of a 16-bit type transposed with ifTranspose).
template <typename T>
inline void LoadData(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LoadData2DParams &p) {
  const char *call = "LoadData";
  twin_detail::InMemory(call, "src", src.TwinData(), ::ms_ops::twin::kMemL1, ::ms_ops::twin::kMemL1, 32);
  twin_detail::LoadFractals(call, dst, src.TwinData(), src.TwinCap(), p, twin_detail::kPipeMte1);
}

// GM -> L0A / L0B, the same fractal walk (MTE2 reads GM).
template <typename T>
inline void LoadData(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const LoadData2DParams &p) {
  const char *call = "LoadData";
  const uint64_t cap = src.GetSize() != 0 ? src.GetSize() : ~uint64_t(0);
  if (p.repeatTimes > 0) {
    const uint64_t per = twin_detail::kFractalBytes / sizeof(T);
    const uint64_t last = p.addrMode ? p.startIndex : p.startIndex + uint64_t(p.repeatTimes - 1) * p.srcStride;
    twin_detail::Races().GmRead(twin_detail::kPipeMte2, call, src.TwinData(), (last + 1) * per * sizeof(T));
  }
  twin_detail::LoadFractals(call, dst, src.TwinData(), cap, p, twin_detail::kPipeMte2);
}

// L1 -> L0A / L0B, transposing squares: repeat r takes square startIndex +- r * srcStride of src
// (a 16 x 16 fractal of a 16-bit type; two fractals, 1 KiB, for 8- and 32-bit types: for int8 two
// 16 x 32 fractals one above the other, a 32 x 32 square; for fp32 two 16 x 8 fractals side by
// side, a 16 x 16 square), transposes it and writes it back as fractals: the first at r * (1 +
// dstGap) fractals of dst, the second (8- and 32-bit types) dstFracGap fractals after the first.
template <typename T>
inline void LoadDataWithTranspose(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                                  const LoadData2dTransposeParams &p) {
  using namespace twin_detail;
  const char *call = "LoadDataWithTranspose";
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "LoadDataWithTranspose: 8-, 16- or 32-bit elements");
  InMemory(call, "src", src.TwinData(), ::ms_ops::twin::kMemL1, ::ms_ops::twin::kMemL1, 32);
  InMemory(call, "dst", dst.TwinData(), ::ms_ops::twin::kMemL0A, ::ms_ops::twin::kMemL0B, kFractalBytes);
  constexpr uint64_t per = kFractalBytes / sizeof(T), fracs = sizeof(T) == 2 ? 1 : 2;
  for (uint32_t r = 0; r < p.repeatTimes; ++r) {
    const uint64_t from = RepeatSource(call, "square", p.startIndex, r, p.srcStride, p.addrMode) * fracs * per;
    const uint64_t to0 = uint64_t(r) * (1 + p.dstGap) * per, to1 = to0 + (1 + p.dstFracGap) * per;
    Within(call, src, from + fracs * per);
    Within(call, dst, (fracs == 2 ? to1 : to0) + per);
    const T *s = src.TwinData() + from;
    Races().Read(kPipeMte1, call, s, fracs * kFractalBytes);
    std::vector<T> out(fracs * per);
    if constexpr (sizeof(T) == 2) {
      CopyFractal(out.data(), s, true);
    } else if constexpr (sizeof(T) == 1) {
      // The square is the two fractals' 32 rows of 32; its transpose's rows 0-15 and 16-31.
      for (int i = 0; i < 32; ++i)
        for (int j = 0; j < 32; ++j) out[i * 32 + j] = s[j * 32 + i];
    } else {
      // Square element (row, col) is fractal col / 8's (row, col % 8); the transpose's columns
      // 0-7 and 8-15 are the two fractals out.
      for (int f = 0; f < 2; ++f)
        for (int i = 0; i < 16; ++i)
          for (int j = 0; j < 8; ++j) out[f * per + i * 8 + j] = s[(i / 8) * per + (8 * f + j) * 8 + i % 8];
    }
    Races().Write(kPipeMte1, call, dst.TwinData() + to0, kFractalBytes);
    std::memcpy(dst.TwinData() + to0, out.data(), kFractalBytes);
    if (fracs == 2) {
      Races().Write(kPipeMte1, call, dst.TwinData() + to1, kFractalBytes);
      std::memcpy(dst.TwinData() + to1, out.data() + per, kFractalBytes);
    }
  }
  ::ms_ops::twin::ProfileUb(kPipeMte1, uint64_t(p.repeatTimes) * fracs * kFractalBytes);
}

template <typename T, typename U, typename S>
inline void Mmad(const LocalTensor<T> &dst, const LocalTensor<U> &fm, const LocalTensor<S> &filter,
                 const MmadParams &p) {
  static_assert(std::is_same_v<U, S>, "Mmad: fm and filter have one element type");
  twin_detail::MmadRun<T, U>("Mmad", dst, fm, filter, nullptr, p);
}

// The bias overload: C's initial values (when cmatrixInitVal is false) are the bias row in the
// bias table (C2) that `bias` is. A bias in L0C (CO1), the NPU's other source, is not modelled.
template <typename T, typename U, typename S, typename V>
inline void Mmad(const LocalTensor<T> &dst, const LocalTensor<U> &fm, const LocalTensor<S> &filter,
                 const LocalTensor<V> &bias, const MmadParams &p) {
  static_assert(std::is_same_v<U, S>, "Mmad: fm and filter have one element type");
  static_assert(std::is_same_v<V, T>, "Mmad: the bias has C's element type");
  twin_detail::InMemory("Mmad", "bias", bias.TwinData(), ::ms_ops::twin::kMemBt, ::ms_ops::twin::kMemBt, 64);
  twin_detail::Within("Mmad", bias, p.n);
  MmadParams q = p;
  q.cmatrixSource = true;
  twin_detail::MmadRun<T, U>("Mmad", dst, fm, filter, bias.TwinData(), q);
}

// L0C -> GM: C [mSize, nSize] at dst, row-major (rows dstStride elements apart) or NZ (CFG_NZ: column
// blocks of 16, dstStride 32-byte blocks apart), converted as quantPre says; the store atomic set by
// SetAtomicAdd applies, as to MTE3's copies.
template <typename T, typename U, const FixpipeConfig &config = CFG_ROW_MAJOR>
inline void Fixpipe(const GlobalTensor<T> &dst, const LocalTensor<U> &src, const FixpipeParamsV220 &p) {
  using namespace twin_detail;
  const char *call = "Fixpipe";
  const AtomicOp op = StoreAtomic<T>(call);
  FixpipeRun<T, U, config>(call, src, p, [&](uint64_t at, const T *values, uint32_t n) {
    dst.TwinCheck(call, at, n);
    T *d = dst.TwinData() + at;
    ::ms_ops::twin::GmWritten(call, dst.TwinBase(), d, uint64_t(n) * sizeof(T), op != kAtomicNone);
    if (op == kAtomicNone) {
      std::memcpy(d, values, uint64_t(n) * sizeof(T));
    } else if constexpr (AtomicTag<T>() != 0) {
      AtomicStore(op, d, values, n);
    }
  });
}

// L0C -> L1, the same layout and conversions.
template <typename T, typename U, const FixpipeConfig &config = CFG_ROW_MAJOR>
inline void Fixpipe(const LocalTensor<T> &dst, const LocalTensor<U> &src, const FixpipeParamsV220 &p) {
  using namespace twin_detail;
  const char *call = "Fixpipe";
  InMemory(call, "dst", dst.TwinData(), ::ms_ops::twin::kMemL1, ::ms_ops::twin::kMemL1, 32);
  FixpipeRun<T, U, config>(call, src, p, [&](uint64_t at, const T *values, uint32_t n) {
    Within(call, dst, at + n);
    Races().Write(kPipeFix, call, dst.TwinData() + at, uint64_t(n) * sizeof(T));
    std::memcpy(dst.TwinData() + at, values, uint64_t(n) * sizeof(T));
  });
}

// Per-channel quantisation vectors from L1 are not modelled: these compile and fail when run.
template <typename T, typename U, const FixpipeConfig &config = CFG_ROW_MAJOR>
inline void Fixpipe(const GlobalTensor<T> &, const LocalTensor<U> &, const LocalTensor<uint64_t> &,
                    const FixpipeParamsV220 &) {
  twin_detail::Fail("Fixpipe", "per-channel quantisation (a cbufWorkspace of scales) is not modelled by the twin");
}

// repeatTimes runs of blockNum blocks (32 bytes in L1, 512 in L0A / L0B) set to initValue, runs
// dstGap blocks apart; blockNum 0 (the two-value form): 512 bytes a run, none apart. MTE2's work.
template <typename T, typename U>
inline void InitConstValue(const LocalTensor<T> &dst, const InitConstValueParams<U> &p) {
  using namespace twin_detail;
  static_assert(std::is_same_v<T, U>, "InitConstValue: the value has the tensor's element type");
  const char *call = "InitConstValue";
  const LocalMem m = LocalMemOf(dst.TwinData());
  const bool l0 = m == ::ms_ops::twin::kMemL0A || m == ::ms_ops::twin::kMemL0B;
  if (l0) {
    InMemory(call, "dst", dst.TwinData(), m, m, kFractalBytes);
  } else {
    InMemory(call, "dst", dst.TwinData(), ::ms_ops::twin::kMemL1, ::ms_ops::twin::kMemL1, 32);
  }
  const uint64_t unit = (l0 ? kFractalBytes : 32) / sizeof(T);
  const uint64_t per = p.blockNum == 0 ? kFractalBytes / sizeof(T) : p.blockNum * unit;
  const uint64_t gap = p.blockNum == 0 ? 0 : p.dstGap * unit;
  for (uint32_t r = 0; r < p.repeatTimes; ++r) {
    const uint64_t at = uint64_t(r) * (per + gap);
    Within(call, dst, at + per);
    Races().Write(kPipeMte2, call, dst.TwinData() + at, per * sizeof(T));
    for (uint64_t e = 0; e < per; ++e) dst.TwinData()[at + e] = p.initValue;
  }
}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_CUBE_H_
