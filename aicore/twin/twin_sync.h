// Synchronisation between the pipes of one core, and between the blocks of a launch. The twin
// executes a block's calls in program order on one CPU thread, so every ordering within a core
// is already satisfied: those are no-ops. SyncAll is a real barrier (twin_runtime.h).
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

// Hard sync of all blocks; needs a launch whose blocks all run at once (LaunchCooperative).
template <bool isAIVOnly = true>
inline void SyncAll() {
  ::ms_ops::twin::SyncAllBlocks(isAIVOnly);
}

}  // namespace AscendC

// The CCE intrinsic older kernels call directly.
inline void pipe_barrier(pipe_t) {}

#endif  // MS_OPS_TWIN_SYNC_H_
