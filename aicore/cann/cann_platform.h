// The CANN side of platform.h, for the TilingFunc registrations (CANN-only: never compiled by the
// CPU build). Fills PlatformInfo from PlatformAscendC with the same meaning as the twin's Atlas A2
// profile, so that the pure tiling functions size UB alike on both targets.
#ifndef MS_OPS_CANN_CANN_PLATFORM_H_
#define MS_OPS_CANN_CANN_PLATFORM_H_

#include <cstdint>

#include "platform.h"
#include "register/op_impl_registry.h"
#include "tiling/platform/platform_ascendc.h"

namespace ms_ops {

// GetCoreMemSize reports the whole buffers (UB 192 KiB, L1 512 KiB); a kernel may use all but the
// runtime's top 256 B of each (CANN's ASC_UB_SIZE and ASC_L1_SIZE for __NPU_ARCH__ 2201).
constexpr uint64_t kReservedUb = 256;
constexpr uint64_t kReservedL1 = 256;

inline PlatformInfo ReadPlatformInfo(const platform_ascendc::PlatformAscendC &ascendc) {
  uint64_t ubSize = 0, l1Size = 0;
  ascendc.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ubSize);
  ascendc.GetCoreMemSize(platform_ascendc::CoreMemType::L1, l1Size);
  return PlatformInfo{ascendc.GetCoreNumAiv(), ascendc.GetCoreNumAic(), static_cast<uint32_t>(ubSize - kReservedUb),
                      static_cast<uint32_t>(l1Size - kReservedL1)};
}

// Hands a computed tiling to the runtime. Our kernels need no workspace of their own, only what
// the AscendC library reserves.
template <class TilingData>
ge::graphStatus SetTiling(gert::TilingContext *context, const platform_ascendc::PlatformAscendC &ascendc,
                          const TilingData &data, uint32_t blockDim, uint64_t tilingKey) {
  *context->GetTilingData<TilingData>() = data;
  context->SetBlockDim(blockDim);
  context->SetTilingKey(tilingKey);
  size_t *workspace = context->GetWorkspaceSizes(1);
  workspace[0] = ascendc.GetLibApiWorkSpaceSize();
  return ge::GRAPH_SUCCESS;
}

}  // namespace ms_ops

#endif  // MS_OPS_CANN_CANN_PLATFORM_H_
