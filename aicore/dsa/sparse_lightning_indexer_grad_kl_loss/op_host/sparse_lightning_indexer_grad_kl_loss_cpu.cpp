// MindSpore CPU entry of sparse_lightning_indexer_grad_kl_loss: checks the main attention's and
// the indexer's tensors against the layout, the statistics' layout and sparse_indices (range,
// repeats), tiles and runs the kernel on the twin (all blocks at once: the key gradient and the
// loss meet at a SyncAll).
// Inputs: query, key, query_index, key_index, weights, sparse_indices, softmax_max, softmax_sum,
// query_rope, key_rope, actual_seq_qlen, actual_seq_klen (rope and lengths: [1] placeholders when
// absent); outputs: d_query_index, d_key_index, d_weights, loss.
#include <cstdint>
#include <string>
#include <vector>

#include "dsa/dsa_host.h"
#include "dsa/lightning_indexer_grad_tiling.h"
#include "host_entry.h"
#include "platform.h"
#include "twin_memory.h"
#include "twin_runtime.h"

extern "C" void sparse_lightning_indexer_grad_kl_loss(uint8_t *query, uint8_t *key, uint8_t *queryIndex,
                                                      uint8_t *keyIndex, uint8_t *weights, uint8_t *sparseIndices,
                                                      uint8_t *softmaxMax, uint8_t *softmaxSum, uint8_t *queryRope,
                                                      uint8_t *keyRope, uint8_t *actualSeqQlen, uint8_t *actualSeqKlen,
                                                      uint8_t *dQueryIndex, uint8_t *dKeyIndex, uint8_t *dWeights,
                                                      uint8_t *loss, uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "sparse_lightning_indexer_grad_kl_loss";
const char *const kNames[] = {"query", "key", "query_index", "key_index", "weights", "sparse_indices",
                              "softmax_max", "softmax_sum", "query_rope", "key_rope", "actual_seq_qlen",
                              "actual_seq_klen", "d_query_index", "d_key_index", "d_weights", "loss"};

// The main attention's query/key (and rope) against the indexer's problem.
DsaMainAttention ReadMain(mindspore::AotExtra *extra, const std::vector<Arg> &a, const DsaIndexerShape &s) {
  const Arg &q = a[0], &k = a[1], &qi = a[2], &ki = a[3];
  const size_t rank = qi.shape.size();
  for (const Arg *t : {&q, &k}) {
    Require(t->dtype == qi.dtype, t->name, std::string("dtype must be query_index's ") + qi.dtypeName);
    Require(t->shape.size() == rank, t->name, "must have query_index's rank " + std::to_string(rank) + ", got " +
                                                  ShapeStr(t->shape));
  }
  Require(Shape(q.shape.begin(), q.shape.end() - 2) == Shape(qi.shape.begin(), qi.shape.end() - 2), "query",
          "leading dims must be query_index's, got " + ShapeStr(q.shape));
  Require(Shape(k.shape.begin(), k.shape.end() - 2) == Shape(ki.shape.begin(), ki.shape.end() - 2), "key",
          "leading dims must be key_index's, got " + ShapeStr(k.shape));
  DsaMainAttention m;
  m.n1 = q.shape[rank - 2];
  m.dim = q.shape[rank - 1];
  m.n2 = k.shape[rank - 2];
  Require(k.shape[rank - 1] == m.dim, "key", "head dim must be query's " + std::to_string(m.dim));
  Require(m.n2 == s.n2, "key", "heads (" + std::to_string(m.n2) + ") must equal key_index's (" +
                                   std::to_string(s.n2) + "): sparse_indices select per key head");
  Require(m.n1 % m.n2 == 0, "query", "heads (" + std::to_string(m.n1) + ") must be a multiple of key's (" +
                                         std::to_string(m.n2) + ")");
  if (ReadAttr<bool>(extra, "has_rope")) {
    const Arg &qr = a[8], &kr = a[9];
    for (const Arg *t : {&qr, &kr})
      Require(t->dtype == qi.dtype && t->shape.size() == rank, t->name,
              "must have query_index's dtype and rank, got " + std::string(t->dtypeName) + " " + ShapeStr(t->shape));
    m.ropeDim = qr.shape[rank - 1];
    Shape wantQ(q.shape.begin(), q.shape.end() - 1), wantK(k.shape.begin(), k.shape.end() - 1);
    wantQ.push_back(m.ropeDim);
    wantK.push_back(m.ropeDim);
    RequireShape(qr, wantQ, "query's dims with the rope dim");
    RequireShape(kr, wantK, "key's dims with the rope dim");
  }
  m.scale = ReadAttr<float>(extra, "scale_value");
  const int64_t g = m.n1 / m.n2;
  const Shape stats = s.packed ? Shape{m.n2, s.tokens1, g} : Shape{s.batch, m.n2, s.seq1, g};
  for (const Arg *t : {&a[6], &a[7]}) {
    RequireDType(*t, DType::kF32, "float32");
    RequireShape(*t, stats, s.packed ? "(N2, T1, G)" : "(B, N2, S1, G)");
  }
  return m;
}

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extraPtr) {
  Require(nparam == 16, "params", "expected 12 inputs and 4 outputs, got " + std::to_string(nparam) + " tensors");
  auto *extra = static_cast<mindspore::AotExtra *>(extraPtr);
  const std::vector<Arg> a = Args(nparam, params, ndims, shapes, dtypes, kNames);
  const DsaIndexerShape s = DsaReadIndexer(extra, a[2], a[3], a[4], a[10], a[11]);
  const DsaMainAttention main = ReadMain(extra, a, s);
  LightningIndexerProblem p;
  p.batch = s.batch;
  p.seq1 = s.packed ? 0 : s.seq1;
  p.seq2 = s.packed ? 0 : s.seq2;
  p.tokens1 = s.tokens1;
  p.qLenMode = s.qLenMode;
  p.kLenMode = s.kLenMode;
  p.n1 = s.n1;
  p.n2 = s.n2;
  p.dim = s.dim;
  p.topK = a[5].shape.empty() ? 0 : a[5].shape.back();
  p.dataType = ToFloatEnum<LiFloat>(a[2].dtype);
  RequireShape(a[5], DsaIndexerOutShape(a[2].shape, a[3].shape, p.topK), "query_index's leading dims, N2, k");
  Require(p.topK >= 1 && p.topK <= kLiMaxTopK, "sparse_indices",
          "last dim must be in [1, " + std::to_string(kLiMaxTopK) + "], got " + std::to_string(p.topK));
  DsaCheckIndices(a[5], s, a[10], a[11], p.topK);
  RequireOutput("d_query_index", 12, ndims, shapes, dtypes, a[2].shape, a[2].dtype);
  RequireOutput("d_key_index", 13, ndims, shapes, dtypes, a[3].shape, a[2].dtype);
  RequireOutput("d_weights", 14, ndims, shapes, dtypes, a[4].shape, a[2].dtype);
  RequireOutput("loss", 15, ndims, shapes, dtypes, Shape{1}, DType::kF32);
  LightningIndexerGradTiling t = ComputeLightningIndexerGradTiling(p, s.tokens2, kAtlasA2, main);
  if (!t.error.empty()) Reject("tiling", t.error);
  if (t.blockDim == 0) {
    *reinterpret_cast<float *>(a[15].data) = 0.0f;
    return 0;
  }
  const twin::Pages workspace = twin::DeviceWorkspace(t.workspaceBytes);
  return twin::LaunchCooperative(kOp, t.blockDim, t.tilingKey, [&] {
    sparse_lightning_indexer_grad_kl_loss(a[0].data, a[1].data, a[2].data, a[3].data, a[4].data, a[5].data,
                                          a[6].data, a[7].data, a[8].data, a[9].data, a[10].data, a[11].data,
                                          a[12].data, a[13].data, a[14].data, a[15].data, workspace.data(),
                                          reinterpret_cast<uint8_t *>(&t.data));
  });
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int SparseLightningIndexerGradKlLoss(
    int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

extern "C" __attribute__((visibility("default"))) std::vector<std::vector<int64_t>>
SparseLightningIndexerGradKlLossInferShape(int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  return {std::vector<int64_t>(shapes[2], shapes[2] + ndims[2]), std::vector<int64_t>(shapes[3], shapes[3] + ndims[3]),
          std::vector<int64_t>(shapes[4], shapes[4] + ndims[4]), {1}};
}

extern "C" __attribute__((visibility("default"))) std::vector<mindspore::TypeId>
SparseLightningIndexerGradKlLossInferType(std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  const mindspore::TypeId t = types.size() > 2 ? types[2] : mindspore::kTypeUnknown;
  return {t, t, t, mindspore::kNumberTypeFloat32};
}
