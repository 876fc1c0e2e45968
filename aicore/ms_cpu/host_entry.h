// Helpers for the MindSpore CPU entries (`extern "C" <Op>`, `<Op>InferShape`, `<Op>InferType`):
// dtype names, argument errors that reach the Python exception as
// `ms_ops.<api>: '<argument>': <what>`, and shape arithmetic that keeps MindSpore's -1 (unknown
// dim) and [-2] (unknown rank) markers.
#ifndef MS_OPS_MS_CPU_HOST_ENTRY_H_
#define MS_OPS_MS_CPU_HOST_ENTRY_H_

#include <cstdint>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "ms_aot_extra.h"
#include "twin_runtime.h"

namespace ms_ops {

enum class DType { kF32, kF16, kBF16, kI32, kI64, kU8, kBool, kUnknown };

inline DType ParseDType(const char *name) {
  static const struct { const char *n; DType d; } kTable[] = {
      {"float32", DType::kF32}, {"float16", DType::kF16}, {"bfloat16", DType::kBF16},
      {"int32", DType::kI32},   {"int64", DType::kI64},   {"uint8", DType::kU8},
      {"bool", DType::kBool}};
  for (const auto &e : kTable)
    if (std::strcmp(name, e.n) == 0) return e.d;
  return DType::kUnknown;
}

inline DType FromTypeId(mindspore::TypeId t) {
  switch (t) {
    case mindspore::kNumberTypeFloat32: return DType::kF32;
    case mindspore::kNumberTypeFloat16: return DType::kF16;
    case mindspore::kNumberTypeBFloat16: return DType::kBF16;
    case mindspore::kNumberTypeInt32: return DType::kI32;
    case mindspore::kNumberTypeInt64: return DType::kI64;
    case mindspore::kNumberTypeUInt8: return DType::kU8;
    case mindspore::kNumberTypeBool: return DType::kBool;
    default: return DType::kUnknown;
  }
}

// A bad argument found by an entry. `op` and `arg` name what the user passed.
struct ArgError : std::exception {
  std::string arg, msg;
  ArgError(std::string a, std::string m) : arg(std::move(a)), msg(std::move(m)) {}
  const char *what() const noexcept override { return msg.c_str(); }
};

[[noreturn]] inline void Reject(const std::string &arg, const std::string &msg) { throw ArgError(arg, msg); }

// The message is built before the test: a check per entry of a tensor's data (indices, block
// tables) tests the entry itself and builds its message only for a bad one, through Reject.
inline void Require(bool ok, const std::string &arg, const std::string &msg) {
  if (!ok) Reject(arg, msg);
}

// The public function the user called, from the `api` attribute every ms_ops primitive carries
// (ms_ops/_custom.py): a kernel can run on behalf of another function (fused_linear_cross_entropy
// runs fused_linear_online_max_sum), and the message should name what the user wrote.
inline std::string ApiName(const char *kernel, void *extra) {
  auto *aot = static_cast<mindspore::AotExtra *>(extra);
  try {
    if (aot != nullptr && aot->HasAttr("api")) return aot->Attr<std::string>("api");
  } catch (...) {
  }
  return kernel;
}

// Runs an entry body. A refused argument or a twin failure leaves as a std::invalid_argument /
// std::runtime_error whose text MindSpore's AOT launcher puts into the Python exception
// ("... Error message is ms_ops.<api>: '<argument>': <what is wrong>"); a return code would only
// give MindSpore's generic "Return value from CPU AOT kernel ... is 1".
template <class Body>
int GuardedEntry(const char *kernel, void *extra, Body &&body) {
  std::string what;
  bool argument = false;
  try {
    if (body() == 0) return 0;
    what = "kernel failed on the twin: " + twin::LastFailure();
  } catch (const ArgError &e) {
    what = "'" + e.arg + "': " + e.msg;
    argument = true;
  } catch (const std::exception &e) {
    what = e.what();
  } catch (...) {
    what = "unknown failure";
  }
  const std::string api = ApiName(kernel, extra);
  std::string msg = "ms_ops." + api + ": " + what;
  if (api != kernel) msg += " (in kernel " + std::string(kernel) + ")";
  if (argument) throw std::invalid_argument(msg);
  throw std::runtime_error(msg);
}

// "[d0, d1, ...]", the shape format of every entry message.
inline std::string ShapeStr(int ndim, const int64_t *shape) {
  std::string s = "[";
  for (int i = 0; i < ndim; ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

inline std::string ShapeStr(const std::vector<int64_t> &shape) {
  return ShapeStr(static_cast<int>(shape.size()), shape.data());
}

// The tiling key an op gives a float dtype (its keys for fp32, fp16, bf16); 0 for other dtypes.
inline uint64_t FloatKey(DType d, uint64_t f32, uint64_t f16, uint64_t bf16) {
  switch (d) {
    case DType::kF32: return f32;
    case DType::kF16: return f16;
    case DType::kBF16: return bf16;
    default: return 0;
  }
}

// A tiling's float enum (MoeFloat, CeFloat: kF32, kF16, kBF16) for a dtype the entry has
// already checked to be float32, float16 or bfloat16.
template <class FloatEnum>
FloatEnum ToFloatEnum(DType d) {
  return d == DType::kF32 ? FloatEnum::kF32 : d == DType::kF16 ? FloatEnum::kF16 : FloatEnum::kBF16;
}

inline int64_t Numel(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

using Shape = std::vector<int64_t>;
constexpr int64_t kDynDim = -1;
inline const Shape kDynRank{-2};

// Output `o` of an entry, allocated by MindSpore from the inferred shape: the kernel writes
// exactly the elements of `want`, in `dtype`.
inline void RequireOutput(const char *name, int o, int *ndims, int64_t **shapes, const char **dtypes,
                          const Shape &want, DType dtype) {
  Require(Numel(ndims[o], shapes[o]) == Numel(static_cast<int>(want.size()), want.data()), name,
          "output shape " + ShapeStr(ndims[o], shapes[o]) + " does not match " + ShapeStr(want));
  Require(ParseDType(dtypes[o]) == dtype, name, std::string("output dtype ") + dtypes[o] + " is wrong");
}

inline bool IsDynRank(int ndim, const int64_t *shape) { return ndim == 1 && shape[0] == -2; }
inline bool Known(int64_t d) { return d >= 0; }
// Product of dims that stays -1 when any factor is unknown.
inline int64_t DimMul(int64_t a, int64_t b) { return (Known(a) && Known(b)) ? a * b : kDynDim; }

// One tensor argument of an entry, named as the user knows it.
struct Arg {
  const char *name;
  std::vector<int64_t> shape;
  DType dtype;
  const char *dtypeName;
  uint8_t *data;
};

inline std::vector<Arg> Args(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
                             const char *const *names) {
  std::vector<Arg> args;
  for (int i = 0; i < nparam; ++i)
    args.push_back({names[i], std::vector<int64_t>(shapes[i], shapes[i] + ndims[i]), ParseDType(dtypes[i]), dtypes[i],
                    static_cast<uint8_t *>(params[i])});
  return args;
}

inline void RequireShape(const Arg &a, const std::vector<int64_t> &want, const std::string &what) {
  Require(a.shape == want, a.name, "must have shape " + ShapeStr(want) + " (" + what + "), got " + ShapeStr(a.shape));
}

inline void RequireDType(const Arg &a, DType want, const char *wantName) {
  Require(a.dtype == want, a.name, std::string("must be ") + wantName + ", got " + a.dtypeName);
}

inline void RequireFloat(const Arg &a) {
  Require(a.dtype == DType::kF32 || a.dtype == DType::kF16 || a.dtype == DType::kBF16, a.name,
          std::string("must be float32, float16 or bfloat16, got ") + a.dtypeName);
}

// Cumulative sequence lengths (TND): `batch` values (any number when batch < 0), non-decreasing
// from >= 0 and ending at `total`, the packed length.
inline std::vector<int64_t> RequireCumulative(const Arg &a, int64_t batch, int64_t total) {
  Require(a.dtype == DType::kI64 && a.shape.size() == 1, a.name,
          "must be 1-D int64 cumulative lengths, got " + std::string(a.dtypeName) + " " + ShapeStr(a.shape));
  Require(batch < 0 || a.shape[0] == batch, a.name,
          "needs one entry per sequence (" + std::to_string(batch) + "), got " + std::to_string(a.shape[0]));
  const int64_t *v = reinterpret_cast<const int64_t *>(a.data);
  std::vector<int64_t> out(v, v + a.shape[0]);
  Require(!out.empty(), a.name, "must list at least one sequence");
  for (size_t i = 0; i < out.size(); ++i)
    Require(out[i] >= (i ? out[i - 1] : 0), a.name, "must be non-decreasing from >= 0 (cumulative lengths)");
  Require(out.back() == total, a.name,
          "must end at the packed length " + std::to_string(total) + ", got " + std::to_string(out.back()));
  return out;
}

template <typename V>
V ReadAttr(mindspore::AotExtra *extra, const char *name) {
  Require(extra != nullptr && extra->HasAttr(name), name, "attribute missing");
  return extra->Attr<V>(name);
}

}  // namespace ms_ops

#endif  // MS_OPS_MS_CPU_HOST_ENTRY_H_
