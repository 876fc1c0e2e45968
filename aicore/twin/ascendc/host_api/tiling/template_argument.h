// Tiling-key templates (CANN 8.x "Tiling模板编程", header ascendc/host_api/tiling/template_argument.h).
// A kernel's tiling-key header declares its template parameters with ASCENDC_TPL_ARGS_DECL and the
// combinations it is built for with ASCENDC_TPL_SEL; the host packs the chosen values into the
// tiling key with GET_TPL_TILING_KEY (or ASCENDC_TPL_SEL_PARAM), and the CANN build instantiates the
// kernel template once per combination behind an entry that dispatches on the key. The twin builds
// host and kernel code into one program, so the declarations are the host's data in both, and
// ms_ops::twin::DecodeTplTilingKey gives a key's values back to the entry that dispatches.
//
// The key, as CANN's EncodeTilingKey lays it out: the declared parameters in declaration order from
// bit 0, each in its bit width (DTYPE and FORMAT 8 bits, BOOL 1, UINT its declared width); a UINT
// parameter stores the index of its value in the declared list (ranges expanded), the others the
// value itself. Values that break a rule (not declared, in no ASCENDC_TPL_SEL combination, wider
// than the bit width, more than 64 bits in all) give CANN's invalid key, all ones, with the reason
// on stderr, as CANN logs it.
#ifndef MS_OPS_TWIN_TEMPLATE_ARGUMENT_H_
#define MS_OPS_TWIN_TEMPLATE_ARGUMENT_H_

#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "twin_runtime.h"
#include "twin_types.h"

// Kernel types a combination may name (ASCENDC_TPL_KERNEL_TYPE_SEL).
#define ASCENDC_TPL_AIV_ONLY 0
#define ASCENDC_TPL_AIC_ONLY 1
#define ASCENDC_TPL_MIX_AIV_1_0 4
#define ASCENDC_TPL_MIX_AIC_1_0 5
#define ASCENDC_TPL_MIX_AIC_1_1 6
#define ASCENDC_TPL_MIX_AIC_1_2 7
#define ASCENDC_TPL_AICORE 8
#define ASCENDC_TPL_VECTORCORE 9
#define ASCENDC_TPL_MIX_AICORE 10
#define ASCENDC_TPL_MIX_VECTOR_CORE 11
#define ASCENDC_TPL_MAX 12

#define ASCENDC_TPL_1_BW 1
#define ASCENDC_TPL_2_BW 2
#define ASCENDC_TPL_4_BW 4
#define ASCENDC_TPL_8_BW 8

// Parameter kinds.
#define ASCENDC_TPL_DTYPE 0
#define ASCENDC_TPL_FORMAT 1
#define ASCENDC_TPL_UINT 2
#define ASCENDC_TPL_BOOL 3
constexpr uint32_t ASCENDC_TPL_KERNEL_TYPE = 4;
constexpr uint32_t ASCENDC_TPL_DETERMINISTIC = 5;
constexpr uint32_t ASCENDC_TPL_SHARED_KERNEL_TYPE = 6;

// The dtypes a DTYPE parameter lists (ASCENDC_TPL_DATATYPE_DECL(x, C_DT_FLOAT, ...)): ge::DataType
// numbers; a build may define them itself.
#ifndef C_DT_FLOAT
#define C_DT_FLOAT 0
#define C_DT_FLOAT16 1
#define C_DT_INT8 2
#define C_DT_INT32 3
#define C_DT_UINT8 4
#define C_DT_INT16 6
#define C_DT_UINT16 7
#define C_DT_UINT32 8
#define C_DT_INT64 9
#define C_DT_UINT64 10
#define C_DT_DOUBLE 11
#define C_DT_BOOL 12
#define C_DT_COMPLEX64 16
#define C_DT_COMPLEX128 17
#define C_DT_BF16 27
#define C_DT_INT4 29
#endif

// A DTYPE/FORMAT value may name the dtype of an input or output instead of a fixed one.
#define ASCENDC_TPL_INPUT_BIAS 100000000
#define ASCENDC_TPL_OUTPUT_BIAS 900000000
#define ASCENDC_TPL_INPUT(x) (ASCENDC_TPL_INPUT_BIAS + (x))
#define ASCENDC_TPL_OUTPUT(x) (ASCENDC_TPL_OUTPUT_BIAS + (x))

// How a UINT parameter lists its values: UI_LIST v...; UI_RANGE n, lo1, hi1, ... (n inclusive
// ranges); UI_MIX n ranges as UI_RANGE, then single values.
#define ASCENDC_TPL_UI_RANGE 0
#define ASCENDC_TPL_UI_LIST 1
#define ASCENDC_TPL_UI_MIX 2

// One declared or selected parameter, with CANN's field names.
struct ParamStruct {
  const char *name;
  uint32_t paramType;
  uint8_t bitWidth;
  std::vector<uint64_t> vals;
  const char *macroType;  // "DECL" or "SEL"
  ParamStruct(const char *inName, uint32_t inParamType, uint8_t inBitWidth, std::vector<uint64_t> inVals,
              const char *inMacroType)
      : name(inName), paramType(inParamType), bitWidth(inBitWidth), vals(std::move(inVals)), macroType(inMacroType) {}
};
using TilingDeclareParams = std::vector<ParamStruct>;
using TilingSelectParams = std::vector<std::vector<ParamStruct>>;

// The twin's tag for ASCENDC_TPL_TILING_STRUCT_SEL, which names a tiling struct, not a key field.
constexpr uint32_t kTwinTplTilingStruct = 7;

#define ASCENDC_TPL_DTYPE_DECL(x, ...) ParamStruct{#x, ASCENDC_TPL_DTYPE, ASCENDC_TPL_8_BW, {__VA_ARGS__}, "DECL"}
#define ASCENDC_TPL_DATATYPE_DECL(x, ...) ParamStruct{#x, ASCENDC_TPL_DTYPE, ASCENDC_TPL_8_BW, {__VA_ARGS__}, "DECL"}
#define ASCENDC_TPL_FORMAT_DECL(x, ...) ParamStruct{#x, ASCENDC_TPL_FORMAT, ASCENDC_TPL_8_BW, {__VA_ARGS__}, "DECL"}
#define ASCENDC_TPL_UINT_DECL(x, bw, ...) ParamStruct{#x, ASCENDC_TPL_UINT, bw, {__VA_ARGS__}, "DECL"}
#define ASCENDC_TPL_BOOL_DECL(x, ...) ParamStruct{#x, ASCENDC_TPL_BOOL, ASCENDC_TPL_1_BW, {__VA_ARGS__}, "DECL"}
#define ASCENDC_TPL_KERNEL_TYPE_DECL(x, ...) \
  ParamStruct{#x, ASCENDC_TPL_SHARED_KERNEL_TYPE, ASCENDC_TPL_8_BW, {__VA_ARGS__}, "DECL"}

#define ASCENDC_TPL_DTYPE_SEL(x, ...) ParamStruct{#x, ASCENDC_TPL_DTYPE, ASCENDC_TPL_8_BW, {__VA_ARGS__}, "SEL"}
#define ASCENDC_TPL_DATATYPE_SEL(x, ...) ParamStruct{#x, ASCENDC_TPL_DTYPE, ASCENDC_TPL_8_BW, {__VA_ARGS__}, "SEL"}
#define ASCENDC_TPL_FORMAT_SEL(x, ...) ParamStruct{#x, ASCENDC_TPL_FORMAT, ASCENDC_TPL_8_BW, {__VA_ARGS__}, "SEL"}
#define ASCENDC_TPL_UINT_SEL(x, ...) ParamStruct{#x, ASCENDC_TPL_UINT, 0, {__VA_ARGS__}, "SEL"}
#define ASCENDC_TPL_BOOL_SEL(x, ...) ParamStruct{#x, ASCENDC_TPL_BOOL, ASCENDC_TPL_1_BW, {__VA_ARGS__}, "SEL"}
#define ASCENDC_TPL_TILING_STRUCT_SEL(x, ...) ParamStruct{#x, kTwinTplTilingStruct, 0, {0}, "SEL"}
#define ASCENDC_TPL_KERNEL_TYPE_SEL(...) \
  ParamStruct{"kernel_type", ASCENDC_TPL_KERNEL_TYPE, ASCENDC_TPL_8_BW, {__VA_ARGS__}, "SEL"}
#define ASCENDC_TPL_DETERMINISTIC_SEL(...) \
  ParamStruct{"deterministic", ASCENDC_TPL_DETERMINISTIC, ASCENDC_TPL_1_BW, {__VA_ARGS__}, "SEL"}
#define ASCENDC_TPL_SHARED_KERNEL_TYPE_SEL(x, ...) \
  ParamStruct{#x, ASCENDC_TPL_SHARED_KERNEL_TYPE, ASCENDC_TPL_8_BW, {__VA_ARGS__}, "SEL"}

#define ASCENDC_TPL_ARGS_DECL(x, ...) static TilingDeclareParams g_tilingDeclareParams{__VA_ARGS__}
#define ASCENDC_TPL_ARGS_SEL(...) std::vector<ParamStruct>{__VA_ARGS__}
#define ASCENDC_TPL_SEL(...) static TilingSelectParams g_tilingSelectParams{__VA_ARGS__}

// The kernel side's dtype from a DTYPE value (ge::DataType numbering: DT_FLOAT 0, DT_FLOAT16 1,
// DT_INT8 2, DT_INT32 3, DT_UINT8 4, DT_INT16 6, DT_UINT16 7, DT_UINT32 8, DT_INT64 9,
// DT_UINT64 10, DT_DOUBLE 11, DT_BOOL 12, DT_BF16 27).
template <int dataTypeId>
struct TypeFromId {
  using type = void;
};
#define MS_OPS_TWIN_TPL_TYPE(id, t) \
  template <>                       \
  struct TypeFromId<id> {           \
    using type = t;                 \
  }
MS_OPS_TWIN_TPL_TYPE(0, float);
MS_OPS_TWIN_TPL_TYPE(1, half);
MS_OPS_TWIN_TPL_TYPE(2, int8_t);
MS_OPS_TWIN_TPL_TYPE(3, int32_t);
MS_OPS_TWIN_TPL_TYPE(4, uint8_t);
MS_OPS_TWIN_TPL_TYPE(6, int16_t);
MS_OPS_TWIN_TPL_TYPE(7, uint16_t);
MS_OPS_TWIN_TPL_TYPE(8, uint32_t);
MS_OPS_TWIN_TPL_TYPE(9, int64_t);
MS_OPS_TWIN_TPL_TYPE(10, uint64_t);
MS_OPS_TWIN_TPL_TYPE(11, double);
MS_OPS_TWIN_TPL_TYPE(12, bool);
MS_OPS_TWIN_TPL_TYPE(27, bfloat16_t);
#undef MS_OPS_TWIN_TPL_TYPE

namespace ms_ops {
namespace twin {
namespace tpl {

constexpr uint64_t kInvalidKey = ~0ull;

inline bool Bad(std::string *why, const std::string &what) {
  if (why->empty()) *why = what;
  return false;
}

inline const char *KindName(uint32_t t) {
  static const char *const names[] = {"DTYPE", "FORMAT", "UINT", "BOOL", "KERNEL_TYPE", "DETERMINISTIC",
                                      "SHARED_KERNEL_TYPE", "TILING_STRUCT"};
  return t < 8 ? names[t] : "unknown";
}

// Fields that are not part of the key.
inline bool NotInKey(const ParamStruct &p) {
  return p.paramType == ASCENDC_TPL_KERNEL_TYPE || p.paramType == ASCENDC_TPL_DETERMINISTIC ||
         p.paramType == kTwinTplTilingStruct;
}

// p's values as a plain list (UINT ranges expanded), checked: some, distinct, each within the bit
// width (an input/output reference aside). `width` overrides p's own (a UINT SEL takes its DECL's).
inline bool Expand(ParamStruct *p, uint8_t width, std::string *why) {
  const std::string where =
      std::string("ASCENDC_TPL_") + KindName(p->paramType) + "_" + p->macroType + "(" + p->name + ")";
  if (width != 0) p->bitWidth = width;
  if (p->paramType == ASCENDC_TPL_UINT) {
    if (p->vals.size() < 2) return Bad(why, where + ": needs a list kind (ASCENDC_TPL_UI_LIST/RANGE/MIX) and values");
    const uint64_t kind = p->vals[0];
    std::vector<uint64_t> rest(p->vals.begin() + 1, p->vals.end()), out;
    if (kind == ASCENDC_TPL_UI_LIST) {
      out = rest;
    } else if (kind == ASCENDC_TPL_UI_RANGE || kind == ASCENDC_TPL_UI_MIX) {
      const uint64_t ranges = rest[0];
      if (1 + 2 * ranges > rest.size()) return Bad(why, where + ": fewer range bounds than its range count says");
      for (uint64_t r = 0; r < ranges; ++r)
        for (uint64_t v = rest[1 + 2 * r]; v <= rest[2 + 2 * r]; ++v) out.push_back(v);
      if (kind == ASCENDC_TPL_UI_MIX) out.insert(out.end(), rest.begin() + 1 + 2 * ranges, rest.end());
      else if (1 + 2 * ranges != rest.size()) return Bad(why, where + ": UI_RANGE takes only range bounds");
    } else {
      return Bad(why, where + ": list kind " + std::to_string(kind) + " is not UI_RANGE, UI_LIST or UI_MIX");
    }
    p->vals = out;
  }
  if (p->vals.empty()) return Bad(why, where + ": no values");
  if (std::set<uint64_t>(p->vals.begin(), p->vals.end()).size() != p->vals.size())
    return Bad(why, where + ": a value is listed twice");
  // A UINT field holds an index, the others the value itself.
  const uint64_t limit = p->bitWidth >= 64 ? ~0ull : (1ull << p->bitWidth) - 1;
  if (p->paramType == ASCENDC_TPL_UINT) {
    if (p->vals.size() - 1 > limit)
      return Bad(why, where + ": " + std::to_string(p->vals.size()) + " values do not fit " +
                          std::to_string(p->bitWidth) + " bits");
  } else {
    for (uint64_t v : p->vals)
      if (v > limit && v < ASCENDC_TPL_INPUT_BIAS)
        return Bad(why, where + ": value " + std::to_string(v) + " does not fit " + std::to_string(p->bitWidth) +
                            " bits");
  }
  return true;
}

inline const ParamStruct *Find(const TilingDeclareParams &d, const std::string &name) {
  for (const ParamStruct &p : d)
    if (name == p.name) return &p;
  return nullptr;
}

// The declarations and the combinations expanded and checked against each other.
inline bool Prepare(TilingDeclareParams *decl, TilingSelectParams *sel, std::string *why) {
  if (decl->empty()) return Bad(why, "ASCENDC_TPL_ARGS_DECL declares no parameters");
  if (sel->empty()) return Bad(why, "ASCENDC_TPL_SEL lists no combinations");
  uint32_t bits = 0;
  for (ParamStruct &p : *decl) {
    if (!Expand(&p, 0, why)) return false;
    bits += p.bitWidth;
  }
  if (bits > 64) return Bad(why, "the declared parameters need " + std::to_string(bits) + " bits, over 64");
  for (size_t c = 0; c < sel->size(); ++c) {
    std::set<std::string> named;
    for (ParamStruct &s : (*sel)[c]) {
      if (NotInKey(s)) continue;
      const ParamStruct *d = Find(*decl, s.name);
      const std::string where = "ASCENDC_TPL_SEL combination " + std::to_string(c) + ": " + s.name;
      if (d == nullptr) return Bad(why, where + " is not declared in ASCENDC_TPL_ARGS_DECL");
      if (d->paramType != s.paramType)
        return Bad(why, where + " is declared " + KindName(d->paramType) + ", selected " + KindName(s.paramType));
      if (!Expand(&s, d->bitWidth, why)) return false;
      for (uint64_t v : s.vals) {
        bool declared = false;
        for (uint64_t w : d->vals) declared = declared || v == w;
        if (!declared) return Bad(why, where + " selects value " + std::to_string(v) + ", which is not declared");
      }
      named.insert(s.name);
    }
    if (named.size() != decl->size())
      return Bad(why, "ASCENDC_TPL_SEL combination " + std::to_string(c) + " does not name every declared parameter");
  }
  return true;
}

// The key of `vals` under prepared declarations, or kInvalidKey with the reason in *why.
inline uint64_t EncodePrepared(const TilingDeclareParams &decl, const TilingSelectParams &sel,
                               const std::vector<uint64_t> &vals, std::string *why) {
  if (vals.size() != decl.size()) {
    Bad(why, std::to_string(vals.size()) + " values for " + std::to_string(decl.size()) + " declared parameters");
    return kInvalidKey;
  }
  bool chosen = false;
  for (const std::vector<ParamStruct> &combo : sel) {
    bool all = true;
    for (const ParamStruct &s : combo) {
      if (NotInKey(s)) continue;
      size_t i = 0;
      while (std::string(decl[i].name) != s.name) ++i;
      bool in = false;
      for (uint64_t v : s.vals) in = in || v == vals[i];
      all = all && in;
    }
    chosen = chosen || all;
  }
  if (!chosen) {
    std::string list;
    for (size_t i = 0; i < vals.size(); ++i)
      list += (i ? ", " : "") + std::string(decl[i].name) + "=" + std::to_string(vals[i]);
    Bad(why, "(" + list + ") is in no ASCENDC_TPL_SEL combination");
    return kInvalidKey;
  }
  uint64_t key = 0;
  uint32_t shift = 0;
  for (size_t i = 0; i < decl.size(); ++i) {
    uint64_t field = vals[i];
    if (decl[i].paramType == ASCENDC_TPL_UINT) {
      field = 0;
      while (decl[i].vals[field] != vals[i]) ++field;
    }
    key |= field << shift;
    shift += decl[i].bitWidth;
  }
  return key;
}

inline uint64_t Encode(TilingDeclareParams decl, TilingSelectParams sel, const std::vector<uint64_t> &vals) {
  std::string why;
  const uint64_t key = Prepare(&decl, &sel, &why) ? EncodePrepared(decl, sel, vals, &why) : kInvalidKey;
  if (key == kInvalidKey) std::fprintf(stderr, "GET_TPL_TILING_KEY: %s\n", why.c_str());
  return key;
}

}  // namespace tpl

// The declared parameters' values packed in `key`, in declaration order: what the CANN build's
// generated entry passes as the kernel's template arguments. Fails on a key no combination encodes.
inline std::vector<uint64_t> DecodeTplTilingKey(TilingDeclareParams decl, TilingSelectParams sel, uint64_t key) {
  std::string why;
  if (!tpl::Prepare(&decl, &sel, &why)) Fail("GET_TPL_TILING_KEY", why);
  std::vector<uint64_t> vals;
  uint32_t shift = 0;
  for (const ParamStruct &p : decl) {
    const uint64_t field = p.bitWidth >= 64 ? key >> shift : (key >> shift) & ((1ull << p.bitWidth) - 1);
    if (p.paramType == ASCENDC_TPL_UINT && field >= p.vals.size())
      Fail("GET_TPL_TILING_KEY", "tiling key " + std::to_string(key) + ": " + p.name + " index " +
                                     std::to_string(field) + " is past its " + std::to_string(p.vals.size()) +
                                     " values");
    vals.push_back(p.paramType == ASCENDC_TPL_UINT ? p.vals[field] : field);
    shift += p.bitWidth;
  }
  if (tpl::EncodePrepared(decl, sel, vals, &why) != key)
    Fail("GET_TPL_TILING_KEY", "tiling key " + std::to_string(key) + " is not one the declared combinations encode");
  return vals;
}

}  // namespace twin
}  // namespace ms_ops

namespace AscendC {
inline uint64_t EncodeTilingKey(TilingDeclareParams declareParams, TilingSelectParams selectParamsVec,
                                std::vector<uint64_t> tilingParams) {
  return ::ms_ops::twin::tpl::Encode(std::move(declareParams), std::move(selectParamsVec), tilingParams);
}
}  // namespace AscendC

#define GET_TPL_TILING_KEY(...) \
  ::AscendC::EncodeTilingKey(g_tilingDeclareParams, g_tilingSelectParams, std::vector<uint64_t>{__VA_ARGS__})

#define ASCENDC_TPL_SEL_PARAM(context, ...)                  \
  do {                                                       \
    (context)->SetTilingKey(GET_TPL_TILING_KEY(__VA_ARGS__)); \
  } while (0)

#endif  // MS_OPS_TWIN_TEMPLATE_ARGUMENT_H_
