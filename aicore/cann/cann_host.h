// Conversions between gert/ge types and the plain values of the pure tiling and inference
// functions, shared by the CANN registrations (CANN-only: never compiled by the CPU build).
#ifndef MS_OPS_CANN_CANN_HOST_H_
#define MS_OPS_CANN_CANN_HOST_H_

#include <cstdint>
#include <vector>

#include "register/op_impl_registry.h"

namespace ms_ops {

// gert keeps an unknown rank as the single dim -2, as the pure inference expects.
inline std::vector<int64_t> Dims(const gert::Shape &s) {
  std::vector<int64_t> d(s.GetDimNum());
  for (size_t i = 0; i < d.size(); ++i) d[i] = s.GetDim(i);
  return d;
}

inline void SetDims(gert::Shape *s, const std::vector<int64_t> &d) {
  s->SetDimNum(d.size());
  for (size_t i = 0; i < d.size(); ++i) s->SetDim(i, d[i]);
}

// The tiling key an op gives a float dtype (its keys for fp32, fp16, bf16); 0 for other dtypes,
// which the pure tiling refuses.
inline uint64_t FloatKey(ge::DataType d, uint64_t f32, uint64_t f16, uint64_t bf16) {
  switch (d) {
    case ge::DT_FLOAT: return f32;
    case ge::DT_FLOAT16: return f16;
    case ge::DT_BF16: return bf16;
    default: return 0;
  }
}

// A float dtype as an op's float enum (CeFloat, MoeFloat: kF32/kF16/kBF16). The OpDefs admit
// only these three dtypes, so anything else does not reach a TilingFunc.
template <typename FloatEnum>
FloatEnum ToFloatEnum(ge::DataType d) {
  return d == ge::DT_FLOAT ? FloatEnum::kF32 : d == ge::DT_FLOAT16 ? FloatEnum::kF16 : FloatEnum::kBF16;
}

// The values of a ValueDepend int64 input (actual lengths, prefix); empty when it is absent.
inline std::vector<int64_t> InputValues(gert::TilingContext *context, size_t index) {
  const gert::Tensor *t = context->GetInputTensor(index);
  std::vector<int64_t> out;
  if (t == nullptr) return out;
  const int64_t *v = t->GetData<int64_t>();
  out.assign(v, v + t->GetShapeSize());
  return out;
}

}  // namespace ms_ops

#endif  // MS_OPS_CANN_CANN_HOST_H_
