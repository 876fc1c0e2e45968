// Synchronisation between the pipes of one core, and between the blocks of a launch. The twin
// executes a block's calls in program order on one CPU thread, so every ordering within a core
// is already satisfied; what SetFlag/WaitFlag and PipeBarrier<PIPE_ALL> would order on the NPU
// is recorded for the race checks (twin_races.h). SyncAll is a real barrier (twin_runtime.h).
#ifndef MS_OPS_TWIN_SYNC_H_
#define MS_OPS_TWIN_SYNC_H_

#include "twin_tensor.h"

namespace AscendC {
namespace twin_detail {

// The two pipes of each HardEvent, in HardEvent's order: event X_Y orders pipe X before pipe Y.
struct EventPipes {
  ::ms_ops::twin::Pipe src, dst;
};
inline constexpr EventPipes kEventPipes[] = {
#define MS_OPS_TWIN_EVT(a, b) {::ms_ops::twin::kPipe##a, ::ms_ops::twin::kPipe##b}
    MS_OPS_TWIN_EVT(Mte2, Mte1), MS_OPS_TWIN_EVT(Mte1, Mte2), MS_OPS_TWIN_EVT(Mte1, M), MS_OPS_TWIN_EVT(M, Mte1),
    MS_OPS_TWIN_EVT(Mte2, V),    MS_OPS_TWIN_EVT(V, Mte2),    MS_OPS_TWIN_EVT(Mte3, V), MS_OPS_TWIN_EVT(V, Mte3),
    MS_OPS_TWIN_EVT(M, V),       MS_OPS_TWIN_EVT(V, M),       MS_OPS_TWIN_EVT(V, V),    MS_OPS_TWIN_EVT(Mte3, Mte1),
    MS_OPS_TWIN_EVT(Mte1, Mte3), MS_OPS_TWIN_EVT(Mte1, V),    MS_OPS_TWIN_EVT(Mte2, M), MS_OPS_TWIN_EVT(M, Mte2),
    MS_OPS_TWIN_EVT(V, Mte1),    MS_OPS_TWIN_EVT(M, Fix),     MS_OPS_TWIN_EVT(Fix, M),  MS_OPS_TWIN_EVT(Mte3, Mte2),
    MS_OPS_TWIN_EVT(Mte2, Mte3), MS_OPS_TWIN_EVT(S, V),       MS_OPS_TWIN_EVT(V, S),    MS_OPS_TWIN_EVT(S, Mte2),
    MS_OPS_TWIN_EVT(Mte2, S),    MS_OPS_TWIN_EVT(S, Mte3),    MS_OPS_TWIN_EVT(Mte3, S), MS_OPS_TWIN_EVT(Mte2, Fix),
    MS_OPS_TWIN_EVT(Fix, Mte2),  MS_OPS_TWIN_EVT(Fix, S),     MS_OPS_TWIN_EVT(M, S),    MS_OPS_TWIN_EVT(Fix, Mte3),
    MS_OPS_TWIN_EVT(Mte1, Fix),  MS_OPS_TWIN_EVT(Fix, Mte1),  MS_OPS_TWIN_EVT(Fix, Fix),
#undef MS_OPS_TWIN_EVT
};
static_assert(sizeof(kEventPipes) / sizeof(kEventPipes[0]) == static_cast<size_t>(HardEvent::MAX),
              "one pipe pair per HardEvent");

inline void Barrier(pipe_t pipe) {
  // A barrier on one pipe orders that pipe with itself, which its in-order issue already does.
  if (pipe == PIPE_ALL) Races().BarrierAll();
}

}  // namespace twin_detail

template <HardEvent event>
inline void SetFlag(int32_t eventID) {
  static_assert(event < HardEvent::MAX, "SetFlag: not an event");
  constexpr twin_detail::EventPipes e = twin_detail::kEventPipes[static_cast<int>(event)];
  twin_detail::Races().SetFlag(e.src, e.dst, static_cast<uint32_t>(event), eventID);
}
template <HardEvent event>
inline void WaitFlag(int32_t eventID) {
  static_assert(event < HardEvent::MAX, "WaitFlag: not an event");
  constexpr twin_detail::EventPipes e = twin_detail::kEventPipes[static_cast<int>(event)];
  twin_detail::Races().WaitFlag(e.src, e.dst, static_cast<uint32_t>(event), eventID);
}
template <pipe_t pipe>
inline void PipeBarrier() {
  twin_detail::Barrier(pipe);
}

// Hard sync of all blocks; needs a launch whose blocks all run at once (LaunchCooperative).
template <bool isAIVOnly = true>
inline void SyncAll() {
  ::ms_ops::twin::SyncAllBlocks(isAIVOnly);
}

// The software SyncAll: the cores meet through per-core flags in gmWorkspace (at least GetBlockNum()
// x 32 bytes, zero before its first use) and ubWorkspace (as large), usedCores of them (0: all).
// The twin checks those sizes and meets at its barrier, as SyncAll() does; a subset of the cores
// (usedCores below the launch's) is not modelled and fails.
template <bool isAIVOnly = true>
inline void SyncAll(const GlobalTensor<int32_t> &gmWorkspace, const LocalTensor<int32_t> &ubWorkspace,
                    const int32_t usedCores = 0) {
  using twin_detail::Str;
  const int64_t blocks = GetBlockNum(), cores = blocks * GetTaskRation();
  const uint64_t need = uint64_t(blocks) * (ONE_BLK_SIZE / sizeof(int32_t));
  if (gmWorkspace.GetSize() != 0 && gmWorkspace.GetSize() < need)
    twin_detail::Fail("SyncAll", "gmWorkspace holds " + Str(gmWorkspace.GetSize()) + " int32, below the " +
                                     Str(need) + " (32 bytes per block) the software SyncAll needs");
  if (ubWorkspace.GetSize() < need)
    twin_detail::Fail("SyncAll", "ubWorkspace holds " + Str(uint64_t(ubWorkspace.GetSize())) + " int32, below the " +
                                     Str(need) + " (32 bytes per block) the software SyncAll needs");
  if (usedCores < 0 || usedCores > cores)
    twin_detail::Fail("SyncAll", "usedCores " + std::to_string(usedCores) + " is outside [0, " +
                                     std::to_string(cores) + "]");
  if (usedCores != 0 && usedCores != cores)
    twin_detail::Fail("SyncAll", "usedCores " + std::to_string(usedCores) + " of " + std::to_string(cores) +
                                     ": a SyncAll of part of the cores is not modelled by the twin");
  ::ms_ops::twin::SyncAllBlocks(isAIVOnly);
}

// Cross-core flags of a mixed launch (modes 0, 1, 2: see ms_ops::twin::CrossCoreSet). The pipe
// is the one whose work the flag follows; the twin's blocks have completed it when they set.
template <uint8_t modeId, pipe_t pipe>
inline void CrossCoreSetFlag(uint16_t flagId) {
  ::ms_ops::twin::CrossCoreSet(modeId, flagId);
}
template <uint8_t modeId = 0, pipe_t pipe = PIPE_S>
inline void CrossCoreWaitFlag(uint16_t flagId) {
  ::ms_ops::twin::CrossCoreWait(flagId);
}

}  // namespace AscendC

// The CCE intrinsic older kernels call directly.
inline void pipe_barrier(pipe_t pipe) { AscendC::twin_detail::Barrier(pipe); }

#endif  // MS_OPS_TWIN_SYNC_H_
