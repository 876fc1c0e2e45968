// Runs ops-nn's fused_patch_mlp through its production entry, which its own kernel test leaves
// out: the MIX kernel (KERNEL_TYPE_MIX_AIC_1_2, Matmul on the AIC, GELU on its two AIVs, cross-core
// flags and SyncAll between them) compiled for the device, that is without __CCE_KT_TEST__, and
// launched on the twin in MIX_MODE. The data and the verdict are the kernel test's own: its
// gen_data.py (x [2, 4, 16], hidden 64, 3 layers) and compare_data.py.
//
// Usage: fused_patch_mlp_mix DTYPE GROUPS KEY...   (DTYPE float16 / bfloat16 / float32, the type
// the kernel was compiled for; GROUPS AIC+2 AIV groups, the Matmul tiles split over them along N).
// Exit status: the number of launches the twin failed or that wrote no output. The comparison's
// verdict is only in compare_data.py's output (the UT helper that runs it does not return it),
// which tools/compile_cann_kernels.py reads.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "data_utils.h"
#include "kernel_ut_data_executor.h"
#include "kernel_ut_data_helper.h"
#include "tikicpulib.h"

extern "C" __global__ __aicore__ void fused_patch_mlp(GM_ADDR x, GM_ADDR weights, GM_ADDR biases, GM_ADDR y,
                                                      GM_ADDR workspace, GM_ADDR tiling);

namespace {

constexpr uint32_t kRows = 8, kPatch = 16, kHidden = 64, kLayers = 3;
constexpr uint64_t kSysWorkspace = 16UL << 20;  // the Matmul system workspace GetUserWorkspace skips
const char *const kData = "./fused_patch_mlp_data";

uint32_t AlignUp(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

// What the host's multi-core Matmul tiling gives an m x n x k product with bias on `cores` cube
// cores at this size: the whole of M and K per core, N split evenly, one base block per core.
void CubeTiling(TCubeTiling &t, uint32_t m, uint32_t n, uint32_t k, uint32_t cores, uint32_t elementBytes) {
  std::memset(&t, 0, sizeof(t));
  const uint32_t perCore = n / cores;
  t.usedCoreNum = cores;
  t.M = m;
  t.N = n;
  t.Ka = t.Kb = k;
  t.singleCoreM = m;
  t.singleCoreN = perCore;
  t.singleCoreK = k;
  t.baseM = AlignUp(m, 16);
  t.baseN = AlignUp(perCore, 16);
  t.baseK = AlignUp(k, 16);
  t.depthA1 = t.depthB1 = 1;
  t.stepM = t.stepN = t.stepKa = t.stepKb = 1;
  t.isBias = 1;
  t.shareL1Size = 6144 * (elementBytes / 2);
  t.shareL0CSize = 2048;
  t.batchM = t.batchN = t.singleBatchM = t.singleBatchN = 1;
  t.dbL0A = t.dbL0B = 2;
  t.dbL0C = 1;
}

// Key 1 runs GELU a row at a time (mode 0), the MDL keys over flat 128-element tiles (mode 1).
void Tiling(FusedPatchMlpTilingData &t, uint64_t key, uint32_t cores, uint32_t elementBytes) {
  std::memset(&t, 0, sizeof(t));
  t.totalN = kRows;
  t.inFeatures = kPatch;
  t.hiddenSize = kHidden;
  t.geluMode = key == 1 ? 0 : 1;
  t.geluTileSize = key == 1 ? kHidden : 128;
  t.numLayers = kLayers;
  CubeTiling(t.mm0Tiling, kRows, kHidden, kPatch, cores, elementBytes);
  CubeTiling(t.mmHTiling, kRows, kHidden, kHidden, cores, elementBytes);
}

// One launch of tiling key `key`; false when the twin failed it or a file was missing.
bool RunKey(const std::string &dtype, uint32_t groups, uint64_t key) {
  const uint32_t elementBytes = dtype == "float32" ? 4 : 2;
  const uint32_t biasBytes = dtype == "float16" ? 2 : 4;  // bfloat16 biases are fp32
  const size_t weights = size_t(kPatch) * kHidden + size_t(kLayers - 1) * kHidden * kHidden;
  const size_t xSize = size_t(kRows) * kPatch * elementBytes, wSize = weights * elementBytes;
  const size_t bSize = size_t(kLayers) * kHidden * biasBytes, ySize = size_t(kRows) * kHidden * elementBytes;
  if (!kernel_ut::RunGenData(kData, {"2,4,16", std::to_string(kHidden), std::to_string(kLayers), dtype})) return false;
  auto *x = static_cast<uint8_t *>(AscendC::GmAlloc(xSize));
  auto *w = static_cast<uint8_t *>(AscendC::GmAlloc(wSize));
  auto *b = static_cast<uint8_t *>(AscendC::GmAlloc(bSize));
  auto *y = static_cast<uint8_t *>(AscendC::GmAlloc(ySize));
  auto *ws = static_cast<uint8_t *>(AscendC::GmAlloc(kSysWorkspace + 2UL * kRows * kHidden * elementBytes));
  auto *tiling = static_cast<FusedPatchMlpTilingData *>(AscendC::GmAlloc(sizeof(FusedPatchMlpTilingData)));
  size_t got = 0;
  const std::string prefix = std::string(kData) + "/" + dtype;
  bool ok = ReadFile(prefix + "_x_fused_patch_mlp.bin", got, x, xSize) && got == xSize &&
            ReadFile(prefix + "_weights_fused_patch_mlp.bin", got, w, wSize) && got == wSize &&
            ReadFile(prefix + "_biases_fused_patch_mlp.bin", got, b, bSize) && got == bSize;
  if (ok) {
    Tiling(*tiling, key, groups, elementBytes);
    const int failures = AscendC::IcpuFailures();
    AscendC::SetKernelMode(KernelMode::MIX_MODE);
    ICPU_SET_TILING_KEY(key);
    ICPU_RUN_KF(fused_patch_mlp, groups, x, w, b, y, ws, reinterpret_cast<uint8_t *>(tiling));
    ok = AscendC::IcpuFailures() == failures && WriteFile(prefix + "_output_fused_patch_mlp.bin", y, ySize);
    if (ok) kernel_ut::RunCompareData(kData, {"'" + dtype + "'"});
  }
  for (void *p : {static_cast<void *>(x), static_cast<void *>(w), static_cast<void *>(b), static_cast<void *>(y),
                  static_cast<void *>(ws), static_cast<void *>(tiling)})
    AscendC::GmFree(p);
  return ok;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s DTYPE GROUPS KEY...\n", argv[0]);
    return 2;
  }
  const std::string dtype = argv[1];
  const uint32_t groups = static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10));
  const std::string source = "experimental/matmul/fused_patch_mlp/tests/ut/op_kernel/fused_patch_mlp_data";
  if (!kernel_ut::SetupTestEnvironment(source, "fused_patch_mlp_data")) return 1;
  int failed = 0;
  for (int i = 3; i < argc; ++i) {
    const uint64_t key = std::strtoull(argv[i], nullptr, 10);
    std::printf("fused_patch_mlp MIX %s, %u group(s), tiling key %llu\n", dtype.c_str(), groups,
                static_cast<unsigned long long>(key));
    std::fflush(stdout);
    failed += RunKey(dtype, groups, key) ? 0 : 1;
  }
  kernel_ut::CleanGeneratedBinFiles(kData);
  return failed;
}
