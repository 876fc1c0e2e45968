#include "twin_gm_writes.h"

#include <algorithm>
#include <cstdio>
#include <tuple>

namespace ms_ops {
namespace twin {

namespace {

bool Mergeable(const GmWrite &a, const GmWrite &b) {
  return a.block == b.block && a.epoch == b.epoch && a.atomic == b.atomic && a.lo <= b.hi && b.lo <= a.hi;
}

std::string Hex(uintptr_t v) {
  char s[24];
  std::snprintf(s, sizeof(s), "%#llx", static_cast<unsigned long long>(v));
  return s;
}

std::string Who(const GmWrite &w) {
  return std::string(w.call) + (w.atomic ? " (atomic)" : "") + " of block " + std::to_string(w.block);
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

void GmWrites::Take(std::vector<GmWrite> &mine) {
  // Non-adjacent writes of a block (rows of a strided copy, a loop over tiles) merge once sorted.
  std::sort(mine.begin(), mine.end(), [](const GmWrite &a, const GmWrite &b) {
    return std::tie(a.epoch, a.atomic, a.lo) < std::tie(b.epoch, b.atomic, b.lo);
  });
  std::vector<GmWrite> merged;
  for (const GmWrite &w : mine) Log(merged, w);
  mine.clear();
  std::lock_guard<std::mutex> lock(mu_);
  all_.insert(all_.end(), merged.begin(), merged.end());
}

bool GmWrites::Conflict(int64_t &block, std::string &call, std::string &what) {
  std::sort(all_.begin(), all_.end(),
            [](const GmWrite &a, const GmWrite &b) { return std::tie(a.epoch, a.lo, a.block) < std::tie(b.epoch, b.lo, b.block); });
  // Sweep each epoch by start address, against the writes still open (ending past the start).
  std::vector<const GmWrite *> open;
  for (size_t i = 0; i < all_.size(); ++i) {
    const GmWrite &w = all_[i];
    if (i > 0 && all_[i - 1].epoch != w.epoch) open.clear();
    open.erase(std::remove_if(open.begin(), open.end(), [&](const GmWrite *o) { return o->hi <= w.lo; }), open.end());
    for (const GmWrite *o : open) {
      if (o->block == w.block || (o->atomic && w.atomic)) continue;
      const uintptr_t lo = w.lo, hi = std::min(o->hi, w.hi);
      block = w.block;
      call = w.call;
      what = "GM race between blocks: " + Who(*o) + " and " + Who(w) + " both write GM bytes [" + Hex(lo) + ", " +
             Hex(hi) + ") (byte " + std::to_string(lo - w.base) + " of the GM buffer at " + Hex(w.base) +
             ") in the same launch with no SyncAll between them and not both with a store atomic: on the NPU the "
             "block that writes last wins";
      return true;
    }
    open.push_back(&w);
  }
  return false;
}

}  // namespace twin
}  // namespace ms_ops
