#include "twin_gm_writes.h"

#include <algorithm>
#include <cstdio>
#include <tuple>

#include "twin_runtime.h"

namespace ms_ops {
namespace twin {

void GmClock::Reset(uint32_t self, uint32_t blocks) {
  self_ = self;
  n_ = blocks;
  now_.clear();
  snaps_.clear();
}

void GmClock::Snapshot() { snaps_.insert(snaps_.end(), now_.begin(), now_.end()); }

std::vector<uint32_t> GmClock::Release() {
  if (now_.empty()) {
    now_.assign(n_, 0);
    now_[self_] = 1;
  }
  std::vector<uint32_t> published = now_;
  ++now_[self_];
  Snapshot();
  return published;
}

void GmClock::Acquire(const std::vector<uint32_t> &published) {
  if (published.empty()) return;
  if (now_.empty()) {
    now_.assign(n_, 0);
    now_[self_] = 1;
  }
  Join(now_, published);
  Snapshot();
}

uint32_t GmClock::At(uint32_t seg, uint32_t block) const {
  if (seg == 0) return block == self_ ? 1 : 0;
  return snaps_[size_t(seg - 1) * n_ + block];
}

void GmClock::Join(std::vector<uint32_t> &into, const std::vector<uint32_t> &from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] > into[i]) into[i] = from[i];
}

namespace {

bool Mergeable(const GmWrite &a, const GmWrite &b) {
  return a.who == b.who && a.seg == b.seg && a.atomic == b.atomic && a.lo <= b.hi && b.lo <= a.hi;
}

std::string Hex(uintptr_t v) {
  char s[24];
  std::snprintf(s, sizeof(s), "%#llx", static_cast<unsigned long long>(v));
  return s;
}

std::string Who(const GmWrite &w) {
  return std::string(w.call) + (w.atomic ? " (atomic)" : "") + " of " + BlockName(w.aic, w.block);
}

}  // namespace

void GmWrites::Log(std::vector<GmWrite> &mine, const GmWrite &w) {
  if (w.hi == w.lo) return;
  if (!mine.empty() && Mergeable(mine.back(), w)) {
    GmWrite &b = mine.back();
    b.lo = std::min(b.lo, w.lo);
    b.hi = std::max(b.hi, w.hi);
    return;
  }
  mine.push_back(w);
}

void GmWrites::Take(std::vector<GmWrite> &mine, GmClock &clock) {
  // Non-adjacent writes of a block (rows of a strided copy, a loop over tiles) merge once sorted.
  std::sort(mine.begin(), mine.end(), [](const GmWrite &a, const GmWrite &b) {
    return std::tie(a.seg, a.atomic, a.lo) < std::tie(b.seg, b.atomic, b.lo);
  });
  std::vector<GmWrite> merged;
  for (const GmWrite &w : mine) Log(merged, w);
  mine.clear();
  std::lock_guard<std::mutex> lock(mu_);
  all_.insert(all_.end(), merged.begin(), merged.end());
  if (!merged.empty()) {
    const uint32_t who = merged[0].who;
    if (clocks_.size() <= who) clocks_.resize(who + 1);
    std::swap(clocks_[who], clock);
  }
}

bool GmWrites::Ordered(const GmWrite &before, const GmWrite &after) const {
  return clocks_[after.who].At(after.seg, before.who) >= clocks_[before.who].At(before.seg, before.who);
}

const GmWrite *GmWrites::Conflict(std::string &what) {
  std::sort(all_.begin(), all_.end(), [](const GmWrite &a, const GmWrite &b) {
    return std::tie(a.lo, a.who, a.seg) < std::tie(b.lo, b.who, b.seg);
  });
  // Sweep by start address, against the writes still open (ending past the start).
  std::vector<const GmWrite *> open;
  for (const GmWrite &w : all_) {
    open.erase(std::remove_if(open.begin(), open.end(), [&](const GmWrite *o) { return o->hi <= w.lo; }), open.end());
    for (const GmWrite *o : open) {
      if (o->who == w.who || (o->atomic && w.atomic) || Ordered(*o, w) || Ordered(w, *o)) continue;
      const uintptr_t lo = w.lo, hi = std::min(o->hi, w.hi);
      what = "GM race between blocks: " + Who(*o) + " and " + Who(w) + " both write GM bytes [" + Hex(lo) + ", " +
             Hex(hi) + ") (byte " + std::to_string(lo - w.base) + " of the GM buffer at " + Hex(w.base) +
             ") in the same launch, not both with a store atomic, and nothing orders one before the other (a "
             "SyncAll, or CrossCoreSetFlag / CrossCoreWaitFlag between their cores): on the NPU the block that "
             "writes last wins";
      return &w;
    }
    open.push_back(&w);
  }
  return nullptr;
}

}  // namespace twin
}  // namespace ms_ops
