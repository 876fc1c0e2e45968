// MindSpore CPU entry of sparse_lightning_indexer_grad_kl_loss: the main attention's and the
// indexer's tensors against the layout, the statistics' layout and sparse_indices (range,
// repeats) are checked, and the kernel launched, by kl_loss_host.h.
// Inputs: query, key, query_index, key_index, weights, sparse_indices, softmax_max, softmax_sum,
// query_rope, key_rope, actual_seq_qlen, actual_seq_klen (rope and lengths: [1] placeholders when
// absent); outputs: d_query_index, d_key_index, d_weights, loss.
#include <cstdint>
#include <string>
#include <vector>

#include "dsa/kl_loss_host.h"

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

void Kernel(const std::vector<Arg> &a, uint8_t *workspace, uint8_t *tiling) {
  sparse_lightning_indexer_grad_kl_loss(a[0].data, a[1].data, a[2].data, a[3].data, a[4].data, a[5].data, a[6].data,
                                        a[7].data, a[8].data, a[9].data, a[10].data, a[11].data, a[12].data,
                                        a[13].data, a[14].data, a[15].data, workspace, tiling);
}

int Run(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extra) {
  Require(nparam == 16, "params", "expected 12 inputs and 4 outputs, got " + std::to_string(nparam) + " tensors");
  const std::vector<Arg> a = Args(nparam, params, ndims, shapes, dtypes, kNames);
  return KlLossRun(kOp, static_cast<mindspore::AotExtra *>(extra), a, false, kKlDQueryIndex, ndims, shapes, dtypes,
                   Kernel);
}

}  // namespace
}  // namespace ms_ops

extern "C" __attribute__((visibility("default"))) int SparseLightningIndexerGradKlLoss(
    int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *stream, void *extra) {
  return ms_ops::GuardedEntry(ms_ops::kOp, extra, [&] { return ms_ops::Run(nparam, params, ndims, shapes, dtypes, extra); });
}

extern "C" __attribute__((visibility("default"))) std::vector<std::vector<int64_t>>
SparseLightningIndexerGradKlLossInferShape(int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  return ms_ops::KlLossInferShape(ndims, shapes);
}

extern "C" __attribute__((visibility("default"))) std::vector<mindspore::TypeId>
SparseLightningIndexerGradKlLossInferType(std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  return ms_ops::KlLossInferType(types);
}
