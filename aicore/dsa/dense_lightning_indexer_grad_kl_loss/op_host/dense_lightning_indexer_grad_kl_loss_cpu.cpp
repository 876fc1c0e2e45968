// MindSpore CPU entry of dense_lightning_indexer_grad_kl_loss: the sparse KL loss's checks and
// launch (kl_loss_host.h) without a selection: every visible key of a token counts.
// Inputs: query, key, query_index, key_index, weights, softmax_max, softmax_sum, query_rope,
// key_rope, actual_seq_qlen, actual_seq_klen; outputs: d_query_index, d_key_index, d_weights, loss.
#include <cstdint>
#include <string>
#include <vector>

#include "dsa/kl_loss_host.h"

extern "C" void dense_lightning_indexer_grad_kl_loss(uint8_t *query, uint8_t *key, uint8_t *queryIndex,
                                                     uint8_t *keyIndex, uint8_t *weights, uint8_t *softmaxMax,
                                                     uint8_t *softmaxSum, uint8_t *queryRope, uint8_t *keyRope,
                                                     uint8_t *actualSeqQlen, uint8_t *actualSeqKlen,
                                                     uint8_t *dQueryIndex, uint8_t *dKeyIndex, uint8_t *dWeights,
                                                     uint8_t *loss, uint8_t *workspace, uint8_t *tiling);

namespace ms_ops {
namespace {

constexpr const char *kOp = "dense_lightning_indexer_grad_kl_loss";
const char *const kNames[] = {"query", "key", "query_index", "key_index", "weights", "softmax_max", "softmax_sum",
                              "query_rope", "key_rope", "actual_seq_qlen", "actual_seq_klen", "d_query_index",
                              "d_key_index", "d_weights", "loss"};

void Kernel(const std::vector<Arg> &a, uint8_t *workspace, uint8_t *tiling) {
  dense_lightning_indexer_grad_kl_loss(a[kKlQuery].data, a[kKlKey].data, a[kKlQueryIndex].data, a[kKlKeyIndex].data,
                                       a[kKlWeights].data, a[kKlSoftmaxMax].data, a[kKlSoftmaxSum].data,
                                       a[kKlQueryRope].data, a[kKlKeyRope].data, a[kKlSeqQ].data, a[kKlSeqK].data,
                                       a[kKlDQueryIndex].data, a[kKlDKeyIndex].data, a[kKlDWeights].data,
                                       a[kKlLoss].data, workspace, tiling);
}

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extra) {
  Require(nparam == 15, "params", "expected 11 inputs and 4 outputs, got " + std::to_string(nparam) + " tensors");
  std::vector<Arg> a = Args(nparam, params, ndims, shapes, dtypes, kNames);
  a.insert(a.begin() + kKlSparseIndices, Arg{"sparse_indices", {}, DType::kI32, "int32", nullptr});
  return KlLossRun(kOp, static_cast<mindspore::AotExtra *>(extra), a, true, 11, ndims, shapes, dtypes, Kernel);
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int DenseLightningIndexerGradKlLoss(
    int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

extern "C" __attribute__((visibility("default"))) std::vector<std::vector<int64_t>>
DenseLightningIndexerGradKlLossInferShape(int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  return ms_ops::KlLossInferShape(ndims, shapes);
}

extern "C" __attribute__((visibility("default"))) std::vector<mindspore::TypeId>
DenseLightningIndexerGradKlLossInferType(std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  return ms_ops::KlLossInferType(types);
}
