// TCubeTiling, the Matmul API's tiling struct, for the tiling-data headers that embed it (read by
// both the host tiling functions and the kernels).
//
// A CANN build takes it from kernel_tiling/kernel_tiling.h, which the toolkit generates from its
// high-level API tiling definitions (AscendC::tiling::TCubeTiling, also exported to the global
// namespace). Only the twin build has aicore/twin, and so twin_cube_tiling.h, on its include path:
// its presence selects the twin, and a CANN build missing kernel_tiling.h fails here rather than
// quietly taking the twin's struct.
#ifndef MS_OPS_COMMON_CUBE_TILING_H_
#define MS_OPS_COMMON_CUBE_TILING_H_

#if __has_include("twin_cube_tiling.h")
#include "twin_cube_tiling.h"
#else
#include "kernel_tiling/kernel_tiling.h"
#endif

#endif  // MS_OPS_COMMON_CUBE_TILING_H_
