// Pipe races of one block's UB. On the NPU a core's pipes (S scalar, V vector, MTE2 GM->UB,
// MTE3 UB->GM, the cube's MTE1/M/FIX) run concurrently; only EnQue/DeQue (and FreeTensor /
// AllocTensor) of a queue, SetFlag/WaitFlag and PipeBarrier<PIPE_ALL> order one pipe's work
// before another's. The twin runs everything in program order, so it tracks instead what the NPU
// would guarantee: a vector clock per pipe (what it has been ordered after), and per 32-byte UB
// block the last writer and the last read by each pipe. A cross-pipe read-after-write,
// write-after-read or write-after-write that nothing orders is a race on the device.
// Accesses of one pipe are issued and completed in order, so they never race with each other;
// a scalar read (GetValue) completes before the scalar unit issues anything after it, so it never
// races with a later write either. Queue buffers given back by FreeTensor are marked, so that a
// later access through a stale tensor is reported as a use after FreeTensor.
// Global memory has the same hazard within a block: an MTE3 copy to GM is still in flight when
// the scalar unit issues a later MTE2 copy (or a scalar GetValue) of the same bytes, so such a
// read needs a flag or barrier after the write. The last kGmWrites MTE3 writes are kept for that.
// A SetFlag that no WaitFlag consumed by the kernel's end leaves the event set for the next kernel
// of the core: also an error.
//
// The tracking runs in strict mode (the tests) or with MS_OPS_TWIN_RACES=1. Otherwise every call
// returns at once and the cells are never touched: a block's tracking state is about 1 MiB, and a
// cooperative launch of 24 blocks would otherwise keep 24 MiB resident and spend time on every UB
// access that a run which is not checking kernels does not need.
#ifndef MS_OPS_TWIN_RACES_H_
#define MS_OPS_TWIN_RACES_H_

#include <cstdint>
#include <string>

#include "platform.h"
#include "twin_local_memory.h"

namespace ms_ops {
namespace twin {

// pipe_t's numbering without PIPE_ALL: S V M MTE1 MTE2 MTE3 FIX.
enum Pipe : uint8_t { kPipeS = 0, kPipeV, kPipeM, kPipeMte1, kPipeMte2, kPipeMte3, kPipeFix, kPipes };

const char *PipeName(Pipe p);

// How far each pipe's work is known to be complete (access counts; 0: nothing).
struct Clock {
  uint32_t t[kPipes];
};

class Races {
 public:
  static constexpr uint32_t kCells = kArenaBytes / 32;  // 32-byte blocks of the local memory arena
  static constexpr uint32_t kEvents = 40, kEventIds = 8;

  // A new block over the UB arena `ub`: no pipe has done anything, no flag is set. With `on`
  // false, every call below but the reserved-UB check does nothing.
  void Reset(const uint8_t *ub, bool on);
  // Whether accesses are tracked (strict mode or MS_OPS_TWIN_RACES=1).
  bool Tracking() const { return on_; }
  // A buffer carved by TPipe::InitBuffer: fresh, and described by `what` (static text) in messages.
  void Carve(uint64_t off, uint64_t bytes, const char *what, uint32_t num, uint32_t len);

  // Every UB access of every kernel comes through these two: inline, so that with tracking off
  // an access costs the reserved-UB check and nothing else (no call).
  void Read(Pipe p, const char *call, const void *addr, uint64_t bytes) {
    if (__builtin_expect(on_, 0)) {
      Access(p, call, addr, bytes, false);
    } else {
      CheckReserved(p, call, addr, bytes);
    }
  }
  void Write(Pipe p, const char *call, const void *addr, uint64_t bytes) {
    if (__builtin_expect(on_, 0)) {
      Access(p, call, addr, bytes, true);
    } else {
      CheckReserved(p, call, addr, bytes);
    }
  }

  // SetFlag<src_dst>(id) / WaitFlag<src_dst>(id); event is HardEvent's value. A WaitFlag with no
  // SetFlag of the same event and id before it waits forever on the NPU: always an error.
  void SetFlag(Pipe src, Pipe dst, uint32_t event, int32_t id);
  void WaitFlag(Pipe src, Pipe dst, uint32_t event, int32_t id);
  // PipeBarrier<PIPE_ALL>: every pipe waits for all work issued so far.
  void BarrierAll();
  // A queue's hand-over of the buffer at `addr` from pipe `from` to pipe `to` (EnQue -> DeQue,
  // FreeTensor -> AllocTensor): slot 0 for EnQue/DeQue, 1 for FreeTensor/AllocTensor.
  void Post(Pipe from, int slot, const void *addr);
  void Take(Pipe to, int slot, const void *addr);
  // A queue buffer given back by FreeTensor (freed) or handed out again by AllocTensor: any access
  // to a freed buffer is a use after FreeTensor.
  void MarkFreed(const void *addr, uint64_t bytes, bool freed);
  // `rows` rows of rowBytes GM bytes, `pitch` apart from `gm`, written by an MTE3 copy `call`
  // (right after its UB read); or GM bytes read by pipe p.
  void GmWrite(const char *call, const void *gm, uint64_t rows, uint64_t rowBytes, uint64_t pitch);
  void GmRead(Pipe p, const char *call, const void *gm, uint64_t bytes);
  // The end of the block's body: every SetFlag must have been consumed by a WaitFlag.
  void AtEnd();

 private:
  struct Cell {
    uint32_t wEpoch;
    uint8_t wPipe;
    bool freed;
    uint32_t rEpoch[kPipes];
    const char *wCall;
    const char *rCall[kPipes];
  };
  struct Region {
    uint64_t off, bytes;
    const char *what;
    uint32_t num, len;
  };
  static constexpr uint32_t kRegions = 64;
  struct GmWritten {
    uintptr_t lo;
    uint64_t rows, rowBytes, pitch;
    uint32_t t;  // MTE3's access count at the write
    const char *call;
    // The written bytes of [a, b) start at the returned address (0: none).
    uintptr_t Hit(uintptr_t a, uintptr_t b) const;
  };
  static constexpr uint32_t kGmWrites = 64;

  void Access(Pipe p, const char *call, const void *addr, uint64_t bytes, bool write);
  // Bytes of UB above its usable part, or a cube memory (L1, L0A/B/C, BT) reached by the vector or
  // scalar unit, which see only UB (an address outside the arena is not local memory: the bounds
  // checks report it).
  void CheckReserved(Pipe p, const char *call, const void *addr, uint64_t bytes) {
    const uint64_t off = static_cast<const uint8_t *>(addr) - ub_;
    if (__builtin_expect(bytes != 0 && off + bytes > kAtlasA2.ubSize && off < uint64_t(kCells) * 32, 0))
      Reserved(p, call, off, bytes);
  }
  [[noreturn]] void UseAfterFree(const char *call, uint32_t cell);
  // Reached from CheckReserved for any access past the usable UB: fails unless it is a cube
  // memory reached by a pipe that reaches it.
  void Reserved(Pipe p, const char *call, uint64_t off, uint64_t bytes);
  void Report(const char *kind, Pipe p, const char *call, bool write, Pipe q, const char *qCall,
                           uint32_t cell);
  void Join(Clock &into, const Clock &from);
  Clock Now(Pipe p) const;
  std::string Where(uint32_t cell) const;

  uint32_t time_[kPipes];
  Clock known_[kPipes];  // known_[p].t[q]: q's accesses up to this count complete before p's next
  Clock flag_[kEvents][kEventIds];   // what the first pending SetFlag of each event and id saw
  uint32_t pending_[kEvents][kEventIds];  // SetFlags not yet consumed by a WaitFlag
  Pipe flagPipes_[kEvents][2];            // each event's source and waiting pipe, for messages
  GmWritten gm_[kGmWrites];               // a ring of the latest MTE3 writes to GM
  uint32_t gmNext_;
  uint32_t gmLatest_;                     // t of the newest entry: a read ordered after it skips the ring
  Cell cells_[kCells];
  Clock hand_[2][kCells];  // queue hand-overs, by the 32-byte block the buffer starts at
  Region regions_[kRegions];
  uint32_t numRegions_;
  const uint8_t *ub_;
  bool on_;
};

}  // namespace twin
}  // namespace ms_ops

#endif  // MS_OPS_TWIN_RACES_H_
