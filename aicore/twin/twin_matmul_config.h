// The configuration types of CANN's Matmul API: CubeFormat and LayoutMode (global scope, as CANN
// declares them), MatmulConfig with its constructors GetNormalConfig / GetMDLConfig /
// GetSpecialMDLConfig / GetBasicConfig / GetIBShareNormConfig and the CFG_NORM / CFG_MDL / MM_CFG_BB /
// CFG_IBSHARE_NORM constants, and GetMMConfig with its parameter structs (MatmulShapeParams, ...).
// The twin computes every configuration the same way (twin's
// lib/matmul_intf.h); the fields exist so that kernels name and pass them as on the NPU.
#ifndef MS_OPS_TWIN_MATMUL_CONFIG_H_
#define MS_OPS_TWIN_MATMUL_CONFIG_H_

#include <cstdint>

enum class CubeFormat : uint8_t { ND = 0, NZ, ZN, ZZ, NN, ND_ALIGN, SCALAR, VECTOR, ROW_MAJOR, COLUMN_MAJOR };
enum class LayoutMode : uint8_t { NONE = 0, BSNGD, SBNGD, BNGS1S2, NORMAL };

namespace AscendC {

using ::CubeFormat;
using ::LayoutMode;

enum class BatchMode : uint8_t { NONE = 0, BATCH_LESS_THAN_L1, BATCH_LARGE_THAN_L1, SINGLE_LARGE_THAN_L1 };
enum class IterateOrder : uint8_t { ORDER_M = 0, ORDER_N, UNDEF };
enum class ScheduleType : uint8_t { INNER_PRODUCT = 0, OUTER_PRODUCT, N_BUFFER_33 };
enum class BatchOutMode : uint8_t { SINGLE_BATCH = 0, MULTI_BATCH, DYNAMIC };

enum class DecompressionMode : uint8_t { DECOMP_NONE = 0 };

struct MatmulConfig {
  bool doNorm = false;
  bool doBasicBlock = false;
  bool doMultiDataLoad = false;
  uint32_t basicM = 0, basicN = 0, basicK = 0;
  bool intrinsicsCheck = false;
  bool isNBatch = false;
  bool enVecND2NZ = false;
  bool doSpecialBasicBlock = false;
  uint32_t doMTE2Preload = 0;
  uint32_t singleCoreM = 0, singleCoreN = 0, singleCoreK = 0, stepM = 0, stepN = 0, baseMN = 0, singleCoreMN = 0;
  bool enUnitFlag = true;
  bool isPerTensor = false;
  bool hasAntiQuantOffset = false;
  bool doIBShareNorm = false;
  bool doSpecialMDL = false;
  bool enableInit = true;
  BatchMode batchMode = BatchMode::NONE;
  bool enableEnd = true;
  bool enableGetTensorC = true;
  bool enableSetOrgShape = true;
  bool enableSetBias = true;
  bool enableSetTail = true;
  bool enableQuantVector = true;
  bool enableSetDefineData = true;
  uint8_t iterateMode = 0;
  bool enableReuse = true;
  bool enableUBReuse = false;
  bool enableL1CacheUB = false;
  bool intraBlockPartSum = false;
  IterateOrder iterateOrder = IterateOrder::UNDEF;
  ScheduleType scheduleType = ScheduleType::INNER_PRODUCT;
  bool enableDoubleCache = false;
  bool isBiasBatch = true;
  bool enableStaticPadZeros = false;
  bool isPartialOutput = false;
  bool enableMixDualMaster = false;
  bool isA2B2Shared = false;
  bool isEnableChannelSplit = false;
  bool enableKdimReorderLoad = false;
  bool isCO1Shared = false;
  uint32_t sharedCO1BufferSize = 0;
  BatchOutMode bmmOutMode = BatchOutMode::SINGLE_BATCH;
  bool enableL1BankConflictOptimise = false;
  bool enableRelu = false;
  DecompressionMode decompMode = DecompressionMode::DECOMP_NONE;
};

constexpr MatmulConfig GetNormalConfig(const bool intrinsicsLimit = false, const bool batchLoop = false,
                                       const bool isVecND2NZ = false,
                                       const BatchMode bmmMode = BatchMode::BATCH_LESS_THAN_L1,
                                       const bool isMsgReuse = true,
                                       const IterateOrder iterateOrder = IterateOrder::UNDEF,
                                       const ScheduleType scheduleType = ScheduleType::INNER_PRODUCT,
                                       const bool enUnitFlag = true, const bool enableMixDualMaster = false,
                                       const BatchOutMode bmmOutMode = BatchOutMode::SINGLE_BATCH) {
  MatmulConfig c;
  c.doNorm = true;
  c.intrinsicsCheck = intrinsicsLimit;
  c.isNBatch = batchLoop;
  c.enVecND2NZ = isVecND2NZ;
  c.batchMode = bmmMode;
  c.enableReuse = isMsgReuse;
  c.enableUBReuse = true;
  c.iterateOrder = iterateOrder;
  c.scheduleType = scheduleType;
  c.enUnitFlag = enUnitFlag;
  c.enableMixDualMaster = enableMixDualMaster;
  c.bmmOutMode = bmmOutMode;
  return c;
}

constexpr MatmulConfig GetMDLConfig(const bool intrinsicsLimit = false, const bool batchLoop = false,
                                    const uint32_t doMTE2Preload = 0, const bool isVecND2NZ = false,
                                    bool isPerTensor = false, bool hasAntiQuantOffset = false,
                                    const bool enUnitFlag = false, const bool isMsgReuse = true,
                                    const bool enableUBReuse = true, const bool enableL1CacheUB = false,
                                    const bool enableMixDualMaster = false, const bool enableKdimReorderLoad = false,
                                    const bool enableL1BankConflictOptimise = false) {
  MatmulConfig c;
  c.doMultiDataLoad = true;
  c.intrinsicsCheck = intrinsicsLimit;
  c.isNBatch = batchLoop;
  c.doMTE2Preload = doMTE2Preload;
  c.enVecND2NZ = isVecND2NZ;
  c.isPerTensor = isPerTensor;
  c.hasAntiQuantOffset = hasAntiQuantOffset;
  c.enUnitFlag = enUnitFlag;
  c.enableReuse = isMsgReuse;
  c.enableUBReuse = enableUBReuse;
  c.enableL1CacheUB = enableL1CacheUB;
  c.enableMixDualMaster = enableMixDualMaster;
  c.enableKdimReorderLoad = enableKdimReorderLoad;
  c.enableL1BankConflictOptimise = enableL1BankConflictOptimise;
  return c;
}

constexpr MatmulConfig GetSpecialMDLConfig(const bool intrinsicsLimit = false, const bool batchLoop = false,
                                           const uint32_t doMTE2Preload = 0, const bool isVecND2NZ = false,
                                           bool isPerTensor = false, bool hasAntiQuantOffset = false) {
  MatmulConfig c;
  c.doSpecialMDL = true;
  c.intrinsicsCheck = intrinsicsLimit;
  c.isNBatch = batchLoop;
  c.doMTE2Preload = doMTE2Preload;
  c.enVecND2NZ = isVecND2NZ;
  c.isPerTensor = isPerTensor;
  c.hasAntiQuantOffset = hasAntiQuantOffset;
  c.enUnitFlag = false;
  c.enableUBReuse = true;
  return c;
}

// basicM x basicN x basicK: the shape of one mmad on the NPU.
constexpr MatmulConfig GetBasicConfig(const uint32_t basicM, const uint32_t basicN, const uint32_t basicK,
                                      const bool intrinsicsLimit = false, const bool batchLoop = false,
                                      const BatchMode bmmMode = BatchMode::BATCH_LESS_THAN_L1) {
  MatmulConfig c;
  c.doBasicBlock = true;
  c.basicM = basicM;
  c.basicN = basicN;
  c.basicK = basicK;
  c.intrinsicsCheck = intrinsicsLimit;
  c.isNBatch = batchLoop;
  c.batchMode = bmmMode;
  c.enUnitFlag = false;
  c.enableUBReuse = true;
  return c;
}

// IBShare: the cores of a group share one copy of the operand MatmulType marks IBSHARE in L1.
constexpr MatmulConfig GetIBShareNormConfig(const bool intrinsicsLimit = false, const bool batchLoop = false,
                                            const bool isVecND2NZ = false,
                                            const BatchMode bmmMode = BatchMode::BATCH_LESS_THAN_L1,
                                            const bool isDoubleCache = false, const bool enUnitFlag = true) {
  MatmulConfig c;
  c.doIBShareNorm = true;
  c.intrinsicsCheck = intrinsicsLimit;
  c.isNBatch = batchLoop;
  c.enVecND2NZ = isVecND2NZ;
  c.batchMode = bmmMode;
  c.enableDoubleCache = isDoubleCache;
  c.enUnitFlag = enUnitFlag;
  c.enableUBReuse = true;
  return c;
}

inline constexpr MatmulConfig CFG_NORM = GetNormalConfig();
inline constexpr MatmulConfig CFG_MDL = GetMDLConfig();
inline constexpr MatmulConfig MM_CFG_BB = GetBasicConfig(128, 128, 128);
inline constexpr MatmulConfig CFG_IBSHARE_NORM = GetIBShareNormConfig();

// GetMMConfig<mode>(params...): the configuration of one of the four templates, with the fields
// of each parameter struct given set from it (CANN's newer way to write a MatmulConfig).
enum class MatmulConfigMode { CONFIG_NORM, CONFIG_MDL, CONFIG_SPECIALMDL, CONFIG_IBSHARE };

struct MatmulShapeParams {
  uint32_t singleCoreM, singleCoreN, singleCoreK, basicM, basicN, basicK;
};
struct MatmulQuantParams {
  bool isPerTensor, hasAntiQuantOffset;
};
struct MatmulBatchParams {
  bool isNBatch;
  BatchMode batchMode;
  bool isBiasBatch = true;
  BatchOutMode bmmOutMode = BatchOutMode::SINGLE_BATCH;
};
struct MatmulFuncParams {
  bool intrinsicsCheck, enVecND2NZ, enableDoubleCache, enableL1CacheUB;
  uint32_t doMTE2Preload;
  IterateOrder iterateOrder;
  ScheduleType scheduleType;
  bool enableReuse = true;
  bool enableUBReuse;
  bool isPartialOutput = false, isA2B2Shared = false, isEnableChannelSplit = false, enableKdimReorderLoad = false;
  bool enableL1BankConflictOptimise = false, enableRelu = false;
  DecompressionMode decompMode = DecompressionMode::DECOMP_NONE;
};
struct MatmulBiasParams {
  bool enableSetBias = true;
};

namespace twin_detail {

constexpr void ApplyMMParams(MatmulConfig &c, const MatmulShapeParams &p) {
  c.singleCoreM = p.singleCoreM;
  c.singleCoreN = p.singleCoreN;
  c.singleCoreK = p.singleCoreK;
  c.basicM = p.basicM;
  c.basicN = p.basicN;
  c.basicK = p.basicK;
}
constexpr void ApplyMMParams(MatmulConfig &c, const MatmulQuantParams &p) {
  c.isPerTensor = p.isPerTensor;
  c.hasAntiQuantOffset = p.hasAntiQuantOffset;
}
constexpr void ApplyMMParams(MatmulConfig &c, const MatmulBatchParams &p) {
  c.isNBatch = p.isNBatch;
  c.batchMode = p.batchMode;
  c.isBiasBatch = p.isBiasBatch;
  c.bmmOutMode = p.bmmOutMode;
}
constexpr void ApplyMMParams(MatmulConfig &c, const MatmulFuncParams &p) {
  c.intrinsicsCheck = p.intrinsicsCheck;
  c.enVecND2NZ = p.enVecND2NZ;
  c.enableDoubleCache = p.enableDoubleCache;
  c.enableL1CacheUB = p.enableL1CacheUB;
  c.doMTE2Preload = p.doMTE2Preload;
  c.iterateOrder = p.iterateOrder;
  c.scheduleType = p.scheduleType;
  c.enableReuse = p.enableReuse;
  c.enableUBReuse = p.enableUBReuse;
  c.isPartialOutput = p.isPartialOutput;
  c.isA2B2Shared = p.isA2B2Shared;
  c.isEnableChannelSplit = p.isEnableChannelSplit;
  c.enableKdimReorderLoad = p.enableKdimReorderLoad;
  c.enableL1BankConflictOptimise = p.enableL1BankConflictOptimise;
  c.enableRelu = p.enableRelu;
  c.decompMode = p.decompMode;
}
constexpr void ApplyMMParams(MatmulConfig &c, const MatmulBiasParams &p) { c.enableSetBias = p.enableSetBias; }

}  // namespace twin_detail

template <MatmulConfigMode mode, typename... Params>
constexpr MatmulConfig GetMMConfig(Params &&...params) {
  MatmulConfig c = mode == MatmulConfigMode::CONFIG_MDL         ? CFG_MDL
                   : mode == MatmulConfigMode::CONFIG_SPECIALMDL ? GetSpecialMDLConfig()
                   : mode == MatmulConfigMode::CONFIG_IBSHARE    ? CFG_IBSHARE_NORM
                                                                 : CFG_NORM;
  (twin_detail::ApplyMMParams(c, params), ...);
  return c;
}

// The callback hooks of a Matmul (its sixth template parameter); the twin calls none of them.
template <auto DataCopyOut = nullptr, auto CopyA1 = nullptr, auto CopyB1 = nullptr>
struct MatmulCallBackFunc {};

}  // namespace AscendC

// CANN declares the Matmul configuration at global scope (its matmul_config.h and matmul/tiling.h):
// kernels name it unqualified, without `using namespace AscendC`.
using AscendC::BatchMode;
using AscendC::DecompressionMode;
using AscendC::GetMMConfig;
using AscendC::MatmulBatchParams;
using AscendC::MatmulBiasParams;
using AscendC::MatmulConfigMode;
using AscendC::MatmulFuncParams;
using AscendC::MatmulQuantParams;
using AscendC::MatmulShapeParams;
using AscendC::BatchOutMode;
using AscendC::CFG_IBSHARE_NORM;
using AscendC::CFG_MDL;
using AscendC::CFG_NORM;
using AscendC::GetBasicConfig;
using AscendC::GetIBShareNormConfig;
using AscendC::GetMDLConfig;
using AscendC::GetNormalConfig;
using AscendC::GetSpecialMDLConfig;
using AscendC::IterateOrder;
using AscendC::MatmulConfig;
using AscendC::MM_CFG_BB;
using AscendC::ScheduleType;

#endif  // MS_OPS_TWIN_MATMUL_CONFIG_H_
