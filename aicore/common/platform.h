// The hardware facts a tiling function may read. On Ascend the CANN registration fills this from
// platform_ascendc::PlatformAscendC; on the CPU the twin supplies the Atlas A2 profile, so tiling
// decisions (block counts, UB-sized chunks) are the same on both targets.
#ifndef MS_OPS_COMMON_PLATFORM_H_
#define MS_OPS_COMMON_PLATFORM_H_

#include <cstdint>

namespace ms_ops {

struct PlatformInfo {
  uint32_t aivCoreNum;   // vector cores
  uint32_t aicCoreNum;   // cube cores
  uint32_t ubSize;       // usable UB bytes per vector core (reserved parts already taken off)
  uint32_t l1Size;       // L1 bytes per cube core
};

// Atlas A2 (910B2): 48 AIV / 24 AIC, UB 192 KiB minus the runtime's top 256 B: what the platform's
// GetCoreMemSize(UB) reports to tiling and CANN's ASC_UB_SIZE for __NPU_ARCH__ 2201 (shipped
// kernels size their buffers to it: mse_loss_v2's kernel test tiling uses 196032 bytes of UB).
constexpr PlatformInfo kAtlasA2{48u, 24u, 192u * 1024u - 256u, 512u * 1024u - 256u};

constexpr uint32_t kBlockBytes = 32;  // UB data block: alignment unit of UB addresses and DataCopy

constexpr uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
constexpr uint64_t CeilDiv(uint64_t v, uint64_t d) { return (v + d - 1) / d; }

}  // namespace ms_ops

#endif  // MS_OPS_COMMON_PLATFORM_H_
