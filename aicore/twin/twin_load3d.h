// LoadData's 3-D form (Load3Dv2, CANN 8.x names, Atlas A2): image to column from a feature map in
// L1 into L0A or L0B, as matrix kernels use it to move an NZ matrix into the cube's layouts.
//
// The feature map in L1 is NC1HWC0 with N = 1: channel c of position p = h * l1W + w at element
// ((c / C0) * l1H * l1W + p) * C0 + c % C0 (C0 = 32 bytes of elements), which is exactly an NZ
// matrix of l1H * l1W rows (twin_cube.h). With a 1 x 1 filter, stride 1, dilation 1 and no padding
// the image-to-column matrix X is that matrix: X[p][c], positions as rows, channels as columns.
// The instruction takes the block X[mStartPt + r][kStartPt + c], r < mExtension, c < kExtension
// (padValue where it runs past the map's positions or channelSize), and writes it
//   - to L0A untransposed: as A [mExtension, kExtension] in Mmad's layout (16-row blocks of C0
//     columns, row blocks major);
//   - to L0A with enTranspose (16- and 32-bit types): as A = the block's transpose [kExtension,
//     mExtension] in that layout, its k blocks of C0 counted over mExtension (a 32-bit type's
//     mExtension is a multiple of 16 there, the layout Mmad's kDirectionAlign reads);
//   - to L0B (16- and 32-bit types, transposed whatever enTranspose says): as B [mExtension,
//     kExtension], positions as Mmad's k, in Mmad's B layout (C0-deep k blocks major, each 16
//     n-rows of C0 k-elements).
// Convolutions proper (filters, strides, dilations or padding other than 1, 1, 1, 0), the small-k
// mode, FeatureMap registers set apart from the call (SetFmatrix, a non-default
// IsResetLoad3dConfig) and repeat modes are refused with a message: the twin does not model them.
#ifndef MS_OPS_TWIN_LOAD3D_H_
#define MS_OPS_TWIN_LOAD3D_H_

#include <cstdint>

#include "twin_cube.h"

namespace AscendC {

constexpr int32_t PAD_SIZE = 4;

struct IsResetLoad3dConfig {
  bool isSetFMatrix = true;
  bool isSetPadding = true;
};
constexpr IsResetLoad3dConfig IS_RESER_LOAD3D_DEFAULT_CONFIG = {true, true};

template <typename T>
struct LoadData3DParamsV2 {
  LoadData3DParamsV2() = default;
  LoadData3DParamsV2(const uint8_t padListIn[PAD_SIZE], uint16_t l1HIn, uint16_t l1WIn, uint16_t channelSizeIn,
                     uint16_t kExtensionIn, uint16_t mExtensionIn, uint16_t kStartPtIn, uint16_t mStartPtIn,
                     uint8_t strideWIn, uint8_t strideHIn, uint8_t filterWIn, uint8_t filterHIn,
                     uint8_t dilationFilterWIn, uint8_t dilationFilterHIn, bool enTransposeIn, bool enSmallKIn,
                     T padValueIn, bool filterSizeWIn = false, bool filterSizeHIn = false, bool fMatrixCtrlIn = false)
      : l1H(l1HIn), l1W(l1WIn), channelSize(channelSizeIn), kExtension(kExtensionIn), mExtension(mExtensionIn),
        kStartPt(kStartPtIn), mStartPt(mStartPtIn), strideW(strideWIn), strideH(strideHIn), filterW(filterWIn),
        filterH(filterHIn), dilationFilterW(dilationFilterWIn), dilationFilterH(dilationFilterHIn),
        enTranspose(enTransposeIn), enSmallK(enSmallKIn), padValue(padValueIn), filterSizeW(filterSizeWIn),
        filterSizeH(filterSizeHIn), fMatrixCtrl(fMatrixCtrlIn) {
    for (int32_t i = 0; i < PAD_SIZE; ++i) padList[i] = padListIn[i];
  }
  uint8_t padList[PAD_SIZE] = {0, 0, 0, 0};  // left, right, top, bottom
  uint16_t l1H = 0, l1W = 0, channelSize = 0, kExtension = 0, mExtension = 0, kStartPt = 0, mStartPt = 0;
  uint8_t strideW = 1, strideH = 1, filterW = 1, filterH = 1, dilationFilterW = 1, dilationFilterH = 1;
  bool enTranspose = false, enSmallK = false;
  T padValue = 0;
  bool filterSizeW = false, filterSizeH = false, fMatrixCtrl = false;
};

namespace twin_detail {

template <typename T>
inline void Load3dChecks(const char *call, const LoadData3DParamsV2<T> &p, bool toB) {
  constexpr uint32_t c0 = 32 / sizeof(T);
  const bool plain = p.filterW == 1 && p.filterH == 1 && !p.filterSizeW && !p.filterSizeH && p.strideW == 1 &&
                     p.strideH == 1 && p.dilationFilterW == 1 && p.dilationFilterH == 1 && p.padList[0] == 0 &&
                     p.padList[1] == 0 && p.padList[2] == 0 && p.padList[3] == 0;
  if (!plain)
    Fail(call, "the twin models the 1 x 1 filter, stride 1, dilation 1 and no padding (a matrix moved from NZ); "
               "a convolution's image to column is not modelled");
  if (p.enSmallK) Fail(call, "enSmallK: the small-k mode is not supported on Atlas A2");
  if (p.fMatrixCtrl) Fail(call, "fMatrixCtrl must be false (the FeatureMap of the left matrix)");
  if (toB && sizeof(T) == 1) Fail(call, "L1 -> L0B does not take 8-bit types on Atlas A2");
  if (!toB && p.enTranspose && sizeof(T) == 1) Fail(call, "enTranspose into L0A takes 16- and 32-bit types only");
  if (p.kStartPt % c0 != 0)
    Fail(call, "kStartPt " + Str(p.kStartPt) + " must be a multiple of " + Str(c0) + " (32 bytes of elements)");
}

}  // namespace twin_detail

// L1 (A1 / B1) -> L0A (A2) / L0B (B2): the block of the image-to-column matrix described above.
// l1H, l1W, channelSize, kExtension or mExtension 0 makes it a no-op, as on the NPU.
template <typename T, const IsResetLoad3dConfig &defaultConfig = IS_RESER_LOAD3D_DEFAULT_CONFIG>
inline void LoadData(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LoadData3DParamsV2<T> &p) {
  using namespace twin_detail;
  const char *call = "LoadData (Load3Dv2)";
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "Load3Dv2: 8-, 16- or 32-bit elements");
  if (!defaultConfig.isSetFMatrix || !defaultConfig.isSetPadding)
    Fail(call, "FeatureMap and padding registers set apart from the call (SetFmatrix, SetLoadDataPaddingValue) are "
               "not modelled by the twin: keep IS_RESER_LOAD3D_DEFAULT_CONFIG");
  InMemory(call, "src", src.TwinData(), ::ms_ops::twin::kMemL1, ::ms_ops::twin::kMemL1, 32);
  InMemory(call, "dst", dst.TwinData(), ::ms_ops::twin::kMemL0A, ::ms_ops::twin::kMemL0B, kFractalBytes);
  const bool toB = LocalMemOf(dst.TwinData()) == ::ms_ops::twin::kMemL0B;
  Load3dChecks(call, p, toB);
  if (p.l1H == 0 || p.l1W == 0 || p.channelSize == 0 || p.kExtension == 0 || p.mExtension == 0) return;
  constexpr uint32_t c0 = 32 / sizeof(T);
  const uint64_t positions = uint64_t(p.l1H) * p.l1W, channels = p.channelSize;
  const uint64_t c1 = (channels + c0 - 1) / c0, rows = p.mExtension, cols = p.kExtension;
  // Where block element (r, c) goes in dst: B's layout into L0B, else A's, of the block or its
  // transpose.
  const uint64_t nb = (cols + 15) / 16, kbT = (rows + c0 - 1) / c0, kb = (cols + c0 - 1) / c0;
  const auto at = [&](uint64_t r, uint64_t c) {
    return toB ? ZnIndex(r, c, nb, c0) : p.enTranspose ? ZzIndex(c, r, kbT, c0) : ZzIndex(r, c, kb, c0);
  };
  // The feature map's extent and the output's (its last element lies furthest), for the bounds and
  // the race checks.
  const uint64_t srcCount = c1 * positions * c0, dstCount = at(rows - 1, cols - 1) + 1;
  Within(call, src, srcCount);
  Within(call, dst, dstCount);
  Races().Read(kPipeMte1, call, src.TwinData(), srcCount * sizeof(T));
  Races().Write(kPipeMte1, call, dst.TwinData(), dstCount * sizeof(T));
  const T *s = src.TwinData();
  T *d = dst.TwinData();
  for (uint64_t r = 0; r < rows; ++r) {
    const uint64_t pos = uint64_t(p.mStartPt) + r;
    for (uint64_t c = 0; c < cols; ++c) {
      const uint64_t ch = uint64_t(p.kStartPt) + c;
      d[at(r, c)] = pos < positions && ch < channels ? s[((ch / c0) * positions + pos) * c0 + ch % c0] : p.padValue;
    }
  }
  ::ms_ops::twin::ProfileUb(kPipeMte1, rows * cols * sizeof(T));
}

// The repeat registers of Load3Dv2 (SetLoadDataRepeat): only a single repeat is modelled.
struct LoadDataRepeatParam {
  LoadDataRepeatParam() = default;
  LoadDataRepeatParam(uint16_t repeatStrideIn, uint8_t repeatTimeIn, uint8_t repeatModeIn)
      : repeatStride(repeatStrideIn), repeatTime(repeatTimeIn), repeatMode(repeatModeIn) {}
  uint16_t repeatStride = 0;
  uint8_t repeatTime = 1;
  uint8_t repeatMode = 0;
};

inline void SetLoadDataRepeat(const LoadDataRepeatParam &p) {
  if (p.repeatTime > 1)
    twin_detail::Fail("SetLoadDataRepeat", "repeatTime " + twin_detail::Str(p.repeatTime) +
                                               ": Load3Dv2's repeat mode is not modelled by the twin (one repeat is)");
}

}  // namespace AscendC

#endif  // MS_OPS_TWIN_LOAD3D_H_
