// The launchers of the CPU twin and the per-block state the twin's AscendC API reads.
// A kernel runs once per block index, on an OpenMP thread (Launch), as a fiber of a thread per
// core (LaunchCooperative) or on a thread of its own (LaunchMixed); everything a block owns on the
// NPU (its index, its UB) is reached through a thread-local Block while its body runs.
#ifndef MS_OPS_TWIN_RUNTIME_H_
#define MS_OPS_TWIN_RUNTIME_H_

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "twin_local_memory.h"

namespace ms_ops {
namespace twin {

// A kernel broke a rule of the NPU. Thrown inside the block, caught by Launch.
struct Violation : std::runtime_error {
  std::string call;
  Violation(const char *c, const std::string &what) : std::runtime_error(what), call(c) {}
};

class Barrier;
class CrossCore;
class Races;
class GmWrites;
class GmClock;
struct GmWrite;

// The core a block runs on: a vector core (AIV) or, in a mixed launch, a cube core (AIC).
enum CoreType : uint8_t { kAiv = 0, kAic = 1 };

// Thrown by REGIST_MATMUL_OBJ on the AIC of a mixed launch: there the cube core serves the vector
// cores' Matmul requests until the kernel ends and runs none of the kernel's own code after it.
struct AicServed {};

// The physical UB of an Atlas A2 vector core. TPipe hands out buffers up to it, as the NPU's TPipe
// does; kAtlasA2.ubSize (192 KiB minus the runtime's top 256 B) is what a kernel may touch: an
// access above it is an error (twin_races.h).
constexpr uint32_t kUbBytes = kLocalMemBytes[kMemUb];

struct Block {
  const char *kernel;
  int64_t idx, num;
  uint64_t tilingKey;
  bool strict;
  uint8_t *ub;         // this block's local memory arena (twin_local_memory.h), UB first, 64-byte aligned
  uint32_t ubUsed;     // bytes handed out by the live TPipe
  void *pipe;          // the live AscendC::TPipe, if any (GetTPipePtr)
  Barrier *barrier;    // SyncAll's barrier under LaunchCooperative, else null
  Races *races;        // the pipe-race tracking of this block's UB (twin_races.h)
  int64_t liveTensors;  // AllocTensor calls not yet matched by FreeTensor
  // The vector unit's mask register (twin_mask.h): normal mode bits (low, high) or, in counter
  // mode, the element count in the low word. A core starts in normal mode with every bit set.
  uint64_t vecMask[2] = {~0ull, ~0ull};
  bool maskCounter = false;
  // The 128-bit CMPMASK register (twin_cmpsel0.h): compare bits, Select's mode 0 bits or mode 1
  // scalar; cmpMaskAddress when a mode 2 Select left selMask's address there instead.
  uint8_t cmpMask[16] = {};
  bool cmpMaskAddress = false;
  // The store-atomic setting of MTE3 (twin_atomic.h): kAtomicNone or the operation, with the
  // element type it was set for (a tag naming the type, 0 for none).
  uint8_t atomicOp = 0;
  uint8_t atomicType = 0;
  // What the last MrgSort with ifExhaustedSuspension consumed of each queue (GetMrgSortResult).
  uint16_t mrgSortCounts[4] = {};
  // The ACC_VAL register (GetAccVal): the result of the last ReduceSum of the count form, its bits in
  // the low bytes.
  uint64_t accVal = 0;
  // Mode 0 cross-core flag sets not yet waited for, in a launch of vector cores only.
  uint8_t aivFlagSets[16] = {};
  // The system workspace of SetSysWorkspace (GetSysWorkSpacePtr), null until set.
  void *sysWorkspace = nullptr;
  // The DEQSCALE register (SetDeqScale), the factor of Cast int32 -> half; unset until a SetDeqScale.
  float deqScale = 0.0f;
  bool deqScaleSet = false;
  // Mixed launches (LaunchMixed): the core type, the AIV's index in its group (0/1), the AIVs per
  // group (GetTaskRation: 2, else 1), the group's cross-core flags, SyncAll<true>'s AIV barrier.
  CoreType coreType = kAiv;
  int64_t subIdx = 0;
  int64_t ratio = 1;
  int64_t group = 0;
  CrossCore *cross = nullptr;
  Barrier *aivBarrier = nullptr;
  // GM writes (twin_gm_writes.h), while tracking: this block's log, the launch's, the block's
  // clock (what SyncAll and cross-core flags ordered before it) and its index among the launch's
  // blocks (a mixed launch's AIC and AIVs each have their own).
  std::vector<GmWrite> *gmMine = nullptr;
  GmWrites *gmAll = nullptr;
  GmClock *gmClock = nullptr;
  uint32_t gmWho = 0;
  // Bytes of each cube memory (L1, L0A, L0B, L0C, BT) handed out by the live TPipe (UB's: ubUsed).
  uint32_t cubeUsed[kLocalMems] = {};
  // Whether a tensor at an address of its own has started the local memories afresh.
  bool staticTensors = false;
};

// Hidden and without a constructor (as twin_profile.h's tlsProfile): read directly, with no TLS
// wrapper call, since Current() runs on every UB access. The library is built with TLS
// descriptors (-mtls-dialect=gnu2, ms_ops/_build.py), so a read is a short call that returns the
// variable's offset, not a __tls_get_addr call (which cost the sparse attention gradient a sixth
// of its time, most of it in the scalar unit's GetValue / SetValue). The initial-exec model would
// be cheaper still but can fail to load: a library opened late may find glibc's static TLS
// surplus used up ("cannot allocate memory in static TLS block").
extern __thread __attribute__((visibility("hidden"))) Block *tlsBlock;

[[noreturn]] void OutsideLaunch();

// The block running on this thread; a twin API call outside Launch is a violation.
inline Block &Current() {
  Block *b = tlsBlock;
  if (__builtin_expect(b == nullptr, 0)) OutsideLaunch();
  return *b;
}

[[noreturn]] void Fail(const char *call, const std::string &what);
// A rule the hardware tolerates (it rounds): an error in strict mode, else one warning per kernel
// and call, after which the caller proceeds as the hardware would.
void Tolerated(const char *call, const std::string &what);

// A race between the pipes of a core (twin_races.h): an error in strict mode, else one warning
// per kernel and call, after which the kernel runs on (the twin's program order hides the race).
void Hazard(const char *call, const std::string &what);

// MS_OPS_TWIN_STRICT=1, read at each launch.
bool Strict();
// Whether a launch tracks pipe races (twin_races.h) and the GM writes of its blocks
// (twin_gm_writes.h): in strict mode, or with MS_OPS_TWIN_RACES=1.
bool TrackRaces(bool strict);

// How messages name a block: "AIC <i>" for a cube core, else "block <i>".
std::string BlockName(bool aic, int64_t idx);

// Both return 0, or 1 after recording the launch's first error for LastFailure.
// Launch runs the blocks a few at a time on OpenMP threads.
int Launch(const char *kernel, uint32_t blockDim, uint64_t tilingKey, const std::function<void()> &body);
// All blocks live at once, as on the NPU, what a kernel calling SyncAll needs: each a fiber, the
// cores' threads switching fibers where a block waits at SyncAll (twin_runtime.cpp).
int LaunchCooperative(const char *kernel, uint32_t blockDim, uint64_t tilingKey, const std::function<void()> &body);

// One AIC and two AIVs per group, blockDim groups, all at once (KERNEL_TYPE_MIX_AIC_1_2): on an AIV
// GetBlockIdx is 2 * group + GetSubBlockIdx, on the AIC the group; GetBlockNum is blockDim.
int LaunchMixed(const char *kernel, uint32_t blockDim, uint64_t tilingKey, const std::function<void()> &body);

// CrossCoreSetFlag<mode>(flag) / CrossCoreWaitFlag(flag) of a mixed launch. Mode 0: every core of
// the caller's type; 1: the two AIVs of the group; 2: the AIC and the two AIVs of the group (the
// AIC's set releases both AIVs, both AIVs' sets release the AIC). A wait that nothing releases
// within kCrossCoreWaitSeconds would hang the NPU: a violation. In a launch of vector cores only,
// mode 0 among all blocks (twin_crosscore.cpp).
constexpr int kCrossCoreWaitSeconds = 20;
void CrossCoreSet(int mode, int flag);
void CrossCoreWait(int flag);

// A write of `bytes` GM bytes at `gm` by the running block (`base`: its GlobalTensor's buffer),
// logged while tracking so that the launch can find blocks writing the same bytes.
void GmWritten(const char *call, const void *base, const void *gm, uint64_t bytes, bool atomic);

// GM bytes a store atomic combines into: `rows` runs of `bytes` bytes, `pitch` bytes apart, from
// `at` (a row-strided block of C, or one contiguous run with rows 1).
struct GmSpan {
  uintptr_t at;
  uint64_t rows, bytes, pitch;
};
bool SpansOverlap(const GmSpan &a, const GmSpan &b);

// Held while a store atomic combines into its span (twin_atomic.h, Matmul's enAtomic): blocks whose
// spans share a byte wait for each other, so that no update is lost, as with the NPU's atomics,
// while blocks combining into disjoint bytes (other columns of the same rows, say) go on at once
// (one-row spans within the same 4 KiB of GM wait for each other too: the twin's lock granule).
// twin_runtime.cpp says how the held spans are kept.
// Nothing else is waited for while one is held, so holders cannot deadlock.
class AtomicSpan {
 public:
  explicit AtomicSpan(const GmSpan &span);
  ~AtomicSpan();
  AtomicSpan(const AtomicSpan &) = delete;
  AtomicSpan &operator=(const AtomicSpan &) = delete;

 private:
  GmSpan span_;
  bool large_;           // listed in the large spans' list, not in buckets
  bool locked_ = false;  // a one-row span, held as its buckets' locks
};

// KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY): the running block is a cube core. Only outside a
// mixed launch, whose cores have their types already.
void RunAsAic();

// The first error of the last failed launch started from this thread, as
// `<kernel>: block <b>: <call>: <what>`.
const std::string &LastFailure();

// AscendC::SyncAll: waits until every live block of the launch has arrived (aivOnly: the
// vector cores are the blocks, else the AIC + AIV groups, which bounds blockDim on the NPU).
void SyncAllBlocks(bool aivOnly);

}  // namespace twin
}  // namespace ms_ops

#endif  // MS_OPS_TWIN_RUNTIME_H_
