// What CANN's kernel_tiling/kernel_tiling.h gives a kernel: the kernel-side tiling structs of the
// advanced APIs (TCubeTiling for Matmul, the softmax family's), under both names CANN uses (global and
// AscendC::tiling). Tiling-data definitions of real kernels include it.
#ifndef MS_OPS_TWIN_KERNEL_TILING_KERNEL_TILING_H_
#define MS_OPS_TWIN_KERNEL_TILING_KERNEL_TILING_H_

#include "../twin_cube_tiling.h"
#include "../twin_softmax_tiling.h"

namespace AscendC {
namespace tiling {
using ::TCubeTiling;
}  // namespace tiling
}  // namespace AscendC

#endif  // MS_OPS_TWIN_KERNEL_TILING_KERNEL_TILING_H_
