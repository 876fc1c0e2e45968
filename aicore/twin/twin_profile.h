// The NPU cost profile of a twin launch: what each block asks of each pipe of an Atlas A2 core, and
// the time that work would take there (twin_profile.cpp states the model).
//
// MS_OPS_TWIN_PROFILE=1 prints, at the end of every launch, one line per block and a summary per
// kernel on stderr; MS_OPS_TWIN_PROFILE_JSON=<file> appends the same numbers to <file> as one JSON
// object a line (either variable turns the counting on). Both are read at each launch.
//
// What is counted, per block:
// - MTE2 / MTE3 bytes: the UB side of DataCopy / DataCopyPad GM->UB and UB->GM (for DataCopyPad
//   GM->UB that includes each row's round-up to 32 bytes), plus the operands Matmul loads (MTE2).
// - MTE1 / FIX bytes: a Matmul's A and B panels L1->L0A/L0B once per product, and its C L0C->out.
// - vector instructions and repeats: a count-based call (first `count` elements) issues
//   ceil(bytes / 256) repeats of its widest operand; a level-0 call (mask, repeatTime) the repeats
//   its mask register gives; a UB->UB DataCopy is a vector instruction too.
// - cube MACs: M*N*K per Matmul product, apart for fp32 operands (a slower cube rate).
// - scalar instructions: GetValue/SetValue/operator() on GM and UB tensors, counted; the rest of
//   the scalar unit's work (address and repeat parameters, loop control) estimated per issued
//   instruction (kScalarPerIssue in twin_profile.cpp).
//
// The hooks below are called by the twin's API. While no profiled launch runs, a hook is a load of
// a plain global and one predictable branch: no thread-local access (which costs a
// __tls_get_addr call in a shared library, measured at about +40% on a GetValue loop).
#ifndef MS_OPS_TWIN_PROFILE_H_
#define MS_OPS_TWIN_PROFILE_H_

#include <atomic>
#include <cstdint>

#include "twin_races.h"

namespace ms_ops {
namespace twin {

struct Block;

struct Counters {
  uint64_t mte2Bytes, mte3Bytes, mte1Bytes, fixBytes;
  uint64_t mte2Calls, mte3Calls;
  uint64_t vecInstr, vecRepeats;
  uint64_t cubeMacs, cubeMacsF32, cubeCalls;
  uint64_t scalarGm, scalarUb;
  uint64_t widest;  // bytes of the widest source of the vector instruction being issued
};

// The counters of the block running on this thread, null when its launch is not profiled.
extern __thread __attribute__((visibility("hidden"))) Counters *tlsProfile;
// Profiled launches running in the process.
extern std::atomic<int> gProfiledLaunches __attribute__((visibility("hidden")));

inline Counters *Profiling() {
  if (__builtin_expect(gProfiledLaunches.load(std::memory_order_relaxed) == 0, 1)) return nullptr;
  return tlsProfile;
}

// A UB access by `pipe`: DataCopy traffic (MTE2 writes, MTE3 reads) and scalar accesses count.
inline void ProfileUb(Pipe pipe, uint64_t bytes) {
  Counters *c = Profiling();
  if (__builtin_expect(c == nullptr, 1)) return;
  if (pipe == kPipeMte2) {
    c->mte2Bytes += bytes;
    ++c->mte2Calls;
  } else if (pipe == kPipeMte3) {
    c->mte3Bytes += bytes;
    ++c->mte3Calls;
  } else if (pipe == kPipeS) {
    ++c->scalarUb;
  }
}

// A source operand of the vector instruction being issued.
inline void ProfileVecSource(uint64_t bytes) {
  Counters *c = Profiling();
  if (__builtin_expect(c == nullptr, 1)) return;
  if (bytes > c->widest) c->widest = bytes;
}

// The destination of a count-based vector instruction: the instruction is issued.
inline void ProfileVec(uint64_t bytes) {
  Counters *c = Profiling();
  if (__builtin_expect(c == nullptr, 1)) return;
  const uint64_t widest = bytes > c->widest ? bytes : c->widest;
  ++c->vecInstr;
  c->vecRepeats += (widest + 255) / 256;
  c->widest = 0;
}

// A level-0 vector instruction of `repeats` repeats.
inline void ProfileVecRepeats(uint64_t repeats) {
  Counters *c = Profiling();
  if (__builtin_expect(c == nullptr, 1)) return;
  ++c->vecInstr;
  c->vecRepeats += repeats;
  c->widest = 0;
}

// A scalar GetValue/SetValue on GM.
inline void ProfileGmScalar() {
  Counters *c = Profiling();
  if (__builtin_expect(c != nullptr, 0)) ++c->scalarGm;
}

// One Matmul product: C[m x n] from A[m x k] and B[k x n], elements of aBytes / bBytes / cBytes.
inline void ProfileCube(uint64_t m, uint64_t n, uint64_t k, uint64_t aBytes, uint64_t bBytes, uint64_t cBytes) {
  Counters *c = Profiling();
  if (__builtin_expect(c == nullptr, 1)) return;
  const uint64_t operands = m * k * aBytes + k * n * bBytes;
  c->mte2Bytes += operands;
  c->mte1Bytes += operands;
  c->fixBytes += m * n * cBytes;
  (aBytes == 4 ? c->cubeMacsF32 : c->cubeMacs) += m * n * k;
  ++c->cubeCalls;
}

// The profile of one launch: counters per block (slot), reported when it ends.
class ProfileLaunch {
 public:
  // `slots`: the block threads of the launch; `cores`: the cores its blocks share (the GM
  // bandwidth share). Off (Active() null) unless MS_OPS_TWIN_PROFILE=1 or _JSON is set.
  ProfileLaunch(const char *kernel, uint32_t slots, uint32_t cores);
  ~ProfileLaunch();
  ProfileLaunch(const ProfileLaunch &) = delete;
  ProfileLaunch &operator=(const ProfileLaunch &) = delete;
  ProfileLaunch *Active() { return on_ ? this : nullptr; }

 private:
  friend class ProfileBlock;
  struct Slot;
  const char *kernel_;
  uint32_t slots_, cores_;
  bool on_, print_;
  const char *json_;
  Slot *slot_;
};

// Slot `slot` of `launch` (null: not profiled) is this thread's counters while the block runs.
class ProfileBlock {
 public:
  ProfileBlock(ProfileLaunch *launch, int64_t slot, const Block &b);
  ~ProfileBlock() { tlsProfile = outer_; }
  ProfileBlock(const ProfileBlock &) = delete;
  ProfileBlock &operator=(const ProfileBlock &) = delete;

 private:
  Counters *outer_;
};

}  // namespace twin
}  // namespace ms_ops

#endif  // MS_OPS_TWIN_PROFILE_H_
