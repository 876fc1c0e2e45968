// Global memory written by the blocks of one launch. The blocks of a kernel run on different
// cores at once; when two of them write the same GM bytes, which write lands last depends on
// their timing, so the result is undefined unless both use a store atomic (SetAtomicAdd/Max/Min)
// or one write is ordered before the other: by a SyncAll between them, or by cross-core flags of
// a mixed launch (a CrossCoreWaitFlag orders what its setter did before the CrossCoreSetFlag
// before what the waiter does after it). A block may rewrite its own bytes: its writes land in
// order. Each block logs its writes (merged while they are adjacent) and keeps a vector clock
// over the launch's blocks; the launch checks the blocks' logs against each other when every
// block has ended. Logging runs with the race tracking (strict mode or MS_OPS_TWIN_RACES=1) only.
#ifndef MS_OPS_TWIN_GM_WRITES_H_
#define MS_OPS_TWIN_GM_WRITES_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace ms_ops {
namespace twin {

// What one block of a launch knows has happened before its next write: per block of the launch,
// the count of that block's releases (SetFlag, SyncAll) it has been ordered after. The block's own
// entry counts its releases so far plus one, so a write of another block is ordered before this
// block's write when this block's entry for it is at least that block's own entry at the write.
// The clock changes only at synchronisation; each value it takes is a segment, kept for the check.
class GmClock {
 public:
  // Block `self` of `blocks`, before any synchronisation (segment 0).
  void Reset(uint32_t self, uint32_t blocks);
  uint32_t Segment() const { return static_cast<uint32_t>(snaps_.size() / (n_ == 0 ? 1 : n_)); }
  // A release (CrossCoreSetFlag, arriving at SyncAll): what it publishes; later writes are not
  // ordered by it.
  std::vector<uint32_t> Release();
  // An acquire (CrossCoreWaitFlag, leaving SyncAll): what the releases it waited for published.
  void Acquire(const std::vector<uint32_t> &published);
  // Entry `block` of the clock in segment `seg`.
  uint32_t At(uint32_t seg, uint32_t block) const;
  // The launch-wide join of published clocks (SyncAll's barrier).
  static void Join(std::vector<uint32_t> &into, const std::vector<uint32_t> &from);

 private:
  void Snapshot();

  uint32_t self_ = 0, n_ = 0;
  std::vector<uint32_t> now_;    // empty until the first synchronisation: segment 0
  std::vector<uint32_t> snaps_;  // segment s >= 1 at (s - 1) * n_
};

struct GmWrite {
  uintptr_t lo, hi;  // bytes [lo, hi)
  uintptr_t base;    // the start of the GlobalTensor's buffer, for messages
  const char *call;
  uint32_t who;      // the block's index among the launch's blocks (a mixed launch's AIC and AIVs differ)
  uint32_t seg;      // the writer's clock segment
  int64_t block;     // GetBlockIdx of the writer, for messages
  bool aic;          // written by a cube core
  bool atomic;
};

class GmWrites {
 public:
  // A write of the running block, logged in `mine` (the block's own log).
  static void Log(std::vector<GmWrite> &mine, const GmWrite &w);
  // The log and clock of a block that ended, taken over.
  void Take(std::vector<GmWrite> &mine, GmClock &clock);
  // After every block has ended: null, or the later of two writes that race, with the message.
  const GmWrite *Conflict(std::string &what);

 private:
  bool Ordered(const GmWrite &before, const GmWrite &after) const;

  std::mutex mu_;
  std::vector<GmWrite> all_;
  std::vector<GmClock> clocks_;  // by GmWrite::who
};

}  // namespace twin
}  // namespace ms_ops

#endif  // MS_OPS_TWIN_GM_WRITES_H_
