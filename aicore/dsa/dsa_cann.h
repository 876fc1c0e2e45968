// The CANN registrations' common part for the lightning indexer ops: the problem from a
// TilingContext's shapes and attributes (the sequence lengths and sparse_indices are device data:
// their values are not seen here, the kernels read them), and the indexer's output shape.
// CANN-only: never compiled by the CPU build.
#ifndef MS_OPS_DSA_DSA_CANN_H_
#define MS_OPS_DSA_DSA_CANN_H_

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "cann_host.h"
#include "cann_platform.h"
#include "lightning_indexer_grad_tiling.h"
#include "lightning_indexer_tiling.h"

namespace ms_ops {

// Attribute order of the indexer's and its gradient's OpDefs.
enum DsaAttr : size_t {
  kDsaLayoutQuery, kDsaLayoutKey, kDsaSparseCount, kDsaSparseMode, kDsaPreTokens, kDsaNextTokens,
  kDsaHasLengthsQuery, kDsaHasLengthsKey
};
// The KL loss's OpDef: no sparse_count; scale_value and has_rope after the rest.
enum DsaKlAttr : size_t {
  kKlLayoutQuery, kKlLayoutKey, kKlSparseMode, kKlPreTokens, kKlNextTokens, kKlHasLengthsQuery, kKlHasLengthsKey,
  kKlScaleValue, kKlHasRope
};

// The indexer problem of query/key at inputs q, k (the query lengths at qLen, the block table at
// table, or -1; `kl`: the KL loss's attribute order): false when the layouts are not BSND/TND
// (/PA_BSND keys).
inline bool DsaProblem(gert::TilingContext *context, size_t q, size_t k, size_t qLen, int table,
                       LightningIndexerProblem &p, bool kl = false) {
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  const char *lq = attrs->GetStr(kDsaLayoutQuery), *lk = attrs->GetStr(kDsaLayoutKey);
  if (lq == nullptr || lk == nullptr) return false;
  const bool tnd = std::strcmp(lq, "TND") == 0, paged = table >= 0 && std::strcmp(lk, "PA_BSND") == 0;
  if (!tnd && std::strcmp(lq, "BSND") != 0) return false;
  if (!paged && std::strcmp(lk, lq) != 0) return false;
  const std::vector<int64_t> qs = Dims(context->GetInputShape(q)->GetStorageShape());
  const std::vector<int64_t> ks = Dims(context->GetInputShape(k)->GetStorageShape());
  const size_t rank = tnd ? 3 : 4;
  if (qs.size() != rank || ks.size() != (paged ? 4 : rank)) return false;
  p.n1 = qs[rank - 2];
  p.dim = qs[rank - 1];
  p.n2 = ks[ks.size() - 2];
  const bool hasQ = *attrs->GetAttrPointer<bool>(kl ? size_t(kKlHasLengthsQuery) : size_t(kDsaHasLengthsQuery));
  const bool hasK = *attrs->GetAttrPointer<bool>(kl ? size_t(kKlHasLengthsKey) : size_t(kDsaHasLengthsKey));
  if (tnd) {
    p.batch = context->GetInputShape(qLen)->GetStorageShape().GetDim(0);
    p.tokens1 = qs[0];
    p.qLenMode = 2;
  } else {
    p.batch = qs[0];
    p.seq1 = qs[1];
    p.tokens1 = qs[0] * qs[1];
    p.qLenMode = hasQ ? 1 : 0;
  }
  if (paged) {
    const gert::Shape &t = context->GetInputShape(static_cast<size_t>(table))->GetStorageShape();
    p.blockSize = ks[1];
    p.maxBlocks = t.GetDimNum() == 2 ? t.GetDim(1) : 0;
    p.kLenMode = 1;
  } else if (tnd) {
    p.kLenMode = 2;
  } else {
    p.seq2 = ks[1];
    p.kLenMode = hasK ? 1 : 0;
  }
  p.sparseMode =
      static_cast<uint32_t>(*attrs->GetAttrPointer<int64_t>(kl ? size_t(kKlSparseMode) : size_t(kDsaSparseMode)));
  p.dataType = ToFloatEnum<LiFloat>(context->GetInputDesc(q)->GetDataType());
  return true;
}

// Keys (token rows) of a non-paged key: B * S2 or T2.
inline int64_t DsaKeyTokens(gert::TilingContext *context, size_t k) {
  const std::vector<int64_t> ks = Dims(context->GetInputShape(k)->GetStorageShape());
  return ks.size() == 4 ? ks[0] * ks[1] : ks.size() == 3 ? ks[0] : 0;
}

// The last dim of input i (k of sparse_indices).
inline int64_t DsaLastDim(gert::TilingContext *context, size_t i) {
  const gert::Shape &s = context->GetInputShape(i)->GetStorageShape();
  return s.GetDimNum() > 0 ? s.GetDim(s.GetDimNum() - 1) : 0;
}

// A gradient TilingFunc's end: the tiling, its workspace, or the error.
inline ge::graphStatus DsaSetGradTiling(gert::TilingContext *context, const platform_ascendc::PlatformAscendC &ascendc,
                                        const LightningIndexerGradTiling &t, const char *op) {
  if (!t.error.empty()) {
    std::fprintf(stderr, "ms_ops %s: tiling: %s\n", op, t.error.c_str());
    return ge::GRAPH_FAILED;
  }
  // An empty problem still launches one block, which finds no work item.
  const ge::graphStatus status = SetTiling(context, ascendc, t.data, t.blockDim > 0 ? t.blockDim : 1, t.tilingKey);
  context->GetWorkspaceSizes(1)[0] += t.workspaceBytes;  // the blocks' workspaces, after the library's part
  return status;
}

// The KL losses' TilingFunc (inputs: query, key, query_index, key_index, weights, [sparse_indices,]
// softmax_max, softmax_sum, query_rope, key_rope, actual_seq_qlen, actual_seq_klen). The dense
// loss's k is every key of a sequence, bounded here by the key length (BSND) or the packed length
// (TND): the lengths' values are not seen here.
inline ge::graphStatus DsaKlTiling(gert::TilingContext *context, bool sparse, const char *op) {
  const platform_ascendc::PlatformAscendC ascendc(context->GetPlatformInfo());
  const size_t after = sparse ? 1 : 0;  // inputs after weights shift by sparse_indices
  LightningIndexerProblem p;
  if (!DsaProblem(context, 2, 3, 9 + after, -1, p, true)) {
    std::fprintf(stderr, "ms_ops %s: tiling: layout must be BSND or TND\n", op);
    return ge::GRAPH_FAILED;
  }
  const int64_t keys = DsaKeyTokens(context, 3);
  if (sparse) {
    p.topK = DsaLastDim(context, 5);
  } else {
    p.topK = p.kLenMode == 2 ? keys : p.batch > 0 ? keys / p.batch : 0;
    p.topK = p.topK > 0 ? p.topK : 1;
  }
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  const std::vector<int64_t> q = Dims(context->GetInputShape(0)->GetStorageShape());
  const std::vector<int64_t> k = Dims(context->GetInputShape(1)->GetStorageShape());
  DsaMainAttention main;
  if (q.size() >= 3 && k.size() >= 3) {
    main.n1 = q[q.size() - 2];
    main.dim = q.back();
    main.n2 = k[k.size() - 2];
  }
  main.ropeDim = *attrs->GetAttrPointer<bool>(kKlHasRope) ? DsaLastDim(context, 7 + after) : 0;
  main.scale = *attrs->GetAttrPointer<float>(kKlScaleValue);
  LightningIndexerGradTiling t = ComputeLightningIndexerGradTiling(p, keys, ReadPlatformInfo(ascendc), main);
  DsaSetBand(t.data, *attrs->GetAttrPointer<int64_t>(kKlPreTokens), *attrs->GetAttrPointer<int64_t>(kKlNextTokens));
  return DsaSetGradTiling(context, ascendc, t, op);
}

// The KL losses' outputs: d query_index, d key_index, d weights as inputs 2..4, and the loss [1].
inline ge::graphStatus DsaKlInferShape(gert::InferShapeContext *context) {
  for (size_t o = 0; o < 3; ++o) *context->GetOutputShape(o) = *context->GetInputShape(2 + o);
  SetDims(context->GetOutputShape(3), {1});
  return ge::GRAPH_SUCCESS;
}

inline ge::graphStatus DsaKlInferDataType(gert::InferDataTypeContext *context) {
  for (size_t o = 0; o < 3; ++o) context->SetOutputDataType(o, context->GetInputDataType(2));
  context->SetOutputDataType(3, ge::DT_FLOAT);
  return ge::GRAPH_SUCCESS;
}

// Query's leading dims, then [N2, k]; unknown rank in, unknown rank out.
inline std::vector<int64_t> DsaOutShape(const std::vector<int64_t> &query, const std::vector<int64_t> &key,
                                        int64_t k) {
  if (query.size() < 3 || key.size() < 3) return {-2};
  std::vector<int64_t> out(query.begin(), query.end() - 2);
  out.push_back(key[key.size() - 2]);
  out.push_back(k);
  return out;
}

}  // namespace ms_ops

#endif  // MS_OPS_DSA_DSA_CANN_H_
