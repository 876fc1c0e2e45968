// The cost model behind the profile (twin_profile.h): an estimate of a kernel's time on an Atlas A2
// (910B) from what it asks of each pipe, not a simulation. Its assumptions:
// - clock 1.8 GHz; every pipe of a core runs concurrently, each at a fixed throughput:
//   MTE2 (GM->UB/L1), MTE3 (UB->GM) and FIX (L0C->GM) at the core's share of GM bandwidth, which
//   is 1.6 TB/s (HBM) over the launch's active cores, at most 128 B/cycle per core;
//   MTE1 (L1->L0A/L0B) 256 B/cycle; V one 256-byte repeat per cycle; the cube 16x16x16 fp16/bf16
//   MACs per cycle (4096) and, for fp32 operands, a quarter of that (1024, the docs give no figure
//   we could cite: an assumption);
// - the scalar unit issues every instruction of the other pipes and runs the kernel's control
//   code, in program order: it overlaps nothing. Its cost: 1 cycle per scalar instruction, where
//   each issued vector/MTE/cube instruction takes kScalarPerIssue of them, a GetValue/SetValue on
//   UB kScalarUbCycles and one on GM kScalarGmCycles (through the scalar data cache);
// - a block's time = max over the pipes of their busy time + the scalar time (perfect overlap of
//   the pipes, as double-buffered queues aim for), and as an upper bound the serialised time
//   (sum of all busy times + scalar). The kernel's time: its longest block, or its total work over
//   the cores when the blocks outnumber them. Start-up latencies, bank conflicts, pipe waits and
//   the launch itself are not modelled.
#include "twin_profile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "twin_runtime.h"

namespace ms_ops {
namespace twin {

__thread Counters *tlsProfile = nullptr;
std::atomic<int> gProfiledLaunches{0};

namespace {

constexpr double kClockHz = 1.8e9;
constexpr double kGmBytesPerSecond = 1.6e12;
constexpr double kCoreGmBytesPerCycle = 128;
constexpr double kMte1BytesPerCycle = 256;
constexpr double kCubeMacsPerCycle = 4096, kCubeMacsF32PerCycle = 1024;
constexpr uint64_t kScalarPerIssue = 8, kScalarUbCycles = 2, kScalarGmCycles = 20;

enum ModelPipe { kMte2, kMte3, kMte1, kFix, kVec, kCube, kScalar, kModelPipes };
const char *const kModelPipeNames[kModelPipes] = {"MTE2", "MTE3", "MTE1", "FIX", "V", "M", "S"};

uint64_t ScalarEstimate(const Counters &c) {
  return c.scalarGm + c.scalarUb + kScalarPerIssue * (c.mte2Calls + c.mte3Calls + c.vecInstr + c.cubeCalls);
}

struct Cost {
  double cycles[kModelPipes];
  double overlapped, serial;  // cycles
  int bound;
};

Cost Estimate(const Counters &c, double gmBytesPerCycle) {
  Cost t{};
  t.cycles[kMte2] = c.mte2Bytes / gmBytesPerCycle;
  t.cycles[kMte3] = c.mte3Bytes / gmBytesPerCycle;
  t.cycles[kMte1] = c.mte1Bytes / kMte1BytesPerCycle;
  t.cycles[kFix] = c.fixBytes / gmBytesPerCycle;
  t.cycles[kVec] = double(c.vecRepeats);
  t.cycles[kCube] = c.cubeMacs / kCubeMacsPerCycle + c.cubeMacsF32 / kCubeMacsF32PerCycle;
  t.cycles[kScalar] = double(ScalarEstimate(c) - c.scalarGm - c.scalarUb) + double(c.scalarUb * kScalarUbCycles) +
                      double(c.scalarGm * kScalarGmCycles);
  double busiest = 0, sum = 0;
  t.bound = kScalar;
  for (int p = 0; p < kScalar; ++p) {
    sum += t.cycles[p];
    if (t.cycles[p] > busiest) {
      busiest = t.cycles[p];
      t.bound = p;
    }
  }
  if (t.cycles[kScalar] > busiest) t.bound = kScalar;
  t.overlapped = busiest + t.cycles[kScalar];
  t.serial = sum + t.cycles[kScalar];
  return t;
}

double Us(double cycles) { return cycles / kClockHz * 1e6; }

void Add(Counters &into, const Counters &c) {
  into.mte2Bytes += c.mte2Bytes;
  into.mte3Bytes += c.mte3Bytes;
  into.mte1Bytes += c.mte1Bytes;
  into.fixBytes += c.fixBytes;
  into.mte2Calls += c.mte2Calls;
  into.mte3Calls += c.mte3Calls;
  into.vecInstr += c.vecInstr;
  into.vecRepeats += c.vecRepeats;
  into.cubeMacs += c.cubeMacs;
  into.cubeMacsF32 += c.cubeMacsF32;
  into.cubeCalls += c.cubeCalls;
  into.scalarGm += c.scalarGm;
  into.scalarUb += c.scalarUb;
}

std::string U(uint64_t v) { return std::to_string(static_cast<unsigned long long>(v)); }

std::string Fixed(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.3f", v);
  return buf;
}

std::string CountersJson(const Counters &c) {
  return "\"mte2_bytes\": " + U(c.mte2Bytes) + ", \"mte3_bytes\": " + U(c.mte3Bytes) +
         ", \"mte1_bytes\": " + U(c.mte1Bytes) + ", \"fix_bytes\": " + U(c.fixBytes) +
         ", \"mte2_calls\": " + U(c.mte2Calls) + ", \"mte3_calls\": " + U(c.mte3Calls) +
         ", \"vec_instr\": " + U(c.vecInstr) + ", \"vec_repeats\": " + U(c.vecRepeats) +
         ", \"cube_macs\": " + U(c.cubeMacs) + ", \"cube_macs_f32\": " + U(c.cubeMacsF32) +
         ", \"cube_calls\": " + U(c.cubeCalls) + ", \"scalar_gm\": " + U(c.scalarGm) +
         ", \"scalar_ub\": " + U(c.scalarUb) + ", \"scalar_est\": " + U(ScalarEstimate(c));
}

std::string CostJson(const Cost &t) {
  std::string s = "\"est_us\": " + Fixed(Us(t.overlapped)) + ", \"serial_us\": " + Fixed(Us(t.serial)) +
                  ", \"bound\": \"" + kModelPipeNames[t.bound] + "\", \"pipe_us\": {";
  for (int p = 0; p < kModelPipes; ++p)
    s += std::string(p ? ", " : "") + "\"" + kModelPipeNames[p] + "\": " + Fixed(Us(t.cycles[p]));
  return s + "}";
}

std::string CountersText(const Counters &c) {
  return "MTE2 " + U(c.mte2Bytes) + " B, MTE3 " + U(c.mte3Bytes) + " B, MTE1 " + U(c.mte1Bytes) + " B, FIX " +
         U(c.fixBytes) + " B, vector " + U(c.vecInstr) + " instr / " + U(c.vecRepeats) + " repeats, cube " +
         U(c.cubeMacs) + " MAC + " + U(c.cubeMacsF32) + " fp32 MAC, scalar " + U(c.scalarGm) + " GM + " +
         U(c.scalarUb) + " UB GetValue/SetValue (" + U(ScalarEstimate(c)) + " instr est.)";
}

std::string CostText(const Cost &t) {
  return "est. A2 " + Fixed(Us(t.overlapped)) + " us (bound " + kModelPipeNames[t.bound] + "), serialised " +
         Fixed(Us(t.serial)) + " us";
}

std::mutex &ReportMutex() {
  static std::mutex mu;
  return mu;
}

}  // namespace

struct ProfileLaunch::Slot {
  Counters c;
  bool ran;
  bool aic;
  int64_t idx;
};

ProfileLaunch::ProfileLaunch(const char *kernel, uint32_t slots, uint32_t cores)
    : kernel_(kernel), slots_(slots), cores_(std::max<uint32_t>(cores, 1)), slot_(nullptr) {
  const char *p = std::getenv("MS_OPS_TWIN_PROFILE");
  json_ = std::getenv("MS_OPS_TWIN_PROFILE_JSON");
  if (json_ != nullptr && *json_ == '\0') json_ = nullptr;
  print_ = p != nullptr && std::strcmp(p, "1") == 0;
  on_ = print_ || json_ != nullptr;
  if (!on_) return;
  slot_ = new Slot[slots]();
  gProfiledLaunches.fetch_add(1);
}

ProfileLaunch::~ProfileLaunch() {
  if (!on_) return;
  gProfiledLaunches.fetch_sub(1);
  const double share = std::min(kCoreGmBytesPerCycle, kGmBytesPerSecond / kClockHz / cores_);
  Counters total{};
  double longest = 0, work = 0;
  std::string blocks, lines;
  uint32_t ran = 0;
  for (uint32_t s = 0; s < slots_; ++s) {
    const Slot &b = slot_[s];
    if (!b.ran) continue;
    const Cost t = Estimate(b.c, share);
    Add(total, b.c);
    longest = std::max(longest, t.overlapped);
    work += t.overlapped;
    const std::string who = BlockName(b.aic, b.idx);
    if (print_) lines += "ms_ops profile " + std::string(kernel_) + ": " + who + ": " + CountersText(b.c) + "; " +
                         CostText(t) + "\n";
    blocks += std::string(ran ? ", " : "") + "{\"block\": " + std::to_string(b.idx) + ", \"core\": \"" +
              (b.aic ? "AIC" : "AIV") + "\", " + CountersJson(b.c) + ", " + CostJson(t) + "}";
    ++ran;
  }
  // The summary's pipe times are the whole launch's work spread over the cores.
  Cost sum = Estimate(total, share);
  const double spread = std::max(1.0, std::min<double>(ran, cores_));
  for (double &c : sum.cycles) c /= spread;
  sum.overlapped = std::max(longest, work / cores_);
  sum.serial /= spread;
  std::lock_guard<std::mutex> lock(ReportMutex());
  if (print_) {
    lines += "ms_ops profile " + std::string(kernel_) + ": " + std::to_string(ran) + " blocks on " +
             std::to_string(cores_) + " cores, total: " + CountersText(total) + "; " + CostText(sum) + "\n";
    std::fputs(lines.c_str(), stderr);
    std::fflush(stderr);
  }
  if (json_ != nullptr) {
    if (FILE *f = std::fopen(json_, "a")) {
      const std::string line = "{\"kernel\": \"" + std::string(kernel_) + "\", \"blocks\": " + std::to_string(ran) +
                               ", \"cores\": " + std::to_string(cores_) + ", \"total\": {" + CountersJson(total) +
                               "}, " + CostJson(sum) + ", \"per_block\": [" + blocks + "]}\n";
      std::fputs(line.c_str(), f);
      std::fclose(f);
    }
  }
  delete[] slot_;
}

ProfileBlock::ProfileBlock(ProfileLaunch *launch, int64_t slot, const Block &b) : outer_(tlsProfile) {
  tlsProfile = nullptr;
  if (launch == nullptr) return;
  ProfileLaunch::Slot &s = launch->slot_[slot];
  s.ran = true;
  s.aic = b.coreType == kAic;
  s.idx = b.idx;
  tlsProfile = &s.c;
}

}  // namespace twin
}  // namespace ms_ops
