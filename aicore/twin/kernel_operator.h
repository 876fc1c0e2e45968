// The CPU twin of AscendC's kernel API (CANN 8.x names): what our kernels include instead of the
// CANN header when they are built for the CPU. See twin_runtime.h for how a kernel is launched.
#ifndef MS_OPS_TWIN_KERNEL_OPERATOR_H_
#define MS_OPS_TWIN_KERNEL_OPERATOR_H_

// The twin is an Atlas A2 core: the architecture macros the device compiler defines for one
// (dav-c220), by which kernels choose their code paths.
#ifndef __NPU_ARCH__
#define __NPU_ARCH__ 2201
#endif
#ifndef __CCE_AICORE__
#define __CCE_AICORE__ 220
#endif

#include "kernel_type.h"
#include "twin_std.h"
#include "twin_types.h"
#include "twin_tensor.h"
#include "twin_pipe.h"
#include "twin_copy.h"
#include "twin_vector.h"
#include "twin_cast.h"
#include "twin_cast0.h"
#include "twin_select.h"
#include "twin_cmpsel0.h"
#include "twin_sync.h"
#include "twin_cache.h"
#include "twin_tiling.h"
#include "twin_atomic.h"
#include "twin_cube.h"
#include "twin_load3d.h"
#include "twin_mask.h"
#include "twin_utils.h"
#include "twin_list_tensor.h"
#include "twin_transdata.h"
#include "twin_vector_repeat.h"
#include "twin_reduce.h"
#include "twin_gather.h"
#include "twin_gather_mask.h"
#include "twin_advanced.h"
#include "twin_sort.h"
#include "twin_softmax.h"
#include "twin_softmax_flash.h"
#include "twin_scalar.h"
#include "twin_logic.h"
#include "twin_compound.h"
#include "twin_broadcast.h"
#include "twin_debug.h"

#endif  // MS_OPS_TWIN_KERNEL_OPERATOR_H_
