// Stand-in for platform/soc_spec.h, which an installed CANN ships (platform component) and
// asc-devkit's tiling/platform/platform_ascendc.h includes: it defines NpuArch, the NPU
// architecture that PlatformAscendC::GetCurNpuArch reports, numbered like __NPU_ARCH__ (2201:
// Atlas A2/A3). Only what the syntax check of tools/check_host_syntax.py needs.
#ifndef MS_OPS_CANN_STUB_PLATFORM_SOC_SPEC_H_
#define MS_OPS_CANN_STUB_PLATFORM_SOC_SPEC_H_

#include <cstdint>

enum class NpuArch : uint32_t {
  DAV_2002 = 2002,
  DAV_2201 = 2201,
  DAV_3003 = 3003,
  DAV_3113 = 3113,
  DAV_3510 = 3510,
  DAV_5102 = 5102,
  DAV_RESV,
};

#endif  // MS_OPS_CANN_STUB_PLATFORM_SOC_SPEC_H_
