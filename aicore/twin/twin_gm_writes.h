// Global memory written by the blocks of one launch. The blocks of a kernel run on different
// cores at once; when two of them write the same GM bytes, which write lands last depends on
// their timing, so the result is undefined unless both use a store atomic (SetAtomicAdd/Max/Min)
// or a SyncAll separates the writes. A block may rewrite its own bytes: its MTE3 writes land in
// order. Each block logs its writes (merged while they are adjacent); the launch checks the
// blocks' logs against each other when every block has ended. Logging runs with the race
// tracking (strict mode or MS_OPS_TWIN_RACES=1) only.
#ifndef MS_OPS_TWIN_GM_WRITES_H_
#define MS_OPS_TWIN_GM_WRITES_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace ms_ops {
namespace twin {

struct GmWrite {
  uintptr_t lo, hi;  // bytes [lo, hi)
  uintptr_t base;    // the start of the GlobalTensor's buffer, for messages
  const char *call;
  int64_t block;
  uint32_t epoch;  // SyncAlls the block had passed
  bool atomic;
};

class GmWrites {
 public:
  // A write of the running block, logged in `mine` (the block's own log).
  static void Log(std::vector<GmWrite> &mine, const GmWrite &w);
  // The log of a block that ended, taken over.
  void Take(std::vector<GmWrite> &mine);
  // After every block has ended: false, or true with the later block, its call and the message.
  bool Conflict(int64_t &block, std::string &call, std::string &what);

 private:
  std::mutex mu_;
  std::vector<GmWrite> all_;
};

}  // namespace twin
}  // namespace ms_ops

#endif  // MS_OPS_TWIN_GM_WRITES_H_
