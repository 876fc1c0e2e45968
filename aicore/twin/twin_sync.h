// Synchronisation between the pipes of one core. The twin executes a block's calls in program
// order on one CPU thread, so every such ordering is already satisfied: these are no-ops.
#ifndef MS_OPS_TWIN_SYNC_H_
#define MS_OPS_TWIN_SYNC_H_

#include "twin_types.h"

namespace AscendC {

template <HardEvent event>
inline void SetFlag(int32_t eventID) {}
template <HardEvent event>
inline void WaitFlag(int32_t eventID) {}
template <pipe_t pipe>
inline void PipeBarrier() {}

}  // namespace AscendC

// The CCE intrinsic older kernels call directly.
inline void pipe_barrier(pipe_t) {}

#endif  // MS_OPS_TWIN_SYNC_H_
