// Cross-core flags of a mixed launch (twin_runtime.h: CrossCoreSet / CrossCoreWait). Each flag id
// is a counter per receiving core and sending core: a set adds one for every core its mode
// releases; a wait takes one from each core the mode of the pending set makes it wait for. While
// GM writes are tracked, each set also carries its core's released clock (twin_gm_writes.h), which
// the wait that takes it acquires.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "twin_gm_writes.h"
#include "twin_runtime.h"

namespace ms_ops {
namespace twin {

class CrossCore {
 public:
  explicit CrossCore(uint32_t groups) : groups_(groups) {}

  void Set(const Block &b, int mode, int flag) {
    const int self = Id(b);
    std::vector<int> to;
    if (mode == 0) {
      for (int c = 0; c < Cores(); ++c)
        if (TypeOf(c) == b.coreType) to.push_back(c);
    } else if (mode == 1) {
      if (b.coreType != kAiv) Fail("CrossCoreSetFlag", "mode 1 synchronises the two AIVs of a group; called on the AIC");
      to = {int(3 * b.group + 1), int(3 * b.group + 2)};
    } else if (mode == 2) {
      if (b.coreType == kAic) to = {int(3 * b.group + 1), int(3 * b.group + 2)};
      else to = {int(3 * b.group)};
    } else if (mode == 4) {
      Fail("CrossCoreSetFlag",
           "mode 4 (the AIC with one AIV) exists only on Ascend 950PR/950DT; Atlas A2 has modes 0, 1, 2");
    } else {
      Fail("CrossCoreSetFlag", "mode " + std::to_string(mode) + " is not one of Atlas A2's modes 0, 1, 2");
    }
    const std::vector<uint32_t> published = b.gmClock != nullptr ? b.gmClock->Release() : std::vector<uint32_t>();
    std::lock_guard<std::mutex> lock(mu_);
    for (int r : to)
      if (pending_[{r, flag}].from[self] >= kMaxPendingSets)
        Fail("CrossCoreSetFlag", "flag " + std::to_string(flag) + " of " + Name(r) + " would count " +
                                     std::to_string(kMaxPendingSets + 1) +
                                     " sets not yet waited for; the counter holds at most " +
                                     std::to_string(kMaxPendingSets));
    for (int r : to) {
      Pending &p = pending_[{r, flag}];
      p.mode = mode;
      p.from[self] += 1;
      p.clocks[self].push_back(published);
    }
    cv_.notify_all();
  }

  void Wait(const Block &b, int flag) {
    const int self = Id(b);
    std::unique_lock<std::mutex> lock(mu_);
    Pending &p = pending_[{self, flag}];
    auto ready = [&] {
      if (aborted_ || p.mode < 0) return aborted_;
      for (int s : Senders(b, p.mode))
        if (p.from[s] == 0) return false;
      return true;
    };
    if (!cv_.wait_for(lock, std::chrono::seconds(kCrossCoreWaitSeconds), ready))
      Fail("CrossCoreWaitFlag", "flag " + std::to_string(flag) + ": no CrossCoreSetFlag released this core within " +
                                    std::to_string(kCrossCoreWaitSeconds) + " s (on the NPU it would wait forever)");
    if (aborted_) Fail("CrossCoreWaitFlag", "another core of the launch failed");
    for (int s : Senders(b, p.mode)) {
      p.from[s] -= 1;
      std::deque<std::vector<uint32_t>> &clocks = p.clocks[s];
      if (b.gmClock != nullptr) b.gmClock->Acquire(clocks.front());
      clocks.pop_front();
    }
  }

  void Abort() {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = true;
    cv_.notify_all();
  }

 private:
  struct Pending {
    int mode = -1;
    std::map<int, int> from;
    std::map<int, std::deque<std::vector<uint32_t>>> clocks;  // by sender, in the order of its sets
  };

  // CANN: a flag's counter takes at most 15 sets before a wait consumes them.
  static constexpr int kMaxPendingSets = 15;

  int Cores() const { return int(3 * groups_); }
  static std::string Name(int c) {
    return (c % 3 == 0 ? std::string("the AIC") : "AIV " + std::to_string(c % 3 - 1)) + " of group " +
           std::to_string(c / 3);
  }
  static CoreType TypeOf(int c) { return c % 3 == 0 ? kAic : kAiv; }
  static int Id(const Block &b) { return int(3 * b.group + (b.coreType == kAic ? 0 : 1 + b.subIdx)); }

  // The cores a wait under `mode` needs one set from.
  std::vector<int> Senders(const Block &b, int mode) const {
    std::vector<int> s;
    if (mode == 0) {
      for (int c = 0; c < Cores(); ++c)
        if (TypeOf(c) == b.coreType) s.push_back(c);
    } else if (mode == 1 || b.coreType == kAic) {
      s = {int(3 * b.group + 1), int(3 * b.group + 2)};
    } else {
      s = {int(3 * b.group)};
    }
    return s;
  }

  uint32_t groups_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<int, int>, Pending> pending_;
  bool aborted_ = false;
};

CrossCore *NewCrossCore(uint32_t groups) { return new CrossCore(groups); }
void DeleteCrossCore(CrossCore *c) { delete c; }
void CrossCoreAbort(CrossCore *c) {
  if (c != nullptr) c->Abort();
}

namespace {

constexpr int kMaxAivOnlySets = 15;  // as a mixed launch's flag counter

void CheckFlag(const char *call, int flag) {
  if (flag < 0 || flag > 15) Fail(call, "flag id " + std::to_string(flag) + " is outside [0, 15]");
}

}  // namespace

// A launch of vector cores only (a KERNEL_TYPE_MIX_AIV_1_0 kernel: no AIC) has mode 0 alone, all
// its AIVs: a core's set counts in its own flag, and its wait consumes one set and meets every
// block at the launch's barrier, as SyncAll does. Every core of such a launch sets and waits in
// step (the way the hardware SyncAll is built on these flags); a wait is not released early by
// other cores' sets, and a launch whose cores wait different numbers of times stops at the barrier.
void CrossCoreSet(int mode, int flag) {
  Block &b = Current();
  CheckFlag("CrossCoreSetFlag", flag);
  if (b.cross != nullptr) return b.cross->Set(b, mode, flag);
  if (mode != 0)
    Fail("CrossCoreSetFlag", "mode " + std::to_string(mode) + " needs a mixed launch (one AIC and two AIVs per "
                             "group); a launch of vector cores only has mode 0 (all of its AIVs)");
  if (b.aivFlagSets[flag] >= kMaxAivOnlySets)
    Fail("CrossCoreSetFlag", "flag " + std::to_string(flag) + " would count " + std::to_string(kMaxAivOnlySets + 1) +
                                 " sets not yet waited for; the counter holds at most " +
                                 std::to_string(kMaxAivOnlySets));
  ++b.aivFlagSets[flag];
}

void CrossCoreWait(int flag) {
  Block &b = Current();
  CheckFlag("CrossCoreWaitFlag", flag);
  if (b.cross != nullptr) return b.cross->Wait(b, flag);
  if (b.aivFlagSets[flag] == 0)
    Fail("CrossCoreWaitFlag", "flag " + std::to_string(flag) + " waited for with no set of this core before it: in a "
                              "launch of vector cores only every AIV sets mode 0's flag, then waits");
  --b.aivFlagSets[flag];
  SyncAllBlocks(true);
}

}  // namespace twin
}  // namespace ms_ops
